// Timing of compiled kernels: warm-up, repeats until the median is stable, optional cache flush,
// explicit thread count, and interleaved A-vs-B comparison (so machine noise hits both alike).
#pragma once

#include <functional>
#include <vector>

namespace steptp::backend {

struct MeasureOptions {
  int warmup = 2;             // untimed runs first (page faults, caches, lazy binding)
  double min_time_s = 0.2;    // keep repeating at least this long ...
  int min_repeats = 5;        // ... and at least this often
  int max_repeats = 10000;
  double max_time_s = 20.0;   // hard stop even if the median never settles
  double stable_rel = 0.01;   // stop when the median moved by at most this fraction
  bool flush_cache = false;   // evict the caches (write 64 MiB) before every timed run
  int threads = 0;            // OpenMP threads for the timed code; 0 = leave as is
};

struct TimingStats {
  double median_ms = 0, min_ms = 0, max_ms = 0;
  double cv = 0;  // standard deviation / mean
  int repeats = 0;
};

// Stats of a sample of run times (milliseconds).
TimingStats summarize_times(std::vector<double> ms);

TimingStats measure(const std::function<void()>& run, const MeasureOptions& o = {});

struct Comparison {
  TimingStats a, b;
  double speedup = 1;  // median(a) / median(b): > 1 when b is faster
};

// Runs a and b alternately (ABBA order, so drift cancels) until both medians are stable.
Comparison compare_interleaved(const std::function<void()>& a, const std::function<void()>& b,
                               const MeasureOptions& o = {});

// One reference timed against several programs in one session: each round runs every side once,
// the reference first and then b[0..k) in even rounds, the reverse order in odd ones (ABBA
// generalized: drift over a round hits the reference and each b symmetrically), until every
// median is stable. Element i is the comparison of a with b[i]; its `a` stats are the shared
// reference's. Why: the reference of a tuner round or of a dataset root is usually the slowest
// program (the naive root), and timing it once per group instead of once per pair was most of
// the timed work. The time caps scale with the group: min_time_s and max_time_s apply per pair's
// worth of sides ((k + 1) / 2 of them), so a group is never cut shorter than its pairs would be.
std::vector<Comparison> compare_group(const std::function<void()>& a, const std::vector<std::function<void()>>& b,
                                      const MeasureOptions& o = {});

}  // namespace steptp::backend
