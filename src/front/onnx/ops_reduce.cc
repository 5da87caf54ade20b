// Reductions (ReduceSum/Mean/Max/Min/Prod/L1/L2/SumSquare/LogSumExp), ArgMax/ArgMin and CumSum.
// A reduction is one accumulation nest over the input (the public reduce style,
// O=O+X / O=max(O,X) ...), followed by an in-place finishing nest where the op needs one.
#include <fmt/format.h>

#include "front/onnx/importer.h"

namespace steptp::onnx_import {
namespace {

enum class Reduce { Sum, Mean, Max, Min, Prod, L1, L2, SumSquare, LogSumExp };

// Output shape and the output subscripts, in terms of the input's loop variables.
struct Reduced {
  Shape shape;
  Index idx;
};
Reduced reduced(const Shape& in, const std::vector<bool>& red, bool keep) {
  Reduced r;
  for (size_t k = 0; k < in.size(); ++k) {
    if (!red[k]) {
      r.shape.push_back(in[k]);
      r.idx.push_back(var(k));
    } else if (keep) {
      r.shape.push_back(1);
      r.idx.push_back(iconst(0));
    }
  }
  return r;
}

Lowering reduction(Reduce op) {
  return [op](Importer& im, const Node& n) {
    ValuePtr x = im.input(n, 0);
    size_t r = x->shape.size();
    // Axes: an input from opset 13 (ReduceSum) / 18 (the others), an attribute before.
    std::vector<int64_t> axes = n.has_input(1) ? im.ints(n, 1) : n.ints("axes");
    bool keep = n.i("keepdims", 1), noop = n.i("noop_with_empty_axes", 0);
    if (axes.empty() && noop) {
      im.view(n, 0, x, x->shape, [](const Index& i) { return i; });
      return;
    }
    std::vector<bool> red(r, axes.empty());
    for (int64_t a : axes) red[axis(n, a, r, "axis")] = true;
    Reduced o = reduced(x->shape, red, keep);
    ValuePtr y = im.result(n, 0, x->dtype, o.shape);
    std::string acc = im.at(y, o.idx), xs = im.at(x, vars(r));
    int64_t count = numel(x->shape) / numel(o.shape);
    Index out_vars = vars(o.shape.size());
    std::string final_acc = im.at(y, out_vars);
    switch (op) {
      case Reduce::Sum: im.nest(x->shape, fmt::format("{0}={0}+{1}", acc, xs)); break;
      case Reduce::Mean:
        im.nest(x->shape, fmt::format("{0}={0}+{1}", acc, xs));
        im.nest(o.shape, fmt::format("{0}={0}/{1}", final_acc, count));
        break;
      case Reduce::Max: im.nest(x->shape, fmt::format("{0}=max({0},{1})", acc, xs)); break;
      case Reduce::Min: im.nest(x->shape, fmt::format("{0}=min({0},{1})", acc, xs)); break;
      case Reduce::Prod: im.nest(x->shape, fmt::format("{0}={0}*{1}", acc, xs)); break;
      case Reduce::L1: im.nest(x->shape, fmt::format("{0}={0}+abs({1})", acc, xs)); break;
      case Reduce::SumSquare: im.nest(x->shape, fmt::format("{0}={0}+{1}*{1}", acc, xs)); break;
      case Reduce::L2:
        im.nest(x->shape, fmt::format("{0}={0}+{1}*{1}", acc, xs));
        im.nest(o.shape, fmt::format("{0}=sqrt({0})", final_acc));
        break;
      case Reduce::LogSumExp: {
        ValuePtr m = im.scratch(x->dtype, o.shape);
        std::string ma = im.at(m, o.idx);
        im.nest(x->shape, fmt::format("{0}=max({0},{1})", ma, xs));
        im.nest(x->shape, fmt::format("{0}={0}+exp({1}-{2})", acc, xs, ma));
        im.nest(o.shape, fmt::format("{0}=log({0})+{1}", final_acc, im.at(m, out_vars)));
        break;
      }
    }
  };
}

// First (or with select_last_index, last) index of the extreme value: pass 1 the extreme,
// pass 2 the smallest (largest) index attaining it.
Lowering arg_extreme(bool max) {
  return [max](Importer& im, const Node& n) {
    ValuePtr x = im.input(n, 0);
    size_t r = x->shape.size(), ax = axis(n, n.i("axis", 0), r, "axis");
    bool keep = n.i("keepdims", 1), last = n.i("select_last_index", 0);
    std::vector<bool> red(r, false);
    red[ax] = true;
    Reduced o = reduced(x->shape, red, keep);
    ValuePtr ext = im.scratch(x->dtype, o.shape);
    ValuePtr y = im.result(n, 0, leir::DType::I64, o.shape);
    std::string e = im.at(ext, o.idx), xs = im.at(x, vars(r)), acc = im.at(y, o.idx);
    im.nest(x->shape, fmt::format("{0}={1}({0},{2})", e, max ? "max" : "min", xs));
    im.nest(x->shape, fmt::format("{0}={1}({0},if_then_else({2}=={3},{4},{5}))", acc, last ? "max" : "min", xs, e,
                                  text(var(ax)), last ? -1 : x->shape[ax]));
  };
}

void cumsum(Importer& im, const Node& n) {
  ValuePtr x = im.input(n, 0);
  auto axes = im.ints(n, 1);
  if (axes.size() != 1) n.fail("the axis input must hold one value");
  size_t r = x->shape.size(), ax = axis(n, axes[0], r, "axis");
  bool exclusive = n.i("exclusive", 0), reverse = n.i("reverse", 0);
  ValuePtr y = im.result(n, 0, x->dtype, x->shape);
  // y[..i..] = sum over j of x[..j..] where j <= i (reverse: j >= i; exclusive: strict).
  Index o = vars(r), xi = o;
  auto j = var(r);
  xi[ax] = j;
  std::string cmp = reverse ? (exclusive ? ">" : ">=") : (exclusive ? "<" : "<=");
  Shape loops = x->shape;
  loops.push_back(x->shape[ax]);
  std::string acc = im.at(y, o);
  im.nest(loops, fmt::format("{0}={0}+if_then_else({1}{2}{3},{4},0.0)", acc, text(j), cmp, text(o[ax]), im.at(x, xi)));
}

}  // namespace

void add_reduce_ops(OpTable& t) {
  t["ReduceSum"] = reduction(Reduce::Sum);
  t["ReduceMean"] = reduction(Reduce::Mean);
  t["ReduceMax"] = reduction(Reduce::Max);
  t["ReduceMin"] = reduction(Reduce::Min);
  t["ReduceProd"] = reduction(Reduce::Prod);
  t["ReduceL1"] = reduction(Reduce::L1);
  t["ReduceL2"] = reduction(Reduce::L2);
  t["ReduceSumSquare"] = reduction(Reduce::SumSquare);
  t["ReduceLogSumExp"] = reduction(Reduce::LogSumExp);
  t["ArgMax"] = arg_extreme(true);
  t["ArgMin"] = arg_extreme(false);
  t["CumSum"] = cumsum;
}

}  // namespace steptp::onnx_import
