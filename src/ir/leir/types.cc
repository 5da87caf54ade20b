#include "ir/leir/types.h"

#include <array>

namespace steptp::leir {

namespace {
constexpr std::array<std::string_view, 10> kDTypeNames = {"f16", "bf16", "f32", "f64", "i8",
                                                          "i16", "i32",  "i64", "u8",  "bool"};
constexpr std::array<int, 10> kDTypeBytes = {2, 2, 4, 8, 1, 2, 4, 8, 1, 1};
constexpr std::array<std::string_view, 4> kRoleNames = {"input", "constant", "param", "output"};
}  // namespace

std::string_view to_string(DType t) { return kDTypeNames[static_cast<size_t>(t)]; }

std::optional<DType> parse_dtype(std::string_view s) {
  for (size_t i = 0; i < kDTypeNames.size(); ++i)
    if (kDTypeNames[i] == s) return static_cast<DType>(i);
  return std::nullopt;
}

bool is_integer(DType t) {
  switch (t) {
    case DType::I8: case DType::I16: case DType::I32: case DType::I64: case DType::U8: return true;
    default: return false;
  }
}

bool is_floating(DType t) {
  return t == DType::F16 || t == DType::BF16 || t == DType::F32 || t == DType::F64;
}

int byte_size(DType t) { return kDTypeBytes[static_cast<size_t>(t)]; }

char to_char(Scope s) {
  switch (s) {
    case Scope::Global: return 'g';
    case Scope::Shared: return 's';
    case Scope::Local: return 'l';
  }
  return '?';
}

std::optional<Scope> parse_scope(char c) {
  switch (c) {
    case 'g': return Scope::Global;
    case 's': return Scope::Shared;
    case 'l': return Scope::Local;
    default: return std::nullopt;
  }
}

char to_char(LoopKind k) {
  switch (k) {
    case LoopKind::Serial: return 'L';
    case LoopKind::Parallel: return 'P';
    case LoopKind::Vectorized: return 'V';
    case LoopKind::Unrolled: return 'U';
    case LoopKind::Bound: return 'B';
  }
  return '?';
}

std::optional<LoopKind> parse_loop_kind(char c) {
  switch (c) {
    case 'L': return LoopKind::Serial;
    case 'P': return LoopKind::Parallel;
    case 'V': return LoopKind::Vectorized;
    case 'U': return LoopKind::Unrolled;
    case 'B': return LoopKind::Bound;
    default: return std::nullopt;
  }
}

bool requires_independence(LoopKind k) {
  return k == LoopKind::Parallel || k == LoopKind::Vectorized || k == LoopKind::Bound;
}

std::string_view to_string(Role r) { return kRoleNames[static_cast<size_t>(r)]; }

std::optional<Role> parse_role(std::string_view s) {
  for (size_t i = 0; i < kRoleNames.size(); ++i)
    if (kRoleNames[i] == s) return static_cast<Role>(i);
  return std::nullopt;
}

bool is_read_only(Role r) { return r != Role::Output; }

}  // namespace steptp::leir
