// Record-level stats.json fields (see record_stats.h).
#include "apps/dataset/record_stats.h"

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

void RecordStats::add(const json& r) {
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
  if (a.contains("path")) b.path_end = a["path"]["speedup_vs_root"].get<double>();
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
    const double found = v.path_end.value_or(v.speedup);
    roots.push_back({{"key", k}, {"speedup_vs_root", found}, {"records", v.records}});
    best.push_back(found);
  }
  std::sort(best.begin(), best.end());
  json median = best.empty() ? json(nullptr) : json(best[(best.size() - 1) / 2]);
  return {{"improving_share", share},
          {"depth_distribution", depths},
          {"best_found_speedup", {{"roots", best.size()}, {"median", median}, {"per_root", roots}}}};
}

}  // namespace steptp::dataset
