// Generates wrong programs from right ones, for the verifier's rejection battery: off-by-one
// subscripts (wrapped so they stay in bounds), swapped operands of - and /, max<->min, dropped
// terms, accumulation inits dropped (X=X+e -> X=e), changed constants, shortened reduction loops.
// Every mutation changes the computed function on generic inputs by construction (operands that
// are structurally equal, constants inside conditions or subscripts, and size-1 dimensions are
// skipped).
#pragma once

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "ir/leir/ast.h"
#include "ir/leir/ir_mutator.h"
#include "ir/leir/printer.h"
#include "ir/leir/tensors.h"

namespace steptp::testing {

struct Mutant {
  std::string what;
  leir::Program program;
};

namespace mutant_detail {

using namespace leir;

// Rewrites the k-th node (pre-order over all statements' right sides) for which `pick` returns a
// replacement; returns false when there is no k-th such node.
inline bool rewrite_kth(Program& p, int k, const std::function<ExprPtr(const ExprPtr&)>& pick) {
  int seen = 0;
  bool done = false;
  std::function<ExprPtr(const ExprPtr&)> walk = [&](const ExprPtr& e) -> ExprPtr {
    if (done) return e;
    if (ExprPtr r = pick(e)) {
      if (seen++ == k) {
        done = true;
        return r;
      }
    }
    bool changed = false;
    std::vector<ExprPtr> args;
    for (const auto& a : e->args) {
      args.push_back(e->is_access() ? a : walk(a));  // never mutate inside subscripts here
      changed |= args.back() != a;
    }
    if (!changed) return e;
    auto copy = std::make_shared<Expr>(*e);
    copy->args = std::move(args);
    return copy;
  };
  std::function<void(std::vector<Item>&)> body = [&](std::vector<Item>& items) {
    for (auto& it : items) {
      if (it.is_nest()) body(it.nest.body);
      else it.stmt.rhs = walk(it.stmt.rhs);
    }
  };
  body(p.body);
  return done;
}

inline bool is_cond(const ExprPtr& e) { return e->kind == ExprKind::Compare; }

}  // namespace mutant_detail

inline std::vector<Mutant> make_mutants(const leir::Program& base, int per_kind = 2) {
  using namespace leir;
  using namespace mutant_detail;
  std::vector<Mutant> out;
  TensorTable table = build_tensor_table(base);
  auto add_kind = [&](const std::string& kind, const std::function<ExprPtr(const ExprPtr&)>& pick) {
    for (int k = 0; k < per_kind; ++k) {
      Program m = base;
      if (!rewrite_kth(m, k, pick)) break;
      out.push_back({base.name + ": " + kind + " #" + std::to_string(k), std::move(m)});
    }
  };
  // Swapped operands of - and / (not when both sides are the same expression).
  add_kind("swap operands", [](const ExprPtr& e) -> ExprPtr {
    if (e->kind != ExprKind::Binary || (e->bop != BinaryOp::Sub && e->bop != BinaryOp::Div)) return nullptr;
    if (equal(e->args[0], e->args[1])) return nullptr;
    return make_binary(e->bop, e->args[1], e->args[0]);
  });
  add_kind("max<->min", [](const ExprPtr& e) -> ExprPtr {
    if (e->kind != ExprKind::Call || (e->func != Func::Max && e->func != Func::Min)) return nullptr;
    if (equal(e->args[0], e->args[1])) return nullptr;
    return make_call(e->func == Func::Max ? Func::Min : Func::Max, e->args);
  });
  // Dropped term: a+b -> a (b not a literal 0).
  add_kind("drop term", [](const ExprPtr& e) -> ExprPtr {
    if (e->kind != ExprKind::Binary || (e->bop != BinaryOp::Add && e->bop != BinaryOp::Sub)) return nullptr;
    if (e->args[1]->is_number() && e->args[1]->value == 0) return nullptr;
    return e->args[0];
  });
  // Changed constants outside conditions: v -> 1.5 v + 0.25 (never equal to v).
  {
    for (int k = 0; k < per_kind; ++k) {
      Program m = base;
      int seen = 0;
      bool done = false;
      std::function<ExprPtr(const ExprPtr&, bool)> walk = [&](const ExprPtr& e, bool in_cond) -> ExprPtr {
        if (done) return e;
        if (e->is_number() && !in_cond && std::isfinite(e->value)) {
          if (seen++ == k) {
            done = true;
            return make_number(e->value * 1.5 + 0.25);
          }
          return e;
        }
        if (e->is_access()) return e;
        bool changed = false;
        std::vector<ExprPtr> args;
        for (size_t i = 0; i < e->args.size(); ++i) {
          bool cond = in_cond || is_cond(e) ||
                      (e->kind == ExprKind::Call && e->func == Func::IfThenElse && i == 0) ||
                      (e->kind == ExprKind::Binary && (e->bop == BinaryOp::And || e->bop == BinaryOp::Or));
          args.push_back(walk(e->args[i], cond));
          changed |= args.back() != e->args[i];
        }
        if (!changed) return e;
        auto copy = std::make_shared<Expr>(*e);
        copy->args = std::move(args);
        return copy;
      };
      std::function<void(std::vector<Item>&)> body = [&](std::vector<Item>& items) {
        for (auto& it : items) {
          if (it.is_nest()) body(it.nest.body);
          else it.stmt.rhs = walk(it.stmt.rhs, false);
        }
      };
      body(m.body);
      if (!done) break;
      out.push_back({base.name + ": changed constant #" + std::to_string(k), std::move(m)});
    }
  }
  // Off-by-one read subscript, wrapped to stay in bounds: v -> (v+1)%n on a dimension n >= 2
  // indexed by a loop variable of extent >= 2.
  {
    for (int k = 0; k < per_kind; ++k) {
      Program m = base;
      int seen = 0;
      bool done = false;
      std::function<ExprPtr(const ExprPtr&)> walk = [&](const ExprPtr& e) -> ExprPtr {
        if (done) return e;
        if (e->is_access()) {
          const TensorInfo* t = table.find(e->tensor);
          for (size_t d = 0; t && d < e->args.size() && d < t->shape.size(); ++d) {
            if (!e->args[d]->is_var() || t->shape[d] < 2) continue;
            if (seen++ != k) continue;
            done = true;
            auto copy = std::make_shared<Expr>(*e);
            copy->args[d] = make_binary(BinaryOp::Mod, make_binary(BinaryOp::Add, e->args[d], make_int(1)),
                                        make_int(t->shape[d]));
            return copy;
          }
          return e;
        }
        bool changed = false;
        std::vector<ExprPtr> args;
        for (const auto& a : e->args) {
          args.push_back(walk(a));
          changed |= args.back() != a;
        }
        if (!changed) return e;
        auto copy = std::make_shared<Expr>(*e);
        copy->args = std::move(args);
        return copy;
      };
      std::function<void(std::vector<Item>&, std::vector<const Loop*>&)> body = [&](std::vector<Item>& items,
                                                                                     std::vector<const Loop*>& loops) {
        for (auto& it : items) {
          if (it.is_nest()) {
            for (const auto& l : it.nest.loops) loops.push_back(&l);
            body(it.nest.body, loops);
            loops.resize(loops.size() - it.nest.loops.size());
          } else {
            it.stmt.rhs = walk(it.stmt.rhs);
          }
        }
      };
      std::vector<const Loop*> loops;
      body(m.body, loops);
      if (!done) break;
      out.push_back({base.name + ": off-by-one subscript #" + std::to_string(k), std::move(m)});
    }
  }
  // Wrong init: an accumulation X = X + e (X first term) becomes X = e.
  {
    int k = 0;
    std::function<bool(std::vector<Item>&, int&)> body = [&](std::vector<Item>& items, int& seen) {
      for (auto& it : items) {
        if (it.is_nest()) {
          if (body(it.nest.body, seen)) return true;
          continue;
        }
        const auto& r = it.stmt.rhs;
        if (r->kind == ExprKind::Binary && r->bop == BinaryOp::Add && equal(r->args[0], it.stmt.lhs)) {
          if (seen++ == k) {
            it.stmt.rhs = r->args[1];
            return true;
          }
        }
      }
      return false;
    };
    for (; k < per_kind; ++k) {
      Program m = base;
      int seen = 0;
      if (!body(m.body, seen)) break;
      out.push_back({base.name + ": X=X+e -> X=e #" + std::to_string(k), std::move(m)});
    }
  }
  // Shortened reduction loop: a loop of extent >= 2 whose variable no statement's left side uses.
  {
    int k = 0;
    for (; k < per_kind; ++k) {
      Program m = base;
      int seen = 0;
      bool done = false;
      std::function<void(std::vector<Item>&)> body = [&](std::vector<Item>& items) {
        for (auto& it : items) {
          if (done || !it.is_nest()) continue;
          for (auto& l : it.nest.loops) {
            if (l.extent < 2) continue;
            bool in_lhs = false, accum_only = true;
            for_each_stmt(it.nest.body, [&](const Stmt& s, const std::vector<const Loop*>&) {
              for_each_expr(s.lhs, [&](const Expr& x) { in_lhs |= x.is_var() && x.var_name() == l.var; });
              bool acc = s.rhs->kind == ExprKind::Binary && s.rhs->bop == BinaryOp::Add && equal(s.rhs->args[0], s.lhs);
              bool mx = s.rhs->kind == ExprKind::Call && (s.rhs->func == Func::Max || s.rhs->func == Func::Min);
              accum_only &= acc || mx;
            });
            if (in_lhs || !accum_only) continue;
            if (seen++ == k) {
              --l.extent;
              done = true;
              break;
            }
          }
          if (!done) body(it.nest.body);
        }
      };
      body(m.body);
      if (!done) break;
      out.push_back({base.name + ": shortened reduction loop #" + std::to_string(k), std::move(m)});
    }
  }
  return out;
}

}  // namespace steptp::testing
