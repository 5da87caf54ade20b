// Level 1, pooling (KernelBench level 1 problems 41-46): max pooling 1-D/2-D/3-D with stride,
// padding and dilation, average pooling 1-D/2-D/3-D with stride and padding. PyTorch semantics:
// floor-mode output sizes, max pooling pads with -inf, average pooling pads with zeros that count
// in the divisor (count_include_pad=True, divisor kernel^dims), padding at most half the kernel.
#include <fmt/format.h>

#include "front/workloads/builder.h"
#include "front/workloads/define.h"

namespace steptp::workloads {
namespace {

constexpr const char* kSpatial[] = {"d", "h", "w"};

// Names of the spatial size parameters for `dims` dimensions: w; h,w; d,h,w.
std::vector<std::string> spatial_names(int dims) {
  std::vector<std::string> out;
  for (int i = 3 - dims; i < 3; ++i) out.push_back(kSpatial[i]);
  return out;
}

Workload pool(int dims, bool is_max) {
  Workload w;
  w.name = fmt::format("{}_pool_{}d", is_max ? "max" : "avg", dims);
  w.family = "pool";
  auto sizes = spatial_names(dims);
  w.params = {hp("batch", 1, 512, {1, 2}, {2, 8}, {16, 16}), hp("channels", 1, 512, {1, 3}, {4, 16}, {32, 64})};
  Range tiny_size = dims == 1 ? Range{4, 16} : dims == 2 ? Range{3, 8} : Range{3, 5};
  Range small_size = dims == 1 ? Range{64, 256} : dims == 2 ? Range{16, 32} : Range{8, 12};
  Range default_size = dims == 1 ? Range{65536, 65536} : dims == 2 ? Range{256, 512} : Range{64, 64};
  for (const auto& s : sizes) w.params.push_back(hp(s, 1, 1 << 20, tiny_size, small_size, default_size));
  w.params.push_back(hp("kernel", 1, 16, {1, 3}, {2, 4}, {3, 4}));
  w.params.push_back(hp("stride", 1, 16, {1, 2}, {1, 2}, {1, 2}));
  w.params.push_back(hp("padding", 0, 8, {0, 1}, {0, 1}, {0, 1}));
  if (is_max) w.params.push_back(hp("dilation", 1, 8, {1, 2}, {1, 2}, {1, 3}));
  w.constraints.push_back(constraint("2*padding <= kernel", [](const HyperValues& hv) {
    return 2 * hv.at("padding") <= hv.at("kernel");
  }));
  for (const auto& s : sizes)
    w.constraints.push_back(constraint(fmt::format("window fits: {} + 2*padding >= {}", s, is_max ? "dilation*(kernel-1)+1" : "kernel"),
                                       [s](const HyperValues& hv) {
      return window_fits(hv.at(s), hv.at("kernel"), hv.at("padding"), hv.count("dilation") ? hv.at("dilation") : 1);
    }));

  w.build = [name = w.name, dims, is_max, sizes](const HyperValues& hv) {
    int64_t n = hv.at("batch"), c = hv.at("channels"), k = hv.at("kernel"), s = hv.at("stride");
    int64_t p = hv.at("padding"), dil = is_max ? hv.at("dilation") : 1;
    std::vector<int64_t> in = {n, c}, padded = {n, c}, out = {n, c};
    for (const auto& name_of_dim : sizes) {
      int64_t len = hv.at(name_of_dim);
      in.push_back(len);
      padded.push_back(len + 2 * p);
      out.push_back(window_out(len, k, s, p, dil));
    }
    ProgramBuilder b(name);
    b.input("x", in);
    b.output("out", out);
    std::string src = "x";
    if (p > 0) {
      b.temp("pad");
      src = "pad";
    }
    if (!is_max) b.temp("sum");
    // Index variables: tx (batch), a (channel), then one per spatial output dim, then one per
    // kernel offset.
    std::string lead = "tx,a", out_idx = lead, win_idx = lead, pad_cond;
    std::vector<int64_t> loops = out;
    for (int i = 0; i < dims; ++i) {
      std::string o = index_name(2 + i), kv = index_name(2 + dims + i);
      out_idx += "," + o;
      win_idx += "," + (s == 1 ? o : fmt::format("{}*{}", o, s)) + "+" + (dil == 1 ? kv : fmt::format("{}*{}", kv, dil));
      loops.push_back(k);
    }
    if (p > 0) {
      std::string pad_idx = lead, src_idx = lead;
      for (int i = 0; i < dims; ++i) {
        std::string v = index_name(2 + i);
        pad_cond += fmt::format("{}{}<={}<{}", i ? "&" : "", p, v, in[2 + i] + p);
        pad_idx += "," + v;
        src_idx += fmt::format(",{}-{}", v, p);
      }
      b.nest(padded, fmt::format("$pad[{}]=if_then_else({},$x[{}],{})", pad_idx, pad_cond, src_idx,
                                 is_max ? "-inf" : "0"));
    }
    if (is_max) {
      b.nest(loops, fmt::format("$out[{0}]=max($out[{0}],${1}[{2}])", out_idx, src, win_idx));
    } else {
      int64_t divisor = 1;
      for (int i = 0; i < dims; ++i) divisor *= k;
      b.nest(loops, fmt::format("$sum[{0}]=$sum[{0}]+${1}[{2}]", out_idx, src, win_idx));
      b.nest(out, fmt::format("$out[{0}]=$sum[{0}]/{1}", out_idx, divisor));
    }
    return b.finish();
  };
  std::string fn = fmt::format("F.{}_pool{}d", is_max ? "max" : "avg", dims);
  w.torch_reference = fmt::format(R"(
def reference(t, hp):
    y = {}(t["A"], hp["kernel"], stride=hp["stride"], padding=hp["padding"]{})
    return {{"C": y}}
)",
                                  fn, is_max ? ", dilation=hp[\"dilation\"]" : ", count_include_pad=True");
  return w;
}

RegisterWorkload reg_max1{pool(1, true)};
RegisterWorkload reg_max2{pool(2, true)};
RegisterWorkload reg_max3{pool(3, true)};
RegisterWorkload reg_avg1{pool(1, false)};
RegisterWorkload reg_avg2{pool(2, false)};
RegisterWorkload reg_avg3{pool(3, false)};

}  // namespace
}  // namespace steptp::workloads
