// Service metrics in the Prometheus text format (/metrics): requests by endpoint and status
// (429 rejections, 413 limits, 401 included), latency histograms by endpoint, queue depth and
// running jobs, jobs that failed for the service's reasons (time-out, crash, out of memory, CPU
// limit, machine busy, worker died) by kind, requests abandoned by their clients, connection
// threads, worker restarts, and scored answers by the funnel stage where they failed.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace steptp::serve {

// Values read at exposition time.
struct Gauges {
  int queued = 0, running = 0, restarts = 0, workers = 0;
  int cancelled = 0;                  // jobs that left the queue because their client had gone
  size_t connection_threads = 0, connections_busy = 0;
  double oldest_job_s = 0;            // age of the longest-running job
};

class Metrics {
 public:
  void request(const std::string& endpoint, int status, double seconds);
  void failed_stage(const std::string& stage);  // "passed" for an answer that passed every stage
  // A job that failed for a reason of the service, not of its request: "timeout", "crash",
  // "out_of_memory", "cpu_limit", "machine_busy", "worker_died", ...
  void job_failure(const std::string& kind);
  std::string text(const Gauges& g) const;

 private:
  static const std::vector<double>& buckets();
  struct Histogram {
    std::vector<long> counts;  // per bucket (cumulative on output)
    double sum = 0;
    long n = 0;
  };
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, long> requests_;
  std::map<std::string, Histogram> latency_;
  std::map<std::string, long> failures_;
  std::map<std::string, long> job_failures_;
};

}  // namespace steptp::serve
