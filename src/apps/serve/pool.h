// The server's side of its worker processes (worker.h): W workers started as
// `EXE serve-worker ARGS...`, admission of jobs by class (a bounded number in flight per class
// and a bounded queue of jobs waiting for a worker), and a respawn when a worker dies (which only
// happens if the worker itself fails; a job's crash is its child's). Each worker's hello reports
// its sandbox layers; the pool keeps the weakest (a layer counts as applied only where every
// worker applied it) and logs it at start.
#pragma once

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lower/sandbox/layers.h"

namespace steptp::serve {

// Jobs that may time kernels (measure, score) hold the machine for seconds each and serialize on
// its timing lock: they get a bound of their own, so a flood of them cannot take every place
// from the quick ones (check, verify, apply, lower), which are bounded by the queue alone.
enum class JobClass : uint8_t { Quick, Machine };

class WorkerPool {
 public:
  // `argv`: the worker command line (argv[0] is the executable path). At most `queue_capacity`
  // admitted jobs wait for a worker, and at most `machine_inflight` Machine jobs are admitted
  // (waiting or running) at once. Throws base::Error (Failed) when a worker cannot start or refuses
  // to (its hello's "error": --require-sandbox).
  WorkerPool(std::vector<std::string> argv, int workers, int queue_capacity, int machine_inflight);
  ~WorkerPool();  // shutdown(0)
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Reserves places for n jobs of class `c`: false (nothing reserved) when the queue has fewer
  // than n free places, the class's bound would be passed, or the pool is shutting down.
  bool admit(int n, JobClass c);
  // Runs an admitted job: {"status", "body"}. Blocks until a worker is free and has answered.
  // While the job waits for a worker, `abandoned()` is asked every few milliseconds; once it is
  // true the job leaves the queue unrun ({"status": 499}). A job still waiting when shutdown
  // begins is answered 503.
  nlohmann::json run(const nlohmann::json& job, JobClass c, const std::function<bool()>& abandoned = {});

  int queued() const;   // admitted jobs waiting for a worker
  int running() const;  // jobs on a worker now
  int restarts() const;
  int cancelled() const;           // jobs that left the queue because their client had gone
  double oldest_running_s() const; // how long the longest-running job has run (0: none)
  int workers() const { return int(slots_.size()); }
  bool stopping() const;  // shutdown has begun
  bool network_isolated() const;
  // /health's view of the sandbox: {"enabled", "layers": {layer: bool}, "missing": {layer: why}}.
  nlohmann::json sandbox() const;
  // /metrics: steptp_sandbox_enabled and steptp_sandbox_layer{layer} (1 applied, 0 not).
  std::string sandbox_metrics() const;
  // Stops admitting, answers the queued jobs 503, waits up to `grace_s` for the running ones,
  // then stops the workers (closing their pipes; a worker still busy is killed, and its job's
  // request is answered 503).
  void shutdown(double grace_s);

 private:
  struct Slot {
    pid_t pid = -1;
    int to = -1, from = -1;  // pipe ends: jobs to the worker, replies from it
    bool busy = false;
    int64_t started_ms = 0;  // when its current job started
  };
  void spawn(Slot& s);  // (re)starts the worker of a slot; throws base::Error (Failed)
  void stop(Slot& s);

  std::vector<std::string> argv_;
  int capacity_, machine_capacity_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Slot> slots_;
  int queued_ = 0, running_ = 0, restarts_ = 0, cancelled_ = 0;
  int machine_inflight_ = 0;  // admitted Machine jobs not yet finished
  bool isolated_ = true;
  bool stopping_ = false;  // no admission; queued jobs get 503
  bool sandboxed_ = true;  // every worker reported a sandbox
  backend::sandbox::LayerReport layers_;
  bool stopped_ = false;
};

}  // namespace steptp::serve
