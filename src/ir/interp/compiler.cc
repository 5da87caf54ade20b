// AST → compiled form (bytecode.h). Also decides, once per statement, whether it is an
// accumulation (LEIR.md §3) and which of its right-side terms read the element being written.
#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <set>

#include "ir/interp/bytecode.h"
#include "ir/leir/diagnostic.h"
#include "ir/leir/ir_mutator.h"
#include "ir/leir/printer.h"
#include "ir/leir/uniform_store.h"

namespace steptp::interp {

using leir::BinaryOp;
using leir::Expr;
using leir::ExprKind;
using leir::ExprPtr;
using leir::Func;
using leir::LeirError;

namespace {

// The terms of a statement's right side that read the written element X under the accumulation
// rule, and the identity X reads as while unset.
struct SelfTerms {
  std::vector<const Expr*> terms;
  double identity = 0.0;
};

// Flattens a chain of + and - (sign-tracked) or of *, through nested nodes of the same group.
void flatten_sum(const ExprPtr& e, bool positive, std::vector<std::pair<const Expr*, bool>>& out) {
  if (e->kind == ExprKind::Binary && (e->bop == BinaryOp::Add || e->bop == BinaryOp::Sub)) {
    flatten_sum(e->args[0], positive, out);
    flatten_sum(e->args[1], e->bop == BinaryOp::Add ? positive : !positive, out);
    return;
  }
  out.emplace_back(e.get(), positive);
}

void flatten_product(const ExprPtr& e, std::vector<const Expr*>& out) {
  if (e->kind == ExprKind::Binary && e->bop == BinaryOp::Mul) {
    flatten_product(e->args[0], out);
    flatten_product(e->args[1], out);
    return;
  }
  out.push_back(e.get());
}

SelfTerms find_self_terms(const Expr& lhs, const ExprPtr& rhs) {
  SelfTerms st;
  const double inf = std::numeric_limits<double>::infinity();
  if (rhs->kind == ExprKind::Call && (rhs->func == Func::Max || rhs->func == Func::Min)) {
    for (const auto& a : rhs->args)
      if (leir::equal(*a, lhs)) st.terms.push_back(a.get());
    st.identity = rhs->func == Func::Max ? -inf : inf;
  } else if (rhs->kind == ExprKind::Binary && (rhs->bop == BinaryOp::Add || rhs->bop == BinaryOp::Sub)) {
    std::vector<std::pair<const Expr*, bool>> terms;
    flatten_sum(rhs, true, terms);
    for (const auto& [t, positive] : terms)
      if (positive && leir::equal(*t, lhs)) st.terms.push_back(t);
    st.identity = 0.0;
  } else if (rhs->kind == ExprKind::Binary && rhs->bop == BinaryOp::Mul) {
    std::vector<const Expr*> terms;
    flatten_product(rhs, terms);
    for (const Expr* t : terms)
      if (leir::equal(*t, lhs)) st.terms.push_back(t);
    st.identity = 1.0;
  }
  return st;
}

Op binary_op(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add: return Op::Add;
    case BinaryOp::Sub: return Op::Sub;
    case BinaryOp::Mul: return Op::Mul;
    case BinaryOp::Div: return Op::Div;
    case BinaryOp::FloorDiv: return Op::FloorDiv;
    case BinaryOp::Mod: return Op::Mod;
    case BinaryOp::Pow: return Op::Pow;
    case BinaryOp::And: return Op::And;
    case BinaryOp::Or: return Op::Or;
  }
  return Op::Add;
}

Op compare_op(leir::CompareOp op) {
  switch (op) {
    case leir::CompareOp::Lt: return Op::Lt;
    case leir::CompareOp::Le: return Op::Le;
    case leir::CompareOp::Gt: return Op::Gt;
    case leir::CompareOp::Ge: return Op::Ge;
    case leir::CompareOp::Eq: return Op::Eq;
    case leir::CompareOp::Ne: return Op::Ne;
  }
  return Op::Eq;
}

Op unary_func_op(Func f) {
  switch (f) {
    case Func::Exp: return Op::Exp;
    case Func::Log: return Op::Log;
    case Func::Sqrt: return Op::Sqrt;
    case Func::Abs: return Op::Abs;
    case Func::Erf: return Op::Erf;
    case Func::Tanh: return Op::Tanh;
    case Func::Sigmoid: return Op::Sigmoid;
    case Func::Floor: return Op::Floor;
    case Func::Ceil: return Op::Ceil;
    case Func::Sin: return Op::Sin;
    case Func::Cos: return Op::Cos;
    case Func::Log1p: return Op::Log1p;
    case Func::Rsqrt: return Op::Rsqrt;
    default: return Op::Exp;
  }
}

class Compiler {
 public:
  explicit Compiler(CompiledProgram& cp) : cp_(cp), file_(cp.owned.file) {}

  void run() {
    cp_.table = leir::build_tensor_table(cp_.owned);
    for (const auto& name : cp_.table.order) {
      const auto& info = cp_.table.at(name);
      TensorSlot s;
      s.name = name;
      s.dtype = info.dtype;
      s.shape = info.shape;
      s.strides.assign(s.shape.size(), 1);
      for (int d = static_cast<int>(s.shape.size()) - 2; d >= 0; --d) s.strides[d] = s.strides[d + 1] * s.shape[d + 1];
      s.numel = info.numel();
      s.known = info.known;
      s.read_only = info.read_only();
      s.is_output = info.known && info.role == leir::Role::Output;
      s.decl = info.decl;
      slot_of_[name] = static_cast<int>(cp_.slots.size());
      cp_.slots.push_back(std::move(s));
    }
    cp_.top = compile_block(cp_.owned.body);
  }

 private:
  std::vector<BlockItem> compile_block(const std::vector<leir::Item>& items) {
    std::vector<BlockItem> out;
    for (const auto& item : items) {
      if (item.is_stmt()) {
        out.push_back({true, compile_stmt(item.stmt)});
        continue;
      }
      NestCode nest;
      size_t pushed = 0;
      for (const auto& l : item.nest.loops) {
        LoopCode lc;
        lc.var = static_cast<int>(scope_.names.size());
        lc.start = l.start;
        lc.extent = l.extent;
        lc.independent = leir::requires_independence(l.kind);
        lc.loop = &l;
        scope_.names.push_back(l.var);
        loop_stack_.push_back(nullptr);  // set below, once nest.loops stops growing
        ranges_.push_back({l.start, l.start + l.extent - 1});
        if (lc.independent) {
          ++independent_depth_;
          open_independent_.push_back({lc.var, &l, leir::tensors_written(item.nest.body), {}});
        }
        nest.loops.push_back(lc);
        ++pushed;
      }
      for (size_t k = 0; k < pushed; ++k) loop_stack_[loop_stack_.size() - pushed + k] = &nest.loops[k];
      cp_.num_vars = std::max(cp_.num_vars, static_cast<int>(scope_.names.size()));
      cp_.max_independent_depth = std::max(cp_.max_independent_depth, independent_depth_);
      // Reserve the nest's index before compiling its body (nested nests append after it).
      int index = static_cast<int>(cp_.nests.size());
      cp_.nests.emplace_back();
      nest.body = compile_block(item.nest.body);
      for (const auto& lc : nest.loops) {
        if (!lc.independent) continue;
        --independent_depth_;
        mark_unproven(open_independent_.back());
        open_independent_.pop_back();
      }
      scope_.names.resize(scope_.names.size() - pushed);
      loop_stack_.resize(loop_stack_.size() - pushed);
      ranges_.resize(ranges_.size() - pushed);
      cp_.nests[index] = std::move(nest);
      out.push_back({false, index});
    }
    return out;
  }

  int compile_stmt(const leir::Stmt& s) {
    const Expr& lhs = *s.lhs;
    const TensorSlot& slot = cp_.slots[slot_of_.at(lhs.tensor)];
    if (slot.read_only)
      throw LeirError(file_, lhs.loc,
                      fmt::format("statement writes {}, which is a read-only {}: only outputs and intermediates "
                                  "may be written",
                                  lhs.tensor, leir::to_string(slot.decl->role)));
    StmtCode sc;
    sc.stmt = &s;
    sc.first_instr = static_cast<int>(cp_.code.size());
    SelfTerms self = find_self_terms(lhs, s.rhs);
    self_terms_ = self.terms;
    identity_ = self.identity;
    sc.accumulation = !self.terms.empty();
    for (const auto& sub : lhs.args) leir::for_each_expr(sub, [&](const Expr& x) { check_vars(x); });
    sc.lhs = compile_access(lhs, 0);
    for (size_t j = 0; j < open_independent_.size() && j < 64; ++j)
      if (leir::is_uniform_store(s, open_independent_[j].loop->var, open_independent_[j].written))
        cp_.accesses[sc.lhs].uniform_in |= uint64_t{1} << j;
    sc.slot = cp_.accesses[sc.lhs].slot;
    sc.lhs_fast = cp_.accesses[sc.lhs].fast;
    sc.convert = cp_.slots[sc.slot].dtype != leir::DType::F64;
    if (!sc.lhs_fast) emit({Op::Target, 0, sc.lhs, 0, 0.0});
    compile_expr(s.rhs, 0);
    emit({Op::End, 0, 0, 0, 0.0});
    sc.result_reg = 0;
    sc.end_instr = static_cast<int>(cp_.code.size());
    self_terms_.clear();
    cp_.stmts.push_back(sc);
    return static_cast<int>(cp_.stmts.size()) - 1;
  }

  void emit(Instr in) { cp_.code.push_back(in); }
  void use_reg(int r) { cp_.num_regs = std::max(cp_.num_regs, r + 1); }

  // Emits code computing the non-affine subscripts into registers >= `reg`, and returns the
  // access index.
  int compile_access(const Expr& a, int reg) {
    int slot_index = slot_of_.at(a.tensor);
    const TensorSlot& slot = cp_.slots[slot_index];
    AccessCode ac;
    ac.slot = slot_index;
    ac.expr = &a;
    ac.may_be_unset = !slot.read_only;
    bool all_fast = true;
    for (size_t d = 0; d < a.args.size(); ++d) {
      DimCode dc;
      if (auto lin = to_linear(*a.args[d], scope_)) {
        dc.affine = true;
        dc.lin = *lin;
        Range r = range_of(*lin, ranges_);
        dc.needs_check = !(r.lo >= 0 && r.hi < slot.shape[d]);
      } else {
        dc.affine = false;
        dc.reg = reg;
        compile_expr(a.args[d], reg);
        ++reg;
        dc.needs_check = true;
      }
      if (!dc.affine || dc.needs_check) all_fast = false;
      ac.dims.push_back(std::move(dc));
    }
    if (all_fast) {
      Linear flat;
      for (size_t d = 0; d < ac.dims.size(); ++d) {
        const Linear& l = ac.dims[d].lin;
        flat.c0 += slot.strides[d] * l.c0;
        for (const auto& t : l.terms) {
          auto it = std::find_if(flat.terms.begin(), flat.terms.end(), [&](const LinearTerm& u) { return u.var == t.var; });
          if (it == flat.terms.end()) flat.terms.push_back({t.var, slot.strides[d] * t.coef});
          else it->coef += slot.strides[d] * t.coef;
        }
      }
      std::erase_if(flat.terms, [](const LinearTerm& t) { return t.coef == 0; });
      if (flat.terms.size() <= static_cast<size_t>(kMaxFastTerms)) {
        ac.fast = true;
        ac.base = flat.c0;
        ac.nterms = static_cast<int>(flat.terms.size());
        int index = static_cast<int>(cp_.accesses.size());
        for (int k = 0; k < ac.nterms; ++k) {
          ac.term_var[k] = flat.terms[k].var;
          ac.term_coef[k] = flat.terms[k].coef;
          loop_stack_[flat.terms[k].var]->steps.push_back({index, flat.terms[k].coef});
        }
      }
    }
    cp_.accesses.push_back(std::move(ac));
    int index = static_cast<int>(cp_.accesses.size()) - 1;
    if (!slot.read_only)
      for (auto& open : open_independent_) open.accesses.push_back(index);
    return index;
  }

  // The accesses inside one independent loop, to decide which need dynamic race checks.
  struct OpenLoop {
    int var = 0;
    const leir::Loop* loop = nullptr;
    std::set<std::string> written;  // tensors written inside it (for uniform stores)
    std::vector<int> accesses;
  };

  // Different iterations of the loop over `var` touch disjoint elements of a tensor if, at some
  // dimension, every access of that tensor inside the loop has the same subscript c0 + k·var
  // with k != 0 and no other variable.
  bool prove_disjoint(const std::vector<int>& accesses, int var) const {
    size_t rank = cp_.accesses[accesses.front()].dims.size();
    for (size_t d = 0; d < rank; ++d) {
      const Linear* ref = nullptr;
      bool ok = true;
      for (int i : accesses) {
        const DimCode& dc = cp_.accesses[i].dims[d];
        if (!dc.affine || dc.lin.terms.size() != 1 || dc.lin.terms[0].var != var ||
            (ref && (dc.lin.c0 != ref->c0 || dc.lin.terms[0].coef != ref->terms[0].coef))) {
          ok = false;
          break;
        }
        ref = &dc.lin;
      }
      if (ok) return true;
    }
    return false;
  }

  void mark_unproven(const OpenLoop& loop) {
    std::map<int, std::vector<int>> by_slot;
    for (int i : loop.accesses) by_slot[cp_.accesses[i].slot].push_back(i);
    for (const auto& [slot, accesses] : by_slot)
      if (!prove_disjoint(accesses, loop.var))
        for (int i : accesses) cp_.accesses[i].race_checked = true;
  }

  void check_vars(const Expr& e) {
    if (e.is_var() && scope_.find(e.var_name()) < 0)
      throw LeirError(file_, e.loc,
                      fmt::format("index variable '{}' is not bound by an enclosing loop", e.var_name()));
  }

  // Emits code leaving the value of `e` in register `dst`; registers above dst are scratch.
  void compile_expr(const ExprPtr& ep, int dst) {
    const Expr& e = *ep;
    use_reg(dst);
    switch (e.kind) {
      case ExprKind::Number:
        emit({Op::Const, dst, 0, 0, e.value});
        return;
      case ExprKind::IndexVar:
        check_vars(e);
        emit({Op::Var, dst, scope_.find(e.var_name()), 0, 0.0});
        return;
      case ExprKind::Access: {
        if (std::find(self_terms_.begin(), self_terms_.end(), &e) != self_terms_.end()) {
          emit({Op::LoadSelf, dst, 0, 0, identity_});
          return;
        }
        for (const auto& sub : e.args)
          leir::for_each_expr(sub, [&](const Expr& x) { check_vars(x); });
        int acc = compile_access(e, dst + 1);
        const AccessCode& ac = cp_.accesses[acc];
        Op op = !ac.fast ? Op::Load : ac.may_be_unset ? Op::LoadFastRW : Op::LoadFast;
        emit({op, dst, acc, ac.slot, 0.0});
        return;
      }
      case ExprKind::Unary:
        compile_expr(e.args[0], dst);
        emit({Op::Neg, dst, dst, 0, 0.0});
        return;
      case ExprKind::Binary:
        compile_expr(e.args[0], dst);
        compile_expr(e.args[1], dst + 1);
        emit({binary_op(e.bop), dst, dst, dst + 1, 0.0});
        return;
      case ExprKind::Compare: {
        int n = static_cast<int>(e.cmp_ops.size());
        for (int i = 0; i <= n; ++i) compile_expr(e.args[i], dst + i);
        emit({compare_op(e.cmp_ops[0]), dst, dst, dst + 1, 0.0});
        int tmp = dst + n + 1;
        use_reg(tmp);
        for (int i = 1; i < n; ++i) {
          emit({compare_op(e.cmp_ops[i]), tmp, dst + i, dst + i + 1, 0.0});
          emit({Op::And, dst, dst, tmp, 0.0});
        }
        return;
      }
      case ExprKind::Call:
        switch (e.func) {
          case Func::Max:
          case Func::Min:
          case Func::Pow:
            compile_expr(e.args[0], dst);
            compile_expr(e.args[1], dst + 1);
            emit({e.func == Func::Max ? Op::Max : e.func == Func::Min ? Op::Min : Op::Pow, dst, dst, dst + 1, 0.0});
            return;
          case Func::IfThenElse: {
            // Lazy: only the taken branch runs (prefix scans read out of range in the other).
            compile_expr(e.args[0], dst);
            size_t jz = cp_.code.size();
            emit({Op::JumpIfZero, 0, dst, 0, 0.0});
            compile_expr(e.args[1], dst);
            size_t jmp = cp_.code.size();
            emit({Op::Jump, 0, 0, 0, 0.0});
            cp_.code[jz].b = static_cast<int32_t>(cp_.code.size());
            compile_expr(e.args[2], dst);
            cp_.code[jmp].b = static_cast<int32_t>(cp_.code.size());
            return;
          }
          default:
            compile_expr(e.args[0], dst);
            emit({unary_func_op(e.func), dst, dst, 0, 0.0});
            return;
        }
    }
  }

  CompiledProgram& cp_;
  const std::string& file_;
  std::map<std::string, int> slot_of_;
  VarScope scope_;
  std::vector<LoopCode*> loop_stack_;  // the loop of each variable register
  std::vector<Range> ranges_;
  int independent_depth_ = 0;
  std::vector<OpenLoop> open_independent_;
  std::vector<const Expr*> self_terms_;
  double identity_ = 0.0;
};

}  // namespace

std::unique_ptr<CompiledProgram> compile_program(const leir::Program& p) {
  auto cp = std::make_unique<CompiledProgram>();
  cp->owned = p;
  cp->program = &cp->owned;
  Compiler(*cp).run();
  return cp;
}

}  // namespace steptp::interp
