// Level 1, losses (KernelBench level 1 problems 94-100 and friends), all with PyTorch's default
// reduction='mean' (KL: 'batchmean'): MSE, Huber (smooth L1, beta 1), hinge, KL divergence,
// cross-entropy, NLL, cosine-similarity loss and triplet margin loss. Outputs are scalars.
#include <fmt/format.h>

#include "front/workloads/builder.h"
#include "front/workloads/define.h"

namespace steptp::workloads {
namespace {

std::vector<HyperParam> loss_params() {
  return {hp("batch", 1, 4096, {1, 4}, {8, 32}, {128, 128}), hp("dim", 1, 1 << 20, {1, 16}, {64, 512}, {4096, 4096})};
}

// Mean over [batch, dim] of an element-wise term of pred (A) and target (C).
Workload elementwise_loss(std::string name, std::string term, std::string torch_expr) {
  Workload w;
  w.name = name;
  w.family = "loss";
  w.params = loss_params();
  w.build = [name, term](const HyperValues& hv) {
    int64_t n = hv.at("batch"), d = hv.at("dim");
    ProgramBuilder b(name);
    b.input("p", {n, d});
    b.input("t", {n, d});
    b.output("out", {});
    b.temp("diff");
    b.temp("sum");
    b.nest({n, d}, "$diff[tx,a]=$p[tx,a]-$t[tx,a]");
    std::string rhs;
    for (char c : term) rhs += c == 'X' ? std::string("$diff[tx,a]") : std::string(1, c);
    b.nest({n, d}, "$sum=$sum+" + rhs);
    b.nest({1}, fmt::format("$out=$sum/{}", n * d));
    return b.finish();
  };
  w.torch_reference = "\ndef reference(t, hp):\n    A, C = t[\"A\"], t[\"C\"]\n    return {\"D\": " + torch_expr + "}\n";
  return w;
}

// Hinge: mean(clamp(1 - pred * target, min=0)).
Workload hinge_loss() {
  Workload w;
  w.name = "hinge_loss";
  w.family = "loss";
  w.params = loss_params();
  w.build = [](const HyperValues& hv) {
    int64_t n = hv.at("batch"), d = hv.at("dim");
    ProgramBuilder b("hinge_loss");
    b.input("p", {n, d});
    b.input("t", {n, d});
    b.output("out", {});
    b.temp("sum");
    b.nest({n, d}, "$sum=$sum+max(1-$p[tx,a]*$t[tx,a],0)");
    b.nest({1}, fmt::format("$out=$sum/{}", n * d));
    return b.finish();
  };
  w.torch_reference = R"(
def reference(t, hp):
    return {"D": torch.mean(torch.clamp(1 - t["A"] * t["C"], min=0))}
)";
  return w;
}

// KL divergence as KernelBench feeds it: both arguments are softmax distributions (here of the
// logit inputs A and C; the prediction enters as a stable log-softmax), loss =
// sum(t * (log t - log p)) / batch.
Workload kl_div_loss() {
  Workload w;
  w.name = "kl_div_loss";
  w.family = "loss";
  w.params = loss_params();
  w.build = [](const HyperValues& hv) {
    int64_t n = hv.at("batch"), d = hv.at("dim");
    ProgramBuilder b("kl_div_loss");
    b.input("p", {n, d});
    b.input("t", {n, d});
    b.output("out", {});
    for (const char* t : {"pmax", "psum", "logp", "tmax", "tsum", "prob", "kl"}) b.temp(t);
    b.nest({n, d}, "$pmax[tx]=max($pmax[tx],$p[tx,a])");
    b.nest({n, d}, "$psum[tx]=$psum[tx]+exp($p[tx,a]-$pmax[tx])");
    b.nest({n, d}, "$logp[tx,a]=$p[tx,a]-$pmax[tx]-log($psum[tx])");
    b.nest({n, d}, "$tmax[tx]=max($tmax[tx],$t[tx,a])");
    b.nest({n, d}, "$tsum[tx]=$tsum[tx]+exp($t[tx,a]-$tmax[tx])");
    b.nest({n, d}, "$prob[tx,a]=exp($t[tx,a]-$tmax[tx])/$tsum[tx]");
    // PyTorch's kl_div counts target entries equal to 0 as 0 (not 0*log 0 = nan).
    b.nest({n, d}, "$kl=$kl+if_then_else($prob[tx,a]>0,$prob[tx,a]*log($prob[tx,a])-$prob[tx,a]*$logp[tx,a],0)");
    b.nest({1}, fmt::format("$out=$kl/{}", n));
    return b.finish();
  };
  w.torch_reference = R"(
def reference(t, hp):
    logp = F.log_softmax(t["A"], dim=1)
    q = F.softmax(t["C"], dim=1)
    return {"D": F.kl_div(logp, q, reduction="batchmean")}
)";
  return w;
}

// Cross-entropy / NLL over integer class targets (gathered with a data-dependent subscript).
Workload class_loss(bool cross_entropy) {
  Workload w;
  w.name = cross_entropy ? "cross_entropy_loss" : "nll_loss";
  w.family = "loss";
  w.params = {hp("batch", 1, 4096, {1, 6}, {8, 32}, {4096, 4096}), hp("classes", 1, 100000, {1, 10}, {10, 100}, {10, 10})};
  w.build = [name = w.name, cross_entropy](const HyperValues& hv) {
    int64_t n = hv.at("batch"), k = hv.at("classes");
    ProgramBuilder b(name);
    b.input("x", {n, k});
    b.input("target", {n}, leir::DType::I64);
    b.output("out", {});
    b.temp("loss");
    b.temp("sum");
    if (cross_entropy) {
      b.temp("max");
      b.temp("sumexp");
      b.nest({n, k}, "$max[tx]=max($max[tx],$x[tx,a])");
      b.nest({n, k}, "$sumexp[tx]=$sumexp[tx]+exp($x[tx,a]-$max[tx])");
      b.nest({n}, "$loss[tx]=-($x[tx,$target[tx]]-$max[tx]-log($sumexp[tx]))");
    } else {
      b.nest({n}, "$loss[tx]=-$x[tx,$target[tx]]");
    }
    b.nest({n}, "$sum=$sum+$loss[tx]");
    b.nest({1}, fmt::format("$out=$sum/{}", n));
    return b.finish();
  };
  w.torch_reference = cross_entropy ? R"(
def reference(t, hp):
    return {"D": F.cross_entropy(t["A"], t["C"])}
)"
                                    : R"(
def reference(t, hp):
    return {"D": F.nll_loss(t["A"], t["C"])}
)";
  return w;
}

// mean(1 - cosine_similarity(p, t, dim=1)); PyTorch clamps each squared norm at eps^2 = 1e-16.
Workload cosine_similarity_loss() {
  Workload w;
  w.name = "cosine_similarity_loss";
  w.family = "loss";
  w.params = loss_params();
  w.build = [](const HyperValues& hv) {
    int64_t n = hv.at("batch"), d = hv.at("dim");
    ProgramBuilder b("cosine_similarity_loss");
    b.input("p", {n, d});
    b.input("t", {n, d});
    b.output("out", {});
    for (const char* t : {"dot", "pp", "tt", "cos", "sum"}) b.temp(t);
    b.nest({n, d}, "$dot[tx]=$dot[tx]+$p[tx,a]*$t[tx,a]");
    b.nest({n, d}, "$pp[tx]=$pp[tx]+$p[tx,a]**2");
    b.nest({n, d}, "$tt[tx]=$tt[tx]+$t[tx,a]**2");
    b.nest({n}, "$cos[tx]=$dot[tx]/sqrt(max($pp[tx],1e-16)*max($tt[tx],1e-16))");
    b.nest({n}, "$sum=$sum+(1-$cos[tx])");
    b.nest({1}, fmt::format("$out=$sum/{}", n));
    return b.finish();
  };
  w.torch_reference = R"(
def reference(t, hp):
    return {"D": torch.mean(1 - F.cosine_similarity(t["A"], t["C"], dim=1))}
)";
  return w;
}

// Triplet margin loss (margin 1, p 2): pairwise_distance adds eps = 1e-6 to the difference.
Workload triplet_margin_loss() {
  Workload w;
  w.name = "triplet_margin_loss";
  w.family = "loss";
  w.params = loss_params();
  w.build = [](const HyperValues& hv) {
    int64_t n = hv.at("batch"), d = hv.at("dim");
    ProgramBuilder b("triplet_margin_loss");
    b.input("anchor", {n, d});
    b.input("pos", {n, d});
    b.input("neg", {n, d});
    b.output("out", {});
    for (const char* t : {"dp", "dn", "hinge", "sum"}) b.temp(t);
    b.nest({n, d}, "$dp[tx]=$dp[tx]+($anchor[tx,a]-$pos[tx,a]+1e-06)**2");
    b.nest({n, d}, "$dn[tx]=$dn[tx]+($anchor[tx,a]-$neg[tx,a]+1e-06)**2");
    b.nest({n}, "$hinge[tx]=max(sqrt($dp[tx])-sqrt($dn[tx])+1.0,0)");
    b.nest({n}, "$sum=$sum+$hinge[tx]");
    b.nest({1}, fmt::format("$out=$sum/{}", n));
    return b.finish();
  };
  w.torch_reference = R"(
def reference(t, hp):
    return {"E": F.triplet_margin_loss(t["A"], t["C"], t["D"], margin=1.0)}
)";
  return w;
}

RegisterWorkload reg_mse{elementwise_loss("mse_loss", "X**2", "F.mse_loss(A, C)")};
// Smooth L1 with beta 1 (= Huber with delta 1): 0.5*d^2 below 1, |d| - 0.5 above.
RegisterWorkload reg_huber{elementwise_loss("huber_loss", "if_then_else(abs(X)<1,0.5*X**2,abs(X)-0.5)",
                                            "F.smooth_l1_loss(A, C, beta=1.0)")};
RegisterWorkload reg_hinge{hinge_loss()};
RegisterWorkload reg_kl{kl_div_loss()};
RegisterWorkload reg_ce{class_loss(true)};
RegisterWorkload reg_nll{class_loss(false)};
RegisterWorkload reg_cos{cosine_similarity_loss()};
RegisterWorkload reg_triplet{triplet_margin_loss()};

}  // namespace
}  // namespace steptp::workloads
