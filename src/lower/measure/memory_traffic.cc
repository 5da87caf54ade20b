#include "lower/measure/memory_traffic.h"

#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>

namespace steptp::backend {
namespace {

struct FreeDeleter {
  void operator()(char* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<char, FreeDeleter>;

Buffer allocate_touched(int64_t bytes) {
  const size_t rounded = size_t(std::max<int64_t>(bytes, 1) + 63) / 64 * 64;
  Buffer b(static_cast<char*>(std::aligned_alloc(64, rounded)));
  if (!b) throw std::bad_alloc();
  std::memset(b.get(), 1, rounded);
  return b;
}

// Thread t's share [begin, end) of n bytes, cut at cache lines.
std::pair<int64_t, int64_t> share(int64_t n, int t, int threads) {
  auto cut = [&](int k) { return k == threads ? n : n / threads * k / 64 * 64; };
  return {cut(t), cut(t + 1)};
}

}  // namespace

TimingStats measure_memory_traffic(int64_t read_bytes, int64_t write_bytes, const MeasureOptions& o) {
  const int64_t copied = std::min(read_bytes, write_bytes);
  const int64_t only_read = read_bytes - copied, only_written = write_bytes - copied;
  Buffer src = allocate_touched(read_bytes), dst = allocate_touched(write_bytes);
  // Bytes read but not written stream through a small per-thread scratch that stays in L1.
  constexpr int64_t kScratch = 16 << 10;
  const int threads = o.threads > 0 ? o.threads : omp_get_max_threads();
  Buffer scratch = allocate_touched(kScratch * threads);
  auto run = [&] {
#pragma omp parallel num_threads(threads)
    {
      const int t = omp_get_thread_num(), n = omp_get_num_threads();
      auto [cb, ce] = share(copied, t, n);
      std::memcpy(dst.get() + cb, src.get() + cb, size_t(ce - cb));
      auto [rb, re] = share(only_read, t, n);
      char* mine = scratch.get() + kScratch * t;
      for (int64_t at = copied + rb; at < copied + re; at += kScratch)
        std::memcpy(mine, src.get() + at, size_t(std::min(kScratch, copied + re - at)));
      auto [wb, we] = share(only_written, t, n);
      std::memset(dst.get() + copied + wb, t, size_t(we - wb));
    }
  };
  return measure(run, o);
}

}  // namespace steptp::backend
