#include "lower/measure/measure.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <memory>
#include <numeric>
#include <vector>

namespace steptp::backend {
namespace {

using Clock = std::chrono::steady_clock;

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void flush_caches() {
  static constexpr size_t kBytes = size_t{64} << 20;
  static std::unique_ptr<volatile uint8_t[]> buf(new volatile uint8_t[kBytes]);
  for (size_t i = 0; i < kBytes; i += 64) buf[i] = static_cast<uint8_t>(buf[i] + 1);
}

double time_once(const std::function<void()>& run, bool flush) {
  if (flush) flush_caches();
  auto t0 = Clock::now();
  run();
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// The median has settled: it moved by at most `rel` between the first 3/4 of the sample and all.
bool stable(const std::vector<double>& ms, double rel) {
  size_t k = ms.size() * 3 / 4;
  if (k < 3) return false;
  double m_all = median_of(ms);
  double m_part = median_of(std::vector<double>(ms.begin(), ms.begin() + static_cast<long>(k)));
  return std::abs(m_all - m_part) <= rel * m_all;
}

struct ThreadScope {
  int saved = 0;
  explicit ThreadScope(int n) {
    saved = omp_get_max_threads();
    if (n > 0) omp_set_num_threads(n);
  }
  ~ThreadScope() { omp_set_num_threads(saved); }
};

}  // namespace

TimingStats summarize_times(std::vector<double> ms) {
  TimingStats s;
  s.repeats = static_cast<int>(ms.size());
  if (ms.empty()) return s;
  s.median_ms = median_of(ms);
  s.min_ms = *std::min_element(ms.begin(), ms.end());
  s.max_ms = *std::max_element(ms.begin(), ms.end());
  double mean = std::accumulate(ms.begin(), ms.end(), 0.0) / ms.size();
  double var = 0;
  for (double x : ms) var += (x - mean) * (x - mean);
  var /= ms.size() > 1 ? ms.size() - 1 : 1;
  s.cv = mean > 0 ? std::sqrt(var) / mean : 0;
  return s;
}

TimingStats measure(const std::function<void()>& run, const MeasureOptions& o) {
  ThreadScope threads(o.threads);
  for (int i = 0; i < o.warmup; ++i) run();
  std::vector<double> ms;
  auto start = Clock::now();
  while (true) {
    ms.push_back(time_once(run, o.flush_cache));
    double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    int n = static_cast<int>(ms.size());
    if (n >= o.max_repeats || elapsed >= o.max_time_s) break;
    if (n >= o.min_repeats && elapsed >= o.min_time_s && stable(ms, o.stable_rel)) break;
  }
  return summarize_times(std::move(ms));
}

std::vector<Comparison> compare_group(const std::function<void()>& a, const std::vector<std::function<void()>>& b,
                                      const MeasureOptions& o) {
  ThreadScope threads(o.threads);
  const size_t k = b.size();
  // Sides in round order: 0 is the reference, 1..k the others.
  auto side = [&](size_t s) -> const std::function<void()>& { return s == 0 ? a : b[s - 1]; };
  for (int i = 0; i < o.warmup; ++i)
    for (size_t s = 0; s <= k; ++s) side(s)();
  std::vector<std::vector<double>> t(k + 1);
  const double pairs_worth = std::max(1.0, double(k + 1) / 2);
  auto start = Clock::now();
  for (int round = 0;; ++round) {
    for (size_t i = 0; i <= k; ++i) {
      const size_t s = round % 2 == 0 ? i : k - i;
      t[s].push_back(time_once(side(s), o.flush_cache));
    }
    double elapsed = std::chrono::duration<double>(Clock::now() - start).count() / pairs_worth;
    int n = static_cast<int>(t[0].size());
    // max_time_s stops a session only once every side has min_repeats runs: a ratio of two
    // medians of one or two runs each has no spread to judge it by (slow programs, whose rounds
    // outlast max_time_s, take min_repeats rounds).
    if (n >= o.max_repeats || (elapsed >= o.max_time_s && n >= o.min_repeats)) break;
    if (n >= o.min_repeats && elapsed >= o.min_time_s &&
        std::all_of(t.begin(), t.end(), [&](const std::vector<double>& ms) { return stable(ms, o.stable_rel); }))
      break;
  }
  std::vector<Comparison> out(k);
  const TimingStats ref = summarize_times(std::move(t[0]));
  for (size_t i = 0; i < k; ++i) {
    out[i].a = ref;
    out[i].b = summarize_times(std::move(t[i + 1]));
    out[i].speedup = out[i].b.median_ms > 0 ? ref.median_ms / out[i].b.median_ms : 1;
  }
  return out;
}

Comparison compare_interleaved(const std::function<void()>& a, const std::function<void()>& b, const MeasureOptions& o) {
  return compare_group(a, {b}, o).front();
}

}  // namespace steptp::backend
