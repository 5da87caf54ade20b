// Level 2: fused chains in the KernelBench level-2 spirit (GEMM/Matmul/BMM/Conv followed by
// activations, norms, pooling, reductions, residual adds), attention blocks and simple pairs,
// each written as an operator chain (level2_chain.h) so that its LEIR and its PyTorch reference
// come from the same description. References use hp["..."] for every hyper-value, so one text
// serves every draw (the tests check this).
#include <fmt/format.h>

#include <functional>
#include <map>
#include <stdexcept>

#include "base/error.h"
#include "front/workloads/level2_chain.h"
#include "front/workloads/workload.h"

namespace steptp::workloads {
namespace {

using namespace chain;  // NOLINT: the chain vocabulary is this file's language
using Body = std::function<Value(Chain&, const HyperValues&)>;

std::map<std::string, Body, std::less<>>& bodies() {
  static std::map<std::string, Body, std::less<>> m;
  return m;
}

HyperParam par(std::string name, int64_t lo, int64_t hi, std::pair<int64_t, int64_t> tiny,
               std::pair<int64_t, int64_t> small, std::pair<int64_t, int64_t> dflt) {
  return HyperParam{std::move(name), lo, hi, {tiny, small, dflt}};
}

// ---- hyper-parameter vocabulary (tiny runs in the interpreter in milliseconds) ----
HyperParam batch() { return par("batch", 1, 1024, {2, 2}, {4, 16}, {64, 128}); }
HyperParam in_features() { return par("in_features", 1, 65536, {4, 12}, {32, 128}, {512, 1024}); }
HyperParam out_features() { return par("out_features", 1, 65536, {4, 12}, {32, 128}, {256, 512}); }
HyperParam in_channels() { return par("in_channels", 1, 512, {2, 3}, {3, 8}, {3, 32}); }
HyperParam out_channels() { return par("out_channels", 1, 1024, {2, 6}, {8, 16}, {16, 64}); }
HyperParam height() { return par("height", 1, 4096, {6, 9}, {12, 24}, {32, 64}); }
HyperParam width() { return par("width", 1, 4096, {6, 9}, {12, 24}, {32, 64}); }
HyperParam depth() { return par("depth", 1, 512, {4, 5}, {6, 10}, {8, 16}); }
HyperParam length() { return par("length", 1, 65536, {6, 12}, {32, 64}, {128, 512}); }
HyperParam kernel() { return par("kernel", 1, 11, {2, 3}, {3, 3}, {3, 5}); }
HyperParam padding() { return par("padding", 0, 5, {1, 2}, {1, 2}, {1, 2}); }
HyperParam stride() { return par("stride", 1, 4, {1, 2}, {2, 2}, {2, 2}); }
HyperParam pool_kernel() { return par("pool_kernel", 1, 8, {2, 2}, {2, 3}, {2, 2}); }
HyperParam groups() { return par("groups", 1, 64, {1, 3}, {2, 8}, {4, 16}); }
HyperParam seq_len() { return par("seq_len", 1, 4096, {3, 6}, {8, 16}, {128, 512}); }
HyperParam embed() { return par("embed", 1, 8192, {4, 8}, {32, 64}, {512, 768}); }
HyperParam heads() { return par("heads", 1, 128, {1, 4}, {2, 8}, {8, 12}); }
HyperParam kv_heads() { return par("kv_heads", 1, 128, {1, 2}, {2, 4}, {2, 4}); }
HyperParam rows() { return par("rows", 1, 65536, {3, 6}, {16, 64}, {256, 1024}); }
HyperParam inner() { return par("inner", 1, 65536, {3, 6}, {16, 64}, {256, 1024}); }
HyperParam cols() { return par("cols", 1, 65536, {3, 6}, {16, 64}, {256, 1024}); }

using HV = const HyperValues&;
int64_t g(HV h, const char* n) { return h.at(n); }

Constraint divides(const char* d, const char* n) {
  return {fmt::format("{} % {} == 0", n, d), [=](HV h) { return g(h, n) % g(h, d) == 0; }};
}
// The spatial dims fit the convolution window (plus `extra` for a following pooling window).
Constraint conv_fits(std::vector<const char*> dims, const char* extra = nullptr, bool padded = false) {
  std::string text;
  for (const char* d : dims) text += fmt::format("{}{}{} >= kernel{}", text.empty() ? "" : ", ", d,
                                                 padded ? " + 2*padding" : "",
                                                 extra ? fmt::format(" + {} - 1", extra) : "");
  return {text, [=](HV h) {
            for (const char* d : dims) {
              int64_t in = g(h, d) + (padded ? 2 * g(h, "padding") : 0);
              if (in < g(h, "kernel") + (extra ? g(h, extra) - 1 : 0)) return false;
            }
            return true;
          }};
}
Constraint kernel_ge_stride() {
  return {"kernel >= stride", [](HV h) { return g(h, "kernel") >= g(h, "stride"); }};
}

// ---- common prologues ----
Value features(Chain& c, HV h) { return c.input({g(h, "batch"), g(h, "in_features")}); }
Value image(Chain& c, HV h) {
  return c.input({g(h, "batch"), g(h, "in_channels"), g(h, "height"), g(h, "width")});
}
Value volume(Chain& c, HV h) {
  return c.input({g(h, "batch"), g(h, "in_channels"), g(h, "depth"), g(h, "height"), g(h, "width")});
}
Value sequence(Chain& c, HV h) { return c.input({g(h, "batch"), g(h, "seq_len"), g(h, "embed")}); }
Value signal(Chain& c, HV h) { return c.input({g(h, "batch"), g(h, "in_channels"), g(h, "length")}); }

Value linear(Chain& c, const Value& x, HV h, bool bias = true) {
  return gemm(c, x, hp(h, "out_features"), bias);
}
// The public translator's level-2 Conv2d/Conv3d records carry no bias (bias=False modules).
Value conv2(Chain& c, const Value& x, HV h) {
  return conv(c, x, hp(h, "out_channels"), {hp(h, "kernel"), hp(h, "kernel")}, 1, 0, 1, false);
}
Value conv3(Chain& c, const Value& x, HV h) {
  return conv(c, x, hp(h, "out_channels"), {hp(h, "kernel"), hp(h, "kernel"), hp(h, "kernel")}, 1, 0, 1,
              false);
}
Value pool(Chain& c, const Value& x, HV h) { return max_pool(c, x, hp(h, "pool_kernel"), hp(h, "pool_kernel")); }

std::vector<HyperParam> gemm_params() { return {batch(), in_features(), out_features()}; }
std::vector<HyperParam> conv2_params() {
  return {batch(), in_channels(), out_channels(), height(), width(), kernel()};
}
std::vector<HyperParam> conv3_params() {
  return {batch(), in_channels(), out_channels(), depth(), height(), width(), kernel()};
}
std::vector<HyperParam> attn_params() { return {batch(), seq_len(), embed(), heads()}; }
template <typename... More>
std::vector<HyperParam> with(std::vector<HyperParam> base, More... more) {
  (base.push_back(more), ...);
  return base;
}

struct Def {
  std::string name, family;
  std::vector<HyperParam> params;
  std::vector<Constraint> constraints;
  Body body;
};

std::vector<Def> definitions() {
  std::vector<Def> d;
  auto conv2_fit = [] { return conv_fits({"height", "width"}); };
  auto conv3_fit = [] { return conv_fits({"depth", "height", "width"}); };

  // ---------------- GEMM / Matmul chains ----------------
  d.push_back({"Gemm_Multiply_LeakyReLU", "gemm", gemm_params(), {}, [](Chain& c, HV h) {
    Value x = linear(c, features(c, h), h);
    x = scalar_constant(c, x, ScalarOp::Mul, 2.0);
    return leaky_relu(c, x, 0.1);
  }});
  d.push_back({"Gemm_Swish_Divide_Clamp_Tanh_Clamp", "gemm", gemm_params(), {}, [](Chain& c, HV h) {
    Value x = swish(c, linear(c, features(c, h), h));
    x = divide_literal(c, x, 2.0);
    x = clamp(c, x, -1.0, 1.0);
    return clamp(c, tanh(c, x), -1.0, 1.0);
  }});
  d.push_back({"Gemm_Subtract_GlobalAvgPool_LogSumExp_GELU_ResidualAdd", "gemm", gemm_params(), {},
               [](Chain& c, HV h) {
    Value in = features(c, h);
    Value x = channel_param(c, linear(c, in, h), ScalarOp::Sub);
    x = reduce(c, x, 1, Reduce::Mean);
    x = reduce(c, x, 1, Reduce::LogSumExp);
    return binary(c, gelu(c, x), in, ScalarOp::Add);
  }});
  d.push_back({"Matmul_Scale_ResidualAdd_Clamp_LogSumExp_Mish", "gemm", gemm_params(), {},
               [](Chain& c, HV h) {
    Value x = scalar_constant(c, linear(c, features(c, h), h), ScalarOp::Mul, 2.0);
    x = binary(c, x, x, ScalarOp::Add);
    x = clamp(c, x, -10.0, 10.0);
    Value l = reduce(c, x, 1, Reduce::LogSumExp);
    Value m = mish(c, l);
    return binary(c, l, m, ScalarOp::Mul);  // x * mish(x), as in KernelBench
  }});
  d.push_back({"Matmul_Mean_Softmax", "gemm", gemm_params(), {}, [](Chain& c, HV h) {
    return softmax(c, reduce(c, linear(c, features(c, h), h), 1, Reduce::Mean), 1);
  }});
  d.push_back({"Matmul_Min_Subtract", "gemm", gemm_params(), {}, [](Chain& c, HV h) {
    Value x = scalar_constant(c, linear(c, features(c, h), h), ScalarOp::Min, 0.5);
    return scalar_constant(c, x, ScalarOp::Sub, 0.5);
  }});
  d.push_back({"Matmul_Add_Swish_Tanh_GELU_Hardtanh", "gemm", gemm_params(), {}, [](Chain& c, HV h) {
    Value x = channel_param(c, linear(c, features(c, h), h), ScalarOp::Add);
    x = tanh(c, swish(c, x));
    return hardtanh(c, gelu(c, x), -1.0, 1.0);
  }});
  d.push_back({"Gemm_ReLU_Divide", "gemm", gemm_params(), {}, [](Chain& c, HV h) {
    return divide_literal(c, relu(c, linear(c, features(c, h), h)), 2.0);
  }});
  d.push_back({"Gemm_Sigmoid_Sum_LogSumExp", "gemm", gemm_params(), {}, [](Chain& c, HV h) {
    Value x = reduce(c, sigmoid(c, linear(c, features(c, h), h)), 1, Reduce::Sum);
    return reduce(c, x, 1, Reduce::LogSumExp);
  }});
  d.push_back({"Gemm_GroupNorm_Swish_Multiply_Swish", "gemm", with(gemm_params(), groups()),
               {divides("groups", "out_features")}, [](Chain& c, HV h) {
    Value x = group_norm(c, linear(c, features(c, h), h), hp(h, "groups"));
    x = channel_param(c, swish(c, x), ScalarOp::Mul);
    return swish(c, x);
  }});
  d.push_back({"Gemm_BatchNorm_GELU_GroupNorm_Mean_ReLU", "gemm", with(gemm_params(), groups()),
               {divides("groups", "out_features")}, [](Chain& c, HV h) {
    Value x = gelu(c, batch_norm(c, linear(c, features(c, h), h)));
    x = reduce(c, group_norm(c, x, hp(h, "groups")), 1, Reduce::Mean);
    return relu(c, x);
  }});
  d.push_back({"Gemm_LayerNorm_GELU_Scaling", "gemm", gemm_params(), {}, [](Chain& c, HV h) {
    Value x = gelu(c, layer_norm(c, linear(c, features(c, h), h)));
    return scale_literal(c, x, 0.5);
  }});
  d.push_back({"Gemm_Scaling_Hardtanh_GELU", "gemm", gemm_params(), {}, [](Chain& c, HV h) {
    Value x = scale_literal(c, linear(c, features(c, h), h), 0.5);
    return gelu(c, hardtanh(c, x, -2.0, 2.0));
  }});
  d.push_back({"Gemm_Max_GELU", "gemm", gemm_params(), {}, [](Chain& c, HV h) {
    return gelu(c, reduce(c, linear(c, features(c, h), h), 1, Reduce::Max));
  }});
  d.push_back({"Gemm_Sigmoid_Scaling_ResidualAdd", "gemm", gemm_params(), {}, [](Chain& c, HV h) {
    Value y = linear(c, features(c, h), h);
    Value x = scale_literal(c, sigmoid(c, y), 2.0);
    return binary(c, x, y, ScalarOp::Add);
  }});
  d.push_back({"Gemm_BiasAdd_Hardtanh_Mish_GroupNorm", "gemm", with(gemm_params(), groups()),
               {divides("groups", "out_features")}, [](Chain& c, HV h) {
    Value x = channel_param(c, linear(c, features(c, h), h), ScalarOp::Add);
    x = mish(c, hardtanh(c, x, -1.0, 1.0));
    return group_norm(c, x, hp(h, "groups"));
  }});
  d.push_back({"Gemm_Hardsigmoid_Softmax", "gemm", gemm_params(), {}, [](Chain& c, HV h) {
    return softmax(c, hardsigmoid(c, linear(c, features(c, h), h)), 1);
  }});
  d.push_back({"Gemm_Exp_Sum", "gemm", gemm_params(), {}, [](Chain& c, HV h) {
    return reduce(c, exp(c, linear(c, features(c, h), h)), 1, Reduce::Sum);
  }});
  d.push_back({"Gemm_ReLU_Gemm", "gemm", with(gemm_params(), par("hidden", 1, 65536, {4, 8}, {32, 64}, {256, 512})),
               {}, [](Chain& c, HV h) {
    Value x = relu(c, gemm(c, features(c, h), hp(h, "hidden"), true));
    return linear(c, x, h);
  }});
  d.push_back({"Gemm_LogSoftmax_Min", "gemm", gemm_params(), {}, [](Chain& c, HV h) {
    return reduce(c, softmax(c, linear(c, features(c, h), h), 1, true), 1, Reduce::Min);
  }});

  // ---------------- BMM / Matmul pairs ----------------
  auto bmm_in = [](Chain& c, HV h) {
    Value a = c.input({g(h, "batch"), g(h, "rows"), g(h, "inner")});
    Value b = c.input({g(h, "batch"), g(h, "inner"), g(h, "cols")});
    return bmm(c, a, b);
  };
  std::vector<HyperParam> bmm_params{batch(), rows(), inner(), cols()};
  d.push_back({"BMM_Scale_Softmax", "bmm", bmm_params, {}, [=](Chain& c, HV h) {
    return softmax(c, scale_literal(c, bmm_in(c, h), 0.5), 2);
  }});
  d.push_back({"BMM_ReLU_Max", "bmm", bmm_params, {}, [=](Chain& c, HV h) {
    return reduce(c, relu(c, bmm_in(c, h)), 1, Reduce::Max);
  }});
  d.push_back({"BMM_LayerNorm_GELU", "bmm", bmm_params, {}, [=](Chain& c, HV h) {
    return gelu(c, layer_norm(c, bmm_in(c, h)));
  }});
  d.push_back({"BMM_InstanceNorm_Sum", "bmm", bmm_params, {}, [=](Chain& c, HV h) {
    return reduce(c, instance_norm(c, bmm_in(c, h)), 2, Reduce::Sum);
  }});
  d.push_back({"Matmul3D_Tanh_Sum", "matmul", bmm_params, {}, [](Chain& c, HV h) {
    Value a = c.input({g(h, "batch"), g(h, "rows"), g(h, "inner")});
    Value w = c.input({g(h, "inner"), g(h, "cols")});
    return reduce(c, tanh(c, matmul(c, a, w)), 2, Reduce::Sum);
  }});
  d.push_back({"MatMul4D_MatMul4D", "matmul", with(bmm_params, par("heads", 1, 64, {2, 3}, {4, 8}, {8, 16})), {},
               [](Chain& c, HV h) {
    std::vector<int64_t> s{g(h, "batch"), g(h, "heads"), g(h, "rows"), g(h, "inner")};
    Value a = c.input(s);
    Value w = c.input({g(h, "inner"), g(h, "cols")});
    Value b = c.input(s);
    Value x = matmul(c, a, w);
    Value y = matmul(c, b, w);  // sequenced: argument evaluation order is unspecified
    return binary(c, x, y, ScalarOp::Add);
  }});
  d.push_back({"exp_exp", "pair", bmm_params, {}, [](Chain& c, HV h) {
    Value a = c.input({g(h, "batch"), g(h, "rows"), g(h, "inner")});
    Value b = c.input({g(h, "batch"), g(h, "inner"), g(h, "cols")});
    Value ea = exp(c, a), eb = exp(c, b);
    return bmm(c, ea, eb);
  }});
  d.push_back({"add_add", "pair", {batch(), rows(), cols()}, {}, [](Chain& c, HV h) {
    std::vector<int64_t> s{g(h, "batch"), g(h, "rows"), g(h, "cols")};
    Value a = c.input(s), b = c.input(s), e = c.input(s);
    return binary(c, binary(c, a, b, ScalarOp::Add), e, ScalarOp::Add);
  }});
  d.push_back({"mul_add", "pair", {batch(), rows(), cols()}, {}, [](Chain& c, HV h) {
    std::vector<int64_t> s{g(h, "batch"), g(h, "rows"), g(h, "cols")};
    Value a = c.input(s), b = c.input(s), e = c.input(s);
    return binary(c, binary(c, a, b, ScalarOp::Mul), e, ScalarOp::Add);
  }});
  d.push_back({"sigmoid_matmul", "pair", bmm_params, {}, [](Chain& c, HV h) {
    Value a = c.input({g(h, "batch"), g(h, "rows"), g(h, "inner")});
    Value w = c.input({g(h, "inner"), g(h, "cols")});
    return matmul(c, sigmoid(c, a), w);
  }});

  // ---------------- Conv2d chains ----------------
  d.push_back({"Conv2d_Min_Add_Multiply", "conv", conv2_params(), {conv2_fit()}, [](Chain& c, HV h) {
    Value x = scalar_constant(c, conv2(c, image(c, h), h), ScalarOp::Min, 0.5);
    x = channel_param(c, x, ScalarOp::Add);
    return scalar_constant(c, x, ScalarOp::Mul, 2.0);
  }});
  d.push_back({"Conv2d_Multiply_LeakyReLU_GELU", "conv", conv2_params(), {conv2_fit()}, [](Chain& c, HV h) {
    Value x = channel_param(c, conv2(c, image(c, h), h), ScalarOp::Mul);
    return gelu(c, leaky_relu(c, x, 0.01));
  }});
  d.push_back({"Conv2d_Divide_LeakyReLU", "conv", conv2_params(), {conv2_fit()}, [](Chain& c, HV h) {
    Value x = scalar_constant(c, conv2(c, image(c, h), h), ScalarOp::Div, 2.0);
    return leaky_relu(c, x, 0.01);
  }});
  d.push_back({"Conv2d_GroupNorm_Scale_MaxPool_Clamp", "conv", with(conv2_params(), groups(), pool_kernel()),
               {divides("groups", "out_channels"), conv_fits({"height", "width"}, "pool_kernel")},
               [](Chain& c, HV h) {
    Value x = group_norm(c, conv2(c, image(c, h), h), hp(h, "groups"));
    x = pool(c, channel_param(c, x, ScalarOp::Mul), h);
    return clamp(c, x, 0.0, 1.0);
  }});
  d.push_back({"Conv2d_Subtract_Subtract_Mish", "conv", conv2_params(), {conv2_fit()}, [](Chain& c, HV h) {
    Value x = scalar_constant(c, conv2(c, image(c, h), h), ScalarOp::Sub, 0.5);
    x = scalar_constant(c, x, ScalarOp::Sub, 0.2);
    return mish(c, x);
  }});
  d.push_back({"Conv2d_GroupNorm_Tanh_HardSwish_ResidualAdd_LogSumExp", "conv", with(conv2_params(), groups()),
               {divides("groups", "out_channels"), conv2_fit()}, [](Chain& c, HV h) {
    Value y = conv2(c, image(c, h), h);
    Value x = hardswish(c, tanh(c, group_norm(c, y, hp(h, "groups"))));
    return reduce(c, binary(c, y, x, ScalarOp::Add), 1, Reduce::LogSumExp);
  }});
  d.push_back({"Conv2d_ReLU_BiasAdd", "conv", conv2_params(), {conv2_fit()}, [](Chain& c, HV h) {
    return channel_param(c, relu(c, conv2(c, image(c, h), h)), ScalarOp::Add);
  }});
  d.push_back({"Conv2d_InstanceNorm_Divide", "conv", conv2_params(), {conv2_fit()}, [](Chain& c, HV h) {
    return divide_literal(c, instance_norm(c, conv2(c, image(c, h), h)), 2.0);
  }});
  d.push_back({"Conv2d_BatchNorm_Scaling", "conv", conv2_params(), {conv2_fit()}, [](Chain& c, HV h) {
    return scale_literal(c, batch_norm(c, conv2(c, image(c, h), h)), 2.0);
  }});
  d.push_back({"Conv2d_Mish_Mish", "conv", conv2_params(), {conv2_fit()}, [](Chain& c, HV h) {
    return mish(c, mish(c, conv2(c, image(c, h), h)));
  }});
  d.push_back({"Conv2d_Tanh_Scaling_BiasAdd_Max", "conv", with(conv2_params(), pool_kernel()),
               {conv_fits({"height", "width"}, "pool_kernel")}, [](Chain& c, HV h) {
    Value x = scale_literal(c, tanh(c, conv2(c, image(c, h), h)), 2.0);
    return pool(c, channel_param(c, x, ScalarOp::Add), h);
  }});
  d.push_back({"Conv2d_AvgPool_Sigmoid_Sum", "conv", with(conv2_params(), pool_kernel()),
               {conv_fits({"height", "width"}, "pool_kernel")}, [](Chain& c, HV h) {
    Value x = avg_pool(c, conv2(c, image(c, h), h), hp(h, "pool_kernel"), hp(h, "pool_kernel"));
    return reduce(c, sigmoid(c, x), 1, Reduce::Sum);
  }});
  d.push_back({"Conv2d_HardSwish_ReLU", "conv", conv2_params(), {conv2_fit()}, [](Chain& c, HV h) {
    return relu(c, hardswish(c, conv2(c, image(c, h), h)));
  }});
  d.push_back({"Conv2d_Scaling_Min", "conv", conv2_params(), {conv2_fit()}, [](Chain& c, HV h) {
    return reduce(c, scale_literal(c, conv2(c, image(c, h), h), 2.0), 1, Reduce::Min);
  }});
  d.push_back({"Conv2d_GELU_GlobalAvgPool", "conv", conv2_params(), {conv2_fit()}, [](Chain& c, HV h) {
    return global_avg_pool(c, gelu(c, conv2(c, image(c, h), h)));
  }});
  d.push_back({"Conv2d_Softmax_Sigmoid", "conv", conv2_params(), {conv2_fit()}, [](Chain& c, HV h) {
    return sigmoid(c, softmax(c, conv2(c, image(c, h), h), 1));
  }});
  d.push_back({"Conv2d_Stride_ReLU_Hardtanh", "conv", with(conv2_params(), stride()), {conv2_fit()},
               [](Chain& c, HV h) {
    Value x = conv(c, image(c, h), hp(h, "out_channels"), {hp(h, "kernel"), hp(h, "kernel")}, hp(h, "stride"),
                   0, 1, true);
    return hardtanh(c, relu(c, x), -1.0, 1.0);
  }});
  d.push_back({"Conv2d_Dilation_GELU", "conv", with(conv2_params(), par("dilation", 1, 4, {1, 2}, {2, 2}, {2, 3})),
               {{"height, width >= dilation*(kernel-1)+1", [](HV h) {
                  int64_t span = g(h, "dilation") * (g(h, "kernel") - 1) + 1;
                  return g(h, "height") >= span && g(h, "width") >= span;
                }}},
               [](Chain& c, HV h) {
    Value x = conv(c, image(c, h), hp(h, "out_channels"), {hp(h, "kernel"), hp(h, "kernel")}, 1, 0,
                   hp(h, "dilation"), true);
    return gelu(c, x);
  }});
  d.push_back({"Conv2d_Padding_GroupNorm_HardSwish", "conv", with(conv2_params(), padding(), groups()),
               {divides("groups", "out_channels"), conv_fits({"height", "width"}, nullptr, true)},
               [](Chain& c, HV h) {
    Value x = conv(c, image(c, h), hp(h, "out_channels"), {hp(h, "kernel"), hp(h, "kernel")}, 1,
                   hp(h, "padding"), 1, true);
    return hardswish(c, group_norm(c, x, hp(h, "groups")));
  }});
  // One Conv2d module (asymmetric kernel, zero padding, no bias) applied to two inputs, summed.
  d.push_back({"conv2d_conv2d_padding", "pair",
               {batch(), in_channels(), out_channels(), height(), width(),
                par("kernel_h", 1, 11, {1, 3}, {3, 5}, {3, 5}), par("kernel_w", 1, 11, {1, 3}, {3, 5}, {3, 5}),
                padding()},
               {{"height + 2*padding >= kernel_h, width + 2*padding >= kernel_w", [](HV h) {
                  return g(h, "height") + 2 * g(h, "padding") >= g(h, "kernel_h") &&
                         g(h, "width") + 2 * g(h, "padding") >= g(h, "kernel_w");
                }}},
               [](Chain& c, HV h) {
    Value a = image(c, h), b = image(c, h);
    std::vector<Hp> k{hp(h, "kernel_h"), hp(h, "kernel_w")};
    Value w = conv_weight(c, g(h, "out_channels"), g(h, "in_channels"), k);
    Value x = conv(c, a, hp(h, "out_channels"), k, 1, hp(h, "padding"), 1, false, &w);
    Value y = conv(c, b, hp(h, "out_channels"), k, 1, hp(h, "padding"), 1, false, &w);
    return binary(c, x, y, ScalarOp::Add);
  }});
  d.push_back({"conv1d_conv1d", "pair", {batch(), in_channels(), out_channels(), length(), kernel()},
               {conv_fits({"length"})}, [](Chain& c, HV h) {
    Value a = signal(c, h), b = signal(c, h);
    std::vector<Hp> k{hp(h, "kernel")};
    Value w = conv_weight(c, g(h, "out_channels"), g(h, "in_channels"), k);
    Value x = conv(c, a, hp(h, "out_channels"), k, 1, 0, 1, false, &w);
    Value y = conv(c, b, hp(h, "out_channels"), k, 1, 0, 1, false, &w);
    return binary(c, x, y, ScalarOp::Add);
  }});
  d.push_back({"conv2d_relu_conv2d", "pair", conv2_params(),
               {{"height, width >= 2*kernel - 1", [](HV h) {
                  return g(h, "height") >= 2 * g(h, "kernel") - 1 && g(h, "width") >= 2 * g(h, "kernel") - 1;
                }}},
               [](Chain& c, HV h) {
    Value x = relu(c, conv2(c, image(c, h), h));
    return conv(c, x, hp(h, "out_channels"), {hp(h, "kernel"), hp(h, "kernel")}, 1, 0, 1, true);
  }});

  // ---------------- Conv1d / Conv3d / transposed ----------------
  std::vector<HyperParam> conv1_params{batch(), in_channels(), out_channels(), length(), kernel()};
  d.push_back({"Conv1d_GELU_MaxPool", "conv", with(conv1_params, pool_kernel()),
               {conv_fits({"length"}, "pool_kernel")}, [](Chain& c, HV h) {
    Value x = conv(c, signal(c, h), hp(h, "out_channels"), {hp(h, "kernel")}, 1, 0, 1, true);
    return pool(c, gelu(c, x), h);
  }});
  d.push_back({"Conv1d_BatchNorm_Tanh", "conv", conv1_params, {conv_fits({"length"})}, [](Chain& c, HV h) {
    Value x = conv(c, signal(c, h), hp(h, "out_channels"), {hp(h, "kernel")}, 1, 0, 1, true);
    return tanh(c, batch_norm(c, x));
  }});
  d.push_back({"Conv3d_Mish_Tanh", "conv", conv3_params(), {conv3_fit()}, [](Chain& c, HV h) {
    return tanh(c, mish(c, conv3(c, volume(c, h), h)));
  }});
  d.push_back({"Conv3d_Multiply_InstanceNorm_Clamp_Multiply_Max", "conv", conv3_params(), {conv3_fit()},
               [](Chain& c, HV h) {
    Value x = instance_norm(c, channel_param(c, conv3(c, volume(c, h), h), ScalarOp::Mul));
    x = channel_param(c, clamp(c, x, -1.0, 1.0), ScalarOp::Mul);
    return reduce(c, x, 1, Reduce::Max);
  }});
  d.push_back({"Conv3d_GroupNorm_Mean", "conv", with(conv3_params(), groups()),
               {divides("groups", "out_channels"), conv3_fit()}, [](Chain& c, HV h) {
    return reduce(c, group_norm(c, conv3(c, volume(c, h), h), hp(h, "groups")), 1, Reduce::Mean);
  }});
  d.push_back({"Conv3d_ReLU_LeakyReLU_GELU_Sigmoid_BiasAdd", "conv", conv3_params(), {conv3_fit()},
               [](Chain& c, HV h) {
    Value x = leaky_relu(c, relu(c, conv3(c, volume(c, h), h)), 0.01);
    return channel_param(c, sigmoid(c, gelu(c, x)), ScalarOp::Add);
  }});
  d.push_back({"Conv3d_MaxPool_LogSumExp_ReLU", "conv", with(conv3_params(), pool_kernel()),
               {conv_fits({"depth", "height", "width"}, "pool_kernel")}, [](Chain& c, HV h) {
    Value x = pool(c, conv3(c, volume(c, h), h), h);
    return relu(c, reduce(c, x, 1, Reduce::LogSumExp));
  }});
  d.push_back({"Conv3d_Softmax_MaxPool", "conv", with(conv3_params(), pool_kernel()),
               {conv_fits({"depth", "height", "width"}, "pool_kernel")}, [](Chain& c, HV h) {
    return pool(c, softmax(c, conv3(c, volume(c, h), h), 1), h);
  }});
  d.push_back({"Conv3d_AvgPool_Clamp", "conv", with(conv3_params(), pool_kernel()),
               {conv_fits({"depth", "height", "width"}, "pool_kernel")}, [](Chain& c, HV h) {
    Value x = avg_pool(c, conv3(c, volume(c, h), h), hp(h, "pool_kernel"), hp(h, "pool_kernel"));
    return clamp(c, x, -0.5, 0.5);
  }});
  auto convt2 = [](Chain& c, HV h) {
    return conv_transpose(c, image(c, h), hp(h, "out_channels"), {hp(h, "kernel"), hp(h, "kernel")},
                          hp(h, "stride"), true);
  };
  auto convt3 = [](Chain& c, HV h) {
    return conv_transpose(c, volume(c, h), hp(h, "out_channels"),
                          {hp(h, "kernel"), hp(h, "kernel"), hp(h, "kernel")}, hp(h, "stride"), true);
  };
  auto small_volume = [](std::vector<HyperParam> p) {
    for (auto& q : p)
      if (q.name == "depth" || q.name == "height" || q.name == "width") q.by_size[0] = {2, 3};
    return p;
  };
  d.push_back({"ConvTranspose2d_BiasAdd_Clamp_Scaling_Clamp_Divide", "conv", with(conv2_params(), stride()),
               {kernel_ge_stride()}, [=](Chain& c, HV h) {
    Value x = clamp(c, channel_param(c, convt2(c, h), ScalarOp::Add), 0.0, 1.0);
    x = clamp(c, scale_literal(c, x, 2.0), 0.0, 1.0);
    return divide_literal(c, x, 2.0);
  }});
  d.push_back({"ConvTranspose2d_GELU_GroupNorm", "conv", with(conv2_params(), stride(), groups()),
               {kernel_ge_stride(), divides("groups", "out_channels")}, [=](Chain& c, HV h) {
    return group_norm(c, gelu(c, convt2(c, h)), hp(h, "groups"));
  }});
  d.push_back({"ConvTranspose2d_MaxPool_Hardtanh_GlobalAvgPool_Tanh", "conv",
               with(conv2_params(), stride(), pool_kernel()), {kernel_ge_stride()}, [=](Chain& c, HV h) {
    Value x = hardtanh(c, pool(c, convt2(c, h), h), -1.0, 1.0);
    return tanh(c, global_avg_pool(c, x));
  }});
  d.push_back({"ConvTranspose3d_Swish_GroupNorm_HardSwish", "conv",
               small_volume(with(conv3_params(), stride(), groups())),
               {kernel_ge_stride(), divides("groups", "out_channels")}, [=](Chain& c, HV h) {
    return hardswish(c, group_norm(c, swish(c, convt3(c, h)), hp(h, "groups")));
  }});
  d.push_back({"ConvTranspose3d_Softmax_Sigmoid", "conv", small_volume(with(conv3_params(), stride())),
               {kernel_ge_stride()}, [=](Chain& c, HV h) {
    return sigmoid(c, softmax(c, convt3(c, h), 1));
  }});

  // ---------------- Attention blocks ----------------
  Constraint heads_divide = divides("heads", "embed");
  Constraint kv_divide = divides("kv_heads", "heads");
  auto gqa_params = [] { return with(attn_params(), kv_heads()); };
  auto attn = [](Attention kind, bool causal) {
    return [=](Chain& c, HV h) {
      Hp kv = kind == Attention::GQA ? hp(h, "kv_heads") : Hp(1);
      return attention(c, sequence(c, h), kind, hp(h, "heads"), kv, causal);
    };
  };
  auto plain = attn(Attention::MHA, false);
  auto mingpt = attn(Attention::MHA, true);
  auto mqa = attn(Attention::MQA, true);
  auto gqa = attn(Attention::GQA, true);
  std::vector<HyperParam> head_params = with(attn_params(), out_features());
  d.push_back({"MHA", "attention", attn_params(), {heads_divide}, plain});
  d.push_back({"MinGPT_CausalAttention", "attention", attn_params(), {heads_divide}, mingpt});
  d.push_back({"MQA", "attention", attn_params(), {heads_divide}, mqa});
  d.push_back({"GQA", "attention", gqa_params(), {heads_divide, kv_divide}, gqa});
  d.push_back({"MHA_max", "attention", attn_params(), {heads_divide}, [=](Chain& c, HV h) {
    return reduce(c, mingpt(c, h), 1, Reduce::Max);
  }});
  d.push_back({"MQA_sum", "attention", attn_params(), {heads_divide}, [=](Chain& c, HV h) {
    return reduce(c, mqa(c, h), 1, Reduce::Sum);
  }});
  d.push_back({"GQA_mean", "attention", gqa_params(), {heads_divide, kv_divide}, [=](Chain& c, HV h) {
    return reduce(c, gqa(c, h), 1, Reduce::Mean);
  }});
  d.push_back({"MHA_Gemm_GeLU", "attention", head_params, {heads_divide}, [=](Chain& c, HV h) {
    return gelu(c, linear(c, mingpt(c, h), h, false));
  }});
  d.push_back({"MQA_Gemm_GeLU", "attention", head_params, {heads_divide}, [=](Chain& c, HV h) {
    return gelu(c, linear(c, mqa(c, h), h, false));
  }});
  d.push_back({"GQA_Gemm_Tanh_sum", "attention", with(gqa_params(), out_features()), {heads_divide, kv_divide},
               [=](Chain& c, HV h) {
    return reduce(c, tanh(c, linear(c, gqa(c, h), h, false)), 1, Reduce::Sum);
  }});
  d.push_back({"MinGPT_Gemm_ReLU_mean", "attention", head_params, {heads_divide}, [=](Chain& c, HV h) {
    return reduce(c, relu(c, linear(c, mingpt(c, h), h, false)), 1, Reduce::Mean);
  }});
  d.push_back({"MHA_Gemm_Sigmoid_max", "attention", head_params, {heads_divide}, [=](Chain& c, HV h) {
    return reduce(c, sigmoid(c, linear(c, plain(c, h), h, false)), 1, Reduce::Max);
  }});
  d.push_back({"MQA_Gemm_Swish_sum", "attention", head_params, {heads_divide}, [=](Chain& c, HV h) {
    return reduce(c, swish(c, linear(c, mqa(c, h), h, false)), 1, Reduce::Sum);
  }});
  d.push_back({"GQA_Gemm_GeLU_max", "attention", with(gqa_params(), out_features()), {heads_divide, kv_divide},
               [=](Chain& c, HV h) {
    return reduce(c, gelu(c, linear(c, gqa(c, h), h, false)), 1, Reduce::Max);
  }});
  d.push_back({"MinGPT_LayerNorm_Attention_ResidualAdd", "attention", attn_params(), {heads_divide},
               [=](Chain& c, HV h) {
    Value x = sequence(c, h);
    Value a = attention(c, layer_norm(c, x), Attention::MHA, hp(h, "heads"), Hp(1), true);
    return binary(c, x, a, ScalarOp::Add);
  }});
  return d;
}

Workload make_workload(const Def& def) {
  Workload w;
  w.name = def.name;
  w.level = 2;
  w.family = def.family;
  w.params = def.params;
  w.constraints = def.constraints;
  Body body = def.body;
  std::string name = def.name;
  w.build = [body, name](const HyperValues& hv) {
    Chain c;
    Value out = body(c, hv);
    return c.finish(name, out);
  };
  return w;
}

struct RegisterLevel2 {
  RegisterLevel2() {
    for (const Def& def : definitions()) {
      Workload w = make_workload(def);
      // The reference text does not depend on the draw (every hyper-value is spelled hp[...]);
      // build it once from a tiny draw.
      // An exception here would abort every program linking the suite at start-up: record it in
      // the reference instead (the level-2 tests then fail loudly for this workload only).
      try {
        HyperValues hv = sample_hyper(w, 0, SizeClass::Tiny);
        Chain c;
        Value out = def.body(c, hv);
        w.torch_reference = c.python(out);
      } catch (const std::exception& e) {
        w.torch_reference = std::string("raise RuntimeError('reference not built: ") + e.what() + "')\n";
      }
      bodies()[def.name] = def.body;
      RegisterWorkload{std::move(w)};
    }
  }
};

RegisterLevel2 reg_level2;

}  // namespace

namespace chain {
std::string level2_reference(std::string_view workload, const HyperValues& hv) {
  auto it = bodies().find(workload);
  if (it == bodies().end())
    throw base::Error(base::ErrorKind::BadRequest, "not a level-2 workload: " + std::string(workload));
  Chain c;
  Value out = it->second(c, hv);
  return c.python(out);
}
}  // namespace chain

}  // namespace steptp::workloads
