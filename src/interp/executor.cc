// The interpreter's hot loop, and dynamic race detection on independent (P/V/B) loops.
//
// Race detection uses a logical clock that ticks once per iteration of an independent loop. Each
// active independent loop j remembers the clock when its instance started (s_j) and when its
// current iteration started (c_j); the intervals (s_j, c_j) are disjoint and ordered, outermost
// first. An element stamped at time w (its last write, accumulation or read) was touched in a
// *different* iteration of the same instance of loop j exactly when s_j < w < c_j; touches before
// the loop started (w <= s_j) or in the current iteration (w >= c_j) are fine. Per element we keep
// the stamp of the last plain write, of the oldest accumulation and of the oldest read that lies in
// another iteration of an active loop (else the newest), which is enough to catch
// write/write, write/read and read/write conflicts while letting accumulations into one element
// combine across iterations (LEIR.md §3). Stamps exist only when detection is on and the program
// has independent loops; the executor is compiled twice (with and without checks) so the common
// case pays nothing.
#include "interp/executor.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "interp/interpreter.h"
#include "interp/scalar_ops.h"
#include "leir/diagnostic.h"
#include "leir/printer.h"

namespace steptp::interp {

namespace {

struct Stamps {
  std::vector<uint64_t> write;  // last plain write
  std::vector<uint64_t> accum;  // oldest accumulation still in a different iteration
  std::vector<uint64_t> read;   // oldest read in a different iteration, else the newest
};

[[noreturn, gnu::noinline]] void fail(const CompiledProgram& cp, leir::SourceLoc loc, const std::string& msg) {
  throw RuntimeError(leir::format_diagnostic(cp.owned.file, loc, msg));
}

std::string access_text(const leir::Expr* e) { return leir::print_expr(std::make_shared<leir::Expr>(*e)); }

std::string index_text(const TensorSlot& slot, int64_t offset) {
  std::vector<int64_t> idx(slot.shape.size());
  for (size_t d = 0; d < slot.shape.size(); ++d) {
    idx[d] = slot.strides[d] ? offset / slot.strides[d] : 0;
    offset -= idx[d] * slot.strides[d];
  }
  return fmt::format("[{}]", fmt::join(idx, ","));
}

class Executor {
 public:
  Executor(const CompiledProgram& cp, std::vector<TensorStore>& tensors, bool races)
      : cp_(cp), code_(cp.code.data()), acc_(cp.accesses.data()) {
    vars_.assign(std::max(cp.num_vars, 1), 0);
    regs_.assign(cp.num_regs + 1, 0.0);
    data_.resize(cp.slots.size());
    set_.resize(cp.slots.size());
    for (size_t i = 0; i < cp.slots.size(); ++i) {
      data_[i] = tensors[i].data.data();
      set_[i] = tensors[i].set.empty() ? nullptr : tensors[i].set.data();
    }
    if (races) {
      stamps_.resize(cp.slots.size());
      for (size_t i = 0; i < cp.slots.size(); ++i) {
        if (cp.slots[i].read_only) continue;
        auto n = static_cast<size_t>(cp.slots[i].numel);
        stamps_[i].write.assign(n, 0);
        stamps_[i].accum.assign(n, 0);
        stamps_[i].read.assign(n, 0);
      }
      int depth = cp.max_independent_depth;
      s_.assign(depth, 0);
      c_.assign(depth, 0);
      race_loops_.assign(depth, nullptr);
      starts_.resize(depth);
    }
  }

  template <bool Races>
  uint64_t run() {
    run_block<Races>(cp_.top);
    return count_;
  }

 private:
  template <bool Races>
  void run_block(const std::vector<BlockItem>& items) {
    for (const auto& it : items) {
      if (it.is_stmt) exec_stmt<Races>(cp_.stmts[it.index]);
      else run_loops<Races>(cp_.nests[it.index], 0);
    }
  }

  template <bool Races>
  void run_loops(const NestCode& n, size_t level) {
    const LoopCode& l = n.loops[level];
    const bool last = level + 1 == n.loops.size();
    active_.push_back(&l);
    if (Races && l.independent) {
      int j = depth_++;
      s_[j] = clock_;
      race_loops_[j] = &l;
      starts_[j].clear();
      for (int64_t i = 0; i < l.extent; ++i) {
        vars_[l.var] = l.start + i;
        c_[j] = ++clock_;
        starts_[j].push_back(clock_);
        if (last) run_block<Races>(n.body);
        else run_loops<Races>(n, level + 1);
      }
      --depth_;
    } else if (last && n.body.size() == 1 && n.body[0].is_stmt) {
      // The common innermost shape: one statement under a loop.
      const StmtCode& s = cp_.stmts[n.body[0].index];
      for (int64_t i = 0; i < l.extent; ++i) {
        vars_[l.var] = l.start + i;
        exec_stmt<Races>(s);
      }
    } else {
      for (int64_t i = 0; i < l.extent; ++i) {
        vars_[l.var] = l.start + i;
        if (last) run_block<Races>(n.body);
        else run_loops<Races>(n, level + 1);
      }
    }
    active_.pop_back();
  }

  static int64_t fast_offset(const AccessCode& a, const int64_t* vars) {
    int64_t o = a.base;
    for (int k = 0; k < a.nterms; ++k) o += a.term_coef[k] * vars[a.term_var[k]];
    return o;
  }

  int64_t checked_offset(const AccessCode& a, const double* regs) {
    const TensorSlot& slot = cp_.slots[a.slot];
    int64_t o = 0;
    for (size_t d = 0; d < a.dims.size(); ++d) {
      const DimCode& dc = a.dims[d];
      int64_t idx;
      if (dc.affine) {
        idx = dc.lin.c0;
        for (const auto& t : dc.lin.terms) idx += t.coef * vars_[t.var];
      } else {
        double v = regs[dc.reg];
        if (!(std::fabs(v) < 4.0e18) || v != std::trunc(v))
          fail(cp_, a.expr->loc,
               fmt::format("subscript {} of access {} evaluates to {}, which is not an integer{}", d,
                           access_text(a.expr), leir::format_number(v, false), where()));
        idx = static_cast<int64_t>(v);
      }
      if (dc.needs_check && (idx < 0 || idx >= slot.shape[d]))
        fail(cp_, a.expr->loc,
             fmt::format("index {} is out of bounds for dimension {} of {} (size {}) in access {}{}", idx, d,
                         slot.name, slot.shape[d], access_text(a.expr), where()));
      o += idx * slot.strides[d];
    }
    return o;
  }

  int64_t offset(const AccessCode& a, const double* regs) {
    return a.fast ? fast_offset(a, vars_.data()) : checked_offset(a, regs);
  }

  // " (at tx=1, a=3)": the values of the enclosing loop variables.
  std::string where() const {
    if (active_.empty()) return {};
    std::vector<std::string> parts;
    for (const LoopCode* l : active_) parts.push_back(fmt::format("{}={}", l->loop->var, vars_[l->var]));
    return fmt::format(" (at {})", fmt::join(parts, ", "));
  }

  [[noreturn, gnu::noinline]] void fail_unset(const AccessCode& a, int64_t o) {
    const TensorSlot& slot = cp_.slots[a.slot];
    fail(cp_, a.expr->loc,
         fmt::format("read of unset element {}{} by access {}: no statement has written it before this read{}",
                     slot.name, index_text(slot, o), access_text(a.expr), where()));
  }

  [[noreturn, gnu::noinline]] void fail_store(const StmtCode& s, const AccessCode& a, int64_t o, double v) {
    const TensorSlot& slot = cp_.slots[a.slot];
    fail(cp_, a.expr->loc,
         fmt::format("cannot store {} into element {}{} of {} tensor {}{}", leir::format_number(v, false), slot.name,
                     index_text(slot, o), leir::to_string(slot.dtype), slot.name, where()));
  }

  // Index j of the active independent loop in a different iteration of which stamp w was made,
  // or -1.
  int other_iteration(uint64_t w) const {
    if (depth_ == 0 || w >= c_[depth_ - 1] || w <= s_[0]) return -1;
    for (int j = depth_ - 1; j >= 0; --j)
      if (w > s_[j] && w < c_[j]) return j;
    return -1;
  }

  [[noreturn, gnu::noinline]] void fail_race(int j, uint64_t w, const char* earlier, const char* now,
                                            const AccessCode& a, int64_t o) {
    const LoopCode& l = *race_loops_[j];
    const auto& st = starts_[j];
    auto it = std::upper_bound(st.begin(), st.end(), w);
    int64_t then = l.start + (it - st.begin()) - 1;
    const TensorSlot& slot = cp_.slots[a.slot];
    fail(cp_, a.expr->loc,
         fmt::format("race on loop {} at {}:{}: element {}{} of tensor {} is {} in iteration {}={} and {} in "
                     "iteration {}={} (access {}); the iterations of P, V and B loops must be independent "
                     "(only accumulations may combine across them){}",
                     leir::print_loop(*l.loop), l.loop->loc.line, l.loop->loc.col, slot.name, index_text(slot, o),
                     slot.name, earlier, l.loop->var, then, now, l.loop->var, vars_[l.var], access_text(a.expr),
                     where()));
  }

  void race_read(const AccessCode& a, int64_t o) {
    Stamps& st = stamps_[a.slot];
    if (int j = other_iteration(st.write[o]); j >= 0) fail_race(j, st.write[o], "written", "read", a, o);
    if (int j = other_iteration(st.accum[o]); j >= 0) fail_race(j, st.accum[o], "accumulated", "read", a, o);
    if (other_iteration(st.read[o]) < 0) st.read[o] = clock_;
  }

  void race_write(const AccessCode& a, int64_t o, bool accumulation) {
    Stamps& st = stamps_[a.slot];
    const char* now = accumulation ? "accumulated" : "written";
    if (int j = other_iteration(st.write[o]); j >= 0) fail_race(j, st.write[o], "written", now, a, o);
    if (int j = other_iteration(st.read[o]); j >= 0) fail_race(j, st.read[o], "read", now, a, o);
    if (accumulation) {
      if (other_iteration(st.accum[o]) < 0) st.accum[o] = clock_;
    } else {
      if (int j = other_iteration(st.accum[o]); j >= 0) fail_race(j, st.accum[o], "accumulated", now, a, o);
      st.write[o] = clock_;
    }
  }

  template <bool Races>
  void exec_stmt(const StmtCode& s) {
    ++count_;
    double* r = regs_.data();
    const int64_t* vars = vars_.data();
    const AccessCode& lhs = acc_[s.lhs];
    int64_t target = 0;
    const Instr* code = code_;
    for (int pc = s.first_instr; pc < s.end_instr;) {
      const Instr& in = code[pc++];
      switch (in.op) {
        case Op::Target:
          target = offset(lhs, r);
          break;
        case Op::Const:
          r[in.dst] = in.imm;
          break;
        case Op::Var:
          r[in.dst] = static_cast<double>(vars[in.a]);
          break;
        case Op::Load: {
          const AccessCode& a = acc_[in.a];
          int64_t o = a.fast ? fast_offset(a, vars) : checked_offset(a, r);
          if (a.may_be_unset) {
            if (!set_[a.slot][o]) fail_unset(a, o);
            if constexpr (Races) race_read(a, o);
          }
          r[in.dst] = data_[a.slot][o];
          break;
        }
        case Op::LoadSelf:
          r[in.dst] = set_[lhs.slot][target] ? data_[lhs.slot][target] : in.imm;
          break;
        case Op::Neg: r[in.dst] = -r[in.a]; break;
        case Op::Add: r[in.dst] = r[in.a] + r[in.b]; break;
        case Op::Sub: r[in.dst] = r[in.a] - r[in.b]; break;
        case Op::Mul: r[in.dst] = r[in.a] * r[in.b]; break;
        case Op::Div: r[in.dst] = r[in.a] / r[in.b]; break;
        case Op::FloorDiv: r[in.dst] = py_floordiv(r[in.a], r[in.b]); break;
        case Op::Mod: r[in.dst] = py_mod(r[in.a], r[in.b]); break;
        case Op::Pow: r[in.dst] = std::pow(r[in.a], r[in.b]); break;
        case Op::And: r[in.dst] = (r[in.a] != 0.0 && r[in.b] != 0.0) ? 1.0 : 0.0; break;
        case Op::Or: r[in.dst] = (r[in.a] != 0.0 || r[in.b] != 0.0) ? 1.0 : 0.0; break;
        case Op::Lt: r[in.dst] = r[in.a] < r[in.b] ? 1.0 : 0.0; break;
        case Op::Le: r[in.dst] = r[in.a] <= r[in.b] ? 1.0 : 0.0; break;
        case Op::Gt: r[in.dst] = r[in.a] > r[in.b] ? 1.0 : 0.0; break;
        case Op::Ge: r[in.dst] = r[in.a] >= r[in.b] ? 1.0 : 0.0; break;
        case Op::Eq: r[in.dst] = r[in.a] == r[in.b] ? 1.0 : 0.0; break;
        case Op::Ne: r[in.dst] = r[in.a] != r[in.b] ? 1.0 : 0.0; break;
        case Op::Max: r[in.dst] = nan_max(r[in.a], r[in.b]); break;
        case Op::Min: r[in.dst] = nan_min(r[in.a], r[in.b]); break;
        case Op::Exp: r[in.dst] = std::exp(r[in.a]); break;
        case Op::Log: r[in.dst] = std::log(r[in.a]); break;
        case Op::Sqrt: r[in.dst] = std::sqrt(r[in.a]); break;
        case Op::Abs: r[in.dst] = std::fabs(r[in.a]); break;
        case Op::Erf: r[in.dst] = std::erf(r[in.a]); break;
        case Op::Tanh: r[in.dst] = std::tanh(r[in.a]); break;
        case Op::Sigmoid: r[in.dst] = 1.0 / (1.0 + std::exp(-r[in.a])); break;
        case Op::Floor: r[in.dst] = std::floor(r[in.a]); break;
        case Op::Ceil: r[in.dst] = std::ceil(r[in.a]); break;
        case Op::Sin: r[in.dst] = std::sin(r[in.a]); break;
        case Op::Cos: r[in.dst] = std::cos(r[in.a]); break;
        case Op::Log1p: r[in.dst] = std::log1p(r[in.a]); break;
        case Op::Rsqrt: r[in.dst] = 1.0 / std::sqrt(r[in.a]); break;
        case Op::JumpIfZero:
          if (r[in.a] == 0.0) pc = in.b;
          break;
        case Op::Jump:
          pc = in.b;
          break;
      }
    }
    double v = r[s.result_reg];
    const leir::DType dtype = cp_.slots[lhs.slot].dtype;
    if (dtype != leir::DType::F64) {
      auto stored = store_as(dtype, v);
      if (!stored) fail_store(s, lhs, target, v);
      v = *stored;
    }
    if constexpr (Races) race_write(lhs, target, s.accumulation);
    data_[lhs.slot][target] = v;
    set_[lhs.slot][target] = 1;
  }

  const CompiledProgram& cp_;
  const Instr* code_;
  const AccessCode* acc_;
  std::vector<int64_t> vars_;
  std::vector<double> regs_;
  std::vector<double*> data_;
  std::vector<uint8_t*> set_;
  std::vector<const LoopCode*> active_;
  uint64_t count_ = 0;
  // Race detection state.
  std::vector<Stamps> stamps_;
  uint64_t clock_ = 0;
  int depth_ = 0;
  std::vector<uint64_t> s_, c_;
  std::vector<const LoopCode*> race_loops_;
  std::vector<std::vector<uint64_t>> starts_;
};

}  // namespace

uint64_t execute(const CompiledProgram& cp, std::vector<TensorStore>& tensors, bool detect_races) {
  const bool races = detect_races && cp.max_independent_depth > 0;
  Executor ex(cp, tensors, races);
  return races ? ex.run<true>() : ex.run<false>();
}

}  // namespace steptp::interp
