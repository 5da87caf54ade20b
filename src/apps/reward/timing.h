// The one place where the reward measures time, through the project's one timing policy
// (search/tune/runner.h): a candidate is timed against its parent and against the root in interleaved
// sessions (tune::measure_pairs: one batched compile, a sandboxed measuring child with a
// timeout, the machine-wide tune::TimingLock), on fresh inputs, at an explicit thread count; and the machine's peak FLOP/s and
// memory bandwidth, measured once per machine by a small benchmark and cached in a file.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "lower/measure/measure.h"
#include "ir/leir/ast.h"
#include "ir/verify/verifier.h"
#include "search/tune/runner.h"

namespace steptp::reward {

// Peak double-precision FLOP/s (independent FMA chains) and memory bandwidth (the best of a
// triad over working sets from L1 to DRAM size) at `threads` OpenMP threads.
struct MachinePeaks {
  double flops_per_s = 0, bytes_per_s = 0;
  int threads = 1;
};
struct MeasuredStep {
  bool compiled = false;  // every program compiled
  bool ok = false;        // ... and both comparisons ran
  std::string error;
  // Not ok for a reason that is not the answer's (the measuring child could not be started, the
  // machine was not obtained): the funnel gives no score rather than a failure.
  bool infrastructure = false;
  backend::Comparison vs_parent, vs_root;  // a = parent/root, b = candidate
  int threads = 1;
  std::optional<MachinePeaks> peaks;  // when given, times below their bound are implausible
  // The candidate's compiled outputs compared with the root's compiled outputs on the timing
  // inputs (verify::compare_outputs, the verifier's tolerances); absent: not checked.
  std::optional<verify::VerifyReport> outputs;

  // A comparison that did not run, by its tune::MeasureFailure: not compiled for Compile; the
  // service's failure (infrastructure) when the measuring child could not start.
  static MeasuredStep failed(const tune::PairResult& r);
};

struct MeasureSettings {
  backend::MeasureOptions options{.warmup = 1, .min_time_s = 0.01, .min_repeats = 5, .max_time_s = 2.0,
                                  .threads = 1};
  uint64_t input_seed = 0;    // fresh per request in the service
  double pair_timeout_s = 20;  // a comparison that takes longer fails (hang)
};

// Times the candidate against parent and root and compares its outputs (after its timed runs)
// with the root's.
MeasuredStep measure_step(const leir::Program& root, const leir::Program& parent, const leir::Program& candidate,
                          const MeasureSettings& s);

// B timed against A alone (the /v1/measure endpoint; A may be B itself).
struct MeasuredPair {
  bool compiled = false, ok = false;
  std::string error;
  backend::Comparison cmp;  // a = A, b = B
};
MeasuredPair measure_pair(const leir::Program& a, const leir::Program& b, const MeasureSettings& s);

MachinePeaks measure_peaks(int threads);
nlohmann::json to_json(const MachinePeaks& p);
// {"median_ms", "min_ms", "max_ms", "cv", "repeats"}.
nlohmann::json to_json(const backend::TimingStats& t);
// The peaks cached in `path` for this machine (host name, CPU model) and thread count, measured
// and written (atomically) when absent. The caller holds the tune::TimingLock.
MachinePeaks cached_peaks(const std::string& path, int threads);

// The least time (seconds) the program can take on a machine with these peaks: its flops at
// peak FLOP/s, or reading its inputs and writing its outputs once at peak bandwidth.
double lower_bound_seconds(const leir::Program& p, const MachinePeaks& peaks);


}  // namespace steptp::reward
