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

#include "torch_harness.h"

namespace steptp::workloads {
namespace {

using harness::Trial;

// Three seeds of ordinary inputs (U(-1,1)) for every workload, as the issue asks. Level-1
// workloads also get one seed of edge inputs (exact zeros, ties, ±1, ±0.5, ±2: argmax ties,
// hinge kinks, relu at 0) and one scaled by 1e3 (exp overflow, the softplus threshold). Level-2
// chains keep the public translator's exp-based tanh, which overflows at that scale, so they are
// held to the ordinary sets only.
TEST(TorchAgreement, EveryWorkloadTinyThreeSeeds) {
  const std::vector<Trial> ordinary = {{1, interp::InputProfile::Ordinary},
                                       {2, interp::InputProfile::Ordinary},
                                       {3, interp::InputProfile::Ordinary}};
  const std::vector<Trial> edge = {{4, interp::InputProfile::Signs}, {5, interp::InputProfile::ScaledUp}};
  std::vector<std::pair<const Workload*, Trial>> runs;
  for (const auto& w : all_workloads()) {
    for (const auto& t : ordinary) runs.push_back({&w, t});
    if (w.level == 1)
      for (const auto& t : edge) runs.push_back({&w, t});
  }
  int compared = harness::check_workloads(runs, SizeClass::Tiny, "workloads_torch_tiny");
  EXPECT_GE(compared, static_cast<int>(runs.size()));
  std::cout << "compared " << compared << " outputs of " << runs.size() << " programs (" << all_workloads().size()
            << " workloads)\n";
}

}  // namespace
}  // namespace steptp::workloads
