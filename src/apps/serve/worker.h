// A worker process of `steptp serve` (started as `steptp serve-worker` by the server, so it
// begins single-threaded and clean): it reads jobs from a pipe and runs each in a sandboxed
// child (backend::cpu::fork_limited: address-space limit, no core files) with further rlimits
// (CPU seconds, open files, file size) and a wall-clock watchdog. The worker itself runs no
// request code, so a child that crashes, hangs or exhausts its memory becomes a reply
// (jobs.h died_reply) and the worker takes the next job. At start the worker enters a new network
// namespace when it may (root or CAP_SYS_ADMIN), so jobs have no network; /health reports it.
// With a sandbox directory the job child also runs under the job profile of lower/sandbox
// (its own PID and mount namespaces, a pids cgroup, a private job directory, Landlock, an
// unprivileged uid, seccomp) and the kernels it runs under the kernel-run profile; at start the
// worker probes which layers this machine grants and reports them in its hello.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "apps/serve/jobs.h"

namespace steptp::serve {

struct WorkerLimits {
  double job_timeout_s = 30;       // wall time of a job, not counting waits for the machine lock
  double measure_timeout_s = 120;  // wall time once the machine lock is held
  int64_t memory_bytes = int64_t{4} << 30;  // address space a job may add
  int max_open_files = 256;
  int64_t max_file_bytes = int64_t{1} << 30;
  // The sandbox (empty: jobs run as the worker's user, unconfined beyond the limits above): a
  // directory owned by the server with "kernels" (the jobs' kernel cache, owned by the sandbox
  // uid) beneath it, and the job directories the worker makes there.
  std::string sandbox_dir;
  uid_t sandbox_uid = 65534, sandbox_gid = 65534;  // nobody, nogroup
  int max_pids = 128;            // tasks (processes and threads) of one job
  bool require_sandbox = false;  // refuse to start (hello 'error') unless every layer applies
};

// Job frames ('J') in, reply frames ('R': {"status", "body"}) out, until end of input. The first
// frame out is 'H' (hello: {"network_isolated": bool, "sandbox": LayerReport::to_json(), and
// "error" when the worker refuses to run).
int worker_main(int in_fd, int out_fd, const JobConfig& config, const WorkerLimits& limits);

}  // namespace steptp::serve
