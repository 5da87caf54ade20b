// Level 1, convolutions (KernelBench level 1 problems 54-87 in spirit): 1-D/2-D/3-D, stride,
// padding, dilation, groups, depthwise, pointwise, depthwise-separable, asymmetric kernels and
// inputs, and transposed convolutions. PyTorch semantics: cross-correlation, zero padding, floor
// output sizes; weights [out, in/groups, k...] (transposed: [in, out, k...]); no bias (the
// KernelBench level-1 default).
#include <fmt/format.h>

#include "front/workloads/builder.h"
#include "front/workloads/define.h"

namespace steptp::workloads {
namespace {

constexpr const char* kDimNames[3][3] = {{"length"}, {"h", "w"}, {"d", "h", "w"}};

struct ConvShape {
  int dims = 2;
  int64_t n = 1, cin = 1, cout = 1, groups = 1;
  std::vector<int64_t> in, k;
  int64_t stride = 1, pad = 0, dilation = 1;
};

int64_t get(const HyperValues& hv, const std::string& name, int64_t fallback) {
  auto it = hv.find(name);
  return it == hv.end() ? fallback : it->second;
}

// Reads a ConvShape from hyper-values. Channels: in_channels/out_channels, or groups with
// in_per_group/out_per_group, or (depthwise) channels with an optional multiplier. Spatial sizes:
// "size" for every dimension or one parameter per dimension; kernels likewise ("kernel" or
// "kernel_<dim>").
ConvShape conv_shape(int dims, const HyperValues& hv) {
  ConvShape s;
  s.dims = dims;
  s.n = hv.at("batch");
  if (hv.count("channels")) {  // depthwise
    s.groups = s.cin = hv.at("channels");
    s.cout = s.cin * get(hv, "multiplier", 1);
  } else if (hv.count("groups")) {
    s.groups = hv.at("groups");
    s.cin = s.groups * hv.at("in_per_group");
    s.cout = s.groups * hv.at("out_per_group");
  } else {
    s.cin = hv.at("in_channels");
    s.cout = hv.at("out_channels");
  }
  for (int i = 0; i < dims; ++i) {
    std::string dn = kDimNames[dims - 1][i];
    s.in.push_back(get(hv, dn, get(hv, "size", 1)));
    s.k.push_back(get(hv, "kernel_" + dn, get(hv, "kernel", 1)));
  }
  s.stride = get(hv, "stride", 1);
  s.pad = get(hv, "padding", 0);
  s.dilation = get(hv, "dilation", 1);
  return s;
}

std::vector<int64_t> out_sizes(const ConvShape& s) {
  std::vector<int64_t> out;
  for (int i = 0; i < s.dims; ++i) out.push_back(window_out(s.in[i], s.k[i], s.stride, s.pad, s.dilation));
  return out;
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + v[i];
  return s;
}

// Writes the zero-padded copy of `src` into temp `pad` (public style) and returns the alias to
// read windows from.
std::string pad_input(ProgramBuilder& b, const ConvShape& s, const std::string& src, int64_t channels,
                      const std::string& pad_alias) {
  if (s.pad == 0) return src;
  std::vector<int64_t> loops = {s.n, channels};
  std::vector<std::string> idx = {"tx", "a"}, src_idx = {"tx", "a"};
  std::string cond;
  for (int i = 0; i < s.dims; ++i) {
    std::string v = index_name(2 + i);
    loops.push_back(s.in[i] + 2 * s.pad);
    idx.push_back(v);
    src_idx.push_back(fmt::format("{}-{}", v, s.pad));
    cond += fmt::format("{}{}<={}<{}", i ? "&" : "", s.pad, v, s.in[i] + s.pad);
  }
  b.nest(loops, fmt::format("${}[{}]=if_then_else({},${}[{}],0)", pad_alias, joined(idx), cond, src,
                            joined(src_idx)));
  return pad_alias;
}

// out[n, co, o...] += w[co, ci, k...] * src[n, channel(co, ci), o*stride + k*dilation ...].
void conv_nest(ProgramBuilder& b, const ConvShape& s, const std::string& src, const std::string& weight,
               const std::string& out) {
  std::vector<int64_t> outs = out_sizes(s);
  int64_t cin_pg = s.cin / s.groups, cout_pg = s.cout / s.groups;
  std::vector<int64_t> loops = {s.n, s.cout};
  std::vector<std::string> o_idx = {"tx", "a"};
  for (int i = 0; i < s.dims; ++i) {
    loops.push_back(outs[i]);
    o_idx.push_back(index_name(2 + i));
  }
  std::string ci = index_name(2 + s.dims);
  loops.push_back(cin_pg);
  std::vector<std::string> w_idx = {"a", ci};
  std::string channel = s.groups == 1 ? ci
                        : cin_pg == 1 ? (cout_pg == 1 ? std::string("a") : fmt::format("a//{}", cout_pg))
                                      : fmt::format("a//{}*{}+{}", cout_pg, cin_pg, ci);
  std::vector<std::string> x_idx = {"tx", channel};
  for (int i = 0; i < s.dims; ++i) {
    std::string kv = index_name(3 + s.dims + i), ov = o_idx[2 + i];
    loops.push_back(s.k[i]);
    w_idx.push_back(kv);
    x_idx.push_back((s.stride == 1 ? ov : fmt::format("{}*{}", ov, s.stride)) + "+" +
                    (s.dilation == 1 ? kv : fmt::format("{}*{}", kv, s.dilation)));
  }
  std::string o = fmt::format("${}[{}]", out, joined(o_idx));
  std::string w = fmt::format("${}[{}]", weight, joined(w_idx)), x = fmt::format("${}[{}]", src, joined(x_idx));
  // The public translator multiplies weight*input, but input*weight when it read a padded copy.
  bool padded = src != "x";
  b.nest(loops, o + "=" + o + "+" + (padded ? x + "*" + w : w + "*" + x));
}

std::string torch_conv_call(int dims, const std::string& x, const std::string& w, const std::string& groups) {
  return fmt::format("F.conv{}d({}, {}, stride=hp.get(\"stride\", 1), padding=hp.get(\"padding\", 0), "
                     "dilation=hp.get(\"dilation\", 1), groups={})",
                     dims, x, w, groups);
}

void add_fit_constraints(Workload& w, int dims) {
  w.constraints.push_back(constraint("every window fits: in + 2*padding >= dilation*(kernel-1)+1 per dimension",
                                     [dims](const HyperValues& hv) {
    ConvShape s = conv_shape(dims, hv);
    for (int i = 0; i < dims; ++i)
      if (!window_fits(s.in[i], s.k[i], s.pad, s.dilation)) return false;
    return true;
  }));
}

const HyperParam kBatch = hp("batch", 1, 256, {1, 2}, {2, 4}, {16, 16});
const HyperParam kCin = hp("in_channels", 1, 512, {1, 3}, {3, 8}, {3, 64});
const HyperParam kCout = hp("out_channels", 1, 512, {1, 4}, {4, 16}, {64, 128});

Workload conv(std::string name, int dims, std::vector<HyperParam> params) {
  Workload w;
  w.name = name;
  w.family = "conv";
  w.params = std::move(params);
  add_fit_constraints(w, dims);
  w.build = [name, dims](const HyperValues& hv) {
    ConvShape s = conv_shape(dims, hv);
    ProgramBuilder b(name);
    std::vector<int64_t> in = {s.n, s.cin}, out = {s.n, s.cout}, wt = {s.cout, s.cin / s.groups};
    for (int i = 0; i < dims; ++i) {
      in.push_back(s.in[i]);
      wt.push_back(s.k[i]);
    }
    for (int64_t o : out_sizes(s)) out.push_back(o);
    b.input("x", in);
    b.output("out", out);
    b.param("weight", wt);
    if (s.pad > 0) b.temp("pad");
    std::string src = pad_input(b, s, "x", s.cin, "pad");
    conv_nest(b, s, src, "weight", "out");
    return b.finish();
  };
  std::string groups = "1";
  for (const auto& p : w.params) {
    if (p.name == "groups") groups = "hp[\"groups\"]";
    if (p.name == "channels") groups = "hp[\"channels\"]";
  }
  w.torch_reference = "\ndef reference(t, hp):\n    return {\"C\": " + torch_conv_call(dims, "t[\"A\"]", "t[\"D\"]", groups) + "}\n";
  return w;
}

// Depthwise (groups = channels) then pointwise 1x1 (KernelBench depthwise-separable).
Workload depthwise_separable() {
  Workload w;
  w.name = "depthwise_separable_conv2d";
  w.family = "conv";
  w.params = {kBatch, hp("channels", 1, 512, {1, 3}, {3, 8}, {3, 64}), kCout, hp("size", 1, 4096, {3, 8}, {16, 32}, {256, 256}),
              hp("kernel", 1, 11, {1, 3}, {3, 3}, {3, 3}), hp("stride", 1, 4, {1, 2}, {1, 2}, {1, 1}),
              hp("padding", 0, 5, {0, 1}, {0, 1}, {0, 1}), hp("dilation", 1, 4, {1, 2}, {1, 2}, {1, 1})};
  add_fit_constraints(w, 2);
  w.build = [](const HyperValues& hv) {
    ConvShape dw = conv_shape(2, hv);  // channels → depthwise, multiplier 1
    int64_t cout = hv.at("out_channels");
    auto outs = out_sizes(dw);
    ProgramBuilder b("depthwise_separable_conv2d");
    b.input("x", {dw.n, dw.cin, dw.in[0], dw.in[1]});
    b.output("out", {dw.n, cout, outs[0], outs[1]});
    b.param("dw", {dw.cin, 1, dw.k[0], dw.k[1]});
    b.param("pw", {cout, dw.cin, 1, 1});
    if (dw.pad > 0) b.temp("pad");
    b.temp("mid");
    std::string src = pad_input(b, dw, "x", dw.cin, "pad");
    conv_nest(b, dw, src, "dw", "mid");
    b.nest({dw.n, cout, outs[0], outs[1], dw.cin}, "$out[tx,a,c,d]=$out[tx,a,c,d]+$pw[a,f,0,0]*$mid[tx,f,c,d]");
    return b.finish();
  };
  w.torch_reference = R"(
def reference(t, hp):
    mid = F.conv2d(t["A"], t["D"], stride=hp["stride"], padding=hp["padding"], dilation=hp["dilation"],
                   groups=hp["channels"])
    return {"C": F.conv2d(mid, t["E"])}
)";
  return w;
}

// Transposed convolution as a scatter: every input element adds x * w into a zero-initialised
// full-size buffer at i*stride + k*dilation; the output is that buffer cropped by `padding`.
Workload conv_transposed(int dims) {
  Workload w;
  w.name = fmt::format("conv_transposed_{}d", dims);
  w.family = "conv";
  Range tiny = dims == 1 ? Range{2, 8} : dims == 2 ? Range{2, 5} : Range{2, 3};
  Range small = dims == 1 ? Range{32, 64} : dims == 2 ? Range{8, 16} : Range{4, 8};
  Range def = dims == 1 ? Range{128, 256} : dims == 2 ? Range{64, 128} : Range{16, 32};
  w.params = {kBatch, kCin, kCout, hp("size", 1, 4096, tiny, small, def), hp("kernel", 1, 11, {1, 3}, {2, 3}, {3, 5}),
              hp("stride", 1, 4, {1, 2}, {1, 2}, {1, 2}), hp("padding", 0, 5, {0, 1}, {0, 1}, {0, 2}),
              hp("dilation", 1, 4, {1, 2}, {1, 2}, {1, 2})};
  w.constraints.push_back(constraint("output size (size-1)*stride - 2*padding + dilation*(kernel-1) + 1 >= 1",
                                     [](const HyperValues& hv) {
    return (hv.at("size") - 1) * hv.at("stride") - 2 * hv.at("padding") + hv.at("dilation") * (hv.at("kernel") - 1) + 1 >= 1;
  }));
  w.build = [name = w.name, dims](const HyperValues& hv) {
    ConvShape s = conv_shape(dims, hv);
    int64_t full = (s.in[0] - 1) * s.stride + s.dilation * (s.k[0] - 1) + 1, out_len = full - 2 * s.pad;
    std::vector<int64_t> in = {s.n, s.cin}, wt = {s.cin, s.cout}, full_shape = {s.n, s.cout}, out = {s.n, s.cout};
    for (int i = 0; i < dims; ++i) {
      in.push_back(s.in[i]);
      wt.push_back(s.k[i]);
      full_shape.push_back(full);
      out.push_back(out_len);
    }
    ProgramBuilder b(name);
    b.input("x", in);
    b.output("out", out);
    b.param("weight", wt);
    std::string acc = "out";
    if (s.pad > 0) {
      b.temp("full");
      acc = "full";
    }
    // Zero-initialise the accumulation buffer (stride gaps are never written otherwise).
    std::vector<std::string> z_idx = {"tx", "a"};
    for (int i = 0; i < dims; ++i) z_idx.push_back(index_name(2 + i));
    b.nest(full_shape, fmt::format("${}[{}]=0", acc, joined(z_idx)));
    // Scatter: loops n, co, i..., ci, k...
    std::vector<int64_t> loops = {s.n, s.cout};
    std::vector<std::string> x_idx = {"tx", index_name(2 + dims)}, w_idx = {index_name(2 + dims), "a"}, y_idx = {"tx", "a"};
    for (int i = 0; i < dims; ++i) loops.push_back(s.in[i]);
    loops.push_back(s.cin);
    for (int i = 0; i < dims; ++i) {
      std::string iv = index_name(2 + i), kv = index_name(3 + dims + i);
      loops.push_back(s.k[i]);
      x_idx.push_back(iv);
      w_idx.push_back(kv);
      y_idx.push_back((s.stride == 1 ? iv : fmt::format("{}*{}", iv, s.stride)) + "+" +
                      (s.dilation == 1 ? kv : fmt::format("{}*{}", kv, s.dilation)));
    }
    std::string y = fmt::format("${}[{}]", acc, joined(y_idx));
    b.nest(loops, fmt::format("{0}={0}+$x[{1}]*$weight[{2}]", y, joined(x_idx), joined(w_idx)));
    if (s.pad > 0) {
      std::vector<std::string> src_idx = {"tx", "a"};
      for (int i = 0; i < dims; ++i) src_idx.push_back(fmt::format("{}+{}", index_name(2 + i), s.pad));
      b.nest(out, fmt::format("$out[{}]=$full[{}]", joined(z_idx), joined(src_idx)));
    }
    return b.finish();
  };
  w.torch_reference = fmt::format(R"(
def reference(t, hp):
    y = F.conv_transpose{}d(t["A"], t["D"], stride=hp["stride"], padding=hp["padding"], dilation=hp["dilation"])
    return {{"C": y}}
)",
                                  dims);
  return w;
}

HyperParam size_param(int dims) {
  Range tiny = dims == 1 ? Range{4, 16} : dims == 2 ? Range{3, 8} : Range{3, 5};
  Range small = dims == 1 ? Range{64, 256} : dims == 2 ? Range{16, 32} : Range{8, 12};
  Range def = dims == 1 ? Range{512, 512} : dims == 2 ? Range{256, 256} : Range{64, 64};
  return hp("size", 1, 1 << 16, tiny, small, def);
}

RegisterWorkload reg_c1{conv("conv1d", 1, {kBatch, kCin, kCout, size_param(1), hp("kernel", 1, 11, {1, 3}, {3, 5}, {3, 3})})};
RegisterWorkload reg_c1sd{conv("conv1d_dilated_strided", 1,
                               {kBatch, kCin, kCout, size_param(1), hp("kernel", 1, 11, {1, 3}, {3, 5}, {3, 3}),
                                hp("stride", 1, 4, {1, 3}, {2, 3}, {3, 3}), hp("dilation", 1, 4, {1, 3}, {2, 4}, {4, 4})})};
RegisterWorkload reg_c2{conv("conv2d", 2, {kBatch, kCin, kCout, size_param(2), hp("kernel", 1, 11, {1, 3}, {3, 3}, {3, 3})})};
RegisterWorkload reg_c2a{conv("conv2d_asymmetric", 2,
                              {kBatch, kCin, kCout, hp("h", 1, 4096, {3, 8}, {16, 32}, {128, 256}),
                               hp("w", 1, 4096, {3, 10}, {16, 48}, {256, 512}), hp("kernel_h", 1, 11, {1, 3}, {3, 5}, {3, 5}),
                               hp("kernel_w", 1, 11, {1, 4}, {5, 7}, {5, 7})})};
RegisterWorkload reg_c2p{conv("conv2d_padded_strided_dilated", 2,
                              {kBatch, kCin, kCout, size_param(2), hp("kernel", 1, 11, {1, 3}, {3, 3}, {3, 3}),
                               hp("stride", 1, 4, {1, 2}, {1, 2}, {1, 2}), hp("padding", 0, 5, {0, 2}, {1, 2}, {1, 2}),
                               hp("dilation", 1, 4, {1, 2}, {1, 2}, {1, 2})})};
RegisterWorkload reg_c2g{conv("conv2d_grouped", 2,
                              {kBatch, hp("groups", 1, 64, {1, 3}, {2, 4}, {4, 8}), hp("in_per_group", 1, 64, {1, 2}, {2, 4}, {8, 8}),
                               hp("out_per_group", 1, 64, {1, 2}, {2, 4}, {8, 16}), size_param(2),
                               hp("kernel", 1, 11, {1, 3}, {3, 3}, {3, 3})})};
RegisterWorkload reg_c3{conv("conv3d", 3, {kBatch, kCin, kCout, size_param(3), hp("kernel", 1, 7, {1, 3}, {3, 3}, {3, 3})})};
RegisterWorkload reg_c3a{conv("conv3d_asymmetric", 3,
                              {kBatch, kCin, kCout, hp("d", 1, 256, {2, 4}, {4, 8}, {16, 16}), hp("h", 1, 256, {3, 6}, {8, 12}, {64, 64}),
                               hp("w", 1, 256, {3, 8}, {8, 16}, {64, 128}), hp("kernel_d", 1, 7, {1, 2}, {3, 3}, {3, 3}),
                               hp("kernel_h", 1, 7, {1, 3}, {3, 5}, {5, 5}), hp("kernel_w", 1, 7, {1, 3}, {5, 7}, {7, 7})})};
RegisterWorkload reg_dw{conv("depthwise_conv2d", 2,
                             {kBatch, hp("channels", 1, 512, {1, 4}, {3, 8}, {3, 64}), size_param(2),
                              hp("kernel", 1, 11, {1, 3}, {3, 3}, {3, 3}), hp("stride", 1, 4, {1, 2}, {1, 2}, {1, 1}),
                              hp("padding", 0, 5, {0, 1}, {0, 1}, {0, 1})})};
RegisterWorkload reg_dwa{conv("depthwise_conv2d_asymmetric_kernel", 2,
                              {kBatch, hp("channels", 1, 512, {1, 4}, {3, 8}, {3, 64}), size_param(2),
                               hp("kernel_h", 1, 11, {1, 3}, {3, 3}, {3, 3}), hp("kernel_w", 1, 1, {1, 1}, {1, 1}, {1, 1})})};
RegisterWorkload reg_dwm{conv("depthwise_conv2d_multiplier", 2,
                              {kBatch, hp("channels", 1, 512, {1, 3}, {3, 8}, {3, 64}), hp("multiplier", 1, 8, {2, 3}, {2, 4}, {2, 2}),
                               size_param(2), hp("kernel", 1, 11, {1, 3}, {3, 3}, {3, 3})})};
RegisterWorkload reg_pw{conv("pointwise_conv2d", 2, {kBatch, kCin, kCout, size_param(2)})};
RegisterWorkload reg_sep{depthwise_separable()};
RegisterWorkload reg_t1{conv_transposed(1)};
RegisterWorkload reg_t2{conv_transposed(2)};
RegisterWorkload reg_t3{conv_transposed(3)};

}  // namespace
}  // namespace steptp::workloads
