// Test helpers for the dataflow and softmax strategies: parse small programs, load the corpus,
// and check a candidate against its input by running both in the reference interpreter on
// seeded inputs (LEIR.md §5 semantics: NaN equals NaN, infinities only the same infinity).
#pragma once

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "ir/interp/inputs.h"
#include "ir/interp/interpreter.h"
#include "ir/leir/parser.h"
#include "ir/leir/printer.h"
#include "ir/leir/program_io.h"
#include "transform/strategy.h"

namespace steptp::dataflow_test {

inline leir::Program parse_program(const std::string& text) { return leir::program_from_text(text, "test.leir"); }

struct Record {
  leir::Program program;
  nlohmann::json raw;
};

inline std::vector<Record> corpus_translator() {
  std::vector<Record> out;
  std::ifstream in(std::string(STEPTP_SHARED_DIR) + "/corpus/public_translator_sample.jsonl");
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    auto j = nlohmann::json::parse(line);
    out.push_back({leir::program_from_json(j, "public_translator_sample.jsonl"), j});
  }
  return out;
}

inline const Record* corpus_program(const std::vector<Record>& all, const std::string& name) {
  for (const auto& r : all)
    if (r.program.name == name || r.raw.value("name", "") == name) return &r;
  return nullptr;
}

inline leir::Program example(const std::string& name) {
  return leir::read_programs(std::string(STEPTP_SHARED_DIR) + "/examples/" + name + ".json").at(0);
}

struct Comparison {
  bool equivalent = true;
  bool bit_exact = true;
  std::string detail;
};

inline bool close(double x, double y, double rtol, double atol) {
  if (std::isnan(x) || std::isnan(y)) return std::isnan(x) && std::isnan(y);
  if (std::isinf(x) || std::isinf(y)) return x == y;
  return std::fabs(x - y) <= atol + rtol * std::fabs(y);
}

// Runs `a` and `b` on the same seeded inputs (or the given ones) and compares every output.
inline Comparison compare_on(const leir::Program& a, const leir::Program& b, const leir::TensorMap& inputs,
                             double rtol = 1e-9, double atol = 1e-12) {
  Comparison c;
  leir::TensorMap ra, rb;
  try {
    ra = interp::run_program(a, inputs);
  } catch (const std::exception& e) {
    c.equivalent = false;
    c.detail = std::string("original failed: ") + e.what();
    return c;
  }
  try {
    rb = interp::run_program(b, inputs);
  } catch (const std::exception& e) {
    c.equivalent = false;
    c.detail = std::string("result failed: ") + e.what();
    return c;
  }
  for (const auto& [name, va] : ra) {
    auto it = rb.find(name);
    if (it == rb.end() || it->second.data.size() != va.data.size()) {
      c.equivalent = false;
      c.detail = "output " + name + " missing or resized";
      return c;
    }
    for (size_t k = 0; k < va.data.size(); ++k) {
      double x = it->second.data[k], y = va.data[k];
      bool same_bits = (std::isnan(x) && std::isnan(y)) || x == y;
      c.bit_exact &= same_bits;
      if (!close(x, y, rtol, atol)) {
        c.equivalent = false;
        c.detail = fmt::format("{}[{}]: {} vs original {}", name, k, x, y);
        return c;
      }
    }
  }
  return c;
}

inline Comparison compare_programs(const leir::Program& a, const leir::Program& b, int trials = 2,
                                   double rtol = 1e-9, double atol = 1e-12) {
  Comparison all;
  const interp::InputProfile profiles[] = {interp::InputProfile::Ordinary, interp::InputProfile::Signs,
                                           interp::InputProfile::ScaledUp, interp::InputProfile::ScaledDown};
  for (int t = 0; t < trials; ++t) {
    auto inputs = interp::generate_inputs(a, 1000 + t, profiles[t % 4]);
    auto c = compare_on(a, b, inputs, rtol, atol);
    all.bit_exact &= c.bit_exact;
    if (!c.equivalent) {
      c.detail = fmt::format("trial {}: {}", t, c.detail);
      return c;
    }
  }
  return all;
}

// Applies `strategy` at every site with every parameter choice (at most `per_site`) and checks
// each result: valid, equivalent, bit-exact when the strategy says exact. Returns the count.
inline int check_all(const strategies::Strategy& s, const leir::Program& p, int per_site = 3, int trials = 2,
                     std::vector<strategies::Candidate>* keep = nullptr) {
  int n = 0;
  auto sites = s.sites(p);
  for (const auto& site : sites) {
    auto space = s.param_space(p, site);
    for (size_t k = 0; k < space.size() && static_cast<int>(k) < per_site; ++k) {
      auto c = s.apply(p, site, space[k]);
      if (!c) continue;
      ++n;
      SCOPED_TRACE(fmt::format("{} on {} at {} params {}\nresult: {}", s.name(), p.name, site.description,
                               strategies::params_to_json(space[k]), leir::print_body(c->program.body)));
      auto cmp = compare_programs(p, c->program, trials, c->exactness == strategies::Exactness::Exact ? 0 : 1e-9,
                                  c->exactness == strategies::Exactness::Exact ? 0 : 1e-12);
      EXPECT_TRUE(cmp.equivalent) << cmp.detail;
      if (c->exactness == strategies::Exactness::Exact) EXPECT_TRUE(cmp.bit_exact);
      EXPECT_NE(leir::print_body(c->program.body), leir::print_body(p.body)) << "a no-op is not a transformation";
      if (keep) keep->push_back(std::move(*c));
    }
  }
  return n;
}

inline const strategies::Strategy& strategy(std::string_view name) {
  const auto* s = strategies::find_strategy(name);
  if (!s) throw std::runtime_error(fmt::format("strategy {} is not registered", name));
  return *s;
}

}  // namespace steptp::dataflow_test
