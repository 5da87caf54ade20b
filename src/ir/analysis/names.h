// Fresh names in the public translator's style.
//
// Tensors: single capitals in order A, C, D, ... skipping the loop-kind letters B L P T U V
// (LEIR.md §2), then two letters (AA, AC, ...). Loop variables: a, c, d, f, g, h, i, j, k, m, n,
// o, p, q, r, s, u, v, w, x, y, z (b and e skipped: b prefixes block axes, e reads like an
// exponent), then two letters; never a name starting with a hardware axis (tx, bx, ...) and never
// `inf`.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "ir/leir/ast.h"

namespace steptp::analysis {

class NameAllocator {
 public:
  // Every tensor name and loop variable of `p` is taken.
  explicit NameAllocator(const leir::Program& p);
  std::string fresh_tensor();
  std::string fresh_var();
  // `axis` itself (e.g. "by") if free, else axis + a fresh suffix ("bya", "byc", ...).
  std::string fresh_axis_var(const std::string& axis);
  void reserve(const std::string& name) { taken_.insert(name); }

 private:
  std::set<std::string> taken_;
};

// Loop variable names for a new stand-alone nest: a, c, d, f, ... (public style; top-level nests
// do not share variables, so no program-wide freshness is needed).
std::vector<std::string> standalone_vars(size_t n);

// True for names that read as a hardware axis binding: tx, ty, tz, bx, by, bz (+ any suffix).
bool is_axis_name(const std::string& var);

}  // namespace steptp::analysis
