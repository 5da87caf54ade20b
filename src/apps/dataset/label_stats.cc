// Label and split stats.json fields (see label_stats.h).
#include "apps/dataset/label_stats.h"

#include <algorithm>
#include <cmath>
#include <iterator>

namespace steptp::dataset {

using nlohmann::json;

json quantiles(std::vector<double> v) {
  if (v.empty()) return json::object();
  std::sort(v.begin(), v.end());
  auto q = [&](double p) { return v[size_t(std::floor(p * double(v.size() - 1)))]; };
  return {{"min", v.front()}, {"p25", q(0.25)}, {"median", q(0.5)}, {"p75", q(0.75)}, {"max", v.back()},
          {"count", v.size()}};
}

void LabelStats::add(const json& r) {
  for (const auto& a : r["answers"]) {
    const json& k = a["cost"];
    answers_++;
    labels_[a["label"].get<std::string>()]++;
    if (k.value("measured", false) && k.contains("vs_parent")) {
      const json& p = k["vs_parent"]["parent"];
      const json& q = k["vs_parent"]["result"];
      const double cv = std::max(p["cv"].get<double>(), q["cv"].get<double>());
      measured_++;
      cv_.push_back(cv);
      cv_above_005_ += cv > 0.05;
      cv_above_01_ += cv > 0.1;
      repeats_.push_back(double(std::min(p["repeats"].get<int>(), q["repeats"].get<int>())));
    }
    if (k.contains("speedup_ci")) {
      const double lo = k["speedup_ci"][0].get<double>(), hi = k["speedup_ci"][1].get<double>();
      with_ci_++;
      ci_low_.push_back(lo);
      ci_high_.push_back(hi);
      ci_contains_1_ += lo <= 1 && 1 <= hi;
    }
    if (k.contains("noise_verdict")) verdicts_[k["noise_verdict"].get<std::string>()]++;
  }
}

json LabelStats::to_json() const {
  json histogram = json::array();
  const size_t buckets = std::size(kCvBucketEdges);
  for (size_t b = 0; b < buckets; ++b) {
    const double from = kCvBucketEdges[b];
    const bool last = b + 1 == buckets;
    const auto n = std::count_if(cv_.begin(), cv_.end(),
                                 [&](double cv) { return cv >= from && (last || cv < kCvBucketEdges[b + 1]); });
    histogram.push_back({{"from", from}, {"to", last ? json(nullptr) : json(kCvBucketEdges[b + 1])}, {"comparisons", n}});
  }
  return {{"answers", answers_},
          {"labels", labels_},
          {"measured", measured_},
          {"comparison_cv", quantiles(cv_)},
          {"cv_above", {{"0.05", cv_above_005_}, {"0.1", cv_above_01_}}},
          {"cv_histogram", histogram},
          {"repeats", quantiles(repeats_)},
          {"with_ci", with_ci_},
          {"ci_low", quantiles(ci_low_)},
          {"ci_high", quantiles(ci_high_)},
          {"ci_contains_1", ci_contains_1_},
          {"noise_verdicts", verdicts_}};
}

void EvalCoverage::add(const json& r) {
  const bool eval = r.value("split", "train") == "eval";
  Family& f = families_[r["root"]["family"].get<std::string>()];
  f.roots[eval].insert(r["root"]["key"].get<std::string>());
  f.records[eval]++;
}

json EvalCoverage::to_json() const {
  json per_family = json::object();
  int in_eval = 0;
  for (const auto& [name, f] : families_) {
    const char* held = f.roots[1].empty() ? "none" : f.roots[0].empty() ? "family" : "roots";
    in_eval += !f.roots[1].empty();
    per_family[name] = {{"train_roots", f.roots[0].size()}, {"eval_roots", f.roots[1].size()},
                        {"train_records", f.records[0]}, {"eval_records", f.records[1]}, {"held_out", held}};
  }
  return {{"families", families_.size()}, {"families_in_eval", in_eval}, {"per_family", per_family}};
}

}  // namespace steptp::dataset
