// Windows over spatial dimensions (1-D, 2-D, 3-D): Conv, ConvTranspose, MaxPool, AveragePool,
// GlobalAveragePool, GlobalMaxPool. Padding is read through a guard,
// `if_then_else(0<=i<n, X_{..i..}, fill)`, instead of a padded copy; groups map an output
// channel to its input channels with `//`.
#include <fmt/format.h>

#include "front/onnx/importer.h"

namespace steptp::onnx_import {
namespace {

struct Window {
  std::vector<int64_t> in, kernel, stride, dilation, pad_begin, pad_end, out;
};

// Kernel, strides, dilations and pads of `n` for the spatial dims of `x` (auto_pad resolved).
Window window(const Node& n, const Shape& x, Shape kernel, bool ceil_mode) {
  size_t d = x.size() - 2;
  Window w;
  w.in.assign(x.begin() + 2, x.end());
  auto kattr = n.ints("kernel_shape", kernel);
  if (kattr.size() != d) n.fail(fmt::format("kernel_shape has {} entries, the input has {} spatial dimensions", kattr.size(), d));
  if (!kernel.empty() && kattr != kernel)
    n.fail(fmt::format("shape mismatch: kernel_shape [{}] differs from the weight's [{}]", fmt::join(kattr, ","), fmt::join(kernel, ",")));
  w.kernel = kattr;
  w.stride = n.ints("strides", Shape(d, 1));
  w.dilation = n.ints("dilations", Shape(d, 1));
  auto pads = n.ints("pads", Shape(2 * d, 0));
  if (w.stride.size() != d || w.dilation.size() != d || pads.size() != 2 * d)
    n.fail("strides, dilations and pads must match the number of spatial dimensions");
  check_small(n, w.kernel, "kernel_shape");
  check_small(n, w.stride, "strides");
  check_small(n, w.dilation, "dilations");
  check_small(n, pads, "pads");
  std::string auto_pad = n.s("auto_pad", "NOTSET");
  for (size_t k = 0; k < d; ++k) {
    if (w.stride[k] < 1 || w.dilation[k] < 1 || w.kernel[k] < 1 || pads[k] < 0 || pads[d + k] < 0)
      n.fail("kernel, strides and dilations must be positive and pads non-negative");
    int64_t span = (w.kernel[k] - 1) * w.dilation[k] + 1;
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      int64_t out = (w.in[k] + w.stride[k] - 1) / w.stride[k];
      int64_t total = std::max<int64_t>(0, (out - 1) * w.stride[k] + span - w.in[k]);
      pads[k] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      pads[d + k] = total - pads[k];
    } else if (auto_pad == "VALID") {
      pads[k] = pads[d + k] = 0;
    } else if (auto_pad != "NOTSET") {
      n.unsupported("auto_pad", auto_pad);
    }
    w.pad_begin.push_back(pads[k]);
    w.pad_end.push_back(pads[d + k]);
    int64_t room = w.in[k] + pads[k] + pads[d + k] - span;
    if (room < 0) n.fail(fmt::format("shape mismatch: the window ({}) does not fit spatial dimension {} ({} with padding)", span, k, w.in[k] + pads[k] + pads[d + k]));
    int64_t out = (ceil_mode ? (room + w.stride[k] - 1) / w.stride[k] : room / w.stride[k]) + 1;
    // Ceil mode never starts a window inside the end padding (PyTorch's and ONNX Runtime's rule).
    if (ceil_mode && (out - 1) * w.stride[k] >= w.in[k] + pads[k]) --out;
    w.out.push_back(out);
  }
  return w;
}

// Input subscripts o*s - pb + k*d per spatial dim, and the guard keeping them inside the input
// ("" when no window position can leave it).
struct Reads {
  Index idx;
  std::string guard;
};
Reads window_reads(const Window& w, const Index& o, const Index& k) {
  Reads r;
  for (size_t i = 0; i < w.in.size(); ++i) {
    auto e = iadd(isub(imul(o[i], w.stride[i]), iconst(w.pad_begin[i])), imul(k[i], w.dilation[i]));
    r.idx.push_back(e);
    int64_t lo = -w.pad_begin[i], hi = (w.out[i] - 1) * w.stride[i] - w.pad_begin[i] + (w.kernel[i] - 1) * w.dilation[i];
    if (lo < 0 || hi >= w.in[i]) r.guard += fmt::format("{}0<={}<{}", r.guard.empty() ? "" : "&", text(e), w.in[i]);
  }
  return r;
}

std::string guarded(const Reads& r, const std::string& read, const std::string& fill) {
  return r.guard.empty() ? read : fmt::format("if_then_else({},{},{})", r.guard, read, fill);
}

void add_bias(Importer& im, const Node& n, const ValuePtr& y) {
  if (!n.has_input(2)) return;
  ValuePtr b = im.input(n, 2);
  if (b->shape != Shape{y->shape[1]}) n.fail(fmt::format("shape mismatch: bias has shape [{}], expected [{}]", fmt::join(b->shape, ","), y->shape[1]));
  std::string acc = im.at(y, vars(y->shape.size()));
  im.nest(y->shape, fmt::format("{0}={0}+{1}", acc, im.at(b, {var(1)})));
}

// Number of spatial dims (1 to 3) of input `x`, and of weight `w` when given.
size_t spatial_dims(const Node& n, const ValuePtr& x, const ValuePtr& w = nullptr) {
  if (x->shape.size() < 3 || x->shape.size() > 5) n.fail(fmt::format("input rank {} is not supported (1-D to 3-D windows: rank 3 to 5)", x->shape.size()));
  if (w && w->shape.size() != x->shape.size()) n.fail("shape mismatch: weight rank differs from input rank");
  return x->shape.size() - 2;
}

void conv(Importer& im, const Node& n) {
  ValuePtr x = im.input(n, 0), w = im.input(n, 1);
  size_t d = spatial_dims(n, x, w);
  int64_t groups = n.i("group", 1), m = w->shape[0], cg = w->shape[1];
  if (groups < 1 || m % groups || cg * groups != x->shape[1])
    n.fail(fmt::format("shape mismatch: {} input channels, weight [{}], group {}", x->shape[1], fmt::join(w->shape, ","), groups));
  Window win = window(n, x->shape, Shape(w->shape.begin() + 2, w->shape.end()), false);
  Shape out = {x->shape[0], m};
  out.insert(out.end(), win.out.begin(), win.out.end());
  ValuePtr y = im.result(n, 0, x->dtype, out);
  Index o = vars(2 + d), kv = vars(d, 3 + d);
  auto c = var(2 + d);
  Reads r = window_reads(win, Index(o.begin() + 2, o.end()), kv);
  int64_t mg = m / groups;
  leir::ExprPtr ci = groups == 1 ? c : iadd(imul(idiv(o[1], mg), cg), c);
  Index xi = {o[0], ci}, wi = {o[1], c};
  xi.insert(xi.end(), r.idx.begin(), r.idx.end());
  wi.insert(wi.end(), kv.begin(), kv.end());
  Shape loops = out;
  loops.push_back(cg);
  loops.insert(loops.end(), win.kernel.begin(), win.kernel.end());
  std::string acc = im.at(y, o);
  im.nest(loops, fmt::format("{0}={0}+{1}*{2}", acc, guarded(r, im.at(x, xi), "0.0"), im.at(w, wi)));
  add_bias(im, n, y);
}

void conv_transpose(Importer& im, const Node& n) {
  ValuePtr x = im.input(n, 0), w = im.input(n, 1);
  size_t d = spatial_dims(n, x, w);
  int64_t groups = n.i("group", 1), c = x->shape[1], mg = w->shape[1];
  if (groups < 1 || c % groups || w->shape[0] != c)
    n.fail(fmt::format("shape mismatch: {} input channels, weight [{}], group {}", c, fmt::join(w->shape, ","), groups));
  int64_t cg = c / groups, m = mg * groups;
  Shape kernel(w->shape.begin() + 2, w->shape.end());
  if (n.has("kernel_shape") && n.ints("kernel_shape") != kernel) n.fail("shape mismatch: kernel_shape differs from the weight's");
  auto stride = n.ints("strides", Shape(d, 1)), dil = n.ints("dilations", Shape(d, 1));
  auto pads = n.ints("pads", Shape(2 * d, 0)), opad = n.ints("output_padding", Shape(d, 0));
  auto oshape = n.ints("output_shape");
  std::string auto_pad = n.s("auto_pad", "NOTSET");
  if (stride.size() != d || dil.size() != d || pads.size() != 2 * d || opad.size() != d || (!oshape.empty() && oshape.size() != d))
    n.fail("strides, dilations, pads, output_padding and output_shape must match the spatial dimensions");
  for (const auto* v : {&stride, &dil, &pads, &opad, &oshape}) check_small(n, *v, "strides/dilations/pads/output_padding/output_shape");
  Shape out = {x->shape[0], m};
  Index o = vars(2 + d), kv = vars(d, 3 + d);
  auto cv = var(2 + d);
  std::string guard;
  Index xi = {o[0], groups == 1 ? cv : iadd(imul(idiv(o[1], mg), cg), cv)};
  for (size_t k = 0; k < d; ++k) {
    if (stride[k] < 1 || dil[k] < 1) n.fail("strides and dilations must be positive");
    int64_t full = stride[k] * (x->shape[2 + k] - 1) + opad[k] + (kernel[k] - 1) * dil[k] + 1;
    if (!oshape.empty() || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      int64_t target = oshape.empty() ? x->shape[2 + k] * stride[k] : oshape[k];
      int64_t total = full - target;
      bool upper = auto_pad == "SAME_UPPER";
      pads[k] = upper ? total / 2 : total - total / 2;
      pads[d + k] = total - pads[k];
    } else if (auto_pad == "VALID") {
      pads[k] = pads[d + k] = 0;
    } else if (auto_pad != "NOTSET") {
      n.unsupported("auto_pad", auto_pad);
    }
    int64_t size = full - pads[k] - pads[d + k];
    if (size < 1) n.fail("shape mismatch: the output would be empty");
    out.push_back(size);
    // Output o receives input i where o = i*s - pb + k*d: i = (o + pb - k*d)/s when divisible.
    auto num = isub(iadd(o[2 + k], iconst(pads[k])), imul(kv[k], dil[k]));
    auto i = idiv(num, stride[k]);
    xi.push_back(i);
    guard += fmt::format("{}{}0<={}<{}", guard.empty() ? "" : "&",
                         stride[k] == 1 ? "" : text(imod(num, stride[k])) + "==0&", text(i), x->shape[2 + k]);
  }
  ValuePtr y = im.result(n, 0, x->dtype, out);
  Index wi = {xi[1], groups == 1 ? o[1] : imod(o[1], mg)};
  wi.insert(wi.end(), kv.begin(), kv.end());
  Shape loops = out;
  loops.push_back(cg);
  loops.insert(loops.end(), kernel.begin(), kernel.end());
  std::string acc = im.at(y, o);
  im.nest(loops, fmt::format("{0}={0}+if_then_else({1},{2}*{3},0.0)", acc, guard, im.at(x, xi), im.at(w, wi)));
  add_bias(im, n, y);
}

void pool(Importer& im, const Node& n, bool max) {
  ValuePtr x = im.input(n, 0);
  size_t d = spatial_dims(n, x);
  if (!n.has("kernel_shape")) n.fail("kernel_shape is required");
  bool ceil_mode = n.i("ceil_mode", 0);
  if (max && n.i("storage_order", 0) != 0) n.unsupported("storage_order", "1");
  if (max && n.output_used(1)) n.fail("the Indices output is not supported");
  bool include_pad = max ? false : n.i("count_include_pad", 0);
  Window win = window(n, x->shape, {}, ceil_mode);
  if (!max && win.dilation != Shape(d, 1)) n.unsupported("dilations", fmt::format("[{}]", fmt::join(win.dilation, ",")));
  Shape out = {x->shape[0], x->shape[1]};
  out.insert(out.end(), win.out.begin(), win.out.end());
  ValuePtr y = im.result(n, 0, x->dtype, out);
  Index o = vars(2 + d), kv = vars(d, 2 + d);
  Reads r = window_reads(win, Index(o.begin() + 2, o.end()), kv);
  Index xi = {o[0], o[1]};
  xi.insert(xi.end(), r.idx.begin(), r.idx.end());
  Shape loops = out;
  loops.insert(loops.end(), win.kernel.begin(), win.kernel.end());
  std::string acc = im.at(y, o);
  if (max) {
    im.nest(loops, fmt::format("{0}=max({0},{1})", acc, guarded(r, im.at(x, xi), "(-inf)")));
    return;
  }
  im.nest(loops, fmt::format("{0}={0}+{1}", acc, guarded(r, im.at(x, xi), "0.0")));
  // Divisor: window elements inside the input (or inside the padded input with count_include_pad).
  std::string count;
  int64_t fixed = 1;
  for (size_t i = 0; i < d; ++i) {
    auto start = isub(imul(o[2 + i], win.stride[i]), iconst(win.pad_begin[i]));
    int64_t lo = include_pad ? -win.pad_begin[i] : 0, hi = include_pad ? win.in[i] + win.pad_end[i] : win.in[i];
    int64_t first = -win.pad_begin[i], last = (win.out[i] - 1) * win.stride[i] - win.pad_begin[i];
    if (first >= lo && last + win.kernel[i] <= hi) {
      fixed *= win.kernel[i];
      continue;
    }
    count += fmt::format("{}(min({},{})-max({},{}))", count.empty() ? "" : "*", text(iadd(start, iconst(win.kernel[i]))), hi,
                         text(start), lo);
  }
  std::string divisor = count.empty() ? std::to_string(fixed) : fixed == 1 ? count : fmt::format("{}*{}", fixed, count);
  im.nest(out, fmt::format("{0}={0}/({1})", acc, divisor));
}

void global_pool(Importer& im, const Node& n, bool max) {
  ValuePtr x = im.input(n, 0);
  if (x->shape.size() < 3) n.fail("input rank must be at least 3");
  Shape out(x->shape.size(), 1);
  out[0] = x->shape[0];
  out[1] = x->shape[1];
  ValuePtr y = im.result(n, 0, x->dtype, out);
  Index yi = {var(0), var(1)};
  for (size_t k = 2; k < out.size(); ++k) yi.push_back(iconst(0));
  std::string acc = im.at(y, yi), read = im.at(x, vars(x->shape.size()));
  im.nest(x->shape, max ? fmt::format("{0}=max({0},{1})", acc, read) : fmt::format("{0}={0}+{1}", acc, read));
  if (!max) im.nest({out[0], out[1]}, fmt::format("{0}={0}/{1}", acc, numel(x->shape) / (out[0] * out[1])));
}

}  // namespace

void add_conv_ops(OpTable& t) {
  t["Conv"] = conv;
  t["ConvTranspose"] = conv_transpose;
  t["MaxPool"] = [](Importer& im, const Node& n) { pool(im, n, true); };
  t["AveragePool"] = [](Importer& im, const Node& n) { pool(im, n, false); };
  t["GlobalMaxPool"] = [](Importer& im, const Node& n) { global_pool(im, n, true); };
  t["GlobalAveragePool"] = [](Importer& im, const Node& n) { global_pool(im, n, false); };
}

}  // namespace steptp::onnx_import
