// The budgets of an optimization run and what has been spent: LLM calls, generated tokens,
// measured candidates and wall time (0: unlimited). Every spend is asked for first, so no budget
// is ever exceeded: a call is made only while calls and tokens are left (and asks for at most
// the tokens left), a candidate is measured only while measurements are left, and request
// timeouts are cut to the time left. Calls and measurements are counted whether their result
// comes from the server or the machine or is replayed from the run's stores, so a replayed run
// stops exactly where the original did. (Wall time alone depends on the clock.)
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>

namespace steptp::optimize {

struct Budget {
  int64_t calls = 0;     // LLM requests
  int64_t tokens = 0;    // completion tokens the server reports
  int64_t measured = 0;  // candidates timed (their first timing; a cached candidate is free)
  double wall_s = 0;
};

class Spend {
 public:
  explicit Spend(Budget b) : b_(b), t0_(std::chrono::steady_clock::now()) {}

  double elapsed_s() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count(); }
  bool out_of_time() const { return b_.wall_s > 0 && elapsed_s() >= b_.wall_s; }
  // Seconds left (0 when unlimited).
  double time_left_s() const { return b_.wall_s > 0 ? std::max(1e-3, b_.wall_s - elapsed_s()) : 0; }
  bool can_call() const {
    return !out_of_time() && (b_.calls == 0 || calls < b_.calls) && (b_.tokens == 0 || tokens < b_.tokens);
  }
  // The completion tokens one more request may ask for (`want` capped by what is left).
  int64_t token_allowance(int64_t want) const { return b_.tokens == 0 ? want : std::min(want, b_.tokens - tokens); }
  bool can_measure() const { return !out_of_time() && (b_.measured == 0 || measured < b_.measured); }
  const Budget& budget() const { return b_; }

  int64_t calls = 0, tokens = 0, prompt_tokens = 0, measured = 0;

 private:
  Budget b_;
  std::chrono::steady_clock::time_point t0_;
};

}  // namespace steptp::optimize
