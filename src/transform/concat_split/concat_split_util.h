// The pieces that 4 tensor_concat_to_fuse_operators (tensor_concat.cc), 5
// tensor_split_to_decouple_operators (tensor_split.cc) and 35 partially_equivalent_then_correct
// (partially_equivalent_then_correct.cc) share (STRATEGIES.md): single-statement nests and their
// equality up to tensor names, how a loop variable appears in subscripts, staging copies of
// slabs, and statements rewritten with a loop variable shifted.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "ir/analysis/footprint.h"
#include "ir/analysis/structure.h"
#include "ir/leir/ast.h"
#include "ir/leir/tensors.h"
#include "transform/dataflow_util.h"

namespace steptp::strategies::concat_split {

// The family's files name these unqualified (this namespace is the family's own).
using namespace dataflow;
using leir::BinaryOp;
using leir::Expr;
using leir::ExprKind;
using leir::ExprPtr;
using leir::Loop;
using leir::Nest;
using leir::Program;
using leir::Stmt;

// Top-level item `i` as a nest of exactly one statement: that statement, else nullptr.
const Stmt* single_stmt(const Program& p, int i);

// Structural equality up to a consistent renaming of tensors (first -> second).
bool iso(const ExprPtr& a, const ExprPtr& b, std::map<std::string, std::string>& names);
bool iso_stmt(const Stmt& a, const Stmt& b, std::map<std::string, std::string>& names);

// Vars used as values (outside every subscript).
bool used_as_value(const ExprPtr& e, const std::string& v);

// Dimension where `access` uses `v` as a plain subscript, -1 if it does not use v at all,
// -2 if it uses v any other way (inside a compound subscript, a gather, or twice).
int plain_dim(const Expr& access, const std::string& v);

// Every access in `e`, accesses inside subscripts (gathers) included, outer ones first.
void collect_accesses(const ExprPtr& e, std::vector<ExprPtr>& out);
// The accesses of `tensor` in `e`.
std::vector<ExprPtr> accesses_of(const ExprPtr& e, const std::string& tensor);

// A nest copying a `count`-wide slab along `dim` of the box `box` (inclusive index ranges per
// dimension; `dim`'s own range is replaced by the slab):
// Dst_{i+lo.., j+dst_off, ..} = Src_{i+lo.., j+src_off, ..}; several such statements share one
// nest when their slabs have the same extents.
Nest copy_nest(const analysis::Box& box, int dim, int64_t count,
               const std::vector<std::tuple<ExprPtr, std::string, int64_t, ExprPtr, std::string, int64_t>>& copies);

// The box of every element of a tensor of `shape`.
analysis::Box whole(const std::vector<int64_t>& shape);

// The box a staging copy of `tensor` covers, for reads `accesses` in a nest over `loops` at
// top-level item `at`: the whole tensor for a program input (every element is defined); for an
// intermediate, the read box (within its shape) when earlier statements wrote all of it, or
// nullopt: a copy could read unset elements (a cache of a slice, a strided write).
std::optional<analysis::Box> copy_box(const Program& p, const leir::TensorTable& table, const std::string& tensor,
                                      const std::vector<ExprPtr>& accesses, const std::vector<Loop>& loops, int at);

// `loops` with the extent of loop `v` replaced by `extent`.
std::vector<Loop> with_extent(std::vector<Loop> loops, const std::string& v, int64_t extent);
// The loop of `n` over `v`, nullptr when there is none.
const Loop* loop_of(const Nest& n, const std::string& v);
// Whether an item in [from, to) writes `t`.
bool written_in(const analysis::UseDef& ud, const std::string& t, int from, int to);

// Rewrites accesses: tensors in `rename` get a new name (subscripts kept as written, before
// `shift`); everything else has variable v shifted by `shift` (subscripts and values).
ExprPtr shifted(const ExprPtr& e, const std::string& v, int64_t shift, const std::map<std::string, std::string>& rename);
Stmt shifted_stmt(const Stmt& s, const std::string& v, int64_t shift, const std::map<std::string, std::string>& rename);

// The shape of tensor `name`.
std::vector<int64_t> shape_of(const leir::TensorTable& t, const std::string& name);

}  // namespace steptp::strategies::concat_split
