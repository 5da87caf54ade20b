// The training set of a pre-trained cost model (search/tune/cost_model.h PretrainedModel) and its
// evaluation on held-out workloads (docs/tune.md, "A cost model that transfers").
//
// Where the programs are: a measurement store (search/tune/database.h) keys each timing by a
// content hash of the runner's identity and the two programs' texts, so its timings alone do not
// give the programs back. Two places do: the records that `steptp generate` writes beside its store
// (steps.jsonl: every record, train and eval), which hold the root, the parent and each answer's
// result program, each with its measured speedup over the root and the machine it was timed on;
// and the candidates `steptp tune` keeps in its store (its `candidates` table: each measured
// candidate with its log2 speedup over the root in the search's session, the root, the workload
// and the machine kind). Both are read here.
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
  std::vector<std::string> files;  // the record files and stores read
  int records = 0;                 // records of `steptp generate`
  int kept = 0;                    // candidates (roots included) kept in `steptp tune` stores
};

// Reads every source: a record file (.jsonl); a folder: its steps.jsonl (a dataset's), else its
// measurements.sqlite (a tune output folder's); a store (.sqlite): the steps.jsonl beside it (a
// dataset's records hold its programs), else the candidates it keeps. Roots are grouped by a hash
// of their text (a record's root text, a kept root's leir::program_hash), so a root tuned and also
// in a dataset is two groups. A program measured several times (several records, or tune runs
// with other seeds) gets the mean of its log2 speedups; the root is 0. Features are extracted for
// machine `m` (the programs' own machine: each must have been timed on machine_kind(m), else
// base::Error Invalid naming file:line, or the store and workload, and both kinds — a model is per
// machine kind). Invalid also for a source without records or kept candidates (a store written
// before tune kept them: rerunning the tune on it keeps them), with the reason.
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
