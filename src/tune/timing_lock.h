// One measurement at a time per machine: every timed section (tuner, dataset, benchmarks) holds
// an exclusive flock on one lock file, so two processes never time kernels side by side and
// skew each other's figures. Compiling and verifying run outside the lock. The file is
// /tmp/steptp-timing.lock (the same one the project's benchmark commands take with
// `flock /tmp/steptp-timing.lock CMD`); $STEPTP_TIMING_LOCK names another, and
// STEPTP_TIMING_LOCK=none disables it — for a command that is already wrapped in that `flock`,
// which would otherwise wait for itself.
#pragma once

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

}  // namespace steptp::tune
