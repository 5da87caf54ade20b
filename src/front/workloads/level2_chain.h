// Operator chains: the building blocks of the level-2 workloads and of the composite generator.
//
// A Chain records tensors and nests as it goes and assigns the public names only at the end, in
// the public translator's order (inputs, then the chain of results ending with the output, then
// constants and parameters, then temporaries), through ProgramBuilder. Every operator appends its
// LEIR nests (public style: bias as a second in-place nest, exp-based tanh, `C=C+...`) and one line
// of PyTorch (nn.functional) that computes the same thing, so a chain yields the program and its
// oracle together.
//
// Integer hyper-values travel as `Hp`: the value the LEIR needs and its Python spelling. Level-2
// workloads spell them `hp["name"]`, so that one reference text serves every draw; composites
// spell them as literals.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/leir/ast.h"
#include "front/workloads/builder.h"
#include "front/workloads/workload.h"

namespace steptp::workloads::chain {

struct Hp {
  int64_t v = 0;
  std::string py;
  Hp(int64_t value) : v(value), py(std::to_string(value)) {}  // NOLINT: literals convert
  Hp(int64_t value, std::string python) : v(value), py(std::move(python)) {}
};
// {hv.at(name), "hp[\"name\"]"}
Hp hp(const HyperValues& hv, const std::string& name);

struct Value {
  std::string alias;  // "v3": template alias and Python variable
  std::vector<int64_t> shape;
  size_t rank() const { return shape.size(); }
};

class Chain {
 public:
  Value input(std::vector<int64_t> shape);
  Value param(std::vector<int64_t> shape);
  Value constant(std::vector<int64_t> shape, std::vector<double> value,
                 leir::DType dtype = leir::DType::F64);
  Value node(std::vector<int64_t> shape);  // a result of the chain (named in chain order)
  Value temp(std::vector<int64_t> shape);  // a lowering temporary (named last)

  // Nest over `extents` (first loop B tx, then L a, c, d, ...); statements use ProgramBuilder
  // templates ($alias[i,j]).
  void nest(std::vector<int64_t> extents, std::string stmts);
  void nest_loops(std::vector<ProgramBuilder::LoopSpec> loops, std::string stmts);
  void py(std::string line);  // one line of the reference body
  std::string pop_py();       // takes back the last line (composite operators reorder lines)

  // Statement executions of the nests so far (sum of loop-extent products): a size budget.
  int64_t work() const;

  // Program named `name` whose single output is `out`.
  leir::Program finish(const std::string& name, const Value& out) const;
  // Source of `def reference(t, hp)` returning {output name: tensor}.
  std::string python(const Value& out) const;

 private:
  enum class Kind : uint8_t { Input, Node, Constant, Param, Temp };
  struct Decl {
    Kind kind;
    std::string alias;
    std::vector<int64_t> shape;
    std::vector<double> value;
    leir::DType dtype = leir::DType::F64;
  };
  struct NestRec {
    std::vector<ProgramBuilder::LoopSpec> loops;
    std::string stmts;
  };
  Value add(Kind kind, std::vector<int64_t> shape, std::vector<double> value = {},
            leir::DType dtype = leir::DType::F64);
  std::vector<const Decl*> naming_order(const Value& out) const;

  std::vector<Decl> decls_;
  std::vector<NestRec> nests_;
  std::vector<std::string> py_;
};

// Template access "$v3[tx,a]" (no brackets for a scalar).
std::string at(const Value& v, const std::vector<std::string>& idx);
// Loop variables of a nest with n loops: tx, a, c, d, ...
std::vector<std::string> loop_vars(size_t n);

// ---- Operators. Each returns the new value; `x` must have the rank the operator documents. ----

// Linear layer over the last dim: weight [out, in] (+ bias [out] as a second nest).
Value gemm(Chain& c, const Value& x, const Hp& out, bool bias = true);
// x [..., k] @ w [k, n] (w an input or parameter).
Value matmul(Chain& c, const Value& x, const Value& w);
// x [b, n, k] @ y [b, k, m].
Value bmm(Chain& c, const Value& x, const Value& y);
// Convolution over rank-2 spatial dims (conv1d/2d/3d); padding through a zero-padded temporary.
// `weight` (optional) reuses an existing [out, in, k...] parameter (one module applied twice).
Value conv(Chain& c, const Value& x, const Hp& out_channels, const std::vector<Hp>& kernel,
           const Hp& stride, const Hp& padding, const Hp& dilation, bool bias,
           const Value* weight = nullptr);
// A fresh convolution weight [out, in, k...].
Value conv_weight(Chain& c, int64_t out_channels, int64_t in_channels, const std::vector<Hp>& kernel);
// Transposed convolution, padding 0 (requires kernel >= stride so every output is written).
Value conv_transpose(Chain& c, const Value& x, const Hp& out_channels, const std::vector<Hp>& kernel,
                     const Hp& stride, bool bias);

// Elementwise.
Value relu(Chain& c, const Value& x);
Value leaky_relu(Chain& c, const Value& x, double slope);
Value gelu(Chain& c, const Value& x);
Value sigmoid(Chain& c, const Value& x);
Value swish(Chain& c, const Value& x);
Value tanh(Chain& c, const Value& x);
Value mish(Chain& c, const Value& x);
Value hardswish(Chain& c, const Value& x);
Value hardsigmoid(Chain& c, const Value& x);
Value hardtanh(Chain& c, const Value& x, double lo, double hi);
Value softplus(Chain& c, const Value& x);
Value exp(Chain& c, const Value& x);
Value clamp(Chain& c, const Value& x, double lo, double hi);
Value scale_literal(Chain& c, const Value& x, double factor);   // x * 0.5
Value divide_literal(Chain& c, const Value& x, double divisor);  // x / 2.0
enum class ScalarOp : uint8_t { Mul, Div, Add, Sub, Min, Max };
Value scalar_constant(Chain& c, const Value& x, ScalarOp op, double value);  // constant F: f64[]
// Per-channel parameter (dim 1; shape [C,1,...] as nn.Parameter((C,1,1)) in KernelBench).
Value channel_param(Chain& c, const Value& x, ScalarOp op);
// Elementwise binary with broadcasting of size-1 dims (same rank).
Value binary(Chain& c, const Value& x, const Value& y, ScalarOp op);

// Normalizations (affine, eps 1e-5, biased variance; batch norm in training mode).
Value instance_norm(Chain& c, const Value& x);
Value group_norm(Chain& c, const Value& x, const Hp& groups);
Value batch_norm(Chain& c, const Value& x);
Value layer_norm(Chain& c, const Value& x);

// Pooling over the rank-2 trailing dims, no padding.
Value max_pool(Chain& c, const Value& x, const Hp& kernel, const Hp& stride);
Value avg_pool(Chain& c, const Value& x, const Hp& kernel, const Hp& stride);
Value global_avg_pool(Chain& c, const Value& x);

// Reductions over one dim (>= 1), keepdim=True.
enum class Reduce : uint8_t { Sum, Mean, Max, Min, LogSumExp };
Value reduce(Chain& c, const Value& x, size_t dim, Reduce kind);
Value softmax(Chain& c, const Value& x, size_t dim, bool log = false);

// Causal/plain self-attention blocks in the public MinGPT style, x [b, t, e], output [b, t, e].
enum class Attention : uint8_t { MHA, MQA, GQA };
Value attention(Chain& c, const Value& x, Attention kind, const Hp& heads, const Hp& kv_heads,
                bool causal);

// Hyper-parameter-independent reference of a level-2 workload for `hv` (tests check that every
// draw yields the registered text, i.e. no value is baked into the Python).
std::string level2_reference(std::string_view workload, const HyperValues& hv);

}  // namespace steptp::workloads::chain
