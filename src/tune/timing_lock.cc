#include "tune/timing_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <string_view>

namespace steptp::tune {
namespace {
// Depth of TimingLocks alive in this process (flock is per open file description, so a second
// open() in the same process would wait for the first).
std::mutex g_mu;
int g_depth = 0;
}  // namespace

std::string timing_lock_path() {
  const char* env = std::getenv("STEPTP_TIMING_LOCK");
  if (env && std::string_view(env) == "none") return {};
  return env && *env ? env : "/tmp/steptp-timing.lock";
}

TimingLock::TimingLock() {
  std::lock_guard lock(g_mu);
  if (g_depth++ > 0) return;
  std::string path = timing_lock_path();
  if (path.empty()) return;
  fd_ = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd_ < 0) {
    g_depth--;
    throw std::runtime_error("cannot open the timing lock " + path);
  }
  while (flock(fd_, LOCK_EX) != 0)
    if (errno != EINTR) {
      close(fd_);
      g_depth--;
      throw std::runtime_error("cannot take the timing lock " + path);
    }
}

TimingLock::~TimingLock() {
  std::lock_guard lock(g_mu);
  g_depth--;
  if (fd_ >= 0) close(fd_);  // closing the description releases the flock
}

}  // namespace steptp::tune
