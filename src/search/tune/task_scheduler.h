// The task scheduler (MetaSchedule's GradientBased task scheduler, after Ansor §6): a program's
// tasks (search/tune/task.h) share one trial budget, handed out a round at a time to the task
// whose next round is expected to cut the most time from the program.
//
// Warm-up: `warmup_rounds` rounds of round robin, so every task has a measured root time and a
// first best (its rule chains, which carry most of a nest's gain, are measured in its first
// round). Then each round goes to the task of the largest expected gain
//
//   gain(i) = weight(i) × share(i) × slope(i)
//
// weight: the task's uses in the program; share: its best time so far over the program's tuned
// time, Σ weight × best (so weight × share is the part of the program it still holds); slope:
// its best's relative improvement per round over its last `window` rounds (its root time before
// its first round), at least `slope_floor` — the optimism that keeps a stalled heavy task from
// starving for good, in the role of Ansor's β term. With probability `epsilon` (a draw from the
// seed and the round number) a seeded random live task gets the round instead (Ansor's ε-greedy).
// Ties go to the lowest task index. The allocation is a function of the seed and the reported
// times: with the measurements stored, a rerun allocates the same.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "ir/leir/ast.h"
#include "search/tune/task.h"
#include "search/tune/tuner.h"

namespace steptp::tune {

struct SchedulerOptions {
  int warmup_rounds = 1;
  int window = 3;
  double slope_floor = 0.01;
  double epsilon = 0.05;
};

class TaskScheduler {
 public:
  TaskScheduler(std::vector<double> weights, uint64_t seed, SchedulerOptions o = {});

  // The task to give the next round to; -1 when every task is exhausted.
  int next();
  // After task `task`'s round: its root time and best time so far (same scale), trials so far.
  void report(int task, double root_ms, double best_ms, int trials);
  // The task has nothing left to try.
  void exhaust(int task);

  double gain(int task) const;
  const std::vector<int>& trials() const { return trials_; }
  const std::vector<int>& rounds() const { return rounds_; }
  const std::vector<double>& weights() const { return weights_; }

 private:
  std::vector<double> weights_;
  uint64_t seed_;
  SchedulerOptions o_;
  std::vector<std::vector<double>> best_;  // per task: root time, then the best after each round
  std::vector<int> trials_, rounds_;
  std::vector<char> exhausted_;
  int decisions_ = 0;
};

struct TaskOptions {
  bool enabled = true;  // false: tune the whole program as one root (tune())
  SchedulerOptions scheduler;
};

// `steptp tune` of a program: with at least two task uses (two tasks, or one task used twice),
// the tasks are tuned separately on one store and runner, their trials allocated by the
// TaskScheduler, their best traces composed onto the program (search/tune/task.h), the composed
// program verified against the root (if it does not verify, the tasks are added one at a time
// and those that break it left out) and timed against it (a second session when the first does
// not show it faster); otherwise (or `enabled` false) tune(). The composed steps are not timed
// one by one. The result's `tasks`: {"unit" (trials per round), "allocation" (the task of each
// round), "composed" {"steps", "verified", "speedup", "faster"}, "list": per task "hash", "nests"
// (the top-level items of each use), "weight", "work", "trials", "rounds", "root_time_s",
// "best_time_s", "speedup", "steps", "cost_model", "skipped" (uses left as written, and why)}.
TuneResult tune_program(const leir::Program& root, const TuneOptions& o, const TaskOptions& to = {},
                        const std::function<void(const Progress&)>& progress = {});

}  // namespace steptp::tune
