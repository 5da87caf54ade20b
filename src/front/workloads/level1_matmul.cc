// Level 1, matmul family (KernelBench level 1 problems 1-18 in spirit): square, rectangular,
// tall-skinny, large/small K, batched, 3-D and 4-D tensor-matrix, transposed operands,
// matrix-vector, matrix-scalar, diagonal and triangular products.
#include "front/workloads/builder.h"
#include "front/workloads/define.h"

namespace steptp::workloads {
namespace {

// out[m,n] = sum_k a[.,.] * b[.,.] in the public loop order (tx = m, a = n, c = k); the operand
// layouts select transposes.
leir::Program matmul_2d(const std::string& name, int64_t m, int64_t k, int64_t n, bool trans_a,
                        bool trans_b) {
  ProgramBuilder b(name);
  b.input("a", trans_a ? std::vector<int64_t>{k, m} : std::vector<int64_t>{m, k});
  b.input("b", trans_b ? std::vector<int64_t>{n, k} : std::vector<int64_t>{k, n});
  b.output("out", {m, n});
  std::string ra = trans_a ? "$a[c,tx]" : "$a[tx,c]";
  std::string rb = trans_b ? "$b[a,c]" : "$b[c,a]";
  b.nest({m, n, k}, "$out[tx,a]=$out[tx,a]+" + ra + "*" + rb);
  return b.finish();
}

Workload matmul_workload(std::string name, std::vector<HyperParam> params, bool trans_a, bool trans_b,
                         std::string torch_expr) {
  Workload w;
  w.name = std::move(name);
  w.family = "matmul";
  w.params = std::move(params);
  w.build = [name = w.name, trans_a, trans_b](const HyperValues& hv) {
    auto get = [&](const char* p, const char* fallback) {
      return hv.count(p) ? hv.at(p) : hv.at(fallback);
    };
    // Square and tall-skinny workloads tie dimensions together: a missing m or k is n, a
    // missing n is m.
    return matmul_2d(name, get("m", "n"), get("k", "n"), get("n", "m"), trans_a, trans_b);
  };
  w.torch_reference = "\ndef reference(t, hp):\n    A, C = t[\"A\"], t[\"C\"]\n    return {\"D\": " +
                      torch_expr + "}\n";
  return w;
}

const HyperParam kM = hp("m", 1, 16384, {1, 8}, {16, 128}, {256, 1024});
const HyperParam kK = hp("k", 1, 16384, {1, 8}, {16, 128}, {256, 1024});
const HyperParam kN = hp("n", 1, 16384, {1, 8}, {16, 128}, {256, 1024});

RegisterWorkload reg_square{matmul_workload(
    "square_matmul", {hp("n", 1, 4096, {2, 8}, {32, 128}, {512, 2048})}, false, false, "torch.matmul(A, C)")};
RegisterWorkload reg_rect{matmul_workload("rectangular_matmul", {kM, kK, kN}, false, false, "torch.matmul(A, C)")};
// KernelBench "Tall_skinny_matrix_multiplication": A [m, k] @ B [k, m] with k small.
RegisterWorkload reg_tall{matmul_workload(
    "tall_skinny_matmul",
    {hp("m", 1, 16384, {4, 12}, {64, 256}, {1024, 4096}), hp("k", 1, 64, {1, 3}, {4, 16}, {16, 32})},
    false, false, "torch.matmul(A, C)")};
RegisterWorkload reg_large_k{matmul_workload(
    "matmul_large_k",
    {hp("m", 1, 1024, {1, 4}, {8, 32}, {128, 256}), hp("k", 1, 1 << 20, {16, 64}, {1024, 4096}, {65536, 131072}),
     hp("n", 1, 1024, {1, 4}, {8, 32}, {128, 256})},
    false, false, "torch.matmul(A, C)")};
RegisterWorkload reg_small_k{matmul_workload(
    "matmul_small_k",
    {hp("m", 1, 16384, {2, 8}, {64, 256}, {4096, 8192}), hp("k", 1, 64, {1, 4}, {4, 16}, {32, 64}),
     hp("n", 1, 16384, {2, 8}, {64, 256}, {4096, 8192})},
    false, false, "torch.matmul(A, C)")};
RegisterWorkload reg_ta{matmul_workload("matmul_transposed_a", {kM, kK, kN}, true, false, "torch.matmul(A.T, C)")};
RegisterWorkload reg_tb{matmul_workload("matmul_transposed_b", {kM, kK, kN}, false, true, "torch.matmul(A, C.T)")};
RegisterWorkload reg_tab{matmul_workload("matmul_transposed_both", {kM, kK, kN}, true, true, "torch.matmul(A.T, C.T)")};

Workload batched_matmul() {
  Workload w;
  w.name = "batched_matmul";
  w.family = "matmul";
  w.params = {hp("batch", 1, 512, {1, 3}, {4, 16}, {128, 128}), kM, kK, kN};
  w.build = [](const HyperValues& hv) {
    int64_t bs = hv.at("batch"), m = hv.at("m"), k = hv.at("k"), n = hv.at("n");
    ProgramBuilder b("batched_matmul");
    b.input("a", {bs, m, k});
    b.input("b", {bs, k, n});
    b.output("out", {bs, m, n});
    b.nest({bs, m, n, k}, "$out[tx,a,c]=$out[tx,a,c]+$a[tx,a,d]*$b[tx,d,c]");
    return b.finish();
  };
  w.torch_reference = R"(
def reference(t, hp):
    return {"D": torch.bmm(t["A"], t["C"])}
)";
  return w;
}

// KernelBench "3D tensor-matrix multiplication" (corpus Matmul3D): [b, m, k] @ [k, n].
Workload matmul_3d() {
  Workload w;
  w.name = "matmul_3d_tensor_matrix";
  w.family = "matmul";
  w.params = {hp("batch", 1, 512, {1, 3}, {4, 16}, {16, 16}), kM, kK, kN};
  w.build = [](const HyperValues& hv) {
    int64_t bs = hv.at("batch"), m = hv.at("m"), k = hv.at("k"), n = hv.at("n");
    ProgramBuilder b("matmul_3d_tensor_matrix");
    b.input("a", {bs, m, k});
    b.input("b", {k, n});
    b.output("out", {bs, m, n});
    b.nest({bs, m, n, k}, "$out[tx,a,c]=$out[tx,a,c]+$a[tx,a,d]*$b[d,c]");
    return b.finish();
  };
  w.torch_reference = R"(
def reference(t, hp):
    return {"D": torch.matmul(t["A"], t["C"])}
)";
  return w;
}

// KernelBench "4D tensor-matrix multiplication": einsum("bijl,lk->bijk").
Workload matmul_4d() {
  Workload w;
  w.name = "matmul_4d_tensor_matrix";
  w.family = "matmul";
  w.params = {hp("b", 1, 64, {1, 2}, {2, 4}, {8, 16}), hp("i", 1, 512, {1, 3}, {4, 16}, {64, 256}),
              hp("j", 1, 512, {1, 3}, {4, 16}, {64, 256}), hp("l", 1, 1024, {1, 6}, {8, 32}, {128, 256}),
              hp("k", 1, 1024, {1, 6}, {8, 32}, {128, 768})};
  w.build = [](const HyperValues& hv) {
    int64_t bs = hv.at("b"), i = hv.at("i"), j = hv.at("j"), l = hv.at("l"), k = hv.at("k");
    ProgramBuilder b("matmul_4d_tensor_matrix");
    b.input("a", {bs, i, j, l});
    b.input("b", {l, k});
    b.output("out", {bs, i, j, k});
    b.nest({bs, i, j, k, l}, "$out[tx,a,c,d]=$out[tx,a,c,d]+$a[tx,a,c,f]*$b[f,d]");
    return b.finish();
  };
  w.torch_reference = R"(
def reference(t, hp):
    return {"D": torch.einsum("bijl,lk->bijk", t["A"], t["C"])}
)";
  return w;
}

// KernelBench "Matrix_vector_multiplication": A [m, k] @ B [k, 1].
Workload matvec() {
  Workload w;
  w.name = "matrix_vector_multiplication";
  w.family = "matmul";
  w.params = {hp("m", 1, 4096, {1, 8}, {32, 256}, {256, 2048}), hp("k", 1, 1 << 18, {1, 16}, {256, 1024}, {65536, 131072})};
  w.build = [](const HyperValues& hv) {
    int64_t m = hv.at("m"), k = hv.at("k");
    ProgramBuilder b("matrix_vector_multiplication");
    b.input("a", {m, k});
    b.input("b", {k, 1});
    b.output("out", {m, 1});
    b.nest({m, 1, k}, "$out[tx,a]=$out[tx,a]+$a[tx,c]*$b[c,a]");
    return b.finish();
  };
  w.torch_reference = R"(
def reference(t, hp):
    return {"D": torch.matmul(t["A"], t["C"])}
)";
  return w;
}

// KernelBench "Matrix_scalar_multiplication" (corpus record): A * s with s a scalar input.
Workload matrix_scalar() {
  Workload w;
  w.name = "matrix_scalar_multiplication";
  w.family = "matmul";
  w.params = {hp("m", 1, 16384, {1, 8}, {32, 256}, {4096, 16384}), hp("n", 1, 16384, {1, 8}, {32, 256}, {1024, 4096})};
  w.build = [](const HyperValues& hv) {
    int64_t m = hv.at("m"), n = hv.at("n");
    ProgramBuilder b("matrix_scalar_multiplication");
    b.input("a", {m, n});
    b.input("s", {});
    b.output("out", {m, n});
    b.nest({m, n}, "$out[tx,a]=$a[tx,a]*$s");
    return b.finish();
  };
  w.torch_reference = R"(
def reference(t, hp):
    return {"D": t["A"] * t["C"]}
)";
  return w;
}

// KernelBench "Matmul_with_diagonal_matrices": diag(A) @ B.
Workload diag_matmul() {
  Workload w;
  w.name = "diag_matmul";
  w.family = "matmul";
  w.params = {hp("n", 1, 8192, {1, 8}, {32, 256}, {2048, 4096}), hp("m", 1, 8192, {1, 8}, {32, 256}, {2048, 4096})};
  w.build = [](const HyperValues& hv) {
    int64_t n = hv.at("n"), m = hv.at("m");
    ProgramBuilder b("diag_matmul");
    b.input("d", {n});
    b.input("b", {n, m});
    b.output("out", {n, m});
    b.nest({n, m}, "$out[tx,a]=$d[tx]*$b[tx,a]");
    return b.finish();
  };
  w.torch_reference = R"(
def reference(t, hp):
    return {"D": torch.diag(t["A"]) @ t["C"]}
)";
  return w;
}

// KernelBench triangular products: both operands triangular (only their triangles are read), the
// result masked to the same triangle. The reduction runs over the triangle's k range only.
Workload triangular_matmul(bool lower) {
  Workload w;
  w.name = lower ? "lower_triangular_matmul" : "upper_triangular_matmul";
  w.family = "matmul";
  w.params = {hp("n", 1, 4096, {1, 8}, {32, 128}, {1024, 4096})};
  w.build = [name = w.name, lower](const HyperValues& hv) {
    int64_t n = hv.at("n");
    ProgramBuilder b(name);
    b.input("a", {n, n});
    b.input("b", {n, n});
    b.output("out", {n, n});
    // lower: k in [j, i]; upper: k in [i, j]; the product is zero outside the triangle.
    std::string cond = lower ? "a<=c&c<=tx" : "tx<=c&c<=a";
    b.nest({n, n, n}, "$out[tx,a]=$out[tx,a]+if_then_else(" + cond + ",$a[tx,c]*$b[c,a],0)");
    return b.finish();
  };
  w.torch_reference = lower ? R"(
def reference(t, hp):
    return {"D": torch.tril(torch.matmul(torch.tril(t["A"]), torch.tril(t["C"])))}
)"
                            : R"(
def reference(t, hp):
    return {"D": torch.triu(torch.matmul(torch.triu(t["A"]), torch.triu(t["C"])))}
)";
  return w;
}

RegisterWorkload reg_bmm{batched_matmul()};
RegisterWorkload reg_3d{matmul_3d()};
RegisterWorkload reg_4d{matmul_4d()};
RegisterWorkload reg_mv{matvec()};
RegisterWorkload reg_ms{matrix_scalar()};
RegisterWorkload reg_diag{diag_matmul()};
RegisterWorkload reg_lower{triangular_matmul(true)};
RegisterWorkload reg_upper{triangular_matmul(false)};

}  // namespace
}  // namespace steptp::workloads
