// Helpers of the algebraic strategy tests: small programs from text, every result of a strategy,
// and an independent equivalence check (reference interpreter on seeded inputs of every profile).
#pragma once

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include "ir/interp/inputs.h"
#include "ir/interp/interpreter.h"
#include "ir/leir/ir_mutator.h"
#include "ir/leir/printer.h"
#include "ir/leir/program_io.h"
#include "transform/strategy.h"
#include "ir/verify/verifier.h"

namespace steptp::strategies::testing {

inline leir::Program program(const std::string& text) { return leir::program_from_text(text, "test.leir"); }

inline const Strategy& strategy(std::string_view name) {
  const Strategy* s = find_strategy(name);
  if (!s) throw std::runtime_error("strategy not registered: " + std::string(name));
  return *s;
}

// Every candidate of `s` on `p` (every site, every parameter choice, at most `per_site`).
inline std::vector<Candidate> all_results(const Strategy& s, const leir::Program& p, size_t per_site = 100) {
  std::vector<Candidate> out;
  for (const auto& site : s.sites(p)) {
    auto space = s.param_space(p, site);
    for (size_t i = 0; i < space.size() && i < per_site; ++i)
      if (auto c = s.apply(p, site, space[i])) out.push_back(std::move(*c));
  }
  return out;
}

// The statements of `after` that differ from `before`, printed (statements in program order).
inline std::vector<std::string> changed_statements(const leir::Program& before, const leir::Program& after) {
  std::vector<std::string> a, b, out;
  leir::for_each_stmt(before.body, [&](const leir::Stmt& s, const std::vector<const leir::Loop*>&) { a.push_back(leir::print_stmt(s)); });
  leir::for_each_stmt(after.body, [&](const leir::Stmt& s, const std::vector<const leir::Loop*>&) { b.push_back(leir::print_stmt(s)); });
  for (size_t i = 0; i < b.size(); ++i)
    if (i >= a.size() || a[i] != b[i]) out.push_back(b[i]);
  return out;
}

// Printed right side of the single statement a candidate changed ("" if not exactly one).
inline std::string changed_rhs(const leir::Program& before, const Candidate& c) {
  auto changed = changed_statements(before, c.program);
  if (changed.size() != 1) return "";
  std::string s = changed[0];
  return s.substr(s.find('=') + 1, s.size() - s.find('=') - 2);
}

inline std::vector<std::string> all_rhs(std::string_view strategy_name, const leir::Program& p) {
  std::vector<std::string> out;
  for (const auto& c : all_results(strategy(strategy_name), p)) out.push_back(changed_rhs(p, c));
  return out;
}

// Element-wise comparison, LEIR.md §5 style: NaN equals NaN, infinities only the same infinity.
inline std::string compare_outputs(const leir::TensorMap& want, const leir::TensorMap& got, double rtol,
                                   double atol) {
  for (const auto& [name, w] : want) {
    auto it = got.find(name);
    if (it == got.end()) return "missing output " + name;
    const auto& g = it->second;
    if (g.data.size() != w.data.size()) return "shape of " + name;
    for (size_t i = 0; i < w.data.size(); ++i) {
      double x = g.data[i], y = w.data[i];
      bool ok = (std::isnan(x) && std::isnan(y)) || x == y ||
                (std::isfinite(x) && std::isfinite(y) && std::fabs(x - y) <= atol + rtol * std::fabs(y));
      if (!ok)
        return name + "[" + std::to_string(i) + "]: expected " + leir::format_number(y, false) + ", got " +
               leir::format_number(x, false);
    }
  }
  return "";
}

// The project's verifier (LEIR.md §5; f64 tolerances rtol 1e-9, atol 1e-9 * max|reference|),
// four trials cycling the input profiles Ordinary, ScaledUp, ScaledDown, Signs, per seed.
// "" when equivalent or when the input program itself does not run.
inline std::string verify_equivalent(const leir::Program& before, const leir::Program& after, int seeds = 1) {
  for (int seed = 0; seed < seeds; ++seed) {
    verify::VerifyOptions opts;
    opts.trials = 4;
    opts.seed = static_cast<uint64_t>(seed);
    auto r = verify::verify(before, after, opts);
    if (r.invalid_reference) continue;
    if (!r.equivalent) return verify::to_json(r) + (r.error.empty() ? "" : " " + r.error);
  }
  return "";
}

struct CorpusProgram {
  leir::Program program;
  nlohmann::json record;
};

inline std::vector<CorpusProgram> corpus_programs() {
  std::vector<CorpusProgram> out;
  std::ifstream in(std::string(STEPTP_SHARED_DIR) + "/corpus/public_translator_sample.jsonl");
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    auto j = nlohmann::json::parse(line);
    out.push_back({leir::program_from_json(j, "public_translator_sample.jsonl"), j});
  }
  return out;
}

inline const std::vector<std::string>& algebraic_strategy_names() {
  static const std::vector<std::string> names = {
      "factorization", "expand_factorization", "cancellation", "expand_cancellation", "apart",
      "together",      "powsimp",              "expand_powsimp", "expand_log",       "logsimp",
      "collect",       "expand_collect",       "exponential_split", "multiplicative_split", "additive_split"};
  return names;
}

}  // namespace steptp::strategies::testing
