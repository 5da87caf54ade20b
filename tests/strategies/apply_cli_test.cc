// `steptp apply` verifies every result against its input program by default (issue 11): each
// JSON line carries the verifier's verdict, results that are not verified equivalent (failed or
// inconclusive) are dropped, --explain says why, --no-verify prints them unchecked.
#include <gtest/gtest.h>
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

struct Result {
  int rc = -1;
  std::vector<std::string> lines;  // stdout
};

Result apply(const std::string& args) {
  fs::path dir = fs::path(STEPTP_BINARY_DIR) / "tests_tmp";
  fs::create_directories(dir);
  fs::path out = dir / fmt::format("apply_{}.out", getpid());
  int status = std::system(fmt::format("{} apply {} >{} 2>/dev/null", STEPTP_EXE, args, out.string()).c_str());
  Result r;
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(out);
  for (std::string l; std::getline(in, l);) r.lines.push_back(l);
  fs::remove(out);
  return r;
}

fs::path write(const std::string& name, const std::string& text) {
  fs::path f = fs::path(STEPTP_BINARY_DIR) / "tests_tmp" / fmt::format("{}_{}", getpid(), name);
  fs::create_directories(f.parent_path());
  std::ofstream(f) << text;
  return f;
}

const std::string kMatmul = std::string(STEPTP_SHARED_DIR) + "/examples/matmul.json";

}  // namespace

TEST(ApplyCommand, EveryResultCarriesTheVerdict) {
  auto r = apply(kMatmul + " --strategy loop_reorder --all");
  ASSERT_EQ(r.rc, 0);
  ASSERT_FALSE(r.lines.empty());
  for (const auto& l : r.lines) {
    auto j = nlohmann::json::parse(l);
    ASSERT_TRUE(j.contains("verdict")) << l;
    const auto& v = j["verdict"];
    EXPECT_EQ(v["equivalent"], true) << l;
    EXPECT_TRUE(v["class"] == "exact" || v["class"] == "reassoc") << l;
    EXPECT_EQ(v["trials"], 4);
    EXPECT_GE(v["evidential"].get<int>(), 1);
    EXPECT_DOUBLE_EQ(v["finite_share"].get<double>(), 1.0);
    EXPECT_TRUE(v.contains("worst"));
    EXPECT_TRUE(j.contains("program"));
  }
  // --no-verify: the same results, unchecked.
  auto u = apply(kMatmul + " --strategy loop_reorder --all --no-verify");
  ASSERT_EQ(u.rc, 0);
  ASSERT_EQ(u.lines.size(), r.lines.size());
  for (size_t i = 0; i < u.lines.size(); ++i) {
    auto j = nlohmann::json::parse(u.lines[i]);
    EXPECT_FALSE(j.contains("verdict")) << u.lines[i];
    auto v = nlohmann::json::parse(r.lines[i]);
    v.erase("verdict");
    EXPECT_EQ(j, v);
  }
}

TEST(ApplyCommand, UnverifiedResultsAreDroppedAndExplained) {
  // Every output is NaN by design (log of a negative number): no result can be verified.
  auto f = write("nan.leir",
                 "input A: f64[8,4]\noutput C: f64[8,4]\n"
                 "L^{8}_{a=0}L^{4}_{c=0}[C^{f64,g}_{a,c}=log(-1-A^{f64,g}_{a,c}*A^{f64,g}_{a,c});];\n");
  auto unchecked = apply(f.string() + " --strategy loop_reorder --all --no-verify");
  ASSERT_EQ(unchecked.rc, 0);
  ASSERT_FALSE(unchecked.lines.empty());
  auto r = apply(f.string() + " --strategy loop_reorder --all");
  EXPECT_EQ(r.rc, 0);
  EXPECT_TRUE(r.lines.empty());
  auto e = apply(f.string() + " --strategy loop_reorder --all --explain --json");
  int dropped = 0;
  for (const auto& l : e.lines) {
    auto j = nlohmann::json::parse(l);
    if (!j.contains("verified")) continue;
    ++dropped;
    EXPECT_EQ(j["verified"], false);
    EXPECT_EQ(j["verdict"]["class"], "inconclusive") << l;
    EXPECT_EQ(j["verdict"]["finite_share"], 0.0) << l;
    EXPECT_NE(j["reason"].get<std::string>().find("no trial gave evidence"), std::string::npos) << l;
  }
  EXPECT_EQ(dropped, static_cast<int>(unchecked.lines.size()));
}
