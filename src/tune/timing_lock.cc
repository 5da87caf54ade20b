#include "tune/timing_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <string_view>

#include "tune/machine.h"

namespace steptp::tune {
namespace {
// Locks of each kind alive in this process (flock is per open file description, so a second
// open() in the same process would wait for the first): only the outermost one takes the flock.
// `acquiring` serializes this process's acquirers of one kind while they block on the flock;
// `g_mu` (never held while blocking) guards the depths, so a release never waits on an acquirer.
struct Kind {
  std::mutex acquiring;
  int depth = 0;
};
std::mutex g_mu;
Kind g_timing, g_cpu;

// Opens `path` and takes flock `op` on it (retrying on EINTR), unless this process already holds
// a lock of that kind or `path` is empty: then -1.
int acquire(Kind& kind, const std::string& path, int op, const char* what) {
  std::lock_guard serial(kind.acquiring);
  {
    std::lock_guard lock(g_mu);
    if (kind.depth++ > 0 || path.empty()) return -1;
  }
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  // A sandboxed serve job runs as an unprivileged uid that may not write a lock file the server
  // created; flock needs only an open descriptor.
  if (fd < 0 && errno == EACCES) fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  int rc = -1;
  if (fd >= 0) do
      rc = flock(fd, op);
    while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    if (fd >= 0) close(fd);
    std::lock_guard lock(g_mu);
    kind.depth--;
    throw std::runtime_error(std::string("cannot ") + (fd < 0 ? "open" : "take") + " the " + what + " " + path);
  }
  return fd;
}

void release(Kind& kind, int fd) {
  std::lock_guard lock(g_mu);
  kind.depth--;
  if (fd >= 0) close(fd);  // closing the description releases the flock
}
}  // namespace

std::string timing_lock_path() {
  const char* env = std::getenv("STEPTP_TIMING_LOCK");
  if (env && std::string_view(env) == "none") return {};
  return env && *env ? env : "/tmp/steptp-timing.lock";
}

TimingLock::TimingLock() : fd_(acquire(g_timing, timing_lock_path(), LOCK_EX, "timing lock")) {}

TimingLock::~TimingLock() { release(g_timing, fd_); }

CpuWorkLock::CpuWorkLock(Mode mode)
    : fd_(acquire(g_cpu, timing_lock_path().empty() ? "" : timing_lock_path() + ".cpu",
                  mode == Mode::Shared ? LOCK_SH : LOCK_EX, "CPU-work lock")) {}

CpuWorkLock::~CpuWorkLock() { release(g_cpu, fd_); }

TimedSection::TimedSection(int threads) {
  if (threads <= 0 || threads >= core_count()) all_cores_.emplace(CpuWorkLock::Mode::Exclusive);
}

}  // namespace steptp::tune
