#include "search/tune/observations.h"

#include <string_view>

#include "base/error.h"

namespace steptp::tune {
namespace {

using nlohmann::json;

json stats_json(const backend::TimingStats& t) {
  return {{"median_ms", t.median_ms}, {"min_ms", t.min_ms}, {"max_ms", t.max_ms}, {"cv", t.cv}, {"repeats", t.repeats}};
}
backend::TimingStats stats_from(const json& j) {
  return {j.at("median_ms").get<double>(), j.at("min_ms").get<double>(), j.at("max_ms").get<double>(),
          j.at("cv").get<double>(), j.at("repeats").get<int>()};
}

// Stores written before comparisons recorded their MeasureFailure hold only the runner's message:
// the kind it implies (the runner's message forms; "compile: ..." and "fork failed" were the two
// that consumers told apart). Applied once, when such an entry is read; never written back.
MeasureFailure failure_of_legacy_entry(const std::string& error) {
  auto starts = [&](std::string_view p) { return error.rfind(p, 0) == 0; };
  if (starts("compile:")) return MeasureFailure::Compile;
  if (error == "fork failed") return MeasureFailure::Infrastructure;
  if (starts("timed out after")) return MeasureFailure::Timeout;
  if (starts("crashed (") || starts("measuring child exited")) return MeasureFailure::Crash;
  return MeasureFailure::Run;
}

PairResult pair_from_json(const json& v) {
  PairResult r;
  r.ok = v.at("ok").get<bool>();
  if (!r.ok) {
    r.error = v.value("error", "");
    if (!v.contains("failure")) {
      r.failure = failure_of_legacy_entry(r.error);
    } else if (auto f = measure_failure_from(v["failure"].get<std::string>())) {
      r.failure = *f;
    } else {
      throw base::Error(base::ErrorKind::Invalid,
                        "measurement store: unknown failure kind '" + v["failure"].get<std::string>() + "'");
    }
    return r;
  }
  r.cmp.a = stats_from(v.at("a"));
  r.cmp.b = stats_from(v.at("b"));
  r.cmp.speedup = r.cmp.b.median_ms > 0 ? r.cmp.a.median_ms / r.cmp.b.median_ms : 1;
  return r;
}

}  // namespace

std::string comparison_key(const Runner& runner, const std::string& a_text, const std::string& b_text,
                           const std::string& session) {
  return observation_key({session, runner.identity(), a_text, b_text});
}

std::string Comparer::key(const Subject& a, const Subject& b, const std::string& session) const {
  return comparison_key(runner_, *a.text, *b.text, session);
}

bool Comparer::stored(const Subject& a, const Subject& b, const std::string& session) {
  return store_.get(key(a, b, session)).has_value();
}

std::vector<PairResult> Comparer::compare(const std::vector<std::pair<Subject, Subject>>& pairs,
                                          const std::string& session) {
  std::vector<PairResult> out(pairs.size());
  std::vector<std::string> keys;
  std::vector<leir::Program> programs;
  std::vector<std::pair<int, int>> todo;
  std::vector<size_t> todo_idx;
  for (size_t k = 0; k < pairs.size(); ++k) {
    keys.push_back(key(pairs[k].first, pairs[k].second, session));
    if (auto got = store_.get(keys.back())) {
      out[k] = pair_from_json(*got);
      reused++;
      continue;
    }
    programs.push_back(*pairs[k].first.program);
    programs.push_back(*pairs[k].second.program);
    todo.push_back({int(programs.size()) - 2, int(programs.size()) - 1});
    todo_idx.push_back(k);
  }
  if (todo.empty()) return out;
  auto measured = runner_.run(programs, todo);
  std::vector<std::pair<std::string, json>> entries;
  for (size_t m = 0; m < todo.size(); ++m) {
    const auto& pr = measured[m];
    json v = pr.ok ? json{{"ok", true}, {"a", stats_json(pr.cmp.a)}, {"b", stats_json(pr.cmp.b)}}
                   : json{{"ok", false}, {"failure", std::string(to_string(pr.failure))}, {"error", pr.error}};
    entries.push_back({keys[todo_idx[m]], v});
  }
  store_.put_all(entries);
  measured_now += int(entries.size());
  // Read back: a concurrent run that stored the same comparison first holds the fact.
  for (size_t idx : todo_idx) out[idx] = pair_from_json(*store_.get(keys[idx]));
  return out;
}

std::vector<json> stored_verdicts(ObservationStore& store, RootVerifier& verifier, const std::string& root_text,
                                  const std::vector<Subject>& cands, uint64_t seed) {
  std::vector<json> out(cands.size());
  std::vector<std::string> keys;
  std::vector<const leir::Program*> todo;
  std::vector<size_t> which;
  for (size_t i = 0; i < cands.size(); ++i) {
    keys.push_back(observation_key({"verify", verifier.identity(), std::to_string(seed), root_text, *cands[i].text}));
    if (auto got = store.get(keys.back())) out[i] = *got;
    else todo.push_back(cands[i].program), which.push_back(i);
  }
  if (todo.empty()) return out;
  auto vs = verifier.check(todo);
  std::vector<std::pair<std::string, json>> entries;
  for (size_t k = 0; k < vs.size(); ++k)
    entries.push_back({keys[which[k]],
                       {{"equivalent", vs[k].verified}, {"verdict", std::string(verify::to_string(vs[k].report.verdict))},
                        {"error", vs[k].report.error}, {"report", json::parse(verify::to_json(vs[k].report))}}});
  store.put_all(entries);
  for (size_t i : which) out[i] = *store.get(keys[i]);
  return out;
}

std::vector<Verification> stored_verifications(ObservationStore& store, RootVerifier& verifier,
                                               const std::string& root_text, const std::vector<Subject>& cands,
                                               uint64_t seed) {
  const auto stored = stored_verdicts(store, verifier, root_text, cands, seed);
  std::vector<Verification> out(cands.size());
  std::vector<const leir::Program*> again;
  std::vector<size_t> which;
  for (size_t i = 0; i < cands.size(); ++i) {
    if (!stored[i].contains("report")) {
      again.push_back(cands[i].program);
      which.push_back(i);
      continue;
    }
    out[i].method = verifier.method();
    out[i].report = verify::report_from_json(stored[i]["report"].dump());
    out[i].report.error = stored[i].value("error", std::string());
    out[i].verified = stored[i]["equivalent"].get<bool>();
  }
  auto checked = verifier.check(again);
  for (size_t k = 0; k < which.size(); ++k) out[which[k]] = std::move(checked[k]);
  return out;
}

}  // namespace steptp::tune
