// Level 1, normalizations (KernelBench level 1 problems 33-40): batch, layer, group, instance,
// RMS, L1, L2 and Frobenius norm. Batch/layer/group/instance norm use the biased variance
// (divide by N) and eps = 1e-5 under the square root, as PyTorch does; their loop structure and
// tensor naming follow the public translator's records (corpus BatchNorm, GroupNorm, layernorm).
#include <fmt/format.h>

#include "front/workloads/builder.h"
#include "front/workloads/define.h"

namespace steptp::workloads {
namespace {

const HyperParam kBatch = hp("batch", 1, 512, {1, 3}, {2, 8}, {16, 16});
const HyperParam kFeatures = hp("features", 1, 4096, {1, 6}, {8, 32}, {64, 64});
const HyperParam kH = hp("h", 1, 4096, {1, 6}, {8, 32}, {256, 256});
const HyperParam kW = hp("w", 1, 4096, {1, 6}, {8, 32}, {256, 256});

// Batch norm with batch statistics (training mode), per channel over (n, h, w). The channel is
// the bound loop of the statistics nests and the last dimension the bound loop of the
// element-wise ones, exactly as the public translator wrote it.
Workload batch_norm() {
  Workload w;
  w.name = "batch_norm";
  w.family = "norm";
  w.params = {kBatch, kFeatures, kH, kW};
  w.build = [](const HyperValues& hv) {
    int64_t n = hv.at("batch"), c = hv.at("features"), h = hv.at("h"), wd = hv.at("w");
    int64_t count = n * h * wd;
    ProgramBuilder b("batch_norm");
    b.input("x", {n, c, h, wd});
    b.temp("mean");
    b.temp("var");
    b.output("out", {n, c, h, wd});
    b.param("weight", {c});
    b.param("bias", {c});
    b.temp("sum");
    b.temp("sq");
    b.temp("norm");
    std::vector<ProgramBuilder::LoopSpec> stats = {{'L', n, "a"}, {'B', c, "tx"}, {'L', h, "c"}, {'L', wd, "d"}};
    std::vector<ProgramBuilder::LoopSpec> elem = {{'L', n, "a"}, {'L', c, "c"}, {'L', h, "d"}, {'B', wd, "tx"}};
    b.nest_loops(stats, "$sum[tx]=$sum[tx]+$x[a,tx,c,d]");
    b.nest({c}, fmt::format("$mean[tx]=$sum[tx]/{}", count));
    b.nest_loops(stats, "$sq[tx]=$sq[tx]+($x[a,tx,c,d]-$mean[tx])**2");
    b.nest({c}, fmt::format("$var[tx]=$sq[tx]/{}", count));
    b.nest_loops(elem, "$norm[a,c,d,tx]=($x[a,c,d,tx]-$mean[c])/sqrt($var[c]+1e-05)");
    b.nest_loops(elem, "$out[a,c,d,tx]=$weight[c]*$norm[a,c,d,tx]+$bias[c]");
    return b.finish();
  };
  w.torch_reference = R"(
def reference(t, hp):
    y = F.batch_norm(t["A"], None, None, weight=t["F"], bias=t["G"], training=True, eps=1e-5)
    return {"E": y}
)";
  return w;
}

// Statistics over every element of one "row" (what `row` and `elems` loops index), then the
// normalized value, optionally scaled and shifted: the shared shape of layer and instance norm.
struct NormSpec {
  std::vector<int64_t> row_dims;   // loop extents identifying a row (outermost first)
  std::vector<int64_t> elem_dims;  // loop extents inside a row
};

std::string vars(size_t from, size_t count) {
  std::string s;
  for (size_t i = 0; i < count; ++i) s += (i ? "," : "") + index_name(from + i);
  return s;
}

void normalize_rows(ProgramBuilder& b, const NormSpec& s, bool affine, const std::string& affine_idx) {
  std::vector<int64_t> all = s.row_dims;
  all.insert(all.end(), s.elem_dims.begin(), s.elem_dims.end());
  int64_t count = 1;
  for (int64_t d : s.elem_dims) count *= d;
  std::string row = vars(0, s.row_dims.size());
  std::string elem = vars(0, all.size());
  b.nest(all, fmt::format("$sum[{0}]=$sum[{0}]+$x[{1}]", row, elem));
  b.nest(s.row_dims, fmt::format("$mean[{0}]=$sum[{0}]/{1}", row, count));
  b.nest(all, fmt::format("$sq[{0}]=$sq[{0}]+($x[{1}]-$mean[{0}])**2", row, elem));
  b.nest(s.row_dims, fmt::format("$var[{0}]=$sq[{0}]/{1}", row, count));
  if (affine) {
    b.nest(all, fmt::format("$norm[{1}]=($x[{1}]-$mean[{0}])/sqrt($var[{0}]+1e-05)", row, elem));
    b.nest(all, fmt::format("$out[{0}]=$weight[{1}]*$norm[{0}]+$bias[{1}]", elem, affine_idx));
  } else {
    b.nest(all, fmt::format("$out[{1}]=($x[{1}]-$mean[{0}])/sqrt($var[{0}]+1e-05)", row, elem));
  }
}

// Layer norm over the last two dimensions of [batch, features, dim] (examples/layernorm.json).
Workload layer_norm() {
  Workload w;
  w.name = "layer_norm";
  w.family = "norm";
  w.params = {kBatch, kFeatures, hp("dim", 1, 4096, {1, 8}, {16, 64}, {256, 256})};
  w.build = [](const HyperValues& hv) {
    int64_t n = hv.at("batch"), f = hv.at("features"), d = hv.at("dim");
    ProgramBuilder b("layer_norm");
    b.input("x", {n, f, d});
    b.output("out", {n, f, d});
    b.param("weight", {f, d});
    b.param("bias", {f, d});
    for (const char* t : {"sum", "mean", "sq", "var", "norm"}) b.temp(t);
    normalize_rows(b, {{n}, {f, d}}, true, "a,c");
    return b.finish();
  };
  w.torch_reference = R"(
def reference(t, hp):
    A = t["A"]
    return {"C": F.layer_norm(A, A.shape[1:], weight=t["D"], bias=t["E"], eps=1e-5)}
)";
  return w;
}

// Instance norm (InstanceNorm2d defaults: no affine parameters) over (h, w) of each (n, c).
Workload instance_norm() {
  Workload w;
  w.name = "instance_norm";
  w.family = "norm";
  w.params = {kBatch, kFeatures, kH, kW};
  w.build = [](const HyperValues& hv) {
    int64_t n = hv.at("batch"), c = hv.at("features"), h = hv.at("h"), wd = hv.at("w");
    ProgramBuilder b("instance_norm");
    b.input("x", {n, c, h, wd});
    b.output("out", {n, c, h, wd});
    for (const char* t : {"sum", "mean", "sq", "var"}) b.temp(t);
    normalize_rows(b, {{n, c}, {h, wd}}, false, "");
    return b.finish();
  };
  w.torch_reference = R"(
def reference(t, hp):
    return {"C": F.instance_norm(t["A"], eps=1e-5)}
)";
  return w;
}

// Group norm: channel = group * channels_per_group + c (corpus GroupNorm).
Workload group_norm() {
  Workload w;
  w.name = "group_norm";
  w.family = "norm";
  w.params = {kBatch, hp("groups", 1, 64, {1, 3}, {2, 8}, {8, 8}),
              hp("channels_per_group", 1, 64, {1, 3}, {2, 8}, {8, 8}), kH, kW};
  w.build = [](const HyperValues& hv) {
    int64_t n = hv.at("batch"), g = hv.at("groups"), cpg = hv.at("channels_per_group");
    int64_t h = hv.at("h"), wd = hv.at("w"), c = g * cpg, count = cpg * h * wd;
    ProgramBuilder b("group_norm");
    b.input("x", {n, c, h, wd});
    b.output("out", {n, c, h, wd});
    b.param("weight", {c});
    b.param("bias", {c});
    for (const char* t : {"sum", "mean", "sq", "var", "norm"}) b.temp(t);
    std::string ch = fmt::format("a*{}+c", cpg);
    std::string x = fmt::format("$x[tx,{},d,f]", ch);
    std::vector<int64_t> all = {n, g, cpg, h, wd};
    b.nest(all, "$sum[tx,a]=$sum[tx,a]+" + x);
    b.nest({n, g}, fmt::format("$mean[tx,a]=$sum[tx,a]/{}", count));
    b.nest(all, "$sq[tx,a]=$sq[tx,a]+(" + x + "-$mean[tx,a])**2");
    b.nest({n, g}, fmt::format("$var[tx,a]=$sq[tx,a]/{}", count));
    b.nest(all, fmt::format("$norm[tx,{0},d,f]=({1}-$mean[tx,a])/sqrt($var[tx,a]+1e-05)", ch, x));
    b.nest(all, fmt::format("$out[tx,{0},d,f]=$weight[{0}]*$norm[tx,{0},d,f]+$bias[{0}]", ch));
    return b.finish();
  };
  w.torch_reference = R"(
def reference(t, hp):
    return {"C": F.group_norm(t["A"], hp["groups"], weight=t["D"], bias=t["E"], eps=1e-5)}
)";
  return w;
}

// KernelBench RMSNorm: x / sqrt(mean(x^2, dim=1, keepdim=True) + eps) on [batch, features, h, w].
Workload rms_norm() {
  Workload w;
  w.name = "rms_norm";
  w.family = "norm";
  w.params = {kBatch, kFeatures, kH, kW};
  w.build = [](const HyperValues& hv) {
    int64_t n = hv.at("batch"), f = hv.at("features"), h = hv.at("h"), wd = hv.at("w");
    ProgramBuilder b("rms_norm");
    b.input("x", {n, f, h, wd});
    b.output("out", {n, f, h, wd});
    b.temp("sq");
    b.temp("rms");
    b.nest({n, f, h, wd}, "$sq[tx,c,d]=$sq[tx,c,d]+$x[tx,a,c,d]**2");
    b.nest({n, h, wd}, fmt::format("$rms[tx,a,c]=sqrt($sq[tx,a,c]/{}+1e-05)", f));
    b.nest({n, f, h, wd}, "$out[tx,a,c,d]=$x[tx,a,c,d]/$rms[tx,c,d]");
    return b.finish();
  };
  w.torch_reference = R"(
def reference(t, hp):
    x = t["A"]
    rms = torch.sqrt(torch.mean(x ** 2, dim=1, keepdim=True) + 1e-5)
    return {"C": x / rms}
)";
  return w;
}

// KernelBench L1 / L2 norm: x divided by the row's sum of |x| / Euclidean norm, on [batch, dim].
Workload lp_norm(bool l1) {
  Workload w;
  w.name = l1 ? "l1_norm" : "l2_norm";
  w.family = "norm";
  w.params = {hp("batch", 1, 4096, {1, 4}, {4, 16}, {16, 16}),
              hp("dim", 1, 1 << 20, {1, 32}, {256, 2048}, {16384, 16384})};
  w.build = [name = w.name, l1](const HyperValues& hv) {
    int64_t n = hv.at("batch"), d = hv.at("dim");
    ProgramBuilder b(name);
    b.input("x", {n, d});
    b.output("out", {n, d});
    b.temp("acc");
    if (l1) {
      b.nest({n, d}, "$acc[tx]=$acc[tx]+abs($x[tx,a])");
      b.nest({n, d}, "$out[tx,a]=$x[tx,a]/$acc[tx]");
    } else {
      b.temp("norm");
      b.nest({n, d}, "$acc[tx]=$acc[tx]+$x[tx,a]**2");
      b.nest({n}, "$norm[tx]=sqrt($acc[tx])");
      b.nest({n, d}, "$out[tx,a]=$x[tx,a]/$norm[tx]");
    }
    return b.finish();
  };
  w.torch_reference = l1 ? R"(
def reference(t, hp):
    x = t["A"]
    return {"C": x / torch.sum(torch.abs(x), dim=1, keepdim=True)}
)"
                         : R"(
def reference(t, hp):
    x = t["A"]
    return {"C": x / torch.norm(x, p=2, dim=1, keepdim=True)}
)";
  return w;
}

// KernelBench Frobenius norm: x / ||x||_F over the whole tensor (corpus FrobeniusNorm).
Workload frobenius_norm() {
  Workload w;
  w.name = "frobenius_norm";
  w.family = "norm";
  w.params = {kBatch, kFeatures, kH, kW};
  w.build = [](const HyperValues& hv) {
    int64_t n = hv.at("batch"), f = hv.at("features"), h = hv.at("h"), wd = hv.at("w");
    ProgramBuilder b("frobenius_norm");
    b.input("x", {n, f, h, wd});
    b.temp("norm");
    b.output("out", {n, f, h, wd});
    b.temp("sq");
    b.nest({n, f, h, wd}, "$sq=$sq+$x[tx,a,c,d]**2");
    b.nest({1}, "$norm=sqrt($sq)");
    b.nest({n, f, h, wd}, "$out[tx,a,c,d]=$x[tx,a,c,d]/$norm");
    return b.finish();
  };
  w.torch_reference = R"(
def reference(t, hp):
    x = t["A"]
    return {"D": x / torch.norm(x, p="fro")}
)";
  return w;
}

RegisterWorkload reg_bn{batch_norm()};
RegisterWorkload reg_ln{layer_norm()};
RegisterWorkload reg_in{instance_norm()};
RegisterWorkload reg_gn{group_norm()};
RegisterWorkload reg_rms{rms_norm()};
RegisterWorkload reg_l1{lp_norm(true)};
RegisterWorkload reg_l2{lp_norm(false)};
RegisterWorkload reg_fro{frobenius_norm()};

}  // namespace
}  // namespace steptp::workloads
