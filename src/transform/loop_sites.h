// Helpers shared by the loop/schedule strategies (9-22): addressing a nest by its path, site
// descriptions, splitting a loop with flat subscripts, and building candidates.
#pragma once

#include <string>
#include <vector>

#include "ir/analysis/accumulation.h"
#include "ir/analysis/names.h"
#include "ir/analysis/structure.h"
#include "ir/leir/ast.h"
#include "transform/strategy.h"

namespace steptp::strategies::loops {

std::string path_text(const analysis::Path& p);  // "2" or "2.0.1"
std::string loop_site_text(const analysis::NestRef& n, int loop);  // "nest 2, loop c (L^{16})"

// Program with the nest at `path` replaced by `items`.
leir::Program with_items(const leir::Program& p, const analysis::Path& path, std::vector<leir::Item> items);

// Splits loop `k` of `n` into outer (extent `outer`) and inner (extent/outer) loops at
// positions k and k+1, substituting var -> o*inner+i+start. A bound loop keeps its axis name
// on the outer loop; a vectorized loop keeps V on the inner loop.
leir::Nest split_loop(const leir::Nest& n, int k, int64_t outer, analysis::NameAllocator& names);

std::vector<int64_t> proper_divisors(int64_t n);  // 1 < d < n, increasing
// Where a range of n splits into two sub-ranges [0,k) and [k,n) (reduction_factorization,
// tensor_split_to_decouple_operators): n/2, n/4 and n - n/4, each 1 <= k < n, distinct, in
// that order. One definition, so the two strategies agree on the same axis.
std::vector<int64_t> split_points(int64_t n);
// a ⊕ b for the accumulation's operator (+, *, max, min): how two partial results combine.
leir::ExprPtr combine_partials(analysis::AccumOp op, leir::ExprPtr a, leir::ExprPtr b);

leir::Nest make_nest(std::vector<leir::Loop> loops, std::vector<leir::Item> body);
leir::Nest make_nest(std::vector<leir::Loop> loops, std::vector<leir::Stmt> stmts);  // one item per statement
leir::Loop make_loop(leir::LoopKind kind, int64_t extent, std::string var, int64_t start = 0);

}  // namespace steptp::strategies::loops
