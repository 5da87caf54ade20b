// One measurement at a time per machine: every timed section (tuner, dataset, benchmarks) holds
// an exclusive flock on one lock file, so two processes never time kernels side by side and
// skew each other's figures. Compiling and verifying run outside that lock, but beside a
// measurement that times with every core they would take cores from it (an OpenMP kernel with
// 2 threads on a 2-core machine where a compiler runs measures 2-3x slow, by bursts): so they
// hold the CPU-work lock (the lock file + ".cpu") shared, and such a measurement holds it
// exclusively (CpuWorkLock). The file is
// /tmp/steptp-timing.lock (the same one the project's benchmark commands take with
// `flock /tmp/steptp-timing.lock CMD`); $STEPTP_TIMING_LOCK names another, and
// STEPTP_TIMING_LOCK=none disables it — for a command that is already wrapped in that `flock`,
// which would otherwise wait for itself.
#pragma once

#include <optional>
#include <string>

namespace steptp::tune {

std::string timing_lock_path();  // "" when disabled

// Blocks until the lock is held; releases it on destruction. Re-entrant per process: a nested
// TimingLock in the same process (or a child forked while it is held) does not wait on itself.
class TimingLock {
 public:
  TimingLock();
  ~TimingLock();
  TimingLock(const TimingLock&) = delete;
  TimingLock& operator=(const TimingLock&) = delete;

 private:
  int fd_ = -1;
};

// The CPU-work lock: Shared around CPU-heavy work that is not timed (compiling kernels, running
// the f64 builds of the verifier), Exclusive around a measurement that times with every core of
// the machine (measure_pairs takes it after the timing lock, so nothing waits on the timing lock
// while holding it shared: no cycle). Re-entrant per process like TimingLock (a nested one, in
// either mode, does not wait); disabled with the timing lock.
class CpuWorkLock {
 public:
  enum class Mode { Shared, Exclusive };
  explicit CpuWorkLock(Mode mode);
  ~CpuWorkLock();
  CpuWorkLock(const CpuWorkLock&) = delete;
  CpuWorkLock& operator=(const CpuWorkLock&) = delete;

 private:
  int fd_ = -1;
};

// Both locks of a timed section with `threads` OpenMP threads (<= 0: all cores): the timing lock,
// and the CPU-work lock exclusively when the threads take every core (nothing else may run on
// the machine meanwhile).
class TimedSection {
 public:
  explicit TimedSection(int threads);

 private:
  TimingLock machine_wide_;
  std::optional<CpuWorkLock> all_cores_;
};

}  // namespace steptp::tune
