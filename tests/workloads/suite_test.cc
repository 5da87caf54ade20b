// The workload suite: registry contents, public naming, determinism, hyper-parameter ranges and
// constraints, byte-for-byte agreement with programs the public translator printed, and the CLI.
#include <gtest/gtest.h>
#include <fmt/format.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "ir/leir/parser.h"
#include "ir/leir/printer.h"
#include "ir/leir/program_io.h"
#include "front/workloads/builder.h"
#include "front/workloads/workload.h"
#include "error_kind.h"

namespace steptp::workloads {
namespace {

TEST(Registry, LevelOneCoversEveryRequiredFamily) {
  std::map<std::string, int> per_family;
  int level1 = 0;
  std::set<std::string> names;
  for (const auto& w : all_workloads()) {
    EXPECT_TRUE(names.insert(w.name).second) << "duplicate " << w.name;
    EXPECT_TRUE(w.build) << w.name;
    EXPECT_NE(w.torch_reference.find("def reference(t, hp)"), std::string::npos) << w.name;
    for (const auto& p : w.params)
      for (const auto& [lo, hi] : p.by_size) {
        EXPECT_LE(p.lo, lo) << w.name << "." << p.name;
        EXPECT_LE(lo, hi) << w.name << "." << p.name;
        EXPECT_LE(hi, p.hi) << w.name << "." << p.name;
      }
    if (w.level == 1) {
      ++level1;
      ++per_family[w.family];
    }
  }
  EXPECT_GE(level1, 80);
  for (const char* f : {"matmul", "activation", "norm", "pool", "reduce", "conv", "scan", "loss", "softmax"})
    EXPECT_GT(per_family[f], 0) << f;
  for (const char* n : {"square_matmul", "batched_matmul", "matrix_vector_multiplication", "gelu", "gelu_tanh",
                        "min_gpt_new_gelu", "batch_norm", "group_norm", "rms_norm", "frobenius_norm", "max_pool_3d",
                        "avg_pool_1d", "argmin", "conv_transposed_2d", "depthwise_separable_conv2d", "cumsum_masked",
                        "triplet_margin_loss", "log_softmax"})
    EXPECT_NE(find_workload(n), nullptr) << n;
  EXPECT_EQ(find_workload("no_such_workload"), nullptr);
}

TEST(Names, PublicTranslatorSequence) {
  // Single letters skip B L P T U V; two-letter names skip b l p t u v as second letter
  // (corpus: ... Z Aa Ac Ad ... Az Ca Cc ...).
  std::string first;
  for (size_t k = 0; k < 20; ++k) first += tensor_name(k);
  EXPECT_EQ(first, "ACDEFGHIJKMNOQRSWXYZ");
  EXPECT_EQ(tensor_name(20), "Aa");
  EXPECT_EQ(tensor_name(21), "Ac");
  EXPECT_EQ(tensor_name(39), "Az");
  EXPECT_EQ(tensor_name(40), "Ca");
  EXPECT_EQ(tensor_name(41), "Cc");
  std::string idx;
  for (size_t k = 0; k < 9; ++k) idx += index_name(k) + " ";
  EXPECT_EQ(idx, "tx a c d f g h i j ");
  EXPECT_EQ(num(1e-05), "1e-05");
  EXPECT_EQ(num(0.5), "0.5");
  EXPECT_EQ(num(1.0), "1.0");
}

TEST(Determinism, SameSeedSameBytesEverySize) {
  for (const auto& w : all_workloads())
    for (SizeClass size : {SizeClass::Tiny, SizeClass::Small, SizeClass::Default})
      for (uint64_t seed : {0, 7}) {
        leir::Program a = emit(w, seed, size), b = emit(w, seed, size);
        EXPECT_EQ(leir::program_to_json(a).dump(), leir::program_to_json(b).dump()) << w.name;
        // The emitted text is canonical: printing the parsed program reproduces it.
        std::string text = leir::print_body(a.body);
        EXPECT_EQ(leir::print_body(leir::parse_body(text)), text) << w.name;
      }
}

TEST(Determinism, SeedsVaryShapesWithinRangesAndConstraints) {
  for (const auto& w : all_workloads()) {
    std::set<std::string> signatures;
    bool variable = false;
    for (const auto& p : w.params) variable |= p.by_size[0].first < p.by_size[0].second;
    for (uint64_t seed = 0; seed < 24; ++seed) {
      HyperValues hv = sample_hyper(w, seed, SizeClass::Tiny);
      EXPECT_EQ(check_hyper(w, hv), "") << w.name << " seed " << seed;
      for (const auto& p : w.params) {
        EXPECT_GE(hv.at(p.name), p.by_size[0].first) << w.name << "." << p.name;
        EXPECT_LE(hv.at(p.name), p.by_size[0].second) << w.name << "." << p.name;
      }
      for (const auto& c : w.constraints) EXPECT_TRUE(c.holds(hv)) << w.name << ": " << c.text;
      leir::Program prog = emit(w, hv);
      std::string sig;
      for (const auto& d : prog.known) sig += fmt::format("{}:{};", d.name, fmt::join(d.shape, ","));
      signatures.insert(sig);
    }
    if (variable) EXPECT_GT(signatures.size(), 1u) << w.name << ": shapes never vary across seeds";
  }
}

TEST(Hyper, OutOfRangeAndViolatedConstraintsAreErrors) {
  const Workload* pool = find_workload("max_pool_2d");
  ASSERT_NE(pool, nullptr);
  // Hyper-parameters a user gives (`workloads emit --set`): request errors (exit 2, HTTP 400).
  using steptp::testing::thrown_kind;
  const auto bad_request = base::ErrorKind::BadRequest;
  EXPECT_EQ(thrown_kind([&] { sample_hyper(*pool, 1, SizeClass::Tiny, {{"kernel", 99}}); }), bad_request);
  EXPECT_EQ(thrown_kind([&] { sample_hyper(*pool, 1, SizeClass::Tiny, {{"no_such", 1}}); }), bad_request);
  // Each value is in range, but together they violate 2*padding <= kernel.
  HyperValues hv = sample_hyper(*pool, 1, SizeClass::Tiny);
  hv["padding"] = 2;
  hv["kernel"] = 3;
  EXPECT_NE(check_hyper(*pool, hv), "");
  EXPECT_EQ(thrown_kind([&] { emit(*pool, hv); }), bad_request);
  EXPECT_EQ(thrown_kind([&] { sample_hyper(*pool, 1, SizeClass::Tiny, {{"padding", 2}, {"kernel", 3}}); }), bad_request);
}

// Workloads with the same hyper-parameters as records the public translator printed reproduce
// them byte for byte (signature and body), apart from deliberate corrections listed in the
// workload files (first-index argmax, float64 SELU constants, tanh(), eps in triplet loss).
struct PublicRecord {
  const char* workload;
  HyperValues hv;
  const char* file;    // under STEPTP_SHARED_DIR
  const char* record;  // name inside a JSONL file, or "" for a one-object JSON file
};

leir::Program read_record(const PublicRecord& r) {
  static std::map<std::string, std::vector<leir::Program>> cache;  // the corpus file is large
  std::string path = std::string(STEPTP_SHARED_DIR) + "/" + r.file;
  if (!cache.count(path)) cache[path] = leir::read_programs(path);
  for (auto& p : cache[path])
    if (std::string(r.record).empty() || p.name == r.record) return p;
  throw std::runtime_error(std::string("no record ") + r.record);
}

TEST(PublicStyle, ReproducesTranslatorRecordsByteForByte) {
  const std::vector<PublicRecord> records = {
      {"matmul_3d_tensor_matrix", {{"batch", 4}, {"m", 16}, {"k", 8}, {"n", 12}}, "corpus/public_translator_sample.jsonl", "Matmul3D"},
      {"softmax", {{"batch", 2}, {"dim", 1024}}, "corpus/public_translator_sample.jsonl", "softmax"},
      {"hardtanh", {{"batch", 2}, {"dim", 1024}}, "corpus/public_translator_sample.jsonl", "HardTanh"},
      {"batch_norm", {{"batch", 2}, {"features", 4}, {"h", 16}, {"w", 8}}, "corpus/public_translator_sample.jsonl", "BatchNorm"},
      {"group_norm", {{"batch", 2}, {"groups", 8}, {"channels_per_group", 2}, {"h", 12}, {"w", 4}},
       "corpus/public_translator_sample.jsonl", "GroupNorm"},
      {"frobenius_norm", {{"batch", 2}, {"features", 4}, {"h", 16}, {"w", 8}}, "corpus/public_translator_sample.jsonl", "FrobeniusNorm"},
      {"matrix_scalar_multiplication", {{"m", 32}, {"n", 16}}, "corpus/public_translator_sample.jsonl", "Matrix_scalar_multiplication"},
      {"matmul_small_k", {{"m", 32}, {"k", 32}, {"n", 4}}, "corpus/public_translator_sample.jsonl", "Matmul_with_small_K_dimension"},
      {"cumsum_reverse", {{"batch", 2}, {"length", 500}}, "corpus/public_translator_sample.jsonl", "cumsum_reverse"},
      {"conv3d_asymmetric",
       {{"batch", 2}, {"in_channels", 3}, {"out_channels", 6}, {"d", 4}, {"h", 8}, {"w", 8}, {"kernel_d", 3}, {"kernel_h", 5}, {"kernel_w", 7}},
       "corpus/public_translator_sample.jsonl", "conv_standard_3D__asymmetric_input__asymmetric_kernel"},
      {"depthwise_conv2d_asymmetric_kernel", {{"batch", 2}, {"channels", 3}, {"size", 16}, {"kernel_h", 3}, {"kernel_w", 1}},
       "corpus/public_translator_sample.jsonl", "conv_depthwise_2D_square_input_asymmetric_kernel"},
      {"rectangular_matmul", {{"m", 8}, {"k", 16}, {"n", 12}}, "examples/matmul.json", ""},
      {"layer_norm", {{"batch", 4}, {"features", 8}, {"dim", 16}}, "examples/layernorm.json", ""},
      {"max_pool_2d", {{"batch", 2}, {"channels", 3}, {"h", 8}, {"w", 8}, {"kernel", 2}, {"stride", 2}, {"padding", 0}, {"dilation", 1}},
       "examples/maxpool2d.json", ""},
      {"conv2d_padded_strided_dilated",
       {{"batch", 2}, {"in_channels", 3}, {"out_channels", 4}, {"size", 10}, {"kernel", 3}, {"stride", 1}, {"padding", 1}, {"dilation", 1}},
       "examples/conv2d_pad1.json", ""},
  };
  for (const auto& r : records) {
    const Workload* w = find_workload(r.workload);
    ASSERT_NE(w, nullptr) << r.workload;
    leir::Program ours = emit(*w, r.hv);
    leir::Program theirs = read_record(r);
    EXPECT_EQ(leir::print_body(ours.body), leir::print_body(theirs.body)) << r.workload;
    std::string sig_ours, sig_theirs;
    for (const auto& d : ours.known) sig_ours += leir::signature_line(d) + "\n";
    for (const auto& d : theirs.known) sig_theirs += leir::signature_line(d) + "\n";
    EXPECT_EQ(sig_ours, sig_theirs) << r.workload;
  }
  // The float32 variant of gelu is examples/gelu.json.
  leir::Program gelu = to_f32(emit(*find_workload("gelu"), HyperValues{{"batch", 4}, {"dim", 64}}));
  leir::Program theirs = read_record({"gelu", {}, "examples/gelu.json", ""});
  EXPECT_EQ(leir::print_body(gelu.body), leir::print_body(theirs.body));
}

// Runs the steptp binary; returns {exit code, stdout}.
std::pair<int, std::string> run_cli(const std::string& args) {
  std::string cmd = std::string(STEPTP_EXE) + " " + args + " 2>/dev/null";
  FILE* f = popen(cmd.c_str(), "r");
  std::string out;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), f)) > 0) out.append(buf.data(), n);
  int status = pclose(f);
  return {WEXITSTATUS(status), out};
}

TEST(Cli, ListEmitAndErrors) {
  auto [rc, list] = run_cli("workloads list --json");
  ASSERT_EQ(rc, 0);
  auto arr = nlohmann::json::parse(list);
  EXPECT_EQ(arr.size(), all_workloads().size());
  EXPECT_TRUE(arr[0].contains("params"));

  auto [rc1, a] = run_cli("workloads emit max_pool_2d --seed 5 --size tiny");
  auto [rc2, b] = run_cli("workloads emit max_pool_2d --seed 5 --size tiny");
  ASSERT_EQ(rc1, 0);
  EXPECT_EQ(a, b);
  leir::Program p = leir::program_from_json(nlohmann::json::parse(a));
  EXPECT_EQ(leir::print_body(p.body), leir::print_body(emit(*find_workload("max_pool_2d"), 5, SizeClass::Tiny).body));

  auto [rc3, text] = run_cli("workloads emit conv1d --seed 1 --size small --format leir");
  EXPECT_EQ(rc3, 0);
  leir::Program from_text = leir::program_from_text(text);
  leir::Program direct = emit(*find_workload("conv1d"), 1, SizeClass::Small);
  EXPECT_EQ(leir::print_body(from_text.body), leir::print_body(direct.body));
  ASSERT_EQ(from_text.known.size(), direct.known.size()) << text;
  for (size_t i = 0; i < direct.known.size(); ++i)
    EXPECT_EQ(leir::signature_line(from_text.known[i]), leir::signature_line(direct.known[i]));

  auto [rc4, f32] = run_cli("workloads emit relu --seed 2 --size tiny --f32");
  EXPECT_EQ(rc4, 0);
  EXPECT_EQ(f32.find("f64"), std::string::npos) << f32;
  EXPECT_NE(f32.find("C^{f32,g}"), std::string::npos) << f32;

  // Option values the command does not take: usage errors, exit 2 (base/error.h; 1 before issue 36).
  const int usage = base::exit_code(base::ErrorKind::BadRequest);
  EXPECT_EQ(run_cli("workloads emit no_such_workload").first, usage);
  EXPECT_EQ(run_cli("workloads emit relu --size huge").first, usage);
  EXPECT_EQ(run_cli("workloads emit relu --format xml").first, usage);
  EXPECT_EQ(run_cli("workloads emit max_pool_2d --set kernel=99").first, usage);
  EXPECT_EQ(run_cli("workloads emit max_pool_2d --size tiny --set padding=2 --set kernel=3").first, usage);
  EXPECT_EQ(run_cli("workloads emit relu --set batch=x").first, usage);
}

}  // namespace
}  // namespace steptp::workloads
