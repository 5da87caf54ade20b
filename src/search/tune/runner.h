// The one timing policy of the project (the tuner and the dataset both time through here).
//
// - One measurement at a time per machine: the timed section holds tune::TimingLock.
// - Threads: the timed kernels run with MeasureOptions::threads OpenMP threads (the tuner's
//   default: all cores); the count is part of the machine fingerprint that keys the store.
// - Interleaved comparisons: program B is timed against program A in one session, ABBA order,
//   so drift and machine noise hit both alike; a speedup is a ratio of medians from the same
//   session. Pairs of one batch with the same A share their session (backend::compare_group, up
//   to 8 programs against A, round by round), so a slow reference such as the naive root is
//   timed once per group rather than once per pair.
// - Caches warm: inputs are bound once per program and every timed run reuses them, as a kernel
//   runs inside a model (and as MetaSchedule's CPU runner does by default); no flush.
// - Inputs: seeded (interp::generate_inputs), drawn before the timed section; B runs on A's
//   inputs when it declares the same ones (every verified candidate does).
// - "Faster" (clears_noise): the ratio of medians exceeds 1 by more than twice the combined
//   standard error of the two medians' logs (sqrt(cv_a²/n_a + cv_b²/n_b)) and by at least 2 %.
// - Isolation: kernels run in a forked child with an address-space limit; a crash or a timeout
//   costs one comparison, never the caller.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lower/measure/measure.h"
#include "ir/leir/ast.h"
#include "ir/leir/values.h"

namespace steptp::tune {

// Why a comparison did not run: recorded with it (the measurement store keeps it beside the
// message), so consumers decide by the kind, never by the message's text.
enum class MeasureFailure : uint8_t {
  None,
  Compile,         // a program did not compile
  Run,             // a program could not be bound or its run threw (e.g. out of memory for intermediates)
  Crash,           // the measuring child died on the comparison (a signal or an exit status)
  Timeout,         // the comparison took longer than its timeout (a hang)
  Infrastructure,  // the measuring child could not be started: not the programs' fault
};
std::string_view to_string(MeasureFailure f);  // "none", "compile", "run", "crash", "timeout", "infrastructure"
std::optional<MeasureFailure> measure_failure_from(std::string_view s);

// Result of timing B against A (a = A's times, b = B's; speedup = median A / median B).
struct PairResult {
  bool ok = false;
  MeasureFailure failure = MeasureFailure::None;  // why not ok
  std::string error;
  backend::Comparison cmp;
};

struct PairMeasureStats {
  int compiled = 0, compile_failed = 0, crashed = 0;
  double compile_s = 0, measure_s = 0;
};

// Compiles every program (one batched compiler call) and times each pair (index of A, index of
// B) in a sandboxed child, holding the timing lock: the pairs with the same A in sessions of up
// to 8 (backend::compare_group); a session whose child dies is timed again pair by pair. Inputs come from
// interp::generate_inputs with `input_seed`. Never throws for a bad program: its pairs fail with
// a MeasureFailure and a message (Infrastructure when the measuring child could not be started).
// With `outputs`, every program's outputs after its timed runs (its buffers are then bound
// before the child starts, so the child writes them into shared memory), one map per program:
// empty for a program no pair ran, meaningful for the programs of pairs that succeeded.
std::vector<PairResult> measure_pairs(const std::vector<leir::Program>& programs,
                                      const std::vector<std::pair<int, int>>& pairs,
                                      const backend::MeasureOptions& mo, uint64_t input_seed,
                                      double pair_timeout_s = 20.0, PairMeasureStats* stats = nullptr,
                                      std::vector<leir::TensorMap>* outputs = nullptr);

// The noise rule above: B is faster than A.
bool clears_noise(const backend::Comparison& c);

// What the tuner times with: real CPU measurement, or (tests) a deterministic substitute.
class Runner {
 public:
  virtual ~Runner() = default;
  // Part of every store key: the machine fingerprint and the options, or the fake's name.
  virtual std::string identity() const = 0;
  virtual std::vector<PairResult> run(const std::vector<leir::Program>& programs,
                                      const std::vector<std::pair<int, int>>& pairs) = 0;
  // Median ms of a copy of `read_bytes` and `write_bytes` under the same policy (the roofline's
  // reference, search/tune/roofline.h); nullopt for a runner that does not time (its units are not ms).
  virtual std::optional<double> copy_ms(int64_t /*read_bytes*/, int64_t /*write_bytes*/) { return std::nullopt; }
  // Whether its comparisons are timings (or stand in for them, as the tests' fakes do): the tuner
  // keeps the candidates of such a runner to train a cost model from; an estimate is not kept.
  virtual bool times() const { return true; }
};

class CpuRunner : public Runner {
 public:
  // Threads: mo.threads (0: all cores).
  CpuRunner(backend::MeasureOptions mo, uint64_t input_seed);
  std::string identity() const override;
  std::vector<PairResult> run(const std::vector<leir::Program>& programs,
                              const std::vector<std::pair<int, int>>& pairs) override;
  std::optional<double> copy_ms(int64_t read_bytes, int64_t write_bytes) override;
  const PairMeasureStats& stats() const { return stats_; }

 private:
  backend::MeasureOptions mo_;
  uint64_t input_seed_;
  std::string identity_;
  PairMeasureStats stats_;
};

}  // namespace steptp::tune
