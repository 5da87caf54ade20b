// Real TVM accepts the emitted TVMScript: every suite program (suite.h: examples, corpus, goldens
// and every tiny workload) is emitted, parsed by apache-tvm (the project venv, .venv), built for
// llvm, run on seeded inputs and compared with the reference interpreter. The GPU-bound variant
// (thread bindings, shared scopes) is parsed too; the run uses the cpu_compatible variant (LLVM
// has no threadIdx). The legacy T.block dialect is checked the same way against the TVM
// 0.22.dev0 bundled with tilelang 0.1.6.post1 (.venv-tvm-old, scripts/deps-tvm-legacy.sh): no
// apache-tvm on PyPI reads T.block any more (0.25-0.27 spell blocks T.sblock). That TVM has no
// LLVM, so its modules are built for the C target and compiled by the system compiler.
// Heavy: importing TVM and building ~220 modules takes several minutes (two checker processes).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>

#include <nlohmann/json.hpp>

#include "lower/tir/tvmscript.h"
#include "backend_test_util.h"
#include "suite.h"
#include "ir/interp/inputs.h"
#include "ir/interp/interpreter.h"
#include "ir/leir/diagnostic.h"
#include "ir/leir/program_io.h"

namespace steptp::backend {
namespace {

struct Tally {
  int programs = 0, rejected = 0, parsed = 0, built = 0, matched = 0;
  std::vector<std::string> failures;
  std::vector<std::string> build_errors;  // parsed, but TVM could not build the module
};

Tally run_against(const std::string& python, tir::TirDialect dialect, const std::string& tag) {
  std::vector<std::string> emit_errors;
  auto suite = testing::suite_programs(&emit_errors);
  EXPECT_EQ(emit_errors, std::vector<std::string>{});
  testing::TempDir dir("tvm-" + tag);
  Tally t;
  for (size_t i = 0; i < suite.size(); ++i) {
    const auto& p = suite[i].program;
    std::string base = fmt::format("{}/p{:03}_{}_{}", dir.path, i, suite[i].origin, p.name);
    ++t.programs;
    try {
      std::ofstream(base + ".tir") << tir::emit_tvmscript(p, {.dialect = dialect, .cpu_compatible = true});
      std::ofstream(base + ".parse.tir") << tir::emit_tvmscript(p, {.dialect = dialect});
    } catch (const leir::LeirError& e) {
      ++t.rejected;
      std::cout << "[tir] rejected " << p.name << ": " << e.message() << "\n";
      std::filesystem::remove(base + ".tir");
      continue;
    }
    auto inputs = interp::generate_inputs(p, 17 + i);
    std::ofstream(base + ".inputs.json") << leir::values_to_json(inputs).dump();
    std::ofstream(base + ".expected.json") << leir::values_to_json(interp::run_program(p, inputs)).dump();
    std::ofstream(base + ".known.json") << leir::program_to_json(p)["known"].dump();
  }
  // Two checker processes (each takes every second file), read in turn.
  auto check_shard = [&](int shard) {
    std::string cmd = fmt::format("TVM_FFI_DISABLE_TORCH_C_DLPACK=1 {} {}/tests/backend/tvm_check.py {} {} 2 2>/dev/null",
                                  python, STEPTP_SOURCE_DIR, dir.path, shard);
    std::vector<std::string> lines;
    std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
    char buf[1 << 16];
    while (pipe && fgets(buf, sizeof buf, pipe.get())) lines.push_back(buf);
    return lines;
  };
  auto other = std::async(std::launch::async, check_shard, 1);
  auto lines = check_shard(0);
  for (auto& l : other.get()) lines.push_back(l);
  for (const auto& line : lines) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded()) continue;
    t.parsed += j["parsed"].get<bool>();
    t.built += j["built"].get<bool>();
    t.matched += j["match"].get<bool>();
    if (!j["match"].get<bool>()) t.failures.push_back(j["name"].get<std::string>() + ": " + j["error"].get<std::string>());
    if (j["parsed"].get<bool>() && !j["built"].get<bool>()) t.build_errors.push_back(j["error"].get<std::string>());
  }
  std::sort(t.failures.begin(), t.failures.end());
  int accepted = t.programs - t.rejected;
  std::cout << fmt::format("[tir {}] {} programs, {} rejected by the target; of {} accepted: {} parsed, {} built, {} match "
                           "the interpreter ({:.1f}%)\n",
                           tag, t.programs, t.rejected, accepted, t.parsed, t.built, t.matched,
                           accepted ? 100.0 * t.matched / accepted : 0.0);
  for (const auto& f : t.failures) std::cout << "  " << f.substr(0, 400) << "\n";
  return t;
}

TEST(TvmScriptRealTvm, CurrentDialectAcceptedBuiltAndCorrect) {
  std::string py = std::string(STEPTP_SOURCE_DIR) + "/.venv/bin/python3";
  if (!std::filesystem::exists(py)) GTEST_SKIP() << "no project venv with apache-tvm";
  auto t = run_against(py, tir::TirDialect::Current, "sblock");
  EXPECT_EQ(t.matched, t.programs - t.rejected);
}

TEST(TvmScriptRealTvm, LegacyDialectAgainstOlderTvm) {
  std::string py = std::string(STEPTP_SOURCE_DIR) + "/.venv-tvm-old/bin/tvm-python";
  if (!std::filesystem::exists(py)) GTEST_SKIP() << "no .venv-tvm-old (scripts/deps-tvm-legacy.sh: a TVM that reads T.block)";
  auto t = run_against(py, tir::TirDialect::Legacy, "block");
  // Every accepted program parses, and every module TVM builds matches the interpreter. The C
  // backend (that TVM's only CPU codegen) cannot build a few constructs the LLVM backend of the
  // current dialect builds: float64 vectors, fabs, loops that do not start at 0. Only those may
  // fail to build.
  EXPECT_EQ(t.parsed, t.programs - t.rejected);
  EXPECT_EQ(t.matched, t.built);
  for (const auto& e : t.build_errors)
    EXPECT_TRUE(e.find("Unresolved call Op(tir.fabs)") != std::string::npos ||
                e.find("to C type") != std::string::npos || e.find("is_zero(op->min)") != std::string::npos)
        << e;
  EXPECT_GE(t.built, (t.programs - t.rejected) * 9 / 10);
}

}  // namespace
}  // namespace steptp::backend
