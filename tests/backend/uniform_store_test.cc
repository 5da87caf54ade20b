// A uniform store (LEIR.md §3): `B^{128}_{tx=0}[F^{f64,g}=log(I^{f64,g});]` after a parallel
// reduction into I, as the public translator writes the end of the level-2 Gemm -> Sigmoid ->
// Sum -> LogSumExp chain. It validates, runs (race checks on), equals PyTorch, and lowers for the
// CPU (compiled, run, equal to the interpreter), CUDA (one store, by thread 0; nvcc compiles it
// where nvcc is installed) and TIR (T.where on the first iteration; real TVM parses, builds and
// runs it where the project venv has apache-tvm). A store that is not uniform stays a race.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>

#include "lower/cpu/cpu_program.h"
#include "lower/cuda/cuda_codegen.h"
#include "lower/tir/tvmscript.h"
#include "backend_test_util.h"
#include "ir/interp/inputs.h"
#include "ir/interp/interpreter.h"
#include "ir/leir/program_io.h"
#include "ir/leir/validate.h"
#include "file_text.h"

namespace steptp::backend {
namespace {

const char* kChain =
    "input X: f64[128,16]\n"
    "param W: f64[32,16] as \"gemm.weight\"\n"
    "param C: f64[32] as \"gemm.bias\"\n"
    "output F: f64[]\n"
    "B^{128}_{tx=0}L^{32}_{a=0}L^{16}_{c=0}[G^{f64,g}_{tx,a}=G^{f64,g}_{tx,a}+X^{f64,g}_{tx,c}*W^{f64,g}_{a,c};];"
    "B^{128}_{tx=0}L^{32}_{a=0}[S^{f64,g}_{tx}=S^{f64,g}_{tx}+sigmoid(G^{f64,g}_{tx,a}+C^{f64,g}_{a});];"
    "B^{128}_{tx=0}[I^{f64,g}=I^{f64,g}+exp(S^{f64,g}_{tx});];"
    "B^{128}_{tx=0}[F^{f64,g}=log(I^{f64,g});];";

std::string run_capture(const std::string& cmd) {
  std::string out;
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
  char buf[1 << 14];
  while (pipe && fgets(buf, sizeof buf, pipe.get())) out += buf;
  return out;
}

TEST(UniformStore, ValidatesRunsAndEqualsPyTorch) {
  auto p = leir::program_from_text(kChain, "chain.leir");
  auto report = leir::validate_all(p);
  EXPECT_TRUE(report.ok()) << (report.ok() ? "" : report.errors[0].format());
  auto inputs = interp::generate_inputs(p, 11, interp::InputProfile::Domain);
  interp::RunOptions ro;
  ro.detect_races = true;
  auto out = interp::run_program(p, inputs, ro);
  ASSERT_EQ(out.at("F").data.size(), 1u);
  double f = out.at("F").data[0];
  ASSERT_TRUE(std::isfinite(f));
  // PyTorch: logsumexp over the batch of the row sums of sigmoid(X W^T + C).
  testing::TempDir dir("uniform-torch");
  std::ofstream(dir.path + "/in.json") << leir::values_to_json(inputs).dump();
  std::string py = fmt::format(
      "import json, torch\n"
      "v = json.load(open('{}/in.json'))\n"
      "t = {{k: torch.tensor(x['data'], dtype=torch.float64).reshape(x['shape']) for k, x in v.items()}}\n"
      "y = torch.sigmoid(torch.nn.functional.linear(t['X'], t['W'], t['C'])).sum(1)\n"
      "print(repr(torch.logsumexp(y, 0).item()))\n",
      dir.path);
  std::ofstream(dir.path + "/ref.py") << py;
  std::string got = run_capture("/usr/bin/python3 " + dir.path + "/ref.py 2>&1");
  double ref = std::strtod(got.c_str(), nullptr);
  ASSERT_NE(ref, 0.0) << got;
  EXPECT_NEAR(f, ref, 1e-12 * std::abs(ref)) << got;
}

TEST(UniformStore, NonUniformStoreIsStillARace) {
  // The value depends on tx: different iterations store different values into F.
  std::string racy = std::string(kChain).replace(std::string(kChain).rfind("log(I^{f64,g})"), 14,
                                                 "log(I^{f64,g})+tx");
  auto p = leir::program_from_text(racy, "racy.leir");
  auto report = leir::validate_all(p);
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.errors[0].message.find("is not independent"), std::string::npos) << report.errors[0].message;
  // A store that reads what the loop writes is not uniform either.
  auto q = leir::program_from_text(
      "input A: f64[8]\noutput F: f64[]\nB^{8}_{tx=0}[E^{f64,g}_{tx}=A^{f64,g}_{tx};F^{f64,g}=E^{f64,g}_{0};];",
      "q.leir");
  EXPECT_FALSE(leir::validate_all(q).ok());
}

TEST(UniformStore, LowersForCpuCudaAndTir) {
  auto p = leir::program_from_text(kChain, "chain.leir");
  auto inputs = interp::generate_inputs(p, 12, interp::InputProfile::Domain);
  auto expected = interp::run_program(p, inputs);
  // CPU: compiled and run.
  testing::TempDir dir("uniform-lower");
  cpu::KernelCompiler cc({.cache_dir = dir.path, .jobs = 1});
  auto built = cpu::build_cpu_program(p, {.all_f64 = true}, &cc);
  auto cpu_out = built->run(inputs);
  EXPECT_EQ(testing::compare_values(cpu_out, expected, 0, 1e-12), "");
  // CUDA: one store, by the first thread.
  auto cu = cuda::generate_cuda(p, "uniform_launch");
  EXPECT_NE(cu.code.find("if (v_tx == 0) t_F[0] = "), std::string::npos) << cu.code;
  if (std::filesystem::exists("/usr/local/cuda/bin/nvcc")) {
    std::ofstream(dir.path + "/u.cu") << cuda::cuda_prelude() << cu.code;
    std::string cmd = fmt::format("/usr/local/cuda/bin/nvcc -std=c++17 -arch=sm_90 -c -o {0}/u.o {0}/u.cu > {0}/nvcc.log 2>&1",
                                  dir.path);
    EXPECT_EQ(std::system(cmd.c_str()), 0) << slurp(dir.path + "/nvcc.log");
  }
  // TIR: the GPU-bound form parses, the CPU-compatible form builds and runs in real TVM.
  std::string tir_gpu = tir::emit_tvmscript(p);
  EXPECT_NE(tir_gpu.find("T.where(tx == 0)"), std::string::npos) << tir_gpu;
  std::string py = std::string(STEPTP_SOURCE_DIR) + "/.venv/bin/python3";
  if (!std::filesystem::exists(py)) GTEST_SKIP() << "no project venv with apache-tvm";
  std::string base = dir.path + "/chain";
  std::ofstream(base + ".tir") << tir::emit_tvmscript(p, {.cpu_compatible = true});
  std::ofstream(base + ".parse.tir") << tir_gpu;
  std::ofstream(base + ".inputs.json") << leir::values_to_json(inputs).dump();
  std::ofstream(base + ".expected.json") << leir::values_to_json(expected).dump();
  std::ofstream(base + ".known.json") << leir::program_to_json(p)["known"].dump();
  std::string line = run_capture(fmt::format("TVM_FFI_DISABLE_TORCH_C_DLPACK=1 {} {}/tests/backend/tvm_check.py {} 2>/dev/null",
                                             py, STEPTP_SOURCE_DIR, dir.path));
  auto j = nlohmann::json::parse(line, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << line;
  EXPECT_TRUE(j["parsed"].get<bool>()) << line;
  EXPECT_TRUE(j["built"].get<bool>()) << line;
  EXPECT_TRUE(j["match"].get<bool>()) << line;
}

}  // namespace
}  // namespace steptp::backend
