// Shapes and data movement. Shape, Size, Constant, ConstantOfShape and Range give data known at
// import time; Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Slice, Split, Expand, Tile,
// Gather, Identity-like Pad modes and nearest Resize are views (no nest: a read of the result
// reads the input at mapped subscripts); Concat, constant Pad and linear Resize write nests.
#include <fmt/format.h>

#include <cmath>

#include "front/onnx/importer.h"

namespace steptp::onnx_import {
namespace {

using leir::DType;

// Reshape as a view: dims are grouped where the running products of both shapes meet, so a
// reshape that only splits or merges neighbouring dims maps each group on its own (most
// subscripts stay plain loop variables).
std::function<Index(const Index&)> reshape_map(const Shape& in, const Shape& out) {
  return [in, out](const Index& o) {
    Index idx(in.size());
    size_t i = 0, j = 0;
    while (i < in.size() || j < out.size()) {
      size_t i0 = i, j0 = j;
      int64_t pi = 1, pj = 1;
      do {
        if (pi <= pj && i < in.size()) pi *= in[i++];
        else if (j < out.size()) pj *= out[j++];
        else pi *= in[i++];
      } while (pi != pj);
      leir::ExprPtr flat = iconst(0);
      int64_t stride = 1;
      for (size_t k = j; k-- > j0;) {
        if (out[k] != 1) flat = iadd(imul(o[k], stride), flat);
        stride *= out[k];
      }
      int64_t rest = pj;
      for (size_t k = i0; k < i; ++k) {
        rest /= in[k];
        idx[k] = in[k] == 1 ? iconst(0) : k == i0 ? idiv(flat, rest) : imod(idiv(flat, rest), in[k]);
      }
    }
    return idx;
  };
}

void reshape_view(Importer& im, const Node& n, const ValuePtr& x, Shape out) {
  if (numel(out) != x->numel())
    n.fail(fmt::format("shape mismatch: cannot reshape [{}] ({} elements) to [{}]", fmt::join(x->shape, ","), x->numel(),
                       fmt::join(out, ",")));
  im.view(n, 0, x, out, reshape_map(x->shape, out));
}

void reshape(Importer& im, const Node& n) {
  ValuePtr x = im.input(n, 0);
  auto target = im.ints(n, 1);
  bool allowzero = n.i("allowzero", 0);
  Shape out;
  int infer = -1;
  int64_t known = 1;
  for (size_t k = 0; k < target.size(); ++k) {
    int64_t d = target[k];
    if (d == 0 && !allowzero) {
      if (k >= x->shape.size()) n.fail("shape mismatch: 0 copies a dimension the input does not have");
      d = x->shape[k];
    }
    if (d == -1) {
      if (infer >= 0) n.fail("shape mismatch: more than one -1 in the target shape");
      infer = static_cast<int>(k);
      d = 1;
    } else if (d < 0) {
      n.fail(fmt::format("shape mismatch: invalid target dimension {}", d));
    } else if (d > (int64_t(1) << 31) || (known *= std::max<int64_t>(d, 1)) > (int64_t(1) << 40)) {
      n.fail("shape mismatch: the target shape is too large");
    }
    out.push_back(d);
  }
  if (infer >= 0) {
    if (x->numel() % known) n.fail("shape mismatch: -1 cannot be inferred");
    out[infer] = x->numel() / known;
  }
  reshape_view(im, n, x, out);
}

void flatten(Importer& im, const Node& n) {
  ValuePtr x = im.input(n, 0);
  int64_t a = n.i("axis", 1);
  auto r = static_cast<int64_t>(x->shape.size());
  if (a < -r || a > r) n.fail(fmt::format("axis {} is out of range for rank {}", a, r));
  if (a < 0) a += r;
  Shape outer(x->shape.begin(), x->shape.begin() + a);
  reshape_view(im, n, x, {numel(outer), x->numel() / numel(outer)});
}

std::vector<int64_t> axes_of(Importer& im, const Node& n, int input) {
  return n.has_input(input) ? im.ints(n, input) : n.ints("axes");
}

void squeeze(Importer& im, const Node& n) {
  ValuePtr x = im.input(n, 0);
  auto axes = axes_of(im, n, 1);
  std::vector<bool> drop(x->shape.size(), false);
  if (axes.empty())
    for (size_t k = 0; k < x->shape.size(); ++k) drop[k] = x->shape[k] == 1;
  for (int64_t a : axes) {
    size_t k = axis(n, a, x->shape.size(), "axis");
    if (x->shape[k] != 1) n.fail(fmt::format("shape mismatch: cannot squeeze axis {} of size {}", k, x->shape[k]));
    drop[k] = true;
  }
  Shape out;
  for (size_t k = 0; k < x->shape.size(); ++k)
    if (!drop[k]) out.push_back(x->shape[k]);
  im.view(n, 0, x, out, [drop](const Index& o) {
    Index idx;
    size_t j = 0;
    for (bool d : drop) idx.push_back(d ? iconst(0) : o[j++]);
    return idx;
  });
}

void unsqueeze(Importer& im, const Node& n) {
  ValuePtr x = im.input(n, 0);
  auto axes = axes_of(im, n, 1);
  size_t r = x->shape.size() + axes.size();
  std::vector<bool> added(r, false);
  for (int64_t a : axes) {
    size_t k = axis(n, a, r, "axis");
    if (added[k]) n.fail(fmt::format("axis {} is given twice", k));
    added[k] = true;
  }
  Shape out;
  for (size_t k = 0, j = 0; k < r; ++k) out.push_back(added[k] ? 1 : x->shape[j++]);
  im.view(n, 0, x, out, [added](const Index& o) {
    Index idx;
    for (size_t k = 0; k < added.size(); ++k)
      if (!added[k]) idx.push_back(o[k]);
    return idx;
  });
}

void transpose(Importer& im, const Node& n) {
  ValuePtr x = im.input(n, 0);
  size_t r = x->shape.size();
  std::vector<int64_t> perm = n.ints("perm");
  if (perm.empty())
    for (size_t k = r; k-- > 0;) perm.push_back(static_cast<int64_t>(k));
  std::vector<bool> seen(r, false);
  if (perm.size() != r) n.fail(fmt::format("perm has {} entries for rank {}", perm.size(), r));
  Shape out;
  for (int64_t& p : perm) {
    p = axis(n, p, r, "perm entry");
    if (seen[p]) n.fail("perm is not a permutation");
    seen[p] = true;
    out.push_back(x->shape[p]);
  }
  im.view(n, 0, x, out, [perm](const Index& o) {
    Index idx(perm.size());
    for (size_t k = 0; k < perm.size(); ++k) idx[perm[k]] = o[k];
    return idx;
  });
}

// A window of `x` along each axis: in = start + o*step (Slice, Split).
void window_view(Importer& im, const Node& n, int k, const ValuePtr& x, Shape out, std::vector<int64_t> start,
                 std::vector<int64_t> step) {
  im.view(n, k, x, out, [start, step](const Index& o) {
    Index idx;
    for (size_t d = 0; d < o.size(); ++d) idx.push_back(iadd(imul(o[d], step[d]), iconst(start[d])));
    return idx;
  });
}

void slice(Importer& im, const Node& n) {
  ValuePtr x = im.input(n, 0);
  size_t r = x->shape.size();
  auto starts = im.ints(n, 1), ends = im.ints(n, 2);
  std::vector<int64_t> axes, steps;
  if (n.has_input(3)) axes = im.ints(n, 3);
  else
    for (size_t k = 0; k < starts.size(); ++k) axes.push_back(static_cast<int64_t>(k));
  steps = n.has_input(4) ? im.ints(n, 4) : std::vector<int64_t>(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    n.fail("starts, ends, axes and steps must have the same length");
  Shape out = x->shape;
  std::vector<int64_t> start(r, 0), step(r, 1);
  for (size_t i = 0; i < starts.size(); ++i) {
    size_t a = axis(n, axes[i], r, "axis");
    int64_t dim = x->shape[a], s = starts[i], e = ends[i], st = steps[i];
    if (st == 0) n.fail("a step of 0 is invalid");
    st = std::clamp<int64_t>(st, -dim - 1, dim + 1);  // a longer step takes one element either way
    if (s < 0) s += dim;
    if (e < 0) e += dim;
    if (st > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
    } else {
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
    }
    int64_t len = st > 0 ? (e - s + st - 1) / st : (s - e - st - 1) / -st;
    if (len <= 0) n.fail(fmt::format("the slice of axis {} is empty; empty tensors are not supported", a));
    out[a] = len;
    start[a] = s;
    step[a] = st;
  }
  window_view(im, n, 0, x, out, start, step);
}

void split(Importer& im, const Node& n) {
  ValuePtr x = im.input(n, 0);
  size_t r = x->shape.size(), a = axis(n, n.i("axis", 0), r, "axis");
  std::vector<int64_t> parts = n.has_input(1) ? im.ints(n, 1) : n.ints("split");
  int outs = n.num_outputs();
  int64_t num = n.i("num_outputs", outs);
  if (num != outs) n.fail(fmt::format("num_outputs is {} but the node has {} outputs", num, outs));
  if (parts.empty()) {
    int64_t each = (x->shape[a] + outs - 1) / outs;
    for (int k = 0; k < outs; ++k) parts.push_back(std::min(each, x->shape[a] - each * k));
  }
  check_small(n, parts, "split");
  int64_t total = 0;
  for (int64_t p : parts) total += p;
  if (static_cast<int>(parts.size()) != outs || total != x->shape[a])
    n.fail(fmt::format("shape mismatch: split sizes [{}] do not cover axis {} of size {}", fmt::join(parts, ","), a, x->shape[a]));
  int64_t off = 0;
  for (int k = 0; k < outs; ++k) {
    if (parts[k] <= 0) n.fail("empty split parts are not supported");
    Shape out = x->shape;
    out[a] = parts[k];
    std::vector<int64_t> start(r, 0);
    start[a] = off;
    window_view(im, n, k, x, out, start, std::vector<int64_t>(r, 1));
    off += parts[k];
  }
}

void expand(Importer& im, const Node& n) {
  ValuePtr x = im.input(n, 0);
  Shape out = broadcast(n, {x->shape, im.ints(n, 1)});
  Shape in = x->shape;
  im.view(n, 0, x, out, [in, r = out.size()](const Index& o) {
    Index idx;
    for (size_t k = 0; k < in.size(); ++k) idx.push_back(in[k] == 1 ? iconst(0) : o[r - in.size() + k]);
    return idx;
  });
}

void tile(Importer& im, const Node& n) {
  ValuePtr x = im.input(n, 0);
  auto rep = im.ints(n, 1);
  if (rep.size() != x->shape.size()) n.fail("repeats must have one entry per dimension");
  check_small(n, rep, "repeats");
  Shape out = x->shape;
  for (size_t k = 0; k < out.size(); ++k) {
    if (rep[k] < 1) n.fail("repeats must be positive");
    out[k] *= rep[k];
  }
  Shape in = x->shape;
  im.view(n, 0, x, out, [in](const Index& o) {
    Index idx;
    for (size_t k = 0; k < in.size(); ++k) idx.push_back(imod(o[k], in[k]));
    return idx;
  });
}

void gather(Importer& im, const Node& n) {
  ValuePtr x = im.input(n, 0), ind = im.input(n, 1);
  size_t r = x->shape.size(), a = axis(n, n.i("axis", 0), r, "axis"), q = ind->shape.size();
  int64_t dim = x->shape[a];
  if (leir::is_floating(ind->dtype) || ind->dtype == DType::Bool) n.fail("indices must be integers");
  if (ind->data) {  // negative indices resolved now; out-of-range ones are errors
    std::vector<double> d = *ind->data;
    for (double& v : d) {
      if (v < -dim || v >= dim) n.fail(fmt::format("index {} is out of range for axis {} of size {}", v, a, dim));
      if (v < 0) v += dim;
    }
    ind = Importer::table(ind->dtype, ind->shape, d);
  }
  Shape out(x->shape.begin(), x->shape.begin() + a);
  out.insert(out.end(), ind->shape.begin(), ind->shape.end());
  out.insert(out.end(), x->shape.begin() + a + 1, x->shape.end());
  bool wrap = !ind->data;  // run-time indices may be negative: i % dim maps [-dim, dim) into range
  im.view(n, 0, x, out, [&im, ind, a, q, dim, wrap](const Index& o) {
    Index idx(o.begin(), o.begin() + a);
    auto i = im.access(ind, Index(o.begin() + a, o.begin() + a + q));
    idx.push_back(wrap ? imod(i, dim) : i);
    idx.insert(idx.end(), o.begin() + a + q, o.end());
    return idx;
  });
}

void concat(Importer& im, const Node& n) {
  int count = n.proto().input_size();
  if (count < 1) n.fail("expects at least one input");
  ValuePtr first = im.input(n, 0);
  size_t r = first->shape.size(), a = axis(n, n.i("axis", 0), r, "axis");
  Shape out = first->shape;
  out[a] = 0;
  for (int k = 0; k < count; ++k) {
    ValuePtr v = im.input(n, k);
    bool ok = v->shape.size() == r;
    for (size_t d = 0; ok && d < r; ++d) ok = d == a || v->shape[d] == out[d];
    if (!ok) n.fail(fmt::format("shape mismatch: input {} has shape [{}]", k, fmt::join(v->shape, ",")));
    out[a] += v->shape[a];
  }
  ValuePtr y = im.result(n, 0, first->dtype, out);
  int64_t off = 0;
  for (int k = 0; k < count; ++k) {
    ValuePtr v = im.input(n, k);
    Index o = vars(r), yi = o;
    yi[a] = iadd(o[a], iconst(off));
    im.nest(v->shape, fmt::format("{}={}", im.at(y, yi), im.at(v, o)));
    off += v->shape[a];
  }
}

void pad(Importer& im, const Node& n) {
  ValuePtr x = im.input(n, 0);
  size_t r = x->shape.size();
  auto pads = im.ints(n, 1);
  std::vector<int64_t> axes;
  if (n.has_input(3)) axes = im.ints(n, 3);
  else
    for (size_t k = 0; k < r; ++k) axes.push_back(static_cast<int64_t>(k));
  if (pads.size() != 2 * axes.size()) n.fail("pads must hold two entries per padded axis");
  check_small(n, pads, "pads");
  std::vector<int64_t> before(r, 0), after(r, 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    size_t k = axis(n, axes[i], r, "axis");
    before[k] = pads[i];
    after[k] = pads[axes.size() + i];
  }
  std::string mode = n.s("mode", "constant");
  Shape out = x->shape;
  for (size_t k = 0; k < r; ++k) {
    out[k] += before[k] + after[k];
    if (out[k] <= 0) n.fail("shape mismatch: the padded tensor would be empty");
  }
  if (mode == "constant") {
    double fill = im.scalar(n, 2).value_or(0.0);
    ValuePtr y = im.result(n, 0, x->dtype, out);
    Index o = vars(r), xi;
    std::string guard;
    for (size_t k = 0; k < r; ++k) {
      xi.push_back(isub(o[k], iconst(before[k])));
      if (before[k] > 0 || after[k] > 0)
        guard += fmt::format("{}0<={}<{}", guard.empty() ? "" : "&", text(xi.back()), x->shape[k]);
    }
    std::string read = im.at(x, xi);
    im.fill(y, guard.empty() ? read : fmt::format("if_then_else({},{},{})", guard, read, lit(fill)));
    return;
  }
  if (mode != "edge" && mode != "reflect") n.unsupported("mode", "'" + mode + "'");
  check_shape(n, out);
  // edge / reflect: one source-index table per padded axis, read as a gather.
  std::vector<ValuePtr> tables(r);
  for (size_t k = 0; k < r; ++k) {
    if (before[k] == 0 && after[k] == 0) continue;
    int64_t dim = x->shape[k];
    if (mode == "reflect" && dim < 2) n.fail("reflect padding needs at least 2 elements along a padded axis");
    std::vector<double> src;
    for (int64_t o = 0; o < out[k]; ++o) {
      int64_t i = o - before[k];
      if (mode == "edge") i = std::clamp<int64_t>(i, 0, dim - 1);
      else {
        int64_t period = 2 * (dim - 1);
        i = ((i % period) + period) % period;
        if (i >= dim) i = period - i;
      }
      src.push_back(static_cast<double>(i));
    }
    tables[k] = Importer::table(DType::I64, {out[k]}, src);
  }
  im.view(n, 0, x, out, [&im, tables](const Index& o) {
    Index idx;
    for (size_t k = 0; k < o.size(); ++k) idx.push_back(tables[k] ? im.access(tables[k], {o[k]}) : o[k]);
    return idx;
  });
}

void resize(Importer& im, const Node& n) {
  ValuePtr x = im.input(n, 0);
  size_t r = x->shape.size();
  std::string mode = n.s("mode", "nearest"), ctm = n.s("coordinate_transformation_mode", "half_pixel");
  std::string nearest = n.s("nearest_mode", "round_prefer_floor");
  n.f("cubic_coeff_a", -0.75);
  if (mode != "nearest" && mode != "linear") n.unsupported("mode", "'" + mode + "'");
  if (n.i("exclude_outside", 0)) n.unsupported("exclude_outside", "1");
  if (n.i("antialias", 0)) n.unsupported("antialias", "1");
  if (n.has("axes")) n.unsupported("axes", "(only all axes)");
  if (n.s("keep_aspect_ratio_policy", "stretch") != "stretch") n.unsupported("keep_aspect_ratio_policy", n.s("keep_aspect_ratio_policy", ""));
  n.f("extrapolation_value", 0.0);
  std::vector<double> scales;
  Shape out;
  if (n.has_input(3)) {
    out = im.ints(n, 3);
    for (size_t k = 0; k < out.size() && k < r; ++k) scales.push_back(double(out[k]) / double(x->shape[k]));
  } else if (n.has_input(2)) {
    ValuePtr s = im.input(n, 2);
    if (!s->data) n.fail("input 2 (scales) must be known when importing");
    scales = *s->data;
    for (size_t k = 0; k < scales.size() && k < r; ++k) out.push_back(to_int(std::floor(x->shape[k] * scales[k])));
  } else {
    n.fail("one of scales and sizes is required");
  }
  if (out.size() != r || scales.size() != r) n.fail(fmt::format("scales/sizes must have {} entries", r));
  for (double sc : scales)
    if (!(sc > 0) || !std::isfinite(sc)) n.fail("scales must be positive and finite");
  check_shape(n, out);
  // Source coordinate of output position o along axis k (ONNX coordinate_transformation_mode).
  auto source = [&](size_t k, int64_t o) -> double {
    double in = double(x->shape[k]), len = double(out[k]), s = scales[k];
    if (ctm == "half_pixel") return (o + 0.5) / s - 0.5;
    if (ctm == "pytorch_half_pixel") return len > 1 ? (o + 0.5) / s - 0.5 : 0.0;
    if (ctm == "align_corners") return len == 1 ? 0.0 : o * (in - 1) / (len - 1);
    if (ctm == "asymmetric") return o / s;
    n.unsupported("coordinate_transformation_mode", "'" + ctm + "'");
  };
  std::vector<ValuePtr> lo(r), hi(r), weight(r);
  for (size_t k = 0; k < r; ++k) {
    int64_t dim = x->shape[k];
    std::vector<double> l, h, w;
    bool identity = out[k] == dim;
    for (int64_t o = 0; o < out[k]; ++o) {
      double c = source(k, o);
      int64_t i;
      if (mode == "nearest") {
        if (nearest == "round_prefer_floor") i = c - std::floor(c) == 0.5 ? to_int(std::floor(c)) : to_int(std::round(c));
        else if (nearest == "round_prefer_ceil") i = to_int(std::round(c));
        else if (nearest == "floor") i = to_int(std::floor(c));
        else if (nearest == "ceil") i = to_int(std::ceil(c));
        else n.unsupported("nearest_mode", "'" + nearest + "'");
        i = std::clamp<int64_t>(i, 0, dim - 1);
        l.push_back(double(i));
        identity = identity && i == o;
      } else {
        c = std::clamp(c, 0.0, double(dim - 1));
        i = to_int(std::floor(c));
        l.push_back(double(i));
        h.push_back(double(std::min(i + 1, dim - 1)));
        w.push_back(c - double(i));
        identity = identity && i == o && c == double(i);
      }
    }
    if (identity) continue;
    lo[k] = Importer::table(DType::I64, {out[k]}, l);
    if (mode == "linear") {
      hi[k] = Importer::table(DType::I64, {out[k]}, h);
      weight[k] = Importer::table(im.float_type(), {out[k]}, w);
    }
  }
  if (mode == "nearest") {
    im.view(n, 0, x, out, [&im, lo](const Index& o) {
      Index idx;
      for (size_t k = 0; k < o.size(); ++k) idx.push_back(lo[k] ? im.access(lo[k], {o[k]}) : o[k]);
      return idx;
    });
    return;
  }
  // Linear: the sum over the 2^m corners of the m resized axes, each weighted by its product.
  ValuePtr y = im.result(n, 0, x->dtype, out);
  Index o = vars(r);
  std::vector<size_t> axes;
  for (size_t k = 0; k < r; ++k)
    if (lo[k]) axes.push_back(k);
  std::string sum;
  for (size_t corner = 0; corner < (size_t(1) << axes.size()); ++corner) {
    Index idx = o;
    std::string term;
    for (size_t j = 0; j < axes.size(); ++j) {
      size_t k = axes[j];
      bool upper = (corner >> j) & 1;
      idx[k] = im.access(upper ? hi[k] : lo[k], {o[k]});
      std::string w = im.at(weight[k], {o[k]});
      term += (upper ? w : "(1.0-" + w + ")") + "*";
    }
    sum += (sum.empty() ? "" : "+") + term + im.at(x, idx);
  }
  im.fill(y, sum);
}

}  // namespace

void add_shape_ops(OpTable& t) {
  t["Shape"] = [](Importer& im, const Node& n) {
    ValuePtr x = im.input(n, 0);
    auto r = static_cast<int64_t>(x->shape.size());
    int64_t s = n.i("start", 0), e = n.i("end", r);
    s = std::clamp<int64_t>(s < 0 ? s + r : s, 0, r);
    e = std::clamp<int64_t>(e < 0 ? e + r : e, 0, r);
    std::vector<double> dims;
    for (int64_t k = s; k < e; ++k) dims.push_back(double(x->shape[k]));
    im.known(n, 0, DType::I64, {int64_t(dims.size())}, dims);
  };
  t["Size"] = [](Importer& im, const Node& n) { im.known(n, 0, DType::I64, {}, {double(im.input(n, 0)->numel())}); };
  t["Constant"] = [](Importer& im, const Node& n) {
    if (const auto* tp = n.tensor("value")) {
      im.known(n, 0, dtype_of(tp->data_type(), im.float_type(), n.where()), tensor_shape(*tp), tensor_values(*tp, n.where()));
    } else if (n.has("value_float")) {
      im.known(n, 0, im.float_type(), {}, {n.f("value_float", 0)});
    } else if (n.has("value_int")) {
      im.known(n, 0, DType::I64, {}, {double(n.i("value_int", 0))});
    } else if (n.has("value_floats")) {
      auto v = n.floats("value_floats");
      im.known(n, 0, im.float_type(), {int64_t(v.size())}, v);
    } else if (n.has("value_ints")) {
      auto v = n.ints("value_ints");
      im.known(n, 0, DType::I64, {int64_t(v.size())}, std::vector<double>(v.begin(), v.end()));
    } else {
      n.fail("needs a value, value_float(s) or value_int(s) attribute (sparse and string values are not supported)");
    }
  };
  t["ConstantOfShape"] = [](Importer& im, const Node& n) {
    Shape shape = im.ints(n, 0);
    for (int64_t d : shape)
      if (d <= 0 || d > (1 << 24)) n.fail(fmt::format("shape [{}] is empty or too large", fmt::join(shape, ",")));
    const auto* tp = n.tensor("value");
    DType dt = tp ? dtype_of(tp->data_type(), im.float_type(), n.where()) : im.float_type();
    double v = tp ? tensor_values(*tp, n.where()).at(0) : 0.0;
    im.known(n, 0, dt, shape, std::vector<double>(numel(shape), v));
  };
  t["Range"] = [](Importer& im, const Node& n) {
    auto start = im.scalar(n, 0), limit = im.scalar(n, 1), delta = im.scalar(n, 2);
    if (!start || !limit || !delta || *delta == 0) n.fail("start, limit and a non-zero delta must be known scalars");
    int64_t count = to_int(std::max(0.0, std::ceil((*limit - *start) / *delta)));
    if (count == 0 || count > (1 << 24)) n.fail("the range is empty or too large");
    std::vector<double> v;
    for (int64_t k = 0; k < count; ++k) v.push_back(*start + double(k) * *delta);
    im.known(n, 0, im.input(n, 0)->dtype, {count}, v);
  };
  t["Reshape"] = reshape;
  t["Flatten"] = flatten;
  t["Squeeze"] = squeeze;
  t["Unsqueeze"] = unsqueeze;
  t["Transpose"] = transpose;
  t["Slice"] = slice;
  t["Split"] = split;
  t["Expand"] = expand;
  t["Tile"] = tile;
  t["Gather"] = gather;
  t["Concat"] = concat;
  t["Pad"] = pad;
  t["Resize"] = resize;
}

}  // namespace steptp::onnx_import
