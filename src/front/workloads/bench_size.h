// The `bench` size class: shapes for measurement, so the naive program runs about 1–50 ms on
// one core in f32 (KernelBench's regime), instead of the microseconds of `tiny`.
//
// Mechanism (general, no per-workload table): a seeded default-class draw keeps the workload's
// proportions (each size-like hyper-parameter — default-class values reach 16 and its range is
// wider than 16 values: batch, channels, spatial sizes — also gets a seeded jitter in [0.5, 2], so
// shapes vary); then one common factor 2^s scales the size-like parameters (rounded to a
// multiple of gcd(default value, 48), so divisibility by groups and heads mostly survives), s
// found by bisection so that the built program's estimated naive work lands in
// the bench window; a draw whose scaled values break a constraint or miss the window is redrawn
// (sample_hyper). Small ranges (kernel sizes, strides, flags) keep their default-class draw.
// The estimate counts
// statement instances (each one a scalar update of the naive loops: ~1 ns on one core for
// strided f32 code, ~0.2 ns when it vectorizes), window [kBenchMinInstances,
// kBenchMaxInstances], and caps the tensors' total size so buffers stay within memory. The
// window was checked by measurement on a sample (docs/tune.md, "Bench shapes": `steptp bench
// --threads 1` of naive f32 programs at their bench shapes). A workload whose
// work cannot reach the window within its ranges (nll_loss, cross_entropy_loss: O(batch) with
// batch <= 4096) has no bench shapes: emit reports it.
#pragma once

#include <cstdint>
#include <string>

#include "ir/interp/inputs.h"
#include "ir/leir/ast.h"
#include "front/workloads/workload.h"

namespace steptp::workloads {

inline constexpr int64_t kBenchMinInstances = int64_t{4} << 20;
inline constexpr int64_t kBenchMaxInstances = int64_t{24} << 20;
inline constexpr int kBenchMaxDraws = 300;  // sample_hyper's redraws for the bench class
inline constexpr int64_t kBenchMaxElements = int64_t{24} << 20;  // all known tensors together

// Statement instances the program executes (every statement times its enclosing extents).
int64_t statement_instances(const leir::Program& p);
// ... and those of one top-level item.
int64_t statement_instances(const leir::Item& item);
// The window of statement instances, moved up by `doublings` factors of two: a root whose
// naive program measures below the bench regime on this machine (it vectorizes well, so an
// instance costs far less than 1 ns) is drawn again with more work (apps/dataset/root_sizing.h).
struct BenchWindow {
  int64_t min_instances = kBenchMinInstances, max_instances = kBenchMaxInstances;
};
BenchWindow bench_window(int doublings = 0);
// One draw of hyper-parameters for the bench class (constraints not yet checked).
HyperValues draw_bench_hyper(const Workload& w, interp::Rng& rng, const BenchWindow& window = {});
// Empty when the program's estimated work and size fit the bench window, else why not.
std::string bench_window_miss(const leir::Program& p, const BenchWindow& window = {});

}  // namespace steptp::workloads
