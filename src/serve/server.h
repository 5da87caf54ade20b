// `steptp serve`: the HTTP/JSON verification and reward service (docs/openapi.yaml, docs/serve.md).
// Requests are parsed here (size limit, JSON syntax with line:col) and run as jobs on worker
// processes (pool.h, worker.h); the queue of jobs waiting for a worker is bounded (429 with
// Retry-After when full). SIGTERM or SIGINT stops accepting, finishes in-flight requests, stops
// the workers and returns.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace steptp::serve {

struct ServeOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                     // 0: any free port (reported through on_listening)
  int workers = 2;                     // worker processes (jobs run in parallel)
  int queue = 64;                      // jobs that may wait for a worker
  int threads = 64;                    // HTTP connection threads
  size_t max_body_bytes = size_t{4} << 20;
  int max_batch = 64;                  // items of /v1/score/batch
  std::vector<std::string> worker_argv;  // how to start a worker (argv[0] = executable)
};

// Serves until SIGTERM/SIGINT; returns the exit code. Throws std::runtime_error when the address
// cannot be bound or the workers cannot start.
int run_server(const ServeOptions& o, const std::function<void(const std::string& url)>& on_listening);

}  // namespace steptp::serve
