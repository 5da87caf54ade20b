// Level 1, softmax and log-softmax over dim 1 of [batch, dim] (KernelBench problems 23-24), in the
// public translator's numerically stable three-pass form: row max, sum of shifted exponentials,
// then the normalized (log-)probabilities.
#include "front/workloads/builder.h"
#include "front/workloads/define.h"

namespace steptp::workloads {
namespace {

Workload softmax_workload(bool log) {
  Workload w;
  w.name = log ? "log_softmax" : "softmax";
  w.family = "softmax";
  w.params = {hp("batch", 1, 4096, {1, 4}, {4, 16}, {16, 16}),
              hp("dim", 1, 1 << 20, {2, 32}, {256, 2048}, {16384, 16384})};
  w.build = [name = w.name, log](const HyperValues& hv) {
    int64_t batch = hv.at("batch"), dim = hv.at("dim");
    ProgramBuilder b(name);
    b.input("x", {batch, dim});
    b.output("out", {batch, dim});
    b.temp("max");
    b.temp("sum");
    b.nest({batch, dim}, "$max[tx]=max($max[tx],$x[tx,a])");
    b.nest({batch, dim}, "$sum[tx]=$sum[tx]+exp($x[tx,a]-$max[tx])");
    if (log) b.nest({batch, dim}, "$out[tx,a]=$x[tx,a]-$max[tx]-log($sum[tx])");
    else b.nest({batch, dim}, "$out[tx,a]=exp($x[tx,a]-$max[tx])/$sum[tx]");
    return b.finish();
  };
  w.torch_reference = log ? R"(
def reference(t, hp):
    return {"C": torch.log_softmax(t["A"], dim=1)}
)"
                          : R"(
def reference(t, hp):
    return {"C": torch.softmax(t["A"], dim=1)}
)";
  return w;
}

RegisterWorkload reg_softmax{softmax_workload(false)};
RegisterWorkload reg_log_softmax{softmax_workload(true)};

}  // namespace
}  // namespace steptp::workloads
