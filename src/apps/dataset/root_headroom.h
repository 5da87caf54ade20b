// Stage "roots", third part: roots with room to optimize (measured bench runs, --min-headroom).
//
// Every program equivalent to a root reads the root's inputs and parameters and writes its
// outputs, each at least once. So no trajectory can make a root faster than this machine streams
// those bytes: the root's headroom — its naive one-core time over the time a memory copy of the
// same bytes takes on all timed cores (lower/measure/memory_traffic.h, measured under the one
// timing policy) — bounds the speedup any step or trajectory can reach over it (the tuner times
// the root on all cores too, which is no slower than on one). An elementwise activation over
// 100 MB that GCC already vectorizes and the B loop already runs in parallel has a headroom near
// 2: its records could only teach that nothing helps, and it costs as much to tune as a
// convolution with a headroom of 1,000. A root below --min-headroom is left out and listed with
// both times.
//
// The copy times are facts in the measurement store (keyed by this machine, the timed thread
// count and the byte counts), so a resumed run screens identically.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/dataset/dataset.h"
#include "apps/dataset/root_sizing.h"

namespace steptp::dataset {

// naive one-core time / all-core copy time of the unavoidable traffic (0 when either is unknown).
double headroom(const RootSizing& s);

// Measures (or finds in the store at `store_path`) each root's traffic time into
// `sizing[i].traffic_ms`, then leaves out every root whose headroom is below `o.min_headroom`
// (removed from `roots` and `sizing`, appended to `skipped` as {"key", "reason"}). Nothing is
// measured or left out when `o.min_headroom` is 0 or the roots were not sized by measurement.
void screen_roots_by_headroom(std::vector<Root>& roots, std::vector<RootSizing>& sizing, const GenerateOptions& o,
                              const std::string& store_path, nlohmann::json* skipped);

}  // namespace steptp::dataset
