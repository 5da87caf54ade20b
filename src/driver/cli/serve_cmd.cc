// steptp serve [--host 127.0.0.1] [--port N] [--workers W] ...: the verification and reward
// service (docs/serve.md, docs/openapi.yaml). `steptp serve-worker` is its worker process,
// started by the server itself with the same job settings (not meant to be run by hand).
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "base/error.h"
#include "driver/cli/command.h"
#include "apps/reward/timing.h"
#include "apps/serve/server.h"
#include "apps/serve/worker.h"
#include "search/tune/timing_lock.h"

namespace steptp::cli {
namespace {

// The service's own timing lock (tune::use_private_timing_lock): under $XDG_RUNTIME_DIR (the
// user's private runtime directory) when set, else in ~/.cache/steptp/serve.
std::string default_timing_lock() {
  if (const char* run = std::getenv("XDG_RUNTIME_DIR"); run && *run) return std::string(run) + "/steptp/timing.lock";
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : "/tmp") + "/.cache/steptp/serve/timing.lock";
}

struct JobSettings {
  serve::JobConfig config;
  serve::WorkerLimits limits;
  int64_t memory_mib = 4096;
  double lock_wait_s = -1;  // < 0: the job timeout
  std::string timing_lock;  // "": $STEPTP_TIMING_LOCK, else default_timing_lock()

  void add(CLI::App& sub) {
    auto& rl = config.limits;
    sub.add_option("--max-program-bytes", rl.max_program_bytes, "bytes of one program's text or JSON form (default 1 MiB)")
        ->check(CLI::Range(int64_t{64}, int64_t{1} << 30));
    sub.add_option("--max-statements", rl.max_statements, "statements of one program (default 10000)")
        ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
    sub.add_option("--max-nest-iterations", rl.max_nest_iterations,
                   "iterations of one loop nest, nested nests included (default 2^34)")
        ->check(CLI::Range(int64_t{1}, int64_t{1} << 62));
    sub.add_option("--max-tensor-elements", rl.max_tensor_elements, "elements of any one tensor (default 2^28)")
        ->check(CLI::Range(int64_t{1}, int64_t{1} << 62));
    sub.add_option("--max-total-bytes", rl.max_total_bytes, "bytes of all tensors of a program (default 2 GiB)")
        ->check(CLI::Range(int64_t{1}, int64_t{1} << 62));
    sub.add_option("--job-timeout", limits.job_timeout_s, "seconds a job may run (waits for the machine excluded)")
        ->check(CLI::Range(0.1, 3600.0));
    sub.add_option("--measure-timeout", limits.measure_timeout_s, "seconds a job may run once it holds the machine")
        ->check(CLI::Range(0.1, 3600.0));
    sub.add_option("--memory-limit", memory_mib, "MiB of address space a job may add (default 4096)")
        ->check(CLI::Range(64, 1 << 20));
    sub.add_option("--measure-threads", config.measure_threads, "OpenMP threads of timed kernels (default 1)")
        ->check(CLI::Range(1, 1024));
    sub.add_option("--measure-min-time", config.measure_min_time, "seconds per interleaved comparison (default 0.01)")
        ->check(CLI::Range(0.001, 10.0));
    sub.add_option("--peaks", config.peaks_path,
                   "machine peaks cache (default ~/.cache/steptp/peaks.json; 'none': no implausibility check)");
    sub.add_option("--lock-wait", lock_wait_s,
                   "seconds a job may wait for the machine's timing lock before failing as busy (default: --job-timeout)")
        ->check(CLI::Range(0.0, 3600.0));
    sub.add_option("--timing-lock", timing_lock,
                   "the service's timing lock file, made private (mode 0600); default $STEPTP_TIMING_LOCK, else "
                   "$XDG_RUNTIME_DIR/steptp/timing.lock or ~/.cache/steptp/serve/timing.lock; 'none': no lock");
    sub.add_flag("--fault-injection", config.fault_injection,
                 "TESTS ONLY: honour a score request's \"fault\" (crash, hang, oom in the sandbox)");
    sub.add_flag("--require-sandbox", limits.require_sandbox,
                 "refuse to start unless every sandbox layer applies (docs/serve.md, Isolation)");
    sub.add_option("--max-pids", limits.max_pids,
                   "processes and threads one job may hold (default 128; at least --measure-threads + 64)")
        ->check(CLI::Range(16, 1 << 20));
    sub.add_option("--sandbox-uid", limits.sandbox_uid, "uid jobs run as (default 65534, nobody)");
    sub.add_option("--sandbox-gid", limits.sandbox_gid, "gid jobs run as (default 65534, nogroup)");
  }
  void resolve() {
    limits.memory_bytes = memory_mib << 20;
    // The timed kernel's OpenMP threads count as tasks too, beside the job, compilers and children.
    limits.max_pids = std::max(limits.max_pids, config.measure_threads + 64);
    if (config.peaks_path == "none") config.peaks_path.clear();
    config.lock_wait_s = lock_wait_s < 0 ? limits.job_timeout_s : lock_wait_s;
  }
  // After the sandbox directory is known: without --timing-lock or $STEPTP_TIMING_LOCK the lock
  // lives there (the sandbox uid could not reach a file under the server user's home), and with
  // the sandbox the files belong to the sandbox uid, which takes the lock in its jobs.
  void install_timing_lock() {
    if (timing_lock.empty()) {
      const char* env = std::getenv("STEPTP_TIMING_LOCK");
      timing_lock = env && *env              ? env
                    : limits.sandbox_dir.empty() ? default_timing_lock()
                                               : limits.sandbox_dir + "/timing.lock";
    }
    std::optional<unsigned> owner;
    if (!limits.sandbox_dir.empty() && geteuid() == 0) owner = limits.sandbox_uid;
    tune::use_private_timing_lock(timing_lock == "none" ? "" : timing_lock, owner);
  }
  std::vector<std::string> argv() const {
    std::vector<std::string> a = {"--job-timeout", std::to_string(limits.job_timeout_s),
                                  "--measure-timeout", std::to_string(limits.measure_timeout_s),
                                  "--memory-limit", std::to_string(memory_mib),
                                  "--measure-threads", std::to_string(config.measure_threads),
                                  "--measure-min-time", std::to_string(config.measure_min_time),
                                  "--peaks", config.peaks_path.empty() ? "none" : config.peaks_path,
                                  "--lock-wait", std::to_string(config.lock_wait_s),
                                  "--timing-lock", timing_lock};
    for (auto& x : config.limits.to_args()) a.push_back(x);
    if (config.fault_injection) a.push_back("--fault-injection");
    a.insert(a.end(), {"--max-pids", std::to_string(limits.max_pids), "--sandbox-uid",
                       std::to_string(limits.sandbox_uid), "--sandbox-gid", std::to_string(limits.sandbox_gid)});
    if (limits.require_sandbox) a.push_back("--require-sandbox");
    if (!limits.sandbox_dir.empty()) a.insert(a.end(), {"--sandbox-dir", limits.sandbox_dir});
    return a;
  }
};

std::string default_peaks_path() {
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : "/tmp") + "/.cache/steptp/peaks.json";
}

// The server's sandbox directory (worker.h WorkerLimits::sandbox_dir), removed when the server
// exits: 0711, so the sandbox uid reaches only what is handed to it beneath; "kernels" (the jobs'
// kernel cache, which the compiler writes as that uid) and a read-only copy of the machine peaks
// cache, measured here as the server's user first when missing: a job could neither read the
// server's own cache (under a private home) nor be trusted to write it.
class SandboxDir {
 public:
  SandboxDir(serve::JobConfig& config, serve::WorkerLimits& limits) {
    namespace fs = std::filesystem;
    std::string tmpl = (fs::temp_directory_path() / "steptp-serve-XXXXXX").string();
    if (!mkdtemp(tmpl.data()))
      throw base::Error(base::ErrorKind::Failed, "cannot create the sandbox directory in " + tmpl);
    path_ = tmpl;
    chmod(path_.c_str(), 0711);
    const std::string kernels = path_ + "/kernels";
    if (mkdir(kernels.c_str(), 0700) != 0 ||
        (geteuid() == 0 && chown(kernels.c_str(), limits.sandbox_uid, limits.sandbox_gid) != 0))
      throw base::Error(base::ErrorKind::Failed, "cannot prepare the jobs' kernel cache " + kernels);
    if (!config.peaks_path.empty()) {
      {
        tune::TimedSection timed(config.measure_threads);
        reward::cached_peaks(config.peaks_path, config.measure_threads);
      }
      const std::string copy = path_ + "/peaks.json";
      fs::copy_file(config.peaks_path, copy);
      chmod(copy.c_str(), 0644);
      config.peaks_path = copy;
    }
    limits.sandbox_dir = path_;
  }
  ~SandboxDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  SandboxDir(const SandboxDir&) = delete;
  SandboxDir& operator=(const SandboxDir&) = delete;

 private:
  std::string path_;
};

std::string self_exe() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) throw base::Error(base::ErrorKind::Failed, "cannot find the steptp executable (/proc/self/exe)");
  return std::string(buf, size_t(n));
}

RegisterCommand serve_cmd{{"serve", "HTTP verification and reward service for RL training", [](CLI::App& sub) {
  auto o = std::make_shared<serve::ServeOptions>();
  auto js = std::make_shared<JobSettings>();
  js->config.peaks_path = default_peaks_path();
  o->workers = int(std::max(1u, std::thread::hardware_concurrency()));
  sub.add_option("--host", o->host, "address to bind (default 127.0.0.1)");
  sub.add_option("--port", o->port, "TCP port (default 8080; 0: any free port, printed)")->check(CLI::Range(0, 65535));
  sub.add_option("--workers", o->workers, "worker processes (default: the number of CPUs)")->check(CLI::Range(1, 256));
  sub.add_option("--queue", o->queue, "jobs that may wait for a worker before 429 (default 64)")
      ->check(CLI::Range(1, 100000));
  sub.add_option("--max-inflight-measure", o->machine_inflight,
                 "measure/score jobs admitted at once, waiting or running (default 2 * workers + 2; more: 429)")
      ->check(CLI::Range(1, 100000));
  sub.add_option("--threads", o->threads, "HTTP connection threads kept ready (default 64)")->check(CLI::Range(4, 4096));
  sub.add_option("--max-connections", o->max_connections,
                 "connections served at once; threads start on demand up to it (default 1024)")
      ->check(CLI::Range(4, 65536));
  sub.add_option("--read-timeout", o->read_timeout_s, "seconds a client may send nothing before it is dropped (default 5)")
      ->check(CLI::Range(1, 600));
  sub.add_option("--max-body", o->limits.max_body_bytes, "request body limit in bytes, chunked or not (default 4 MiB; larger: 413)")
      ->check(CLI::Range(int64_t{1024}, int64_t{1} << 30));
  sub.add_option("--max-json-depth", o->limits.max_json_depth, "nesting of a request body's JSON (default 64; deeper: 400)")
      ->check(CLI::Range(4, 10000));
  sub.add_option("--api-key", o->api_key,
                 "require 'Authorization: Bearer KEY' on /v1 and /metrics (default: $STEPTP_API_KEY; needed for a "
                 "non-loopback --host)");
  sub.add_flag("--insecure", o->insecure, "serve a non-loopback address without an API key");
  sub.add_option("--shutdown-grace", o->shutdown_grace_s,
                 "seconds running jobs may finish after SIGTERM before they are stopped (default 10)")
      ->check(CLI::Range(0.0, 3600.0));
  auto no_sandbox = std::make_shared<bool>(false);
  sub.add_flag("--no-sandbox", *no_sandbox,
               "run jobs without the sandbox (rlimits and the network namespace only; to measure its cost)");
  js->add(sub);
  return [o, js, no_sandbox]() -> int {
    js->resolve();
    if (o->api_key.empty())
      if (const char* k = std::getenv("STEPTP_API_KEY")) o->api_key = k;
    // Every deadline a worker enforces has passed for a job older than this: its worker is stuck.
    o->wedged_after_s = js->limits.job_timeout_s + js->limits.measure_timeout_s + 30;
    if (*no_sandbox && js->limits.require_sandbox)
      throw base::Error(base::ErrorKind::BadRequest, "--no-sandbox contradicts --require-sandbox");
    std::optional<SandboxDir> dir;
    if (!*no_sandbox) dir.emplace(js->config, js->limits);
    js->install_timing_lock();
    o->worker_argv = {self_exe(), "serve-worker"};
    for (auto& a : js->argv()) o->worker_argv.push_back(a);
    return serve::run_server(*o, [](const std::string& url) {
      std::cout << "steptp serve: listening on " << url << std::endl;
    });
  };
}}};

RegisterCommand worker_cmd{{"serve-worker", "internal: a worker process of `steptp serve` (jobs on stdin)",
                            [](CLI::App& sub) {
  auto js = std::make_shared<JobSettings>();
  js->add(sub);
  sub.add_option("--sandbox-dir", js->limits.sandbox_dir, "the server's sandbox directory (none: no sandbox)");
  return [js]() -> int {
    js->resolve();
    js->install_timing_lock();
    return serve::worker_main(0, 1, js->config, js->limits);
  };
}}};

}  // namespace
}  // namespace steptp::cli
