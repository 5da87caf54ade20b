// Operator chains (see level2_chain.h). Formulas follow the public translator's output in the
// corpus: tanh as (exp(x)-exp(-x))/(exp(x)+exp(-x)) through two temporaries, mish through
// softplus log(1+exp(x)), GELU exact with erf, reductions into a keepdim temporary then copied,
// group norm with a*cpg+c channel subscripts, max pooling as max(Y, X_{c*s+f}).
#include "front/workloads/level2_chain.h"

#include <fmt/format.h>

#include <cmath>
#include <optional>
#include <stdexcept>

#include "base/error.h"

namespace steptp::workloads::chain {
namespace {

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? "," : "") + v[i];
  return out;
}

std::vector<std::string> all_vars(const Value& v) { return loop_vars(v.rank()); }

void require(bool ok, const std::string& what) {
  if (!ok) throw base::Error(base::ErrorKind::BadRequest, "chain: " + what);
}

// Subscripts of `v` read inside a nest over `out` (same rank): size-1 dims broadcast as 0.
std::vector<std::string> broadcast_idx(const Value& v, const std::vector<int64_t>& out) {
  auto vars = loop_vars(out.size());
  for (size_t i = 0; i < v.rank(); ++i)
    if (v.shape[i] == 1 && out[i] != 1) vars[i] = "0";
  return vars;
}

// "c*2+f*3" for the input position of output index `o` and window index `k`.
std::string window(const std::string& o, int64_t stride, const std::string& k, int64_t dilation) {
  std::string s = o;
  if (stride != 1) s += fmt::format("*{}", stride);
  s += "+" + k;
  if (dilation != 1) s += fmt::format("*{}", dilation);
  return s;
}

Value elementwise(Chain& c, const Value& x, const std::string& rhs_of_X, const std::string& py) {
  Value y = c.node(x.shape);
  auto v = all_vars(x);
  std::string X = at(x, v);
  std::string rhs;
  // Replace each "X" token of the formula with the access (formulas use no other capital X).
  for (char ch : rhs_of_X) rhs += ch == 'X' ? X : std::string(1, ch);
  c.nest(x.shape, at(y, v) + "=" + rhs);
  c.py(fmt::format("{} = {}", y.alias, fmt::format(fmt::runtime(py), fmt::arg("x", x.alias))));
  return y;
}

// Exp-based tanh of `x` into `y` (public style), temporaries allocated after `y`.
void tanh_into(Chain& c, const Value& x, const Value& y) {
  Value num = c.temp(x.shape), den = c.temp(x.shape);
  auto v = all_vars(x);
  std::string X = at(x, v);
  c.nest(x.shape, at(num, v) + "=exp(" + X + ")-exp(-" + X + ")");
  c.nest(x.shape, at(den, v) + "=exp(" + X + ")+exp(-" + X + ")");
  c.nest(x.shape, at(y, v) + "=" + at(num, v) + "/" + at(den, v));
}

std::string num_lit(double v) { return num(v); }

std::string op_symbol(ScalarOp op) {
  switch (op) {
    case ScalarOp::Mul: return "*";
    case ScalarOp::Div: return "/";
    case ScalarOp::Add: return "+";
    case ScalarOp::Sub: return "-";
    default: return "";
  }
}

std::string combine(ScalarOp op, const std::string& a, const std::string& b) {
  if (op == ScalarOp::Min) return "min(" + a + "," + b + ")";
  if (op == ScalarOp::Max) return "max(" + a + "," + b + ")";
  return a + op_symbol(op) + b;
}

std::string py_combine(ScalarOp op, const std::string& a, const std::string& b) {
  if (op == ScalarOp::Min) return "torch.minimum(" + a + ", " + b + ")";
  if (op == ScalarOp::Max) return "torch.maximum(" + a + ", " + b + ")";
  return a + " " + op_symbol(op) + " " + b;
}

}  // namespace

Hp hp(const HyperValues& hv, const std::string& name) {
  auto it = hv.find(name);
  if (it == hv.end()) throw base::Error(base::ErrorKind::BadRequest, "missing hyper-parameter '" + name + "'");
  return Hp(it->second, "hp[\"" + name + "\"]");
}

std::vector<std::string> loop_vars(size_t n) {
  std::vector<std::string> v;
  for (size_t i = 0; i < n; ++i) v.push_back(index_name(i));
  return v;
}

std::string at(const Value& v, const std::vector<std::string>& idx) {
  if (idx.size() != v.rank())
    throw std::logic_error(fmt::format("chain: {} has rank {}, accessed with {} subscripts", v.alias,
                                       v.rank(), idx.size()));
  if (idx.empty()) return "$" + v.alias;
  return "$" + v.alias + "[" + join(idx) + "]";
}

// ---------------------------------------------------------------------------------------------
// Chain

Value Chain::add(Kind kind, std::vector<int64_t> shape, std::vector<double> value, leir::DType dtype) {
  for (int64_t d : shape) require(d >= 1, "every dimension must be >= 1");
  if (ShapesOnly::active()) value.clear();
  decls_.push_back(Decl{kind, fmt::format("v{}", decls_.size()), std::move(shape), std::move(value), dtype});
  return Value{decls_.back().alias, decls_.back().shape};
}

Value Chain::input(std::vector<int64_t> shape) { return add(Kind::Input, std::move(shape)); }
Value Chain::param(std::vector<int64_t> shape) { return add(Kind::Param, std::move(shape)); }
Value Chain::constant(std::vector<int64_t> shape, std::vector<double> value, leir::DType dtype) {
  return add(Kind::Constant, std::move(shape), std::move(value), dtype);
}
Value Chain::node(std::vector<int64_t> shape) { return add(Kind::Node, std::move(shape)); }
Value Chain::temp(std::vector<int64_t> shape) { return add(Kind::Temp, std::move(shape)); }

void Chain::nest(std::vector<int64_t> extents, std::string stmts) {
  std::vector<ProgramBuilder::LoopSpec> loops;
  for (size_t k = 0; k < extents.size(); ++k)
    loops.push_back({k == 0 ? 'B' : 'L', extents[k], index_name(k)});
  nests_.push_back({std::move(loops), std::move(stmts)});
}

void Chain::nest_loops(std::vector<ProgramBuilder::LoopSpec> loops, std::string stmts) {
  nests_.push_back({std::move(loops), std::move(stmts)});
}

void Chain::py(std::string line) { py_.push_back(std::move(line)); }

int64_t Chain::work() const {
  int64_t total = 0;
  for (const auto& n : nests_) {
    int64_t p = 1;
    for (const auto& l : n.loops) p *= l.extent;
    total += p;
  }
  return total;
}

std::string Chain::pop_py() {
  if (py_.empty()) throw std::logic_error("chain: no Python line to take");
  std::string last = std::move(py_.back());
  py_.pop_back();
  return last;
}

std::vector<const Chain::Decl*> Chain::naming_order(const Value& out) const {
  std::vector<const Decl*> order;
  for (Kind k : {Kind::Input, Kind::Node, Kind::Constant, Kind::Param, Kind::Temp})
    for (const auto& d : decls_)
      if (d.kind == k) order.push_back(&d);
  bool found = false;
  for (const auto* d : order) found |= d->alias == out.alias && d->kind == Kind::Node;
  if (!found) throw std::logic_error("chain: the output must be a result of the chain");
  return order;
}

leir::Program Chain::finish(const std::string& name, const Value& out) const {
  ProgramBuilder b(name);
  for (const Decl* d : naming_order(out)) {
    switch (d->kind) {
      case Kind::Input: b.input(d->alias, d->shape); break;
      case Kind::Param: b.param(d->alias, d->shape); break;
      case Kind::Constant: b.constant(d->alias, d->shape, d->value, d->dtype); break;
      case Kind::Node:
        if (d->alias == out.alias) b.output(d->alias, d->shape);
        else b.temp(d->alias);
        break;
      case Kind::Temp: b.temp(d->alias); break;
    }
  }
  for (const auto& n : nests_) b.nest(n.loops, n.stmts);
  return b.finish();
}

std::string Chain::python(const Value& out) const {
  std::string src = "def reference(t, hp):\n";
  size_t k = 0;
  std::string out_name;
  for (const Decl* d : naming_order(out)) {
    std::string name = tensor_name(k++);
    bool known = d->kind == Kind::Input || d->kind == Kind::Param || d->kind == Kind::Constant;
    if (known) src += fmt::format("    {} = t[\"{}\"]\n", d->alias, name);
    if (d->alias == out.alias) out_name = name;
  }
  for (const auto& line : py_) src += "    " + line + "\n";
  src += fmt::format("    return {{\"{}\": {}}}\n", out_name, out.alias);
  return src;
}

// ---------------------------------------------------------------------------------------------
// Linear algebra

Value gemm(Chain& c, const Value& x, const Hp& out, bool bias) {
  require(x.rank() >= 2, "gemm needs rank >= 2");
  int64_t k = x.shape.back();
  Value w = c.param({out.v, k});
  std::vector<int64_t> yshape(x.shape.begin(), x.shape.end() - 1);
  yshape.push_back(out.v);
  Value y = c.node(yshape);
  size_t r = x.rank();
  auto v = loop_vars(r + 1);  // batch..., o, k
  std::vector<std::string> yi(v.begin(), v.begin() + static_cast<long>(r));
  std::vector<std::string> xi(v.begin(), v.begin() + static_cast<long>(r - 1));
  xi.push_back(v[r]);
  std::vector<int64_t> ext = yshape;
  ext.push_back(k);
  c.nest(ext, at(y, yi) + "=" + at(y, yi) + "+" + at(x, xi) + "*" + at(w, {v[r - 1], v[r]}));
  std::string b = "None";
  if (bias) {
    Value bb = c.param({out.v});
    c.nest(yshape, at(y, yi) + "=" + at(y, yi) + "+" + at(bb, {v[r - 1]}));
    b = bb.alias;
  }
  c.py(fmt::format("{} = F.linear({}, {}, {})", y.alias, x.alias, w.alias, b));
  return y;
}

Value matmul(Chain& c, const Value& x, const Value& w) {
  require(x.rank() >= 2 && w.rank() == 2 && w.shape[0] == x.shape.back(), "matmul shapes");
  size_t r = x.rank();
  std::vector<int64_t> yshape(x.shape.begin(), x.shape.end() - 1);
  yshape.push_back(w.shape[1]);
  Value y = c.node(yshape);
  auto v = loop_vars(r + 1);
  std::vector<std::string> yi(v.begin(), v.begin() + static_cast<long>(r));
  std::vector<std::string> xi(v.begin(), v.begin() + static_cast<long>(r - 1));
  xi.push_back(v[r]);
  std::vector<int64_t> ext = yshape;
  ext.push_back(x.shape.back());
  c.nest(ext, at(y, yi) + "=" + at(y, yi) + "+" + at(x, xi) + "*" + at(w, {v[r], v[r - 1]}));
  c.py(fmt::format("{} = torch.matmul({}, {})", y.alias, x.alias, w.alias));
  return y;
}

Value bmm(Chain& c, const Value& x, const Value& y) {
  require(x.rank() == 3 && y.rank() == 3 && x.shape[0] == y.shape[0] && x.shape[2] == y.shape[1],
          "bmm shapes");
  Value z = c.node({x.shape[0], x.shape[1], y.shape[2]});
  c.nest({x.shape[0], x.shape[1], y.shape[2], x.shape[2]},
         at(z, {"tx", "a", "c"}) + "=" + at(z, {"tx", "a", "c"}) + "+" + at(x, {"tx", "a", "d"}) + "*" +
             at(y, {"tx", "d", "c"}));
  c.py(fmt::format("{} = torch.bmm({}, {})", z.alias, x.alias, y.alias));
  return z;
}

Value conv_weight(Chain& c, int64_t out_channels, int64_t in_channels, const std::vector<Hp>& kernel) {
  std::vector<int64_t> wshape{out_channels, in_channels};
  for (const auto& k : kernel) wshape.push_back(k.v);
  return c.param(wshape);
}

Value conv(Chain& c, const Value& x, const Hp& out_channels, const std::vector<Hp>& kernel,
           const Hp& stride, const Hp& padding, const Hp& dilation, bool bias, const Value* weight) {
  size_t nd = x.rank() - 2;
  require(x.rank() >= 3 && x.rank() <= 5 && kernel.size() == nd, "conv needs [N,C,spatial...]");
  int64_t n = x.shape[0], cin = x.shape[1];
  int64_t s = stride.v, p = padding.v, dl = dilation.v;
  std::vector<int64_t> yshape{n, out_channels.v};
  for (size_t i = 0; i < nd; ++i) {
    int64_t span = dl * (kernel[i].v - 1) + 1;
    int64_t in = x.shape[2 + i] + 2 * p;
    require(in >= span, "convolution window larger than the padded input");
    yshape.push_back((in - span) / s + 1);
  }
  Value src = x;
  if (p > 0) {
    std::vector<int64_t> pshape = x.shape;
    for (size_t i = 0; i < nd; ++i) pshape[2 + i] += 2 * p;
    Value xp = c.temp(pshape);
    auto v = all_vars(xp);
    std::string cond, read;
    std::vector<std::string> ri{v[0], v[1]};
    for (size_t i = 0; i < nd; ++i) {
      cond += fmt::format("{}{}<={}<{}", i ? "&" : "", p, v[2 + i], x.shape[2 + i] + p);
      ri.push_back(fmt::format("{}-{}", v[2 + i], p));
    }
    c.nest(pshape, at(xp, v) + "=if_then_else(" + cond + "," + at(x, ri) + ",0)");
    src = xp;
  }
  Value w = weight ? *weight : conv_weight(c, out_channels.v, cin, kernel);
  require(w.rank() == 2 + nd && w.shape[0] == out_channels.v && w.shape[1] == cin,
          "convolution weight shape");
  Value y = c.node(yshape);
  auto v = loop_vars(2 + 2 * nd + 1);  // tx a spatial... f kernel...
  std::vector<std::string> yi{v[0], v[1]}, wi{v[1], v[2 + nd]}, xi{v[0], v[2 + nd]};
  std::vector<int64_t> ext = yshape;
  ext.push_back(cin);
  for (size_t i = 0; i < nd; ++i) {
    yi.push_back(v[2 + i]);
    wi.push_back(v[3 + nd + i]);
    xi.push_back(window(v[2 + i], s, v[3 + nd + i], dl));
    ext.push_back(kernel[i].v);
  }
  // The public translator writes weight*input, but input*weight when it padded the input first.
  std::string prod = p > 0 ? at(src, xi) + "*" + at(w, wi) : at(w, wi) + "*" + at(src, xi);
  c.nest(ext, at(y, yi) + "=" + at(y, yi) + "+" + prod);
  std::string b = "None";
  if (bias) {
    Value bb = c.param({out_channels.v});
    c.nest(yshape, at(y, yi) + "=" + at(y, yi) + "+" + at(bb, {v[1]}));
    b = bb.alias;
  }
  c.py(fmt::format("{} = F.conv{}d({}, {}, {}, stride={}, padding={}, dilation={})", y.alias, nd,
                   x.alias, w.alias, b, stride.py, padding.py, dilation.py));
  return y;
}

Value conv_transpose(Chain& c, const Value& x, const Hp& out_channels, const std::vector<Hp>& kernel,
                     const Hp& stride, bool bias) {
  size_t nd = x.rank() - 2;
  require(x.rank() >= 3 && x.rank() <= 5 && kernel.size() == nd, "conv_transpose needs [N,C,spatial...]");
  int64_t n = x.shape[0], cin = x.shape[1], s = stride.v;
  std::vector<int64_t> yshape{n, out_channels.v};
  std::vector<int64_t> wshape{cin, out_channels.v};
  for (size_t i = 0; i < nd; ++i) {
    require(kernel[i].v >= s, "transposed convolution needs kernel >= stride");
    yshape.push_back((x.shape[2 + i] - 1) * s + kernel[i].v);
    wshape.push_back(kernel[i].v);
  }
  Value w = c.param(wshape);
  Value y = c.node(yshape);
  auto v = loop_vars(2 + 2 * nd + 1);  // tx a in-spatial... f kernel...
  std::vector<std::string> yi{v[0], v[1]}, xi{v[0], v[2 + nd]}, wi{v[2 + nd], v[1]};
  std::vector<int64_t> ext{n, out_channels.v};
  for (size_t i = 0; i < nd; ++i) {
    yi.push_back(window(v[2 + i], s, v[3 + nd + i], 1));
    xi.push_back(v[2 + i]);
    wi.push_back(v[3 + nd + i]);
    ext.push_back(x.shape[2 + i]);
  }
  ext.push_back(cin);
  for (size_t i = 0; i < nd; ++i) ext.push_back(kernel[i].v);
  c.nest(ext, at(y, yi) + "=" + at(y, yi) + "+" + at(x, xi) + "*" + at(w, wi));
  std::string b = "None";
  if (bias) {
    Value bb = c.param({out_channels.v});
    auto yv = all_vars(y);
    c.nest(yshape, at(y, yv) + "=" + at(y, yv) + "+" + at(bb, {yv[1]}));
    b = bb.alias;
  }
  c.py(fmt::format("{} = F.conv_transpose{}d({}, {}, {}, stride={})", y.alias, nd, x.alias, w.alias,
                   b, stride.py));
  return y;
}

// ---------------------------------------------------------------------------------------------
// Elementwise

Value relu(Chain& c, const Value& x) { return elementwise(c, x, "max(X,0)", "F.relu({x})"); }

Value leaky_relu(Chain& c, const Value& x, double slope) {
  return elementwise(c, x, "if_then_else(X<0," + num_lit(slope) + "*X,X)",
                     "F.leaky_relu({x}, " + num_lit(slope) + ")");
}

Value gelu(Chain& c, const Value& x) {
  return elementwise(c, x, "X*0.5*(1+erf(X/sqrt(2)))", "F.gelu({x})");
}

Value sigmoid(Chain& c, const Value& x) {
  return elementwise(c, x, "1/(1+exp(-X))", "torch.sigmoid({x})");
}

Value swish(Chain& c, const Value& x) {
  Value s = c.node(x.shape);
  Value y = c.node(x.shape);
  auto v = all_vars(x);
  c.nest(x.shape, at(s, v) + "=1/(1+exp(-" + at(x, v) + "))");
  c.nest(x.shape, at(y, v) + "=" + at(x, v) + "*" + at(s, v));
  c.py(fmt::format("{} = {} * torch.sigmoid({})", y.alias, x.alias, x.alias));
  return y;
}

Value tanh(Chain& c, const Value& x) {
  Value y = c.node(x.shape);
  tanh_into(c, x, y);
  c.py(fmt::format("{} = torch.tanh({})", y.alias, x.alias));
  return y;
}

Value mish(Chain& c, const Value& x) {
  Value y = c.node(x.shape);
  Value sp = c.temp(x.shape);
  Value th = c.temp(x.shape);
  auto v = all_vars(x);
  c.nest(x.shape, at(sp, v) + "=log(1+exp(" + at(x, v) + "))");
  tanh_into(c, sp, th);
  c.nest(x.shape, at(y, v) + "=" + at(x, v) + "*" + at(th, v));
  c.py(fmt::format("{} = F.mish({})", y.alias, x.alias));
  return y;
}

Value hardswish(Chain& c, const Value& x) {
  return elementwise(c, x, "X*max(min(X+3,6),0)/6", "F.hardswish({x})");
}

Value hardsigmoid(Chain& c, const Value& x) {
  return elementwise(c, x, "max(0,min(1,(X+3)/6))", "F.hardsigmoid({x})");
}

Value hardtanh(Chain& c, const Value& x, double lo, double hi) {
  return elementwise(c, x, "min(max(X," + num_lit(lo) + ")," + num_lit(hi) + ")",
                     "F.hardtanh({x}, " + num_lit(lo) + ", " + num_lit(hi) + ")");
}

// PyTorch's softplus returns x itself above its threshold 20 (log(1+exp(20)) differs from 20 by
// 1e-10 relatively), so the LEIR carries the same branch.
Value softplus(Chain& c, const Value& x) {
  return elementwise(c, x, "if_then_else(X>20,X,log(1+exp(X)))", "F.softplus({x})");
}

Value exp(Chain& c, const Value& x) { return elementwise(c, x, "exp(X)", "torch.exp({x})"); }

Value clamp(Chain& c, const Value& x, double lo, double hi) {
  return elementwise(c, x, "min(max(X," + num_lit(lo) + ")," + num_lit(hi) + ")",
                     "torch.clamp({x}, min=" + num_lit(lo) + ", max=" + num_lit(hi) + ")");
}

Value scale_literal(Chain& c, const Value& x, double factor) {
  return elementwise(c, x, "X*" + num_lit(factor), "{x} * " + num_lit(factor));
}

Value divide_literal(Chain& c, const Value& x, double divisor) {
  return elementwise(c, x, "X/" + num_lit(divisor), "{x} / " + num_lit(divisor));
}

Value scalar_constant(Chain& c, const Value& x, ScalarOp op, double value) {
  Value k = c.constant({}, {value});
  Value y = c.node(x.shape);
  auto v = all_vars(x);
  c.nest(x.shape, at(y, v) + "=" + combine(op, at(x, v), at(k, {})));
  c.py(fmt::format("{} = {}", y.alias, py_combine(op, x.alias, k.alias)));
  return y;
}

Value channel_param(Chain& c, const Value& x, ScalarOp op) {
  require(x.rank() >= 2, "per-channel parameter needs rank >= 2");
  std::vector<int64_t> pshape{x.shape[1]};
  for (size_t i = 2; i < x.rank(); ++i) pshape.push_back(1);
  Value p = c.param(pshape);
  Value y = c.node(x.shape);
  auto v = all_vars(x);
  std::vector<std::string> pi{v[1]};
  for (size_t i = 2; i < x.rank(); ++i) pi.push_back("0");
  c.nest(x.shape, at(y, v) + "=" + combine(op, at(x, v), at(p, pi)));
  c.py(fmt::format("{} = {}", y.alias, py_combine(op, x.alias, p.alias)));
  return y;
}

Value binary(Chain& c, const Value& x, const Value& y, ScalarOp op) {
  require(x.rank() == y.rank(), "binary operands need the same rank");
  std::vector<int64_t> out;
  for (size_t i = 0; i < x.rank(); ++i) {
    require(x.shape[i] == y.shape[i] || x.shape[i] == 1 || y.shape[i] == 1, "shapes do not broadcast");
    out.push_back(std::max(x.shape[i], y.shape[i]));
  }
  Value z = c.node(out);
  c.nest(out, at(z, loop_vars(out.size())) + "=" +
                  combine(op, at(x, broadcast_idx(x, out)), at(y, broadcast_idx(y, out))));
  c.py(fmt::format("{} = {}", z.alias, py_combine(op, x.alias, y.alias)));
  return z;
}

// ---------------------------------------------------------------------------------------------
// Normalizations

namespace {

// Mean and biased variance of `x` over every element sharing the statistic index, then the
// normalized value and the affine transform (public layout, LEIR.md corpus: GroupNorm, LayerNorm).
// `stat_ext` = extents of the statistic nest; `full_ext`/`xi`/`si` describe the full nest: extents,
// the subscripts of x and of the statistic. `gi` = subscript of the affine parameters.
struct Normalized {
  Value y, weight, bias;
};
Normalized normalize(Chain& c, const Value& x, const std::vector<int64_t>& stat_shape,
                     const std::vector<int64_t>& full_ext, const std::vector<std::string>& xi,
                     const std::vector<std::string>& si, const std::vector<int64_t>& param_shape,
                     const std::vector<std::string>& gi, int64_t count) {
  Value y = c.node(x.shape);
  Value g = c.param(param_shape), b = c.param(param_shape);
  Value sum = c.temp(stat_shape), mean = c.temp(stat_shape), sq = c.temp(stat_shape),
        var = c.temp(stat_shape), z = c.temp(x.shape);
  auto sv = loop_vars(stat_shape.size());
  c.nest(full_ext, at(sum, si) + "=" + at(sum, si) + "+" + at(x, xi));
  c.nest(stat_shape, at(mean, sv) + fmt::format("={}/{}", at(sum, sv), count));
  c.nest(full_ext, at(sq, si) + "=" + at(sq, si) + "+(" + at(x, xi) + "-" + at(mean, si) + ")**2");
  c.nest(stat_shape, at(var, sv) + fmt::format("={}/{}", at(sq, sv), count));
  c.nest(full_ext, at(z, xi) + "=(" + at(x, xi) + "-" + at(mean, si) + ")/sqrt(" + at(var, si) +
                       "+1e-05)");
  c.nest(full_ext, at(y, xi) + "=" + at(g, gi) + "*" + at(z, xi) + "+" + at(b, gi));
  return {y, g, b};
}

int64_t prod(const std::vector<int64_t>& v, size_t from) {
  int64_t p = 1;
  for (size_t i = from; i < v.size(); ++i) p *= v[i];
  return p;
}

}  // namespace

Value instance_norm(Chain& c, const Value& x) {
  require(x.rank() >= 3, "instance norm needs [N,C,spatial...]");
  auto v = all_vars(x);
  auto [y, g, b] = normalize(c, x, {x.shape[0], x.shape[1]}, x.shape, v, {v[0], v[1]}, {x.shape[1]},
                             {v[1]}, prod(x.shape, 2));
  c.py(fmt::format("{} = F.instance_norm({}, weight={}, bias={}, eps=1e-05)", y.alias, x.alias,
                   g.alias, b.alias));
  return y;
}

Value group_norm(Chain& c, const Value& x, const Hp& groups) {
  require(x.rank() >= 2 && groups.v >= 1 && x.shape[1] % groups.v == 0,
          "group norm needs channels divisible by groups");
  int64_t cpg = x.shape[1] / groups.v;
  std::vector<int64_t> ext{x.shape[0], groups.v, cpg};
  for (size_t i = 2; i < x.rank(); ++i) ext.push_back(x.shape[i]);
  auto v = loop_vars(ext.size());
  std::string ch = fmt::format("{}*{}+{}", v[1], cpg, v[2]);
  std::vector<std::string> xi{v[0], ch};
  for (size_t i = 3; i < ext.size(); ++i) xi.push_back(v[i]);
  auto [y, g, b] = normalize(c, x, {x.shape[0], groups.v}, ext, xi, {v[0], v[1]}, {x.shape[1]},
                             {ch}, cpg * prod(x.shape, 2));
  c.py(fmt::format("{} = F.group_norm({}, {}, {}, {}, eps=1e-05)", y.alias, x.alias, groups.py,
                   g.alias, b.alias));
  return y;
}

Value batch_norm(Chain& c, const Value& x) {
  require(x.rank() >= 2, "batch norm needs [N,C,...]");
  // Statistics per channel: the public code binds the channel loop (B^{C}_{tx}) inside the batch
  // loop; the normalization nests are ordinary.
  std::vector<ProgramBuilder::LoopSpec> loops{{'L', x.shape[0], "a"}, {'B', x.shape[1], "tx"}};
  std::vector<std::string> xi{"a", "tx"};
  for (size_t i = 2; i < x.rank(); ++i) {
    loops.push_back({'L', x.shape[i], index_name(i)});
    xi.push_back(index_name(i));
  }
  int64_t count = x.shape[0] * prod(x.shape, 2);
  Value y = c.node(x.shape);
  Value g = c.param({x.shape[1]}), b = c.param({x.shape[1]});
  Value sum = c.temp({x.shape[1]}), mean = c.temp({x.shape[1]}), sq = c.temp({x.shape[1]}),
        var = c.temp({x.shape[1]}), z = c.temp(x.shape);
  c.nest_loops(loops, at(sum, {"tx"}) + "=" + at(sum, {"tx"}) + "+" + at(x, xi));
  c.nest({x.shape[1]}, at(mean, {"tx"}) + fmt::format("={}/{}", at(sum, {"tx"}), count));
  c.nest_loops(loops, at(sq, {"tx"}) + "=" + at(sq, {"tx"}) + "+(" + at(x, xi) + "-" + at(mean, {"tx"}) + ")**2");
  c.nest({x.shape[1]}, at(var, {"tx"}) + fmt::format("={}/{}", at(sq, {"tx"}), count));
  auto v = all_vars(x);
  c.nest(x.shape, at(z, v) + "=(" + at(x, v) + "-" + at(mean, {v[1]}) + ")/sqrt(" + at(var, {v[1]}) +
                      "+1e-05)");
  c.nest(x.shape, at(y, v) + "=" + at(g, {v[1]}) + "*" + at(z, v) + "+" + at(b, {v[1]}));
  c.py(fmt::format("{} = F.batch_norm({}, None, None, {}, {}, training=True, eps=1e-05)", y.alias,
                   x.alias, g.alias, b.alias));
  return y;
}

Value layer_norm(Chain& c, const Value& x) {
  require(x.rank() >= 2, "layer norm needs rank >= 2");
  auto v = all_vars(x);
  std::vector<int64_t> stat(x.shape.begin(), x.shape.end() - 1);
  std::vector<std::string> si(v.begin(), v.end() - 1);
  auto [y, g, b] = normalize(c, x, stat, x.shape, v, si, {x.shape.back()}, {v.back()},
                             x.shape.back());
  c.py(fmt::format("{} = F.layer_norm({}, ({}.shape[-1],), {}, {}, eps=1e-05)", y.alias, x.alias,
                   x.alias, g.alias, b.alias));
  return y;
}

// ---------------------------------------------------------------------------------------------
// Pooling and reductions

namespace {
Value pool(Chain& c, const Value& x, const Hp& kernel, const Hp& stride, bool is_max) {
  size_t nd = x.rank() - 2;
  require(x.rank() >= 3 && x.rank() <= 5, "pooling needs [N,C,spatial...]");
  std::vector<int64_t> yshape{x.shape[0], x.shape[1]};
  for (size_t i = 0; i < nd; ++i) {
    require(x.shape[2 + i] >= kernel.v, "pooling window larger than the input");
    yshape.push_back((x.shape[2 + i] - kernel.v) / stride.v + 1);
  }
  Value y = c.node(yshape);
  Value acc = is_max ? y : c.temp(yshape);
  auto v = loop_vars(2 + 2 * nd);
  std::vector<std::string> yi{v[0], v[1]}, xi{v[0], v[1]};
  std::vector<int64_t> ext = yshape;
  for (size_t i = 0; i < nd; ++i) {
    yi.push_back(v[2 + i]);
    xi.push_back(window(v[2 + i], stride.v, v[2 + nd + i], 1));
    ext.push_back(kernel.v);
  }
  if (is_max) {
    c.nest(ext, at(y, yi) + "=max(" + at(y, yi) + "," + at(x, xi) + ")");
  } else {
    c.nest(ext, at(acc, yi) + "=" + at(acc, yi) + "+" + at(x, xi));
    int64_t count = 1;
    for (size_t i = 0; i < nd; ++i) count *= kernel.v;
    c.nest(yshape, at(y, yi) + fmt::format("={}/{}", at(acc, yi), count));
  }
  c.py(fmt::format("{} = F.{}_pool{}d({}, {}, {})", y.alias, is_max ? "max" : "avg", nd, x.alias,
                   kernel.py, stride.py));
  return y;
}
}  // namespace

Value max_pool(Chain& c, const Value& x, const Hp& kernel, const Hp& stride) {
  return pool(c, x, kernel, stride, true);
}
Value avg_pool(Chain& c, const Value& x, const Hp& kernel, const Hp& stride) {
  return pool(c, x, kernel, stride, false);
}

Value global_avg_pool(Chain& c, const Value& x) {
  require(x.rank() >= 3, "global pooling needs [N,C,spatial...]");
  std::vector<int64_t> yshape{x.shape[0], x.shape[1]};
  for (size_t i = 2; i < x.rank(); ++i) yshape.push_back(1);
  Value y = c.node(yshape);
  Value acc = c.temp(yshape);
  auto v = all_vars(x);
  std::vector<std::string> ai{v[0], v[1]};
  for (size_t i = 2; i < x.rank(); ++i) ai.push_back("0");
  c.nest(x.shape, at(acc, ai) + "=" + at(acc, ai) + "+" + at(x, v));
  auto yv = all_vars(y);
  c.nest(yshape, at(y, yv) + fmt::format("={}/{}", at(acc, yv), prod(x.shape, 2)));
  c.py(fmt::format("{} = F.adaptive_avg_pool{}d({}, 1)", y.alias, x.rank() - 2, x.alias));
  return y;
}

Value reduce(Chain& c, const Value& x, size_t dim, Reduce kind) {
  require(dim >= 1 && dim < x.rank(), "reduction dim must be >= 1 and < rank");
  std::vector<int64_t> yshape = x.shape;
  yshape[dim] = 1;
  // torch.max/min(x, dim) return a (values, indices) tuple, which the public translator names
  // before the values: keep that name unused so the following names match its output.
  bool tuple = kind == Reduce::Max || kind == Reduce::Min;
  if (tuple) c.node({1});
  Value y = c.node(yshape);
  if (tuple) c.temp({1});  // ... and allocates a temporary for the indices, also unused here
  Value acc = c.temp(yshape);
  auto v = all_vars(x);
  auto ai = v;
  ai[dim] = "0";
  std::string A = at(acc, ai), X = at(x, v);
  switch (kind) {
    case Reduce::Sum:
    case Reduce::Mean: c.nest(x.shape, A + "=" + A + "+" + X); break;
    case Reduce::Max: c.nest(x.shape, A + "=max(" + A + "," + X + ")"); break;
    case Reduce::Min: c.nest(x.shape, A + "=min(" + A + "," + X + ")"); break;
    case Reduce::LogSumExp: c.nest(x.shape, A + "=" + A + "+exp(" + X + ")"); break;
  }
  auto yv = all_vars(y);
  std::string rhs = at(acc, yv);
  if (kind == Reduce::Mean) rhs += fmt::format("/{}", x.shape[dim]);
  if (kind == Reduce::LogSumExp) rhs = "log(" + rhs + ")";
  c.nest(yshape, at(y, yv) + "=" + rhs);
  static const char* kPy[] = {"torch.sum", "torch.mean", "torch.max", "torch.min", "torch.logsumexp"};
  c.py(fmt::format("{} = {}({}, dim={}, keepdim=True){}", y.alias, kPy[static_cast<int>(kind)], x.alias,
                   dim, tuple ? ".values" : ""));
  return y;
}

Value softmax(Chain& c, const Value& x, size_t dim, bool log) {
  require(dim >= 1 && dim < x.rank(), "softmax dim must be >= 1 and < rank");
  std::vector<int64_t> sshape;
  for (size_t i = 0; i < x.rank(); ++i)
    if (i != dim) sshape.push_back(x.shape[i]);
  Value y = c.node(x.shape);
  Value m = c.temp(sshape), s = c.temp(sshape);
  auto v = all_vars(x);
  std::vector<std::string> si;
  for (size_t i = 0; i < v.size(); ++i)
    if (i != dim) si.push_back(v[i]);
  std::string M = at(m, si), S = at(s, si), X = at(x, v);
  c.nest(x.shape, M + "=max(" + M + "," + X + ")");
  c.nest(x.shape, S + "=" + S + "+exp(" + X + "-" + M + ")");
  if (log) c.nest(x.shape, at(y, v) + "=" + X + "-" + M + "-log(" + S + ")");
  else c.nest(x.shape, at(y, v) + "=exp(" + X + "-" + M + ")/" + S);
  c.py(fmt::format("{} = F.{}softmax({}, dim={})", y.alias, log ? "log_" : "", x.alias, dim));
  return y;
}

// ---------------------------------------------------------------------------------------------
// Attention (corpus: MHA_max, MQA_sum, MHA_Gemm_GeLU, GQA_Gemm_Tanh_sum)

namespace {

// y[tx,a,c,d] = x[tx,a,c*hd+d]: view [b,t,e] as [b,t,heads,hd].
Value split_heads(Chain& c, const Value& x, int64_t heads, int64_t hd) {
  Value y = c.node({x.shape[0], x.shape[1], heads, hd});
  c.nest(y.shape, at(y, {"tx", "a", "c", "d"}) + "=" + at(x, {"tx", "a", fmt::format("c*{}+d", hd)}));
  return y;
}

// y[tx,c,a,d] = x[tx,a,c,d]: transpose(1, 2).
Value swap12(Chain& c, const Value& x) {
  Value y = c.node({x.shape[0], x.shape[2], x.shape[1], x.shape[3]});
  c.nest(x.shape, at(y, {"tx", "c", "a", "d"}) + "=" + at(x, {"tx", "a", "c", "d"}));
  return y;
}

// Masked (optional) softmax of scores [b,h,t,t], then @ v [b,h,t,hd], merged back to [b,t,e].
Value attend(Chain& c, const Value& scores, const Value& v, bool causal, const Value* mask) {
  Value s = scores;
  std::vector<int64_t> sh = scores.shape;
  if (causal) {
    Value y = c.node(sh);
    c.nest(sh, at(y, {"tx", "a", "c", "d"}) + "=if_then_else(" + at(*mask, {"0", "0", "c", "d"}) +
                   ",-inf," + at(s, {"tx", "a", "c", "d"}) + ")");
    s = y;
  }
  Value p = softmax(c, s, 3);
  c.pop_py();  // the attention's Python is written by the caller
  int64_t b = sh[0], h = sh[1], t = sh[2], hd = v.shape[3];
  Value o = c.node({b, h, t, hd});
  c.nest({b, h, t, hd, t}, at(o, {"tx", "a", "c", "d"}) + "=" + at(o, {"tx", "a", "c", "d"}) + "+" +
                               at(p, {"tx", "a", "c", "f"}) + "*" + at(v, {"tx", "a", "f", "d"}));
  Value ot = swap12(c, o);                 // [b,t,h,hd]
  Value oc = c.node(ot.shape);             // .contiguous()
  c.nest(ot.shape, at(oc, {"tx", "a", "c", "d"}) + "=" + at(ot, {"tx", "a", "c", "d"}));
  Value merged = c.node({b, t, h * hd});   // .view(b, t, e)
  c.nest(ot.shape, at(merged, {"tx", "a", fmt::format("c*{}+d", hd)}) + "=" + at(oc, {"tx", "a", "c", "d"}));
  return merged;
}

// scores = q @ k^T with k given as [b,h,t,hd] (k^T materialized as the public code does).
Value scores_of(Chain& c, const Value& q, const Value& k) {
  Value kt = c.node({k.shape[0], k.shape[1], k.shape[3], k.shape[2]});
  c.nest(k.shape, at(kt, {"tx", "a", "d", "c"}) + "=" + at(k, {"tx", "a", "c", "d"}));
  int64_t b = q.shape[0], h = q.shape[1], t = q.shape[2], hd = q.shape[3];
  Value s = c.node({b, h, t, t});
  c.nest({b, h, t, t, hd}, at(s, {"tx", "a", "c", "d"}) + "=" + at(s, {"tx", "a", "c", "d"}) + "+" +
                               at(q, {"tx", "a", "c", "f"}) + "*" + at(kt, {"tx", "a", "f", "d"}));
  return s;
}

// scores * (1/sqrt(hd)) through the scalar nests R=hd; S=sqrt(R); W=1.0/S (MHA/MQA corpus form).
Value scale_scalar_form(Chain& c, const Value& s, int64_t hd) {
  Value r = c.node({}), q = c.node({}), w = c.node({});
  c.nest({1}, at(r, {}) + fmt::format("={}", hd));
  c.nest({1}, at(q, {}) + "=sqrt(" + at(r, {}) + ")");
  c.nest({1}, at(w, {}) + "=1.0/" + at(q, {}));
  Value y = c.node(s.shape);
  c.nest(s.shape, at(y, {"tx", "a", "c", "d"}) + "=" + at(s, {"tx", "a", "c", "d"}) + "*" + at(w, {}));
  return y;
}

}  // namespace

Value attention(Chain& c, const Value& x, Attention kind, const Hp& heads, const Hp& kv_heads,
                bool causal) {
  require(x.rank() == 3, "attention needs [batch, seq, embed]");
  int64_t b = x.shape[0], t = x.shape[1], e = x.shape[2], nh = heads.v;
  require(nh >= 1 && e % nh == 0, "heads must divide the embedding");
  int64_t hd = e / nh;
  int64_t nkv = kind == Attention::MHA ? nh : kind == Attention::MQA ? 1 : kv_heads.v;
  require(nkv >= 1 && nh % nkv == 0, "kv heads must divide heads");
  // The causal mask buffer (MinGPT `bias` == 0 → True = masked), a bool constant.
  std::optional<Value> mask;
  auto make_mask = [&] {
    std::vector<double> m;
    if (!ShapesOnly::active()) {
      m.reserve(size_t(t * t));
      for (int64_t i = 0; i < t; ++i)
        for (int64_t j = 0; j < t; ++j) m.push_back(j > i ? 1.0 : 0.0);
    }
    mask = c.constant({1, 1, t, t}, std::move(m), leir::DType::Bool);
  };
  std::string X = x.alias;
  auto P = [&](const std::string& line) { c.py(line); };
  P(fmt::format("import math"));
  P(fmt::format("{0}_b, {0}_t, {0}_e = {0}.shape", X));
  P(fmt::format("{0}_nh = {1}", X, heads.py));
  P(fmt::format("{0}_hd = {0}_e // {0}_nh", X));
  Value q, k, v;
  if (kind == Attention::MHA) {
    Value qkv = gemm(c, x, Hp(3 * e), true);
    std::string wq = c.pop_py();
    Value parts = c.node({3, b, t, e});
    for (int64_t i = 0; i < 3; ++i) {
      std::string off = i == 0 ? "c" : fmt::format("c+{}", i * e);
      c.nest({b, t, e}, at(parts, {std::to_string(i), "tx", "a", "c"}) + "=" + at(qkv, {"tx", "a", off}));
    }
    Value qf = c.node({b, t, e}), kf = c.node({b, t, e}), vf = c.node({b, t, e});
    const Value* flat[3] = {&qf, &kf, &vf};
    for (int64_t i = 0; i < 3; ++i)
      c.nest({b, t, e}, at(*flat[i], {"tx", "a", "c"}) + "=" + at(parts, {std::to_string(i), "tx", "a", "c"}));
    k = swap12(c, split_heads(c, kf, nh, hd));
    q = swap12(c, split_heads(c, qf, nh, hd));
    v = swap12(c, split_heads(c, vf, nh, hd));
    c.py(wq);
    P(fmt::format("{0}_q, {0}_k, {0}_v = {1}.split({0}_e, dim=2)", X, qkv.alias));
    for (const char* n : {"q", "k", "v"})
      P(fmt::format("{0}_{1} = {0}_{1}.view({0}_b, {0}_t, {0}_nh, {0}_hd).transpose(1, 2)", X, n));
  } else {
    Value qf = gemm(c, x, Hp(e), true);
    std::string pq = c.pop_py();
    q = swap12(c, split_heads(c, qf, nh, hd));
    Value kf = gemm(c, x, Hp(nkv * hd), true);
    std::string pk = c.pop_py();
    Value vf;
    std::string pv;
    if (kind == Attention::MQA) {
      // unsqueeze(1).expand(b, nh, t, hd)
      auto expand = [&](const Value& f) {
        Value u = c.node({b, 1, t, hd});
        c.nest({b, t, hd}, at(u, {"tx", "0", "a", "c"}) + "=" + at(f, {"tx", "a", "c"}));
        Value ex = c.node({b, nh, t, hd});
        c.nest({b, nh, t, hd}, at(ex, {"tx", "a", "c", "d"}) + "=" + at(u, {"tx", "0", "c", "d"}));
        return ex;
      };
      vf = gemm(c, x, Hp(hd), true);
      pv = c.pop_py();
      k = expand(kf);
      v = expand(vf);
      c.py(pq), c.py(pk), c.py(pv);
      P(fmt::format("{0}_q = {1}.view({0}_b, {0}_t, {0}_nh, {0}_hd).transpose(1, 2)", X, qf.alias));
      P(fmt::format("{0}_k = {1}.unsqueeze(1).expand({0}_b, {0}_nh, {0}_t, {0}_hd)", X, kf.alias));
      P(fmt::format("{0}_v = {1}.unsqueeze(1).expand({0}_b, {0}_nh, {0}_t, {0}_hd)", X, vf.alias));
    } else {
      Value kh = split_heads(c, kf, nkv, hd);
      vf = gemm(c, x, Hp(nkv * hd), true);
      pv = c.pop_py();
      Value vh = split_heads(c, vf, nkv, hd);
      int64_t rep = nh / nkv;
      // unsqueeze(2).expand(b, t, rep, nkv, hd).reshape(b, t, nh, hd): head r*nkv+j uses kv head j.
      auto repeat = [&](const Value& hds) {
        Value u = c.node({b, t, 1, nkv, hd});
        c.nest({b, t, nkv, hd}, at(u, {"tx", "a", "0", "c", "d"}) + "=" + at(hds, {"tx", "a", "c", "d"}));
        Value ex = c.node({b, t, rep, nkv, hd});
        c.nest({b, t, rep, nkv, hd},
               at(ex, {"tx", "a", "c", "d", "f"}) + "=" + at(u, {"tx", "a", "0", "d", "f"}));
        Value cont = c.node(ex.shape);
        c.nest(ex.shape, at(cont, {"tx", "a", "c", "d", "f"}) + "=" + at(ex, {"tx", "a", "c", "d", "f"}));
        Value r = c.node({b, t, nh, hd});
        c.nest(ex.shape, at(r, {"tx", "a", fmt::format("c*{}+d", nkv), "f"}) + "=" +
                             at(cont, {"tx", "a", "c", "d", "f"}));
        return r;
      };
      Value kr = repeat(kh);
      Value vr = repeat(vh);
      k = swap12(c, kr);
      v = swap12(c, vr);
      c.py(pq), c.py(pk), c.py(pv);
      P(fmt::format("{0}_nkv = {1}", X, kv_heads.py));
      P(fmt::format("{0}_q = {1}.view({0}_b, {0}_t, {0}_nh, {0}_hd).transpose(1, 2)", X, qf.alias));
      for (auto [n, f] : {std::pair{"k", kf.alias}, std::pair{"v", vf.alias}})
        P(fmt::format("{0}_{1} = {2}.view({0}_b, {0}_t, {0}_nkv, {0}_hd).unsqueeze(2).expand({0}_b, "
                      "{0}_t, {0}_nh // {0}_nkv, {0}_nkv, {0}_hd).reshape({0}_b, {0}_t, {0}_nh, "
                      "{0}_hd).transpose(1, 2)",
                      X, n, f));
    }
  }
  Value s = scores_of(c, q, k);
  if (kind == Attention::GQA) {
    Value y = c.node(s.shape);
    c.nest(s.shape, at(y, {"tx", "a", "c", "d"}) + "=" + at(s, {"tx", "a", "c", "d"}) + "*" +
                        num(1.0 / std::sqrt(static_cast<double>(hd))));
    s = y;
  } else {
    s = scale_scalar_form(c, s, hd);
  }
  if (causal) make_mask();
  Value merged = attend(c, s, v, causal, mask ? &*mask : nullptr);
  P(fmt::format("{0}_att = ({0}_q @ {0}_k.transpose(-2, -1)) * (1.0 / math.sqrt({0}_hd))", X));
  if (causal)
    P(fmt::format("{0}_att = {0}_att.masked_fill({1}.bool()[:, :, :{0}_t, :{0}_t], float(\"-inf\"))", X,
                  mask->alias));
  P(fmt::format("{0}_att = F.softmax({0}_att, dim=-1)", X));
  P(fmt::format("{0}_y = ({0}_att @ {0}_v).transpose(1, 2).contiguous().view({0}_b, {0}_t, {0}_e)", X));
  Value out = gemm(c, merged, Hp(e), true);
  std::string proj = c.pop_py();
  // The projection reads the merged heads: rename the LEIR value to the Python one.
  P(fmt::format("{} = {}_y", merged.alias, X));
  c.py(proj);
  return out;
}

}  // namespace steptp::workloads::chain
