// Level 1, reductions over one dimension of [batch, dim1, dim2] (KernelBench level 1 problems
// 47-53): sum (keepdim, as KernelBench), mean, max, min, product, argmax, argmin. The reduced
// dimension is itself a hyper-parameter. argmax/argmin return the first index of the extreme
// value on ties (PyTorch's rule): the smallest index whose value equals the extreme.
#include <fmt/format.h>

#include "front/workloads/builder.h"
#include "front/workloads/define.h"

namespace steptp::workloads {
namespace {

// "tx,a,c"... for a nest of `count` loops.
std::string vars_of(size_t count) {
  std::string s;
  for (size_t i = 0; i < count; ++i) s += (i ? "," : "") + index_name(i);
  return s;
}

enum class Reduce { Sum, Mean, Max, Min, Prod, ArgMax, ArgMin };

Workload reduction(std::string name, Reduce op, std::string torch_expr) {
  Workload w;
  w.name = name;
  w.family = "reduce";
  w.params = {hp("batch", 1, 512, {1, 4}, {4, 16}, {16, 16}), hp("dim1", 1, 8192, {1, 8}, {32, 128}, {256, 256}),
              hp("dim2", 1, 8192, {1, 8}, {32, 128}, {256, 256}), hp("dim", 0, 2, {0, 2}, {0, 2}, {1, 1})};
  w.build = [name, op](const HyperValues& hv) {
    std::vector<int64_t> shape = {hv.at("batch"), hv.at("dim1"), hv.at("dim2")};
    int64_t red = hv.at("dim"), n = shape[red];
    std::vector<std::string> vars = {"tx", "a", "c"};
    std::string in_idx = "tx,a,c", out_idx;
    std::vector<int64_t> out_shape;
    for (int i = 0; i < 3; ++i) {
      if (i == red && op != Reduce::Sum) continue;
      out_shape.push_back(i == red ? 1 : shape[i]);
      out_idx += (out_idx.empty() ? "" : ",") + (i == red ? std::string("0") : vars[i]);
    }
    bool arg = op == Reduce::ArgMax || op == Reduce::ArgMin;
    ProgramBuilder b(name);
    b.input("x", shape);
    if (arg) b.output("out", out_shape, leir::DType::I64);
    else b.output("out", out_shape);
    std::string x = "$x[" + in_idx + "]", o = "$out[" + out_idx + "]";
    switch (op) {
      case Reduce::Sum: b.nest(shape, o + "=" + o + "+" + x); break;
      case Reduce::Max: b.nest(shape, o + "=max(" + o + "," + x + ")"); break;
      case Reduce::Min: b.nest(shape, o + "=min(" + o + "," + x + ")"); break;
      case Reduce::Prod: b.nest(shape, o + "=" + o + "*" + x); break;
      case Reduce::Mean:
        b.temp("sum");
        b.nest(shape, "$sum[" + out_idx + "]=$sum[" + out_idx + "]+" + x);
        b.nest(out_shape, fmt::format("$out[{0}]=$sum[{0}]/{1}", vars_of(out_shape.size()), n));
        break;
      case Reduce::ArgMax:
      case Reduce::ArgMin: {
        // Pass 1: the extreme value; pass 2: the smallest index that attains it.
        b.temp("ext");
        std::string e = "$ext[" + out_idx + "]";
        b.nest(shape, e + "=" + (op == Reduce::ArgMax ? "max(" : "min(") + e + "," + x + ")");
        b.nest(shape, fmt::format("{0}=min({0},if_then_else({1}{2}{3},{4},{5}))", o, x,
                                  op == Reduce::ArgMax ? ">=" : "<=", e, vars[red], n));
        break;
      }
    }
    return b.finish();
  };
  w.torch_reference = "\ndef reference(t, hp):\n    A, dim = t[\"A\"], hp[\"dim\"]\n    return {\"C\": " + torch_expr + "}\n";
  return w;
}

RegisterWorkload reg_sum{reduction("sum_reduction", Reduce::Sum, "torch.sum(A, dim=dim, keepdim=True)")};
RegisterWorkload reg_mean{reduction("mean_reduction", Reduce::Mean, "torch.mean(A, dim=dim)")};
RegisterWorkload reg_max{reduction("max_reduction", Reduce::Max, "torch.max(A, dim=dim)[0]")};
RegisterWorkload reg_min{reduction("min_reduction", Reduce::Min, "torch.min(A, dim=dim)[0]")};
RegisterWorkload reg_prod{reduction("product_reduction", Reduce::Prod, "torch.prod(A, dim=dim)")};
RegisterWorkload reg_argmax{reduction("argmax", Reduce::ArgMax, "torch.argmax(A, dim=dim)")};
RegisterWorkload reg_argmin{reduction("argmin", Reduce::ArgMin, "torch.argmin(A, dim=dim)")};

}  // namespace
}  // namespace steptp::workloads
