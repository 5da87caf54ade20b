// Level 1, scans along dim 1 of [batch, length] (KernelBench level 1 problems 89-93): cumsum,
// cumprod, reverse cumsum, exclusive cumsum and masked cumsum. Each sums/multiplies in index
// order, as PyTorch's CPU scan does, so results agree to the last bit or nearly.
#include <fmt/format.h>

#include "front/workloads/builder.h"
#include "front/workloads/define.h"

namespace steptp::workloads {
namespace {

std::vector<HyperParam> scan_params() {
  return {hp("batch", 1, 1024, {1, 4}, {4, 16}, {128, 128}), hp("length", 1, 1 << 20, {1, 24}, {128, 512}, {4000, 4000})};
}

// Prefix recursion: out[a] = op(out[a-1], x[a]), the first element from the identity.
Workload prefix_scan(std::string name, bool product, std::string torch_expr) {
  Workload w;
  w.name = name;
  w.family = "scan";
  w.params = scan_params();
  w.build = [name, product](const HyperValues& hv) {
    int64_t n = hv.at("batch"), len = hv.at("length");
    ProgramBuilder b(name);
    b.input("x", {n, len});
    b.output("out", {n, len});
    b.nest({n, len}, fmt::format("$out[tx,a]=if_then_else(a<1,{0},$out[tx,a-1]){1}$x[tx,a]", product ? 1 : 0,
                                 product ? "*" : "+"));
    return b.finish();
  };
  w.torch_reference = "\ndef reference(t, hp):\n    A = t[\"A\"]\n    return {\"C\": " + torch_expr + "}\n";
  return w;
}

// Reverse cumsum as the public translator wrote it (corpus cumsum_reverse): flip, a cumsum as a
// masked sum over the whole row, flip back.
Workload cumsum_reverse() {
  Workload w;
  w.name = "cumsum_reverse";
  w.family = "scan";
  w.params = scan_params();
  w.build = [](const HyperValues& hv) {
    int64_t n = hv.at("batch"), len = hv.at("length");
    ProgramBuilder b("cumsum_reverse");
    b.input("x", {n, len});
    b.temp("flip");
    b.temp("cum");
    b.output("out", {n, len});
    b.nest({n, len}, fmt::format("$flip[tx,a]=$x[tx,{}-a]", len - 1));
    b.nest({n, len, len}, "$cum[tx,a]=$cum[tx,a]+if_then_else(c<=a,$flip[tx,c],0)");
    b.nest({n, len}, fmt::format("$out[tx,a]=$cum[tx,{}-a]", len - 1));
    return b.finish();
  };
  w.torch_reference = R"(
def reference(t, hp):
    return {"E": torch.cumsum(t["A"].flip(1), dim=1).flip(1)}
)";
  return w;
}

// Exclusive cumsum: out[0] = 0, out[a] = out[a-1] + x[a-1] (shape kept; KernelBench's version
// also slices the batch, a bug we do not copy).
Workload cumsum_exclusive() {
  Workload w;
  w.name = "cumsum_exclusive";
  w.family = "scan";
  w.params = scan_params();
  w.build = [](const HyperValues& hv) {
    int64_t n = hv.at("batch"), len = hv.at("length");
    ProgramBuilder b("cumsum_exclusive");
    b.input("x", {n, len});
    b.output("out", {n, len});
    b.nest({n, len}, "$out[tx,a]=if_then_else(a<1,0,$out[tx,a-1]+$x[tx,a-1])");
    return b.finish();
  };
  w.torch_reference = R"(
def reference(t, hp):
    A = t["A"]
    zeros = torch.zeros(A.shape[0], 1, dtype=A.dtype)
    return {"C": torch.cat([zeros, torch.cumsum(A[:, :-1], dim=1)], dim=1)}
)";
  return w;
}

// Masked cumsum: cumsum of x * mask with a boolean mask input (KernelBench problem 93).
Workload cumsum_masked() {
  Workload w;
  w.name = "cumsum_masked";
  w.family = "scan";
  w.params = scan_params();
  w.build = [](const HyperValues& hv) {
    int64_t n = hv.at("batch"), len = hv.at("length");
    ProgramBuilder b("cumsum_masked");
    b.input("x", {n, len});
    b.input("mask", {n, len}, leir::DType::Bool);
    b.output("out", {n, len});
    b.temp("masked");
    b.nest({n, len}, "$masked[tx,a]=$x[tx,a]*$mask[tx,a]");
    b.nest({n, len, len}, "$out[tx,a]=$out[tx,a]+if_then_else(c<=a,$masked[tx,c],0)");
    return b.finish();
  };
  w.torch_reference = R"(
def reference(t, hp):
    return {"D": torch.cumsum(t["A"] * t["C"], dim=1)}
)";
  return w;
}

RegisterWorkload reg_cumsum{prefix_scan("cumsum", false, "torch.cumsum(A, dim=1)")};
RegisterWorkload reg_cumprod{prefix_scan("cumprod", true, "torch.cumprod(A, dim=1)")};
RegisterWorkload reg_rev{cumsum_reverse()};
RegisterWorkload reg_excl{cumsum_exclusive()};
RegisterWorkload reg_masked{cumsum_masked()};

}  // namespace
}  // namespace steptp::workloads
