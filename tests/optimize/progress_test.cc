// `steptp optimize` without a TTY (stderr to a file, as in a log): a start line, a line per
// finished program with done/total, elapsed time and ETA (rate-limited, the last always), the end
// and a final line; stdout's --json object still parses; --quiet prints nothing on stderr.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "shell_command.h"
#include "file_text.h"
#include "search/tune/machine.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace steptp::optimize {
namespace {

TEST(OptimizeProgress, WithoutATtyLinesAndQuietNone) {
  const fs::path dir = fs::temp_directory_path() / ("steptp_optimize_progress_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::string files;
  for (const char* name : {"first", "second"}) {
    std::ofstream(dir / (std::string(name) + ".leir"))
        << "name " << name << "\ninput A: f64[8,16]\noutput C: f64[8,16]\n"
        << "B^{8}_{tx=0}L^{16}_{a=0}[C^{f64,g}_{tx,a}=A^{f64,g}_{tx,a}*3+1;];\n";
    files += " " + (dir / (std::string(name) + ".leir")).string();
  }
  // The cheap configuration: random proposals, the analytic cost model instead of timing.
  const std::string cmd = std::string(STEPTP_EXE) + " optimize" + files +
                          " --policy random --search greedy --measure model --depth 1 --max-measured 2 --json";
  auto r = steptp::testing::run_shell(cmd + " --out " + (dir / "a").string() + " 2>" + (dir / "a.err").string());
  ASSERT_EQ(r.code, 0) << r.out << slurp(dir / "a.err");
  EXPECT_TRUE(json::parse(r.out).contains("aggregate"));
  std::vector<std::string> lines;
  {
    std::istringstream in(slurp(dir / "a.err"));
    for (std::string l; std::getline(in, l);) lines.push_back(l);
  }
  ASSERT_GE(lines.size(), 4u) << slurp(dir / "a.err");
  EXPECT_TRUE(std::regex_match(lines.front(), std::regex(R"(optimize: run started \(2 programs, policy random, )"
                                                         R"(search greedy\) \| elapsed \d+s)")))
      << lines.front();
  const std::regex program(
      R"(optimize: program ([12])/2 (first|second) done \(best speedup \S+x\) \| elapsed \S+ \| eta \S+)");
  std::smatch m;
  for (size_t i = 1; i + 2 < lines.size(); ++i) EXPECT_TRUE(std::regex_match(lines[i], program)) << lines[i];
  ASSERT_TRUE(std::regex_match(lines[lines.size() - 3], m, program)) << lines[lines.size() - 3];
  EXPECT_EQ(m[1], "2");
  EXPECT_EQ(m[2], "second");
  EXPECT_TRUE(std::regex_match(lines[lines.size() - 2], std::regex(R"(optimize: run done in \S+ \| elapsed \S+)")))
      << lines[lines.size() - 2];
  EXPECT_TRUE(std::regex_match(lines.back(), std::regex(R"(optimize: finished: 2 programs -> .* \| wall \S+)")))
      << lines.back();
  r = steptp::testing::run_shell(cmd + " --quiet --out " + (dir / "b").string() + " 2>" + (dir / "b.err").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(json::parse(r.out).contains("aggregate"));
  EXPECT_EQ(slurp(dir / "b.err"), "");
}

// A generate output's manifest: its eval roots are timed with the records' threads
// (`options.measure_threads`, capped at this machine's cores) unless --threads says otherwise;
// metrics.json says which; two manifests that disagree need --threads.
TEST(OptimizeManifest, EvalRootsAreTimedWithTheRecordsThreads) {
  const fs::path dir = fs::temp_directory_path() / ("steptp_optimize_manifest_" + std::to_string(getpid()));
  fs::remove_all(dir);
  auto write_dataset = [&](const std::string& name, int threads, const std::string& format = "action") {
    fs::create_directories(dir / name);
    std::ofstream(dir / name / "manifest.json")
        << json{{"split", {{"eval_fraction", 0.2}}},
                {"options", {{"measure_threads", threads}, {"answer_format", format}}}}.dump();
    const std::string program =
        "input A: f64[8,16]\noutput C: f64[8,16]\nB^{8}_{tx=0}L^{16}_{a=0}[C^{f64,g}_{tx,a}=A^{f64,g}_{tx,a}*3+1;];\n";
    std::ofstream(dir / name / "steps.jsonl")
        << json{{"split", "eval"}, {"root", {{"hash", "h-" + name}, {"name", name}}}, {"root_program", program}}.dump()
        << "\n";
    return (dir / name / "manifest.json").string();
  };
  const std::string two = write_dataset("two", 2), many = write_dataset("many", 64);
  auto threads_of = [&](const std::string& args, const std::string& run) {
    auto r = steptp::testing::run_shell(std::string(STEPTP_EXE) + " optimize " + args +
                                        " --policy random --search greedy --measure model --depth 1 --max-measured 1"
                                        " --json --quiet --out " + (dir / run).string() + " 2>&1");
    EXPECT_EQ(r.code, 0) << r.out;
    return r.code == 0 ? json::parse(r.out)["threads"].get<int>() : -1;
  };
  EXPECT_EQ(threads_of(two, "a"), std::min(2, tune::core_count()));
  EXPECT_EQ(threads_of(many, "b"), tune::core_count());  // capped at this machine's cores
  EXPECT_EQ(threads_of(two + " --threads 1", "c"), 1);   // an explicit --threads wins
  auto clash = steptp::testing::run_shell(std::string(STEPTP_EXE) + " optimize " + two + " " + many +
                                          " --policy random --measure model --quiet --out " + (dir / "d").string() +
                                          " 2>&1");
  EXPECT_NE(clash.code, 0);
  EXPECT_NE(clash.out.find("give --threads"), std::string::npos) << clash.out;
  fs::remove_all(dir);
}

// A model trained on a dataset is asked in the form its records answer in (the manifest's
// `options.answer_format`) unless --answer-format says otherwise; metrics.json says which; two
// manifests that disagree need --answer-format.
TEST(OptimizeManifest, EvalRootsAreAskedInTheRecordsAnswerFormat) {
  const fs::path dir = fs::temp_directory_path() / ("steptp_optimize_format_" + std::to_string(getpid()));
  fs::remove_all(dir);
  auto write_dataset = [&](const std::string& name, const std::string& format) {
    fs::create_directories(dir / name);
    std::ofstream(dir / name / "manifest.json")
        << json{{"split", {{"eval_fraction", 0.2}}}, {"options", {{"answer_format", format}}}}.dump();
    std::ofstream(dir / name / "steps.jsonl")
        << json{{"split", "eval"},
                {"root", {{"hash", "h-" + name}, {"name", name}}},
                {"root_program", "input A: f64[8,16]\noutput C: f64[8,16]\n"
                                 "B^{8}_{tx=0}L^{16}_{a=0}[C^{f64,g}_{tx,a}=A^{f64,g}_{tx,a}*3+1;];\n"}}
               .dump()
        << "\n";
    return (dir / name / "manifest.json").string();
  };
  const std::string choice = write_dataset("choice", "choice"), ir = write_dataset("ir", "ir");
  auto run = [&](const std::string& args, const std::string& out) {
    return steptp::testing::run_shell(std::string(STEPTP_EXE) + " optimize " + args +
                                      " --policy random --search greedy --measure model --depth 1 --max-measured 1"
                                      " --json --quiet --out " + (dir / out).string() + " 2>&1");
  };
  auto format_of = [&](const std::string& args, const std::string& out) {
    auto r = run(args, out);
    EXPECT_EQ(r.code, 0) << r.out;
    return r.code == 0 ? json::parse(r.out)["answer_format"].get<std::string>() : "";
  };
  EXPECT_EQ(format_of(choice, "a"), "choice");
  EXPECT_EQ(format_of(ir, "b"), "ir");
  EXPECT_EQ(format_of(choice + " --answer-format action", "c"), "action");  // an explicit format wins
  auto clash = run(choice + " " + ir, "d");
  EXPECT_NE(clash.code, 0);
  EXPECT_NE(clash.out.find("give --answer-format"), std::string::npos) << clash.out;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace steptp::optimize
