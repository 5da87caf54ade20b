// CPU measurement of dataset records (issue 6): every record's transition is timed on the CPU
// backend against its parent and against the root, in interleaved sessions (tune::measure_pairs:
// ABBA, the results of one parent or root sharing a session), and the record's cost fields,
// speedups and label come from those timings. Timing follows the project's one policy
// (search/tune/runner.h: machine-wide lock, recorded thread count, warm caches, sandboxed child).
//
// Determinism. Timings vary between runs, so a measurement is a fact recorded once, not
// re-drawn: every comparison (program A vs program B under given measurement options) is kept
// in the SQLite measurement store (search/tune/database.h; default OUT/measurements.sqlite, or
// --measurements PATH) keyed as the tuner keys its own (tune::comparison_key: machine
// fingerprint, measurement options, input seed, texts of A and B), so with `--trajectories tune`
// the tuner's comparisons of candidates against the root are the records'. A run, a resumed run (kill -9 +
// rerun) or a run with another --jobs takes every comparison it finds in the store and only
// measures the missing ones, so the output files are a deterministic function of (inputs,
// options, seed, measurement store): two runs given the same store write identical bytes.
// A failed comparison (lowering or compiler error, crash, timeout, out of memory) is stored as
// a failure too, so it is dropped the same way on every rerun. A noisy session's re-measurements
// are facts of the store as well (the comparison's key with the session number), so which session
// a label rests on, or that a comparison stayed noisy, is decided once.
//
// Labels. Every exported comparison rests on a quiet session (>= 5 runs per side, CV <= 0.05)
// or, when three sessions were all noisy, on the one whose interval is narrowest if informative;
// "improving" needs the lower bound of the speedup's 95 % interval to clear the threshold
// (ratio_ci below), so a label never rests on one lucky median.
//
// Which records. The raw records of all roots are ~3x the exported ones (the per-strategy caps
// drop most), and compiling is the expensive part, so measurement runs after filtering, on the
// kept records only (the filters see the model labels; the exported label is the measured one).
//
// A crash or a timeout costs one comparison (its records are dropped and counted). The search itself still ranks and prunes with the analytic model
// (search::model_cost), so the trajectories do not depend on timing noise.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "lower/measure/measure.h"
#include "ir/leir/ast.h"
#include "search/tune/database.h"
#include "search/tune/runner.h"

namespace steptp::dataset {

class Cluster;
struct GenerateOptions;
}  // namespace steptp::dataset
namespace steptp {
class Progress;
}  // namespace steptp
namespace steptp::dataset {

struct MeasureStats {
  int pairs = 0;             // distinct comparisons the root's records need
  int sessions = 0;          // timed sessions the records rest on (a comparison's first + re-measurements)
  int reused = 0;            // ... found in the store
  int measured = 0;          // ... measured now
  int failed = 0;            // comparisons that failed (compile error, crash, timeout)
  int remeasured = 0;        // comparisons timed again because a side was noisy
  int noisy = 0;             // ... with no quiet session in kSessions
  int uninformative = 0;     // ... of them dropped: even the narrowest interval is uninformative
  int dropped_records = 0;   // records dropped because a comparison failed or was uninformative
  int noisy_records = 0;     // ... of them: because one was uninformative
  int dropped_answers = 0;   // answers dropped from multi-answer records
  int trimmed_path_steps = 0;  // records of tuned path steps after its best state
  double compile_s = 0, measure_s = 0;  // wall time (reporting only)
};

// The statistics of measured labels (docs/dataset.md, "Tuned trajectories").
// A comparison's session is quiet when both sides were timed at least kMinRepeats times with a
// coefficient of variation of at most kQuietCv; a noisy one is timed again, in up to kSessions
// sessions in all, and the first quiet session is the comparison's fact. One that stays noisy
// rests on its session with the narrowest interval (ratio_ci), and drops what rests on it when
// even that interval is not informative (a label from it would be a guess). Why not drop every
// comparison that stays noisy: the CV (standard deviation / mean) grows with a single preempted
// run, and on a loaded 2-core machine 232 of 243 comparisons of a 12-root tuned run had no quiet
// session in three, while many of their intervals still decide the label (a 2.5x step with
// CV 0.17 over 5 runs a side: [2.0, 3.1]); the interval carries the noise into the label.
// A noisy session is *settled* all the same when its interval lies wholly on one side of the
// improving threshold: another session cannot change what is read from it (the label, the
// path's pay-off against the same threshold), so it is not timed again — on this 2-core VM, 947
// of 1,480 comparisons of the main job were re-timed under the quiet rule alone, and 623 stayed
// noisy after three sessions. The last session of a comparison still unsettled after the others
// is kLastSessionScale times as long (repeats and time caps), since what it needs is a narrower
// interval: the half-width shrinks with the square root of the repeats.
inline constexpr int kMinRepeats = 5;
inline constexpr double kQuietCv = 0.05;
inline constexpr int kSessions = 3;
inline constexpr int kLastSessionScale = 4;

struct Interval {
  double lo = 0, hi = 0;
};
// The 95 % confidence interval of a ratio of medians (`ratio`; a quotient of such ratios too)
// from the timed sides it rests on: the log of a side's median has the variance
// (pi/2) * cv^2 / n (the sample median's asymptotic variance, by the delta method on the log),
// the sides' variances add, and the half-width is Student's t (0.975, Welch-Satterthwaite
// degrees of freedom over the sides' n - 1) times the combined standard error:
// [ratio * exp(-t * se), ratio * exp(t * se)]. Throws std::logic_error for a side timed
// fewer than twice (no spread to speak of).
Interval ratio_ci(double ratio, const std::vector<backend::TimingStats>& sides);
// "faster" when the interval lies above 1, "slower" below it, else "within_noise".
std::string noise_verdict(const Interval& ci);
// An interval that tells a step `threshold` slower from one `threshold` faster: it does not
// reach both 1 / threshold and threshold.
bool informative(const Interval& ci, double threshold);

// Tuned paths end at their best state: over the path's steps whose records measurement kept
// (a step whose comparison failed or stayed noisy, or whose record the filter dropped, leaves a
// gap, not an end), the first with the largest speedup over the root; a path whose best state is
// not confirmed `threshold` faster than the root (the lower bound of ratio_ci of its comparison
// with the root, cost.vs_root) is dropped whole (it teaches no way forward). The records of
// one root (`records`, after measurement) lose the single-answer records of path steps after the
// end, multi-answer sets keep those answers as plain alternatives, and kept path steps say the
// shorter length and the end's speedup over the root (path.of, path.speedup_vs_root: the end
// record's answers[].cost.speedup_vs_root). `src` (one entry per record) follows the records.
// Returns the number of records dropped.
int trim_path_tail(nlohmann::json& records, std::vector<size_t>& src, double threshold);

// Measurement options of a generate run (documented defaults in GenerateOptions); `scale`
// multiplies the repeats and time caps (the last session, kLastSessionScale).
backend::MeasureOptions measure_options(const GenerateOptions& o, int scale = 1);
// What times a generate run's records: those options on seeded inputs. The tuner of
// `--trajectories tune` times with the same runner, so its comparisons of candidates against the
// root are facts the records take from the store (tune::comparison_key) instead of timing again.
tune::CpuRunner measurement_runner(const GenerateOptions& o, int scale = 1);
// What the manifest and the checkpoint fingerprint record about measurement.
nlohmann::json measurement_json(const GenerateOptions& o);
std::string measurement_store_path(const GenerateOptions& o);

// Replaces the model costs of one root's raw records (root_records) with CPU measurements:
// answer "cost" gets measured timings and speedups (the model numbers move to cost.model), the
// speedup's confidence interval (speedup_ci, ratio_ci) and noise_verdict; "label" is
// "improving" when speedup_ci[0] >= o.improve_threshold, "enabling" for a path step whose path
// end is that much faster than the step's parent (path.enabled_speedup, path.enabled_ci: the same
// rule on the pay-off), else "non_improving". A program's speedup over its root is one comparison
// (root, program) wherever it appears: the producing answer's cost.speedup_vs_root and the
// parent_speedup_vs_root of every record starting from it. Multi-answer sets are sorted by
// measured speedup_vs_parent, fastest first. Records whose comparisons failed or stayed noisy are
// dropped (`kept`, if given, gets one flag per input record). Times with o.tune_runner when set
// (tests), else measurement_runner(o).
nlohmann::json measure_records(nlohmann::json records, const GenerateOptions& o, tune::ObservationStore& store,
                               MeasureStats* stats = nullptr, std::vector<char>* kept = nullptr);

// Rank 0 takes the facts of every rank's store (`rank_path`, where it exists: the measuring
// ranks', and with --trajectories tune every rank's tuner store) into `merged_path`; the first
// value of a key stays the fact (search/tune/database.h). Collective.
void merge_rank_stores(Cluster& cluster, const std::string& rank_path, const std::string& merged_path);

// Wall time and comparisons timed while filling the stores (reporting only).
struct FillTiming {
  double compile_s = 0, measure_s = 0;
  int measured = 0;
};

struct MeasureSummary {
  // Deterministic given the store (written to stats.json):
  int pairs = 0, sessions = 0, failed = 0, remeasured = 0, noisy = 0, uninformative = 0, dropped_records = 0,
      noisy_records = 0, dropped_answers = 0, trimmed_path_steps = 0;
  // Reporting only (never written to the dataset files):
  int measured = 0, reused = 0;
  double compile_s = 0, measure_s = 0;
  // stats.json's "measurement": the deterministic counts above.
  nlohmann::json to_json() const;
  // Counts in what fill_store timed before the stage (the sessions it timed were not reused).
  void add(const FillTiming& filled);
};

// The plumbing around the measure stage: the comparisons the kept records (`keep[i]`) lack are
// timed into the store before the stage reads them, root by root (records of one root are
// consecutive and share root.key), in up to o.jobs forked workers (each its list of roots by
// missing comparisons, sharding.h). Distributed (collective: every rank calls it, only rank 0
// passes records): rank 0 hands the roots whose comparisons the store lacks to the measuring
// ranks (one per node, Cluster::measuring), each fills its own store
// (OUT/ranks/rank-R/measurements.sqlite), and rank 0 merges those into the store. Returns the
// timing of this rank's part (rank 0: of the whole run).
FillTiming fill_store(const std::vector<nlohmann::json>& recs, const std::vector<char>& keep, const GenerateOptions& o,
                      Cluster& cluster, Progress& progress);

// The measure stage: every kept record rewritten from the store (measure_records; a comparison
// the store lacks is timed here, so the stage needs no fill_store, which only times them sooner,
// in parallel); clears keep[i] of the records it drops.
MeasureSummary measure_kept(std::vector<nlohmann::json>& recs, std::vector<char>& keep, const GenerateOptions& o);

}  // namespace steptp::dataset
