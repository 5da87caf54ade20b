// Composite generator (composite.h). A composite starts from one fresh input in one of five
// domains (features [b,f], sequence [b,t,e], signal [b,c,l], image [b,c,h,w], volume
// [b,c,d,h,w]), applies a heavy component (GEMM, matmul, BMM, convolution, transposed
// convolution, attention, or a shared-weight pair) and then 1-4 further components drawn among
// those whose shape preconditions hold. A component that would exceed the size class's element or
// work budget is rejected and another drawn.
//
// Numerical hygiene, so that the PyTorch agreement is a property of the program rather than of
// luck: exp only follows a bounded activation (no overflow), reductions/softmax/norms only run over
// groups of >= 2 elements (a normalized constant group would amplify rounding noise).
#include "front/workloads/composite.h"

#include <fmt/format.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "base/error.h"
#include "ir/interp/inputs.h"
#include "ir/leir/program_io.h"
#include "front/workloads/level2_chain.h"

namespace steptp::workloads {
namespace {

using namespace chain;  // NOLINT: the operator vocabulary
using interp::Rng;

struct Budget {
  std::pair<int64_t, int64_t> batch, features, seq, channels, side, vol_side, length, heads_dim;
  int64_t max_numel, max_work;
};

Budget budget(SizeClass s) {
  switch (s) {
    case SizeClass::Tiny:
      return {{2, 2}, {3, 10}, {3, 6}, {2, 4}, {5, 9}, {3, 5}, {6, 12}, {1, 3}, 4096, 400000};
    case SizeClass::Small:
      return {{2, 8}, {16, 64}, {8, 16}, {3, 8}, {12, 24}, {6, 10}, {32, 64}, {2, 8}, 1 << 18, 1 << 26};
    case SizeClass::Default:
    case SizeClass::Bench:
      break;
  }
  return {{16, 128}, {256, 1024}, {64, 256}, {3, 32}, {32, 64}, {8, 16}, {128, 512}, {16, 64},
          int64_t{1} << 40, int64_t{1} << 50};
}

int64_t draw(Rng& r, std::pair<int64_t, int64_t> range) { return r.uniform_int(range.first, range.second); }
template <typename T>
const T& choose(Rng& r, const std::vector<T>& v) {
  return v[static_cast<size_t>(r.uniform_int(0, static_cast<int64_t>(v.size()) - 1))];
}
bool coin(Rng& r, double p) { return r.uniform() < p; }

int64_t numel(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}
int64_t spatial_numel(const Value& x) {
  int64_t n = 1;
  for (size_t i = 2; i < x.rank(); ++i) n *= x.shape[i];
  return n;
}
int64_t min_spatial(const Value& x) {
  int64_t m = INT64_MAX;
  for (size_t i = 2; i < x.rank(); ++i) m = std::min(m, x.shape[i]);
  return m;
}
std::vector<int64_t> divisors(int64_t n) {
  std::vector<int64_t> d;
  for (int64_t k = 1; k <= n; ++k)
    if (n % k == 0) d.push_back(k);
  return d;
}
// Dims >= 1 with at least 2 elements (reductions, softmax).
std::vector<size_t> reducible_dims(const Value& x) {
  std::vector<size_t> d;
  for (size_t i = 1; i < x.rank(); ++i)
    if (x.shape[i] >= 2) d.push_back(i);
  return d;
}

struct State {
  Chain c;
  Value x;
  std::vector<Value> history;  // earlier results, candidates for residual adds
  std::vector<std::string> names;
  bool bounded = false;  // x is the output of a bounded activation (exp is safe)
};

struct Component {
  std::string name;
  bool heavy;  // may start a composite
  int weight;  // relative draw frequency among the applicable components
  std::function<bool(const State&)> ok;
  // Applies the component (drawing its own hyper-values) and returns its display name.
  std::function<std::string(State&, Rng&, const Budget&)> apply;
};

Value conv_any(State& st, Rng& r, const Budget& b, bool transposed) {
  const Value& x = st.x;
  size_t nd = x.rank() - 2;
  int64_t cout = draw(r, b.channels);
  bool bias = coin(r, 0.7);
  if (transposed) {
    int64_t s = coin(r, 0.5) ? 2 : 1;
    int64_t k = r.uniform_int(std::max<int64_t>(s, 2), 3);
    return conv_transpose(st.c, x, cout, std::vector<Hp>(nd, Hp(k)), s, bias);
  }
  int64_t pad = coin(r, 0.3) ? 1 : 0;
  int64_t k = r.uniform_int(1, std::min<int64_t>(3, min_spatial(x) + 2 * pad));
  if (k == 1) pad = 0;
  int64_t stride = coin(r, 0.2) && min_spatial(x) + 2 * pad - k >= 2 ? 2 : 1;
  return conv(st.c, x, cout, std::vector<Hp>(nd, Hp(k)), stride, pad, 1, bias);
}

std::vector<Component> components() {
  std::vector<Component> cs;
  auto rank_in = [](size_t lo, size_t hi) {
    return [=](const State& s) { return s.x.rank() >= lo && s.x.rank() <= hi; };
  };
  // ---- heavy components ----
  cs.push_back({"Gemm", true, 2, rank_in(2, 4), [](State& s, Rng& r, const Budget& b) {
    s.x = gemm(s.c, s.x, draw(r, b.features), coin(r, 0.8));
    return std::string("Gemm");
  }});
  cs.push_back({"Matmul", true, 1, rank_in(2, 4), [](State& s, Rng& r, const Budget& b) {
    Value w = s.c.input({s.x.shape.back(), draw(r, b.features)});
    s.x = matmul(s.c, s.x, w);
    return std::string("Matmul");
  }});
  cs.push_back({"BMM", true, 2, rank_in(3, 3), [](State& s, Rng& r, const Budget& b) {
    Value y = s.c.input({s.x.shape[0], s.x.shape[2], draw(r, b.features)});
    s.x = bmm(s.c, s.x, y);
    return std::string("BMM");
  }});
  cs.push_back({"Conv", true, 4, [](const State& s) { return s.x.rank() >= 3 && s.x.rank() <= 5; },
                [](State& s, Rng& r, const Budget& b) {
    size_t nd = s.x.rank() - 2;
    s.x = conv_any(s, r, b, false);
    return fmt::format("Conv{}d", nd);
  }});
  cs.push_back({"ConvTranspose", true, 2,
                [](const State& s) { return s.x.rank() >= 4 && s.x.rank() <= 5; },
                [](State& s, Rng& r, const Budget& b) {
    size_t nd = s.x.rank() - 2;
    s.x = conv_any(s, r, b, true);
    return fmt::format("ConvTranspose{}d", nd);
  }});
  cs.push_back({"Attention", true, 5, rank_in(3, 3), [](State& s, Rng& r, const Budget&) {
    int64_t e = s.x.shape[2];
    auto hs = divisors(e);
    int64_t heads = choose(r, hs);
    auto kind = static_cast<Attention>(r.uniform_int(0, 2));
    int64_t kv = kind == Attention::GQA ? choose(r, divisors(heads)) : 1;
    bool causal = kind != Attention::MHA || coin(r, 0.5);
    s.x = attention(s.c, s.x, kind, heads, kv, causal);
    static const char* kNames[] = {"MHA", "MQA", "GQA"};
    return std::string(kNames[static_cast<int>(kind)]) + (causal ? "Causal" : "");
  }});
  cs.push_back({"ConvPair", true, 1,
                [](const State& s) { return s.x.rank() >= 3 && s.x.rank() <= 5 && s.history.size() == 1; },
                [](State& s, Rng& r, const Budget& b) {
    // One convolution module applied to two inputs, then summed (conv2d_conv2d_padding).
    size_t nd = s.x.rank() - 2;
    Value other = s.c.input(s.x.shape);
    int64_t pad = coin(r, 0.5) ? 1 : 0;
    int64_t k = r.uniform_int(1, std::min<int64_t>(3, min_spatial(s.x) + 2 * pad));
    if (k == 1) pad = 0;
    int64_t cout = draw(r, b.channels);
    std::vector<Hp> kern(nd, Hp(k));
    Value w = conv_weight(s.c, cout, s.x.shape[1], kern);
    Value y1 = conv(s.c, s.x, cout, kern, 1, pad, 1, false, &w);
    Value y2 = conv(s.c, other, cout, kern, 1, pad, 1, false, &w);
    s.x = binary(s.c, y1, y2, ScalarOp::Add);
    return fmt::format("Conv{}dPair", nd);
  }});

  // ---- elementwise ----
  struct Act {
    const char* name;
    Value (*f)(Chain&, const Value&);
    bool bounded;
  };
  static const Act kActs[] = {
      {"ReLU", relu, false},          {"GELU", gelu, false},
      {"Sigmoid", sigmoid, true},     {"Swish", swish, false},
      {"Tanh", tanh, true},           {"Mish", mish, false},
      {"HardSwish", hardswish, false}, {"HardSigmoid", hardsigmoid, true},
      {"Softplus", softplus, false},
  };
  for (const Act& a : kActs) {
    cs.push_back({a.name, false, 1, [](const State&) { return true; }, [a](State& s, Rng&, const Budget&) {
      s.x = a.f(s.c, s.x);
      s.bounded = a.bounded;
      return std::string(a.name);
    }});
  }
  cs.push_back({"LeakyReLU", false, 1, [](const State&) { return true; }, [](State& s, Rng& r, const Budget&) {
    s.x = leaky_relu(s.c, s.x, choose(r, std::vector<double>{0.01, 0.1, 0.2}));
    return std::string("LeakyReLU");
  }});
  cs.push_back({"Hardtanh", false, 1, [](const State&) { return true; }, [](State& s, Rng& r, const Budget&) {
    double m = choose(r, std::vector<double>{1.0, 2.0});
    s.x = hardtanh(s.c, s.x, -m, m);
    s.bounded = true;
    return std::string("Hardtanh");
  }});
  cs.push_back({"Clamp", false, 1, [](const State&) { return true; }, [](State& s, Rng& r, const Budget&) {
    auto [lo, hi] = choose(r, std::vector<std::pair<double, double>>{{-1.0, 1.0}, {0.0, 1.0}, {-0.5, 0.5}});
    s.x = clamp(s.c, s.x, lo, hi);
    s.bounded = true;
    return std::string("Clamp");
  }});
  cs.push_back({"Exp", false, 1, [](const State& s) { return s.bounded; }, [](State& s, Rng&, const Budget&) {
    s.x = exp(s.c, s.x);
    return std::string("Exp");
  }});
  cs.push_back({"Scaling", false, 1, [](const State&) { return true; }, [](State& s, Rng& r, const Budget&) {
    double f = choose(r, std::vector<double>{0.5, 2.0, 1.5});
    if (coin(r, 0.5)) {
      s.x = scale_literal(s.c, s.x, f);
      return std::string("Scaling");
    }
    s.x = divide_literal(s.c, s.x, f);
    return std::string("Divide");
  }});
  cs.push_back({"ScalarConstant", false, 2, [](const State&) { return true; }, [](State& s, Rng& r, const Budget&) {
    static const std::pair<ScalarOp, const char*> kOps[] = {{ScalarOp::Mul, "Multiply"},
                                                            {ScalarOp::Div, "Divide"},
                                                            {ScalarOp::Add, "Add"},
                                                            {ScalarOp::Sub, "Subtract"},
                                                            {ScalarOp::Min, "Min"},
                                                            {ScalarOp::Max, "Max"}};
    auto [op, name] = kOps[r.uniform_int(0, 5)];
    double v = choose(r, std::vector<double>{0.5, 2.0, 0.2, 1.5});
    s.x = scalar_constant(s.c, s.x, op, v);
    return std::string(name);
  }});
  cs.push_back({"ChannelParam", false, 2, rank_in(2, 5), [](State& s, Rng& r, const Budget&) {
    bool add = coin(r, 0.5);
    s.x = channel_param(s.c, s.x, add ? ScalarOp::Add : ScalarOp::Mul);
    return std::string(add ? "BiasAdd" : "Multiply");
  }});
  cs.push_back({"ResidualAdd", false, 2, [](const State&) { return true; }, [](State& s, Rng& r, const Budget&) {
    std::vector<Value> same;
    for (const auto& h : s.history)
      if (h.shape == s.x.shape && h.alias != s.x.alias) same.push_back(h);
    Value other = same.empty() ? s.x : choose(r, same);
    s.x = binary(s.c, s.x, other, ScalarOp::Add);
    return std::string("ResidualAdd");
  }});
  cs.push_back({"InputBinary", false, 1, [](const State&) { return true; }, [](State& s, Rng& r, const Budget&) {
    Value other = s.c.input(s.x.shape);
    static const std::pair<ScalarOp, const char*> kOps[] = {
        {ScalarOp::Add, "AddInput"}, {ScalarOp::Mul, "MultiplyInput"}, {ScalarOp::Sub, "SubtractInput"}};
    auto [op, name] = kOps[r.uniform_int(0, 2)];
    s.x = binary(s.c, s.x, other, op);
    return std::string(name);
  }});

  // ---- normalizations (groups of >= 2 elements) ----
  cs.push_back({"LayerNorm", false, 2, [](const State& s) { return s.x.rank() >= 2 && s.x.shape.back() >= 2; },
                [](State& s, Rng&, const Budget&) {
    s.x = layer_norm(s.c, s.x);
    s.bounded = false;
    return std::string("LayerNorm");
  }});
  cs.push_back({"GroupNorm", false, 2,
                [](const State& s) { return s.x.rank() >= 2 && s.x.shape[1] * spatial_numel(s.x) >= 2; },
                [](State& s, Rng& r, const Budget&) {
    std::vector<int64_t> ok;
    for (int64_t g : divisors(s.x.shape[1]))
      if (s.x.shape[1] / g * spatial_numel(s.x) >= 2) ok.push_back(g);
    s.x = group_norm(s.c, s.x, choose(r, ok));
    s.bounded = false;
    return std::string("GroupNorm");
  }});
  cs.push_back({"InstanceNorm", false, 2, [](const State& s) { return s.x.rank() >= 3 && spatial_numel(s.x) >= 2; },
                [](State& s, Rng&, const Budget&) {
    s.x = instance_norm(s.c, s.x);
    s.bounded = false;
    return std::string("InstanceNorm");
  }});
  cs.push_back({"BatchNorm", false, 2,
                [](const State& s) { return s.x.rank() >= 2 && s.x.shape[0] * spatial_numel(s.x) >= 2; },
                [](State& s, Rng&, const Budget&) {
    s.x = batch_norm(s.c, s.x);
    s.bounded = false;
    return std::string("BatchNorm");
  }});

  // ---- pooling and reductions ----
  cs.push_back({"Pool", false, 4, [](const State& s) { return s.x.rank() >= 3 && s.x.rank() <= 5 && min_spatial(s.x) >= 2; },
                [](State& s, Rng& r, const Budget&) {
    size_t nd = s.x.rank() - 2;
    int64_t k = r.uniform_int(2, std::min<int64_t>(3, min_spatial(s.x)));
    int64_t stride = coin(r, 0.7) ? k : 1;
    bool is_max = coin(r, 0.6);
    s.x = is_max ? max_pool(s.c, s.x, k, stride) : avg_pool(s.c, s.x, k, stride);
    return fmt::format("{}Pool{}d", is_max ? "Max" : "Avg", nd);
  }});
  cs.push_back({"GlobalAvgPool", false, 2, [](const State& s) { return s.x.rank() >= 3 && spatial_numel(s.x) >= 2; },
                [](State& s, Rng&, const Budget&) {
    s.x = global_avg_pool(s.c, s.x);
    return std::string("GlobalAvgPool");
  }});
  cs.push_back({"Reduce", false, 5, [](const State& s) { return !reducible_dims(s.x).empty(); },
                [](State& s, Rng& r, const Budget&) {
    size_t dim = choose(r, reducible_dims(s.x));
    static const std::pair<Reduce, const char*> kOps[] = {{Reduce::Sum, "Sum"},
                                                          {Reduce::Mean, "Mean"},
                                                          {Reduce::Max, "Max"},
                                                          {Reduce::Min, "Min"},
                                                          {Reduce::LogSumExp, "LogSumExp"}};
    auto [kind, name] = kOps[r.uniform_int(0, 4)];
    s.x = reduce(s.c, s.x, dim, kind);
    s.bounded = false;
    return std::string(name);
  }});
  cs.push_back({"Softmax", false, 3, [](const State& s) { return !reducible_dims(s.x).empty(); },
                [](State& s, Rng& r, const Budget&) {
    size_t dim = choose(r, reducible_dims(s.x));
    bool log = coin(r, 0.3);
    s.x = softmax(s.c, s.x, dim, log);
    s.bounded = !log;
    return std::string(log ? "LogSoftmax" : "Softmax");
  }});
  return cs;
}

const std::vector<Component>& all_components() {
  static const std::vector<Component> cs = components();
  return cs;
}

// Fresh input of a random domain.
Value start(State& st, Rng& r, const Budget& b) {
  int64_t batch = draw(r, b.batch);
  switch (r.uniform_int(0, 9)) {
    case 0: case 1: case 2:
      return st.c.input({batch, draw(r, b.features)});
    case 3: case 4: {
      int64_t hd = draw(r, b.heads_dim), heads = r.uniform_int(1, 4);
      return st.c.input({batch, draw(r, b.seq), hd * heads});
    }
    case 5:
      return st.c.input({batch, draw(r, b.channels), draw(r, b.length)});
    case 6: case 7: case 8:
      return st.c.input({batch, draw(r, b.channels), draw(r, b.side), draw(r, b.side)});
    default:
      return st.c.input({batch, draw(r, b.channels), draw(r, b.vol_side), draw(r, b.vol_side), draw(r, b.vol_side)});
  }
}

bool within(const State& st, const Budget& b) {
  return numel(st.x.shape) <= b.max_numel && st.c.work() <= b.max_work;
}

Composite make_one(uint64_t seed, int index, SizeClass size) {
  const Budget b = budget(size);
  const auto& cs = all_components();
  // Composite i has its own stream: independent of how many are sampled.
  Rng r(seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(index) * 0xD1B54A32D192ED03ull + 0x5851F42D4C957F2Dull);
  for (int attempt = 0; attempt < 100; ++attempt) {
    State st;
    st.x = start(st, r, b);
    st.history.push_back(st.x);
    int64_t want = r.uniform_int(2, 5);
    while (static_cast<int64_t>(st.names.size()) < want) {
      std::vector<const Component*> cand;
      for (const auto& c : cs)
        if ((st.names.empty() ? c.heavy : true) && c.ok(st)) cand.push_back(&c);
      bool applied = false;
      while (!cand.empty() && !applied) {
        int64_t total = 0;
        for (const auto* c : cand) total += c->weight;
        int64_t pick = r.uniform_int(0, total - 1);
        size_t i = 0;
        while (pick >= cand[i]->weight) pick -= cand[i++]->weight;
        State trial = st;
        std::string name = cand[i]->apply(trial, r, b);
        if (within(trial, b)) {
          trial.names.push_back(name);
          trial.history.push_back(trial.x);
          st = std::move(trial);
          applied = true;
        } else {
          cand.erase(cand.begin() + static_cast<long>(i));
        }
      }
      if (!applied) break;
    }
    if (st.names.size() < 2) continue;
    std::string joined;
    for (const auto& n : st.names) joined += (joined.empty() ? "" : "_") + n;
    std::string name = fmt::format("composite_{:04}_{}", index, joined);
    return {st.c.finish(name, st.x), st.c.python(st.x), st.names};
  }
  throw std::logic_error(fmt::format("composite {}: no valid chain in 100 draws", index));
}

}  // namespace

std::vector<Composite> sample_composite_records(int count, uint64_t seed, SizeClass size) {
  if (count < 0) throw base::Error(base::ErrorKind::BadRequest, "composite count must be >= 0");
  std::vector<Composite> out;
  out.reserve(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) out.push_back(make_one(seed, i, size));
  return out;
}

std::vector<leir::Program> sample_composites(int count, uint64_t seed, SizeClass size) {
  std::vector<leir::Program> out;
  for (auto& c : sample_composite_records(count, seed, size)) out.push_back(std::move(c.program));
  return out;
}

nlohmann::json composite_to_json(const Composite& c) {
  nlohmann::json j = leir::program_to_json(c.program);
  j["components"] = c.components;
  j["torch_reference"] = c.torch_reference;
  return j;
}

}  // namespace steptp::workloads
