// Level 1, element-wise activations on [batch, dim] (KernelBench level 1 problems 19-32, 88),
// each written with the exact PyTorch formula and float64 constants.
#include "front/workloads/builder.h"
#include "front/workloads/define.h"

namespace steptp::workloads {
namespace {

// `expr` uses X for the input element; the output is C[tx,a] = expr.
Workload activation(std::string name, std::string expr, std::string torch_expr) {
  Workload w;
  w.name = name;
  w.family = "activation";
  w.params = {hp("batch", 1, 4096, {1, 4}, {4, 16}, {16, 16}),
              hp("dim", 1, 1 << 20, {2, 32}, {256, 2048}, {16384, 16384})};
  w.build = [name, expr](const HyperValues& hv) {
    int64_t batch = hv.at("batch"), dim = hv.at("dim");
    ProgramBuilder b(name);
    b.input("x", {batch, dim});
    b.output("out", {batch, dim});
    std::string rhs;
    for (char c : expr) rhs += c == 'X' ? std::string("$x[tx,a]") : std::string(1, c);
    b.nest({batch, dim}, "$out[tx,a]=" + rhs);
    return b.finish();
  };
  w.torch_reference = "\ndef reference(t, hp):\n    A = t[\"A\"]\n    return {\"C\": " + torch_expr + "}\n";
  return w;
}

RegisterWorkload reg_relu{activation("relu", "max(0,X)", "torch.relu(A)")};
RegisterWorkload reg_relu6{activation("relu6", "min(max(0,X),6)", "F.relu6(A)")};
RegisterWorkload reg_leaky{activation("leaky_relu", "if_then_else(X<0,0.01*X,X)", "F.leaky_relu(A, negative_slope=0.01)")};
// ELU/SELU: x > 0 ? x : alpha*(exp(x)-1) (PyTorch uses expm1; the difference is rounding only).
RegisterWorkload reg_elu{activation("elu", "if_then_else(X>0,X,1.0*(exp(X)-1))", "F.elu(A, alpha=1.0)")};
// SELU with PyTorch's float64 constants (the public translator printed float32-rounded ones).
RegisterWorkload reg_selu{activation(
    "selu", "1.0507009873554805*(max(0,X)+min(0,1.6732632423543772*(exp(X)-1)))", "torch.selu(A)")};
RegisterWorkload reg_gelu{activation("gelu", "X*0.5*(1+erf(X/sqrt(2)))", "F.gelu(A)")};
RegisterWorkload reg_gelu_tanh{activation(
    "gelu_tanh", "0.5*X*(1+tanh(0.7978845608028654*(X+0.044715*X**3)))", "F.gelu(A, approximate='tanh')")};
// KernelBench "MinGPTNewGelu": the reference is MinGPT's own Python, not F.gelu.
RegisterWorkload reg_new_gelu{activation(
    "min_gpt_new_gelu", "0.5*X*(1.0+tanh(sqrt(2.0/3.141592653589793)*(X+0.044715*X**3.0)))",
    "0.5 * A * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (A + 0.044715 * torch.pow(A, 3.0))))")};
RegisterWorkload reg_sigmoid{activation("sigmoid", "1/(1+exp(-X))", "torch.sigmoid(A)")};
RegisterWorkload reg_tanh{activation("tanh", "tanh(X)", "torch.tanh(A)")};
RegisterWorkload reg_swish{activation("swish", "X/(1+exp(-X))", "A * torch.sigmoid(A)")};
// Mish: PyTorch computes x*tanh(log1p(exp(x))) with no softplus threshold.
RegisterWorkload reg_mish{activation("mish", "X*tanh(log1p(exp(X)))", "F.mish(A)")};
// Softplus (beta 1): PyTorch returns x itself above threshold 20.
RegisterWorkload reg_softplus{activation("softplus", "if_then_else(X>20,X,log1p(exp(X)))", "F.softplus(A)")};
RegisterWorkload reg_softsign{activation("softsign", "X/(1+abs(X))", "F.softsign(A)")};
// Hardsigmoid/hardswish exactly as PyTorch's CPU kernels: min(max(x+3,0),6)/6.
RegisterWorkload reg_hsig{activation("hardsigmoid", "min(max(X+3,0),6)/6", "F.hardsigmoid(A)")};
RegisterWorkload reg_hswish{activation("hardswish", "X*min(max(X+3,0),6)/6", "F.hardswish(A)")};
RegisterWorkload reg_htanh{activation("hardtanh", "min(max(X,-1.0),1.0)", "F.hardtanh(A, min_val=-1.0, max_val=1.0)")};

}  // namespace
}  // namespace steptp::workloads
