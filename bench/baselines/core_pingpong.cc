// Where the host has put this machine's first two CPUs relative to each other, measured: two
// threads pinned to CPUs 0 and 1 hand one cache line back and forth, and the one-way latency
// (the median of many short blocks) is printed as JSON. On the 2-core EPYC VMs of docs/tune.md it is
// 25-30 ns while the host keeps the two vCPUs on cores that share an L3 and >= 150 ns while it
// does not (it moves them in streaks of seconds to minutes). bench/tune_panel.py records it next
// to every row it times, because a two-thread kernel whose threads exchange data (a copy one
// thread writes and the other reads) runs up to 1.5x slower in the second state.
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

namespace {

constexpr int kBlocks = 400;         // timed blocks ...
constexpr int kTripsPerBlock = 100;  // ... of this many round trips each

alignas(64) std::atomic<int> flag{0};

bool pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

// The median over the blocks of a block's mean one-way latency, in nanoseconds: a block in which
// the host preempted either vCPU takes microseconds, and the median ignores it (the mean over all
// round trips moved between 30 and 400 ns within one state).
double one_way_ns() {
  constexpr int kTrips = kBlocks * kTripsPerBlock;
  flag.store(0);
  std::thread pong([] {
    pin(1);
    for (int i = 0; i < kTrips; ++i) {
      while (flag.load(std::memory_order_acquire) != 2 * i + 1) {
      }
      flag.store(2 * i + 2, std::memory_order_release);
    }
  });
  std::vector<double> block_ns;
  for (int b = 0; b < kBlocks; ++b) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = b * kTripsPerBlock; i < (b + 1) * kTripsPerBlock; ++i) {
      flag.store(2 * i + 1, std::memory_order_release);
      while (flag.load(std::memory_order_acquire) != 2 * i + 2) {
      }
    }
    const auto t1 = std::chrono::steady_clock::now();
    block_ns.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / (2.0 * kTripsPerBlock));
  }
  pong.join();
  std::nth_element(block_ns.begin(), block_ns.begin() + kBlocks / 2, block_ns.end());
  return block_ns[kBlocks / 2];
}

}  // namespace

int main() {
  if (std::thread::hardware_concurrency() < 2 || !pin(0)) {
    std::printf("{\"error\": \"needs two CPUs (0 and 1)\"}\n");
    return 1;
  }
  std::printf("{\"one_way_ns\": %.1f, \"blocks\": %d, \"round_trips_per_block\": %d}\n", one_way_ns(), kBlocks,
              kTripsPerBlock);
  return 0;
}
