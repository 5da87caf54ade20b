// A deterministic stand-in for the CPU runner (search/tune/runner.h) in tests of the tuner and of what
// is built on it: timing is a pure function of the program, so searches, labels and stores are
// reproducible without a quiet machine.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "ir/leir/ast.h"
#include "search/tune/runner.h"

namespace steptp::tune::testing {

inline int count_loops(const std::vector<leir::Item>& body, bool* has_v) {
  int n = 0;
  for (const auto& it : body) {
    if (!it.is_nest()) continue;
    for (const auto& l : it.nest.loops) {
      n++;
      if (l.kind == leir::LoopKind::Vectorized) *has_v = true;
    }
    n += count_loops(it.nest.body, has_v);
  }
  return n;
}

// A runner whose timing is a pure function of the program (`time`), with a hook that sees the
// reference program of every comparison it is asked for.
class FunctionRunner : public Runner {
 public:
  virtual double time(const leir::Program& p) const = 0;
  virtual void timed(const leir::Program& /*reference*/) {}
  std::vector<PairResult> run(const std::vector<leir::Program>& programs,
                              const std::vector<std::pair<int, int>>& pairs) override {
    std::vector<PairResult> out;
    for (auto [a, b] : pairs) {
      PairResult r;
      r.ok = true;
      r.cmp.a = {.median_ms = time(programs[size_t(a)]), .cv = 0.001, .repeats = 20};
      r.cmp.b = {.median_ms = time(programs[size_t(b)]), .cv = 0.001, .repeats = 20};
      r.cmp.speedup = r.cmp.a.median_ms / r.cmp.b.median_ms;
      out.push_back(r);
      timed(programs[size_t(a)]);
    }
    return out;
  }
};

// Timing as a pure function of the program: 1 ms, or 0.25 ms when the program has a V loop *and*
// more loops than the root (a split loop, then vectorized). A split alone, or vectorizing an
// unsplit loop, is not faster. Counts the comparisons it is asked for.
class FakeRunner : public FunctionRunner {
 public:
  explicit FakeRunner(const leir::Program& root) {
    bool v = false;
    root_loops_ = count_loops(root.body, &v);
  }
  std::string identity() const override { return "fake:split-then-vectorize"; }
  double time(const leir::Program& p) const override {
    bool v = false;
    int n = count_loops(p.body, &v);
    return v && n > root_loops_ ? 0.25 : 1.0;
  }
  void timed(const leir::Program&) override { calls++; }
  int calls = 0;

 private:
  int root_loops_ = 0;
};

}  // namespace steptp::tune::testing
