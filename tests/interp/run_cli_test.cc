// `steptp run` end to end: seeded runs are reproducible, --inputs round-trips the values format,
// and errors exit 1 with the diagnostic on stderr.
#include <gtest/gtest.h>
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "ir/interp/inputs.h"
#include "ir/interp/interpreter.h"
#include "ir/leir/program_io.h"

namespace fs = std::filesystem;

namespace steptp::interp_test {
namespace {

struct Result {
  int rc = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

Result steptp(const std::string& args) {
  const fs::path dir = fs::path(STEPTP_BINARY_DIR) / "tests_tmp";
  fs::create_directories(dir);
  const fs::path err = dir / fmt::format("run_cli_err_{}.txt", getpid());
  std::string cmd = fmt::format("{} {} 2>{}", STEPTP_EXE, args, err.string());
  Result r;
  FILE* p = popen(cmd.c_str(), "r");
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  int status = pclose(p);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream e(err);
  r.err.assign(std::istreambuf_iterator<char>(e), {});
  fs::remove(err);
  return r;
}

std::string example(const std::string& name) { return std::string(STEPTP_SHARED_DIR) + "/examples/" + name + ".json"; }

fs::path temp_file(const std::string& stem, const std::string& text) {
  fs::path f = fs::path(STEPTP_BINARY_DIR) / "tests_tmp" / fmt::format("{}_{}", getpid(), stem);
  fs::create_directories(f.parent_path());
  std::ofstream(f) << text;
  return f;
}

TEST(RunCommand, SeededRunIsReproducibleAndMatchesTheLibrary) {
  Result a = steptp("run " + example("layernorm") + " --seed 5");
  Result b = steptp("run " + example("layernorm") + " --seed 5");
  Result c = steptp("run " + example("layernorm") + " --seed 6");
  ASSERT_EQ(a.rc, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
  EXPECT_NE(a.out, c.out);
  auto p = leir::read_programs(example("layernorm")).at(0);
  auto want = interp::run_program(p, interp::generate_inputs(p, 5));
  EXPECT_EQ(nlohmann::json::parse(a.out), leir::values_to_json(want));
}

TEST(RunCommand, GivenInputsAndOutFile) {
  auto p = leir::read_programs(example("matmul")).at(0);
  auto inputs = interp::generate_inputs(p, 9, interp::InputProfile::Signs);
  fs::path in = temp_file("inputs.json", leir::values_to_json(inputs).dump());
  fs::path out = fs::path(STEPTP_BINARY_DIR) / "tests_tmp" / fmt::format("{}_out.json", getpid());
  Result r = steptp(fmt::format("run {} --inputs {} --out {}", example("matmul"), in.string(), out.string()));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(r.out.empty());
  auto got = leir::read_values_file(out.string());
  EXPECT_EQ(got.at("D").data, interp::run_program(p, inputs).at("D").data);
  EXPECT_EQ(got.size(), 1u);  // all known outputs, nothing else
  fs::remove(in);
  fs::remove(out);
}

TEST(RunCommand, ValuesMayBeKeyedByAlias) {
  // LEIR.md §1: any known tensor may keep an original name, and values files may use either.
  fs::path f = temp_file("alias.leir",
                         "input X: f64[2] as \"x\"\nparam W: f64[2] as \"gemm.weight\"\noutput O: f64[2]\n"
                         "L^{2}_{a=0}[O^{f64,g}_{a}=X^{f64,g}_{a}*W^{f64,g}_{a};];\n");
  fs::path v = temp_file("alias.json", R"({"x": {"dtype": "f64", "shape": [2], "data": [2, 3]},
                                          "gemm.weight": {"dtype": "f64", "shape": [2], "data": [5, 7]}})");
  for (const char* target : {"interp", "cpu"}) {
    Result r = steptp("run " + f.string() + " --inputs " + v.string() + " --target " + target);
    ASSERT_EQ(r.rc, 0) << target << ": " << r.err;
    auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["O"]["data"], nlohmann::json::array({10.0, 21.0})) << target;
  }
}

TEST(RunCommand, RuntimeErrorExitsOneWithDiagnostic) {
  fs::path f = temp_file("oob.leir", "input A: f64[3]\noutput C: f64[4]\nL^{4}_{i=0}[C^{f64,g}_{i}=A^{f64,g}_{i};];\n");
  Result r = steptp("run " + f.string());
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find(f.string() + ":3:27: error: index 3 is out of bounds for dimension 0 of A (size 3)"),
            std::string::npos)
      << r.err;
  EXPECT_TRUE(r.out.empty());
  fs::remove(f);
}

TEST(RunCommand, RaceExitsOne) {
  fs::path f = temp_file("race.leir", "input A: f64[4]\noutput C: f64[1]\nP^{4}_{i=0}[C^{f64,g}_{0}=A^{f64,g}_{i};];\n");
  Result r = steptp("run " + f.string());
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("race on loop P^{4}_{i=0}"), std::string::npos) << r.err;
  fs::remove(f);
}

TEST(RunCommand, UnknownTargetAndBadOptions) {
  // An option value the command does not take is a usage error: its kind's exit code (base/error.h,
  // 2 as for an option CLI11 does not parse), the message unchanged.
  Result r = steptp("run " + example("matmul") + " --target cuda");
  EXPECT_EQ(r.rc, base::exit_code(base::ErrorKind::BadRequest));
  EXPECT_EQ(r.rc, 2);
  EXPECT_EQ(r.err, "steptp run: error: unknown target 'cuda' (available: interp, cpu)\n");
  r = steptp("run " + example("matmul") + " --target cpu --intermediates");
  EXPECT_EQ(r.rc, 2);
  EXPECT_EQ(r.err, "steptp run: error: --intermediates needs --target interp (compiled code keeps intermediates "
                   "internal)\n");
  EXPECT_EQ(steptp("run " + example("matmul") + " --no-such-option").rc, 2);
  EXPECT_EQ(steptp("run " + example("matmul") + " --profile loud").rc, 2);
}

}  // namespace
}  // namespace steptp::interp_test
