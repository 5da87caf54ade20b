// Every workload, at `tiny` size and three seeds, computes what PyTorch computes.
//
// The LEIR of each workload runs in the reference interpreter on seeded inputs; the workload's
// `torch_reference` (real PyTorch ops, written independently of the loops) runs on the same inputs
// in ONE /usr/bin/python3 process (tests/workloads/torch_oracle.py); outputs must agree.
//
// Tolerance: |leir - torch| <= 1e-10 * |torch| + atol, atol = 1e-12 * max(1, max|torch|) per
// tensor. The relative bound is the issue's; the absolute floor exists only for elements that are
// sums or differences cancelling to nearly zero (matmul/conv sums, x - mean, exp(x) - 1): their
// rounding error is proportional to the magnitude of the summands (≈ K·2^-53·max|term|, below
// 1e-13 at tiny sizes), not to the result, so no relative bound can hold there. Integer outputs
// (argmax/argmin) must be equal exactly.
//
// PyTorch semantics the workloads match (each workload file repeats the one it depends on):
//  * norms: batch/instance/group/layer norm normalise with the biased variance (divide by N),
//    eps = 1e-5 inside the sqrt; batch norm uses batch statistics (training mode);
//    instance norm has no affine parameters (InstanceNorm default), group/layer/batch norm do.
//  * RMS/L1/L2/Frobenius norms follow KernelBench's formulas (mean of squares + eps under sqrt,
//    sum of |x|, sqrt of sum of squares without eps, torch.norm 'fro' over the whole tensor).
//  * avg pool: count_include_pad=True (zero padding counts in the divisor k^d); max pool pads
//    with -inf; floor mode output sizes; pooling and convolution dilation as PyTorch defines it.
//  * transposed convolution: out = (in-1)*stride - 2*pad + dilation*(k-1) + 1, weight [Cin, Cout, k].
//  * GELU: exact erf form and the tanh approximation (sqrt(2/pi) and 0.044715) as separate
//    workloads; MinGPT's new-GELU is checked against its own Python, not F.gelu.
//  * SELU/ELU constants in float64 (the public translator printed float32-rounded SELU constants,
//    3e-8 off); softplus returns x above threshold 20; mish uses log1p(exp(x)) with no threshold.
//  * hardsigmoid/hardswish as min(max(x+3,0),6)/6 (PyTorch's CPU kernel order).
//  * softmax/log-softmax: max-shifted; log-softmax = (x - max) - log(sum exp(x - max)).
//  * losses use reduction='mean' (KL: 'batchmean' over softmax-ed inputs, as KernelBench feeds
//    it); cross-entropy is log-softmax + NLL over integer targets; Huber is smooth_l1 (beta 1);
//    cosine-similarity loss is mean(1 - cos) with cos = x·y / max(|x||y|, 1e-8);
//    triplet margin uses pairwise_distance, which adds eps = 1e-6 to the difference (the public
//    translator dropped it), margin 1, p = 2.
//  * argmax/argmin return the FIRST index of the extreme value on ties (PyTorch's rule; the
//    public LEIR returned the last one).
//  * scans: cumsum/cumprod sequential; reverse = flip·cumsum·flip; exclusive shifts by one with a
//    leading 0; masked cumsum sums x·mask.
#include <gtest/gtest.h>
#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "interp/inputs.h"
#include "interp/interpreter.h"
#include "leir/values.h"
#include "workloads/workload.h"

namespace steptp::workloads {
namespace {

namespace fs = std::filesystem;

struct Case {
  std::string id;  // "name#seed"
  const Workload* workload;
  leir::Program program;
  leir::TensorMap leir_outputs;
};

// Every input, param and constant (constants carry their values in the signature).
leir::TensorMap torch_inputs(const leir::Program& p, const leir::TensorMap& inputs) {
  leir::TensorMap all = inputs;
  for (const auto& d : p.known)
    if (d.role == leir::Role::Constant && d.value) all[d.name] = {d.dtype, d.shape, *d.value};
  return all;
}

// Worst violation of the tolerance in one tensor ("" when it agrees).
std::string compare(const std::string& name, const leir::TensorValue& got, const leir::TensorValue& want) {
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

// Three seeds of ordinary inputs (U(-1,1)) for every workload, as the issue asks. Level-1
// workloads also get one seed of edge inputs (exact zeros, ties, ±1, ±0.5, ±2: argmax ties,
// hinge kinks, relu at 0) and one scaled by 1e3 (exp overflow, the softplus threshold). Level-2
// chains keep the public translator's exp-based tanh, which overflows at that scale, so they are
// held to the ordinary sets only.
struct Trial {
  uint64_t seed;
  interp::InputProfile profile;
  bool level1_only;
};
const std::vector<Trial> kTrials = {{1, interp::InputProfile::Ordinary, false},
                                    {2, interp::InputProfile::Ordinary, false},
                                    {3, interp::InputProfile::Ordinary, false},
                                    {4, interp::InputProfile::Signs, true},
                                    {5, interp::InputProfile::ScaledUp, true}};

TEST(TorchAgreement, EveryWorkloadTinyThreeSeeds) {
  fs::path dir = fs::path(STEPTP_BINARY_DIR) / "tmp" / "workloads_torch";
  fs::create_directories(dir);
  fs::path in_path = dir / "cases.jsonl", out_path = dir / "torch.jsonl";

  std::vector<Case> cases;
  size_t expected = 0;
  {
    std::ofstream in(in_path);
    for (const auto& w : all_workloads()) {
      for (const auto& [seed, profile, level1_only] : kTrials) {
        if (level1_only && w.level != 1) continue;
        ++expected;
        Case c{fmt::format("{}#{}", w.name, seed), &w, {}, {}};
        try {
          HyperValues hv = sample_hyper(w, seed, SizeClass::Tiny);
          c.program = emit(w, hv);
          leir::TensorMap inputs = interp::generate_inputs(c.program, seed, profile);
          c.leir_outputs = interp::run_program(c.program, inputs);
          nlohmann::json rec = {{"id", c.id}, {"source", w.torch_reference}, {"hp", hv},
                                {"inputs", leir::values_to_json(torch_inputs(c.program, inputs))}};
          in << rec.dump() << "\n";
          cases.push_back(std::move(c));
        } catch (const std::exception& e) {
          ADD_FAILURE() << c.id << ": LEIR side failed: " << e.what();
        }
      }
    }
  }
  std::string cmd = fmt::format("/usr/bin/python3 {}/tests/workloads/torch_oracle.py {} {}",
                                STEPTP_SOURCE_DIR, in_path.string(), out_path.string());
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;

  std::map<std::string, nlohmann::json> torch;
  std::ifstream out(out_path);
  for (std::string line; std::getline(out, line);) {
    auto j = nlohmann::json::parse(line);
    torch[j.at("id").get<std::string>()] = j;
  }
  int compared = 0;
  for (const auto& c : cases) {
    auto it = torch.find(c.id);
    ASSERT_NE(it, torch.end()) << c.id << ": no PyTorch result";
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
  EXPECT_EQ(cases.size(), expected);
  std::cout << "compared " << compared << " outputs of " << cases.size() << " programs ("
            << all_workloads().size() << " workloads)\n";
}

}  // namespace
}  // namespace steptp::workloads
