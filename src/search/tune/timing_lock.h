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
//
// The shared file is created with mode 0644 and opened read-only (flock needs no write access),
// so the tools of every user on the machine serialize on it; by the same token any local user
// can hold it. A service that must not wait on other users (`steptp serve`) uses a lock of its
// own instead (use_private_timing_lock) and bounds each wait with a deadline (LockTimeout).
#pragma once

#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>

#include "base/error.h"

namespace steptp::tune {

std::string timing_lock_path();  // "" when disabled

// Makes `path` the timing lock of this process and of the children it forks ("": disabled),
// overriding $STEPTP_TIMING_LOCK. The file and its ".cpu" sibling become private: created with
// mode 0600 (its directory with 0700 when missing), an existing one of this user set to 0600.
// With `owner` (root only), the files belong to that uid instead: the unprivileged uid that
// sandboxed serve jobs run as, which must open them (apps/serve/worker.h). Throws base::Error
// (Failed) when a file is not a regular file of this user (or `owner`) or when others may replace it (its
// directory is writable by group or others without the sticky bit).
void use_private_timing_lock(const std::string& path, std::optional<unsigned> owner = std::nullopt);

using LockClock = std::chrono::steady_clock;
// When a lock's wait gives up; nullopt: wait as long as it takes.
using LockDeadline = std::optional<LockClock::time_point>;
// `seconds` from now (< 0: no deadline).
LockDeadline deadline_after(double seconds);

// A bounded wait for a lock passed its deadline: another process holds it (a measurement, or
// someone holding the file).
// The work could not be done (base::ErrorKind::Failed); serve answers it 503 "machine busy" itself.
struct LockTimeout : base::Error {
  LockTimeout(const std::string& what, double waited_s)
      : base::Error(base::ErrorKind::Failed, what), waited_s(waited_s) {}
  double waited_s;
};

// Waits until the lock is held, or throws LockTimeout at `deadline`; releases it on destruction.
// Re-entrant per process: a nested TimingLock in the same process (or a child forked while it is
// held) does not wait on itself.
class TimingLock {
 public:
  explicit TimingLock(LockDeadline deadline = std::nullopt);
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
  explicit CpuWorkLock(Mode mode, LockDeadline deadline = std::nullopt);
  ~CpuWorkLock();
  CpuWorkLock(const CpuWorkLock&) = delete;
  CpuWorkLock& operator=(const CpuWorkLock&) = delete;

 private:
  int fd_ = -1;
};

// Both locks of a timed section with `threads` OpenMP threads (<= 0: all cores): the timing lock,
// and the CPU-work lock exclusively when the threads take every core (nothing else may run on
// the machine meanwhile); both waits end at `deadline`.
class TimedSection {
 public:
  explicit TimedSection(int threads, LockDeadline deadline = std::nullopt);
  ~TimedSection();
  TimedSection(const TimedSection&) = delete;
  TimedSection& operator=(const TimedSection&) = delete;

 private:
  TimingLock machine_wide_;
  std::optional<CpuWorkLock> all_cores_;
  LockClock::time_point held_since_;
};

// Seconds this process has spent inside TimedSections (holding the locks, not waiting for them):
// the part of its work that one machine serializes, which a projection of more workers per
// machine needs (docs/mpi.md). A forked child starts from its parent's count.
double timed_section_seconds();

}  // namespace steptp::tune
