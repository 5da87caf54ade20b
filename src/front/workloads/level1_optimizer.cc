// Level 1, optimizer steps: one step of torch.optim.Adam, AdamW, RMSprop and Adagrad (defaults,
// single-tensor implementation, foreach=False) on a [rows, cols] parameter, given its gradient
// and the optimizer state. Outputs: the updated parameter and the updated state.
//
// The update is element-wise, so the translation is ONE nest holding one statement per updated
// tensor, in PyTorch's order (the state first, then the parameter reading the new state). The
// formulas are PyTorch's own: exp_avg.mul_(b1).add_(g, alpha=1-b1),
// exp_avg_sq.mul_(b2).addcmul_(g, g, value=1-b2) (g*g, not g**2), and
// param.addcdiv_(exp_avg, sqrt(exp_avg_sq)/sqrt(bc2) + eps, value=-lr/bc1), with the bias
// corrections bc = 1 - beta**step computed in Python floats as PyTorch does (the step count is
// a hyper-parameter; `step` is the count AFTER this step). State inputs are arbitrary floats, so
// a negative exp_avg_sq gives NaN in both PyTorch and LEIR.
#include <cmath>

#include <fmt/format.h>

#include "front/workloads/builder.h"
#include "front/workloads/define.h"

namespace steptp::workloads {
namespace {

std::vector<HyperParam> tensor_params() {
  return {hp("rows", 1, 65536, {1, 3}, {16, 64}, {1024, 1024}), hp("cols", 1, 65536, {1, 6}, {16, 64}, {1024, 1024})};
}

// Adam (decoupled = false) and AdamW (decoupled weight decay 1e-2: param.mul_(1 - lr*wd) first).
Workload adam(bool decoupled) {
  Workload w;
  w.name = decoupled ? "adamw_step" : "adam_step";
  w.family = "optimizer";
  w.params = tensor_params();
  w.params.push_back(hp("step", 1, 1000000, {1, 20}, {1, 1000}, {1, 100000}));
  w.build = [name = w.name, decoupled](const HyperValues& hv) {
    const double lr = 1e-3, b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = 1e-2;
    int64_t r = hv.at("rows"), c = hv.at("cols"), step = hv.at("step");
    double bc1 = 1 - std::pow(b1, static_cast<double>(step));
    double bc2 = 1 - std::pow(b2, static_cast<double>(step));
    ProgramBuilder b(name);
    b.input("p", {r, c});
    b.input("g", {r, c});
    b.input("m", {r, c});
    b.input("v", {r, c});
    b.output("p1", {r, c});
    b.output("m1", {r, c});
    b.output("v1", {r, c});
    std::string p = decoupled ? fmt::format("$p[tx,a]*{}", num(1 - lr * wd)) : "$p[tx,a]";
    b.nest({r, c}, fmt::format("$m1[tx,a]={0}*$m[tx,a]+{1}*$g[tx,a];"
                               "$v1[tx,a]={2}*$v[tx,a]+{3}*$g[tx,a]*$g[tx,a];"
                               "$p1[tx,a]={4}-{5}*($m1[tx,a]/(sqrt($v1[tx,a])/{6}+{7}))",
                               num(b1), num(1 - b1), num(b2), num(1 - b2), p, num(lr / bc1), num(std::sqrt(bc2)),
                               num(eps)));
    return b.finish();
  };
  w.torch_reference = fmt::format(R"(
def reference(t, hp):
    p = torch.nn.Parameter(t["A"].clone())
    p.grad = t["C"].clone()
    opt = torch.optim.{}([p], lr=1e-3, betas=(0.9, 0.999), eps=1e-8{}, foreach=False)
    opt.state[p] = {{"step": torch.tensor(float(hp["step"] - 1)), "exp_avg": t["D"].clone(),
                    "exp_avg_sq": t["E"].clone()}}
    opt.step()
    s = opt.state[p]
    return {{"F": p.detach(), "G": s["exp_avg"], "H": s["exp_avg_sq"]}}
)",
                                  decoupled ? "AdamW" : "Adam", decoupled ? ", weight_decay=1e-2" : "");
  return w;
}

// RMSprop (lr 1e-2, alpha 0.99, eps 1e-8, no momentum, not centered):
// square_avg.mul_(alpha).addcmul_(g, g, value=1-alpha); param.addcdiv_(g, sqrt(square_avg)+eps, value=-lr).
Workload rmsprop() {
  Workload w;
  w.name = "rmsprop_step";
  w.family = "optimizer";
  w.params = tensor_params();
  w.build = [](const HyperValues& hv) {
    const double lr = 1e-2, alpha = 0.99, eps = 1e-8;
    int64_t r = hv.at("rows"), c = hv.at("cols");
    ProgramBuilder b("rmsprop_step");
    b.input("p", {r, c});
    b.input("g", {r, c});
    b.input("v", {r, c});
    b.output("p1", {r, c});
    b.output("v1", {r, c});
    b.nest({r, c}, fmt::format("$v1[tx,a]={0}*$v[tx,a]+{1}*$g[tx,a]*$g[tx,a];"
                               "$p1[tx,a]=$p[tx,a]-{2}*($g[tx,a]/(sqrt($v1[tx,a])+{3}))",
                               num(alpha), num(1 - alpha), num(lr), num(eps)));
    return b.finish();
  };
  w.torch_reference = R"(
def reference(t, hp):
    p = torch.nn.Parameter(t["A"].clone())
    p.grad = t["C"].clone()
    opt = torch.optim.RMSprop([p], lr=1e-2, alpha=0.99, eps=1e-8, foreach=False)
    opt.state[p] = {"step": torch.tensor(0.0), "square_avg": t["D"].clone()}
    opt.step()
    return {"E": p.detach(), "F": opt.state[p]["square_avg"]}
)";
  return w;
}

// Adagrad (lr 1e-2, no lr decay, eps 1e-10): state_sum.addcmul_(g, g, value=1);
// param.addcdiv_(g, sqrt(state_sum)+eps, value=-lr).
Workload adagrad() {
  Workload w;
  w.name = "adagrad_step";
  w.family = "optimizer";
  w.params = tensor_params();
  w.build = [](const HyperValues& hv) {
    int64_t r = hv.at("rows"), c = hv.at("cols");
    ProgramBuilder b("adagrad_step");
    b.input("p", {r, c});
    b.input("g", {r, c});
    b.input("sum", {r, c});
    b.output("p1", {r, c});
    b.output("sum1", {r, c});
    b.nest({r, c}, "$sum1[tx,a]=$sum[tx,a]+$g[tx,a]*$g[tx,a];"
                   "$p1[tx,a]=$p[tx,a]-0.01*($g[tx,a]/(sqrt($sum1[tx,a])+1e-10))");
    return b.finish();
  };
  w.torch_reference = R"(
def reference(t, hp):
    p = torch.nn.Parameter(t["A"].clone())
    p.grad = t["C"].clone()
    opt = torch.optim.Adagrad([p], lr=1e-2, eps=1e-10, foreach=False)
    opt.state[p] = {"step": torch.tensor(0.0), "sum": t["D"].clone()}
    opt.step()
    return {"E": p.detach(), "F": opt.state[p]["sum"]}
)";
  return w;
}

RegisterWorkload reg_adam{adam(false)};
RegisterWorkload reg_adamw{adam(true)};
RegisterWorkload reg_rmsprop{rmsprop()};
RegisterWorkload reg_adagrad{adagrad()};

}  // namespace
}  // namespace steptp::workloads
