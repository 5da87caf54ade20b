// The tensor table of a program: every tensor's dtype, scope, role and shape, with the shapes of
// intermediates inferred from their writes (LEIR.md §3-4). The one place that answers "what is
// tensor X" for the interpreter, validator, strategies and backends.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/leir/ast.h"

namespace steptp::leir {

struct TensorInfo {
  std::string name;
  DType dtype = DType::F64;
  Scope scope = Scope::Global;
  std::vector<int64_t> shape;
  bool known = false;               // declared in the signature
  Role role = Role::Output;         // meaningful when known
  const TensorDecl* decl = nullptr; // when known
  SourceLoc first_use;              // first occurrence in the body

  int64_t numel() const;
  bool read_only() const { return known && is_read_only(role); }
};

struct TensorTable {
  std::map<std::string, TensorInfo> tensors;  // ordered by name: deterministic iteration
  std::vector<std::string> order;             // known tensors in declaration order, then
                                              // intermediates in order of first occurrence

  const TensorInfo* find(const std::string& name) const;
  const TensorInfo& at(const std::string& name) const;  // throws std::out_of_range
};

// Element count of `shape` when it and its size in bytes at 8 bytes per element (the widest
// storage any backend gives an element) fit int64; nullopt otherwise or for a negative dimension.
std::optional<int64_t> checked_numel(const std::vector<int64_t>& shape);
// checked_numel, or a LeirError naming `tensor` and its shape.
int64_t require_numel(const std::vector<int64_t>& shape, std::string_view tensor, const std::string& file,
                      SourceLoc loc);

// Builds the table: checks annotation consistency (same dtype/scope at every occurrence, known
// tensors match their declaration and live in `g`), ranks, and infers intermediate shapes by
// interval analysis of write subscripts, and that every tensor's size fits int64 (require_numel).
// Throws LeirError (file:line:col) on any violation.
TensorTable build_tensor_table(const Program& p);

}  // namespace steptp::leir
