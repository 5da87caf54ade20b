// Small helpers for defining workloads concisely (used by every level file).
#pragma once

#include <functional>
#include <string>
#include <utility>

#include "front/workloads/workload.h"

namespace steptp::workloads {

using Range = std::pair<int64_t, int64_t>;

// A hyper-parameter with its full range and its sampling range per size class.
inline HyperParam hp(std::string name, int64_t lo, int64_t hi, Range tiny, Range small, Range def) {
  return HyperParam{std::move(name), lo, hi, {tiny, small, def}};
}

inline Constraint constraint(std::string text, std::function<bool(const HyperValues&)> holds) {
  return Constraint{std::move(text), std::move(holds)};
}

// Output length of a convolution/pooling window (PyTorch's formula, floor mode).
inline int64_t window_out(int64_t in, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation) {
  return (in + 2 * pad - dilation * (kernel - 1) - 1) / stride + 1;
}

// The window fits: at least one output position.
inline bool window_fits(int64_t in, int64_t kernel, int64_t pad, int64_t dilation) {
  return in + 2 * pad >= dilation * (kernel - 1) + 1;
}

}  // namespace steptp::workloads
