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

}  // namespace steptp::backend
