// Element-wise comparison of interpreter results with an oracle (PyTorch or hand-computed).
//
// Tolerance: |x - y| <= kRtol·|y| + kRtol·scale, where scale = max |y| over the tensor (at least 1).
// The relative part is the 1e-12 bound of issue 2. The absolute part covers elements near zero
// produced by cancellation: PyTorch sums in a different order (blocked GEMM/conv kernels), and a
// reassociated sum of n terms differs by at most about n·2^-53·Σ|terms| ≈ 1e-13·scale for the
// sizes used here, which is meaningless relative to a result that happens to be close to 0.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "ir/leir/values.h"

namespace steptp::interp_test {

constexpr double kRtol = 1e-12;

struct Mismatch {
  double worst_rel = 0.0;  // largest |x-y|/|y| over elements not near 0 (|y| >= 1e-6·scale), for reports
  bool ok = true;
  std::string detail;
};

inline Mismatch compare_values(const leir::TensorValue& got, const leir::TensorValue& want, double rtol = kRtol) {
  Mismatch m;
  if (got.shape != want.shape || got.data.size() != want.data.size()) {
    m.ok = false;
    m.detail = "shape differs";
    return m;
  }
  double scale = 1.0;
  for (double y : want.data)
    if (std::isfinite(y)) scale = std::max(scale, std::fabs(y));
  for (size_t i = 0; i < want.data.size(); ++i) {
    double x = got.data[i], y = want.data[i];
    bool same = (std::isnan(x) && std::isnan(y)) || x == y;
    if (same) continue;
    double err = std::fabs(x - y);
    double rel = y != 0 ? err / std::fabs(y) : INFINITY;
    if (!(err <= rtol * std::fabs(y) + rtol * scale)) {
      if (m.ok) m.detail = "element " + std::to_string(i) + ": got " + std::to_string(x) + ", want " + std::to_string(y);
      m.ok = false;
    }
    if (std::isfinite(rel) && std::fabs(y) >= 1e-6 * scale) m.worst_rel = std::max(m.worst_rel, rel);
  }
  return m;
}

}  // namespace steptp::interp_test
