// Test helper for the workload suite: runs workloads in the reference interpreter and their
// PyTorch references in ONE /usr/bin/python3 process (tests/workloads/torch_oracle.py), and
// compares with the suite's tolerance (see torch_agreement_test.cc).
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ir/interp/inputs.h"
#include "ir/interp/interpreter.h"
#include "ir/leir/values.h"
#include "front/workloads/workload.h"

namespace steptp::workloads::harness {

namespace fs = std::filesystem;

struct Trial {
  uint64_t seed;
  interp::InputProfile profile;
};

struct Case {
  std::string id;  // "name#seed"
  const Workload* workload;
  leir::Program program;
  leir::TensorMap leir_outputs;
};

// Every input, param and constant (constants carry their values in the signature).
inline leir::TensorMap torch_inputs(const leir::Program& p, const leir::TensorMap& inputs) {
  leir::TensorMap all = inputs;
  for (const auto& d : p.known)
    if (d.role == leir::Role::Constant && d.value) all[d.name] = {d.dtype, d.shape, *d.value};
  return all;
}

// Worst violation of the tolerance in one tensor ("" when it agrees).
inline std::string compare(const std::string& name, const leir::TensorValue& got, const leir::TensorValue& want) {
  if (got.shape != want.shape)
    return fmt::format("{}: shape [{}] vs PyTorch [{}]", name, fmt::join(got.shape, ","), fmt::join(want.shape, ","));
  bool exact = leir::is_integer(got.dtype) || got.dtype == leir::DType::Bool;
  double scale = 1.0;
  for (double y : want.data)
    if (std::isfinite(y)) scale = std::max(scale, std::fabs(y));
  double atol = 1e-12 * scale;
  for (size_t i = 0; i < got.data.size(); ++i) {
    double x = got.data[i], y = want.data[i];
    bool ok;
    if (std::isnan(x) || std::isnan(y)) ok = std::isnan(x) && std::isnan(y);
    else if (std::isinf(x) || std::isinf(y)) ok = x == y;
    else if (exact) ok = x == y;
    else ok = std::fabs(x - y) <= 1e-10 * std::fabs(y) + atol;
    if (!ok) return fmt::format("{}[{}]: LEIR {} vs PyTorch {} (rel err {:.3g})", name, i, x, y,
                                std::fabs(x - y) / std::max(std::fabs(y), 1e-300));
  }
  return {};
}

// Emits each workload at `size` for every trial, runs the interpreter, runs every reference in
// one python process (files under STEPTP_BINARY_DIR/tmp/<tag>) and reports each disagreement as
// a test failure naming the workload, the seed and the worst element. Returns the number of
// output tensors compared.
inline int check_workloads(const std::vector<std::pair<const Workload*, Trial>>& runs, SizeClass size,
                           const std::string& tag) {
  fs::path dir = fs::path(STEPTP_BINARY_DIR) / "tmp" / tag;
  fs::create_directories(dir);
  fs::path in_path = dir / "cases.jsonl", out_path = dir / "torch.jsonl";
  std::vector<Case> cases;
  {
    std::ofstream in(in_path);
    for (const auto& [w, trial] : runs) {
      Case c{fmt::format("{}#{}", w->name, trial.seed), w, {}, {}};
      try {
        HyperValues hv = sample_hyper(*w, trial.seed, size);
        c.program = emit(*w, hv);
        leir::TensorMap inputs = interp::generate_inputs(c.program, trial.seed, trial.profile);
        c.leir_outputs = interp::run_program(c.program, inputs);
        nlohmann::json rec = {{"id", c.id}, {"source", w->torch_reference}, {"hp", hv},
                              {"inputs", leir::values_to_json(torch_inputs(c.program, inputs))}};
        in << rec.dump() << "\n";
        cases.push_back(std::move(c));
      } catch (const std::exception& e) {
        ADD_FAILURE() << c.id << ": LEIR side failed: " << e.what();
      }
    }
  }
  EXPECT_EQ(cases.size(), runs.size());
  std::string cmd = fmt::format("/usr/bin/python3 {}/tests/workloads/torch_oracle.py {} {}", STEPTP_SOURCE_DIR,
                                in_path.string(), out_path.string());
  if (std::system(cmd.c_str()) != 0) {
    ADD_FAILURE() << "PyTorch oracle failed: " << cmd;
    return 0;
  }
  std::map<std::string, nlohmann::json> torch;
  std::ifstream out(out_path);
  for (std::string line; std::getline(out, line);) {
    auto j = nlohmann::json::parse(line);
    torch[j.at("id").get<std::string>()] = j;
  }
  int compared = 0;
  for (const auto& c : cases) {
    auto it = torch.find(c.id);
    if (it == torch.end()) {
      ADD_FAILURE() << c.id << ": no PyTorch result";
      continue;
    }
    if (it->second.contains("error")) {
      ADD_FAILURE() << c.id << ": PyTorch reference failed:\n" << it->second["error"].get<std::string>();
      continue;
    }
    leir::TensorMap want = leir::values_from_json(it->second.at("outputs"));
    for (const auto& d : c.program.known) {
      if (d.role != leir::Role::Output) continue;
      auto w = want.find(d.name);
      if (w == want.end()) {
        ADD_FAILURE() << c.id << ": PyTorch reference returned no " << d.name;
        continue;
      }
      std::string err = compare(d.name, c.leir_outputs.at(d.name), w->second);
      EXPECT_TRUE(err.empty()) << c.id << ": " << err;
      ++compared;
    }
  }
  return compared;
}

}  // namespace steptp::workloads::harness
