#include "search/tune/task_scheduler.h"

#include <algorithm>
#include <chrono>
#include <memory>

#include "base/hash.h"
#include "ir/leir/program_io.h"
#include "ir/leir/validate.h"
#include "search/tune/database.h"
#include "search/tune/observations.h"
#include "search/tune/verification.h"

namespace steptp::tune {

TaskScheduler::TaskScheduler(std::vector<double> weights, uint64_t seed, SchedulerOptions o)
    : weights_(std::move(weights)),
      seed_(seed),
      o_(o),
      best_(weights_.size()),
      trials_(weights_.size(), 0),
      rounds_(weights_.size(), 0),
      exhausted_(weights_.size(), 0) {}

double TaskScheduler::gain(int task) const {
  const auto& h = best_[size_t(task)];
  if (h.empty()) return 0;
  double total = 0;
  for (size_t k = 0; k < best_.size(); ++k)
    if (!best_[k].empty()) total += weights_[k] * best_[k].back();
  const double share = total > 0 ? h.back() / total : 0;
  const size_t back = std::min(h.size() - 1, size_t(std::max(1, o_.window)));
  const double before = h[h.size() - 1 - back];
  const double slope = back > 0 && before > 0 ? (before - h.back()) / before / double(back) : 0;
  return weights_[size_t(task)] * share * std::max(o_.slope_floor, slope);
}

int TaskScheduler::next() {
  const int n = int(weights_.size());
  std::vector<int> live;
  for (int k = 0; k < n; ++k)
    if (!exhausted_[size_t(k)]) live.push_back(k);
  if (live.empty()) return -1;
  const int decision = decisions_++;
  // Warm-up: the live task with the fewest rounds, in index order.
  for (int k : live)
    if (rounds_[size_t(k)] < o_.warmup_rounds) return k;
  // ε-greedy from the seed: a uniform draw in [0, 1) from 53 bits of the decision's stream.
  const uint64_t draw = base::mix_seed(seed_, uint64_t(decision));
  if (double(draw >> 11) * 0x1.0p-53 < o_.epsilon)
    return live[size_t(base::mix_seed(draw, 1) % live.size())];
  int best = live.front();
  for (int k : live)
    if (gain(k) > gain(best)) best = k;
  return best;
}

void TaskScheduler::report(int task, double root_ms, double best_ms, int trials) {
  auto& h = best_[size_t(task)];
  if (h.empty()) h.push_back(root_ms);
  h.push_back(best_ms);
  trials_[size_t(task)] = trials;
  rounds_[size_t(task)]++;
}

void TaskScheduler::exhaust(int task) { exhausted_[size_t(task)] = 1; }

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// Trials per scheduler decision: half the budget goes to the round robin of the warm-up (at
// least 2 trials a task: the rule chains come first), at most the search's round.
int task_round_size(int trials, size_t tasks, int per_round) {
  return std::clamp(trials / std::max(1, 2 * int(tasks)), 2, std::max(2, per_round));
}

// What a task offers the composition, best first: its confirmed best, then its other measured
// candidates that were faster than its root, by their measured speedup (at most kAlternatives).
std::vector<strategies::Trace> composition_candidates(const TuneResult& t) {
  constexpr size_t kAlternatives = 8;
  std::vector<strategies::Trace> out;
  std::vector<json> seen;  // the traces taken, as JSON (steps have no equality of their own)
  auto take = [&](const strategies::Trace& trace) {
    json j = json::array();
    for (const auto& step : trace) j.push_back(strategies::step_to_json(step));
    if (std::find(seen.begin(), seen.end(), j) != seen.end()) return;
    seen.push_back(std::move(j));
    out.push_back(trace);
  };
  if (!t.best_trace.empty()) take(t.best_trace);
  std::vector<const Trial*> faster;
  for (const auto& h : t.history)
    if (h.ok && clears_noise(h.cmp) && h.cmp.speedup > 1) faster.push_back(&h);
  std::stable_sort(faster.begin(), faster.end(),
                   [](const Trial* a, const Trial* b) { return a->cmp.speedup > b->cmp.speedup; });
  for (const Trial* h : faster) {
    if (out.size() >= kAlternatives) break;
    take(h->trace);
  }
  return out;
}

}  // namespace

TuneResult tune_program(const leir::Program& root, const TuneOptions& o, const TaskOptions& to,
                        const std::function<void(const Progress&)>& progress) {
  const auto t0 = Clock::now();
  leir::validate(root);
  std::vector<Task> tasks = to.enabled ? extract_tasks(root) : std::vector<Task>{};
  size_t uses = 0;
  for (const auto& t : tasks) uses += t.uses.size();
  if (uses < 2) return tune(root, o, progress);

  const Machine machine = this_machine(o.threads);
  std::unique_ptr<Runner> own;
  Runner* runner = o.runner;
  if (!runner) runner = (own = default_runner(o, machine)).get();
  ObservationStore store(o.store_path);
  // Each task's search is seeded by its hash, so a task recurring in another program or run
  // replays the same rounds and finds its measurements in the store.
  std::vector<std::unique_ptr<TuneSession>> sessions;
  std::vector<double> weights;
  for (const auto& t : tasks) {
    TuneOptions tk = o;
    tk.seed = base::mix_seed(o.seed, t.hash);
    tk.time_trajectory = false;  // the composed program's steps are not timed one by one either
    tk.roofline = false;
    if (tk.workload.empty()) tk.workload = root.name;  // a task's kept candidates are its program's
    sessions.push_back(std::make_unique<TuneSession>(t.program, tk, store, *runner, machine));
    weights.push_back(double(t.uses.size()));
  }
  TaskScheduler scheduler(weights, base::mix_seed(o.seed, 0x75), to.scheduler);
  const int unit = task_round_size(o.trials, tasks.size(), o.search.per_round);
  int spent = 0, decisions = 0;
  json allocation = json::array();  // the task of each round, in order
  while (spent < o.trials) {
    if (o.time_limit_s > 0 && std::chrono::duration<double>(Clock::now() - t0).count() >= o.time_limit_s) break;
    const int k = scheduler.next();
    if (k < 0) break;
    TuneSession& s = *sessions[size_t(k)];
    const int n = s.round(std::min(unit, o.trials - spent));
    if (n == 0) {
      scheduler.exhaust(k);
      continue;
    }
    spent += n;
    scheduler.report(k, s.root_ms(), s.best_ms(), s.trials());
    allocation.push_back(k);
    if (progress) {
      // The tasks' times summed over their uses: what the tuned part of the program takes.
      double root_ms = 0, best_ms = 0;
      for (size_t j = 0; j < tasks.size(); ++j) {
        root_ms += weights[j] * sessions[j]->root_ms();
        best_ms += weights[j] * sessions[j]->best_ms();
      }
      progress(Progress{spent, o.trials, ++decisions, root_ms, best_ms, best_ms > 0 ? root_ms / best_ms : 1.0});
    }
  }

  TuneResult r;
  r.root = root;
  r.best = root;
  r.machine = machine;
  r.trials = spent;
  std::vector<TuneResult> results;
  std::vector<std::vector<strategies::Trace>> candidates;  // per task, best first
  for (auto& s : sessions) {
    results.push_back(s->finish());
    const TuneResult& t = results.back();
    candidates.push_back(composition_candidates(t));
    r.measured += t.measured;
    r.not_verified += t.not_verified;
    r.failed += t.failed;
    r.reused += t.reused;
    r.measured_now += t.measured_now;
    r.search.expanded += t.search.expanded;
    r.search.candidates += t.search.candidates;
    r.search.duplicates += t.search.duplicates;
    r.search.invalid += t.search.invalid;
    r.history.insert(r.history.end(), t.history.begin(), t.history.end());
  }

  // Compose, verify against the root; if the whole does not verify, add the tasks one at a time
  // and keep those with which it still does.
  const uint64_t verify_seed = base::mix_seed(o.seed, 0x7e);
  RootVerifier verifier(root, verify_seed);
  r.verification = verifier.method();
  const std::string root_text = leir::program_to_text(root, false);
  auto verified = [&](const leir::Program& p) {
    const std::string text = leir::program_to_text(p, false);
    const auto v = stored_verdicts(store, verifier, root_text, {Subject{&p, &text}}, verify_seed);
    return v[0].at("equivalent").get<bool>();
  };
  Composition c = compose(root, tasks, candidates);
  std::vector<char> dropped(tasks.size(), 0);
  if (!c.trace.empty() && !verified(c.program)) {
    // The composition becomes the last one that verified as each task's steps are added (the
    // root's, with no steps, when none does), so it is verified by construction either way.
    std::vector<std::vector<strategies::Trace>> kept(tasks.size());
    c = compose(root, tasks, kept);
    for (size_t k = 0; k < tasks.size(); ++k) {
      if (candidates[k].empty()) continue;
      kept[k] = candidates[k];
      Composition trial = compose(root, tasks, kept);
      if (trial.trace.empty() || !verified(trial.program)) kept[k].clear(), dropped[k] = 1;
      else c = std::move(trial);
    }
  }

  // The composed program against the root, one fresh session.
  Comparer comparer(store, *runner);
  const std::string best_text = leir::program_to_text(c.program, false);
  // The composed program carries every task's gain in one candidate, so one noisy session must
  // not drop them all: a session that does not show it faster is followed by a second one.
  std::vector<PairResult> res;
  for (const char* session : {"confirm", "confirm-2"}) {
    res = comparer.compare({{Subject{&root, &root_text}, Subject{&c.program, &best_text}}}, session);
    if (c.trace.empty() || (res[0].ok && clears_noise(res[0].cmp) && res[0].cmp.speedup > 1)) break;
  }
  r.reused += comparer.reused;
  r.measured_now += comparer.measured_now;
  if (!res.empty() && res[0].ok) {
    r.root_ms = res[0].cmp.a.median_ms;
    r.best_ms = r.root_ms;
    if (!c.trace.empty() && clears_noise(res[0].cmp) && res[0].cmp.speedup > 1) {
      r.best = c.program;
      r.best_trace = c.trace;
      r.best_ms = res[0].cmp.b.median_ms;
      r.speedup = res[0].cmp.speedup;
    }
  }
  r.trajectory.assign(r.best_trace.size(), {});  // composed steps are not timed one by one
  if (o.roofline) r.roofline = measure_roofline(store, *runner, root, r.root_ms, r.best_ms, machine.threads);
  r.cost_model = {{"note", "per task (tasks[].cost_model)"}};

  json jt = json::array();
  for (size_t k = 0; k < tasks.size(); ++k) {
    const TuneResult& t = results[k];
    json nests = json::array();
    for (const auto& u : tasks[k].uses) {
      json items = json::array();
      for (int i = u.first; i < u.first + u.count; ++i) items.push_back(i);
      nests.push_back(items);
    }
    json skipped = json::array();
    for (const auto& sk : c.skipped)
      if (sk.find(tasks[k].hash_hex()) != std::string::npos) skipped.push_back(sk);
    if (dropped[k]) skipped.push_back("the composed program did not verify with this task's steps");
    jt.push_back({{"hash", tasks[k].hash_hex()},
                  {"nests", nests},
                  {"weight", weights[k]},
                  {"work", tasks[k].work},
                  {"trials", scheduler.trials()[k]},
                  {"rounds", scheduler.rounds()[k]},
                  {"root_time_s", t.root_ms / 1e3},
                  {"best_time_s", t.best_ms / 1e3},
                  {"speedup", t.speedup},
                  {"steps", t.best_trace.size()},
                  {"cost_model", t.cost_model},
                  {"skipped", skipped}});
  }
  json composed = {{"steps", c.trace.size()}, {"verified", true}};  // by construction, above
  if (!res.empty() && res[0].ok) {
    composed["speedup"] = res[0].cmp.speedup;
    composed["faster"] = clears_noise(res[0].cmp);
  } else if (!res.empty()) {
    composed["error"] = res[0].error;
  }
  r.tasks = {{"unit", unit}, {"allocation", allocation}, {"composed", composed}, {"list", jt}};
  r.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
  return r;
}

}  // namespace steptp::tune
