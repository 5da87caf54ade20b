#include "search/tune/timing_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <string_view>
#include <system_error>
#include <thread>

#include <fmt/format.h>

#include "base/error.h"
#include "search/tune/machine.h"

namespace steptp::tune {
namespace {
// Locks of each kind alive in this process (flock is per open file description, so a second
// open() in the same process would wait for the first): only the outermost one takes the flock.
// `acquiring` serializes this process's acquirers of one kind while they wait for the flock;
// `g_mu` (never held while waiting) guards the depths and the private path, so a release never
// waits on an acquirer.
struct Kind {
  std::timed_mutex acquiring;
  int depth = 0;
};
std::mutex g_mu;
Kind g_timing, g_cpu;
std::optional<std::string> g_private_path;  // use_private_timing_lock's path, when called

[[noreturn]] void give_up(const char* what, LockClock::time_point since) {
  const double waited = std::chrono::duration<double>(LockClock::now() - since).count();
  // No path: the message may reach a service's client.
  throw LockTimeout(fmt::format("gave up waiting for the {} after {:.1f} s: another process holds it", what, waited),
                    waited);
}

// Takes flock `op` on `fd`: blocking without a deadline, else polled with a growing pause (1 to
// 50 ms) until `deadline` (false then). Polling, not a blocking flock interrupted by a timer:
// no signal handling to share with the rest of the process.
bool take(int fd, int op, LockDeadline deadline) {
  if (!deadline) {
    int rc;
    do rc = flock(fd, op);
    while (rc != 0 && errno == EINTR);
    if (rc != 0) throw std::system_error(errno, std::generic_category(), "flock");
    return true;
  }
  auto pause = std::chrono::milliseconds(1);
  while (flock(fd, op | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK && errno != EINTR) throw std::system_error(errno, std::generic_category(), "flock");
    const auto now = LockClock::now();
    if (now >= *deadline) return false;
    std::this_thread::sleep_for(std::min<LockClock::duration>(pause, *deadline - now));
    pause = std::min(pause * 2, std::chrono::milliseconds(50));
  }
  return true;
}

// Opens `path` and takes flock `op` on it, unless this process already holds a lock of that kind
// or `path` is empty: then -1. Throws LockTimeout at `deadline`.
int acquire(Kind& kind, const std::string& path, int op, const char* what, LockDeadline deadline) {
  const auto since = LockClock::now();
  std::unique_lock serial(kind.acquiring, std::defer_lock);
  if (!deadline) serial.lock();
  else if (!serial.try_lock_until(*deadline)) give_up(what, since);
  bool is_private;
  {
    std::lock_guard lock(g_mu);
    if (kind.depth++ > 0 || path.empty()) return -1;
    is_private = g_private_path.has_value();
  }
  // Read-only: flock needs no write access, so one user's file serves every user's tools.
  // O_NOFOLLOW: a symlink planted at the name in /tmp does not make us create its target.
  int fd = open(path.c_str(), O_RDONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, is_private ? 0600 : 0644);
  std::string failure;
  bool held = false;
  if (fd < 0) failure = fmt::format("cannot open the {} {}: {}", what, path, std::strerror(errno));
  else try {
      held = take(fd, op, deadline);
    } catch (const std::system_error& e) {
      failure = fmt::format("cannot take the {} {}: {}", what, path, e.what());
    }
  if (held) return fd;
  if (fd >= 0) close(fd);
  {
    std::lock_guard lock(g_mu);
    kind.depth--;
  }
  if (!failure.empty()) throw base::Error(base::ErrorKind::Failed, failure);
  give_up(what, since);
}

void release(Kind& kind, int fd) {
  std::lock_guard lock(g_mu);
  kind.depth--;
  if (fd >= 0) close(fd);  // closing the description releases the flock
}

// Creates `path` 0600 or checks that it is a regular file of this user and makes it 0600.
void make_private_file(const std::string& path, std::optional<unsigned> owner) {
  int fd = open(path.c_str(), O_RDONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0)
    throw base::Error(base::ErrorKind::Failed,
                      fmt::format("cannot create the timing lock {}: {}", path, std::strerror(errno)));
  struct stat st {};
  std::string problem;
  const uid_t me = geteuid(), want = owner ? uid_t(*owner) : me;
  if (fstat(fd, &st) != 0) problem = std::strerror(errno);
  else if (!S_ISREG(st.st_mode)) problem = "not a regular file";
  // Root opens the file whoever owns it, and leaves a file given to a sandbox uid (by this or
  // another service sharing the lock) with it; it gives its own file to `owner` when asked.
  else if (st.st_uid == me && want != me && fchown(fd, want, gid_t(-1)) != 0)
    problem = fmt::format("cannot give it to uid {}: {}", want, std::strerror(errno));
  else if (fstat(fd, &st) != 0 || !(st.st_uid == want || (me == 0 && want == me)))
    problem = fmt::format("owned by uid {}, not by uid {}", st.st_uid, want);
  else if ((st.st_mode & 07777) != 0600 && fchmod(fd, 0600) != 0) problem = std::strerror(errno);
  close(fd);
  if (!problem.empty())
    throw base::Error(base::ErrorKind::Failed, fmt::format("the timing lock {} cannot be private: {}", path, problem));
}
}  // namespace

std::string timing_lock_path() {
  {
    std::lock_guard lock(g_mu);
    if (g_private_path) return *g_private_path;
  }
  const char* env = std::getenv("STEPTP_TIMING_LOCK");
  if (env && std::string_view(env) == "none") return {};
  return env && *env ? env : "/tmp/steptp-timing.lock";
}

void use_private_timing_lock(const std::string& path, std::optional<unsigned> owner) {
  if (!path.empty()) {
    namespace fs = std::filesystem;
    fs::path dir = fs::path(path).parent_path();
    if (dir.empty()) dir = ".";
    std::error_code ec;
    if (fs::create_directories(dir, ec)) fs::permissions(dir, fs::perms::owner_all, ec);
    struct stat st {};
    if (stat(dir.c_str(), &st) != 0)
      throw base::Error(base::ErrorKind::Failed,
                        fmt::format("cannot use {} for the timing lock: {}", dir.string(), std::strerror(errno)));
    // Anyone who may rename entries of the directory could swap the file for one of theirs.
    if ((st.st_uid != geteuid() && st.st_uid != 0) || ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX)))
      throw base::Error(
          base::ErrorKind::Failed,
          fmt::format("the timing lock's directory {} may be changed by other users; choose a directory of this user",
                      dir.string()));
    make_private_file(path, owner);
    make_private_file(path + ".cpu", owner);
  }
  std::lock_guard lock(g_mu);
  g_private_path = path;
}

LockDeadline deadline_after(double seconds) {
  if (seconds < 0) return std::nullopt;
  return LockClock::now() + std::chrono::duration_cast<LockClock::duration>(std::chrono::duration<double>(seconds));
}

TimingLock::TimingLock(LockDeadline deadline)
    : fd_(acquire(g_timing, timing_lock_path(), LOCK_EX, "timing lock", deadline)) {}

TimingLock::~TimingLock() { release(g_timing, fd_); }

CpuWorkLock::CpuWorkLock(Mode mode, LockDeadline deadline)
    : fd_(acquire(g_cpu, timing_lock_path().empty() ? "" : timing_lock_path() + ".cpu",
                  mode == Mode::Shared ? LOCK_SH : LOCK_EX, "CPU-work lock", deadline)) {}

CpuWorkLock::~CpuWorkLock() { release(g_cpu, fd_); }

namespace {
std::atomic<double> g_timed_section_s{0};
}  // namespace

TimedSection::TimedSection(int threads, LockDeadline deadline) : machine_wide_(deadline) {
  if (threads <= 0 || threads >= core_count()) all_cores_.emplace(CpuWorkLock::Mode::Exclusive, deadline);
  held_since_ = LockClock::now();
}

TimedSection::~TimedSection() {
  g_timed_section_s += std::chrono::duration<double>(LockClock::now() - held_since_).count();
}

double timed_section_seconds() { return g_timed_section_s.load(); }

}  // namespace steptp::tune
