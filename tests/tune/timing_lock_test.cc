// The CPU-work lock (search/tune/timing_lock.h) across processes: a measurement that times with every
// core waits for CPU work held shared elsewhere; shared holders do not wait for each other.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "search/tune/timing_lock.h"

namespace steptp::tune {
namespace {

using Clock = std::chrono::steady_clock;

// A child process that holds the CPU-work lock in `mode` for `hold_ms`; returns once it holds it.
pid_t hold_in_child(CpuWorkLock::Mode mode, int hold_ms) {
  int ready[2];
  EXPECT_EQ(pipe(ready), 0);
  pid_t pid = fork();
  if (pid == 0) {
    close(ready[0]);
    {
      CpuWorkLock held(mode);
      char c = 1;
      if (write(ready[1], &c, 1) != 1) _exit(2);
      std::this_thread::sleep_for(std::chrono::milliseconds(hold_ms));
    }
    _exit(0);
  }
  close(ready[1]);
  char c = 0;
  EXPECT_EQ(read(ready[0], &c, 1), 1);
  close(ready[0]);
  return pid;
}

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

// Milliseconds this process waits to take the lock in `mine` while a child holds it in `theirs`
// for `hold_ms`.
double wait_ms(CpuWorkLock::Mode theirs, int hold_ms, CpuWorkLock::Mode mine) {
  pid_t child = hold_in_child(theirs, hold_ms);
  auto t0 = Clock::now();
  { CpuWorkLock taken(mine); }
  const double waited = ms_since(t0);
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  return waited;
}

class CpuWorkLockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = std::filesystem::temp_directory_path() / ("steptp_cpu_lock_test_" + std::to_string(getpid()));
    setenv("STEPTP_TIMING_LOCK", path_.c_str(), 1);
  }
  void TearDown() override {
    std::filesystem::remove(path_.string() + ".cpu");
    unsetenv("STEPTP_TIMING_LOCK");
  }
  std::filesystem::path path_;
};

TEST_F(CpuWorkLockTest, AnAllCoreMeasurementWaitsForCpuWorkElsewhere) {
  EXPECT_GE(wait_ms(CpuWorkLock::Mode::Shared, 400, CpuWorkLock::Mode::Exclusive), 300);
}

TEST_F(CpuWorkLockTest, CpuWorkDoesNotWaitForOtherCpuWork) {
  EXPECT_LT(wait_ms(CpuWorkLock::Mode::Shared, 1500, CpuWorkLock::Mode::Shared), 1000);
}

TEST_F(CpuWorkLockTest, NestedInOneProcessDoesNotWaitForItself) {
  CpuWorkLock outer(CpuWorkLock::Mode::Exclusive);
  auto t0 = Clock::now();
  { CpuWorkLock inner(CpuWorkLock::Mode::Shared); }
  EXPECT_LT(ms_since(t0), 1000);
}

}  // namespace
}  // namespace steptp::tune
