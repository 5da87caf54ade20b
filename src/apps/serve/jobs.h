// What each /v1 endpoint does with its request, run inside a sandboxed child of a worker
// process (worker.h): it decodes the request, calls the command layer (apps/api/api.h) and
// encodes the reply. A job is {"endpoint", "request", "verify_seed", "input_seed"}; the server
// draws both seeds fresh per request, so answers cannot be fitted to known inputs.
//
// Replies carry an HTTP status: 200, 400 (a request field missing or of the wrong type/range,
// named), 413 (a program over a size limit, limits.h: "error", "limit", "field", "max"), 422 (a
// program that does not parse or validate: "error", "field", "line", "col"; or a program whose
// processing crashed, timed out or ran out of memory), 503 (the machine stayed busy for the whole
// lock wait: "error", "failure": "machine busy"). Scoring never answers 422
// for the answer itself: a bad answer is a scored failure.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "apps/serve/limits.h"

namespace steptp::serve {

struct JobConfig {
  bool fault_injection = false;  // honour a score request's "fault" (tests only; off by default)
  std::string peaks_path;        // machine peaks cache (apps/reward/timing.h); empty: no implausibility check
  int measure_threads = 1;       // OpenMP threads of timed kernels (recorded in every measurement)
  double measure_min_time = 0.01;
  double pair_timeout_s = 20;    // a timed comparison taking longer fails
  RequestLimits limits;          // the program limits apply here (the server checks body and depth)
  // Seconds one wait for the machine's timing lock may last (serve: --lock-wait, default
  // --job-timeout); then the job fails as an infrastructure failure (tune::LockTimeout; /v1/measure
  // answers 503), so a held lock cannot hold a job forever.
  double lock_wait_s = 30;
};

struct JobReply {
  int status = 200;
  nlohmann::json body;
};

// Messages a running job sends to its supervisor besides the reply.
enum class Notice : char { Progress = 'P', WaitingForMachine = 'W', HoldingMachine = 'G' };
using Notify = std::function<void(Notice, const nlohmann::json&)>;

JobReply run_job(const nlohmann::json& job, const JobConfig& config, const Notify& notify);

// The reply of a job whose child died (`reason`: "crashed (Segmentation fault)", "timed out after
// 30 s", ...) given its last progress report: for /v1/score a scored failure when it died while
// the answer's kernel ran, else "no score" (reward null, "infrastructure_failure"); 422 otherwise.
JobReply died_reply(const nlohmann::json& job, const std::optional<nlohmann::json>& last_progress,
                    const std::string& reason);

}  // namespace steptp::serve
