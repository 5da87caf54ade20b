// The worker process loop and its sandboxed job children (see worker.h).
#include "apps/serve/worker.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "lower/cpu/sandbox.h"
#include "lower/sandbox/pids_cgroup.h"
#include "lower/sandbox/profile.h"
#include "lower/sandbox/seccomp_filter.h"
#include "apps/serve/frames.h"
#include "search/tune/timing_lock.h"

namespace steptp::serve {
namespace {

using nlohmann::json;
namespace sb = backend::sandbox;

constexpr int kExitOom = 3, kExitError = 4;

void limit(int resource, rlim_t value) {
  rlimit rl{value, value};
  setrlimit(resource, &rl);
}

// The worker's side of one job's sandbox: its private directory, made before the job child is
// forked and removed after it is gone.
struct JobSandbox {
  std::string dir;
  ~JobSandbox() {
    std::error_code ec;
    if (!dir.empty()) std::filesystem::remove_all(dir, ec);
  }
};

// What the worker knows before any job: the network namespace, its pids cgroup and (probe_layers)
// which layers the kernel grants.
struct WorkerState {
  bool network_isolated = false;
  // The worker joins a pids cgroup once, at start, and its job children inherit it: a worker runs
  // one job at a time, so the limit is the job's (and moving each job into a cgroup of its own
  // costs an RCU grace period, 5-15 ms, per job under cgroup v1). Deliberately never removed
  // here, as the worker is in it until it exits; PidsCgroup::create removes those left behind.
  sb::PidsCgroup* cgroup = nullptr;
  std::string no_cgroup;  // why there is none
  sb::LayerReport probed;
};

// The lock files a job takes (search/tune/timing_lock.h), created by the (root) worker so that Landlock
// can name them and the job, as the sandbox uid, can open them.
std::vector<std::string> lock_files() {
  const std::string path = tune::timing_lock_path();
  if (path.empty()) return {};
  return {path, path + ".cpu"};
}

std::unique_ptr<JobSandbox> prepare_sandbox(const WorkerLimits& lim) {
  auto s = std::make_unique<JobSandbox>();
  if (lim.sandbox_dir.empty()) return s;
  s->dir = sb::make_job_dir(lim.sandbox_dir, lim.sandbox_uid, lim.sandbox_gid);
  return s;
}

// In the job child: every layer of the job profile, reported. A job sandbox without a
// directory is the unsandboxed mode (sandbox_dir empty): nothing applies.
sb::LayerReport enter_sandbox(const JobSandbox& s, const JobConfig& config, const WorkerLimits& lim,
                              const WorkerState& w, bool pid_ns) {
  if (lim.sandbox_dir.empty()) return {};
  sb::JobProfile p{.uid = lim.sandbox_uid,
                   .gid = lim.sandbox_gid,
                   .job_dir = s.dir,
                   .extra_paths = {},
                   .in_new_pid_namespace = pid_ns};
  p.extra_paths.push_back({lim.sandbox_dir + "/kernels", sb::Access::Full});
  if (!config.peaks_path.empty()) p.extra_paths.push_back({config.peaks_path, sb::Access::Read});
  for (const auto& f : lock_files()) p.extra_paths.push_back({f, sb::Access::ReadWrite});
  sb::LayerReport r = sb::apply_job_profile(p);
  r.set("pids_cgroup", w.cgroup != nullptr, w.no_cgroup);
  r.set("net_ns", w.network_isolated, w.network_isolated ? "" : "the worker could not enter a network namespace");
  // The kernel-run children's own layer, as the worker's probe found it.
  r.set("seccomp_kernel", w.probed.applied("seccomp_kernel"), w.probed.reason("seccomp_kernel"));
  sb::set_kernel_profile_for_children(true);
  return r;
}

// Body of the sandboxed child: run the job, report progress and the reply on `fd`.
[[noreturn]] void child_main(int fd, const json& job, const JobConfig& config, const WorkerLimits& lim,
                             const JobSandbox& s, const WorkerState& w, bool pid_ns) {
  limit(RLIMIT_CPU, rlim_t(std::ceil(lim.job_timeout_s + lim.measure_timeout_s)) + 5);
  limit(RLIMIT_NOFILE, rlim_t(lim.max_open_files));
  limit(RLIMIT_FSIZE, rlim_t(lim.max_file_bytes));
  sb::LayerReport r = enter_sandbox(s, config, lim, w, pid_ns);
  if (lim.require_sandbox && !r.complete()) {
    json body = {{"error", "sandbox incomplete: " + r.describe_missing()}};
    write_frame(fd, 'R', json{{"status", 503}, {"body", body}}.dump());
    _exit(0);
  }
  try {
    JobReply reply = run_job(job, config, [&](Notice n, const json& j) { write_frame(fd, char(n), j.dump()); });
    write_frame(fd, 'R', json{{"status", reply.status}, {"body", reply.body}}.dump());
    _exit(0);
  } catch (const std::bad_alloc&) {
    _exit(kExitOom);
  } catch (...) {
    _exit(kExitError);
  }
}

// Forks the job child with the worker's pipes to the server replaced by /dev/null (a job must not
// read other jobs or write replies of its own); `body(pid_ns)` runs in it. In a new PID namespace
// the forked child stays that namespace's init and runs the job as its only child: the kernel
// ignores the signals an init sends itself (raise(SIGSEGV), abort, SIGXCPU), which would hide
// how the job ended; the init passes the job's wait status on in an 'X' frame {"status"}.
//
// The job also dies with its worker, which the server kills when it is stuck past the shutdown
// grace: `lifeline` is the read end of a pipe whose write end only the worker holds, and reads
// end-of-file once the worker is gone (PR_SET_PDEATHSIG would follow the thread that forked,
// which ends at once). The watching thread lives in the forked child (the namespace's init, whose
// exit ends every process of the namespace).
pid_t fork_job(int report_fd, int read_end, const int lifeline[2], const WorkerLimits& lim,
               const std::function<void(bool)>& body) {
  return backend::cpu::fork_limited(
      lim.memory_bytes,
      [&] {
        close(read_end);
        if (lifeline) close(lifeline[1]);
        // Its own process group, so the worker can end it with everything it started (the
        // measuring child, compilers), which would otherwise outlive it and hold the machine lock.
        setpgid(0, 0);
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        for (int fd : {0, 1})
          if (fd != report_fd) dup2(null, fd);
        if (lifeline)
          std::thread([fd = lifeline[0]] {
            char c;
            while (read(fd, &c, 1) < 0 && errno == EINTR) {
            }
            kill(0, SIGKILL);  // the job's process group (outside a PID namespace)
            _exit(kExitError);
          }).detach();
        if (getpid() != 1) {
          body(false);
          _exit(kExitError);
        }
        pid_t job = fork();
        if (job == 0) {
          body(true);
          _exit(kExitError);
        }
        int status = 0;
        pid_t w = 0;
        while (job > 0 && (w = waitpid(-1, &status, 0)) != job)  // also reaps the job's orphans
          if (w < 0 && errno != EINTR) break;
        write_frame(report_fd, 'X', json{{"status", job > 0 && w == job ? status : (kExitError << 8)}}.dump());
        _exit(0);
      },
      !lim.sandbox_dir.empty());
}

// A job child that has replied: it is killed with whatever it left behind at once, and reaped
// (its directory removed) when it has exited, without waiting: the exit waits for the teardown of
// its mount namespace (an RCU grace period, ~5 ms), which neither the reply nor the next job need.
struct Replied {
  pid_t pid = -1;
  std::unique_ptr<JobSandbox> sandbox;
  // True once reaped; `block` waits for the exit.
  bool reap(bool block) {
    pid_t r;
    while ((r = waitpid(pid, nullptr, block ? 0 : WNOHANG)) < 0 && errno == EINTR) {
    }
    return r != 0;  // reaped, or not our child any more (nothing to wait for)
  }
};

json run_sandboxed_job(const json& job, const JobConfig& config, const WorkerLimits& lim, const WorkerState& w,
                       Replied& replied) {
  std::unique_ptr<JobSandbox> s;
  try {
    s = prepare_sandbox(lim);
  } catch (const std::exception& e) {
    return {{"status", 503}, {"body", {{"error", e.what()}}}};
  }
  int p[2], life[2];
  if (pipe(p) != 0) return {{"status", 503}, {"body", {{"error", "cannot create a pipe"}}}};
  if (pipe2(life, O_CLOEXEC) != 0) {
    close(p[0]);
    close(p[1]);
    return {{"status", 503}, {"body", {{"error", "cannot create a pipe"}}}};
  }
  pid_t pid = fork_job(p[1], p[0], life, lim, [&](bool pid_ns) { child_main(p[1], job, config, lim, *s, w, pid_ns); });
  close(p[1]);
  close(life[0]);
  // Closed once the job has replied or been reaped: the job ends with it at the latest.
  struct CloseLifeline {
    int fd;
    ~CloseLifeline() { close(fd); }
  } close_lifeline{life[1]};
  if (pid < 0) {
    close(p[0]);
    return {{"status", 503}, {"body", {{"error", fmt::format("fork failed: {}", std::strerror(errno))}}}};
  }
  std::optional<json> last;
  std::optional<json> reply;
  std::optional<int> job_status;  // from the namespace's init ('X'), else from waitpid
  int64_t deadline = now_ms() + int64_t(lim.job_timeout_s * 1000);
  double budget_s = lim.job_timeout_s;
  bool timed_out = false;
  while (!reply) {
    auto f = read_frame(p[0], deadline, &timed_out);
    if (!f) break;
    json j = json::parse(f->payload, nullptr, false);
    switch (f->type) {
      case 'P': last = j; break;
      case 'W': deadline = -1; break;  // waiting for the machine: not the job's time
      case 'G':
        deadline = now_ms() + int64_t(lim.measure_timeout_s * 1000);
        budget_s = lim.measure_timeout_s;
        break;
      case 'R': reply = j; break;
      case 'X': job_status = j.value("status", 0); break;
      default: break;
    }
  }
  close(p[0]);
  if (reply && !reply->is_discarded()) {
    replied = {pid, std::move(s)};
    return *reply;
  }
  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  kill(-pid, SIGKILL);  // whatever the job left behind
  if (job_status) status = *job_status;
  std::string why, kind;  // kind: the metric's label (steptp_job_failures_total{kind})
  if (timed_out) why = fmt::format("timed out after {:g} s", budget_s), kind = "timeout";
  else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGXCPU) why = "CPU time limit exceeded", kind = "cpu_limit";
  else if (WIFSIGNALED(status)) why = fmt::format("crashed ({})", strsignal(WTERMSIG(status))), kind = "crash";
  else if (WIFEXITED(status) && WEXITSTATUS(status) == kExitOom)
    why = fmt::format("out of memory (limit {} MiB)", lim.memory_bytes >> 20), kind = "out_of_memory";
  else why = fmt::format("failed (exit status {})", WIFEXITED(status) ? WEXITSTATUS(status) : -1), kind = "failed";
  JobReply r = died_reply(job, last, why);
  r.body["failure_kind"] = kind;
  return {{"status", r.status}, {"body", r.body}};
}

// Which layers this machine grants: a job child that enters the sandbox as every job does and
// forks a kernel-run child, each reporting what applied.
sb::LayerReport probe_layers(const JobConfig& config, const WorkerLimits& lim, const WorkerState& w) {
  sb::LayerReport failed;
  std::unique_ptr<JobSandbox> s;
  try {
    s = prepare_sandbox(lim);
  } catch (const std::exception& e) {
    failed.set("job_dir", false, e.what());
    return failed;
  }
  int p[2];
  if (pipe(p) != 0) return failed;
  pid_t pid = fork_job(p[1], p[0], nullptr, lim, [&](bool pid_ns) {
    sb::LayerReport r = enter_sandbox(*s, config, lim, w, pid_ns);
    r.set("seccomp_kernel", false, "the kernel-run child did not report");
    int q[2];
    if (pipe(q) == 0) {
      pid_t kid = backend::cpu::fork_limited(lim.memory_bytes, [&] {
        write_frame(q[1], 'K', sb::kernel_profile_report().to_json().dump());
        _exit(0);
      });
      close(q[1]);
      if (auto k = read_frame(q[0], now_ms() + 10000)) {
        auto kr = sb::LayerReport::from_json(json::parse(k->payload, nullptr, false));
        r.set("seccomp_kernel", kr.applied("seccomp_kernel"), kr.reason("seccomp_kernel"));
      }
      if (kid > 0) waitpid(kid, nullptr, 0);
    }
    write_frame(p[1], 'L', r.to_json().dump());
    _exit(0);
  });
  close(p[1]);
  if (pid < 0) {
    close(p[0]);
    failed.set("pid_ns", false, fmt::format("fork failed: {}", std::strerror(errno)));
    return failed;
  }
  auto f = read_frame(p[0], now_ms() + 30000);
  close(p[0]);
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  if (!f) return failed;
  return sb::LayerReport::from_json(json::parse(f->payload, nullptr, false));
}

}  // namespace

int worker_main(int in_fd, int out_fd, const JobConfig& config, const WorkerLimits& limits) {
  signal(SIGPIPE, SIG_IGN);
  // The server handles SIGINT/SIGTERM and stops its workers by closing their pipes.
  signal(SIGINT, SIG_IGN);
  signal(SIGTERM, SIG_IGN);
  WorkerState w;
  w.network_isolated = unshare(CLONE_NEWNET) == 0;
  json hello = {{"network_isolated", w.network_isolated}};
  if (!limits.sandbox_dir.empty()) {
    // The jobs' kernel cache: the server's, writable by the sandbox uid (docs/serve.md).
    setenv("STEPTP_CACHE_DIR", (limits.sandbox_dir + "/kernels").c_str(), 1);
    sb::prepare_seccomp();
    if (auto cg = sb::PidsCgroup::create(limits.max_pids, &w.no_cgroup)) {
      w.no_cgroup = cg->join();
      if (w.no_cgroup.empty()) w.cgroup = cg.release();
    }
    w.probed = probe_layers(config, limits, w);
    hello["sandbox"] = w.probed.to_json();
    if (limits.require_sandbox && !w.probed.complete()) {
      hello["error"] = "--require-sandbox: the sandbox is incomplete on this machine: " + w.probed.describe_missing();
      write_frame(out_fd, 'H', hello.dump());
      return 1;
    }
  }
  if (!write_frame(out_fd, 'H', hello.dump())) return 1;
  int rc = 0;
  std::vector<Replied> exiting;
  auto reap = [&](bool block) { std::erase_if(exiting, [&](Replied& r) { return r.reap(block); }); };
  while (auto f = read_frame(in_fd)) {
    reap(false);
    json job = json::parse(f->payload, nullptr, false);
    Replied replied;
    json reply = job.is_discarded() ? json{{"status", 400}, {"body", {{"error", "malformed job"}}}}
                                    : run_sandboxed_job(job, config, limits, w, replied);
    if (replied.pid > 0) {
      kill(-replied.pid, SIGKILL);  // its work is done (even if it did not end itself), and what it left behind
      exiting.push_back(std::move(replied));
    }
    if (!write_frame(out_fd, 'R', reply.dump())) {
      rc = 1;
      break;
    }
    reap(false);
  }
  reap(true);
  return rc;
}

}  // namespace steptp::serve
