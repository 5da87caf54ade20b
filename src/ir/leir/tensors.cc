// Tensor table and shape inference (LEIR.md §3-4).
//
// Shapes of intermediates come from an interval analysis of the write subscripts over the ranges
// of the enclosing loops: each subscript is evaluated in interval arithmetic (loop variable i of
// K^{n}_{i=s} ranges over [s, s+n-1]); the dimension is one more than the largest upper bound over
// all writes. Subscripts that depend on tensor data (gathers) or are not built from + - * and
// constant // % have no static bound: writing an intermediate through one is an error.
#include "ir/leir/tensors.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <stdexcept>

#include "ir/leir/diagnostic.h"
#include "ir/leir/int_math.h"
#include "ir/leir/ir_mutator.h"
#include "ir/leir/printer.h"

namespace steptp::leir {

namespace {
std::string shape_text(const std::vector<int64_t>& shape) { return fmt::format("[{}]", fmt::join(shape, ",")); }
}  // namespace

int64_t TensorInfo::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::optional<int64_t> checked_numel(const std::vector<int64_t>& shape) {
  int64_t n = 1, bytes = 0;
  for (int64_t d : shape)
    if (d < 0 || __builtin_mul_overflow(n, d, &n)) return std::nullopt;
  if (__builtin_mul_overflow(n, int64_t{8}, &bytes)) return std::nullopt;
  return n;
}

int64_t require_numel(const std::vector<int64_t>& shape, std::string_view tensor, const std::string& file,
                      SourceLoc loc) {
  auto n = checked_numel(shape);
  if (!n)
    throw LeirError(file, loc,
                    fmt::format("tensor {} of shape {} is too large: its element count or its size in bytes overflows "
                                "64-bit integers (at most {} elements)",
                                tensor, shape_text(shape), INT64_MAX / 8));
  return *n;
}

const TensorInfo* TensorTable::find(const std::string& name) const {
  auto it = tensors.find(name);
  return it == tensors.end() ? nullptr : &it->second;
}

const TensorInfo& TensorTable::at(const std::string& name) const {
  auto it = tensors.find(name);
  if (it == tensors.end()) throw std::out_of_range("unknown tensor '" + name + "'");
  return it->second;
}

namespace {

struct Interval {
  int64_t lo = 0;
  int64_t hi = 0;
};

// Why a subscript has no static bound (empty when it has one).
struct RangeResult {
  std::optional<Interval> range;
  std::string why;
};

RangeResult no_bound(std::string why) { return {std::nullopt, std::move(why)}; }

using VarRanges = std::vector<std::pair<std::string, Interval>>;  // innermost last

// Interval arithmetic over the loops' full ranges, with the reason when there is no static bound
// (shape inference reports it). validate.cc's guarded_range is tighter (affine forms, ranges
// narrowed by guards) and needs the validator's environment; this one needs only the loops.
RangeResult interval_bound(const Expr& e, const VarRanges& vars) {
  switch (e.kind) {
    case ExprKind::Number: {
      auto v = static_cast<int64_t>(e.value);
      if (static_cast<double>(v) != e.value) return no_bound(fmt::format("'{}' is not an integer", e.text));
      return {Interval{v, v}, {}};
    }
    case ExprKind::IndexVar:
      for (auto it = vars.rbegin(); it != vars.rend(); ++it)
        if (it->first == e.var_name()) return {it->second, {}};
      return no_bound(fmt::format("index variable '{}' is not bound by an enclosing loop", e.var_name()));
    case ExprKind::Access:
      return no_bound(fmt::format("it reads tensor {} (a data-dependent gather)", e.tensor));
    case ExprKind::Unary: {
      auto r = interval_bound(*e.args[0], vars);
      if (!r.range) return r;
      return {Interval{-r.range->hi, -r.range->lo}, {}};
    }
    case ExprKind::Binary: {
      auto a = interval_bound(*e.args[0], vars);
      if (!a.range) return a;
      auto b = interval_bound(*e.args[1], vars);
      if (!b.range) return b;
      Interval x = *a.range, y = *b.range;
      switch (e.bop) {
        case BinaryOp::Add: {
          Interval r;
          if (__builtin_add_overflow(x.lo, y.lo, &r.lo) || __builtin_add_overflow(x.hi, y.hi, &r.hi))
            return no_bound("its range overflows 64-bit integers");
          return {r, {}};
        }
        case BinaryOp::Sub: {
          Interval r;
          if (__builtin_sub_overflow(x.lo, y.hi, &r.lo) || __builtin_sub_overflow(x.hi, y.lo, &r.hi))
            return no_bound("its range overflows 64-bit integers");
          return {r, {}};
        }
        case BinaryOp::Mul: {
          int64_t p[4];
          if (!mul_ok(x.lo, y.lo, &p[0]) || !mul_ok(x.lo, y.hi, &p[1]) || !mul_ok(x.hi, y.lo, &p[2]) ||
              !mul_ok(x.hi, y.hi, &p[3]))
            return no_bound("its range overflows 64-bit integers");
          return {Interval{*std::min_element(p, p + 4), *std::max_element(p, p + 4)}, {}};
        }
        case BinaryOp::FloorDiv:
          if (y.lo != y.hi || y.lo == 0) return no_bound("'//' needs a non-zero constant divisor for a static bound");
          if (y.lo > 0) return {Interval{floor_div(x.lo, y.lo), floor_div(x.hi, y.lo)}, {}};
          return {Interval{floor_div(x.hi, y.lo), floor_div(x.lo, y.lo)}, {}};
        case BinaryOp::Mod:
          if (y.lo != y.hi || y.lo <= 0) return no_bound("'%' needs a positive constant divisor for a static bound");
          if (x.lo >= 0 && x.hi < y.lo) return {x, {}};
          return {Interval{0, y.lo - 1}, {}};
        default:
          return no_bound(fmt::format("operator '{}' is not allowed in a subscript", to_string(e.bop)));
      }
    }
    case ExprKind::Compare:
      return {Interval{0, 1}, {}};
    case ExprKind::Call:
      return no_bound(fmt::format("function '{}' is not affine", to_string(e.func)));
  }
  return no_bound("unsupported subscript");
}

std::string annotation(DType d, Scope s) { return fmt::format("{},{}", to_string(d), to_char(s)); }

// What we learn about an intermediate while walking the body.
struct Pending {
  int rank = -1;             // from the first write; -1 while unwritten
  SourceLoc rank_loc;        // that write
  std::vector<int64_t> hi;   // largest index per dimension over all writes (-1: none yet)
  std::vector<std::pair<SourceLoc, size_t>> reads;  // (loc, number of subscripts)
};

class Builder {
 public:
  explicit Builder(const Program& p) : p_(p) {}

  TensorTable build() {
    for (const auto& d : p_.known) {
      if (table_.tensors.count(d.name))
        throw LeirError(p_.file, d.loc, fmt::format("tensor {} is declared twice", d.name));
      require_numel(d.shape, d.name, p_.file, d.loc);
      TensorInfo info;
      info.name = d.name;
      info.dtype = d.dtype;
      info.scope = Scope::Global;
      info.shape = d.shape;
      info.known = true;
      info.role = d.role;
      info.decl = &d;
      table_.tensors.emplace(d.name, info);
      table_.order.push_back(d.name);
    }
    for_each_stmt(p_.body, [&](const Stmt& s, const std::vector<const Loop*>& loops) { visit_stmt(s, loops); });
    finish_intermediates();
    return std::move(table_);
  }

 private:
  void visit_stmt(const Stmt& s, const std::vector<const Loop*>& loops) {
    const Expr& lhs = *s.lhs;
    if (!lhs.is_access()) throw LeirError(p_.file, s.loc, "the left side of a statement must be a tensor access");
    note_occurrence(lhs);
    if (auto* known = p_.find_known(lhs.tensor)) {
      check_known_rank(lhs, *known);
    } else {
      record_write(lhs, loops);
    }
    for (const auto& idx : lhs.args) visit_reads(idx);
    visit_reads(s.rhs);
  }

  void visit_reads(const ExprPtr& e) {
    for_each_expr(e, [&](const Expr& x) {
      if (!x.is_access()) return;
      note_occurrence(x);
      if (auto* known = p_.find_known(x.tensor)) check_known_rank(x, *known);
      else pending_[x.tensor].reads.emplace_back(x.loc, x.args.size());
    });
  }

  // Same dtype/scope everywhere; known tensors as declared and in `g`.
  void note_occurrence(const Expr& a) {
    if (auto* known = p_.find_known(a.tensor)) {
      if (a.dtype != known->dtype || a.scope != Scope::Global)
        throw LeirError(p_.file, a.loc,
                        fmt::format("tensor {} is annotated {} but is declared {} {}: known tensors must carry "
                                    "their declared dtype and scope g ({}^{{{}}})",
                                    a.tensor, annotation(a.dtype, a.scope), to_string(known->role),
                                    to_string(known->dtype), a.tensor, annotation(known->dtype, Scope::Global)));
      return;
    }
    auto [it, inserted] = first_.try_emplace(a.tensor, &a);
    if (inserted) {
      order_.push_back(a.tensor);
      return;
    }
    const Expr& first = *it->second;
    if (first.dtype != a.dtype || first.scope != a.scope)
      throw LeirError(p_.file, a.loc,
                      fmt::format("tensor {} is annotated {} here but {} at {}:{}: every occurrence of a tensor "
                                  "must carry the same dtype and scope",
                                  a.tensor, annotation(a.dtype, a.scope), annotation(first.dtype, first.scope),
                                  first.loc.line, first.loc.col));
  }

  void check_known_rank(const Expr& a, const TensorDecl& d) {
    if (a.args.size() != d.shape.size())
      throw LeirError(p_.file, a.loc,
                      fmt::format("access {} gives {} subscript(s) but {} has rank {} (declared shape {})",
                                  print_expr(std::make_shared<Expr>(a)), a.args.size(), a.tensor, d.shape.size(),
                                  shape_text(d.shape)));
  }

  void record_write(const Expr& a, const std::vector<const Loop*>& loops) {
    Pending& pend = pending_[a.tensor];
    int rank = static_cast<int>(a.args.size());
    if (pend.rank < 0) {
      pend.rank = rank;
      pend.rank_loc = a.loc;
      pend.hi.assign(rank, -1);
    } else if (pend.rank != rank) {
      throw LeirError(p_.file, a.loc,
                      fmt::format("tensor {} is written with {} subscript(s) here but with {} at {}:{}: the rank of "
                                  "an intermediate is the number of its write subscripts, which must agree",
                                  a.tensor, rank, pend.rank, pend.rank_loc.line, pend.rank_loc.col));
    }
    VarRanges vars;
    for (const Loop* l : loops) {
      if (l->extent <= 0) return;  // the statement never runs: it bounds nothing
      int64_t last = 0;
      if (__builtin_add_overflow(l->start, l->extent - 1, &last))
        throw LeirError(p_.file, l->loc, fmt::format("loop {} runs past the largest 64-bit integer", l->var));
      vars.emplace_back(l->var, Interval{l->start, last});
    }
    for (int d = 0; d < rank; ++d) {
      auto r = interval_bound(*a.args[d], vars);
      if (!r.range)
        throw LeirError(p_.file, a.args[d]->loc.line ? a.args[d]->loc : a.loc,
                        fmt::format("cannot infer dimension {} of intermediate {} from the write subscript '{}': {}; "
                                    "write it with subscripts affine in the loop variables or declare {} as a known "
                                    "tensor",
                                    d, a.tensor, print_expr(a.args[d]), r.why, a.tensor));
      pend.hi[d] = std::max(pend.hi[d], r.range->hi);
    }
  }

  void finish_intermediates() {
    for (const auto& name : order_) {
      Pending& pend = pending_[name];
      const Expr& first = *first_.at(name);
      if (pend.rank < 0) {
        SourceLoc at = pend.reads.empty() ? first.loc : pend.reads.front().first;
        throw LeirError(p_.file, at,
                        fmt::format("tensor {} is read but never written and not declared (declare it as an input, "
                                    "param or constant, or write it before reading)",
                                    name));
      }
      for (const auto& [loc, n] : pend.reads)
        if (static_cast<int>(n) != pend.rank)
          throw LeirError(p_.file, loc,
                          fmt::format("tensor {} is read with {} subscript(s) but has rank {} (from its write at "
                                      "{}:{})",
                                      name, n, pend.rank, pend.rank_loc.line, pend.rank_loc.col));
      TensorInfo info;
      info.name = name;
      info.dtype = first.dtype;
      info.scope = first.scope;
      info.known = false;
      info.first_use = first.loc;
      for (int64_t h : pend.hi) {
        if (h == INT64_MAX)
          throw LeirError(
              p_.file, pend.rank_loc,
              fmt::format("intermediate {} is written at index {}: its dimension overflows 64-bit integers", name, h));
        info.shape.push_back(std::max<int64_t>(0, h + 1));
      }
      require_numel(info.shape, name, p_.file, pend.rank_loc);
      table_.tensors.emplace(name, info);
      table_.order.push_back(name);
    }
    // first_use of known tensors: their first occurrence in the body (if any).
    for_each_stmt(p_.body, [&](const Stmt& s, const std::vector<const Loop*>&) {
      auto note = [&](const Expr& x) {
        if (!x.is_access()) return;
        auto& info = table_.tensors.at(x.tensor);
        if (info.known && info.first_use.line == 0) info.first_use = x.loc;
      };
      for_each_expr(s.lhs, note);
      for_each_expr(s.rhs, note);
    });
  }

  const Program& p_;
  TensorTable table_;
  std::map<std::string, const Expr*> first_;  // first occurrence of each intermediate
  std::vector<std::string> order_;            // intermediates in order of first occurrence
  std::map<std::string, Pending> pending_;
};

}  // namespace

TensorTable build_tensor_table(const Program& p) { return Builder(p).build(); }

}  // namespace steptp::leir
