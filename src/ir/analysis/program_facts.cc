#include "ir/analysis/program_facts.h"

#include <algorithm>

#include "ir/analysis/affine.h"
#include "ir/analysis/dependence.h"
#include "ir/analysis/structure.h"
#include "ir/leir/printer.h"
#include "ir/leir/types.h"

namespace steptp::analysis {
namespace {

struct ExprCount {
  int64_t ops = 0, global_bytes = 0, local_accesses = 0;
};
// Accesses nested in subscripts (gathers) still count; subscript arithmetic does not.
void count_gathers(const leir::ExprPtr& e, ExprCount& c);

void count_expr(const leir::ExprPtr& e, ExprCount& c) {
  if (!e) return;
  switch (e->kind) {
    case leir::ExprKind::Access:
      if (e->scope == leir::Scope::Global) c.global_bytes += leir::byte_size(e->dtype);
      else c.local_accesses += 1;
      for (const auto& a : e->args) count_gathers(a, c);
      return;
    case leir::ExprKind::Unary:
    case leir::ExprKind::Binary:
    case leir::ExprKind::Compare: c.ops += 1; break;
    case leir::ExprKind::Call: c.ops += 4; break;  // transcendental calls weigh more
    default: break;
  }
  for (const auto& a : e->args) count_expr(a, c);
}

void count_gathers(const leir::ExprPtr& e, ExprCount& c) {
  if (e->kind == leir::ExprKind::Access) return count_expr(e, c);
  for (const auto& a : e->args) count_gathers(a, c);
}

// `iterations`: the enclosing loops' product so far; `innermost`: the innermost enclosing loop of
// extent > 1.
void walk_items(const std::vector<leir::Item>& body, int64_t iterations, const std::string& innermost, NestFacts& f,
                const leir::TensorTable& table) {
  for (const auto& it : body) {
    if (it.is_stmt()) {
      auto acc = reads_of(it.stmt);  // with the written element: every access
      acc.push_back(it.stmt.lhs);
      for (const auto& a : acc) {
        if (a->scope != leir::Scope::Global) continue;
        f.accesses += iterations;
        if (innermost.empty()) {
          f.contiguous_accesses += iterations;
          continue;
        }
        auto step = flat_stride(*a, innermost, table);
        if (step && *step >= -1 && *step <= 1) f.contiguous_accesses += iterations;
      }
      ExprCount c;
      count_expr(it.stmt.rhs, c);
      ExprCount l;
      count_expr(it.stmt.lhs, l);
      c.global_bytes += l.global_bytes;
      c.local_accesses += l.local_accesses;
      f.iterations += iterations;
      f.flops += iterations * c.ops;
      f.bytes += iterations * c.global_bytes;
      f.local_accesses += iterations * c.local_accesses;
    } else {
      int64_t inner = iterations;
      std::string inner_var = innermost;
      for (const auto& l : it.nest.loops) {
        const int64_t extent = std::max<int64_t>(1, l.extent);
        if (l.extent > 1) inner_var = l.var;
        inner *= extent;
        f.extents.push_back(l.extent);
        if (l.kind == leir::LoopKind::Parallel || l.kind == leir::LoopKind::Bound) f.parallel_loops++;
        else if (l.kind == leir::LoopKind::Vectorized) f.vector_loops++;
      }
      walk_items(it.nest.body, inner, inner_var, f, table);
    }
  }
}

}  // namespace

std::optional<int64_t> flat_stride(const leir::Expr& access, const std::string& var, const leir::TensorTable& table) {
  const leir::TensorInfo* info = table.find(access.tensor);
  if (!info || info->shape.size() != access.args.size()) return std::nullopt;
  int64_t stride = 1, step = 0;
  for (size_t d = access.args.size(); d-- > 0;) {
    auto a = to_affine(access.args[d]);
    if (!a) return std::nullopt;
    step += a->coeff_of(var) * stride;
    stride *= std::max<int64_t>(1, info->shape[d]);
  }
  return step;
}

ProgramFacts program_facts(const leir::Program& p) {
  ProgramFacts pf;
  auto nests = all_nests(p.body);
  const auto table = leir::build_tensor_table(p);
  for (size_t i = 0; i < p.body.size(); ++i) {
    const auto& it = p.body[i];
    NestFacts f;
    if (it.is_nest()) {
      f.header = leir::print_nest_header(it.nest);
      walk_items({it}, 1, "", f, table);
      for (const auto& nr : nests) {
        if (nr.path.size() != 1 || nr.path[0] != int(i)) continue;
        for (int k = 0; k < int(nr.nest->loops.size()); ++k) {
          auto chk = check_loop(nr, k);
          if (chk.kind == LoopDep::Carried) f.carried_loops++;
          else if (chk.kind == LoopDep::ReductionOnly) f.reduction_loops++;
        }
      }
    } else {
      f.header = "stmt";
      walk_items({it}, 1, "", f, table);
    }
    pf.flops += f.flops;
    pf.bytes += f.bytes;
    pf.local_accesses += f.local_accesses;
    pf.accesses += f.accesses;
    pf.contiguous_accesses += f.contiguous_accesses;
    pf.nests.push_back(std::move(f));
  }
  pf.statements = int64_t(all_stmts(p.body).size());
  return pf;
}

}  // namespace steptp::analysis
