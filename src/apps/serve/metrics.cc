// Prometheus text exposition (see metrics.h).
#include "apps/serve/metrics.h"

#include <fmt/format.h>

namespace steptp::serve {

const std::vector<double>& Metrics::buckets() {
  static const std::vector<double> b = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
  return b;
}

void Metrics::request(const std::string& endpoint, int status, double seconds) {
  std::lock_guard lk(mu_);
  requests_[{endpoint, status}]++;
  auto& h = latency_[endpoint];
  if (h.counts.empty()) h.counts.assign(buckets().size(), 0);
  for (size_t i = 0; i < buckets().size(); ++i)
    if (seconds <= buckets()[i]) {
      h.counts[i]++;
      break;
    }
  h.sum += seconds;
  h.n++;
}

void Metrics::failed_stage(const std::string& stage) {
  std::lock_guard lk(mu_);
  failures_[stage]++;
}

void Metrics::job_failure(const std::string& kind) {
  std::lock_guard lk(mu_);
  job_failures_[kind]++;
}

std::string Metrics::text(const Gauges& g) const {
  std::lock_guard lk(mu_);
  std::string s;
  s += "# HELP steptp_requests_total HTTP requests by endpoint and status code.\n"
       "# TYPE steptp_requests_total counter\n";
  for (const auto& [k, v] : requests_)
    s += fmt::format("steptp_requests_total{{endpoint=\"{}\",code=\"{}\"}} {}\n", k.first, k.second, v);
  s += "# HELP steptp_request_duration_seconds Request latency by endpoint.\n"
       "# TYPE steptp_request_duration_seconds histogram\n";
  for (const auto& [ep, h] : latency_) {
    long cum = 0;
    for (size_t i = 0; i < buckets().size(); ++i) {
      cum += h.counts[i];
      s += fmt::format("steptp_request_duration_seconds_bucket{{endpoint=\"{}\",le=\"{}\"}} {}\n", ep, buckets()[i], cum);
    }
    s += fmt::format("steptp_request_duration_seconds_bucket{{endpoint=\"{}\",le=\"+Inf\"}} {}\n", ep, h.n);
    s += fmt::format("steptp_request_duration_seconds_sum{{endpoint=\"{}\"}} {}\n", ep, h.sum);
    s += fmt::format("steptp_request_duration_seconds_count{{endpoint=\"{}\"}} {}\n", ep, h.n);
  }
  s += "# HELP steptp_score_answers_total Scored answers by the funnel stage they failed (passed: none).\n"
       "# TYPE steptp_score_answers_total counter\n";
  for (const auto& [stage, v] : failures_)
    s += fmt::format("steptp_score_answers_total{{failed_stage=\"{}\"}} {}\n", stage, v);
  s += "# HELP steptp_job_failures_total Jobs that failed for the service's reasons, by kind (not scored).\n"
       "# TYPE steptp_job_failures_total counter\n";
  for (const auto& [kind, v] : job_failures_)
    s += fmt::format("steptp_job_failures_total{{kind=\"{}\"}} {}\n", kind, v);
  s += fmt::format(
      "# HELP steptp_requests_abandoned_total Jobs that left the queue because their client had gone.\n"
      "# TYPE steptp_requests_abandoned_total counter\nsteptp_requests_abandoned_total {}\n"
      "# HELP steptp_connection_threads HTTP connection threads (busy ones serve a connection).\n"
      "# TYPE steptp_connection_threads gauge\nsteptp_connection_threads{{state=\"all\"}} {}\n"
      "steptp_connection_threads{{state=\"busy\"}} {}\n"
      "# HELP steptp_oldest_job_seconds Age of the longest-running job.\n"
      "# TYPE steptp_oldest_job_seconds gauge\nsteptp_oldest_job_seconds {}\n",
      g.cancelled, g.connection_threads, g.connections_busy, g.oldest_job_s);
  s += fmt::format(
      "# HELP steptp_queue_depth Jobs admitted and waiting for a worker.\n# TYPE steptp_queue_depth gauge\n"
      "steptp_queue_depth {}\n"
      "# HELP steptp_jobs_running Jobs running on a worker.\n# TYPE steptp_jobs_running gauge\nsteptp_jobs_running {}\n"
      "# HELP steptp_workers Worker processes.\n# TYPE steptp_workers gauge\nsteptp_workers {}\n"
      "# HELP steptp_worker_restarts_total Worker processes replaced after dying.\n"
      "# TYPE steptp_worker_restarts_total counter\nsteptp_worker_restarts_total {}\n",
      g.queued, g.running, g.workers, g.restarts);
  return s;
}

}  // namespace steptp::serve
