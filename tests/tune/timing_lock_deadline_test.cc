// Bounded waits for the timing lock (search/tune/timing_lock.h): a lock held by another process (any
// process that can open the file and flock it) ends a bounded wait at its deadline with
// LockTimeout; the service's private lock file is 0600 and refuses files and directories others
// control; the shared file is created 0644 and never through a planted symlink.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <thread>

#include "search/tune/timing_lock.h"

namespace steptp::tune {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// A child process holding a plain flock (`op`) on `path` until killed, as any local process could.
class Holder {
 public:
  Holder(const std::string& path, int op) {
    int ready[2];
    EXPECT_EQ(pipe(ready), 0);
    pid_ = fork();
    if (pid_ == 0) {
      int fd = open(path.c_str(), O_RDONLY | O_CREAT, 0644);
      if (fd < 0 || flock(fd, op) != 0) _exit(2);
      char c = 1;
      if (write(ready[1], &c, 1) != 1) _exit(2);
      pause();
      _exit(0);
    }
    close(ready[1]);
    char c = 0;
    EXPECT_EQ(read(ready[0], &c, 1), 1) << "the holder could not take the lock";
    close(ready[0]);
  }
  ~Holder() { release(); }
  void release() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

 private:
  pid_t pid_ = -1;
};

// Runs `f` in a forked child (for process-wide settings such as the private lock); its result is
// the exit status.
int in_child(const std::function<int()>& f) {
  pid_t pid = fork();
  if (pid == 0) {
    int rc = 1;
    try {
      rc = f();
    } catch (...) {
      rc = 100;
    }
    _exit(rc);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

class BoundedLock : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("steptp_bounded_lock_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    path_ = (dir_ / "timing.lock").string();
    setenv("STEPTP_TIMING_LOCK", path_.c_str(), 1);
  }
  void TearDown() override {
    fs::remove_all(dir_);
    unsetenv("STEPTP_TIMING_LOCK");
  }
  fs::path dir_;
  std::string path_;
};

TEST_F(BoundedLock, TimingLockHeldElsewhereThrowsAtItsDeadline) {
  Holder held(path_, LOCK_EX);
  auto t0 = Clock::now();
  try {
    TimingLock lock(deadline_after(1.0));
    ADD_FAILURE() << "took a lock that another process holds";
  } catch (const LockTimeout& e) {
    EXPECT_NEAR(e.waited_s, 1.0, 0.5);
    EXPECT_EQ(std::string(e.what()).find(path_), std::string::npos) << "no path in the message: " << e.what();
  }
  EXPECT_NEAR(seconds_since(t0), 1.0, 0.5);
}

TEST_F(BoundedLock, TimingLockReleasedBeforeTheDeadlineIsTaken) {
  auto held = std::make_unique<Holder>(path_, LOCK_EX);
  std::thread releaser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    held->release();
  });
  auto t0 = Clock::now();
  EXPECT_NO_THROW({ TimingLock lock(deadline_after(10)); });
  releaser.join();
  EXPECT_GE(seconds_since(t0), 0.25);
  EXPECT_LT(seconds_since(t0), 3.0);
}

TEST_F(BoundedLock, AllCoreSectionThrowsAtItsDeadlineWhileCpuWorkRunsElsewhere) {
  Holder cpu_work(path_ + ".cpu", LOCK_SH);
  auto t0 = Clock::now();
  EXPECT_THROW({ TimedSection timed(0, deadline_after(0.5)); }, LockTimeout);
  EXPECT_NEAR(seconds_since(t0), 0.5, 0.5);
  // The timing lock it had taken first was released: a plain wait gets it at once.
  auto t1 = Clock::now();
  { TimingLock lock(deadline_after(0.5)); }
  EXPECT_LT(seconds_since(t1), 0.4);
}

TEST_F(BoundedLock, SharedFileIsCreated0644AndNeverThroughASymlink) {
  const mode_t mask = umask(022);
  { TimingLock lock; }
  umask(mask);
  struct stat st {};
  ASSERT_EQ(stat(path_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
  // A symlink planted at the name (e.g. in /tmp, pointing at a file to create) is refused.
  fs::remove(path_);
  fs::create_symlink(dir_ / "target", path_);
  EXPECT_THROW({ TimingLock lock; }, std::runtime_error);
  EXPECT_FALSE(fs::exists(dir_ / "target"));
}

TEST_F(BoundedLock, PrivateLockIsMode0600AndReplacesTheSharedOne) {
  const std::string mine = (dir_ / "service" / "timing.lock").string();
  EXPECT_EQ(in_child([&] {
              use_private_timing_lock(mine);
              TimingLock lock(deadline_after(1));
              return timing_lock_path() == mine ? 0 : 1;
            }),
            0);
  for (const std::string& f : {mine, mine + ".cpu"}) {
    struct stat st {};
    ASSERT_EQ(stat(f.c_str(), &st), 0) << f;
    EXPECT_EQ(st.st_mode & 0777, 0600u) << f;
  }
  struct stat d {};
  ASSERT_EQ(stat((dir_ / "service").c_str(), &d), 0);
  EXPECT_EQ(d.st_mode & 0777, 0700u);
  // An existing file with open permissions becomes private.
  chmod(mine.c_str(), 0666);
  EXPECT_EQ(in_child([&] { return use_private_timing_lock(mine), 0; }), 0);
  struct stat st {};
  ASSERT_EQ(stat(mine.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST_F(BoundedLock, PrivateLockRefusesWhatOthersControl) {
  // A symlink at the name.
  fs::create_directories(dir_ / "links");
  fs::create_symlink(dir_ / "elsewhere", dir_ / "links" / "timing.lock");
  EXPECT_EQ(in_child([&] { return use_private_timing_lock((dir_ / "links" / "timing.lock").string()), 0; }), 100);
  // A directory everyone may write (without the sticky bit): the file could be swapped.
  fs::create_directories(dir_ / "open");
  chmod((dir_ / "open").c_str(), 0777);
  EXPECT_EQ(in_child([&] { return use_private_timing_lock((dir_ / "open" / "timing.lock").string()), 0; }), 100);
}

}  // namespace
}  // namespace steptp::tune
