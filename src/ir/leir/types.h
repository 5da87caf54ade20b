// Scalar types, storage scopes, loop kinds and tensor roles of LEIR (LEIR.md §1-3).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace steptp::leir {

enum class DType : uint8_t { F16, BF16, F32, F64, I8, I16, I32, I64, U8, Bool };
enum class Scope : uint8_t { Global, Shared, Local };
enum class LoopKind : uint8_t { Serial, Parallel, Vectorized, Unrolled, Bound };
enum class Role : uint8_t { Input, Constant, Param, Output };

std::string_view to_string(DType t);  // "f64", "bool", ...
std::optional<DType> parse_dtype(std::string_view s);
bool is_integer(DType t);  // i8..i64, u8 (not bool)
bool is_floating(DType t);
int byte_size(DType t);

char to_char(Scope s);  // 'g' 's' 'l'
std::optional<Scope> parse_scope(char c);

char to_char(LoopKind k);  // 'L' 'P' 'V' 'U' 'B'
std::optional<LoopKind> parse_loop_kind(char c);
// P, V and B loops promise independent iterations (accumulations excepted).
bool requires_independence(LoopKind k);

std::string_view to_string(Role r);  // "input", "constant", "param", "output"
std::optional<Role> parse_role(std::string_view s);
bool is_read_only(Role r);  // everything but outputs

// Position in a source text, 1-based. line == 0 means "synthesized, no source".
struct SourceLoc {
  uint32_t line = 0;
  uint32_t col = 0;
};

}  // namespace steptp::leir
