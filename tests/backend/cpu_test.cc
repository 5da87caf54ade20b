// CPU backend: compiled code against independent oracles — the PyTorch outputs stored with the
// public corpus and the reference interpreter — plus cache, batching, sandbox and determinism.
#include <gtest/gtest.h>

#include <sys/resource.h>

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <thread>

#include "lower/accumulation.h"
#include "lower/cpu/codegen.h"
#include "lower/cpu/cpu_program.h"
#include "lower/cpu/sandbox.h"
#include "backend_test_util.h"
#include "ir/interp/inputs.h"
#include "ir/interp/interpreter.h"
#include "ir/leir/program_io.h"
#include "ir/leir/tensors.h"

namespace steptp::backend {
namespace {

using namespace cpu;
using testing::compare_values;
using testing::TempDir;

// f64 build vs interpreter: both compute in float64; they may differ only by the order of
// parallel reductions (OpenMP combines per-thread partials) and by libm calls compiled with
// different flags, a few ulps per operation.
constexpr double kAtolF64 = 1e-10, kRtolF64 = 1e-9;
// f32 build vs interpreter (float64 arithmetic on the same f32 inputs): each f32 operation
// rounds with eps = 1.2e-7; the test programs reduce over at most ~500 terms of magnitude <= ~10
// (seeded inputs in [-1, 1], small weights), so the worst accumulated error is about
// 500 * 1.2e-7 * 10 = 6e-4 in absolute terms for values of order 1-10, well below 1e-3.
constexpr double kAtolF32 = 1e-3, kRtolF32 = 1e-3;

leir::Program parse(const std::string& text) { return leir::program_from_text(text, "test.leir"); }

TEST(CpuBackend, CorpusMatchesStoredPyTorchOutputs) {
  TempDir dir("cpu-corpus");
  KernelCompiler cc({.cache_dir = dir.path, .jobs = 2});
  auto cases = testing::corpus_cases();
  ASSERT_EQ(cases.size(), 40u);
  std::vector<leir::Program> programs;
  for (const auto& c : cases) programs.push_back(c.program);
  auto built = build_cpu_programs(programs, {.all_f64 = true}, &cc);
  EXPECT_EQ(cc.stats().batches, 1);
  EXPECT_EQ(cc.stats().invocations, 2) << "the corpus kernels compile in one batch of two compiler processes";
  int agree = 0, noted = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    ASSERT_TRUE(built[i].program) << cases[i].program.name << ": " << built[i].error;
    auto out = built[i].program->run(cases[i].inputs);
    std::string diff = compare_values(out, cases[i].expected, 1e-8, 1e-8);
    if (!cases[i].note.empty()) {
      ++noted;  // the LEIR itself differs from PyTorch here (documented in the corpus)
      continue;
    }
    EXPECT_EQ(diff, "") << cases[i].program.name;
    agree += diff.empty();
  }
  EXPECT_EQ(agree + noted, 40);
  std::cout << "[corpus] " << agree << " of " << (40 - noted) << " programs equal PyTorch (" << noted
            << " with documented LEIR/PyTorch differences skipped)\n";
}

// Every example and corpus program, f64 build, on seeded inputs of two profiles.
TEST(CpuBackend, ExamplesAndCorpusMatchInterpreterF64) {
  TempDir dir("cpu-interp");
  KernelCompiler cc({.cache_dir = dir.path});
  std::vector<leir::Program> programs;
  for (auto& c : testing::example_cases()) programs.push_back(c.program);
  for (auto& c : testing::corpus_cases()) programs.push_back(c.program);
  auto built = build_cpu_programs(programs, {.all_f64 = true}, &cc);
  int checked = 0;
  for (size_t i = 0; i < programs.size(); ++i) {
    ASSERT_TRUE(built[i].program) << programs[i].name << ": " << built[i].error;
    for (auto profile : {interp::InputProfile::Ordinary, interp::InputProfile::Signs}) {
      auto inputs = interp::generate_inputs(programs[i], 1234 + i, profile);
      auto want = interp::run_program(programs[i], inputs);
      auto got = built[i].program->run(inputs);
      // The interpreter rounds stores into f32 tensors to f32; the all-f64 build does not.
      bool narrow = false;
      for (const auto& d : programs[i].known) narrow |= d.dtype == leir::DType::F32;
      EXPECT_EQ(compare_values(got, want, narrow ? kAtolF32 : kAtolF64, narrow ? kRtolF32 : kRtolF64), "")
          << programs[i].name;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 2 * 50);
}

TEST(CpuBackend, CacheAndBatching) {
  TempDir dir("cpu-cache");
  auto a = parse("input A: f64[8]\noutput C: f64[8]\nB^{8}_{tx=0}[C^{f64,g}_{tx}=A^{f64,g}_{tx}*3;];");
  auto b = parse("input A: f64[8]\noutput C: f64[8]\nP^{8}_{a=0}[C^{f64,g}_{a}=exp(A^{f64,g}_{a})-7.5;];");
  KernelCompiler first({.cache_dir = dir.path, .jobs = 1});
  auto r1 = build_cpu_programs({a, b, a}, {}, &first);
  ASSERT_TRUE(r1[0].program && r1[1].program && r1[2].program);
  EXPECT_EQ(first.stats().invocations, 1);
  EXPECT_EQ(first.stats().compiled, 2);  // the duplicate is compiled once
  int so_files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path)) so_files += e.path().extension() == ".so";
  EXPECT_EQ(so_files, 2);
  KernelCompiler second({.cache_dir = dir.path});
  auto r2 = build_cpu_programs({b, a}, {}, &second);
  ASSERT_TRUE(r2[0].program && r2[1].program);
  EXPECT_EQ(second.stats().invocations, 0);
  leir::TensorMap in{{"A", {leir::DType::F64, {8}, {0, 1, 2, 3, 4, 5, 6, -1}}}};
  EXPECT_EQ(r2[1].program->run(in).at("C").data[7], -3.0);
  EXPECT_DOUBLE_EQ(r2[0].program->run(in).at("C").data[2], std::exp(2.0) - 7.5);
}

TEST(CpuBackend, CompilerErrorsAreValuesNotCrashes) {
  TempDir dir("cpu-err");
  KernelCompiler cc({.cache_dir = dir.path});
  auto r = cc.compile({std::string("extern \"C\" int ") + std::string(kSymbolPlaceholder) + "(void* const*) { return nope; }",
                       std::string("extern \"C\" int ") + std::string(kSymbolPlaceholder) + "(void* const*) { return 0; }"});
  EXPECT_FALSE(r[0].kernel);
  EXPECT_NE(r[0].error.find("nope"), std::string::npos);
  ASSERT_TRUE(r[1].kernel);  // the batch failed; the good kernel was retried alone
  EXPECT_EQ(r[1].kernel->fn(nullptr), 0);
}

// `n` distinct small programs (elementwise, reduction, parallel loop), so their kernels differ.
std::vector<leir::Program> distinct_programs(int n) {
  std::vector<leir::Program> ps;
  for (int i = 0; i < n; ++i)
    ps.push_back(parse(fmt::format(R"(input A: f64[6,5]
output D: f64[6]
output E: f64[6,5]
B^{{6}}_{{tx=0}}L^{{5}}_{{c=0}}[D^{{f64,g}}_{{tx}}=D^{{f64,g}}_{{tx}}+A^{{f64,g}}_{{tx,c}}*{};];
P^{{6}}_{{a=0}}L^{{5}}_{{c=0}}[E^{{f64,g}}_{{a,c}}=exp(A^{{f64,g}}_{{a,c}})-{}*D^{{f64,g}}_{{a}};];
)",
                                   i + 1, 0.5 * i)));
  return ps;
}

TEST(CpuBackend, BatchSplitOverParallelProcessesGivesSameResults) {
  // The same batch compiled as one translation unit (no PCH) and split over three processes
  // (with the precompiled prelude): every kernel equals the interpreter either way. A distinct
  // flag keeps the keys apart (loaded kernels are shared process-wide by key).
  auto ps = distinct_programs(7);
  TempDir d1("cpu-split1"), d3("cpu-split3");
  KernelCompiler one({.cache_dir = d1.path, .jobs = 1, .precompiled_prelude = false});
  CompilerOptions o3{.cache_dir = d3.path, .jobs = 3};
  o3.flags.push_back("-DSTEPTP_TEST_SPLIT=3");
  KernelCompiler three(o3);
  auto b1 = build_cpu_programs(ps, {}, &one);
  auto b3 = build_cpu_programs(ps, {}, &three);
  EXPECT_EQ(one.stats().invocations, 1);
  EXPECT_EQ(one.stats().pch_builds, 0);
  EXPECT_EQ(three.stats().invocations, 3);
  EXPECT_EQ(three.stats().pch_builds, 1);
  EXPECT_EQ(three.stats().compiled, 14);  // two pieces (nests) per program
  int gch = 0;
  for (const auto& e : std::filesystem::directory_iterator(d3.path)) gch += e.path().extension() == ".gch";
  EXPECT_EQ(gch, 1);
  for (size_t i = 0; i < ps.size(); ++i) {
    ASSERT_TRUE(b1[i].program && b3[i].program) << b1[i].error << b3[i].error;
    EXPECT_NE(b1[i].program->pieces().front().key, b3[i].program->pieces().front().key);
    auto in = interp::generate_inputs(ps[i], 11);
    auto want = interp::run_program(ps[i], in);
    EXPECT_EQ(compare_values(b1[i].program->run(in), want, kAtolF64, kRtolF64), "") << i;
    EXPECT_EQ(compare_values(b3[i].program->run(in), want, kAtolF64, kRtolF64), "") << i;
  }
  // A second compiler on the same cache reuses the kernels and the PCH.
  KernelCompiler again(o3);
  auto more = distinct_programs(9);
  auto b = build_cpu_programs(more, {}, &again);
  for (size_t i = 0; i < more.size(); ++i) ASSERT_TRUE(b[i].program) << b[i].error;
  EXPECT_EQ(again.stats().pch_builds, 0);
  EXPECT_EQ(again.stats().compiled, 4);
  EXPECT_EQ(again.stats().invocations, 3);  // four missing pieces: three chunks
}

TEST(CpuBackend, ErrorInOneChunkIsAttributedToItsKernel) {
  TempDir dir("cpu-chunk-err");
  KernelCompiler cc({.cache_dir = dir.path, .jobs = 2});
  auto fn = [](const std::string& body) {
    return std::string("extern \"C\" int ") + std::string(kSymbolPlaceholder) + "(void* const*) { " + body + " }";
  };
  auto r = cc.compile({fn("return 1;"), fn("return undeclared_name;"), fn("return 2 + 1;"), fn("return 4 * 1 + 0;")});
  // Two chunks of two; the failing one is retried kernel by kernel.
  EXPECT_EQ(cc.stats().invocations, 4);
  EXPECT_EQ(cc.stats().compiled, 3);
  ASSERT_FALSE(r[1].kernel);
  EXPECT_NE(r[1].error.find("undeclared_name"), std::string::npos) << r[1].error;
  int want[] = {1, 0, 3, 4};
  for (int i : {0, 2, 3}) {
    ASSERT_TRUE(r[i].kernel) << i << ": " << r[i].error;
    EXPECT_EQ(r[i].error, "");
    EXPECT_EQ(r[i].kernel->fn(nullptr), want[i]);
  }
}

TEST(CpuBackend, CacheDirRemovedWhileCompilerLives) {
  // The cache is cleaned between two batches of one compiler: it recreates the dir and the PCH.
  TempDir dir("cpu-cleaned");
  CompilerOptions o{.cache_dir = dir.path, .jobs = 1};
  o.flags.push_back("-DSTEPTP_TEST_CLEANED=1");
  KernelCompiler cc(o);
  auto ps = distinct_programs(2);
  ASSERT_TRUE(build_cpu_programs({ps[0]}, {}, &cc)[0].program);
  std::filesystem::remove_all(dir.path);
  auto r = build_cpu_programs({ps[1]}, {}, &cc);
  ASSERT_TRUE(r[0].program) << r[0].error;
  EXPECT_EQ(cc.stats().pch_builds, 2);
  auto in = interp::generate_inputs(ps[1], 2);
  EXPECT_EQ(compare_values(r[0].program->run(in), interp::run_program(ps[1], in), kAtolF64, kRtolF64), "");
}

TEST(CpuBackend, ConcurrentCompilersShareOneCache) {
  // Two compilers (as two processes would) fill one cache with the same kernels at once: both
  // get working kernels, and the cache ends with one object per piece (two per program) and one PCH.
  TempDir dir("cpu-concurrent");
  CompilerOptions o{.cache_dir = dir.path, .jobs = 2};
  o.flags.push_back("-DSTEPTP_TEST_CONCURRENT=1");
  auto ps = distinct_programs(4);
  std::vector<CpuBuildResult> r1, r2;
  {
    KernelCompiler c1(o), c2(o);
    std::thread t1([&] { r1 = build_cpu_programs(ps, {}, &c1); });
    std::thread t2([&] { r2 = build_cpu_programs(ps, {}, &c2); });
    t1.join();
    t2.join();
  }
  int so = 0, gch = 0, tmp = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path)) {
    so += e.path().extension() == ".so" && e.path().filename().string().rfind("tmp-", 0) != 0;
    gch += e.path().extension() == ".gch";
    tmp += e.path().filename().string().rfind("tmp-", 0) == 0;
  }
  EXPECT_EQ(so, 8);
  EXPECT_EQ(gch, 1);
  EXPECT_EQ(tmp, 0);
  for (size_t i = 0; i < ps.size(); ++i) {
    ASSERT_TRUE(r1[i].program && r2[i].program) << r1[i].error << r2[i].error;
    auto in = interp::generate_inputs(ps[i], 5);
    auto want = interp::run_program(ps[i], in);
    EXPECT_EQ(compare_values(r1[i].program->run(in), want, kAtolF64, kRtolF64), "");
    EXPECT_EQ(compare_values(r2[i].program->run(in), want, kAtolF64, kRtolF64), "");
  }
}

TEST(CpuBackend, AccumulationIdentityOnlyForUnsetElements) {
  // C = A@G, then C = C + bias (C is set: no identity), then a max into a fresh tensor.
  auto p = parse(R"(input A: f64[3,4]
param G: f64[4,5]
param H: f64[5]
output E: f64[3]
B^{3}_{tx=0}L^{5}_{a=0}L^{4}_{c=0}[C^{f64,g}_{tx,a}=C^{f64,g}_{tx,a}+A^{f64,g}_{tx,c}*G^{f64,g}_{c,a};];
B^{3}_{tx=0}L^{5}_{a=0}[C^{f64,g}_{tx,a}=C^{f64,g}_{tx,a}+H^{f64,g}_{a};];
B^{3}_{tx=0}L^{5}_{a=0}[E^{f64,g}_{tx}=max(E^{f64,g}_{tx},C^{f64,g}_{tx,a});];
)");
  auto table = leir::build_tensor_table(p);
  auto plan = plan_inits(p, table);
  ASSERT_EQ(plan.accum.size(), 3u);
  EXPECT_EQ(plan.init_before[0].size(), 1u);
  EXPECT_EQ(plan.init_before[1].size(), 0u);
  EXPECT_EQ(plan.init_before[2].size(), 1u);
  EXPECT_TRUE(plan.tracked.empty());
  // A partially written tensor accumulated over its whole range needs per-element tracking.
  auto q = parse(R"(input A: f64[6]
output D: f64[6]
L^{3}_{a=0}[D^{f64,g}_{a}=A^{f64,g}_{a};];
L^{6}_{a=0}L^{2}_{c=0}[D^{f64,g}_{a}=D^{f64,g}_{a}+A^{f64,g}_{a}*c;];
)");
  auto qplan = plan_inits(q, leir::build_tensor_table(q));
  EXPECT_EQ(qplan.tracked.count("D"), 1u);
  // A tiled GEMM (split loops: rows tx*2+i, columns a*4+h, a mixed-radix walk of each dimension)
  // still writes all of C: the bias add after it reads C as set, no mask.
  auto t = parse(R"(input A: f64[4,3]
param G: f64[3,8]
param H: f64[8]
output E: f64[4,8]
B^{2}_{tx=0}L^{2}_{a=0}L^{3}_{c=0}U^{2}_{i=0}V^{4}_{h=0}[C^{f64,g}_{tx*2+i,a*4+h}=C^{f64,g}_{tx*2+i,a*4+h}+A^{f64,g}_{tx*2+i,c}*G^{f64,g}_{c,a*4+h};];
B^{4}_{tx=0}L^{8}_{a=0}[C^{f64,g}_{tx,a}=C^{f64,g}_{tx,a}+H^{f64,g}_{a};];
B^{4}_{tx=0}L^{8}_{a=0}[E^{f64,g}_{tx,a}=C^{f64,g}_{tx,a};];
)");
  auto tplan = plan_inits(t, leir::build_tensor_table(t));
  EXPECT_TRUE(tplan.tracked.empty());
  EXPECT_EQ(tplan.mode.at(&t.body[1].nest.body[0].stmt), InitMode::Set);
  // Columns a*4+h with h < 2 leave gaps (0,1,4,5): not every element, so the bias add tracks.
  auto g = parse(R"(input A: f64[4,8]
param H: f64[8]
output E: f64[4,8]
B^{4}_{tx=0}L^{2}_{a=0}L^{2}_{h=0}[C^{f64,g}_{tx,a*4+h}=C^{f64,g}_{tx,a*4+h}+A^{f64,g}_{tx,a*4+h};];
B^{4}_{tx=0}L^{8}_{a=0}[C^{f64,g}_{tx,a}=C^{f64,g}_{tx,a}+H^{f64,g}_{a};];
B^{4}_{tx=0}L^{8}_{a=0}[E^{f64,g}_{tx,a}=C^{f64,g}_{tx,a};];
)");
  EXPECT_EQ(plan_inits(g, leir::build_tensor_table(g)).tracked.count("C"), 1u);
  TempDir dir("cpu-acc");
  KernelCompiler cc({.cache_dir = dir.path});
  auto built = build_cpu_programs({p, q, t, g}, {}, &cc);
  for (int k = 0; k < 4; ++k) {
    const auto& prog = k == 0 ? p : k == 1 ? q : k == 2 ? t : g;
    ASSERT_TRUE(built[k].program) << built[k].error;
    auto in = interp::generate_inputs(prog, 7);
    EXPECT_EQ(compare_values(built[k].program->run(in), interp::run_program(prog, in), kAtolF64, kRtolF64), "");
  }
}

TEST(CpuBackend, RegisterBlocksKeepTheBitsAndFormOnlyWhereSafe) {
  struct Case {
    const char* what;
    std::string text;
    bool blocked;
  };
  const std::vector<Case> cases = {
      {"tiled GEMM, 4x16 block over k (one loop starts at 3)",
       R"(input A: f32[64,64]
input C: f32[64,64]
output D: f32[64,64]
B^{2}_{tx=0}L^{2}_{f=0}L^{8}_{a=0}L^{4}_{c=0}L^{32}_{g=0}U^{4}_{i=0}V^{16}_{h=3}[D^{f32,g}_{tx*32+a*4+i,c*16+h-3}=D^{f32,g}_{tx*32+a*4+i,c*16+h-3}+A^{f32,g}_{tx*32+a*4+i,f*32+g}*C^{f32,g}_{f*32+g,c*16+h-3};];
)",
       true},
      {"convolution, 4x14 block over channel and window (three loops)",
       R"(input A: f32[1,3,16,16]
param W: f32[8,3,3,3]
output C: f32[1,8,14,14]
B^{1}_{tx=0}P^{2}_{o=0}L^{14}_{y=0}L^{3}_{f=0}L^{3}_{g=0}L^{3}_{h=0}U^{4}_{i=0}V^{14}_{x=0}[C^{f32,g}_{tx,o*4+i,y,x}=C^{f32,g}_{tx,o*4+i,y,x}+W^{f32,g}_{o*4+i,f,g,h}*A^{f32,g}_{tx,f,y+g,x+h};];
)",
       true},
      {"max over a middle loop, a bf16 block",
       R"(input A: f32[16,8,12]
output M: bf16[16,12]
B^{16}_{tx=0}L^{8}_{g=0}L^{12}_{h=0}[M^{bf16,g}_{tx,h}=max(M^{bf16,g}_{tx,h},A^{f32,g}_{tx,g,h});];
)",
       true},
      {"two iterations of the inner loops write one element: no block",
       R"(input A: f32[8,4,4]
output D: f32[7]
L^{8}_{g=0}L^{4}_{i=0}L^{4}_{h=0}[D^{f32,g}_{i+h}=D^{f32,g}_{i+h}+A^{f32,g}_{g,i,h};];
)",
       false},
      {"the statement reads another element of its target: no block",
       R"(input A: f64[8,6]
output D: f64[6]
L^{6}_{h=0}[D^{f64,g}_{h}=A^{f64,g}_{0,h};];
L^{8}_{g=0}L^{5}_{h=0}[D^{f64,g}_{h}=D^{f64,g}_{h}+D^{f64,g}_{h+1}*A^{f64,g}_{g,h};];
)",
       false},
  };
  TempDir dir("cpu-block");
  KernelCompiler cc({.cache_dir = dir.path});
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    auto p = parse(c.text);
    EXPECT_EQ(generate_cpu_kernel(p, {}).code.find("register block") != std::string::npos, c.blocked);
    EXPECT_EQ(generate_cpu_kernel(p, {.register_blocks = false}).code.find("register block"), std::string::npos);
    auto in = interp::generate_inputs(p, 11);
    auto blocked = build_cpu_program(p, {}, &cc)->run(in);
    auto plain = build_cpu_program(p, {.register_blocks = false}, &cc)->run(in);
    EXPECT_EQ(compare_values(blocked, plain, 0, 0), "") << "the block must not change a bit";
    EXPECT_EQ(compare_values(blocked, interp::run_program(p, in), kAtolF32, kRtolF32), "");
  }
  // The convolution's block is loaded once per output row, before the channel loop f: it stays
  // put over all three reduction loops, not only the innermost.
  const std::string conv = generate_cpu_kernel(parse(cases[1].text), {}).code;
  const size_t block = conv.find("b_C[56];  // register block");
  ASSERT_NE(block, std::string::npos);
  EXPECT_LT(block, conv.find("for (int64_t v_f = 0;"));
  EXPECT_GT(block, conv.find("for (int64_t v_y = 0;"));
}

// The pragma in front of the identity pass of the first piece, or "" when that pass is serial.
std::string identity_pass_pragma(const std::string& code) {
  const size_t init = code.find("// accumulation identity");
  if (init == std::string::npos) return "no identity pass";
  const size_t piece = code.rfind("static int steptp_piece_", init), pragma = code.rfind("#pragma", init);
  if (pragma == std::string::npos || pragma < piece) return "";
  return code.substr(pragma, code.find('\n', pragma) - pragma);
}

TEST(CpuBackend, AnIdentityPassRunsOnEveryCoreWhereItsItemDoes) {
  // A convolution-like accumulation under a B loop writes 8 x 64 x 64 = 2^15 elements, with its
  // window loop outside the output's rows (so its identity is a pass before the nest, not stored
  // in it): the pass is parallel too, and the values stay the interpreter's.
  const std::string conv =
      "input A: f64[8,64,67]\nparam W: f64[4]\noutput C: f64[8,64,{}]\n"
      "{}^{{8}}_{{tx=0}}L^{{4}}_{{r=0}}L^{{64}}_{{a=0}}L^{{64}}_{{c=0}}[C^{{f64,g}}_{{tx,a,{}}}=C^{{f64,g}}_{{tx,a,{}}}+"
      "A^{{f64,g}}_{{tx,a,c+r}}*W^{{f64,g}}_{{r}};];";
  const auto parallel = parse(fmt::format(fmt::runtime(conv), 64, "B", "c", "c"));
  const std::string code = generate_cpu_kernel(parallel, {}).code;
  EXPECT_EQ(identity_pass_pragma(code), "#pragma omp parallel for collapse(2)") << code;
  // Serial where the item is (a program on one core), where two iterations may write one
  // element (C[tx, a, c/2]: no two threads store to one element), or where the region is small.
  const auto serial = parse(fmt::format(fmt::runtime(conv), 64, "L", "c", "c"));
  EXPECT_EQ(identity_pass_pragma(generate_cpu_kernel(serial, {}).code), "");
  const auto folded = parse(fmt::format(fmt::runtime(conv), 32, "B", "c//2", "c//2"));
  EXPECT_EQ(identity_pass_pragma(generate_cpu_kernel(folded, {}).code), "");
  // (Its rows a x c hold 1024 elements: too many for a register block, which would start from
  // the identity instead.)
  const auto small = parse(
      "input A: f64[8,64,19]\nparam W: f64[4]\noutput C: f64[8,64,16]\n"
      "B^{8}_{tx=0}L^{4}_{r=0}L^{64}_{a=0}L^{16}_{c=0}[C^{f64,g}_{tx,a,c}=C^{f64,g}_{tx,a,c}+"
      "A^{f64,g}_{tx,a,c+r}*W^{f64,g}_{r};];");
  EXPECT_EQ(identity_pass_pragma(generate_cpu_kernel(small, {}).code), "");
  TempDir dir("cpu-parallel-init");
  KernelCompiler cc({.cache_dir = dir.path});
  for (const auto* q : {&parallel, &folded}) {
    auto in = interp::generate_inputs(*q, 11);
    auto got = build_cpu_program(*q, {}, &cc)->run(in);
    EXPECT_EQ(compare_values(got, interp::run_program(*q, in), kAtolF64, kRtolF64), "");
  }
}

int occurrences(const std::string& code, const std::string& what) {
  int n = 0;
  for (size_t at = code.find(what); at != std::string::npos; at = code.find(what, at + 1)) ++n;
  return n;
}

// `text` keeps one identity pass before its item and stores no identity as `marker` says.
void expect_identity_pass_kept(const std::string& text, const std::string& marker) {
  const std::string code = generate_cpu_kernel(parse(text), {}).code;
  EXPECT_EQ(occurrences(code, "// accumulation identity"), 1) << code;
  EXPECT_EQ(occurrences(code, marker), 0) << code;
}

TEST(CpuBackend, AnAccumulationVisitedInOneStretchStartsFromTheIdentityInTheNest) {
  // A depthwise convolution with its zero pad inlined, in the root's loops: each output element
  // is accumulated over the trailing window loops f, g, h at one iteration of the loops before
  // them. Its identity is stored there, in each of the 9 pieces loop partitioning makes (disjoint
  // rows and columns), and no pass zeroes C before the nest.
  const std::string depthwise =
      "input A: f64[2,4,12,12]\nparam D: f64[4,1,3,3]\noutput C: f64[2,4,12,12]\n"
      "B^{2}_{tx=0}L^{4}_{a=0}L^{12}_{c=0}L^{12}_{d=0}L^{1}_{f=0}L^{3}_{g=0}L^{3}_{h=0}[C^{f64,g}_{tx,a,c,d}="
      "C^{f64,g}_{tx,a,c,d}+if_then_else(1<=c+g<13&1<=d+h<13,A^{f64,g}_{tx,a,c+g-1,d+h-1},0)*D^{f64,g}_{a,f,g,h};];";
  const auto dw = parse(depthwise);
  const std::string code = generate_cpu_kernel(dw, {}).code;
  EXPECT_EQ(identity_pass_pragma(code), "no identity pass") << code;
  EXPECT_EQ(occurrences(code, "] = 0.0;  // identity, before the reduction"), 9) << code;
  const std::string whole = generate_cpu_kernel(dw, {.partition_loops = false}).code;
  EXPECT_EQ(occurrences(whole, "// identity, before the reduction"), 1);
  // The pass stays where an element is visited in several stretches (a window loop outside the
  // output's rows, here 520 of them: too many for a register block, which would start from the
  // identity instead, as the next test shows) and where another statement of the item reads the
  // tensor.
  for (const char* text : {
           "input A: f64[4,522]\nparam W: f64[3]\noutput C: f64[4,520]\n"
           "B^{4}_{tx=0}L^{3}_{r=0}L^{520}_{a=0}[C^{f64,g}_{tx,a}=C^{f64,g}_{tx,a}+A^{f64,g}_{tx,a+r}*W^{f64,g}_{r};];",
           "input A: f64[4,10]\nparam W: f64[3]\noutput C: f64[4,8]\noutput E: f64[4,8]\n"
           "B^{4}_{tx=0}L^{8}_{a=0}[L^{3}_{r=0}[C^{f64,g}_{tx,a}=C^{f64,g}_{tx,a}+A^{f64,g}_{tx,a+r}*W^{f64,g}_{r};];"
           "E^{f64,g}_{tx,a}=C^{f64,g}_{tx,a}*2;];",
       })
    expect_identity_pass_kept(text, "// identity, before the reduction");
  TempDir dir("cpu-init-in-nest");
  KernelCompiler cc({.cache_dir = dir.path});
  auto in = interp::generate_inputs(dw, 13);
  EXPECT_EQ(compare_values(build_cpu_program(dw, {}, &cc)->run(in), interp::run_program(dw, in), kAtolF64, kRtolF64),
            "");
}

TEST(CpuBackend, ARegisterBlockVisitedOnceStartsFromTheIdentity) {
  // A batched product tiled as the tuner's rule tiles it: 2 batches x 4 rows x 8 columns of C in
  // registers over the reduction d, the batch and row subscripts mixing an outer and a block loop
  // (tx*2+i, a*4+h: each outer loop a digit above the block's). Every element is accumulated in
  // one block over one stretch of d, so the block starts from the identity and no pass zeroes C
  // before the parallel nest (that serial pass, whose lines the other core then read back, cost
  // the panel's batched_matmul 6 % on two threads: 0.153 against 0.144 ms).
  const std::string bmm =
      "input A: f32[4,8,6]\ninput G: f32[4,6,16]\noutput C: f32[4,8,16]\n"
      "B^{2}_{tx=0}L^{2}_{a=0}L^{2}_{f=0}L^{6}_{d=0}U^{2}_{i=0}U^{4}_{h=0}V^{8}_{g=0}[C^{f32,g}_{tx*2+i,a*4+h,f*8+g}="
      "C^{f32,g}_{tx*2+i,a*4+h,f*8+g}+A^{f32,g}_{tx*2+i,a*4+h,d}*G^{f32,g}_{tx*2+i,d,f*8+g};];";
  const auto p = parse(bmm);
  const std::string code = generate_cpu_kernel(p, {}).code;
  EXPECT_EQ(occurrences(code, "] = 0.0f;  // identity, starts the register block"), 1) << code;
  EXPECT_EQ(identity_pass_pragma(code), "no identity pass") << code;
  // The pass stays where an element is accumulated in two blocks (a k-tile e outside the column
  // loop f: the second block must start from the first one's sums), where two outer iterations may write
  // one element (a + h with a < 2 is no digit above h < 4), and without register blocks.
  for (const char* text : {
           "input A: f32[4,8,6]\ninput G: f32[4,6,16]\noutput C: f32[4,8,16]\n"
           "B^{2}_{tx=0}L^{2}_{a=0}L^{2}_{e=0}L^{2}_{f=0}L^{3}_{d=0}U^{2}_{i=0}U^{4}_{h=0}V^{8}_{g=0}"
           "[C^{f32,g}_{tx*2+i,a*4+h,f*8+g}=C^{f32,g}_{tx*2+i,a*4+h,f*8+g}+"
           "A^{f32,g}_{tx*2+i,a*4+h,e*3+d}*G^{f32,g}_{tx*2+i,e*3+d,f*8+g};];",
           "input A: f32[4,8,6]\ninput G: f32[4,6,16]\noutput C: f32[4,8,16]\n"
           "B^{2}_{tx=0}L^{2}_{a=0}L^{2}_{f=0}L^{6}_{d=0}U^{2}_{i=0}U^{4}_{h=0}V^{8}_{g=0}[C^{f32,g}_{tx*2+i,a+h,f*8+g}="
           "C^{f32,g}_{tx*2+i,a+h,f*8+g}+A^{f32,g}_{tx*2+i,a*4+h,d}*G^{f32,g}_{tx*2+i,d,f*8+g};];",
       })
    expect_identity_pass_kept(text, "// identity, starts the register block");
  EXPECT_EQ(occurrences(generate_cpu_kernel(p, {.register_blocks = false}).code, "// accumulation identity"), 1);
  // The same operations in the same order as the pass and a store per update: the same bits.
  TempDir dir("cpu-init-in-block");
  KernelCompiler cc({.cache_dir = dir.path});
  auto in = interp::generate_inputs(p, 17);
  auto blocked = build_cpu_program(p, {}, &cc)->run(in);
  EXPECT_EQ(compare_values(blocked, build_cpu_program(p, {.register_blocks = false}, &cc)->run(in), 0, 0), "");
  EXPECT_EQ(compare_values(blocked, interp::run_program(p, in), kAtolF32, kRtolF32), "");
}

TEST(CpuBackend, AParallelLoopOfOneIterationTakesNoReductionClause) {
  // A bound loop of one iteration that no subscript names (a batch of one) around a register block
  // of a max accumulation: the block starts from the identity (the loop moves nothing), so the
  // loop must not carry a reduction clause, whose private copies OpenMP would fold into an output
  // that was never set to -inf (max(0, x) for every negative x).
  const auto p = parse(
      "input A: f32[8,6]\ninput G: f32[6,8]\noutput C: f32[8,8]\n"
      "B^{1}_{b=0}L^{2}_{a=0}L^{6}_{d=0}U^{4}_{h=0}V^{8}_{g=0}[C^{f32,g}_{a*4+h,g}="
      "max(C^{f32,g}_{a*4+h,g},A^{f32,g}_{a*4+h,d}*G^{f32,g}_{d,g});];");
  const std::string code = generate_cpu_kernel(p, {}).code;
  EXPECT_EQ(occurrences(code, "reduction(steptp_max:t_C"), 0) << code;
  TempDir dir("cpu-one-iteration");
  KernelCompiler cc({.cache_dir = dir.path});
  auto in = interp::generate_inputs(p, 5);
  EXPECT_EQ(compare_values(build_cpu_program(p, {}, &cc)->run(in), interp::run_program(p, in), kAtolF32, kRtolF32), "");
}

TEST(CpuBackend, ParallelReductionAcrossBoundLoop) {
  // B loop accumulating into a scalar (the public nll_loss form), int and float, + and max.
  auto p = parse(R"(input A: f64[4000]
output D: f64[]
output M: f64[]
output O: i64[]
B^{4000}_{tx=0}[D^{f64,g}=D^{f64,g}+A^{f64,g}_{tx};];
P^{4000}_{tx=0}[M^{f64,g}=max(M^{f64,g},A^{f64,g}_{tx});];
B^{4000}_{tx=0}[O^{i64,g}=O^{i64,g}+(A^{f64,g}_{tx}>0);];
)");
  TempDir dir("cpu-red");
  KernelCompiler cc({.cache_dir = dir.path});
  auto prog = build_cpu_program(p, {}, &cc);
  EXPECT_NE(prog->source().code.find("reduction(+:t_D[0:1])"), std::string::npos) << prog->source().code;
  EXPECT_NE(prog->source().code.find("reduction(steptp_max:t_M[0:1])"), std::string::npos);
  auto in = interp::generate_inputs(p, 3);
  EXPECT_EQ(compare_values(prog->run(in), interp::run_program(p, in), kAtolF64, kRtolF64), "");
}

TEST(CpuBackend, AnIntegerValuedStatementComputesInInt64AndComparesInFloat) {
  // argmax's index pass in small: an i64 extremum of integers (an i64 tensor, the loop index)
  // chosen by a comparison of f32 values. Computed in the statement's float type, K's odd values
  // above 2^24 rounded to even ones (and every element went to float and back); computed in
  // int64 they are exact. The comparison stays in float: A = 0.5 >= D = 0.25 must hold, which it
  // would not with A and D truncated to integers.
  auto p = parse(R"(input A: f32[3,4]
input D: f32[3]
input K: i64[3,4]
output C: i64[3]
B^{3}_{tx=0}L^{4}_{a=0}[
  C^{i64,g}_{tx}=max(C^{i64,g}_{tx},if_then_else(A^{f32,g}_{tx,a}>=D^{f32,g}_{tx},K^{i64,g}_{tx,a},a));
];
)");
  TempDir dir("cpu-int");
  KernelCompiler cc({.cache_dir = dir.path});
  auto prog = build_cpu_program(p, {}, &cc);
  const std::vector<double> k = {16777217, 16777219, 16777221, 16777223, 33554435, 33554437,
                                 33554439, 33554441, 5,        6,        7,        8};
  leir::TensorMap in{{"A", {leir::DType::F32, {3, 4}, {0.5, 0.5, 0.5, 0, 0, 0.5, 0, 0, 0, 0, 0, 0}}},
                     {"D", {leir::DType::F32, {3}, {0.25, 0.25, 1}}},
                     {"K", {leir::DType::I64, {3, 4}, k}}};
  // Row 0: the largest K with A >= D is 16777221; row 1: 33554437; row 2: no A >= D, the index 3.
  EXPECT_EQ(prog->run(in).at("C").data, (std::vector<double>{16777221, 33554437, 3}));
  EXPECT_EQ(compare_values(prog->run(in), interp::run_program(p, in), 0, 0), "");
}

TEST(CpuBackend, ReusedBuffersStartAsFreshOnes) {
  // Two programs with the same buffers (2 MiB + 1 MiB: pooled sizes); the second writes only the
  // first half of its outputs. After the first has filled every element, the second's unwritten
  // elements must still read as a fresh binding gives them: NaN (float) and 0 (integer).
  constexpr int n = 262144;
  auto full = parse(fmt::format("input A: f64[{0}]\noutput D: f64[{0}]\noutput N: i32[{0}]\n"
                                "L^{{{0}}}_{{a=0}}[D^{{f64,g}}_{{a}}=A^{{f64,g}}_{{a}};N^{{i32,g}}_{{a}}=7;];",
                                n));
  auto half = parse(fmt::format("input A: f64[{0}]\noutput D: f64[{0}]\noutput N: i32[{0}]\n"
                                "L^{{{1}}}_{{a=0}}[D^{{f64,g}}_{{a}}=A^{{f64,g}}_{{a}};N^{{i32,g}}_{{a}}=7;];",
                                n, n / 2));
  TempDir dir("cpu-reuse");
  KernelCompiler cc({.cache_dir = dir.path});
  auto built = build_cpu_programs({full, half}, {}, &cc);
  for (const auto& b : built) ASSERT_TRUE(b.program) << b.error;
  auto in = interp::generate_inputs(full, 3);
  const void* first_mapping = nullptr;
  {
    auto b = built[0].program->bind(in);
    first_mapping = b->data(0);
    built[0].program->run(*b);
    auto out = built[0].program->outputs(*b);
    ASSERT_EQ(out.at("N").data.back(), 7);
  }
  auto check_half = [&](const leir::TensorMap& out) {
    const auto& d = out.at("D").data;
    const auto& c = out.at("N").data;
    EXPECT_EQ(d[0], in.at("A").data[0]);
    EXPECT_TRUE(std::isnan(d[n / 2])) << d[n / 2];
    EXPECT_TRUE(std::isnan(d[n - 1])) << d[n - 1];
    EXPECT_EQ(c[n / 2 - 1], 7);
    EXPECT_EQ(c[n / 2], 0);
    EXPECT_EQ(c[n - 1], 0);
  };
  {
    auto b = built[1].program->bind(in);
    EXPECT_EQ(b->data(0), first_mapping);  // the released mapping was reused
    built[1].program->run(*b);
    check_half(built[1].program->outputs(*b));
  }
  // The sandbox writes into a reused mapping too (the child shares it).
  auto r = run_sandboxed(*built[0].program, in);
  ASSERT_EQ(r.status, RunStatus::Ok) << r.message;
  auto h = run_sandboxed(*built[1].program, in);
  ASSERT_EQ(h.status, RunStatus::Ok) << h.message;
  check_half(h.outputs);
}

// Global intermediates live in a workspace the kernel keeps between calls (lower/cpu/codegen.cc):
// a call finds the previous call's values there, so each call must come out the same (an
// accumulation starts from its identity, never from what is left); a large intermediate is not
// faulted in again on every call (a 40 MB one is above glibc's largest mmap threshold, so a fresh
// allocation per call would fault in its ~10,000 pages each time); two threads calling the same
// kernel at once each get a workspace of their own.
TEST(CpuBackend, IntermediatesLiveInAWorkspaceKeptBetweenCalls) {
  constexpr int n = 10'000'000;  // 40 MB of f32 per tensor
  auto p = parse(fmt::format(
      "input A: f32[{0}]\noutput D: f32[{0}]\noutput S: f32[1]\n"
      "B^{{{0}}}_{{tx=0}}[E^{{f32,g}}_{{tx}}=A^{{f32,g}}_{{tx}}*2;];"
      "L^{{{0}}}_{{a=0}}[T^{{f32,g}}_{{0}}=T^{{f32,g}}_{{0}}+E^{{f32,g}}_{{a}};];"
      "B^{{{0}}}_{{tx=0}}[D^{{f32,g}}_{{tx}}=E^{{f32,g}}_{{tx}}+1;];L^{{1}}_{{a=0}}[S^{{f32,g}}_{{a}}=T^{{f32,g}}_{{a}};];",
      n));
  TempDir dir("cpu-workspace");
  KernelCompiler cc({.cache_dir = dir.path});
  auto built = build_cpu_programs({p}, {}, &cc);
  ASSERT_TRUE(built[0].program) << built[0].error;
  const auto& prog = *built[0].program;
  auto in = interp::generate_inputs(p, 5);
  auto b = prog.bind(in);
  prog.run(*b);
  const auto first = prog.outputs(*b);
  auto faults = [] {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return u.ru_minflt;
  };
  const long before = faults();
  for (int i = 0; i < 4; ++i) prog.run(*b);
  const long per_call = (faults() - before) / 4;
  EXPECT_LT(per_call, 1000) << "minor page faults per call";
  const auto again = prog.outputs(*b);
  EXPECT_EQ(again.at("S").data, first.at("S").data);  // T summed from its identity every call
  EXPECT_EQ(again.at("D").data, first.at("D").data);

  // Two threads at once, each on its own buffers: both get the single-threaded result.
  auto b2 = prog.bind(in);
  std::thread other([&] {
    for (int i = 0; i < 3; ++i) prog.run(*b2);
  });
  for (int i = 0; i < 3; ++i) prog.run(*b);
  other.join();
  EXPECT_EQ(prog.outputs(*b).at("D").data, first.at("D").data);
  EXPECT_EQ(prog.outputs(*b2).at("D").data, first.at("D").data);
  EXPECT_EQ(prog.outputs(*b2).at("S").data, first.at("S").data);
}

// Two programs of one signature bound from the same inputs (a timed comparison): with `share` the
// second reads the first's buffers of the inputs it was given — one copy, so a working set that
// fits the caches once stays cached (docs/tune.md, "One copy of the inputs") — and computes what
// it computes on its own copy. A tensor whose value comes from the signature (a constant) or that
// the first binding lacks is copied as before.
TEST(CpuBackend, BindingCanShareTheInputBuffersOfAnotherBindingOfTheSameInputs) {
  auto naive = parse(
      "input A: f32[4,8,16]\nconstant W: f32[16] = [1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]\noutput C: f32[4,1,16]\n"
      "B^{4}_{tx=0}L^{8}_{a=0}L^{16}_{c=0}[C^{f32,g}_{tx,0,c}=C^{f32,g}_{tx,0,c}+A^{f32,g}_{tx,a,c}*W^{f32,g}_{c};];");
  auto vectorized = parse(
      "input A: f32[4,8,16]\nconstant W: f32[16] = [1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]\noutput C: f32[4,1,16]\n"
      "B^{4}_{tx=0}L^{8}_{a=0}V^{16}_{c=0}[C^{f32,g}_{tx,0,c}=C^{f32,g}_{tx,0,c}+A^{f32,g}_{tx,a,c}*W^{f32,g}_{c};];");
  TempDir dir("cpu-share");
  KernelCompiler cc({.cache_dir = dir.path});
  auto built = build_cpu_programs({naive, vectorized}, {}, &cc);
  for (const auto& b : built) ASSERT_TRUE(b.program) << b.error;
  const auto in = interp::generate_inputs(naive, 9);
  ASSERT_EQ(in.count("W"), 0u);  // W's value is the signature's
  auto first = built[0].program->bind(in);
  auto second = built[1].program->bind(in, first.get());
  auto alone = built[1].program->bind(in);
  EXPECT_EQ(second->data(0), first->data(0));  // A: one buffer
  EXPECT_NE(second->data(1), first->data(1));  // W: a copy
  EXPECT_NE(second->data(2), first->data(2));  // C: each its own output
  EXPECT_NE(alone->data(0), first->data(0));
  built[0].program->run(*first);
  built[1].program->run(*second);
  built[1].program->run(*alone);
  EXPECT_EQ(built[1].program->outputs(*second).at("C").data, built[1].program->outputs(*alone).at("C").data);
  EXPECT_EQ(compare_values(built[1].program->outputs(*second), built[0].program->outputs(*first), 1e-5, 1e-5), "");
  // A binding whose inputs differ in shape shares nothing.
  auto other = parse("input A: f32[4,8,8]\noutput C: f32[4,1,8]\n"
                     "B^{4}_{tx=0}L^{8}_{a=0}L^{8}_{c=0}[C^{f32,g}_{tx,0,c}=C^{f32,g}_{tx,0,c}+A^{f32,g}_{tx,a,c};];");
  auto other_built = build_cpu_programs({other}, {}, &cc);
  ASSERT_TRUE(other_built[0].program) << other_built[0].error;
  auto unshared = other_built[0].program->bind(interp::generate_inputs(other, 9), first.get());
  EXPECT_NE(unshared->data(0), first->data(0));
}

// A program of four pieces: E (local, used by three pieces: a workspace slice), W (local to one
// nest: on its stack), an accumulation into T across a piece boundary.
std::string piecewise_program(int offset) {
  return fmt::format(
      "input A: f64[64]\noutput D: f64[64]\noutput S: f64[1]\n"
      "B^{{64}}_{{tx=0}}[E^{{f64,l}}_{{tx}}=A^{{f64,g}}_{{tx}}*2;];"
      "L^{{8}}_{{a=0}}[L^{{8}}_{{b=0}}[W^{{f64,l}}_{{b}}=E^{{f64,l}}_{{a*8+b}}*E^{{f64,l}}_{{a*8+b}};];"
      "L^{{8}}_{{b=0}}[T^{{f64,g}}_{{0}}=T^{{f64,g}}_{{0}}+W^{{f64,l}}_{{b}};];];"
      "B^{{64}}_{{tx=0}}[D^{{f64,g}}_{{tx}}=E^{{f64,l}}_{{tx}}+{};];L^{{1}}_{{a=0}}[S^{{f64,g}}_{{a}}=T^{{f64,g}}_{{a}};];",
      offset);
}

TEST(CpuBackend, PiecesCompileOnceAndTheReadableKernelAgrees) {
  TempDir dir("cpu-pieces");
  KernelCompiler cc({.cache_dir = dir.path, .jobs = 1});
  auto p1 = parse(piecewise_program(1)), p2 = parse(piecewise_program(2));
  auto src = generate_cpu_kernel(p1);
  ASSERT_EQ(src.pieces.size(), 4u);
  EXPECT_NE(src.pieces[1].code.find("alignas(64) double t_W[8];  // local scope"), std::string::npos) << src.pieces[1].code;
  EXPECT_EQ(src.code.find("double t_E["), std::string::npos) << "E is shared by pieces: a workspace slice";
  auto b1 = build_cpu_programs({p1}, {}, &cc);
  ASSERT_TRUE(b1[0].program) << b1[0].error;
  EXPECT_EQ(cc.stats().compiled, 4);
  // p2 differs from p1 in its third nest only: that piece is the one kernel compiled for it.
  auto b2 = build_cpu_programs({p2}, {}, &cc);
  ASSERT_TRUE(b2[0].program) << b2[0].error;
  EXPECT_EQ(cc.stats().compiled, 5);
  for (const auto& [p, built] : {std::pair{&p1, &b1}, std::pair{&p2, &b2}}) {
    const CpuProgram& prog = *(*built)[0].program;
    auto in = interp::generate_inputs(*p, 3);
    const auto want = interp::run_program(*p, in);
    const auto got = prog.run(in);
    EXPECT_EQ(compare_values(got, want, kAtolF64, kRtolF64), "") << p->name;
    // What `steptp lower` prints compiles as one kernel and computes the same bits.
    auto whole = cc.compile_one(prog.source().code);
    ASSERT_TRUE(whole.kernel) << whole.error;
    auto b = prog.bind(in);
    ASSERT_EQ(whole.kernel->fn(b->args()), 0);
    EXPECT_EQ(compare_values(prog.outputs(*b), got, 0, 0), "");
  }
}

TEST(CpuBackend, ATrackedTensorOnOnePiecesStackKeepsItsFlagsInTheWorkspace) {
  // Two accumulations with different identities into one local element: its identity cannot be
  // placed statically (set flags), and only one piece uses it (so it lives on that piece's stack).
  auto p = parse("input A: f64[4]\noutput D: f64[1]\n"
                 "L^{1}_{a=0}[L^{4}_{i=0}[X^{f64,l}_{0}=X^{f64,l}_{0}+A^{f64,g}_{i};"
                 "X^{f64,l}_{0}=max(X^{f64,l}_{0},A^{f64,g}_{i});];D^{f64,g}_{a}=X^{f64,l}_{0};];");
  auto src = generate_cpu_kernel(p);
  ASSERT_EQ(src.pieces.size(), 1u);
  EXPECT_NE(src.pieces[0].code.find("double t_X[1];"), std::string::npos) << src.pieces[0].code;
  EXPECT_NE(src.pieces[0].code.find("uint8_t* __restrict m_X"), std::string::npos) << src.pieces[0].code;
  TempDir dir("cpu-tracked-local");
  KernelCompiler cc({.cache_dir = dir.path});
  auto built = build_cpu_programs({p}, {}, &cc);
  ASSERT_TRUE(built[0].program) << built[0].error;
  for (uint64_t seed : {1, 2}) {
    auto in = interp::generate_inputs(p, seed);
    auto b = built[0].program->bind(in);
    for (int call = 0; call < 2; ++call) built[0].program->run(*b);  // flags zeroed on every call
    EXPECT_EQ(compare_values(built[0].program->outputs(*b), interp::run_program(p, in), kAtolF64, kRtolF64), "");
  }
}

TEST(CpuBackend, SandboxReportsCrashTimeoutAndMemory) {
  TempDir dir("cpu-sandbox");
  KernelCompiler cc({.cache_dir = dir.path});
  auto crash = parse("input A: f64[4]\ninput C: i64[4]\noutput D: f64[4]\nB^{4}_{tx=0}[D^{f64,g}_{tx}=A^{f64,g}_{C^{i64,g}_{tx}};];");
  auto slow = parse("input A: f64[1]\noutput D: f64[1]\nL^{100000}_{a=0}L^{100000}_{c=0}L^{100000}_{d=0}[D^{f64,g}_{0}=D^{f64,g}_{0}+A^{f64,g}_{0};];");
  auto big = parse("input A: f64[1]\noutput D: f64[1]\nL^{1000000000}_{a=0}[E^{f64,g}_{a}=A^{f64,g}_{0};];L^{1}_{a=0}[D^{f64,g}_{a}=E^{f64,g}_{a};];");
  auto built = build_cpu_programs({crash, slow, big}, {}, &cc);
  for (const auto& b : built) ASSERT_TRUE(b.program) << b.error;

  leir::TensorMap in{{"A", {leir::DType::F64, {4}, {1, 2, 3, 4}}}, {"C", {leir::DType::I64, {4}, {0, 1, 2, 3}}}};
  auto ok = run_sandboxed(*built[0].program, in);
  ASSERT_EQ(ok.status, RunStatus::Ok) << ok.message;
  EXPECT_EQ(ok.outputs.at("D").data, (std::vector<double>{1, 2, 3, 4}));
  in["C"].data = {0, 1, 2, 1e15};
  auto bad = run_sandboxed(*built[0].program, in);
  EXPECT_EQ(bad.status, RunStatus::Crashed) << bad.message;

  leir::TensorMap one{{"A", {leir::DType::F64, {1}, {1}}}};
  auto t = run_sandboxed(*built[1].program, one, {.time_limit_s = 0.3});
  EXPECT_EQ(t.status, RunStatus::TimedOut) << t.message;
  auto m = run_sandboxed(*built[2].program, one, {.time_limit_s = 30, .memory_limit_bytes = int64_t{1} << 30});
  EXPECT_EQ(m.status, RunStatus::OutOfMemory) << m.message;
  // The parent is unharmed and can still run kernels in process.
  EXPECT_EQ(built[0].program->run({{"A", {leir::DType::F64, {4}, {5, 6, 7, 8}}}, {"C", {leir::DType::I64, {4}, {3, 2, 1, 0}}}})
                .at("D").data,
            (std::vector<double>{8, 7, 6, 5}));
}

TEST(CpuBackend, GeneratedSourceIsDeterministic) {
  for (const auto& c : testing::corpus_cases()) {
    auto a = generate_cpu_kernel(c.program);
    auto b = generate_cpu_kernel(leir::program_from_json(leir::program_to_json(c.program)));
    EXPECT_EQ(a.code, b.code) << c.program.name;
  }
}

}  // namespace
}  // namespace steptp::backend
