#include "lower/cpu/sandbox.h"

#include <fcntl.h>
#include <omp.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <thread>

#include "lower/sandbox/profile.h"

namespace steptp::backend::cpu {

std::string_view to_string(RunStatus s) {
  switch (s) {
    case RunStatus::Ok: return "ok";
    case RunStatus::Crashed: return "crashed";
    case RunStatus::TimedOut: return "timed out";
    case RunStatus::OutOfMemory: return "out of memory";
    case RunStatus::Failed: return "failed";
  }
  return "failed";
}

namespace {

// Current address-space size of this process (bytes), from /proc/self/statm.
int64_t current_vm_bytes() {
  std::ifstream in("/proc/self/statm");
  int64_t pages = 0;
  in >> pages;
  return pages * sysconf(_SC_PAGESIZE);
}

constexpr int kExitOom = 3;

}  // namespace

pid_t fork_limited(int64_t extra_vm_bytes, const std::function<void()>& child, bool new_pid_namespace) {
  const int64_t vm_limit = current_vm_bytes() + extra_vm_bytes;
  const bool kernel_profile = sandbox::kernel_profile_for_children();
  auto run_child = [&] {
    rlimit rl{static_cast<rlim_t>(vm_limit), static_cast<rlim_t>(vm_limit)};
    setrlimit(RLIMIT_AS, &rl);
    rlimit core{0, 0};
    setrlimit(RLIMIT_CORE, &core);
    if (kernel_profile) sandbox::apply_kernel_profile();
    child();
    _exit(1);
  };
  if (new_pid_namespace) {
    // Forked from this thread: unshare(CLONE_NEWPID) holds for the next child only once we
    // return to our own namespace (setns), and a child forked from a helper thread would run
    // on that thread's stack, which glibc hands to the next thread made in the child's own
    // children (it looks free there), overwriting the frames that their code refers to.
    int ours = open("/proc/self/ns/pid", O_RDONLY | O_CLOEXEC);
    const bool entered = ours >= 0 && unshare(CLONE_NEWPID) == 0;
    pid_t pid = fork();
    if (pid == 0) run_child();
    const int fork_errno = errno;
    if (entered) setns(ours, CLONE_NEWPID);
    if (ours >= 0) close(ours);
    errno = fork_errno;
    return pid;
  }
  pid_t pid = -1;
  int fork_errno = 0;
  std::thread helper([&] {
    pid = fork();
    if (pid == 0) run_child();
    fork_errno = errno;
  });
  helper.join();
  if (pid < 0) errno = fork_errno;
  return pid;
}

ChildExit wait_child(pid_t pid, const std::function<bool()>& expired) {
  ChildExit e;
  auto sleep = std::chrono::microseconds(50);
  while (true) {
    pid_t w = waitpid(pid, &e.status, WNOHANG);
    if (w == pid) return e;
    if (w < 0 && errno != EINTR) {
      e.wait_failed = true;
      return e;
    }
    if (expired()) {
      kill(pid, SIGKILL);
      waitpid(pid, &e.status, 0);
      e.killed = true;
      return e;
    }
    std::this_thread::sleep_for(sleep);
    sleep = std::min(sleep * 2, std::chrono::microseconds(5000));
  }
}

SandboxResult run_sandboxed(const CpuProgram& prog, const leir::TensorMap& inputs, const SandboxLimits& limits) {
  SandboxResult r;
  auto buffers = prog.bind(inputs);
  void* const* args = buffers->args();
  const int threads = limits.threads;
  auto t0 = std::chrono::steady_clock::now();
  pid_t pid = fork_limited(limits.memory_limit_bytes, [&] {
    if (threads > 0) omp_set_num_threads(threads);
    int rc = 1;
    try {
      rc = prog.call(args);
    } catch (...) {  // the driver's bookkeeping could not allocate
    }
    _exit(rc == 0 ? 0 : kExitOom);
  });
  if (pid < 0) {
    r.message = fmt::format("fork failed: {}", std::strerror(errno));
    return r;
  }
  ChildExit e = wait_child(pid, [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > limits.time_limit_s;
  });
  if (e.wait_failed) {
    r.message = fmt::format("waitpid failed: {}", std::strerror(errno));
    return r;
  }
  const int status = e.status;
  const bool timed_out = e.killed;
  r.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (timed_out) {
    r.status = RunStatus::TimedOut;
    r.message = fmt::format("killed after the {:.3g} s time limit", limits.time_limit_s);
  } else if (WIFSIGNALED(status)) {
    r.status = RunStatus::Crashed;
    r.message = fmt::format("killed by signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
  } else if (WIFEXITED(status) && WEXITSTATUS(status) == kExitOom) {
    r.status = RunStatus::OutOfMemory;
    r.message = fmt::format("allocation failed under the {} MiB memory limit", limits.memory_limit_bytes >> 20);
  } else if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    r.status = RunStatus::Ok;
    r.outputs = prog.outputs(*buffers);
  } else {
    r.message = fmt::format("child exited with status {}", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  }
  return r;
}

}  // namespace steptp::backend::cpu
