#include "search/tune/tuner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>

#include <fmt/format.h>

#include "base/error.h"
#include "ir/leir/program_io.h"
#include "ir/leir/validate.h"
#include "transform/sampler.h"
#include "search/tune/cost_model.h"
#include "search/tune/database.h"
#include "search/tune/facts.h"
#include "search/tune/verification.h"

namespace steptp::tune {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr size_t kConfirm = 3;

Subject subject(const Node& n) { return {&n.program, &n.text}; }

std::string strategy_path(const strategies::Trace& t) {
  std::string s;
  for (const auto& st : t) s += (s.empty() ? "" : " > ") + st.strategy;
  return s;
}

// Held-out ranking quality: trained on the first half of the measured trials (in measurement
// order), tested on the second half — the situation of the search, which ranks candidates it
// has not measured yet with a model of the ones it has. With a pre-trained model: also its own
// ranking and that of its copy fine-tuned on the first half (the tuner's model at that point).
json ranking_quality(const std::vector<Features>& x, const std::vector<double>& y,
                     const std::shared_ptr<const PretrainedModel>& pretrained, const Features& root) {
  const size_t n = x.size();
  if (n < 2 * kMinTrainingSamples)
    return {{"held_out", n / 2}, {"kendall_tau", nullptr}, {"top_k_recall", nullptr},
            {"note", "too few measured candidates"}};
  size_t half = n / 2;
  std::vector<Features> xtr(x.begin(), x.begin() + long(half)), xte(x.begin() + long(half), x.end());
  std::vector<double> ytr(y.begin(), y.begin() + long(half)), yte(y.begin() + long(half), y.end());
  CostModel learned;
  learned.train(xtr, ytr);
  auto pl = learned.predict(xte);
  std::vector<double> pa;
  for (const auto& r : xte) pa.push_back(CostModel::prior(r));
  size_t k = std::max<size_t>(1, std::min<size_t>(5, yte.size() / 4));
  auto r4 = [](double v) { return std::round(v * 1e4) / 1e4; };
  auto quality = [&](const std::vector<double>& p) {
    return json{{"kendall_tau", r4(kendall_tau(p, yte))}, {"top_k_recall", r4(top_k_recall(p, yte, k))}};
  };
  json out = {{"held_out", yte.size()},
              {"k", k},
              {"kendall_tau", r4(kendall_tau(pl, yte))},
              {"top_k_recall", r4(top_k_recall(pl, yte, k))},
              {"analytic", quality(pa)}};
  if (pretrained) {
    CostModel fine;
    fine.use_pretrained(pretrained, root);
    fine.train(xtr, ytr);
    out["pretrained"] = quality(pretrained->predict(root, xte));
    out["fine_tuned"] = quality(fine.predict(xte));
  }
  return out;
}

}  // namespace

TuneResult tune(const leir::Program& root, const TuneOptions& o, const std::function<void(const Progress&)>& progress) {
  const auto t0 = Clock::now();
  leir::validate(root);
  TuneResult r;
  r.root = root;
  r.best = root;
  r.machine = this_machine(o.threads);
  std::unique_ptr<CpuRunner> own;
  Runner* runner = o.runner;
  if (!runner) {
    auto mo = o.measure;
    mo.threads = r.machine.threads;
    own = std::make_unique<CpuRunner>(mo, base::mix_seed(o.seed, 0x1b));
    runner = own.get();
  }
  MeasurementStore store(o.store_path);
  Comparer comparer(store, *runner);
  EvolutionaryOptions so = o.search;
  so.seed = base::mix_seed(o.seed, 0x5e);
  EvolutionarySearch search(root, r.machine, so);
  const uint64_t verify_seed = base::mix_seed(o.seed, 0x7e);
  RootVerifier verifier(root, verify_seed);
  r.verification = verifier.method();
  CostModel model;
  std::shared_ptr<const PretrainedModel> pretrained;
  if (!o.cost_model.empty()) {
    pretrained = PretrainedModel::load(o.cost_model);
    if (pretrained->machine_kind() != machine_kind(r.machine))
      throw base::Error(base::ErrorKind::Invalid,
                        fmt::format("{}: cost model trained for machine kind '{}', but this run is '{}' (a model is "
                                    "per machine kind: train one here with `steptp cost-model train`)",
                                    o.cost_model, pretrained->machine_kind(), machine_kind(r.machine)));
    model.use_pretrained(pretrained, search.nodes()[0].x);
  }
  // Nodes live in a growing vector: take references only while no round runs.
  int best_node = 0;
  backend::Comparison best_cmp;
  std::vector<Features> train_x{search.nodes()[0].x};
  std::vector<double> train_y{0.0};

  while (r.trials < o.trials) {
    if (o.time_limit_s > 0 && std::chrono::duration<double>(Clock::now() - t0).count() >= o.time_limit_s) break;
    auto chosen = search.next_round(model, o.trials - r.trials);
    if (chosen.empty()) break;
    const Node& root_node = search.nodes()[0];
    std::vector<Features> cx;
    for (int c : chosen) cx.push_back(search.nodes()[size_t(c)].x);
    auto pred = model.predict(cx);
    std::vector<Subject> subjects;
    for (int c : chosen) subjects.push_back(subject(search.nodes()[size_t(c)]));
    auto vs = stored_verdicts(store, verifier, root_node.text, subjects, verify_seed);
    std::vector<std::pair<Subject, Subject>> pairs;
    std::vector<size_t> timed;  // history index of each pair
    for (size_t k = 0; k < chosen.size(); ++k) {
      const Node& n = search.nodes()[size_t(chosen[k])];
      Trial t;
      t.node = chosen[k];
      t.round = search.round();
      t.strategy_path = strategy_path(n.trace);
      t.trace = n.trace;
      t.predicted = pred[k];
      t.learned = model.learned();
      const json& v = vs[k];
      t.verified = v.at("equivalent").get<bool>();
      if (!t.verified) {
        t.error = "not verified: " + v.value("error", std::string()) + " (" + v.value("verdict", std::string()) + ")";
        search.set_failed(chosen[k]);
        r.not_verified++;
      } else {
        pairs.push_back({subject(root_node), subject(n)});
        timed.push_back(r.history.size());
      }
      r.history.push_back(std::move(t));
    }
    auto results = comparer.compare(pairs);
    for (size_t m = 0; m < pairs.size(); ++m) {
      Trial& t = r.history[timed[m]];
      if (!results[m].ok) {
        t.error = results[m].error;
        search.set_failed(t.node);
        r.failed++;
        continue;
      }
      t.ok = true;
      t.cmp = results[m].cmp;
      r.measured++;
      double l2 = std::log2(std::max(1e-9, t.cmp.speedup));
      search.set_measured(t.node, l2);
      train_x.push_back(search.nodes()[size_t(t.node)].x);
      train_y.push_back(l2);
      if (clears_noise(t.cmp) && t.cmp.speedup > (best_node ? best_cmp.speedup : 1.0)) {
        best_node = t.node;
        best_cmp = t.cmp;
      }
      if (r.root_ms == 0) r.root_ms = t.cmp.a.median_ms;
    }
    r.trials += int(chosen.size());
    model.train(train_x, train_y);
    if (progress) {
      Progress p{r.trials, o.trials, search.round(), best_node ? best_cmp.a.median_ms : r.root_ms,
                 best_node ? best_cmp.b.median_ms : r.root_ms, best_node ? best_cmp.speedup : 1.0};
      progress(p);
    }
  }
  r.search = search.stats();
  // Confirmation: the kConfirm best by their search session are timed again against the root in
  // a fresh session; the best is the fastest confirmed one that still clears the noise (the
  // maximum of noisy measurements is biased high: the winner's curse).
  {
    std::vector<int> top;
    for (const auto& t : r.history)
      if (t.ok && clears_noise(t.cmp)) top.push_back(t.node);
    std::stable_sort(top.begin(), top.end(), [&](int a, int b) {
      return search.nodes()[size_t(a)].log2_speedup > search.nodes()[size_t(b)].log2_speedup;
    });
    if (top.size() > kConfirm) top.resize(kConfirm);
    std::vector<std::pair<Subject, Subject>> pairs;
    for (int n : top) pairs.push_back({subject(search.nodes()[0]), subject(search.nodes()[size_t(n)])});
    auto res = comparer.compare(pairs, "confirm");
    best_node = 0;
    for (size_t k = 0; k < res.size(); ++k)
      if (res[k].ok && clears_noise(res[k].cmp) && res[k].cmp.speedup > (best_node ? best_cmp.speedup : 1.0))
        best_node = top[k], best_cmp = res[k].cmp;
  }
  if (best_node) {
    const Node& b = search.nodes()[size_t(best_node)];
    r.best = b.program;
    r.best_trace = b.trace;
    r.root_ms = best_cmp.a.median_ms;
    r.best_ms = best_cmp.b.median_ms;
    r.speedup = best_cmp.speedup;
  } else {
    r.best_ms = r.root_ms;
  }
  // The best trace step by step: each result against its parent.
  std::vector<int> chain;
  for (int n = best_node; n > 0; n = search.nodes()[size_t(n)].parent) chain.push_back(n);
  std::reverse(chain.begin(), chain.end());
  r.trajectory.assign(chain.size(), {});
  for (size_t k = 0; k < chain.size(); ++k) {
    const Node& n = search.nodes()[size_t(chain[k])];
    if (n.state == Node::State::Measured) r.trajectory[k].speedup_vs_root = std::exp2(n.log2_speedup);
  }
  if (o.time_trajectory && !chain.empty()) {
    std::vector<std::pair<Subject, Subject>> steps;
    for (int n : chain) steps.push_back({subject(search.nodes()[size_t(search.nodes()[size_t(n)].parent)]), subject(search.nodes()[size_t(n)])});
    auto res = comparer.compare(steps);
    for (size_t k = 0; k < res.size(); ++k) {
      if (!res[k].ok) continue;
      r.trajectory[k].measured = true;
      r.trajectory[k].speedup_vs_parent = res[k].cmp.speedup;
      r.trajectory[k].faster = clears_noise(res[k].cmp);
    }
  }
  // The roofline: the copy of the program's unavoidable bytes, a fact in the store like the
  // comparisons (so a rerun on the store reports the same).
  if (o.roofline) {
    const ProgramTraffic traffic = program_traffic(root);
    const std::string copy_key = measurement_key(
        {"copy", runner->identity(), fmt::format("read={} write={}", traffic.read_bytes, traffic.write_bytes)});
    std::optional<nlohmann::json> copy = store.get(copy_key);
    if (!copy)
      if (auto ms = runner->copy_ms(traffic.read_bytes, traffic.write_bytes)) {
        store.put_all({{copy_key, nlohmann::json{{"median_ms", *ms}}}});
        copy = store.get(copy_key);  // another run's entry wins
      }
    if (copy) r.roofline = Roofline{traffic, (*copy)["median_ms"].get<double>(), r.root_ms, r.best_ms, r.machine.threads};
  }
  r.cost_model = ranking_quality(std::vector<Features>(train_x.begin() + 1, train_x.end()),
                                 std::vector<double>(train_y.begin() + 1, train_y.end()), pretrained,
                                 search.nodes()[0].x);
  r.reused = comparer.reused;
  r.measured_now = comparer.measured_now;
  r.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
  return r;
}

json trajectory_json(const TuneResult& r) {
  json steps = json::array();
  for (size_t k = 0; k < r.best_trace.size(); ++k) {
    json s = strategies::step_to_json(r.best_trace[k]);
    const auto& t = r.trajectory[k];
    s["speedup_vs_parent"] = t.measured ? json(t.speedup_vs_parent) : json(nullptr);
    s["faster_than_parent"] = t.measured ? json(t.faster) : json(nullptr);
    s["speedup_vs_root"] = t.speedup_vs_root ? json(*t.speedup_vs_root) : json(nullptr);
    steps.push_back(s);
  }
  return steps;
}

json result_json(const TuneResult& r) {
  json history = json::array();
  for (const auto& t : r.history) {
    json h = {{"round", t.round}, {"steps", t.strategy_path}, {"predicted_log2_speedup", std::round(t.predicted * 1e4) / 1e4},
              {"verified", t.verified}, {"ok", t.ok}};
    if (t.ok) h["speedup"] = t.cmp.speedup, h["time_s"] = t.cmp.b.median_ms / 1e3, h["faster"] = clears_noise(t.cmp);
    else h["error"] = t.error;
    history.push_back(h);
  }
  return {{"program", r.root.name},
          {"root_time_s", r.root_ms / 1e3},
          {"best_time_s", r.best_ms / 1e3},
          {"speedup", r.speedup},
          {"trials_measured", r.trials},
          {"measured_ok", r.measured},
          {"not_verified", r.not_verified},
          {"failed", r.failed},
          {"threads", r.machine.threads},
          {"machine", fingerprint(r.machine)},
          {"verification", r.verification},
          {"trajectory", trajectory_json(r)},
          {"cost_model", r.cost_model},
          {"roofline", r.roofline ? roofline_json(*r.roofline) : json(nullptr)},
          {"search", {{"rounds", r.history.empty() ? 0 : r.history.back().round}, {"expanded", r.search.expanded},
                      {"candidates", r.search.candidates}, {"duplicates", r.search.duplicates},
                      {"invalid", r.search.invalid}}},
          {"history", history}};
}

}  // namespace steptp::tune
