// The server's side of its worker processes (worker.h): W workers started as
// `EXE serve-worker ARGS...`, a bounded queue of jobs waiting for one, and a respawn when a
// worker dies (which only happens if the worker itself fails; a job's crash is its child's).
// Each worker's hello reports its sandbox layers; the pool keeps the weakest (a layer counts as
// applied only where every worker applied it) and logs it at start.
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/sandbox/layers.h"

namespace steptp::serve {

class WorkerPool {
 public:
  // `argv`: the worker command line (argv[0] is the executable path). Throws std::runtime_error
  // when a worker cannot start or refuses to (its hello's "error": --require-sandbox).
  WorkerPool(std::vector<std::string> argv, int workers, int queue_capacity);
  ~WorkerPool();  // shutdown()
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Reserves places for n jobs: false (nothing reserved) when the queue has fewer than n free.
  bool admit(int n);
  // Runs an admitted job: {"status", "body"}. Blocks until a worker is free and has answered.
  nlohmann::json run(const nlohmann::json& job);

  int queued() const;   // admitted jobs waiting for a worker
  int running() const;  // jobs on a worker now
  int restarts() const;
  int workers() const { return int(slots_.size()); }
  bool network_isolated() const;
  // /health's view of the sandbox: {"enabled", "layers": {layer: bool}, "missing": {layer: why}}.
  nlohmann::json sandbox() const;
  // /metrics: steptp_sandbox_enabled and steptp_sandbox_layer{layer} (1 applied, 0 not).
  std::string sandbox_metrics() const;
  // Waits for running jobs, then stops the workers (closes their pipes).
  void shutdown();

 private:
  struct Slot {
    pid_t pid = -1;
    int to = -1, from = -1;  // pipe ends: jobs to the worker, replies from it
    bool busy = false;
  };
  void spawn(Slot& s);  // (re)starts the worker of a slot; throws std::runtime_error
  void stop(Slot& s);

  std::vector<std::string> argv_;
  int capacity_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Slot> slots_;
  int queued_ = 0, running_ = 0, restarts_ = 0;
  bool isolated_ = true;
  bool sandboxed_ = true;  // every worker reported a sandbox
  backend::sandbox::LayerReport layers_;
  bool stopped_ = false;
};

}  // namespace steptp::serve
