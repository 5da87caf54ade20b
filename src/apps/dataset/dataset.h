// `steptp generate`: programs → seeded search trajectories → records with grounded CoT →
// filtering → train/eval split by workload family → export (issue 6).
//
// Work is split per root program; each finished root's raw records are checkpointed in
// OUT/checkpoint.sqlite, so a killed run resumes. Parallelism (--jobs) uses forked worker
// processes (strategies use GiNaC, which is not thread-safe); the export reads every root's
// records back in root order, so the output bytes do not depend on --jobs or on interruptions.
// Across machines (`mpirun -n N steptp generate`, docs/mpi.md) the roots are sharded over the
// ranks (apps/dataset/sharding.h), each rank checkpoints in OUT/ranks/rank-R/, and rank 0 merges the
// checkpoints and measurement stores and writes the outputs: the same bytes as one process.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/dataset/prompt.h"
#include "ir/leir/ast.h"
#include "search/analytic/search.h"
#include "front/workloads/workload.h"

namespace steptp {
class Progress;
}
namespace steptp::tune {
class Runner;
}

namespace steptp::dataset {

class Cluster;

// Where the trajectories of the records come from: the analytic beam search (search/analytic/search.h,
// fast; costs from the model until measurement) or `steptp tune` per root (measurement in the
// loop; apps/dataset/tuned_trajectory.h).
enum class Trajectories : uint8_t { Search, Tune };

struct GenerateOptions {
  std::string out_dir = "steptp-dataset";
  uint64_t seed = 0;
  workloads::SizeClass size = workloads::SizeClass::Tiny;
  int programs = -1;     // built-in workloads (spread over the suite, seeded); -1 = all
  int composites = 4;    // random composites
  std::string input;     // optional JSONL/JSON/LEIR file of user programs
  bool examples = true;  // also the programs of ../shared/examples (family "example")
  search::Mode mode = search::Mode::Beam;
  int beam = 2;
  int depth = 2;
  int sites_per_strategy = 2;
  int params_per_site = 2;
  int verify_trials = 3;
  Trajectories trajectories = Trajectories::Search;
  // What the records optimize for: "cpu" (measured here; GPU-only choices state their CPU
  // meaning) or "cuda" (prompts name the GPU, every result must lower to CUDA; this machine has
  // no GPU, so cuda records are unmeasured: --cost model).
  std::string target = "cpu";
  int tune_trials = 16;  // measured candidates per root (--trajectories tune)
  tune::Runner* tune_runner = nullptr;  // testing: the tuner's and the records' timing (null: the CPU, search/tune/runner.h)
  int jobs = 1;
  // Filtering (documented defaults).
  // Max single-answer records per strategy. 35 keeps the default run (built-in suite, --jobs 2)
  // within ~10 min on 2 cores with every kept record compiled and timed (>= 1000 records).
  int per_strategy_cap = 35;
  int non_improving_per_state = 12;  // max non-improving single steps kept per search state
  // Max non-improving single steps of one root beside its tuned path (-1: no limit). A single
  // record's answer is the step to take; a step measured no faster is contrast, and contrast
  // mostly belongs in the multi-answer sets, where it stands beside the better choices.
  int non_improving_per_root = -1;
  int per_strategy_per_state = 2;    // max single steps of one strategy kept per search state
  double trivial_keep = 0.5;         // keep probability of trivially applicable strategies
  int multi_answer_max = 3;          // answers per multi-answer record (>= 2 distinct strategies)
  // Shortcut policy for multi-answer records (apps/dataset/shortcut.h): at most this many trivially
  // applicable strategies per answer set, and at most this many multi-answer records per strategy.
  int multi_trivial_max = 1;
  int multi_per_strategy_cap = 40;
  // Export layout: "steptp" (train/eval.jsonl), "public" (public_train/public_eval.jsonl, the
  // reconstructed public Step-TP layout, apps/dataset/public_format.h) or "both".
  std::string format = "steptp";
  // Answers of train/eval.jsonl: the whole transformed program (IR, Step-TP) or an action
  // {"strategy","site": handle,"params"} (apps/dataset/prompt.h), the form `steptp optimize` accepts.
  AnswerFormat answer_format = AnswerFormat::IR;
  // Distinct programs (roots, parents, results) in the LEIR vs TVMScript/C++/CUDA token
  // comparison of stats.json (apps/dataset/token_stats.h): a seeded sample; -1 = all, 0 = off.
  int token_sample = 200;
  double eval_fraction = 0.2;        // share of roots held out for eval (apps/dataset/split.h)
  // Cost of records (apps/dataset/measurement.h). measured: every record is timed on the CPU backend
  // against its parent and the root (interleaved; kept in the measurement store); false: the
  // analytic model only (fully deterministic, no timing).
  bool measured = true;
  double measure_min_time = 0.003;  // seconds per interleaved comparison (at least 5 rounds)
  int measure_threads = 1;          // OpenMP threads of timed kernels (1: --jobs workers do not fight)
  double improve_threshold = 1.05;  // measured speedup vs parent from which a step is "improving"
  // Bench-class measured runs: every root's naive program runs at least this long on one core
  // here (apps/dataset/root_sizing.h); 0 = no sizing.
  double min_root_ms = 0;
  // ... and at most this long (0 = no ceiling): a root above it is left out, never shrunk (the
  // bench window only moves up). The timing of a run grows with its roots' naive times (the root
  // is the reference side of every comparison with it) and the verification of each candidate
  // with their f64 builds: two composites of 158 and 218 ms were 31 % of the main job's naive
  // root time and its last two minutes of search.
  double max_root_ms = 0;
  // Measured bench runs: leave out roots whose headroom (naive one-core time over an all-core copy
  // of their inputs and outputs, apps/dataset/root_headroom.h) is below this; 0 = keep every root.
  double min_headroom = 0;
  std::string measurements;         // measurement store (SQLite); empty = OUT/measurements.sqlite
  // Testing: stop (exit without export) after this many roots were finished in this run.
  int stop_after = -1;
  Progress* progress = nullptr;  // stage and per-root progress on stderr (base/progress.h); null: none
};

struct Root {
  std::string key;     // "w/<workload>", "c/<i>", "u/<i>", "e/<name>"
  std::string family;  // workload family, "composite", "user"
  leir::Program program;
  // A built-in workload's origin, so its shapes can be drawn again (apps/dataset/root_sizing.h).
  const workloads::Workload* workload = nullptr;
  uint64_t emit_seed = 0;
};

// `skipped` (optional) gets {"key", "reason"} for each workload left out because it has no
// shapes of the size class (bench only; any other failure throws).
std::vector<Root> collect_roots(const GenerateOptions& o, nlohmann::json* skipped = nullptr);
// The program of a built-in workload root (`r.workload`, `r.emit_seed`) at `size`, its bench work
// window moved up by `bench_doublings` (apps/dataset/root_sizing.h); bench shapes are measured in f32,
// as KernelBench and the tuner's benchmarks are. Throws base::Error (BadRequest) when the workload
// has no such shapes.
leir::Program emit_root_program(const Root& r, workloads::SizeClass size, int bench_doublings = 0);

struct GenerateSummary {
  bool complete = false;  // false when stopped by stop_after
  int roots = 0, roots_done = 0;
  int roots_resumed = 0;  // finished by an earlier (interrupted) run, found in a checkpoint
  int ranks = 1;          // MPI ranks of the run (docs/mpi.md)
  int train = 0, eval = 0, steps = 0, single = 0, multi = 0;
  int strategies_covered = 0;
  double wall_s = 0, search_s = 0, verify_s = 0, cost_s = 0, export_s = 0;
  double compile_s = 0, measure_s = 0;             // CPU measurement (summed over roots)
  int pairs_measured = 0, pairs_reused = 0;        // comparisons timed now / taken from the store
  nlohmann::json stats;  // stats.json contents
};

// Throws base::Error: BadRequest (bad option) or Failed (I/O), with a clear message;
// on error no output file of the dataset has been written.
GenerateSummary generate(const GenerateOptions& o);
// The same run spread over the cluster's ranks (every rank calls it); rank 0 writes the outputs
// and its summary counts the whole run (other ranks' summaries: their part).
GenerateSummary generate(const GenerateOptions& o, Cluster& cluster);
// A rank's own folder when distributed: OUT/ranks/rank-R (checkpoint.sqlite, measurements.sqlite).
std::string rank_dir(const GenerateOptions& o, int rank);

// The run's summary as `steptp generate --json` prints it (and the Python generate() returns):
// {"out", "roots", "records", "train", "eval", "single", "multi", "strategies_covered", "wall_s",
// "records_per_minute", "comparisons_measured", "comparisons_reused", "breakdown_s": {...},
// "inconclusive_roots": count}.
nlohmann::json summary_json(const GenerateSummary& s, const std::string& out_dir);

// --- pieces exposed for tests ---
// Raw records of one root (before filtering), deterministic.
// `tune_store`: the measurement store the tuner uses (--trajectories tune; empty: the run's).
nlohmann::json root_records(const Root& r, const GenerateOptions& o, search::SearchStats* stats = nullptr,
                            const std::string& tune_store = "");
// The `<think>` of a record (cot.cc, docs/dataset.md "Chain of thought"): argued from the prompt
// and the answers' effect facts only (apps/dataset/reasoning.h), never from a measured outcome.
std::string make_cot(const nlohmann::json& rec);
// Chat record {"messages":[system,user,assistant], "reward_context": reward_context(rec)}: the
// prompt of apps/dataset/prompt.h, the answer in format `f`.
nlohmann::json make_chat(const nlohmann::json& rec, AnswerFormat f = AnswerFormat::IR);
// What a reward needs to score an answer to the record's prompt (apps/reward/reward.h, `steptp serve`):
// {"root_program", "parent_program" (LEIR text), "root_hash", "parent_hash", "kind", "target",
// "record_id" (the record's id in steps.jsonl)}.
nlohmann::json reward_context(const nlohmann::json& rec);
// All numbers (as written) in a text: maximal [0-9]+(\.[0-9]+)?(e[+-]?[0-9]+)? runs not preceded by a letter.
std::vector<std::string> numbers_in(const std::string& text);

}  // namespace steptp::dataset
