// Records: one per verified transition (single-answer) and one multi-answer record per state.
#include <algorithm>
#include <chrono>
#include <map>
#include <set>

#include <fmt/format.h>

#include "ir/analysis/dependence.h"
#include "ir/analysis/structure.h"
#include "lower/cuda/cuda_codegen.h"
#include "base/hash.h"
#include "apps/dataset/dataset.h"
#include "apps/dataset/measurement.h"
#include "apps/dataset/reasoning.h"
#include "apps/dataset/record_selection.h"
#include "apps/dataset/tuned_trajectory.h"
#include "ir/leir/canonical.h"
#include "ir/leir/program_io.h"
#include "transform/sampler.h"
#include "search/tune/machine.h"

namespace steptp::dataset {
namespace {

using nlohmann::json;

// Loop-level dependence facts of top-level nest `index` of `p`.
json loop_facts(const leir::Program& p, int index) {
  json loops = json::array();
  for (const auto& nr : analysis::all_nests(p.body)) {
    if (nr.path.size() != 1 || nr.path[0] != index) continue;
    for (int k = 0; k < int(nr.nest->loops.size()); ++k) {
      const auto& l = nr.nest->loops[size_t(k)];
      auto chk = analysis::check_loop(nr, k);
      loops.push_back({{"var", l.var},
                       {"kind", std::string(1, leir::to_char(l.kind))},
                       {"extent", l.extent},
                       {"dependence", dependence_name(chk.kind)},
                       {"reason", chk.reason}});
    }
  }
  return loops;
}

json facts_json(const leir::Program& p, const analysis::ProgramFacts& pf, int site_item) {
  json nests = json::array();
  for (size_t i = 0; i < pf.nests.size(); ++i) {
    const auto& n = pf.nests[i];
    nests.push_back({{"index", i},
                     {"header", n.header},
                     {"iterations", n.iterations},
                     {"flops", n.flops},
                     {"bytes", n.bytes},
                     {"parallel_loops", n.parallel_loops},
                     {"vector_loops", n.vector_loops},
                     {"carried_loops", n.carried_loops},
                     {"reduction_loops", n.reduction_loops}});
  }
  json f = {{"items", p.body.size()}, {"statements", pf.statements}, {"flops", pf.flops}, {"bytes", pf.bytes},
            {"nests", nests}, {"site_item", site_item}};
  if (site_item >= 0 && site_item < int(p.body.size()) && p.body[size_t(site_item)].is_nest())
    f["site_loops"] = loop_facts(p, site_item);
  else
    f["site_loops"] = json::array();
  return f;
}

// One answer of a record (its "id" is set where it is used: single and multi-answer records may
// share a transition).
json answer_json(const search::Transition& t, const analysis::ProgramFacts& parent_facts) {
  int site_item = t.site.path.empty() ? -1 : t.site.path[0];
  double sp = search::round_ratio(t.cost_parent.value, t.cost_result.value);
  double sr = search::round_ratio(t.cost_root.value, t.cost_result.value);
  json a = {{"strategy", t.strategy},
          {"site", {{"index", t.site_index}, {"path", t.site.path}, {"detail", t.site.detail},
                    {"description", t.site.description}, {"handle", site_handle(t.parent, t.strategy, size_t(t.site_index))}}},
          {"params", strategies::params_json(t.params)},
          {"exactness", std::string(strategies::to_string(t.exactness))},
          {"result_program", leir::program_to_text(t.result)},
          {"result_hash", base::hex64(t.result_hash)},
          {"verification", json::parse(verify::to_json(t.report))},
          {"cost", {{"measured", t.cost_result.measured},
                    {"unit", t.cost_result.measured ? "us" : "model"},
                    {"root", t.cost_root.value},
                    {"parent", t.cost_parent.value},
                    {"result", t.cost_result.value},
                    {"speedup_vs_parent", sp},
                    {"speedup_vs_root", sr}}},
          {"label", t.improving ? "improving" : "non_improving"},
          {"chosen", t.chosen},
          {"transition", step_transition(t.parent, t.result)},
          {"effect", step_effect(t.parent, parent_facts, t.result)},
          {"site_item", site_item}};
  // Tuned records (apps/dataset/tuned_trajectory.h): the tuner's learned-model prediction for the
  // result, and for a step of the best-found path its place on the path and the speedup the whole
  // path reaches (the grounds of an "enabling" label).
  if (t.learned_speedup_vs_root)
    a["learned_model"] = {{"predicted_speedup_vs_root", search::round_ratio(*t.learned_speedup_vs_root, 1.0)}};
  if (t.path_step)
    a["path"] = {{"step", t.path_step}, {"of", t.path_length}, {"speedup_vs_root", search::round_ratio(t.path_speedup, 1.0)}};
  return a;
}

// Sets the site handle of each of `steps` (the steps so far of the state `hash`, in order) by
// walking back the transitions that produced the state: the last step is the transition whose
// result is the state, with the same strategy and params, and so on to the root. Steps whose
// producer is not among the transitions keep no site.
void add_step_sites(json& steps, uint64_t hash, const std::vector<search::Transition>& transitions,
                    const std::multimap<uint64_t, size_t>& producer) {
  for (size_t k = steps.size(); k-- > 0;) {
    const search::Transition* from = nullptr;
    for (auto [it, end] = producer.equal_range(hash); it != end && !from; ++it) {
      const auto& t = transitions[it->second];
      if (t.depth == int(k) + 1 && t.strategy == steps[k]["strategy"] && strategies::params_json(t.params) == steps[k]["params"])
        from = &t;
    }
    if (!from) return;
    steps[k]["site"] = site_handle(from->parent, from->strategy, size_t(from->site_index));
    hash = leir::program_hash(from->parent);
  }
}

// The expectation of each answer from the reasoning rules (apps/dataset/reasoning.h): what the
// `<think>` concludes, stored so stats.json can compare it with the measured label.
void set_expectations(json& rec) {
  for (auto& a : rec["answers"]) a["expectation"] = expect(rec, a).verdict;
}

}  // namespace

namespace {

// Records of one root from its transitions (grouped by parent state).
json records_from(const Root& r, const GenerateOptions& o, const std::vector<search::Transition>& transitions,
                  uint64_t seed) {
  std::string root_text = leir::program_to_text(r.program);
  json root = {{"key", r.key}, {"family", r.family}, {"name", r.program.name},
               {"hash", base::hex64(leir::program_hash(r.program))}};
  // Group transitions by parent state (in order of first appearance).
  std::vector<int> state_order;
  std::map<int, std::vector<size_t>> by_state;
  for (size_t i = 0; i < transitions.size(); ++i) {
    int s = transitions[i].state;
    if (!by_state.count(s)) state_order.push_back(s);
    by_state[s].push_back(i);
  }
  // The machine the records' kernels are timed on (CPU target; the prompt states it).
  const json machine = o.target == "cpu" ? machine_json(tune::this_machine(o.measure_threads)) : json();
  // The step that produced each program (by hash), so a state's steps so far get their sites.
  std::multimap<uint64_t, size_t> producer;
  for (size_t i = 0; i < transitions.size(); ++i) producer.emplace(transitions[i].result_hash, i);
  json records = json::array();
  int seq = 0;
  auto improving = [&](size_t i) { return counts_as_improving(transitions[i]); };
  const auto strategy_count = strategy_counts(transitions);
  const std::set<size_t> contrast =
      o.non_improving_per_root >= 0 ? contrast_steps(transitions, o.non_improving_per_root, seed) : std::set<size_t>{};
  // The fields every record of a state shares, from the state's first transition.
  auto state_base = [&](int s, const search::Transition& first) {
    json base = {{"root", root},
                 {"root_program", root_text},
                 {"parent_program", leir::program_to_text(first.parent)},
                 {"parent_hash", base::hex64(leir::program_hash(first.parent))},
                 {"state", s},
                 {"depth", first.depth},
                 {"steps_so_far", json::array()},
                 {"target", o.target},
                 {"parent_speedup_vs_root", search::round_ratio(first.cost_root.value, first.cost_parent.value)}};
    for (const auto& st : first.steps_so_far)
      base["steps_so_far"].push_back({{"strategy", st.strategy}, {"params", strategies::params_json(st.params)}});
    add_step_sites(base["steps_so_far"], leir::program_hash(first.parent), transitions, producer);
    if (!machine.is_null()) base["machine"] = machine;
    return base;
  };
  auto single_record = [&](json base, json answer, const json& facts) {
    base["kind"] = "single";
    base["answers"] = json::array({std::move(answer)});
    base["facts"] = facts;
    set_expectations(base);
    return base;
  };
  for (int s : state_order) {
    const auto& idx = by_state[s];
    const auto& first = transitions[idx[0]];
    const json base = state_base(s, first);
    // Single-answer records: every improving step, up to N non-improving ones per state.
    int non_impr = 0;
    std::vector<size_t> by_cost = idx;
    std::stable_sort(by_cost.begin(), by_cost.end(), [&](size_t a, size_t b) {
      return transitions[a].cost_result.value < transitions[b].cost_result.value;
    });
    const auto parent_facts = analysis::program_facts(first.parent);
    std::map<int, json> facts_cache;
    auto facts_for = [&](int item) -> json& {
      auto it = facts_cache.find(item);
      if (it == facts_cache.end()) it = facts_cache.emplace(item, facts_json(first.parent, parent_facts, item)).first;
      return it->second;
    };
    std::map<size_t, json> answer_cache;
    auto answer_for = [&](size_t i) {
      auto it = answer_cache.find(i);
      if (it == answer_cache.end()) it = answer_cache.emplace(i, answer_json(transitions[i], parent_facts)).first;
      json a = it->second;
      a["id"] = fmt::format("{}#{}", r.key, seq++);
      return a;
    };
    // Visit the state's steps in a seeded order so no strategy is favoured by its catalogue
    // position; keep at most `per_strategy_per_state` steps of one strategy.
    std::map<std::string, int> per_strat;
    auto order = strategies::choose_indices(idx.size(), idx.size(), base::mix_seed(seed, uint64_t(s) + 77));
    std::vector<size_t> visit;
    for (size_t k : order) visit.push_back(idx[k]);
    // Steps of a tuned path first (they are the trajectory), then improving ones (stable within).
    // A tuned alternative is ranked by the tuner's own measurement where it has one.
    std::stable_sort(visit.begin(), visit.end(), [&](size_t a, size_t b) {
      const auto &ta = transitions[a], &tb = transitions[b];
      if ((ta.path_step > 0) != (tb.path_step > 0)) return ta.path_step > 0;
      return improving(a) > improving(b);
    });
    std::vector<size_t> kept;
    for (size_t i : visit) {
      const auto& t = transitions[i];
      const bool on_path = t.path_step > 0;
      if (!on_path && per_strat[t.strategy] >= o.per_strategy_per_state) continue;
      if (!on_path && !improving(i) && non_impr >= o.non_improving_per_state) continue;
      if (!on_path && !improving(i) && o.non_improving_per_root >= 0 && !contrast.count(i)) continue;
      if (!on_path && !improving(i)) ++non_impr;
      per_strat[t.strategy]++;
      kept.push_back(i);
    }
    std::sort(kept.begin(), kept.end());
    for (size_t i : kept) {
      json a = answer_for(i);
      const json& facts = facts_for(a["site_item"].get<int>());
      records.push_back(single_record(base, std::move(a), facts));
    }
    // One multi-answer record per state (record_selection.h): distinct strategies, best modelled
    // cost first, the last place for the strategy the root's steps show least; at most
    // multi_trivial_max trivially applicable strategies per set (apps/dataset/shortcut.h).
    const auto picked = multi_answer_set(transitions, by_cost, strategy_count, o.multi_answer_max, o.multi_trivial_max);
    json answers = json::array();
    for (size_t i : picked) answers.push_back(answer_for(i));
    if (answers.size() >= 2) {
      json rec = base;
      rec["kind"] = "multi";
      rec["answers"] = answers;
      rec["facts"] = facts_for(answers[0]["site_item"].get<int>());
      set_expectations(rec);
      records.push_back(std::move(rec));
    }
  }
  // Coverage reserve (filter.h): for each strategy among the root's steps that none of its
  // records answers, one single-answer record of that strategy's best step (improving first,
  // then the cheapest modelled result, then the earliest), flagged "coverage_reserve". The filter
  // keeps a reserve only for a strategy no kept record of the whole run shows, so a strategy the
  // search met somewhere is not missing from the dataset by the chance of which steps paid.
  std::set<std::string> answered;
  for (const auto& rec : records)
    for (const auto& a : rec["answers"]) answered.insert(a["strategy"].get<std::string>());
  std::map<std::string, size_t> reserve;
  for (size_t i = 0; i < transitions.size(); ++i) {
    const auto& t = transitions[i];
    if (answered.count(t.strategy)) continue;
    auto [it, fresh] = reserve.emplace(t.strategy, i);
    const auto& best = transitions[it->second];
    if (!fresh && std::make_pair(!improving(i), t.cost_result.value) <
                      std::make_pair(!improving(it->second), best.cost_result.value))
      it->second = i;
  }
  for (const auto& [strategy, i] : reserve) {
    const auto& t = transitions[i];
    const auto parent_facts = analysis::program_facts(t.parent);
    json a = answer_json(t, parent_facts);
    a["id"] = fmt::format("{}#{}", r.key, seq++);
    const json facts = facts_json(t.parent, parent_facts, a["site_item"].get<int>());
    json rec = single_record(state_base(t.state, t), std::move(a), facts);
    rec["coverage_reserve"] = true;
    records.push_back(std::move(rec));
  }
  return records;
}

}  // namespace

json root_records(const Root& r, const GenerateOptions& o, search::SearchStats* stats, const std::string& store) {
  const uint64_t seed = base::mix_seed(o.seed, leir::program_hash(r.program));
  if (o.trajectories == Trajectories::Tune) {
    tune::TuneOptions to;
    to.trials = o.tune_trials;
    to.threads = o.measure_threads;
    to.seed = seed;
    to.store_path = store.empty() ? measurement_store_path(o) : store;
    // The tuner times with the records' runner (measurement.h): its comparisons of candidates
    // against the root are the records' comparisons of results against the root, one fact
    // measured once. The exported costs and labels come from the records' measurements, so the
    // tuner's own step-by-step timing of its path is not needed here.
    auto runner = measurement_runner(o);
    to.runner = o.tune_runner ? o.tune_runner : &runner;
    to.time_trajectory = false;
    to.roofline = false;  // a tuner report; the records carry the root's traffic figures of their own
    // The explored candidates of each round are of strategies the search has not tried yet, so
    // the records measure the strategies that apply here but rarely make a program faster too;
    // three of a round's eight (the rule chains fill most of the first round, so `steptp tune`'s
    // two left ~2-4 per root, and the main job covered 33-38 strategies by chance).
    to.search.explore = 3;
    to.search.explore_untried = to.search.explore;
    auto t0 = std::chrono::steady_clock::now();
    auto tuned = tune::tune(r.program, to);
    search::SearchStats st;
    // The tuner's verify seed (search/tune/tuner.cc: base::mix_seed(seed, 0x7e)): its verdicts are reused.
    tune::ObservationStore store(to.store_path);
    auto transitions = tuned_transitions(tuned, base::mix_seed(seed, 0x7e), o.improve_threshold, &store, &st);
    st.search_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (stats) *stats = st;
    return records_from(r, o, transitions, seed);
  }
  search::SearchOptions so;
  so.seed = seed;
  so.mode = o.mode;
  so.beam = o.beam;
  so.depth = o.depth;
  so.sites_per_strategy = o.sites_per_strategy;
  so.params_per_site = o.params_per_site;
  so.verify_trials = o.verify_trials;
  auto res = search::run_search(r.program, so);
  if (stats) *stats = res.stats;
  if (o.target == "cuda") {
    // Records for the GPU hold only programs the CUDA lowering accepts (the root too).
    backend::cuda::generate_cuda(r.program);  // throws: the root's payload records why
    std::erase_if(res.transitions, [&](const search::Transition& t) {
      try {
        backend::cuda::generate_cuda(t.result);
        return false;
      } catch (const std::exception&) {
        if (stats) stats->failed++;
        return true;
      }
    });
  }
  return records_from(r, o, res.transitions, seed);
}

}  // namespace steptp::dataset
