// The training set of a pre-trained cost model (search/tune/cost_model.h PretrainedModel) and its
// evaluation on held-out workloads (docs/tune.md, "A cost model that transfers").
//
// Where the programs are: a measurement store (search/tune/database.h) keys each timing by a
// content hash of the runner's identity and the two programs' texts, so it holds timings but no
// programs, and a tuner's result.json names only each trial's strategies. The records that
// `steptp generate` writes beside its store (steps.jsonl: every record, train and eval) hold the
// programs with their measurements: the root, the parent and each answer's result program, each
// with its measured speedup over the root and the machine it was timed on. Those are read here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "search/tune/cost_model.h"
#include "search/tune/machine.h"

namespace steptp::tune {

struct TrainingSet {
  std::string machine_kind;
  std::vector<RootGroup> groups;  // one per distinct root program, in root-hash order
  std::vector<std::string> files;  // the record files read
  int records = 0;
};

// Reads every source: a record file (.jsonl), a dataset folder (its steps.jsonl) or a measurement
// store (.sqlite: the steps.jsonl beside it). A program measured in several records gets the mean
// of its log2 speedups; the root is 0. Features are extracted for machine `m` (the records' own
// machine: each must have been timed on machine_kind(m), else base::Error Invalid naming
// file:line and both kinds — a model is per machine kind). Invalid also for a source without
// records, with the reason.
TrainingSet build_training_set(const std::vector<std::string>& sources, const Machine& m);

struct HeldOutOptions {
  int folds = 5;            // workloads (or families) are dealt into this many folds (seeded)
  uint64_t seed = 0;
  Objective objective = Objective::Rank;
  size_t min_programs = 8;  // roots with fewer measured programs are not evaluated (too few pairs)
  // Hold out whole families (every conv workload in one fold), so no workload of the same kind
  // with other shapes or epilogues (conv2d beside conv2d_asymmetric) is in training.
  bool by_family = false;
};

// Leave-workloads-out (or leave-families-out) cross-validation: for each fold, a model pre-trained
// on the roots of every other fold's workloads ranks the programs of each root of the fold's workloads, beside the
// analytic prior, a per-root model (CostModel trained on a seeded half of the root's programs,
// as the tuner's would be) and the pre-trained model fine-tuned on that half. Kendall tau and
// top-k recall per root, averaged over roots. The result is documented in docs/tune.md.
nlohmann::json evaluate_held_out(const TrainingSet& set, const HeldOutOptions& o);

}  // namespace steptp::tune
