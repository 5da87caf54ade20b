// Normalizations, softmax and the losses built on it: BatchNormalization, LayerNormalization,
// InstanceNormalization, Softmax, LogSoftmax, NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss. Statistics go to temps indexed by the kept dims
// (a constant 0 where a reduced dim is kept with size 1), then one nest writes the result.
#include <fmt/format.h>

#include "front/onnx/importer.h"

namespace steptp::onnx_import {
namespace {

// Mean and biased variance of `x` over the dims marked in `reduced`, in temps shaped like the
// kept dims; `at` reads them from inside a nest over x's shape.
struct Moments {
  ValuePtr mean, var;
  Index at;
};
Moments moments(Importer& im, const ValuePtr& x, const std::vector<bool>& reduced) {
  Shape kept;
  Index at;
  for (size_t k = 0; k < x->shape.size(); ++k)
    if (!reduced[k]) {
      kept.push_back(x->shape[k]);
      at.push_back(var(k));
    }
  int64_t count = numel(x->shape) / numel(kept);
  Moments m{im.scratch(x->dtype, kept), im.scratch(x->dtype, kept), at};
  std::string xs = im.at(x, vars(x->shape.size())), mean = im.at(m.mean, at), var = im.at(m.var, at);
  Index own = vars(kept.size());
  im.nest(x->shape, fmt::format("{0}={0}+{1}", mean, xs));
  im.nest(kept, fmt::format("{0}={0}/{1}", im.at(m.mean, own), count));
  im.nest(x->shape, fmt::format("{0}={0}+({1}-{2})*({1}-{2})", var, xs, mean));
  im.nest(kept, fmt::format("{0}={0}/{1}", im.at(m.var, own), count));
  return m;
}

// Dims from `first` on (layer and instance norm).
std::vector<bool> suffix(size_t rank, size_t first) {
  std::vector<bool> r(rank, false);
  for (size_t k = first; k < rank; ++k) r[k] = true;
  return r;
}

void no_stash_outputs(const Node& n) {
  for (int k = 1; k < n.num_outputs(); ++k)
    if (n.output_used(k)) n.fail(fmt::format("output {} (training statistics) is not supported", k));
}

// Inference normalizes with the running statistics (inputs 3 and 4); training mode with the
// batch's own mean and biased variance over every dim but the channel (the updated running
// statistics, outputs 1 and 2, are not supported).
void batch_norm(Importer& im, const Node& n) {
  bool training = n.i("training_mode", 0);
  n.f("momentum", 0.9);
  no_stash_outputs(n);
  ValuePtr x = im.input(n, 0);
  if (x->shape.size() < 2) n.fail("input rank must be at least 2");
  for (int k = 1; k <= 4; ++k)
    if (im.input(n, k)->shape != Shape{x->shape[1]})
      n.fail(fmt::format("shape mismatch: input {} must have shape [{}]", k, x->shape[1]));
  double eps = n.f("epsilon", 1e-5);
  Index c = {var(1)};
  std::string mean = im.at(im.input(n, 3), c), variance = im.at(im.input(n, 4), c);
  if (training) {
    std::vector<bool> reduced(x->shape.size(), true);
    reduced[1] = false;
    Moments m = moments(im, x, reduced);
    mean = im.at(m.mean, m.at);
    variance = im.at(m.var, m.at);
  }
  ValuePtr y = im.result(n, 0, x->dtype, x->shape);
  im.fill(y, fmt::format("({}-{})/sqrt({}+{})*{}+{}", im.at(x, vars(x->shape.size())), mean, variance, lit(eps),
                         im.at(im.input(n, 1), c), im.at(im.input(n, 2), c)));
}

void layer_norm(Importer& im, const Node& n) {
  no_stash_outputs(n);
  if (n.i("stash_type", 1) != 1) n.unsupported("stash_type", std::to_string(n.i("stash_type", 1)));
  ValuePtr x = im.input(n, 0);
  size_t first = axis(n, n.i("axis", -1), x->shape.size(), "axis");
  double eps = n.f("epsilon", 1e-5);
  size_t r = x->shape.size();
  Moments m = moments(im, x, suffix(r, first));
  ValuePtr y = im.result(n, 0, x->dtype, x->shape);
  std::string f = fmt::format("({}-{})/sqrt({}+{})", im.at(x, vars(r)), im.at(m.mean, m.at), im.at(m.var, m.at), lit(eps));
  for (int k = 1; k <= 2; ++k) {
    if (!n.has_input(k)) continue;
    ValuePtr p = im.input(n, k);
    broadcast(n, {x->shape, p->shape});
    f += (k == 1 ? "*" : "+") + im.at_broadcast(p, r);
  }
  im.fill(y, f);
}

void instance_norm(Importer& im, const Node& n) {
  ValuePtr x = im.input(n, 0), scale = im.input(n, 1), bias = im.input(n, 2);
  if (x->shape.size() < 3) n.fail("input rank must be at least 3");
  if (scale->shape != Shape{x->shape[1]} || bias->shape != Shape{x->shape[1]})
    n.fail(fmt::format("shape mismatch: scale and bias must have shape [{}]", x->shape[1]));
  double eps = n.f("epsilon", 1e-5);
  Moments m = moments(im, x, suffix(x->shape.size(), 2));
  ValuePtr y = im.result(n, 0, x->dtype, x->shape);
  Index c = {var(1)};
  im.fill(y, fmt::format("({}-{})/sqrt({}+{})*{}+{}", im.at(x, vars(x->shape.size())), im.at(m.mean, m.at),
                         im.at(m.var, m.at), lit(eps), im.at(scale, c), im.at(bias, c)));
}

// Softmax (or log-softmax) of `x` over `ax` into `y` (opset 13 semantics): max-shifted, as the
// public softmax.
void softmax_into(Importer& im, const ValuePtr& x, size_t ax, bool log, const ValuePtr& y) {
  size_t r = x->shape.size();
  Shape stat = x->shape;
  stat[ax] = 1;
  Index all = vars(r), si = all;
  si[ax] = iconst(0);
  ValuePtr mx = im.scratch(x->dtype, stat), sum = im.scratch(x->dtype, stat);
  std::string xs = im.at(x, all), m = im.at(mx, si), s = im.at(sum, si);
  im.nest(x->shape, fmt::format("{0}=max({0},{1})", m, xs));
  im.nest(x->shape, fmt::format("{0}={0}+exp({1}-{2})", s, xs, m));
  im.fill(y, log ? fmt::format("{}-{}-log({})", xs, m, s) : fmt::format("exp({}-{})/{}", xs, m, s));
}

void softmax(Importer& im, const Node& n, bool log) {
  ValuePtr x = im.input(n, 0);
  size_t ax = axis(n, n.i("axis", -1), x->shape.size(), "axis");
  softmax_into(im, x, ax, log, im.result(n, 0, x->dtype, x->shape));
}

// Negative log-likelihood of log-probabilities `logp` [N,C,d...] at integer targets [N,d...],
// with optional class weights, ignore_index and reduction none / sum / mean (weighted mean).
void nll(Importer& im, const Node& n, const ValuePtr& logp, const ValuePtr& target, const ValuePtr& weight) {
  if (logp->shape.size() < 2) n.fail("the input needs rank >= 2 ([N, C, ...])");
  Shape tshape = logp->shape;
  tshape.erase(tshape.begin() + 1);
  if (target->shape != tshape) n.fail(fmt::format("shape mismatch: target must have shape [{}]", fmt::join(tshape, ",")));
  if (weight && weight->shape != Shape{logp->shape[1]}) n.fail("shape mismatch: weight must have shape [C]");
  std::string reduction = n.s("reduction", "mean");
  bool has_ignore = n.has("ignore_index");
  int64_t ignore = n.i("ignore_index", 0);
  size_t r = tshape.size();
  Index ti = vars(r), xi = ti;
  auto t = im.access(target, ti);
  xi.insert(xi.begin() + 1, t);
  std::string w = weight ? im.at(weight, {t}) : "1.0";
  std::string keep = has_ignore ? fmt::format("{}!={}", text(t), ignore) : "";
  auto masked = [&](const std::string& e) { return keep.empty() ? e : fmt::format("if_then_else({},{},0.0)", keep, e); };
  std::string loss = masked(fmt::format("-{}*{}", im.at(logp, xi), w));
  if (reduction == "none") {
    im.fill(im.result(n, 0, logp->dtype, tshape), loss);
    return;
  }
  if (reduction != "sum" && reduction != "mean") n.unsupported("reduction", "'" + reduction + "'");
  ValuePtr y = im.result(n, 0, logp->dtype, {});
  im.nest(tshape, fmt::format("{0}={0}+{1}", im.at(y, {}), loss));
  if (reduction == "sum") return;
  if (!weight && !has_ignore) {
    im.nest({}, fmt::format("{0}={0}/{1}", im.at(y, {}), numel(tshape)));
    return;
  }
  ValuePtr total = im.scratch(logp->dtype, {});
  im.nest(tshape, fmt::format("{0}={0}+{1}", im.at(total, {}), masked(w)));
  im.nest({}, fmt::format("{0}={0}/{1}", im.at(y, {}), im.at(total, {})));
}

void nll_loss(Importer& im, const Node& n) {
  nll(im, n, im.input(n, 0), im.input(n, 1), n.has_input(2) ? im.input(n, 2) : nullptr);
}

// Cross-entropy = NLL of the log-softmax over the class axis; output 1 is that log-softmax.
void softmax_cross_entropy(Importer& im, const Node& n) {
  ValuePtr x = im.input(n, 0);
  if (x->shape.size() < 2) n.fail("the scores need rank >= 2 ([N, C, ...])");
  ValuePtr logp = n.output_used(1) ? im.result(n, 1, x->dtype, x->shape) : im.scratch(x->dtype, x->shape);
  softmax_into(im, x, 1, true, logp);
  nll(im, n, logp, im.input(n, 1), n.has_input(2) ? im.input(n, 2) : nullptr);
}

}  // namespace

void add_norm_ops(OpTable& t) {
  t["BatchNormalization"] = batch_norm;
  t["LayerNormalization"] = layer_norm;
  t["InstanceNormalization"] = instance_norm;
  t["Softmax"] = [](Importer& im, const Node& n) { softmax(im, n, false); };
  t["LogSoftmax"] = [](Importer& im, const Node& n) { softmax(im, n, true); };
  t["NegativeLogLikelihoodLoss"] = nll_loss;
  t["SoftmaxCrossEntropyLoss"] = softmax_cross_entropy;
}

}  // namespace steptp::onnx_import
