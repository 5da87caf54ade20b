// Level 1, losses that PyTorch code writes as formulas over probabilities and logarithms (no
// single torch.nn.functional op), each translated as the formula is written in its source:
//   log_cosh_loss         mean(log(cosh(pred - target))), cosh spelled (exp(d)+exp(-d))/2
//   infonce_loss          InfoNCE/NT-Xent as often written: -log(exp(pos/tau) / sum exp(sim/tau))
//                         over L2-normalised embeddings (F.normalize), tau = 0.07
//   kl_normal_normal      KL(N(mu1, exp(ls1)) || N(mu2, exp(ls2))) summed over the last dim, mean
//                         over the batch, with torch.distributions' formula
//                         0.5*(var_ratio + t1 - 1 - log(var_ratio))
//   clip_loss             CLIP's symmetric contrastive loss, each cross-entropy as -log(softmax)
//   nt_xent_loss          SimCLR's NT-Xent over two views, tau = 0.5
//   augmix_jsd_loss       AugMix's Jensen-Shannon consistency loss (official PyTorch code):
//                         12 * mean of kl_div(log clamp(mixture, 1e-7, 1), p) over 3 distributions
//   normal_log_prob       Normal(loc, var.sqrt()).log_prob(value), element-wise
//   ppo_clip_loss         CleanRL's PPO clipped policy loss (clip 0.2, no advantage normalisation);
//                         like CleanRL it also computes the old/new approx_kl and clipfrac
//                         diagnostics, which the loss does not use
// Softmaxes are max-shifted (the public translator's softmax). kl_div counts target 0 as 0.
// Not here on purpose: losses whose scalar is a cancellation near 0 for nearly equal inputs (the
// IIC mutual information, a KL between two temperature-softened softmaxes): under the verifier's
// inputs scaled by 1e-3 their value is ~1e-7..1e-15 and ANY rewrite moves it by rounding beyond
// the f64 tolerance, so no strategy result on them could verify.
#include <fmt/format.h>

#include "front/workloads/builder.h"
#include "front/workloads/define.h"

namespace steptp::workloads {
namespace {

std::vector<HyperParam> batch_dim() {
  return {hp("batch", 1, 4096, {1, 4}, {8, 32}, {128, 128}), hp("dim", 1, 1 << 20, {1, 8}, {64, 512}, {4096, 4096})};
}
std::vector<HyperParam> batch_classes() {
  return {hp("batch", 1, 4096, {1, 4}, {8, 32}, {128, 128}), hp("classes", 1, 100000, {1, 8}, {10, 100}, {1000, 1000})};
}

// Softmax of `src` (a template like "$x[tx,a]") over a: temps max, sum and the result `out`.
void softmax(ProgramBuilder& b, int64_t n, int64_t k, const std::string& src, const std::string& out) {
  std::string mx = out + "_max", sm = out + "_sum";
  b.temp(mx);
  b.temp(sm);
  b.temp(out);
  b.nest({n, k}, fmt::format("${0}[tx]=max(${0}[tx],{1})", mx, src));
  b.nest({n, k}, fmt::format("${0}[tx]=${0}[tx]+exp({1}-${2}[tx])", sm, src, mx));
  b.nest({n, k}, fmt::format("${0}[tx,a]=exp({1}-${2}[tx])/${3}[tx]", out, src, mx, sm));
}

Workload log_cosh_loss() {
  Workload w;
  w.name = "log_cosh_loss";
  w.family = "loss";
  w.params = batch_dim();
  w.build = [](const HyperValues& hv) {
    int64_t n = hv.at("batch"), d = hv.at("dim");
    ProgramBuilder b("log_cosh_loss");
    b.input("p", {n, d});
    b.input("t", {n, d});
    b.output("out", {});
    b.temp("diff");
    b.temp("sum");
    b.nest({n, d}, "$diff[tx,a]=$p[tx,a]-$t[tx,a]");
    b.nest({n, d}, "$sum=$sum+log((exp($diff[tx,a])+exp(-$diff[tx,a]))/2)");
    b.nest({1}, fmt::format("$out=$sum/{}", n * d));
    return b.finish();
  };
  w.torch_reference = R"(
def reference(t, hp):
    return {"D": torch.mean(torch.log(torch.cosh(t["A"] - t["C"])))}
)";
  return w;
}

Workload infonce_loss() {
  Workload w;
  w.name = "infonce_loss";
  w.family = "loss";
  // One sample makes the loss exactly -log(1) = 0; contrastive batches have at least two.
  w.params = {hp("batch", 2, 4096, {2, 4}, {8, 32}, {128, 128}), hp("dim", 1, 1 << 20, {1, 8}, {64, 512}, {128, 128})};
  w.build = [](const HyperValues& hv) {
    int64_t n = hv.at("batch"), d = hv.at("dim");
    ProgramBuilder b("infonce_loss");
    b.input("q", {n, d});
    b.input("k", {n, d});
    b.output("out", {});
    for (const char* t : {"qq", "qn", "kk", "kn", "logits", "sumexp", "sum"}) b.temp(t);
    b.nest({n, d}, "$qq[tx]=$qq[tx]+$q[tx,a]**2");
    b.nest({n, d}, "$qn[tx,a]=$q[tx,a]/max(sqrt($qq[tx]),1e-12)");
    b.nest({n, d}, "$kk[tx]=$kk[tx]+$k[tx,a]**2");
    b.nest({n, d}, "$kn[tx,a]=$k[tx,a]/max(sqrt($kk[tx]),1e-12)");
    b.nest({n, n, d}, "$logits[tx,a]=$logits[tx,a]+$qn[tx,c]*$kn[a,c]");
    b.nest({n, n}, "$sumexp[tx]=$sumexp[tx]+exp($logits[tx,a]/0.07)");
    b.nest({n}, "$sum=$sum-log(exp($logits[tx,tx]/0.07)/$sumexp[tx])");
    b.nest({1}, fmt::format("$out=$sum/{}", n));
    return b.finish();
  };
  w.torch_reference = R"(
def reference(t, hp):
    q = F.normalize(t["A"], dim=1)
    k = F.normalize(t["C"], dim=1)
    logits = q @ k.t() / 0.07
    return {"D": F.cross_entropy(logits, torch.arange(q.shape[0]))}
)";
  return w;
}

Workload kl_normal_normal() {
  Workload w;
  w.name = "kl_normal_normal";
  w.family = "loss";
  w.params = batch_dim();
  w.build = [](const HyperValues& hv) {
    int64_t n = hv.at("batch"), d = hv.at("dim");
    ProgramBuilder b("kl_normal_normal");
    b.input("mu1", {n, d});
    b.input("logstd1", {n, d});
    b.input("mu2", {n, d});
    b.input("logstd2", {n, d});
    b.output("out", {});
    for (const char* t : {"s1", "s2", "sum"}) b.temp(t);
    b.nest({n, d}, "$s1[tx,a]=exp($logstd1[tx,a])");
    b.nest({n, d}, "$s2[tx,a]=exp($logstd2[tx,a])");
    b.nest({n, d}, "$sum=$sum+0.5*(($s1[tx,a]/$s2[tx,a])**2+(($mu1[tx,a]-$mu2[tx,a])/$s2[tx,a])**2-1"
                   "-log(($s1[tx,a]/$s2[tx,a])**2))");
    b.nest({1}, fmt::format("$out=$sum/{}", n));
    return b.finish();
  };
  w.torch_reference = R"(
def reference(t, hp):
    D = torch.distributions
    p = D.Normal(t["A"], t["C"].exp(), validate_args=False)
    q = D.Normal(t["D"], t["E"].exp(), validate_args=False)
    return {"F": D.kl_divergence(p, q).sum(-1).mean()}
)";
  return w;
}

// Contrastive losses over L2-normalised embeddings (F.normalize, eps 1e-12): the logits are
// bounded by 1/tau, so the probabilities never underflow, and with batch >= 2 every -log p is
// bounded away from 0 (one sample would make every loss exactly 0).
void normalize_rows(ProgramBuilder& b, int64_t n, int64_t d, const std::string& src, const std::string& norm,
                    const std::string& dst, int64_t row_offset) {
  b.nest({n, d}, fmt::format("${0}[tx]=${0}[tx]+${1}[tx,a]**2", norm, src));
  b.nest({n, d}, fmt::format("${0}[tx{3},a]=${1}[tx,a]/max(sqrt(${2}[tx]),1e-12)", dst, src, norm,
                             row_offset ? fmt::format("+{}", row_offset) : std::string()));
}

// CLIP's symmetric loss (open_clip ClipLoss, logit_scale = 1/0.07 as initialised):
// (cross_entropy(logits, arange) + cross_entropy(logits.T, arange)) / 2, each cross-entropy
// written as -log of the softmax probability of the matching pair.
Workload clip_loss() {
  Workload w;
  w.name = "clip_loss";
  w.family = "loss";
  w.params = {hp("batch", 2, 4096, {2, 4}, {8, 32}, {128, 128}), hp("dim", 1, 1 << 20, {1, 8}, {64, 512}, {512, 512})};
  w.build = [](const HyperValues& hv) {
    int64_t n = hv.at("batch"), d = hv.at("dim");
    const std::string scale = num(1 / 0.07);
    ProgramBuilder b("clip_loss");
    b.input("image", {n, d});
    b.input("text", {n, d});
    b.output("out", {});
    for (const char* t : {"ii", "img", "tt", "txt", "logits", "rowsum", "colsum", "p_i2t", "p_t2i", "sum"}) b.temp(t);
    normalize_rows(b, n, d, "image", "ii", "img", 0);
    normalize_rows(b, n, d, "text", "tt", "txt", 0);
    b.nest({n, n, d}, "$logits[tx,a]=$logits[tx,a]+$img[tx,c]*$txt[a,c]");
    b.nest({n, n}, fmt::format("$rowsum[tx]=$rowsum[tx]+exp({}*$logits[tx,a])", scale));
    b.nest({n, n}, fmt::format("$colsum[tx]=$colsum[tx]+exp({}*$logits[a,tx])", scale));
    b.nest({n}, fmt::format("$p_i2t[tx]=exp({}*$logits[tx,tx])/$rowsum[tx]", scale));
    b.nest({n}, fmt::format("$p_t2i[tx]=exp({}*$logits[tx,tx])/$colsum[tx]", scale));
    b.nest({n}, "$sum=$sum-(log($p_i2t[tx])+log($p_t2i[tx]))");
    b.nest({1}, fmt::format("$out=$sum/{}", 2 * n));
    return b.finish();
  };
  w.torch_reference = R"(
def reference(t, hp):
    img, txt = F.normalize(t["A"], dim=-1), F.normalize(t["C"], dim=-1)
    logits = (1 / 0.07) * img @ txt.t()
    labels = torch.arange(img.shape[0])
    return {"D": (F.cross_entropy(logits, labels) + F.cross_entropy(logits.t(), labels)) / 2}
)";
  return w;
}

// SimCLR's NT-Xent (tau 0.5) over the 2N normalised views: every anchor's positive is its other
// view, its denominator every other row (the diagonal is masked with -inf in the usual code).
// The two anchors of a pair are summed in one statement: -(log p(a->b) + log p(b->a)).
Workload nt_xent_loss() {
  Workload w;
  w.name = "nt_xent_loss";
  w.family = "loss";
  w.params = {hp("batch", 2, 4096, {2, 4}, {8, 32}, {256, 256}), hp("dim", 1, 1 << 20, {1, 8}, {64, 512}, {128, 128})};
  w.build = [](const HyperValues& hv) {
    int64_t n = hv.at("batch"), d = hv.at("dim");
    ProgramBuilder b("nt_xent_loss");
    b.input("view1", {n, d});
    b.input("view2", {n, d});
    b.output("out", {});
    for (const char* t : {"n1", "n2", "z", "sim", "den", "p12", "p21", "sum"}) b.temp(t);
    normalize_rows(b, n, d, "view1", "n1", "z", 0);
    normalize_rows(b, n, d, "view2", "n2", "z", n);
    b.nest({2 * n, 2 * n, d}, "$sim[tx,a]=$sim[tx,a]+$z[tx,c]*$z[a,c]");
    b.nest({2 * n, 2 * n}, "$den[tx]=$den[tx]+if_then_else(a==tx,0,exp($sim[tx,a]/0.5))");
    b.nest({n}, fmt::format("$p12[tx]=exp($sim[tx,tx+{0}]/0.5)/$den[tx]", n));
    b.nest({n}, fmt::format("$p21[tx]=exp($sim[tx+{0},tx]/0.5)/$den[tx+{0}]", n));
    b.nest({n}, "$sum=$sum-(log($p12[tx])+log($p21[tx]))");
    b.nest({1}, fmt::format("$out=$sum/{}", 2 * n));
    return b.finish();
  };
  w.torch_reference = R"(
def reference(t, hp):
    n = t["A"].shape[0]
    z = F.normalize(torch.cat([t["A"], t["C"]]), dim=1)
    sim = z @ z.t() / 0.5
    sim.fill_diagonal_(float("-inf"))
    targets = torch.cat([torch.arange(n, 2 * n), torch.arange(0, n)])
    return {"D": F.cross_entropy(sim, targets)}
)";
  return w;
}

Workload augmix_jsd_loss() {
  Workload w;
  w.name = "augmix_jsd_loss";
  w.family = "loss";
  w.params = batch_classes();
  w.build = [](const HyperValues& hv) {
    int64_t n = hv.at("batch"), k = hv.at("classes");
    ProgramBuilder b("augmix_jsd_loss");
    b.input("clean", {n, k});
    b.input("aug1", {n, k});
    b.input("aug2", {n, k});
    b.output("out", {});
    softmax(b, n, k, "$clean[tx,a]", "p0");
    softmax(b, n, k, "$aug1[tx,a]", "p1");
    softmax(b, n, k, "$aug2[tx,a]", "p2");
    b.temp("mix");
    b.nest({n, k}, "$mix[tx,a]=min(max(($p0[tx,a]+$p1[tx,a]+$p2[tx,a])/3.0,1e-07),1)");
    for (const char* p : {"p0", "p1", "p2"}) {
      std::string kl = std::string("kl_") + p;
      b.temp(kl);
      b.nest({n, k}, fmt::format("${0}=${0}+if_then_else(${1}[tx,a]>0,${1}[tx,a]*(log(${1}[tx,a])-log($mix[tx,a])),0)",
                                 kl, p));
    }
    b.nest({1}, fmt::format("$out=12*($kl_p0/{0}+$kl_p1/{0}+$kl_p2/{0})/3.0", n));
    return b.finish();
  };
  w.torch_reference = R"(
def reference(t, hp):
    p_clean, p_aug1, p_aug2 = F.softmax(t["A"], dim=1), F.softmax(t["C"], dim=1), F.softmax(t["D"], dim=1)
    p_mixture = torch.clamp((p_clean + p_aug1 + p_aug2) / 3., 1e-7, 1).log()
    return {"E": 12 * (F.kl_div(p_mixture, p_clean, reduction="batchmean") +
                       F.kl_div(p_mixture, p_aug1, reduction="batchmean") +
                       F.kl_div(p_mixture, p_aug2, reduction="batchmean")) / 3.}
)";
  return w;
}

// Normal(loc, var.sqrt()).log_prob(value), element-wise: torch.distributions' formula
// -(value-loc)**2/(2*var) - log(scale) - log(sqrt(2*pi)) with scale = sqrt(var) fused into the
// log (log(sqrt(var))). A negative variance input gives NaN in both.
Workload normal_log_prob() {
  Workload w;
  w.name = "normal_log_prob";
  w.family = "loss";
  w.params = batch_dim();
  w.build = [](const HyperValues& hv) {
    int64_t n = hv.at("batch"), d = hv.at("dim");
    ProgramBuilder b("normal_log_prob");
    b.input("value", {n, d});
    b.input("loc", {n, d});
    b.input("var", {n, d});
    b.output("out", {n, d});
    b.nest({n, d}, fmt::format("$out[tx,a]=-($value[tx,a]-$loc[tx,a])**2/(2*$var[tx,a])-log(sqrt($var[tx,a]))-{}",
                               num(0.9189385332046727)));
    return b.finish();
  };
  w.torch_reference = R"(
def reference(t, hp):
    D = torch.distributions
    return {"E": D.Normal(t["C"], t["D"].sqrt(), validate_args=False).log_prob(t["A"])}
)";
  return w;
}

Workload ppo_clip_loss() {
  Workload w;
  w.name = "ppo_clip_loss";
  w.family = "loss";
  w.params = {hp("batch", 1, 1 << 20, {1, 8}, {64, 512}, {4096, 4096})};
  w.build = [](const HyperValues& hv) {
    int64_t n = hv.at("batch");
    ProgramBuilder b("ppo_clip_loss");
    b.input("newlogprob", {n});
    b.input("oldlogprob", {n});
    b.input("adv", {n});
    b.output("pg_loss", {});
    for (const char* t : {"logratio", "ratio", "old_kl_sum", "old_approx_kl", "kl_sum", "approx_kl", "clip_sum",
                          "clipfrac", "pg_sum"})
      b.temp(t);
    b.nest({n}, "$logratio[tx]=$newlogprob[tx]-$oldlogprob[tx]");
    b.nest({n}, "$ratio[tx]=exp($logratio[tx])");
    // with torch.no_grad(): diagnostics for logging only
    b.nest({n}, "$old_kl_sum=$old_kl_sum-$logratio[tx]");
    b.nest({1}, fmt::format("$old_approx_kl=$old_kl_sum/{}", n));
    b.nest({n}, "$kl_sum=$kl_sum+($ratio[tx]-1-$logratio[tx])");
    b.nest({1}, fmt::format("$approx_kl=$kl_sum/{}", n));
    b.nest({n}, "$clip_sum=$clip_sum+if_then_else(abs($ratio[tx]-1.0)>0.2,1.0,0.0)");
    b.nest({1}, fmt::format("$clipfrac=$clip_sum/{}", n));
    b.nest({n}, "$pg_sum=$pg_sum+max(-$adv[tx]*$ratio[tx],-$adv[tx]*min(max($ratio[tx],0.8),1.2))");
    b.nest({1}, fmt::format("$pg_loss=$pg_sum/{}", n));
    return b.finish();
  };
  w.torch_reference = R"(
def reference(t, hp):
    logratio = t["A"] - t["C"]
    ratio = logratio.exp()
    pg_loss1 = -t["D"] * ratio
    pg_loss2 = -t["D"] * torch.clamp(ratio, 1 - 0.2, 1 + 0.2)
    return {"E": torch.max(pg_loss1, pg_loss2).mean()}
)";
  return w;
}

RegisterWorkload reg_logcosh{log_cosh_loss()};
RegisterWorkload reg_infonce{infonce_loss()};
RegisterWorkload reg_klnormal{kl_normal_normal()};
RegisterWorkload reg_clip{clip_loss()};
RegisterWorkload reg_ntxent{nt_xent_loss()};
RegisterWorkload reg_augmix{augmix_jsd_loss()};
RegisterWorkload reg_ppo{ppo_clip_loss()};
RegisterWorkload reg_normal_lp{normal_log_prob()};

}  // namespace
}  // namespace steptp::workloads
