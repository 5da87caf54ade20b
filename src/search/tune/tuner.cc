#include "search/tune/tuner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>

#include <fmt/format.h>

#include "base/error.h"
#include "base/hash.h"
#include "ir/leir/canonical.h"
#include "ir/leir/program_io.h"
#include "ir/leir/validate.h"
#include "transform/sampler.h"
#include "search/tune/cost_model.h"
#include "search/tune/database.h"
#include "search/tune/observations.h"
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
  const size_t k = held_out_k(yte.size());
  auto quality = [&](const std::vector<double>& p) {
    return json{{"kendall_tau", round_quality(kendall_tau(p, yte))},
                {"top_k_recall", round_quality(top_k_recall(p, yte, k))}};
  };
  json out = {{"held_out", yte.size()}, {"k", k}};
  out.update(quality(pl));
  out["analytic"] = quality(pa);
  if (pretrained) {
    CostModel fine;
    fine.use_pretrained(pretrained, root);
    fine.train(xtr, ytr);
    out["pretrained"] = quality(pretrained->predict(root, xte));
    out["fine_tuned"] = quality(fine.predict(xte));
  }
  return out;
}

// The pre-trained cost model of `o`, checked against this run's machine kind; null: none.
std::shared_ptr<const PretrainedModel> load_pretrained(const TuneOptions& o, const Machine& m) {
  if (o.cost_model.empty()) return nullptr;
  auto pretrained = PretrainedModel::load(o.cost_model);
  if (pretrained->machine_kind() != machine_kind(m))
    throw base::Error(base::ErrorKind::Invalid,
                      fmt::format("{}: cost model trained for machine kind '{}', but this run is '{}' (a model is "
                                  "per machine kind: train one here with `steptp cost-model train`)",
                                  o.cost_model, pretrained->machine_kind(), machine_kind(m)));
  return pretrained;
}

}  // namespace

struct TuneSession::State {
  State(const leir::Program& root, const TuneOptions& o, ObservationStore& store, Runner& runner, const Machine& m)
      : o(o),
        store(store),
        runner(runner),
        comparer(store, runner),
        search(root, m, search_options(o)),
        verify_seed(base::mix_seed(o.seed, 0x7e)),
        verifier(root, verify_seed),
        pretrained(load_pretrained(o, m)),
        kind(machine_kind(m)),
        workload(o.workload.empty() ? root.name : o.workload),
        root_hash(base::hex64(leir::program_hash(root))) {
    if (pretrained) model.use_pretrained(pretrained, search.nodes()[0].x);
    r.root = root;
    r.best = root;
    r.machine = m;
    r.verification = verifier.method();
    train_x.push_back(search.nodes()[0].x);
    train_y.push_back(0.0);
  }
  static EvolutionaryOptions search_options(const TuneOptions& o) {
    EvolutionaryOptions so = o.search;
    so.seed = base::mix_seed(o.seed, 0x5e);
    return so;
  }

  TuneOptions o;
  ObservationStore& store;
  Runner& runner;
  Comparer comparer;
  EvolutionarySearch search;
  const uint64_t verify_seed;
  RootVerifier verifier;
  std::shared_ptr<const PretrainedModel> pretrained;
  const std::string kind, workload, root_hash;  // what each kept candidate is filed under
  CostModel model;
  TuneResult r;
  // Nodes live in a growing vector: take references only while no round runs.
  int best_node = 0;
  backend::Comparison best_cmp;
  std::vector<Features> train_x;
  std::vector<double> train_y;
};

TuneSession::TuneSession(const leir::Program& root, const TuneOptions& o, ObservationStore& store, Runner& runner,
                         const Machine& m)
    : s_(std::make_unique<State>(root, o, store, runner, m)) {}
TuneSession::~TuneSession() = default;

int TuneSession::trials() const { return s_->r.trials; }
double TuneSession::root_ms() const { return s_->r.root_ms; }
double TuneSession::best_ms() const {
  // The root's first session time over the best speedup: one scale for every round's best.
  return s_->best_node ? s_->r.root_ms / s_->best_cmp.speedup : s_->r.root_ms;
}

Progress TuneSession::progress() const {
  const State& s = *s_;
  return {s.r.trials, s.o.trials, s.search.round(), s.best_node ? s.best_cmp.a.median_ms : s.r.root_ms,
          s.best_node ? s.best_cmp.b.median_ms : s.r.root_ms, s.best_node ? s.best_cmp.speedup : 1.0};
}

int TuneSession::round(int limit) {
  State& s = *s_;
  TuneResult& r = s.r;
  auto& search = s.search;
  auto chosen = search.next_round(s.model, limit);
  if (chosen.empty()) return 0;
  const Node& root_node = search.nodes()[0];
  std::vector<Features> cx;
  for (int c : chosen) cx.push_back(search.nodes()[size_t(c)].x);
  auto pred = s.model.predict(cx);
  std::vector<Subject> subjects;
  for (int c : chosen) subjects.push_back(subject(search.nodes()[size_t(c)]));
  auto vs = stored_verdicts(s.store, s.verifier, root_node.text, subjects, s.verify_seed);
  std::vector<std::pair<Subject, Subject>> pairs;
  std::vector<size_t> timed;  // history index of each pair
  for (size_t k = 0; k < chosen.size(); ++k) {
    const Node& n = search.nodes()[size_t(chosen[k])];
    Trial t;
    t.node = chosen[k];
    t.round = search.round();
    t.strategy_path = strategy_path(n.trace);
    t.trace = n.trace;
    t.hash = leir::program_hash(n.program);
    t.predicted = pred[k];
    t.learned = s.model.learned();
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
  auto results = s.comparer.compare(pairs);
  // The measured candidates are kept for a cost model's training (the store's `candidates`), the
  // root beside them (log2 speedup 0), each keyed like its comparison (the runner, the two texts):
  // a replay finds them kept and adds nothing. An estimate (runner.times() false) is not kept.
  std::vector<std::pair<std::string, json>> kept;
  auto keep = [&](const Node& n, const std::string& hash, double log2_speedup) {
    if (!s.runner.times()) return;
    kept.push_back({observation_key({"candidate", s.runner.identity(), root_node.text, n.text}),
                    {{"root", s.root_hash}, {"hash", hash}, {"workload", s.workload},
                     {"machine_kind", s.kind}, {"program", n.text}, {"log2_speedup", log2_speedup}}});
  };
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
    keep(search.nodes()[size_t(t.node)], base::hex64(t.hash), l2);
    s.train_x.push_back(search.nodes()[size_t(t.node)].x);
    s.train_y.push_back(l2);
    if (clears_noise(t.cmp) && t.cmp.speedup > (s.best_node ? s.best_cmp.speedup : 1.0)) {
      s.best_node = t.node;
      s.best_cmp = t.cmp;
    }
    if (r.root_ms == 0) r.root_ms = t.cmp.a.median_ms;
  }
  if (!kept.empty()) {
    keep(root_node, s.root_hash, 0.0);
    s.store.put_candidates(kept);
  }
  r.trials += int(chosen.size());
  s.model.train(s.train_x, s.train_y);
  return int(chosen.size());
}

TuneResult TuneSession::finish() {
  State& s = *s_;
  TuneResult& r = s.r;
  auto& search = s.search;
  auto& comparer = s.comparer;
  int& best_node = s.best_node;
  backend::Comparison& best_cmp = s.best_cmp;
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
  if (s.o.time_trajectory && !chain.empty()) {
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
  if (s.o.roofline) r.roofline = measure_roofline(s.store, s.runner, r.root, r.root_ms, r.best_ms, r.machine.threads);
  r.cost_model = ranking_quality(std::vector<Features>(s.train_x.begin() + 1, s.train_x.end()),
                                 std::vector<double>(s.train_y.begin() + 1, s.train_y.end()), s.pretrained,
                                 s.search.nodes()[0].x);
  r.reused = comparer.reused;
  r.measured_now = comparer.measured_now;
  return r;
}

std::optional<Roofline> measure_roofline(ObservationStore& store, Runner& runner, const leir::Program& root,
                                         double root_ms, double best_ms, int threads) {
  // The copy of the program's unavoidable bytes, a fact in the store like the comparisons (so a
  // rerun on the store reports the same).
  const ProgramTraffic traffic = program_traffic(root);
  const std::string copy_key = observation_key(
      {"copy", runner.identity(), fmt::format("read={} write={}", traffic.read_bytes, traffic.write_bytes)});
  std::optional<nlohmann::json> copy = store.get(copy_key);
  if (!copy)
    if (auto ms = runner.copy_ms(traffic.read_bytes, traffic.write_bytes)) {
      store.put_all({{copy_key, nlohmann::json{{"median_ms", *ms}}}});
      copy = store.get(copy_key);  // another run's entry wins
    }
  if (!copy) return std::nullopt;
  return Roofline{traffic, (*copy)["median_ms"].get<double>(), root_ms, best_ms, threads};
}

std::unique_ptr<Runner> default_runner(const TuneOptions& o, const Machine& m) {
  auto mo = o.measure;
  mo.threads = m.threads;
  return std::make_unique<CpuRunner>(mo, base::mix_seed(o.seed, 0x1b));
}

TuneResult tune(const leir::Program& root, const TuneOptions& o, const std::function<void(const Progress&)>& progress) {
  const auto t0 = Clock::now();
  leir::validate(root);
  const Machine machine = this_machine(o.threads);
  std::unique_ptr<Runner> own;
  Runner* runner = o.runner;
  if (!runner) runner = (own = default_runner(o, machine)).get();
  ObservationStore store(o.store_path);
  TuneSession session(root, o, store, *runner, machine);
  while (session.trials() < o.trials) {
    if (o.time_limit_s > 0 && std::chrono::duration<double>(Clock::now() - t0).count() >= o.time_limit_s) break;
    if (session.round(o.trials - session.trials()) == 0) break;
    if (progress) progress(session.progress());
  }
  TuneResult r = session.finish();
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
    json h = {{"round", t.round}, {"steps", t.strategy_path}, {"hash", base::hex64(t.hash)},
              {"predicted_log2_speedup", std::round(t.predicted * 1e4) / 1e4},
              {"verified", t.verified}, {"ok", t.ok}};
    if (t.ok) h["speedup"] = t.cmp.speedup, h["time_s"] = t.cmp.b.median_ms / 1e3, h["faster"] = clears_noise(t.cmp);
    else h["error"] = t.error;
    history.push_back(h);
  }
  json j = {{"program", r.root.name},
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
  if (!r.tasks.is_null()) j["tasks"] = r.tasks;  // only then: a single-root run's files stay as they were
  return j;
}

}  // namespace steptp::tune
