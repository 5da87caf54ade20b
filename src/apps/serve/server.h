// `steptp serve`: the HTTP/JSON verification and reward service (docs/openapi.yaml, docs/serve.md).
// Requests are checked here before any work (API key, body size also when chunked, JSON depth
// and syntax with line:col) and run as jobs on worker processes (pool.h, worker.h), which check
// the programs' limits (limits.h). Admission is bounded per job class and by the queue of jobs
// waiting for a worker (429 with Retry-After at once when full); connections get threads on
// demand (connection_pool.h), so /health and over-capacity answers are never stuck behind slow
// requests; a queued job whose client has gone leaves the queue. SIGTERM or SIGINT stops
// accepting, answers queued jobs 503, gives running ones a bounded grace, stops the workers and
// returns.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "apps/serve/limits.h"

namespace steptp::serve {

struct ServeOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                     // 0: any free port (reported through on_listening)
  int workers = 2;                     // worker processes (jobs run in parallel)
  int queue = 64;                      // jobs that may wait for a worker
  int machine_inflight = 0;            // measure/score jobs admitted at once (0: 2 * workers + 2)
  int threads = 64;                    // HTTP connection threads kept ready
  int max_connections = 1024;          // connections served at once (threads started on demand)
  int read_timeout_s = 5;              // a client that sends nothing for this long is dropped
  RequestLimits limits;                // body and JSON depth are checked by the server
  int max_batch = 64;                  // items of /v1/score/batch
  std::string api_key;                 // non-empty: /v1 and /metrics need "Authorization: Bearer KEY"
  bool insecure = false;               // allow a non-loopback address without an API key
  double shutdown_grace_s = 10;        // running jobs' time to finish after SIGTERM
  double wedged_after_s = 0;           // /health: a job running longer is a wedged pool (0: never)
  std::vector<std::string> worker_argv;  // how to start a worker (argv[0] = executable)
};

// Whether `host` is a loopback address (127.0.0.0/8, ::1, localhost): binding anything else
// needs an API key unless `insecure`.
bool is_loopback(const std::string& host);

// Serves until SIGTERM/SIGINT; returns the exit code. Throws base::Error: Failed when the
// address cannot be bound or the workers cannot start, BadRequest for a non-loopback address
// without an API key (or --insecure).
int run_server(const ServeOptions& o, const std::function<void(const std::string& url)>& on_listening);

}  // namespace steptp::serve
