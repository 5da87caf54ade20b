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
int g_cpu_depth = 0;

// Opens `path` and takes flock `op` on it (retrying on EINTR); -1 when `path` is empty.
int lock_file(const std::string& path, int op, const char* what) {
  if (path.empty()) return -1;
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) throw std::runtime_error(std::string("cannot open the ") + what + " " + path);
  while (flock(fd, op) != 0)
    if (errno != EINTR) {
      close(fd);
      throw std::runtime_error(std::string("cannot take the ") + what + " " + path);
    }
  return fd;
}
}  // namespace

std::string timing_lock_path() {
  const char* env = std::getenv("STEPTP_TIMING_LOCK");
  if (env && std::string_view(env) == "none") return {};
  return env && *env ? env : "/tmp/steptp-timing.lock";
}

TimingLock::TimingLock() {
  std::lock_guard lock(g_mu);
  if (g_depth++ > 0) return;
  try {
    fd_ = lock_file(timing_lock_path(), LOCK_EX, "timing lock");
  } catch (...) {
    g_depth--;
    throw;
  }
}

TimingLock::~TimingLock() {
  std::lock_guard lock(g_mu);
  g_depth--;
  if (fd_ >= 0) close(fd_);  // closing the description releases the flock
}

CpuWorkLock::CpuWorkLock(Mode mode) {
  std::lock_guard lock(g_mu);
  if (g_cpu_depth++ > 0) return;
  const std::string timing = timing_lock_path();
  try {
    fd_ = lock_file(timing.empty() ? "" : timing + ".cpu", mode == Mode::Shared ? LOCK_SH : LOCK_EX, "CPU-work lock");
  } catch (...) {
    g_cpu_depth--;
    throw;
  }
}

CpuWorkLock::~CpuWorkLock() {
  std::lock_guard lock(g_mu);
  g_cpu_depth--;
  if (fd_ >= 0) close(fd_);
}

}  // namespace steptp::tune
