// Record-level stats.json fields (see record_stats.h).
#include "dataset/record_stats.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace steptp::dataset {

using nlohmann::json;

namespace {
json share_json(int single, int improving, int enabling) {
  return {{"single", single},
          {"improving", improving},
          {"enabling", enabling},
          {"share", single ? std::round(1e4 * improving / single) / 1e4 : 0.0}};
}
}  // namespace

json quantiles(std::vector<double> v) {
  if (v.empty()) return json::object();
  std::sort(v.begin(), v.end());
  auto q = [&](double p) { return v[size_t(std::floor(p * double(v.size() - 1)))]; };
  return {{"min", v.front()}, {"p25", q(0.25)}, {"median", q(0.5)}, {"p75", q(0.75)}, {"max", v.back()},
          {"count", v.size()}};
}

void RecordStats::add(const json& r) {
  const bool eval = r.value("split", "train") == "eval";
  Coverage& c = coverage_[r["root"]["family"].get<std::string>()];
  c.roots[eval].insert(r["root"]["key"].get<std::string>());
  c.records[eval]++;
  for (const auto& a : r["answers"]) {
    Labels& l = labels_;
    const json& k = a["cost"];
    l.answers++;
    l.labels[a["label"].get<std::string>()]++;
    if (k.value("measured", false) && k.contains("vs_parent")) {
      const json& p = k["vs_parent"]["parent"];
      const json& q = k["vs_parent"]["result"];
      const double cv = std::max(p["cv"].get<double>(), q["cv"].get<double>());
      l.measured++;
      l.cv.push_back(cv);
      l.cv_above_005 += cv > 0.05;
      l.cv_above_01 += cv > 0.1;
      l.repeats.push_back(double(std::min(p["repeats"].get<int>(), q["repeats"].get<int>())));
    }
    if (k.contains("speedup_ci")) {
      const double lo = k["speedup_ci"][0].get<double>(), hi = k["speedup_ci"][1].get<double>();
      l.with_ci++;
      l.ci_low.push_back(lo);
      l.ci_high.push_back(hi);
      l.ci_contains_1 += lo <= 1 && 1 <= hi;
    }
    if (k.contains("noise_verdict")) l.verdicts[k["noise_verdict"].get<std::string>()]++;
  }
  const bool single = r["kind"] == "single";
  Depth& d = depth_[r["depth"].get<int>()];
  (single ? d.single : d.multi)++;
  if (!single) return;
  const json& a = r["answers"][0];
  const bool improving = a["label"] == "improving";
  for (Share* s : {&all_, &per_strategy_[a["strategy"].get<std::string>()]}) {
    s->single++;
    s->improving += improving;
    s->enabling += a["label"] == "enabling";
  }
  const double sr = a["cost"]["speedup_vs_root"].get<double>();
  Best& b = best_[r["root"]["key"].get<std::string>()];
  b.speedup = std::max(b.speedup, sr);
  b.records++;
}

json RecordStats::to_json() const {
  json per = json::object();
  for (const auto& [s, v] : per_strategy_) per[s] = share_json(v.single, v.improving, v.enabling);
  json share = share_json(all_.single, all_.improving, all_.enabling);
  share["per_strategy"] = per;

  json depths = json::array();
  for (const auto& [d, v] : depth_)
    depths.push_back({{"depth", d}, {"records", v.single + v.multi}, {"single", v.single}, {"multi", v.multi}});

  json roots = json::array();
  std::vector<double> best;
  for (const auto& [k, v] : best_) {
    roots.push_back({{"key", k}, {"speedup_vs_root", v.speedup}, {"records", v.records}});
    best.push_back(v.speedup);
  }
  std::sort(best.begin(), best.end());
  json median = best.empty() ? json(nullptr) : json(best[(best.size() - 1) / 2]);
  const Labels& l = labels_;
  json label_stats = {{"answers", l.answers},
                      {"labels", l.labels},
                      {"measured", l.measured},
                      {"comparison_cv", quantiles(l.cv)},
                      {"cv_above", {{"0.05", l.cv_above_005}, {"0.1", l.cv_above_01}}},
                      {"repeats", quantiles(l.repeats)},
                      {"with_ci", l.with_ci},
                      {"ci_low", quantiles(l.ci_low)},
                      {"ci_high", quantiles(l.ci_high)},
                      {"ci_contains_1", l.ci_contains_1},
                      {"noise_verdicts", l.verdicts}};

  json per_family = json::object();
  int in_eval = 0;
  for (const auto& [f, c] : coverage_) {
    const char* held = c.roots[1].empty() ? "none" : c.roots[0].empty() ? "family" : "roots";
    in_eval += !c.roots[1].empty();
    per_family[f] = {{"train_roots", c.roots[0].size()}, {"eval_roots", c.roots[1].size()},
                     {"train_records", c.records[0]}, {"eval_records", c.records[1]}, {"held_out", held}};
  }
  return {{"improving_share", share},
          {"depth_distribution", depths},
          {"best_found_speedup", {{"roots", best.size()}, {"median", median}, {"per_root", roots}}},
          {"label_statistics", label_stats},
          {"eval_coverage", {{"families", coverage_.size()}, {"families_in_eval", in_eval},
                             {"per_family", per_family}}}};
}

}  // namespace steptp::dataset
