// Composite programs: determinism, public style, and agreement with PyTorch (200 programs,
// float64, max|leir - torch| / max|torch| <= 1e-10 per output).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "base/error.h"
#include "composite_oracle.h"
#include "ir/leir/program_io.h"
#include "front/workloads/composite.h"
#include "shell_command.h"

namespace steptp::workloads {
namespace {

std::string jsonl(const std::vector<Composite>& cs) {
  std::string out;
  for (const auto& c : cs) out += composite_to_json(c).dump() + "\n";
  return out;
}

TEST(Composite, SameSeedSameBytesAndPrefixStable) {
  auto a = sample_composite_records(30, 11, SizeClass::Tiny);
  auto b = sample_composite_records(30, 11, SizeClass::Tiny);
  EXPECT_EQ(jsonl(a), jsonl(b));
  auto prefix = sample_composite_records(7, 11, SizeClass::Tiny);
  EXPECT_EQ(jsonl(prefix), jsonl(std::vector<Composite>(a.begin(), a.begin() + 7)));
  EXPECT_NE(jsonl(a), jsonl(sample_composite_records(30, 12, SizeClass::Tiny)));
}

TEST(Composite, TwoToFiveComponentsOneSignaturePublicStyle) {
  auto cs = sample_composite_records(100, 3, SizeClass::Tiny);
  std::set<std::string> kinds;
  for (const auto& c : cs) {
    SCOPED_TRACE(c.program.name);
    EXPECT_GE(c.components.size(), 2u);
    EXPECT_LE(c.components.size(), 5u);
    for (const auto& k : c.components) kinds.insert(k);
    int outputs = 0, inputs = 0;
    for (const auto& d : c.program.known) {
      outputs += d.role == leir::Role::Output;
      inputs += d.role == leir::Role::Input;
    }
    EXPECT_EQ(outputs, 1);
    EXPECT_GE(inputs, 1);
    EXPECT_EQ(c.program.known.front().name, "A");  // first input is A
    std::string text = leir::program_to_json(c.program)["leir"].get<std::string>();
    EXPECT_EQ(text.rfind("B^{", 0), 0u) << text.substr(0, 60);
    // The program reads back from its JSON form unchanged.
    auto back = leir::program_from_json(leir::program_to_json(c.program));
    EXPECT_EQ(leir::program_to_json(back).dump(), leir::program_to_json(c.program).dump());
  }
  // The sample covers the level-2 vocabulary: heavy ops, norms, pooling, reductions, attention.
  for (const char* k : {"Gemm", "Conv2d", "GroupNorm", "LayerNorm", "Softmax", "ResidualAdd"})
    EXPECT_TRUE(kinds.count(k)) << "no composite uses " << k;
}

TEST(Composite, LargerSizeClassesEmitLargerPrograms) {
  auto tiny = sample_composites(5, 9, SizeClass::Tiny);
  auto def = sample_composites(5, 9, SizeClass::Default);
  ASSERT_EQ(tiny.size(), def.size());
  int64_t t = 0, d = 0;
  for (size_t i = 0; i < tiny.size(); ++i) {
    t += tiny[i].known.front().numel();
    d += def[i].known.front().numel();
  }
  EXPECT_GT(d, 10 * t);
}

TEST(Composite, TwoHundredAgreeWithPyTorch) {
  auto cs = sample_composite_records(200, 2026, SizeClass::Tiny);
  std::vector<testing::OracleCase> cases;
  for (size_t i = 0; i < cs.size(); ++i)
    cases.push_back({cs[i].program.name, cs[i].program, cs[i].torch_reference, nlohmann::json::object(),
                     1000 + i});
  auto results = testing::run_oracle(cases);
  double worst = 0;
  std::string worst_id;
  int failed = 0;
  for (size_t i = 0; i < results.size(); ++i) {
    const auto& r = results[i];
    bool ok = r.error.empty() && r.rel_err <= 1e-10;
    if (!ok) {
      ++failed;
      ADD_FAILURE() << r.id << ": rel err " << r.rel_err << " " << r.error << "\n" << cs[i].torch_reference;
    }
    if (r.rel_err > worst) worst = r.rel_err, worst_id = r.id;
  }
  std::printf("composites: %zu checked, %d failed, worst relative error %.3g (%s)\n", results.size(), failed,
              worst, worst_id.c_str());
}

#ifdef STEPTP_EXE
TEST(Composite, CliSampleIsDeterministic) {
  namespace fs = std::filesystem;
  fs::path dir = fs::path(STEPTP_BINARY_DIR) / fmt::format("composite_cli_{}", ::getpid());
  fs::create_directories(dir);
  auto run = [&](const std::string& file, int seed) {
    std::string cmd = fmt::format("{} workloads sample --count 12 --seed {} --size tiny --out {} 2>&1", STEPTP_EXE,
                                  seed, (dir / file).string());
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    std::ifstream in(dir / file);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  std::string a = run("a.jsonl", 5), b = run("b.jsonl", 5), c = run("c.jsonl", 6);
  EXPECT_FALSE(a.empty());
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_EQ(a, jsonl(sample_composite_records(12, 5, SizeClass::Tiny)));
  // The file reads back as 12 programs.
  EXPECT_EQ(leir::read_programs((dir / "a.jsonl").string()).size(), 12u);
  // A size class that does not exist: a usage error, exit 2 (base/error.h) with the message.
  auto bad = steptp::testing::run_shell(fmt::format("{} workloads sample --count 3 --seed 1 --size huge --out {} 2>&1",
                                                    STEPTP_EXE, (dir / "x.jsonl").string()));
  EXPECT_EQ(bad.code, base::exit_code(base::ErrorKind::BadRequest));
  EXPECT_EQ(bad.out, "steptp workloads: error: unknown size class 'huge' (expected tiny, small, default or bench)\n");
  // A hyper-parameter out of its range (`emit --set`) is one too.
  auto out_of_range =
      steptp::testing::run_shell(fmt::format("{} workloads emit max_pool_2d --set kernel=99 2>&1", STEPTP_EXE));
  EXPECT_EQ(out_of_range.code, 2);
  EXPECT_NE(out_of_range.out.find("hyper-parameter 'kernel' = 99 is outside its range"), std::string::npos)
      << out_of_range.out;
  fs::remove_all(dir);
}
#endif

}  // namespace
}  // namespace steptp::workloads
