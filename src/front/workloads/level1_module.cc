// Level 1, single PyTorch ops and modules whose translation has more structure than one
// statement per nest:
//   lerp               torch.lerp with a tensor weight, in ATen's two-branch form
//   gru_cell           nn.GRUCell: two gate GEMMs, then r, z, n and h' in one element-wise nest
//   batch_norm_1d_train nn.BatchNorm1d in training mode: normalises with the batch statistics
//                      AND updates running_mean/running_var, buffers that forward() does not
//                      return (the translation keeps those nests; nothing reads them)
//   max_dim_values     torch.max(x, dim=1)[0]: the op max.dim computes values and indices, the
//                      caller keeps the values (the index nest never reaches the output)
#include <fmt/format.h>

#include "front/workloads/builder.h"
#include "front/workloads/define.h"

namespace steptp::workloads {
namespace {

std::vector<HyperParam> rows_cols() {
  return {hp("rows", 1, 65536, {1, 3}, {16, 64}, {1024, 1024}), hp("cols", 1, 65536, {1, 6}, {16, 64}, {1024, 1024})};
}

// ATen's lerp kernel: |w| < 0.5 ? start + w*(end-start) : end - (end-start)*(1-w).
Workload lerp() {
  Workload w;
  w.name = "lerp";
  w.family = "pointwise";
  w.params = rows_cols();
  w.build = [](const HyperValues& hv) {
    int64_t r = hv.at("rows"), c = hv.at("cols");
    ProgramBuilder b("lerp");
    b.input("start", {r, c});
    b.input("end", {r, c});
    b.input("weight", {r, c});
    b.output("out", {r, c});
    b.nest({r, c}, "$out[tx,a]=if_then_else(abs($weight[tx,a])<0.5,"
                   "$start[tx,a]+$weight[tx,a]*($end[tx,a]-$start[tx,a]),"
                   "$end[tx,a]-($end[tx,a]-$start[tx,a])*(1-$weight[tx,a]))");
    return b.finish();
  };
  w.torch_reference = R"(
def reference(t, hp):
    return {"E": torch.lerp(t["A"], t["C"], t["D"])}
)";
  return w;
}

// nn.GRUCell (gate order r, z, n): gi = x W_ih^T + b_ih, gh = h W_hh^T + b_hh,
// r = sigmoid(gi_r + gh_r), z = sigmoid(gi_z + gh_z), n = tanh(gi_n + r*gh_n),
// h' = (1-z)*n + z*h (the documented formula; ATen's (h-n)*z+n differs by rounding only).
Workload gru_cell() {
  Workload w;
  w.name = "gru_cell";
  w.family = "rnn";
  w.params = {hp("batch", 1, 4096, {1, 3}, {4, 16}, {64, 64}), hp("input_size", 1, 8192, {1, 4}, {16, 64}, {512, 512}),
              hp("hidden", 1, 8192, {1, 4}, {16, 64}, {512, 512})};
  w.build = [](const HyperValues& hv) {
    int64_t n = hv.at("batch"), in = hv.at("input_size"), h = hv.at("hidden");
    ProgramBuilder b("gru_cell");
    b.input("x", {n, in});
    b.input("h", {n, h});
    b.output("h1", {n, h});
    b.param("w_ih", {3 * h, in});
    b.param("w_hh", {3 * h, h});
    b.param("b_ih", {3 * h});
    b.param("b_hh", {3 * h});
    for (const char* t : {"gi", "gh", "r", "z", "n"}) b.temp(t);
    b.nest({n, 3 * h, in}, "$gi[tx,a]=$gi[tx,a]+$x[tx,c]*$w_ih[a,c]");
    b.nest({n, 3 * h}, "$gi[tx,a]=$gi[tx,a]+$b_ih[a]");
    b.nest({n, 3 * h, h}, "$gh[tx,a]=$gh[tx,a]+$h[tx,c]*$w_hh[a,c]");
    b.nest({n, 3 * h}, "$gh[tx,a]=$gh[tx,a]+$b_hh[a]");
    b.nest({n, h}, fmt::format("$r[tx,a]=sigmoid($gi[tx,a]+$gh[tx,a]);"
                               "$z[tx,a]=sigmoid($gi[tx,a+{0}]+$gh[tx,a+{0}]);"
                               "$n[tx,a]=tanh($gi[tx,a+{1}]+$r[tx,a]*$gh[tx,a+{1}]);"
                               "$h1[tx,a]=(1-$z[tx,a])*$n[tx,a]+$z[tx,a]*$h[tx,a]",
                               h, 2 * h));
    return b.finish();
  };
  w.torch_reference = R"(
def reference(t, hp):
    cell = torch.nn.GRUCell(hp["input_size"], hp["hidden"], dtype=t["A"].dtype)
    with torch.no_grad():
        cell.weight_ih.copy_(t["E"])
        cell.weight_hh.copy_(t["F"])
        cell.bias_ih.copy_(t["G"])
        cell.bias_hh.copy_(t["H"])
        return {"D": cell(t["A"], t["C"])}
)";
  return w;
}

// nn.BatchNorm1d(features, eps=1e-5, momentum=0.1) in training mode on [batch, features]: biased
// batch variance for the output; running_mean' = 0.9*running_mean + 0.1*mean and
// running_var' = 0.9*running_var + 0.1*unbiased variance are computed but not returned.
Workload batch_norm_1d_train() {
  Workload w;
  w.name = "batch_norm_1d_train";
  w.family = "norm";
  // PyTorch refuses training-mode batch norm with one value per channel: batch >= 2.
  w.params = {hp("batch", 2, 4096, {2, 4}, {8, 32}, {256, 256}), hp("features", 1, 65536, {1, 4}, {16, 64}, {1024, 1024})};
  w.build = [](const HyperValues& hv) {
    int64_t n = hv.at("batch"), f = hv.at("features");
    ProgramBuilder b("batch_norm_1d_train");
    b.input("x", {n, f});
    b.input("running_mean", {f});
    b.input("running_var", {f});
    b.output("y", {n, f});
    b.param("gamma", {f});
    b.param("beta", {f});
    for (const char* t : {"sum", "mean", "sq", "var", "rm1", "rv1"}) b.temp(t);
    b.nest(std::vector<ProgramBuilder::LoopSpec>{{'L', n, "a"}, {'B', f, "tx"}}, "$sum[tx]=$sum[tx]+$x[a,tx]");
    b.nest({f}, fmt::format("$mean[tx]=$sum[tx]/{}", n));
    b.nest(std::vector<ProgramBuilder::LoopSpec>{{'L', n, "a"}, {'B', f, "tx"}},
           "$sq[tx]=$sq[tx]+($x[a,tx]-$mean[tx])**2");
    b.nest({f}, fmt::format("$var[tx]=$sq[tx]/{}", n));
    b.nest({n, f}, "$y[tx,a]=($x[tx,a]-$mean[a])/sqrt($var[a]+1e-05)*$gamma[a]+$beta[a]");
    b.nest({f}, "$rm1[tx]=0.9*$running_mean[tx]+0.1*$mean[tx]");
    b.nest({f}, fmt::format("$rv1[tx]=0.9*$running_var[tx]+0.1*($sq[tx]/{})", n - 1));
    return b.finish();
  };
  w.torch_reference = R"(
def reference(t, hp):
    bn = torch.nn.BatchNorm1d(hp["features"], eps=1e-5, momentum=0.1, dtype=t["A"].dtype)
    bn.train()
    with torch.no_grad():
        bn.weight.copy_(t["F"])
        bn.bias.copy_(t["G"])
        bn.running_mean.copy_(t["C"])
        bn.running_var.copy_(t["D"])
        return {"E": bn(t["A"])}
)";
  return w;
}

// torch.max(x, dim=1)[0] on [batch, dim]; the index pass picks the first maximal index.
Workload max_dim_values() {
  Workload w;
  w.name = "max_dim_values";
  w.family = "reduce";
  w.params = {hp("batch", 1, 4096, {1, 4}, {16, 64}, {256, 256}), hp("dim", 1, 65536, {1, 8}, {32, 128}, {4096, 4096})};
  w.build = [](const HyperValues& hv) {
    int64_t n = hv.at("batch"), d = hv.at("dim");
    ProgramBuilder b("max_dim_values");
    b.input("x", {n, d});
    b.output("values", {n});
    b.temp("indices", leir::DType::I64);
    b.nest({n, d}, "$values[tx]=max($values[tx],$x[tx,a])");
    b.nest({n, d}, fmt::format("$indices[tx]=min($indices[tx],if_then_else($x[tx,a]>=$values[tx],a,{}))", d));
    return b.finish();
  };
  w.torch_reference = R"(
def reference(t, hp):
    return {"C": torch.max(t["A"], dim=1)[0]}
)";
  return w;
}

RegisterWorkload reg_lerp{lerp()};
RegisterWorkload reg_gru{gru_cell()};
RegisterWorkload reg_bn1d{batch_norm_1d_train()};
RegisterWorkload reg_maxdim{max_dim_values()};

}  // namespace
}  // namespace steptp::workloads
