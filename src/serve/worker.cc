// The worker process loop and its sandboxed job children (see worker.h).
#include "serve/worker.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "backend/cpu/sandbox.h"
#include "serve/frames.h"

namespace steptp::serve {
namespace {

using nlohmann::json;

constexpr int kExitOom = 3, kExitError = 4;

void limit(int resource, rlim_t value) {
  rlimit rl{value, value};
  setrlimit(resource, &rl);
}

// Body of the sandboxed child: run the job, report progress and the reply on `fd`.
[[noreturn]] void child_main(int fd, int lifeline, const json& job, const JobConfig& config, const WorkerLimits& lim) {
  // Its own process group, so the worker can end it with everything it started (the measuring
  // child, compilers), which would otherwise outlive it and hold the machine lock.
  setpgid(0, 0);
  // The job holds no end of the worker's pipes to the server (the server's read of a reply must
  // end as soon as the worker is gone), and dies with its worker, which the server kills when it
  // is stuck past the shutdown grace: `lifeline` reads end-of-file once no worker holds its write
  // end. (PR_SET_PDEATHSIG would follow the thread that forked, which ends at once.)
  if (int null = open("/dev/null", O_RDWR); null >= 0) {
    dup2(null, 0);
    dup2(null, 1);
    if (null > 1) close(null);
  }
  std::thread([lifeline] {
    char c;
    while (read(lifeline, &c, 1) < 0 && errno == EINTR) {
    }
    kill(0, SIGKILL);  // the job's process group: the job, its compilers and its measuring child
  }).detach();
  limit(RLIMIT_CPU, rlim_t(std::ceil(lim.job_timeout_s + lim.measure_timeout_s)) + 5);
  limit(RLIMIT_NOFILE, rlim_t(lim.max_open_files));
  limit(RLIMIT_FSIZE, rlim_t(lim.max_file_bytes));
  try {
    JobReply r = run_job(job, config, [&](Notice n, const json& j) { write_frame(fd, char(n), j.dump()); });
    write_frame(fd, 'R', json{{"status", r.status}, {"body", r.body}}.dump());
    _exit(0);
  } catch (const std::bad_alloc&) {
    _exit(kExitOom);
  } catch (...) {
    _exit(kExitError);
  }
}

json run_sandboxed_job(const json& job, const JobConfig& config, const WorkerLimits& lim) {
  int p[2], life[2];
  if (pipe(p) != 0) return {{"status", 503}, {"body", {{"error", "cannot create a pipe"}}}};
  if (pipe2(life, O_CLOEXEC) != 0) {
    close(p[0]);
    close(p[1]);
    return {{"status", 503}, {"body", {{"error", "cannot create a pipe"}}}};
  }
  pid_t pid = backend::cpu::fork_limited(lim.memory_bytes, [&] {
    close(p[0]);
    close(life[1]);
    child_main(p[1], life[0], job, config, lim);
  });
  close(p[1]);
  close(life[0]);
  if (pid < 0) {
    close(p[0]);
    return {{"status", 503}, {"body", {{"error", fmt::format("fork failed: {}", std::strerror(errno))}}}};
  }
  std::optional<json> last;
  std::optional<json> reply;
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
      default: break;
    }
  }
  close(p[0]);
  close(life[1]);  // the job ends with this at the latest
  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  kill(-pid, SIGKILL);  // whatever the job left behind
  if (reply && !reply->is_discarded()) return *reply;
  std::string why;
  if (timed_out) why = fmt::format("timed out after {:g} s", budget_s);
  else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGXCPU) why = "CPU time limit exceeded";
  else if (WIFSIGNALED(status)) why = fmt::format("crashed ({})", strsignal(WTERMSIG(status)));
  else if (WIFEXITED(status) && WEXITSTATUS(status) == kExitOom)
    why = fmt::format("out of memory (limit {} MiB)", lim.memory_bytes >> 20);
  else why = fmt::format("failed (exit status {})", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  JobReply r = died_reply(job, last, why);
  return {{"status", r.status}, {"body", r.body}};
}

}  // namespace

int worker_main(int in_fd, int out_fd, const JobConfig& config, const WorkerLimits& limits) {
  signal(SIGPIPE, SIG_IGN);
  // The server handles SIGINT/SIGTERM and stops its workers by closing their pipes.
  signal(SIGINT, SIG_IGN);
  signal(SIGTERM, SIG_IGN);
  bool isolated = unshare(CLONE_NEWNET) == 0;
  if (!write_frame(out_fd, 'H', json{{"network_isolated", isolated}}.dump())) return 1;
  while (auto f = read_frame(in_fd)) {
    json job = json::parse(f->payload, nullptr, false);
    json reply = job.is_discarded() ? json{{"status", 400}, {"body", {{"error", "malformed job"}}}}
                                    : run_sandboxed_job(job, config, limits);
    if (!write_frame(out_fd, 'R', reply.dump())) return 1;
  }
  return 0;
}

}  // namespace steptp::serve
