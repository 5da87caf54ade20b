// Level 1, matmul family (KernelBench level 1, problems 1-18 in spirit).
#include "workloads/builder.h"
#include "workloads/workload.h"

namespace steptp::workloads {
namespace {

using P = HyperParam;

// C = A @ B with A [n, k], B [k, m]: the public translator's loop order (tx=n, a=m, c=k).
leir::Program matmul_2d(const std::string& name, int64_t n, int64_t k, int64_t m) {
  ProgramBuilder b(name);
  b.input("a", {n, k});
  b.input("b", {k, m});
  b.output("out", {n, m});
  b.nest({n, m, k}, "$out[tx,a]=$out[tx,a]+$a[tx,c]*$b[c,a]");
  return b.finish();
}

Workload square_matmul() {
  Workload w;
  w.name = "square_matmul";
  w.family = "matmul";
  w.params = {P{"n", 1, 4096, {{{2, 8}, {32, 128}, {512, 2048}}}}};
  w.build = [](const HyperValues& hv) {
    int64_t n = hv.at("n");
    return matmul_2d("square_matmul", n, n, n);
  };
  w.torch_reference = R"(
def reference(t, hp):
    return {"D": torch.matmul(t["A"], t["C"])}
)";
  return w;
}

RegisterWorkload reg_square{square_matmul()};

}  // namespace
}  // namespace steptp::workloads
