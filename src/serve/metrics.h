// Service metrics in the Prometheus text format (/metrics): requests by endpoint and status,
// latency histograms by endpoint, queue depth and running jobs, 429 rejections, worker
// restarts, and scored answers by the funnel stage where they failed.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace steptp::serve {

class Metrics {
 public:
  void request(const std::string& endpoint, int status, double seconds);
  void failed_stage(const std::string& stage);  // "passed" for an answer that passed every stage
  // The exposition text; gauges are read at call time.
  std::string text(int queued, int running, int restarts, int workers) const;

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
};

}  // namespace steptp::serve
