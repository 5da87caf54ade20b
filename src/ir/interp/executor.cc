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
// combine across iterations (LEIR.md §3), and a uniform store rewrite its element from every
// iteration (AccessCode::uniform_in). Stamps exist only when detection is on and the program
// has independent loops; the executor is compiled twice (with and without checks) so the common
// case pays nothing. Accesses the compiler proved race-free (AccessCode::race_checked == false)
// skip the stamps altogether; that is sound because every access of the same tensor inside the
// same independent loop is then confined to its own iteration's elements.
#include "ir/interp/executor.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "ir/interp/interpreter.h"
#include "ir/interp/scalar_ops.h"
#include "ir/leir/diagnostic.h"
#include "ir/leir/printer.h"

namespace steptp::interp {

namespace {

struct Stamp {
  uint64_t write = 0;  // last plain write
  uint64_t accum = 0;  // oldest accumulation still in a different iteration
  uint64_t read = 0;   // oldest read in a different iteration, else the newest
};

std::string access_text(const leir::Expr* e) { return leir::print_expr(std::make_shared<leir::Expr>(*e)); }

class Executor {
 public:
  Executor(const CompiledProgram& cp, std::vector<TensorStore>& tensors, bool races)
      : cp_(cp), code_(cp.code.data()), acc_(cp.accesses.data()) {
    vars_.assign(std::max(cp.num_vars, 1), 0);
    off_.resize(cp.accesses.size());
    for (size_t i = 0; i < cp.accesses.size(); ++i) off_[i] = cp.accesses[i].base;
    regs_.assign(cp.num_regs + 1, 0.0);
    data_.resize(cp.slots.size());
    set_.resize(cp.slots.size());
    for (size_t i = 0; i < cp.slots.size(); ++i) {
      data_[i] = tensors[i].data.data();
      set_[i] = tensors[i].set.empty() ? nullptr : tensors[i].set.data();
    }
    if (races) {
      stamps_.resize(cp.slots.size());
      std::vector<bool> watched(cp.slots.size(), false);
      for (const auto& a : cp.accesses) watched[a.slot] = watched[a.slot] || a.race_checked;
      for (size_t i = 0; i < cp.slots.size(); ++i)
        if (watched[i]) stamps_[i].assign(static_cast<size_t>(cp.slots[i].numel), Stamp{});
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
    int64_t* off = off_.data();
    for (const auto& st : l.steps) off[st.access] += st.coef * l.start;
    if (Races && l.independent) {
      int j = depth_++;
      s_[j] = clock_;
      race_loops_[j] = &l;
      starts_[j].clear();
      for (int64_t i = 0; i < l.extent; ++i) {
        vars_[l.var] = l.start + i;
        c_[j] = ++clock_;
        starts_[j].push_back(clock_);
        update_fast_bounds();
        if (last) run_block<Races>(n.body);
        else run_loops<Races>(n, level + 1);
        for (const auto& st : l.steps) off[st.access] += st.coef;
      }
      --depth_;
      update_fast_bounds();
    } else if (last && n.body.size() == 1 && n.body[0].is_stmt) {
      // The common innermost shape: one statement under a loop.
      const StmtCode& s = cp_.stmts[n.body[0].index];
      const OffsetStep* steps = l.steps.data();
      const size_t nsteps = l.steps.size();
      for (int64_t i = 0; i < l.extent; ++i) {
        vars_[l.var] = l.start + i;
        exec_stmt<Races>(s);
        for (size_t k = 0; k < nsteps; ++k) off[steps[k].access] += steps[k].coef;
      }
    } else {
      for (int64_t i = 0; i < l.extent; ++i) {
        vars_[l.var] = l.start + i;
        if (last) run_block<Races>(n.body);
        else run_loops<Races>(n, level + 1);
        for (const auto& st : l.steps) off[st.access] += st.coef;
      }
    }
    for (const auto& st : l.steps) off[st.access] -= st.coef * (l.start + l.extent);
    active_.pop_back();
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
          fail_at(cp_, a.expr->loc,
                  fmt::format("subscript {} of access {} evaluates to {}, which is not an integer{}", d,
                              access_text(a.expr), leir::format_number(v, false), where()));
        idx = static_cast<int64_t>(v);
      }
      if (dc.needs_check && (idx < 0 || idx >= slot.shape[d]))
        fail_at(cp_, a.expr->loc,
                fmt::format("index {} is out of bounds for dimension {} of {} (size {}) in access {}{}", idx, d,
                            slot.name, slot.shape[d], access_text(a.expr), where()));
      o += idx * slot.strides[d];
    }
    return o;
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
    fail_at(cp_, a.expr->loc,
            fmt::format("read of unset element {}{} by access {}: no statement has written it before this read{}",
                        slot.name, index_text(slot, o), access_text(a.expr), where()));
  }

  [[noreturn, gnu::noinline]] void fail_store(const StmtCode& s, const AccessCode& a, int64_t o, double v) {
    const TensorSlot& slot = cp_.slots[a.slot];
    fail_at(cp_, a.expr->loc,
            fmt::format("cannot store {} into element {}{} of {} tensor {}{}", leir::format_number(v, false), slot.name,
                        index_text(slot, o), leir::to_string(slot.dtype), slot.name, where()));
  }

  // Index j of the active independent loop in a different iteration of which stamp w was made,
  // or -1.
  int other_iteration(uint64_t w) const {
    if (w >= hi_ || w <= lo_) [[likely]] return -1;
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
    fail_at(cp_, a.expr->loc,
            fmt::format("race on loop {} at {}:{}: element {}{} of tensor {} is {} in iteration {}={} and {} in "
                        "iteration {}={} (access {}); the iterations of P, V and B loops must be independent "
                        "(only accumulations may combine across them){}",
                        leir::print_loop(*l.loop), l.loop->loc.line, l.loop->loc.col, slot.name, index_text(slot, o),
                        slot.name, earlier, l.loop->var, then, now, l.loop->var, vars_[l.var], access_text(a.expr),
                        where()));
  }

  bool in_fast_window(uint64_t w) const { return w >= hi_ || w <= lo_; }

  // Inline fast path: all three stamps outside every other iteration of an active loop.
  [[gnu::always_inline]] void race_read(int slot, const AccessCode& a, int64_t o) {
    Stamp& st = stamps_[slot][o];
    if (in_fast_window(st.write) && in_fast_window(st.accum) && in_fast_window(st.read)) [[likely]] {
      st.read = clock_;
      return;
    }
    race_read_slow(st, a, o);
  }

  [[gnu::noinline]] void race_read_slow(Stamp& st, const AccessCode& a, int64_t o) {
    if (int j = other_iteration(st.write); j >= 0) [[unlikely]] fail_race(j, st.write, "written", "read", a, o);
    if (int j = other_iteration(st.accum); j >= 0) [[unlikely]] fail_race(j, st.accum, "accumulated", "read", a, o);
    if (other_iteration(st.read) < 0) st.read = clock_;
  }

  [[gnu::always_inline]] void race_write(int slot, const AccessCode& a, int64_t o, bool accumulation) {
    Stamp& st = stamps_[slot][o];
    if (in_fast_window(st.write) && in_fast_window(st.accum) && in_fast_window(st.read)) [[likely]] {
      (accumulation ? st.accum : st.write) = clock_;
      return;
    }
    race_write_slow(st, a, o, accumulation);
  }

  [[gnu::noinline]] void race_write_slow(Stamp& st, const AccessCode& a, int64_t o, bool accumulation) {
    const char* now = accumulation ? "accumulated" : "written";
    if (int j = other_iteration(st.write); j >= 0 && !(a.uniform_in >> j & 1)) [[unlikely]]
      fail_race(j, st.write, "written", now, a, o);
    if (int j = other_iteration(st.read); j >= 0) [[unlikely]] fail_race(j, st.read, "read", now, a, o);
    if (accumulation) {
      if (other_iteration(st.accum) < 0) st.accum = clock_;
    } else {
      if (int j = other_iteration(st.accum); j >= 0) [[unlikely]] fail_race(j, st.accum, "accumulated", now, a, o);
      st.write = clock_;
    }
  }

  void update_fast_bounds() {
    if (depth_ == 0) {
      lo_ = UINT64_MAX;
      hi_ = 0;
    } else {
      lo_ = s_[0];
      hi_ = c_[depth_ - 1];
    }
  }

  // Direct-threaded dispatch: one indirect jump per instruction, no bounds check, no loop test
  // (every statement's code ends with Op::End).
  template <bool Races>
  void exec_stmt(const StmtCode& s) {
    static const void* const kLabels[] = {
        &&Target, &&Const, &&Var, &&LoadFast, &&LoadFastRW, &&Load, &&LoadSelf, &&Neg, &&Add, &&Sub, &&Mul,
        &&Div, &&FloorDiv, &&Mod, &&Pow, &&And, &&Or, &&Lt, &&Le, &&Gt, &&Ge, &&Eq, &&Ne, &&Max, &&Min, &&Exp,
        &&Log, &&Sqrt, &&Abs, &&Erf, &&Tanh, &&Sigmoid, &&Floor, &&Ceil, &&Sin, &&Cos, &&Log1p, &&Rsqrt,
        &&JumpIfZero, &&Jump, &&End};
    static_assert(sizeof(kLabels) / sizeof(kLabels[0]) == static_cast<size_t>(Op::kCount));
    ++count_;
    double* r = regs_.data();
    const int64_t* off = off_.data();
    double* const* data = data_.data();
    const Instr* code = code_;
    const Instr* in = code + s.first_instr;
    int64_t target = s.lhs_fast ? off[s.lhs] : 0;
#define STEPTP_NEXT() goto* kLabels[static_cast<int>((++in)->op)]
#define STEPTP_BIN(expr) \
  {                       \
    double x = r[in->a];  \
    double y = r[in->b];  \
    r[in->dst] = (expr);  \
    STEPTP_NEXT();        \
  }
#define STEPTP_UN(expr)  \
  {                      \
    double x = r[in->a]; \
    r[in->dst] = (expr); \
    STEPTP_NEXT();       \
  }
    goto* kLabels[static_cast<int>(in->op)];
  Target:
    target = checked_offset(acc_[s.lhs], r);
    STEPTP_NEXT();
  Const:
    r[in->dst] = in->imm;
    STEPTP_NEXT();
  Var:
    r[in->dst] = static_cast<double>(vars_[in->a]);
    STEPTP_NEXT();
  LoadFast:
    r[in->dst] = data[in->b][off[in->a]];
    STEPTP_NEXT();
  LoadFastRW: {
    int64_t o = off[in->a];
    if (!set_[in->b][o]) [[unlikely]] fail_unset(acc_[in->a], o);
    if constexpr (Races)
      if (acc_[in->a].race_checked) race_read(in->b, acc_[in->a], o);
    r[in->dst] = data[in->b][o];
    STEPTP_NEXT();
  }
  Load: {
    const AccessCode& a = acc_[in->a];
    int64_t o = checked_offset(a, r);
    if (a.may_be_unset) {
      if (!set_[a.slot][o]) [[unlikely]] fail_unset(a, o);
      if constexpr (Races)
        if (a.race_checked) race_read(a.slot, a, o);
    }
    r[in->dst] = data[a.slot][o];
    STEPTP_NEXT();
  }
  LoadSelf:
    r[in->dst] = set_[s.slot][target] ? data[s.slot][target] : in->imm;
    STEPTP_NEXT();
  Neg: STEPTP_UN(-x)
  Add: STEPTP_BIN(x + y)
  Sub: STEPTP_BIN(x - y)
  Mul: STEPTP_BIN(x * y)
  Div: STEPTP_BIN(x / y)
  FloorDiv: STEPTP_BIN(py_floordiv(x, y))
  Mod: STEPTP_BIN(py_mod(x, y))
  Pow: STEPTP_BIN(std::pow(x, y))
  And: STEPTP_BIN((x != 0.0 && y != 0.0) ? 1.0 : 0.0)
  Or: STEPTP_BIN((x != 0.0 || y != 0.0) ? 1.0 : 0.0)
  Lt: STEPTP_BIN(x < y ? 1.0 : 0.0)
  Le: STEPTP_BIN(x <= y ? 1.0 : 0.0)
  Gt: STEPTP_BIN(x > y ? 1.0 : 0.0)
  Ge: STEPTP_BIN(x >= y ? 1.0 : 0.0)
  Eq: STEPTP_BIN(x == y ? 1.0 : 0.0)
  Ne: STEPTP_BIN(x != y ? 1.0 : 0.0)
  Max: STEPTP_BIN(nan_max(x, y))
  Min: STEPTP_BIN(nan_min(x, y))
  Exp: STEPTP_UN(std::exp(x))
  Log: STEPTP_UN(std::log(x))
  Sqrt: STEPTP_UN(std::sqrt(x))
  Abs: STEPTP_UN(std::fabs(x))
  Erf: STEPTP_UN(std::erf(x))
  Tanh: STEPTP_UN(std::tanh(x))
  Sigmoid: STEPTP_UN(1.0 / (1.0 + std::exp(-x)))
  Floor: STEPTP_UN(std::floor(x))
  Ceil: STEPTP_UN(std::ceil(x))
  Sin: STEPTP_UN(std::sin(x))
  Cos: STEPTP_UN(std::cos(x))
  Log1p: STEPTP_UN(std::log1p(x))
  Rsqrt: STEPTP_UN(1.0 / std::sqrt(x))
  JumpIfZero:
    if (r[in->a] == 0.0) in = code + in->b - 1;
    STEPTP_NEXT();
  Jump:
    in = code + in->b - 1;
    STEPTP_NEXT();
#undef STEPTP_NEXT
#undef STEPTP_BIN
#undef STEPTP_UN
  End:
    double v = r[s.result_reg];
    if (s.convert) {
      auto stored = store_as(cp_.slots[s.slot].dtype, v);
      if (!stored) fail_store(s, acc_[s.lhs], target, v);
      v = *stored;
    }
    if constexpr (Races)
      if (acc_[s.lhs].race_checked) race_write(s.slot, acc_[s.lhs], target, s.accumulation);
    data[s.slot][target] = v;
    set_[s.slot][target] = 1;
  }

  const CompiledProgram& cp_;
  const Instr* code_;
  const AccessCode* acc_;
  std::vector<int64_t> vars_;
  std::vector<int64_t> off_;  // running offsets of fast accesses
  std::vector<double> regs_;
  std::vector<double*> data_;
  std::vector<uint8_t*> set_;
  std::vector<const LoopCode*> active_;
  uint64_t count_ = 0;
  // Race detection state.
  std::vector<std::vector<Stamp>> stamps_;
  // Fast path of other_iteration(): no active loop has s_j < w < c_j when w <= lo_ or w >= hi_.
  uint64_t lo_ = UINT64_MAX, hi_ = 0;
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

void fail_at(const CompiledProgram& cp, leir::SourceLoc loc, const std::string& msg) {
  throw RuntimeError(leir::format_diagnostic(cp.owned.file, loc, msg));
}

std::string index_text(const TensorSlot& slot, int64_t offset) {
  std::vector<int64_t> idx(slot.shape.size());
  for (size_t d = 0; d < slot.shape.size(); ++d) {
    idx[d] = slot.strides[d] ? offset / slot.strides[d] : 0;  // a zero stride: a dimension after an empty one
    offset -= idx[d] * slot.strides[d];
  }
  return fmt::format("[{}]", fmt::join(idx, ","));
}

}  // namespace steptp::interp
