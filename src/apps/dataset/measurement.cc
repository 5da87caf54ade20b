// CPU measurement of records: store, sandboxed interleaved timing, record rewrite.
#include "apps/dataset/measurement.h"

#include <signal.h>
#include <sqlite3.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <stdexcept>
#include <thread>

#include <boost/math/distributions/students_t.hpp>
#include <fmt/format.h>

#include "base/error.h"
#include "lower/cpu/compiler.h"
#include "lower/cpu/cpu_program.h"
#include "lower/cpu/sandbox.h"
#include "base/progress.h"
#include "apps/dataset/cluster.h"
#include "apps/dataset/dataset.h"
#include "apps/dataset/sharding.h"
#include "apps/dataset/workers.h"
#include "ir/interp/inputs.h"
#include "ir/leir/program_io.h"
#include "search/analytic/search.h"
#include "transform/sampler.h"
#include "search/tune/observations.h"
#include "search/tune/machine.h"
#include "search/tune/runner.h"

namespace fs = std::filesystem;

namespace steptp::dataset {
namespace {

using nlohmann::json;
using tune::ObservationStore;

}  // namespace

// ---- generate integration ----
backend::MeasureOptions measure_options(const GenerateOptions& o, int scale) {
  backend::MeasureOptions mo;
  mo.warmup = 2;
  mo.min_time_s = scale * o.measure_min_time;
  mo.min_repeats = scale * kMinRepeats;
  mo.max_time_s = scale * std::max(0.25, 20 * o.measure_min_time);
  mo.stable_rel = 0.02;
  mo.threads = o.measure_threads;
  return mo;
}

tune::CpuRunner measurement_runner(const GenerateOptions& o, int scale) {
  return tune::CpuRunner(measure_options(o, scale), base::mix_seed(o.seed, 0x3ea5));
}

json measurement_json(const GenerateOptions& o) {
  if (!o.measured) {
    json j = {{"measured", false}, {"model", "analytic: flops + bytes/4 + local/4, / parallel (<=16) / vector (<=4)"}};
    if (o.target == "cuda")
      j["note"] = "target cuda: unmeasured (CUDA kernels are not timed on this machine, which has no GPU); "
                  "costs and labels are the analytic model's";
    return j;
  }
  auto mo = measure_options(o);
  return {{"measured", true},
          {"backend", "cpu"},
          {"method", "interleaved sessions (ABBA; up to 8 results against one parent or root per session, round by round) of result vs parent and result vs root; medians in ms"},
          {"min_time_s", mo.min_time_s},
          {"min_repeats", mo.min_repeats},
          {"max_time_s", mo.max_time_s},
          {"warmup", mo.warmup},
          {"stable_rel", mo.stable_rel},
          {"threads", mo.threads},
          {"improve_threshold", o.improve_threshold},
          {"quiet", {{"min_repeats", kMinRepeats}, {"max_cv", kQuietCv}, {"sessions", kSessions},
                     {"settled", "quiet, or an interval wholly above or below improve_threshold"},
                     {"last_session_scale", kLastSessionScale}}},
          {"speedup_ci",
           "95 %: ratio of medians * exp(+-t(0.975, Welch df) * sqrt(sum over sides of (pi/2) cv^2 / n))"},
          {"label", "improving: speedup_ci[0] >= improve_threshold; enabling: a path step whose path end is that much "
                    "faster than its parent by the same rule; else non_improving"},
          {"search_ranking", "analytic model (trajectories do not depend on timing noise)"}};
}

std::string measurement_store_path(const GenerateOptions& o) {
  return o.measurements.empty() ? (fs::path(o.out_dir) / "measurements.sqlite").string() : o.measurements;
}

namespace {

double round_sig(double x, int digits = 4) {
  if (!(x > 0) || !std::isfinite(x)) return x;
  double scale = std::pow(10.0, digits - 1 - int(std::floor(std::log10(x))));
  return std::round(x * scale) / scale;
}

json timing_json(const json& t) {
  return {{"median_ms", round_sig(t["median_ms"].get<double>())},
          {"min_ms", round_sig(t["min_ms"].get<double>())},
          {"max_ms", round_sig(t["max_ms"].get<double>())},
          {"cv", std::round(t["cv"].get<double>() * 1e4) / 1e4},
          {"repeats", t["repeats"]}};
}
backend::TimingStats timing_stats(const json& t) {
  return backend::TimingStats{t["median_ms"].get<double>(), t["min_ms"].get<double>(), t["max_ms"].get<double>(),
                              t["cv"].get<double>(), t["repeats"].get<int>()};
}
// The noise rule of the timing policy (search/tune/runner.h) on a stored comparison.
bool clears_noise_json(const json& v) {
  backend::Comparison c{timing_stats(v["a"]), timing_stats(v["b"]), 1.0};
  c.speedup = c.b.median_ms > 0 ? c.a.median_ms / c.b.median_ms : 0;
  return tune::clears_noise(c);
}
// An interval as the records carry it: 4 decimals, as the speedups.
json interval_json(const Interval& ci) {
  return json::array({search::round_ratio(ci.lo, 1), search::round_ratio(ci.hi, 1)});
}

// Enabling steps of a tuned root's path (answers with "path", trimmed to end at its best state):
// a step not improving on its own whose path end is at least `threshold` faster than the state
// before it, by the improving rule applied to that pay-off (path end's speedup_vs_root / the
// step's parent's, the lower bound of its ratio_ci over the four timed sides of the two
// comparisons with the root at least `threshold`). Both speedups over the root are these records'
// measurements, never the tuner's own sessions (other inputs, other timing options). The parent's
// is the record's own (parent_speedup_vs_root and `parent_sides[j]`, the timed sides of record j's
// comparison of its parent with the root; empty at the root), so a step after a gap in the path
// (its parent's record dropped as noisy) is judged as any other.
void label_enabling_steps(json& records, const std::vector<std::vector<backend::TimingStats>>& parent_sides,
                          double threshold) {
  const json* end = nullptr;
  for (const auto& r : records)
    for (const auto& a : r["answers"])
      if (a.contains("path") && a["path"]["step"] == a["path"]["of"]) end = &a["cost"];
  if (!end) return;
  const std::vector<backend::TimingStats> end_sides{timing_stats((*end)["vs_root"]["root"]),
                                                    timing_stats((*end)["vs_root"]["result"])};
  const double end_speedup = (*end)["speedup_vs_root"].get<double>();
  std::map<int, std::pair<double, Interval>> enabled;  // step -> pay-off and its interval
  for (size_t j = 0; j < records.size(); ++j)
    for (const auto& a : records[j]["answers"]) {
      if (!a.contains("path") || a["path"]["step"] == a["path"]["of"] || a["label"] == "improving") continue;
      std::vector<backend::TimingStats> s = end_sides;
      for (const auto& t : parent_sides[j]) s.push_back(t);
      // At the root the parent's speedup over itself is 1 with no timing behind it.
      const double pay = search::round_ratio(end_speedup, records[j]["parent_speedup_vs_root"].get<double>());
      const Interval ci = ratio_ci(pay, s);
      if (search::round_ratio(ci.lo, 1) >= threshold) enabled[a["path"]["step"].get<int>()] = {pay, ci};
    }
  for (auto& r : records)
    for (auto& a : r["answers"])
      if (a.contains("path") && enabled.count(a["path"]["step"].get<int>())) {
        const auto& [pay, ci] = enabled.at(a["path"]["step"].get<int>());
        a["label"] = "enabling";
        a["path"]["enabled_speedup"] = pay;
        a["path"]["enabled_ci"] = interval_json(ci);
      }
}

}  // namespace

Interval ratio_ci(double ratio, const std::vector<backend::TimingStats>& sides) {
  double var = 0, df_denominator = 0;
  for (const auto& s : sides) {
    if (s.repeats < 2)
      throw std::logic_error(fmt::format("ratio_ci: a side timed {} time(s) has no spread", s.repeats));
    const double v = M_PI / 2 * s.cv * s.cv / s.repeats;
    var += v;
    df_denominator += v * v / (s.repeats - 1);
  }
  if (!(var > 0)) return {ratio, ratio};  // no spread measured: the point itself
  const double df = var * var / df_denominator;
  const double t = boost::math::quantile(boost::math::complement(boost::math::students_t(df), 0.025));
  const double half = t * std::sqrt(var);
  return {ratio * std::exp(-half), ratio * std::exp(half)};
}

bool informative(const Interval& ci, double threshold) { return ci.lo >= 1 / threshold || ci.hi <= threshold; }

std::string noise_verdict(const Interval& ci) {
  if (search::round_ratio(ci.lo, 1) > 1) return "faster";
  if (search::round_ratio(ci.hi, 1) < 1) return "slower";
  return "within_noise";
}

// Why (measurement.h has what): steps after the best state made the program slower again, and
// a path that never gets confirmed faster than its root teaches no way forward. A step missing
// from the path (its comparison with its parent failed or stayed noisy: often a neutral step such
// as a loop_split, whose interval reaches both sides of the threshold; or the filter dropped its
// record, e.g. as a duplicate) does not end the path:
// every kept record carries its own comparison of its parent with the root, and ending at the gap
// had recorded batched_matmul's best as 3.2x although its path reached 13.4x, measured.
int trim_path_tail(json& records, std::vector<size_t>& src, double threshold) {
  std::map<int, const json*> cost;  // path step -> its answer's measured cost
  for (const auto& r : records)
    for (const auto& a : r["answers"])
      if (a.contains("path")) cost[a["path"]["step"].get<int>()] = &a["cost"];
  if (cost.empty()) return 0;
  int end = 0;
  double best = 0;
  for (const auto& [k, c] : cost) {
    const double sr = (*c)["speedup_vs_root"].get<double>();
    if (sr > best) best = sr, end = k;
  }
  // The pay-off over the root is confirmed as an improving step's would be (lower bound of the
  // interval of the (root, end) comparison).
  if (end) {
    const json& t = (*cost.at(end))["vs_root"];
    if (search::round_ratio(ratio_ci(best, {timing_stats(t["root"]), timing_stats(t["result"])}).lo, 1) < threshold)
      end = 0;
  }
  json kept = json::array();
  std::vector<size_t> kept_src;
  int dropped = 0;
  for (size_t i = 0; i < records.size(); ++i) {
    json& r = records[i];
    auto beyond = [&](const json& a) { return a.contains("path") && a["path"]["step"].get<int>() > end; };
    if (r["kind"] == "single" && beyond(r["answers"][0])) {
      ++dropped;
      continue;
    }
    for (auto& a : r["answers"]) {
      if (beyond(a)) {
        a.erase("path");
      } else if (a.contains("path")) {
        a["path"]["of"] = end;
        a["path"]["speedup_vs_root"] = best;
      }
    }
    kept.push_back(std::move(r));
    kept_src.push_back(src[i]);
  }
  records = std::move(kept);
  src = std::move(kept_src);
  return dropped;
}

namespace {

// The 95 % interval of a stored session's speedup (median of A / median of B; ratio_ci).
Interval session_ci(const json& v) {
  return ratio_ci(v["a"]["median_ms"].get<double>() / v["b"]["median_ms"].get<double>(),
                  {timing_stats(v["a"]), timing_stats(v["b"])});
}
// A session is quiet when both sides are (measurement.h: kMinRepeats, kQuietCv).
bool quiet(const json& v) {
  for (const char* side : {"a", "b"})
    if (v[side]["repeats"].get<int>() < kMinRepeats || v[side]["cv"].get<double>() > kQuietCv) return false;
  return true;
}
// A session that needs no other: quiet, or one whose interval lies on one side of the improving
// threshold, so no further session could change what is read from it (measurement.h: settled).
bool settled(const json& v, double threshold) {
  if (quiet(v)) return true;
  if (v["a"]["repeats"].get<int>() < 2 || v["b"]["repeats"].get<int>() < 2) return false;
  const Interval ci = session_ci(v);
  return ci.lo >= threshold || ci.hi < threshold;
}
// Session s (0-based) of a comparison: the first under the comparison's own key (the tuner's
// sessions are the records'), re-measurements under the key with the session number.
std::string session_key(const std::string& key, int s) {
  return s == 0 ? key : fmt::format("{} | session {}", key, s + 1);
}
// Sessions of a comparison the store lacks: the first, or the next one an unsettled last one
// calls for (a lower bound: a new session may be unsettled too).
int missing_sessions(ObservationStore& store, const std::string& key, double threshold) {
  for (int s = 0; s < kSessions; ++s) {
    auto v = store.get(session_key(key, s));
    if (!v) return 1;
    if (!(*v)["ok"].get<bool>() || settled(*v, threshold)) return 0;
  }
  return 0;
}

json stats_to_json(const backend::TimingStats& t) {
  return {{"median_ms", t.median_ms}, {"min_ms", t.min_ms}, {"max_ms", t.max_ms}, {"cv", t.cv}, {"repeats", t.repeats}};
}

// The comparisons a root's records need: distinct programs (by text) and (a, b) pairs in
// record order, with their store keys (this machine, the run's measurement options).
struct Comparisons {
  std::vector<std::string> texts;
  std::vector<leir::Program> programs;    // each text parsed (empty where it does not parse)
  std::vector<std::string> parse_errors;  // ... and why not
  std::map<std::string, int> text_index;
  std::vector<std::pair<int, int>> pairs;
  std::map<std::pair<int, int>, int> pair_index;
  std::vector<std::string> keys;
};

Comparisons comparisons_of(const json& records, const tune::Runner& runner) {
  Comparisons c;
  auto program_id = [&](const std::string& t) {
    auto [it, fresh] = c.text_index.emplace(t, int(c.texts.size()));
    if (fresh) c.texts.push_back(t);
    return it->second;
  };
  auto pair_id = [&](int a, int b) {
    auto [it, fresh] = c.pair_index.emplace(std::make_pair(a, b), int(c.pairs.size()));
    if (fresh) c.pairs.push_back({a, b});
  };
  for (const auto& r : records) {
    int root = program_id(r["root_program"].get<std::string>());
    int parent = program_id(r["parent_program"].get<std::string>());
    if (parent != root) pair_id(root, parent);
    for (const auto& a : r["answers"]) {
      int res = program_id(a["result_program"].get<std::string>());
      pair_id(parent, res);
      pair_id(root, res);
    }
  }
  // Keyed as the tuner keys its comparisons (compact texts, the run's runner).
  std::vector<std::string> compact;
  for (const auto& t : c.texts) {
    c.programs.emplace_back();
    c.parse_errors.emplace_back();
    try {
      c.programs.back() = leir::program_from_text(t);
      compact.push_back(leir::program_to_text(c.programs.back(), false));
    } catch (const std::exception& e) {
      c.parse_errors.back() = e.what();
      compact.push_back(t);  // its comparisons fail when measured (measure_records)
    }
  }
  for (auto [a, b] : c.pairs) c.keys.push_back(tune::comparison_key(runner, compact[size_t(a)], compact[size_t(b)]));
  return c;
}

}  // namespace

json measure_records(json records, const GenerateOptions& o, ObservationStore& store, MeasureStats* stats,
                     std::vector<char>* kept) {
  if (kept) kept->assign(records.size(), 0);
  MeasureStats local;
  MeasureStats& st = stats ? *stats : local;
  auto cpu = measurement_runner(o);
  auto cpu_last = measurement_runner(o, kLastSessionScale);
  tune::Runner& runner = o.tune_runner ? *o.tune_runner : cpu;
  tune::Runner& last_runner = o.tune_runner ? *o.tune_runner : cpu_last;
  Comparisons c = comparisons_of(records, runner);
  const auto& text_index = c.text_index;
  const auto& pairs = c.pairs;
  const auto& pair_index = c.pair_index;
  st.pairs = int(pairs.size());
  // Every comparison's sessions, from the store or timed now: the first for all, another while
  // the last one is noisy (up to kSessions).
  std::vector<std::vector<json>> sessions(pairs.size());
  for (int s = 0; s < kSessions; ++s) {
    std::vector<size_t> missing;
    for (size_t k = 0; k < pairs.size(); ++k) {
      const bool due = s == 0 || (int(sessions[k].size()) == s && sessions[k].back()["ok"].get<bool>() &&
                                  !settled(sessions[k].back(), o.improve_threshold));
      if (!due) continue;
      if (s == 1) st.remeasured++;
      st.sessions++;
      if (auto v = store.get(session_key(c.keys[k], s))) {
        st.reused++;
        sessions[k].push_back(std::move(*v));
      } else {
        missing.push_back(k);
      }
    }
    if (missing.empty()) continue;
    // A program that does not parse back cannot be measured: its pairs fail.
    std::vector<std::pair<int, int>> runnable;
    std::vector<size_t> runnable_idx;
    std::vector<std::pair<std::string, json>> entries;
    for (size_t k : missing) {
      auto [a, b] = pairs[k];
      const std::string& err =
          !c.parse_errors[size_t(a)].empty() ? c.parse_errors[size_t(a)] : c.parse_errors[size_t(b)];
      if (!err.empty()) {
        entries.push_back({session_key(c.keys[k], s), json{{"ok", false}, {"error", "parse: " + err.substr(0, 120)}}});
      } else {
        runnable.push_back(pairs[k]);
        runnable_idx.push_back(k);
      }
    }
    auto measured = (s == kSessions - 1 ? last_runner : runner).run(c.programs, runnable);
    for (size_t m = 0; m < runnable.size(); ++m) {
      const auto& pr = measured[m];
      json v = pr.ok ? json{{"ok", true}, {"a", stats_to_json(pr.cmp.a)}, {"b", stats_to_json(pr.cmp.b)}}
                     : json{{"ok", false}, {"error", pr.error}};
      entries.push_back({session_key(c.keys[runnable_idx[m]], s), v});
    }
    st.measured += int(entries.size());
    store.put_all(entries);
    // Read back: when another worker stored the same session first, its value is the fact.
    for (size_t k : missing) {
      auto got = store.get(session_key(c.keys[k], s));
      if (!got) throw base::Error(base::ErrorKind::Failed, "measurement store lost an entry");
      sessions[k].push_back(std::move(*got));
    }
  }
  st.compile_s += cpu.stats().compile_s + cpu_last.stats().compile_s;
  st.measure_s += cpu.stats().measure_s + cpu_last.stats().measure_s;
  // The fact of each comparison: its first quiet session (and which one, 1-based); when none was
  // quiet, the session with the narrowest interval, unless even that one cannot tell a 5 %
  // slowdown from a 5 % speedup (measurement.h: informative); none when the first failed.
  enum class Fate { Ok, Failed, Noisy };
  std::vector<Fate> fate(pairs.size(), Fate::Noisy);
  std::vector<int> chosen(pairs.size(), -1);
  for (size_t k = 0; k < pairs.size(); ++k) {
    if (!sessions[k][0]["ok"].get<bool>()) {
      fate[k] = Fate::Failed;
      st.failed++;
      continue;
    }
    for (size_t s = 0; s < sessions[k].size() && chosen[k] < 0; ++s)
      if (sessions[k][s]["ok"].get<bool>() && quiet(sessions[k][s])) chosen[k] = int(s);
    if (chosen[k] < 0) {
      st.noisy++;
      double narrowest = 0;
      for (size_t s = 0; s < sessions[k].size(); ++s) {
        const json& v = sessions[k][s];
        if (!v["ok"].get<bool>() || v["a"]["repeats"].get<int>() < 2 || v["b"]["repeats"].get<int>() < 2) continue;
        const Interval ci = ratio_ci(1.0, {timing_stats(v["a"]), timing_stats(v["b"])});
        if (chosen[k] < 0 || ci.hi / ci.lo < narrowest) narrowest = ci.hi / ci.lo, chosen[k] = int(s);
      }
      if (chosen[k] >= 0) {
        if (!informative(session_ci(sessions[k][size_t(chosen[k])]), o.improve_threshold)) chosen[k] = -1;
      }
    }
    if (chosen[k] >= 0) fate[k] = Fate::Ok;
    else st.uninformative++;
  }
  auto fate_of = [&](int a, int b) { return fate[size_t(pair_index.at({a, b}))]; };
  auto res_of = [&](int a, int b) -> const json& {
    const size_t k = size_t(pair_index.at({a, b}));
    return sessions[k][size_t(chosen[k])];
  };
  auto session_of = [&](int a, int b) { return chosen[size_t(pair_index.at({a, b}))] + 1; };
  json out = json::array();
  std::vector<size_t> out_src;  // out[k] came from records[out_src[k]]
  std::vector<std::vector<backend::TimingStats>> parent_sides(records.size());  // label_enabling_steps
  for (size_t ri = 0; ri < records.size(); ++ri) {
    json& r = records[ri];
    int root = text_index.at(r["root_program"].get<std::string>());
    int parent = text_index.at(r["parent_program"].get<std::string>());
    if (parent != root && fate_of(root, parent) != Fate::Ok) {
      st.dropped_records++;
      st.noisy_records += fate_of(root, parent) == Fate::Noisy;
      continue;
    }
    json answers = json::array();
    bool failed = false;  // an answer went because a comparison failed (else because of noise)
    for (auto& a : r["answers"]) {
      int res = text_index.at(a["result_program"].get<std::string>());
      if (fate_of(parent, res) != Fate::Ok || fate_of(root, res) != Fate::Ok) {
        failed |= fate_of(parent, res) == Fate::Failed || fate_of(root, res) == Fate::Failed;
        st.dropped_answers++;
        continue;
      }
      const json& vp = res_of(parent, res);
      const json& vr = res_of(root, res);
      json model = a["cost"];
      model.erase("measured");
      model.erase("unit");
      model["label"] = a["label"];
      json tp = timing_json(vp["a"]), tr = timing_json(vp["b"]);
      json rr = timing_json(vr["a"]), r2 = timing_json(vr["b"]);
      double sp = search::round_ratio(vp["a"]["median_ms"].get<double>(), vp["b"]["median_ms"].get<double>());
      double sr = search::round_ratio(vr["a"]["median_ms"].get<double>(), vr["b"]["median_ms"].get<double>());
      const Interval ci = session_ci(vp);
      a["cost"] = {{"measured", true},
                   {"unit", "ms"},
                   {"root", rr["median_ms"]},
                   {"parent", tp["median_ms"]},
                   {"result", tr["median_ms"]},
                   {"speedup_vs_parent", sp},
                   {"speedup_ci", interval_json(ci)},
                   {"noise_verdict", noise_verdict(ci)},
                   {"speedup_vs_root", sr},
                   {"vs_parent", {{"parent", tp}, {"result", tr}, {"session", session_of(parent, res)}}},
                   {"vs_root", {{"root", rr}, {"result", r2}, {"session", session_of(root, res)}}},
                   {"threads", o.measure_threads},
                   {"clears_noise", clears_noise_json(vp)},
                   {"model", model}};
      // Improving: the whole interval, not only its point, clears the threshold.
      a["label"] = search::round_ratio(ci.lo, 1) >= o.improve_threshold ? "improving" : "non_improving";
      answers.push_back(std::move(a));
    }
    bool multi = r["kind"] == "multi";
    if (answers.empty() || (multi && answers.size() < 2)) {
      st.dropped_records++;
      st.noisy_records += !failed;
      continue;
    }
    // The fastest measured answer first (stable: ties keep the search's order).
    std::stable_sort(answers.begin(), answers.end(), [](const json& x, const json& y) {
      return x["cost"]["speedup_vs_parent"].get<double>() > y["cost"]["speedup_vs_parent"].get<double>();
    });
    r["answers"] = std::move(answers);
    r["parent_speedup_measured"] = true;
    // The parent's speedup over the root is the comparison (root, parent): the very one its
    // producing record quotes as cost.speedup_vs_root, never a second session.
    if (parent != root) {
      const json& v = res_of(root, parent);
      r["parent_speedup_vs_root"] =
          search::round_ratio(v["a"]["median_ms"].get<double>(), v["b"]["median_ms"].get<double>());
      parent_sides[ri] = {timing_stats(timing_json(v["a"])), timing_stats(timing_json(v["b"]))};
    } else {
      r["parent_speedup_vs_root"] = 1.0;
    }
    out.push_back(std::move(r));
    out_src.push_back(ri);
  }
  st.trimmed_path_steps = trim_path_tail(out, out_src, o.improve_threshold);
  if (kept)
    for (size_t ri : out_src) (*kept)[ri] = 1;
  std::vector<std::vector<backend::TimingStats>> kept_parent_sides;
  for (size_t ri : out_src) kept_parent_sides.push_back(parent_sides[ri]);
  label_enabling_steps(out, kept_parent_sides, o.improve_threshold);
  return out;
}

void merge_rank_stores(Cluster& cluster, const std::string& rank_path, const std::string& merged_path) {
  std::vector<std::string> rows;
  if (fs::exists(rank_path))
    for (const auto& [key, value] : ObservationStore(rank_path).entries()) rows.push_back(key + "\t" + value.dump());
  rows = cluster.gather(std::move(rows));
  if (cluster.rank() != 0) return;
  std::vector<std::pair<std::string, json>> entries;
  for (const auto& row : rows) {
    size_t tab = row.find('\t');
    entries.push_back({row.substr(0, tab), json::parse(row.substr(tab + 1))});
  }
  ObservationStore(merged_path).put_all(entries);
}

json MeasureSummary::to_json() const {
  return {{"comparisons", pairs},
          {"sessions", sessions},
          {"failed", failed},
          {"remeasured", remeasured},
          {"noisy", noisy},
          {"uninformative", uninformative},
          {"dropped_records", dropped_records},
          {"noisy_records", noisy_records},
          {"dropped_answers", dropped_answers},
          {"trimmed_path_steps", trimmed_path_steps}};
}

void MeasureSummary::add(const FillTiming& filled) {
  compile_s += filled.compile_s;
  measure_s += filled.measure_s;
  measured += filled.measured;
  reused = sessions - measured;
}

namespace {

// The kept records by root, as indices into recs (a root's records are consecutive).
std::vector<std::vector<size_t>> kept_groups(const std::vector<json>& recs, const std::vector<char>& keep) {
  std::vector<std::vector<size_t>> groups;
  std::string last;
  for (size_t i = 0; i < recs.size(); ++i) {
    if (!keep[i]) continue;
    std::string key = recs[i]["root"]["key"].get<std::string>();
    if (groups.empty() || key != last) groups.emplace_back();
    groups.back().push_back(i);
    last = key;
  }
  return groups;
}

json group_records(const std::vector<json>& recs, const std::vector<size_t>& g) {
  json arr = json::array();
  for (size_t i : g) arr.push_back(recs[i]);
  return arr;
}

}  // namespace

FillTiming fill_store(const std::vector<json>& recs, const std::vector<char>& keep, const GenerateOptions& o,
                      Cluster& cluster, Progress& progress) {
  const std::vector<std::vector<size_t>> groups = kept_groups(recs, keep);
  const bool distributed = cluster.size() > 1, lead = cluster.rank() == 0;
  const std::string path = measurement_store_path(o);
  const std::string rank_path =
      distributed ? (fs::path(rank_dir(o, cluster.rank())) / "measurements.sqlite").string() : path;
  // Keys carry the machine fingerprint and rank 0 reads every fact back under its own, so all
  // measuring ranks must be one machine type.
  const std::string machine = tune::fingerprint(tune::this_machine(o.measure_threads));
  const auto machines = cluster.all_gather(cluster.measuring() ? machine : "");
  if (lead)
    for (size_t r = 0; r < machines.size(); ++r)
      if (!machines[r].empty() && machines[r] != machine)
        throw base::Error(
            base::ErrorKind::Failed,
            fmt::format("measuring rank {} is another machine type than rank 0 ({} vs {}): measure on one kind of node "
                        "(e.g. a Slurm --constraint) or use --cost model",
                        r, machines[r], machine));
  // The tables exist before workers race to them.
  if (lead) ObservationStore create(path);
  if (cluster.measuring()) ObservationStore create(rank_path);
  // Facts an interrupted run left in the ranks' stores count before anything is handed out.
  if (distributed) merge_rank_stores(cluster, rank_path, path);

  // Rank 0 hands the groups with comparisons missing from the store to the measuring ranks,
  // balanced by their count of missing comparisons.
  std::vector<std::vector<std::string>> per_rank(size_t(cluster.size()));
  if (lead) {
    ObservationStore store(path);
    std::vector<int> measurers;
    for (size_t r = 0; r < machines.size(); ++r)
      if (!machines[r].empty()) measurers.push_back(int(r));
    std::vector<json> pending;
    std::vector<uint64_t> costs;
    auto cpu = measurement_runner(o);
    const tune::Runner& runner = o.tune_runner ? *o.tune_runner : cpu;
    for (const auto& g : groups) {
      json arr = group_records(recs, g);
      uint64_t missing = 0;
      for (const auto& key : comparisons_of(arr, runner).keys)
        missing += missing_sessions(store, key, o.improve_threshold);
      if (!missing) continue;
      pending.push_back(std::move(arr));
      costs.push_back(missing);
    }
    // A group travels as "missing<TAB>records": its count is the key of the workers' lists below.
    auto owner = shard_by_cost(costs, int(measurers.size()));
    for (size_t k = 0; k < pending.size(); ++k)
      per_rank[size_t(measurers[size_t(owner[k])])].push_back(fmt::format("{}\t{}", costs[k], pending[k].dump()));
  }
  const std::vector<std::string> mine = cluster.scatter(std::move(per_rank));

  // Workers fill this rank's store. The groups go to them as to the ranks (by missing
  // comparisons, longest first, each to the least loaded worker; sharding.h) and each worker
  // takes its own longest first, as the search's workers do. The store, not the worker that
  // timed a comparison, decides the records (measure_kept), so the split changes no output
  // byte. Per-worker timing (a FillTiming each) comes back through shared memory.
  int J = std::max(1, std::min(o.jobs, int(mine.size())));
  size_t bytes = sizeof(FillTiming) * size_t(J);
  void* mem = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) throw base::Error(base::ErrorKind::Failed, "cannot map worker timing");
  std::memset(mem, 0, bytes);
  auto* timing = static_cast<FillTiming*>(mem);
  progress.stage_start("measure", "root", int(mine.size()), 0,
                       fmt::format("{} roots with comparisons to time, {} workers", mine.size(), J));
  std::vector<uint64_t> missing;
  for (const auto& m : mine) missing.push_back(std::stoull(m.substr(0, m.find('\t'))));
  const std::vector<std::vector<size_t>> lists = shard_lists_by_cost(missing, J);
  auto worker = [&](int k) {
    ObservationStore store(rank_path);
    for (size_t g : lists[size_t(k)]) {
      MeasureStats st;
      json group = json::parse(mine[g].substr(mine[g].find('\t') + 1));
      const std::string key = group.at(0)["root"]["key"];
      measure_records(std::move(group), o, store, &st);
      timing[k].compile_s += st.compile_s;
      timing[k].measure_s += st.measure_s;
      timing[k].measured += st.measured;
      progress.advance(fmt::format("{} measured ({} comparisons timed, {} reused)", key, st.measured, st.reused));
    }
  };
  // A worker that dies leaves comparisons missing: the measure stage (measure_kept) times them on rank 0.
  if (!mine.empty())
    run_workers(J, [&](int k) {
      worker(k);
      return 0;
    });
  FillTiming t;
  for (int k = 0; k < J; ++k) {
    t.compile_s += timing[k].compile_s;
    t.measure_s += timing[k].measure_s;
    t.measured += timing[k].measured;
  }
  munmap(mem, bytes);
  if (distributed) {
    merge_rank_stores(cluster, rank_path, path);
    // Rank 0 reports the whole run's part: every measuring rank's timing and count.
    auto parts = cluster.gather({json{{"compile_s", t.compile_s}, {"measure_s", t.measure_s},
                                      {"measured", t.measured}}.dump()});
    if (!lead) return t;
    t = {};
    for (const auto& part : parts) {
      json p = json::parse(part);
      t.compile_s += p["compile_s"].get<double>();
      t.measure_s += p["measure_s"].get<double>();
      t.measured += p["measured"].get<int>();
    }
  }
  return t;
}

MeasureSummary measure_kept(std::vector<json>& recs, std::vector<char>& keep, const GenerateOptions& o) {
  MeasureSummary sum;
  ObservationStore store(measurement_store_path(o));
  // The groups before any keep flag is cleared.
  const std::vector<std::vector<size_t>> groups = kept_groups(recs, keep);
  for (const auto& g : groups) {
    MeasureStats st;
    std::vector<char> kept;
    json out = measure_records(group_records(recs, g), o, store, &st, &kept);
    sum.compile_s += st.compile_s;
    sum.measure_s += st.measure_s;
    sum.measured += st.measured;
    sum.pairs += st.pairs;
    sum.sessions += st.sessions;
    sum.failed += st.failed;
    sum.remeasured += st.remeasured;
    sum.noisy += st.noisy;
    sum.uninformative += st.uninformative;
    sum.dropped_records += st.dropped_records;
    sum.noisy_records += st.noisy_records;
    sum.dropped_answers += st.dropped_answers;
    sum.trimmed_path_steps += st.trimmed_path_steps;
    size_t j = 0;
    for (size_t k = 0; k < g.size(); ++k) {
      if (kept[k]) recs[g[k]] = std::move(out[j++]);
      else keep[g[k]] = 0;
    }
  }
  sum.reused = sum.sessions - sum.measured;
  return sum;
}

}  // namespace steptp::dataset
