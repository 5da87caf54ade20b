// Test helper: run programs in the interpreter and their PyTorch references in one python process
// (tests/workloads/torch_oracle.py), and compare.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ir/interp/inputs.h"
#include "ir/interp/interpreter.h"
#include "ir/leir/values.h"

namespace steptp::workloads::testing {

struct OracleCase {
  std::string id;
  leir::Program program;
  std::string source;  // def reference(t, hp)
  nlohmann::json hp = nlohmann::json::object();
  uint64_t input_seed = 0;
};

struct OracleResult {
  std::string id;
  double rel_err = 0;  // max over outputs of max|leir - torch| / max|torch|
  std::string error;   // non-empty when the case failed to run or disagreed structurally
};

// Inputs and params from the seed, constants from the signature (the reference reads them too).
inline leir::TensorMap oracle_inputs(const leir::Program& p, uint64_t seed) {
  leir::TensorMap in = interp::generate_inputs(p, seed);
  for (const auto& d : p.known)
    if (d.role == leir::Role::Constant && d.value) in[d.name] = leir::TensorValue{d.dtype, d.shape, *d.value};
  return in;
}

// Max |a - b| / max |b| over one tensor; NaN/inf anywhere, or a shape mismatch, is an error.
inline double tensor_rel_err(const leir::TensorValue& got, const leir::TensorValue& want, std::string& error) {
  if (got.shape != want.shape) {
    error = "shape differs";
    return INFINITY;
  }
  double diff = 0, scale = 0;
  for (size_t i = 0; i < want.data.size(); ++i) {
    if (!std::isfinite(got.data[i]) || !std::isfinite(want.data[i])) {
      error = fmt::format("non-finite value at flat index {} (leir {}, torch {})", i, got.data[i], want.data[i]);
      return INFINITY;
    }
    diff = std::max(diff, std::fabs(got.data[i] - want.data[i]));
    scale = std::max(scale, std::fabs(want.data[i]));
  }
  return scale > 0 ? diff / scale : diff;
}

inline std::vector<OracleResult> run_oracle(const std::vector<OracleCase>& cases) {
  namespace fs = std::filesystem;
  fs::path dir = fs::path(STEPTP_BINARY_DIR) / fmt::format("oracle_tmp_{}", ::getpid());
  fs::create_directories(dir);
  fs::path in_path = dir / "in.jsonl", out_path = dir / "out.jsonl";
  std::vector<OracleResult> results(cases.size());
  std::vector<leir::TensorMap> leir_out(cases.size());
  {
    std::ofstream in(in_path);
    for (size_t i = 0; i < cases.size(); ++i) {
      const auto& c = cases[i];
      results[i].id = c.id;
      leir::TensorMap inputs = oracle_inputs(c.program, c.input_seed);
      try {
        leir_out[i] = interp::run_program(c.program, inputs);
      } catch (const std::exception& e) {
        results[i].error = std::string("interpreter: ") + e.what();
      }
      nlohmann::json rec = {{"id", c.id}, {"source", c.source}, {"hp", c.hp},
                            {"inputs", leir::values_to_json(inputs)}};
      in << rec.dump() << "\n";
    }
  }
  std::string cmd = fmt::format("/usr/bin/python3 {}/tests/workloads/torch_oracle.py {} {}", STEPTP_SOURCE_DIR,
                                in_path.string(), out_path.string());
  int rc = std::system(cmd.c_str());
  if (rc != 0) {
    for (auto& r : results) r.error = fmt::format("torch oracle exited with {}", rc);
    fs::remove_all(dir);
    return results;
  }
  std::ifstream out(out_path);
  std::string line;
  size_t i = 0;
  while (std::getline(out, line)) {
    if (line.empty()) continue;
    if (i >= cases.size()) break;
    auto j = nlohmann::json::parse(line);
    OracleResult& r = results[i];
    if (j.contains("error")) {
      r.error += "torch: " + j["error"].get<std::string>();
    } else if (r.error.empty()) {
      leir::TensorMap want = leir::values_from_json(j["outputs"]);
      for (const auto& d : cases[i].program.known) {
        if (d.role != leir::Role::Output) continue;
        auto w = want.find(d.name);
        auto g = leir_out[i].find(d.name);
        if (w == want.end() || g == leir_out[i].end()) {
          r.error = "output " + d.name + " missing";
          continue;
        }
        std::string err;
        r.rel_err = std::max(r.rel_err, tensor_rel_err(g->second, w->second, err));
        if (!err.empty()) r.error = d.name + ": " + err;
      }
    }
    ++i;
  }
  if (i != cases.size())
    for (size_t k = i; k < cases.size(); ++k) results[k].error = "no oracle answer";
  fs::remove_all(dir);
  return results;
}

}  // namespace steptp::workloads::testing
