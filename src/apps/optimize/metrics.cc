#include "apps/optimize/metrics.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "apps/reward/reward.h"

namespace steptp::optimize {

using nlohmann::json;

namespace {

constexpr int kPassK[] = {1, 5, 10};
constexpr double kFastP[] = {0.0, 1.0, 1.2};

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

double geomean(const std::vector<double>& v) {
  if (v.empty()) return 0;
  double s = 0;
  for (double x : v) s += std::log(std::max(x, 1e-12));
  return std::exp(s / double(v.size()));
}

double r4(double v) { return std::round(v * 1e4) / 1e4; }

std::string p_key(double p) { return fmt::format("fast_{}", p); }

}  // namespace

double pass_at_k(int n, int c, int k) {
  if (n - c < k) return 1.0;
  double prod = 1.0;  // C(n-c, k) / C(n, k) = prod_{i=n-c+1}^{n} (1 - k/i)
  for (int i = n - c + 1; i <= n; ++i) prod *= 1.0 - double(k) / double(i);
  return 1.0 - prod;
}

json program_metrics(const json& events) {
  std::vector<int> passed(reward::kStageCount, 0);
  int judged = 0, inconclusive = 0, transport = 0, unmeasured = 0, calls = 0;
  int64_t prompt_tokens = 0, completion_tokens = 0;
  std::vector<double> latency;
  double best = 1;
  json by_measured = json::array(), by_tokens = json::array();
  int64_t last_measured = 0;
  json reasons = json::object();  // failure counts by stage
  for (const auto& e : events) {
    if (e.value("call", false)) {
      calls++;
      latency.push_back(e.value("latency_s", 0.0));
    }
    prompt_tokens += e.value("prompt_tokens", int64_t{0});
    completion_tokens += e.value("completion_tokens", int64_t{0});
    const json& oc = e.at("outcome");
    if (!e.value("error", std::string()).empty()) {
      transport++;
    } else if (oc.value("budget_stop", false) || oc.contains("infrastructure_failure")) {  // not judged
      unmeasured++;
    } else {
      judged++;
      int k = reward::kStageCount;
      if (!oc["failed_stage"].is_null()) {
        std::string fs = oc["failed_stage"].get<std::string>();
        for (int s = 0; s < reward::kStageCount; ++s)
          if (reward::to_string(reward::Stage(s)) == fs) k = s;
        reasons[fs] = reasons.value(fs, 0) + 1;
      }
      for (int s = 0; s < k; ++s) passed[size_t(s)]++;
      if (oc.value("inconclusive", false)) inconclusive++;
      if (oc.value("clears_noise", false)) best = std::max(best, oc["speedup_vs_root"].get<double>());
    }
    int64_t m = e.value("measured_after", int64_t{0});
    if (m > last_measured) {
      for (int64_t k = last_measured; k < m; ++k) by_measured.push_back(r4(best));
      last_measured = m;
    }
    by_tokens.push_back({e.value("tokens_after", int64_t{0}), r4(best)});
  }
  json funnel = {{"judged", judged}, {"inconclusive", inconclusive}, {"transport_failures", transport},
                 {"unmeasured_budget", unmeasured}, {"failed_at", reasons}};
  json rates = json::object();
  for (int s = 0; s < reward::kStageCount; ++s) {
    std::string name(reward::to_string(reward::Stage(s)));
    funnel[name] = passed[size_t(s)];
    rates[name] = judged ? r4(double(passed[size_t(s)]) / judged) : 0.0;
  }
  funnel["rates"] = rates;
  const int correct = passed[size_t(reward::Stage::Compiles)];  // verified, compiled and ran
  json pass = json::object();
  for (int k : kPassK) pass[fmt::format("pass@{}", k)] = judged >= k ? json(r4(pass_at_k(judged, correct, k))) : json(nullptr);
  std::vector<double> lat = latency;
  return {{"funnel", funnel},
          {"correct", correct},
          {"pass_at_k", pass},
          {"best_speedup", r4(best)},
          {"curve_measured", by_measured},
          {"curve_tokens", by_tokens},
          {"cost", {{"calls", calls}, {"prompt_tokens", prompt_tokens}, {"completion_tokens", completion_tokens},
                    {"latency_mean_s", lat.empty() ? 0.0 : r4(std::accumulate(lat.begin(), lat.end(), 0.0) / double(lat.size()))},
                    {"latency_p50_s", r4(median(lat))},
                    {"latency_max_s", lat.empty() ? 0.0 : r4(*std::max_element(lat.begin(), lat.end()))}}}};
}

json aggregate_metrics(const std::vector<json>& per) {
  json funnel = json::object();
  std::vector<double> best;
  int64_t calls = 0, pt = 0, ct = 0;
  json fast = json::object();
  std::vector<int> fast_n(std::size(kFastP), 0);
  json pass = json::object();
  size_t longest = 0;
  for (const auto& m : per) {
    for (const auto& [k, v] : m["funnel"].items())
      if (v.is_number_integer()) funnel[k] = funnel.value(k, 0) + v.get<int>();
    best.push_back(m["best_speedup"].get<double>());
    calls += m["cost"]["calls"].get<int64_t>();
    pt += m["cost"]["prompt_tokens"].get<int64_t>();
    ct += m["cost"]["completion_tokens"].get<int64_t>();
    bool correct = m["correct"].get<int>() > 0;
    for (size_t i = 0; i < std::size(kFastP); ++i)
      fast_n[i] += correct && m["best_speedup"].get<double>() > kFastP[i];
    longest = std::max(longest, m["curve_measured"].size());
  }
  json rates = json::object();
  int judged = funnel.value("judged", 0);
  for (int s = 0; s < reward::kStageCount; ++s) {
    std::string name(reward::to_string(reward::Stage(s)));
    rates[name] = judged ? r4(double(funnel.value(name, 0)) / judged) : 0.0;
  }
  funnel["rates"] = rates;
  for (int k : kPassK) {
    std::string key = fmt::format("pass@{}", k);
    std::vector<double> v;
    for (const auto& m : per)
      if (!m["pass_at_k"][key].is_null()) v.push_back(m["pass_at_k"][key].get<double>());
    pass[key] = v.empty() ? json(nullptr) : json(r4(std::accumulate(v.begin(), v.end(), 0.0) / double(v.size())));
  }
  for (size_t i = 0; i < std::size(kFastP); ++i)
    fast[p_key(kFastP[i])] = per.empty() ? 0.0 : r4(double(fast_n[i]) / double(per.size()));
  json curve = json::array();
  for (size_t m = 0; m < longest; ++m) {
    std::vector<double> v;
    for (const auto& p : per) {
      const json& c = p["curve_measured"];
      v.push_back(c.empty() ? 1.0 : c[std::min(m, c.size() - 1)].get<double>());
    }
    curve.push_back(r4(geomean(v)));
  }
  return {{"programs", per.size()},
          {"funnel", funnel},
          {"pass_at_k", pass},
          {"fast_p_vs_naive", fast},
          {"fast_p_vs_pytorch", nullptr},
          {"geomean_speedup", r4(geomean(best))},
          {"median_speedup", r4(median(best))},
          {"curve_measured_geomean", curve},
          {"cost", {{"calls", calls}, {"prompt_tokens", pt}, {"completion_tokens", ct}}}};
}

std::string metrics_table(const std::vector<std::string>& names, const std::vector<json>& per, const json& agg) {
  std::string t = fmt::format("{:<28} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>7} {:>8}\n", "program", "judged",
                              "parsed", "valid", "differ", "equiv", "compil", "faster", "pass@1", "best");
  auto row = [&](const std::string& name, const json& f, const json& pass, double best) {
    t += fmt::format("{:<28} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>7} {:>7.3f}x\n", name.substr(0, 28),
                     f.value("judged", 0), f.value("parsed", 0), f.value("valid", 0), f.value("differs", 0),
                     f.value("equivalent", 0), f.value("compiles", 0), f.value("faster", 0),
                     pass["pass@1"].is_null() ? std::string("-") : fmt::format("{:.3f}", pass["pass@1"].get<double>()),
                     best);
  };
  for (size_t i = 0; i < per.size(); ++i)
    row(names[i], per[i]["funnel"], per[i]["pass_at_k"], per[i]["best_speedup"].get<double>());
  row("ALL (best: geomean)", agg["funnel"], agg["pass_at_k"], agg["geomean_speedup"].get<double>());
  const json& f = agg["fast_p_vs_naive"];
  t += fmt::format("fast_0 {:.3f}  fast_1 {:.3f}  fast_1.2 {:.3f}  median speedup {:.3f}x  inconclusive {}  "
                   "transport failures {}  calls {}  completion tokens {}\n",
                   f["fast_0"].get<double>(), f["fast_1"].get<double>(), f["fast_1.2"].get<double>(),
                   agg["median_speedup"].get<double>(), agg["funnel"].value("inconclusive", 0),
                   agg["funnel"].value("transport_failures", 0), agg["cost"]["calls"].get<int64_t>(),
                   agg["cost"]["completion_tokens"].get<int64_t>());
  return t;
}

}  // namespace steptp::optimize
