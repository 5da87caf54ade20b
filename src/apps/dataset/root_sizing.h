// Stage "roots", second half: bench-class roots sized by measurement on this machine.
//
// The bench size class draws shapes from an estimate of the naive program's work (statement
// instances, front/workloads/bench_size.h); a program that vectorizes well runs an instance in far
// less than the estimate's 1 ns and lands below the bench regime (matmul_small_k: 0.24 ms). A
// dataset that claims realistic shapes must show it, so every built-in root of a measured bench
// run is timed naive on one core; one below `min_ms` is drawn again with its work window moved up
// by enough factors of two, and timed again (up to a few rounds). A root that still misses (a
// composite, whose shapes are not redrawn, or a workload whose ranges end first) is left out and
// listed with its time, never measured below the floor silently.
//
// The timings are facts in the measurement store (keyed by this machine with one thread and the
// program text), so a resumed run or one with more workers sizes identically.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/dataset/dataset.h"

namespace steptp::dataset {

struct RootSizing {
  double naive_ms_one_thread = 0;  // 0: not measured
  int bench_doublings = 0;
  double traffic_ms = 0;  // all-core copy time of its inputs and outputs (apps/dataset/root_headroom.h); 0: not measured
};

// Removes the roots marked in `left_out` and their sizings, keeping the order of the rest.
void remove_left_out(std::vector<Root>& roots, std::vector<RootSizing>& sizing, const std::vector<char>& left_out);

// Sizes `roots` in place (the same order; left-out roots are removed and appended to `skipped`
// as {"key", "reason"}) and returns each kept root's sizing. `store_path`: the measurement store.
std::vector<RootSizing> size_roots_by_measurement(std::vector<Root>& roots, const GenerateOptions& o,
                                                  const std::string& store_path, nlohmann::json* skipped);

}  // namespace steptp::dataset
