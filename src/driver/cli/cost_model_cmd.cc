// steptp cost-model train SOURCE... -o FILE [--seed S] [--threads T] [--objective rank|regression]
//                         [--exclude WORKLOAD]... [--json]
// steptp cost-model eval SOURCE... [--folds K] [--split workload|family] [--seed S] [--threads T] [--objective ...]
//                        [--min-programs N] [--json]
//
// A cost model that transfers (docs/tune.md): `train` builds the training set from the records of
// earlier runs (search/tune/training_set.h: a dataset folder, its steps.jsonl or its
// measurements.sqlite; a tune output folder or its store) on this machine's kind and pre-trains a
// model for `steptp tune --cost-model FILE`; `eval` reports Kendall tau and top-k recall on
// held-out workloads (leave-workloads-out folds) beside the analytic prior and a per-root model.
// Exit 1 on invalid sources (records of another machine kind included), 2 on a bad option.
#include <iostream>
#include <memory>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "driver/cli/command.h"
#include "search/tune/training_set.h"

namespace steptp::cli {
namespace {

struct CostModelOpts {
  std::vector<std::string> sources, exclude;
  std::string out, objective = "rank";
  uint64_t seed = 0;
  int threads = 0, folds = 5;
  size_t min_programs = 8;
  std::string split = "workload";
  bool json = false;
};

void add_common_options(CLI::App* c, CostModelOpts& o) {
  c->add_option("SOURCE", o.sources,
                "earlier runs: a `steptp generate` output folder, its steps.jsonl or its measurements.sqlite; a "
                "`steptp tune` output folder or its store (the candidates it keeps)")
      ->required();
  c->add_option("--seed", o.seed, "seed of training and of the folds (same seed: identical output)");
  c->add_option("--threads", o.threads,
                "timed threads of the machine kind the records must come from (default: all cores, as tune)")
      ->check(CLI::NonNegativeNumber);
  c->add_option("--objective", o.objective, "rank (pairwise within each root) or regression (log2 speedup)")
      ->check(CLI::IsMember({"rank", "regression"}))
      ->capture_default_str();
  c->add_flag("--json", o.json, "print one JSON object on stdout");
}

std::string summary_line(const char* name, const nlohmann::json& q) {
  return fmt::format("  {:<11} tau {:>7.4f}  top-k recall {:.4f}\n", name, q["kendall_tau"].get<double>(),
                     q["top_k_recall"].get<double>());
}

RegisterCommand cost_model_cmd{{"cost-model", "train and evaluate a cost model that transfers across workloads",
                                [](CLI::App& sub) {
  sub.require_subcommand(1);
  auto o = std::make_shared<CostModelOpts>();
  auto* train = sub.add_subcommand("train", "pre-train a cost model for `steptp tune --cost-model FILE`");
  add_common_options(train, *o);
  train->add_option("-o,--out", o->out, "model file (JSON)")->required();
  train->add_option("--exclude", o->exclude, "leave this workload's roots out (repeatable; to hold it out)");
  auto* eval = sub.add_subcommand("eval", "Kendall tau and top-k recall on held-out workloads");
  add_common_options(eval, *o);
  eval->add_option("--folds", o->folds, "leave-workloads-out folds (default 5)")->check(CLI::Range(2, 1000));
  eval->add_option("--min-programs", o->min_programs, "evaluate roots with at least this many programs (default 8)")
      ->check(CLI::Range(3, 1000000));
  eval->add_option("--split", o->split,
                   "workload (hold out workloads) or family (hold out whole families: every conv workload at once)")
      ->check(CLI::IsMember({"workload", "family"}))
      ->capture_default_str();

  return [=]() -> int {
    const tune::Machine m = tune::this_machine(o->threads);
    tune::TrainingSet set = tune::build_training_set(o->sources, m);
    const tune::Objective objective = tune::objective_from(o->objective);
    if (eval->parsed()) {
      auto r = tune::evaluate_held_out(set, {.folds = o->folds, .seed = o->seed, .objective = objective,
                                             .min_programs = o->min_programs, .by_family = o->split == "family"});
      if (o->json) {
        std::cout << r.dump() << "\n";
        return 0;
      }
      std::cout << fmt::format("{} records, {} kept tune candidates, {} roots of {} workloads ({}); {} held-out "
                               "roots ({} programs) in {} leave-{}-out folds\n",
                               set.records, set.kept, set.groups.size(), r["workloads"].get<size_t>(), set.machine_kind,
                               r["roots_evaluated"].get<size_t>(), r["programs_evaluated"].get<int>(), o->folds,
                               o->split == "family" ? "families" : "workloads");
      std::cout << "whole held-out root (k = min(5, programs/2)):\n";
      for (const char* name : {"pretrained", "analytic"}) std::cout << summary_line(name, r["whole_root"][name]);
      std::cout << fmt::format("  chance top-k recall {:.4f}\n", r["whole_root"]["chance_top_k_recall"].get<double>());
      std::cout << "half measured, half ranked (k = max(1, min(5, ranked/4))):\n";
      for (const char* name : {"pretrained", "fine_tuned", "per_root", "analytic"})
        std::cout << summary_line(name, r["half"][name]);
      std::cout << fmt::format("  chance top-k recall {:.4f}\n", r["half"]["chance_top_k_recall"].get<double>());
      return 0;
    }
    std::set<std::string> known;
    for (const auto& g : set.groups) known.insert(g.workload);
    for (const auto& w : o->exclude)
      if (!known.count(w))
        throw base::Error(base::ErrorKind::BadRequest, "--exclude " + w + ": no root of that workload in the sources",
                          "exclude");
    std::vector<tune::RootGroup> kept;
    for (auto& g : set.groups)
      if (std::find(o->exclude.begin(), o->exclude.end(), g.workload) == o->exclude.end()) kept.push_back(g);
    auto model = tune::PretrainedModel::train(kept, set.machine_kind, o->seed, objective);
    model->save(o->out);
    if (o->json) {
      nlohmann::json j = model->training();
      j["file"] = o->out, j["machine_kind"] = set.machine_kind, j["records"] = set.records, j["kept"] = set.kept;
      j["sources"] = set.files;
      j["excluded"] = o->exclude;
      std::cout << j.dump() << "\n";
    } else {
      std::cout << fmt::format("{}: {} programs of {} roots ({} workloads) from {} records and {} kept tune "
                               "candidates, machine kind {}\n",
                               o->out, model->training()["samples"].get<size_t>(),
                               model->training()["roots"].get<size_t>(), model->training()["workloads"].size(),
                               set.records, set.kept, set.machine_kind);
    }
    return 0;
  };
}}};

}  // namespace
}  // namespace steptp::cli
