#include "ir/analysis/footprint.h"

#include <algorithm>
#include <cstdlib>
#include <set>

#include "ir/analysis/structure.h"

namespace steptp::analysis {
namespace {

// Whether c + sum(k_i * v_i) takes every integer between its bounds: with the terms sorted by
// |k|, each step |k| may not exceed one more than the span the smaller terms already cover.
bool dense_form(const Affine& a, const std::map<std::string, Interval>& ranges) {
  std::vector<std::pair<int64_t, int64_t>> terms;  // (|k|, extent - 1)
  for (const auto& [v, k] : a.coeff) {
    const Interval& r = ranges.at(v);
    if (r.hi > r.lo) terms.push_back({std::llabs(k), r.hi - r.lo});
  }
  std::sort(terms.begin(), terms.end());
  int64_t reach = 0;
  for (const auto& [k, span] : terms) {
    if (k > reach + 1) return false;
    reach += k * span;
  }
  return true;
}

bool same(const Interval& a, const Interval& b) { return a.lo == b.lo && a.hi == b.hi; }

std::optional<Footprint> access_footprint(const leir::Expr& access, const std::map<std::string, Interval>& ranges) {
  Footprint f;
  f.dense = true;
  std::set<std::string> used;
  for (const auto& sub : access.args) {
    auto a = to_affine(sub);
    if (!a) return std::nullopt;
    auto b = bounds(*a, ranges);
    if (!b) return std::nullopt;
    f.box.push_back(*b);
    for (const auto& v : a->order)
      if (!used.insert(v).second) f.dense = false;  // a variable in two dimensions: a diagonal
    if (!dense_form(*a, ranges)) f.dense = false;
  }
  return f;
}

// The union of footprints as one: the bounding box, dense when every part is dense and the parts
// agree in all dimensions but one, where their ranges chain without a gap.
Footprint unite(const std::vector<Footprint>& parts) {
  Footprint f = parts[0];
  const size_t rank = f.box.size();
  for (const auto& p : parts) {
    f.dense = f.dense && p.dense;
    for (size_t d = 0; d < rank; ++d) {
      f.box[d].lo = std::min(f.box[d].lo, p.box[d].lo);
      f.box[d].hi = std::max(f.box[d].hi, p.box[d].hi);
    }
  }
  int differing = -1;
  for (size_t d = 0; d < rank && f.dense; ++d)
    for (const auto& p : parts)
      if (!same(p.box[d], parts[0].box[d])) {
        if (differing != -1 && differing != static_cast<int>(d)) f.dense = false;
        differing = static_cast<int>(d);
      }
  if (f.dense && differing >= 0) {
    std::vector<Interval> along;
    for (const auto& p : parts) along.push_back(p.box[static_cast<size_t>(differing)]);
    std::sort(along.begin(), along.end(), [](const Interval& x, const Interval& y) { return x.lo < y.lo; });
    int64_t reached = along[0].hi;
    for (const auto& r : along) {
      if (r.lo > reached + 1) f.dense = false;
      reached = std::max(reached, r.hi);
    }
  }
  return f;
}

}  // namespace

std::map<std::string, Interval> loop_ranges(const std::vector<const leir::Loop*>& loops) {
  std::map<std::string, Interval> out;
  for (const auto* l : loops) out[l->var] = {l->start, l->start + l->extent - 1};
  return out;
}

std::map<std::string, Interval> loop_ranges(const std::vector<leir::Loop>& loops) {
  std::vector<const leir::Loop*> ptrs;
  for (const auto& l : loops) ptrs.push_back(&l);
  return loop_ranges(ptrs);
}

std::optional<Footprint> read_footprint(const std::vector<leir::ExprPtr>& accesses,
                                        const std::map<std::string, Interval>& ranges) {
  if (accesses.empty()) return std::nullopt;
  std::vector<Footprint> parts;
  for (const auto& acc : accesses) {
    if (acc->args.size() != accesses[0]->args.size()) return std::nullopt;
    auto f = access_footprint(*acc, ranges);
    if (!f) return std::nullopt;
    parts.push_back(std::move(*f));
  }
  return unite(parts);
}

std::vector<Footprint> write_footprints(const std::vector<leir::Item>& body, int before, const std::string& tensor) {
  std::vector<Footprint> out;
  for (const auto& s : all_stmts(body)) {
    if (s.path[0] >= before) break;
    if (s.stmt->lhs->tensor != tensor) continue;
    if (auto f = access_footprint(*s.stmt->lhs, loop_ranges(s.loops))) out.push_back(std::move(*f));
  }
  return out;
}

Box intersect(const Box& a, const Box& b) {
  Box out = a;
  for (size_t d = 0; d < out.size() && d < b.size(); ++d) {
    out[d].lo = std::max(a[d].lo, b[d].lo);
    out[d].hi = std::min(a[d].hi, b[d].hi);
  }
  return out;
}

bool contains(const Box& outer, const Box& inner) {
  if (outer.size() != inner.size()) return false;
  for (size_t d = 0; d < outer.size(); ++d)
    if (inner[d].lo < outer[d].lo || inner[d].hi > outer[d].hi) return false;
  return true;
}

bool covered(const Box& box, const std::vector<Footprint>& writes) {
  std::vector<Footprint> dense;
  for (const auto& w : writes)
    if (w.dense && w.box.size() == box.size()) {
      if (contains(w.box, box)) return true;
      dense.push_back(w);
    }
  if (dense.empty()) return false;
  Footprint all = unite(dense);
  return all.dense && contains(all.box, box);
}

}  // namespace steptp::analysis
