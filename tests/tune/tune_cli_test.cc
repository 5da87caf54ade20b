// `steptp tune` end to end with the real CPU runner: a run killed mid-way resumes and its files
// equal a rerun on its final store; a two-task program is tuned as tasks (--no-tasks: as one root);
// a tune folder trains a cost model; bad options and unreadable files are clear errors; progress
// lines without a TTY, none with --quiet.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "ir/leir/program_io.h"
#include "shell_command.h"
#include "search/tune/database.h"
#include "transform/trace.h"
#include "ir/verify/verifier.h"
#include "file_text.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace steptp::tune {
namespace {

fs::path tmp(const std::string& name) {
  fs::path p = fs::temp_directory_path() / ("steptp_tune_cli_test_" + std::to_string(getpid())) / name;
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

using Run = steptp::testing::ShellResult;
Run run(const std::string& args) { return steptp::testing::run_shell(std::string(STEPTP_EXE) + " " + args + " 2>&1"); }

fs::path write_root(const fs::path& dir) {
  fs::path p = dir / "root.leir";
  std::ofstream(p) << "name scale\ninput A: f32[64,256]\noutput C: f32[64,256]\n"
                      "B^{64}_{tx=0}L^{256}_{a=0}[C^{f32,g}_{tx,a}=A^{f32,g}_{tx,a}*3+exp(A^{f32,g}_{tx,a});];\n";
  return p;
}

TEST(TuneCli, KilledRunResumesAndEqualsARerunOnItsFinalStore) {
  auto dir = tmp("resume");
  auto root = write_root(dir);
  const std::string args = root.string() + " --trials 10 --seed 5 --threads 1 --out ";
  // Start, wait until some measurements are stored, kill -9.
  pid_t pid = fork();
  if (pid == 0) {
    int null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    dup2(null, 2);
    std::string out = (dir / "a").string(), file = root.string();
    execl(STEPTP_EXE, STEPTP_EXE, "tune", file.c_str(), "--trials", "10", "--seed", "5", "--threads", "1", "--out",
          out.c_str(), nullptr);
    _exit(127);
  }
  auto t0 = std::chrono::steady_clock::now();
  bool killed = false;
  while (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(300)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    if (waitpid(pid, nullptr, WNOHANG) == pid) break;  // finished before we could kill it
    if (!fs::exists(dir / "a" / "measurements.sqlite")) continue;
    try {
      if (ObservationStore(((dir / "a" / "measurements.sqlite")).string()).size() >= 3) {
        kill(pid, SIGKILL);
        waitpid(pid, nullptr, 0);
        killed = true;
        break;
      }
    } catch (const std::exception&) {
    }
  }
  EXPECT_TRUE(killed) << "the run ended before it could be killed";
  auto resumed = run("tune " + args + (dir / "a").string());
  ASSERT_EQ(resumed.code, 0) << resumed.out;
  // A fresh folder given a copy of the final store: identical files.
  fs::create_directories(dir / "b");
  fs::copy_file(dir / "a" / "measurements.sqlite", dir / "b" / "measurements.sqlite");
  auto rerun = run("tune " + args + (dir / "b").string());
  ASSERT_EQ(rerun.code, 0) << rerun.out;
  for (const char* f : {"best.json", "trajectory.json", "result.json"})
    EXPECT_EQ(slurp(dir / "a" / f), slurp(dir / "b" / f)) << f << (killed ? " (after a kill)" : "");
  // The result is real: the best program verifies against the root and the trace replays to it.
  auto result = json::parse(slurp(dir / "a" / "result.json"));
  EXPECT_EQ(result["trials_measured"], 10);
  EXPECT_GT(result["root_time_s"].get<double>(), 0);
  // The roofline: A read and C written once (64 x 256 f32 each), their copy timed.
  EXPECT_EQ(result["roofline"]["read_bytes"], 64 * 256 * 4);
  EXPECT_EQ(result["roofline"]["write_bytes"], 64 * 256 * 4);
  EXPECT_GT(result["roofline"]["copy_ms"].get<double>(), 0);
  leir::Program rootp = leir::read_programs(root.string()).front();
  leir::Program best = leir::read_programs((dir / "a" / "best.json").string()).front();
  EXPECT_TRUE(verify::verify(rootp, best, verify::VerifyOptions{.trials = 2}).equivalent);
  strategies::Trace t;
  for (const auto& s : json::parse(slurp(dir / "a" / "trajectory.json"))) t.push_back(strategies::step_from_json(s));
  EXPECT_EQ(leir::program_to_text(strategies::replay(rootp, t), false), leir::program_to_text(best, false));
}

// A program of two tasks (the analytic model times them: deterministic): tuned task by task by
// default, with "tasks" in result.json, the composed best verified and replayed from its
// trajectory, the same files from a rerun on the store; --no-tasks tunes it as one root.
TEST(TuneCli, TwoTaskProgramIsTunedAsTasksUnlessNoTasks) {
  auto dir = tmp("tasks");
  fs::path root = dir / "two.leir";
  std::ofstream(root) << "name two\ninput A: f32[64,256]\ninput X: f32[128,64]\noutput C: f32[64,256]\n"
                         "output D: f32[128,64]\n"
                         "L^{64}_{a=0}L^{256}_{c=0}[C^{f32,g}_{a,c}=A^{f32,g}_{a,c}*3+exp(A^{f32,g}_{a,c});];\n"
                         "L^{128}_{a=0}L^{64}_{c=0}[D^{f32,g}_{a,c}=max(X^{f32,g}_{a,c},0);];\n";
  const std::string args = "tune " + root.string() + " --measure model --trials 12 --seed 2 --threads 1 --quiet --out ";
  auto a = run(args + (dir / "a").string());
  ASSERT_EQ(a.code, 0) << a.out;
  auto result = json::parse(slurp(dir / "a" / "result.json"));
  ASSERT_TRUE(result.contains("tasks")) << result.dump(1);
  ASSERT_EQ(result["tasks"]["list"].size(), 2u);
  EXPECT_EQ(result["tasks"]["list"][0]["nests"], json::parse("[[0]]"));
  EXPECT_EQ(result["tasks"]["list"][1]["nests"], json::parse("[[1]]"));
  int given = 0;
  for (const auto& t : result["tasks"]["list"]) given += t["trials"].get<int>();
  EXPECT_EQ(given, result["trials_measured"].get<int>());
  EXPECT_LE(given, 12);
  EXPECT_GT(result["tasks"]["composed"]["steps"].get<int>(), 0);
  EXPECT_TRUE(result["tasks"]["composed"]["verified"].get<bool>());
  leir::Program rootp = leir::read_programs(root.string()).front();
  leir::Program best = leir::read_programs((dir / "a" / "best.json").string()).front();
  EXPECT_TRUE(verify::verify(rootp, best, verify::VerifyOptions{.trials = 2}).equivalent);
  strategies::Trace t;
  for (const auto& s : json::parse(slurp(dir / "a" / "trajectory.json"))) t.push_back(strategies::step_from_json(s));
  EXPECT_EQ(leir::program_to_text(strategies::replay(rootp, t), false), leir::program_to_text(best, false));
  // A rerun on a copy of the store: the same files.
  fs::create_directories(dir / "b");
  fs::copy_file(dir / "a" / "measurements.sqlite", dir / "b" / "measurements.sqlite");
  auto b = run(args + (dir / "b").string());
  ASSERT_EQ(b.code, 0) << b.out;
  for (const char* f : {"best.json", "trajectory.json", "result.json"})
    EXPECT_EQ(slurp(dir / "a" / f), slurp(dir / "b" / f)) << f;
  auto whole = run(args + (dir / "c").string() + " --no-tasks");
  ASSERT_EQ(whole.code, 0) << whole.out;
  EXPECT_FALSE(json::parse(slurp(dir / "c" / "result.json")).contains("tasks"));
}

// A tune output folder is a cost model's training source (`steptp cost-model train DIR`): the
// candidates its store keeps train a model of its machine kind, another kind (--threads) is
// refused, and a `--measure model` folder (estimates, not timings) keeps none and says so.
TEST(TuneCli, ATuneFolderTrainsACostModelOfItsMachineKind) {
  auto dir = tmp("train");
  auto root = write_root(dir);
  auto a = run("tune " + root.string() + " --trials 6 --seed 1 --threads 1 --quiet --out " + (dir / "a").string());
  ASSERT_EQ(a.code, 0) << a.out;
  auto t = run("cost-model train " + (dir / "a").string() + " --threads 1 --json -o " + (dir / "m.json").string());
  ASSERT_EQ(t.code, 0) << t.out;
  const json j = json::parse(t.out.substr(t.out.find('{')));
  const json result = json::parse(slurp(dir / "a" / "result.json"));
  EXPECT_EQ(j["kept"].get<int>(), result["measured_ok"].get<int>() + 1) << "each measured candidate and the root";
  EXPECT_EQ(j["records"], 0);
  EXPECT_EQ(j["roots"], 1);
  EXPECT_EQ(j["workloads"], json::array({"scale"}));
  EXPECT_TRUE(fs::exists(dir / "m.json"));
  auto other = run("cost-model train " + (dir / "a").string() + " --threads 2 -o " + (dir / "m2.json").string());
  EXPECT_EQ(other.code, 1) << other.out;
  EXPECT_NE(other.out.find("the candidates of scale: measured on machine kind"), std::string::npos) << other.out;
  EXPECT_FALSE(fs::exists(dir / "m2.json"));
  auto b = run("tune " + root.string() + " --measure model --trials 4 --threads 1 --quiet --out " + (dir / "b").string());
  ASSERT_EQ(b.code, 0) << b.out;
  auto estimates = run("cost-model train " + (dir / "b").string() + " --threads 1 -o " + (dir / "m3.json").string());
  EXPECT_EQ(estimates.code, 1) << estimates.out;
  EXPECT_NE(estimates.out.find("no candidate programs in this store"), std::string::npos) << estimates.out;
}

TEST(TuneCli, BadOptionsAndFilesAreClearErrors) {
  auto dir = tmp("bad");
  auto root = write_root(dir);
  auto r = run("tune " + (dir / "missing.leir").string() + " --out " + (dir / "o").string());
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("missing.leir"), std::string::npos) << r.out;
  r = run("tune " + root.string() + " --trials 0");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--trials"), std::string::npos) << r.out;
  r = run("tune " + root.string() + " --trials many");
  EXPECT_EQ(r.code, 2) << r.out;
  r = run("tune " + root.string() + " --bogus");
  EXPECT_EQ(r.code, 2) << r.out;
  std::ofstream(dir / "broken.leir") << "input A: f32[4]\noutput C: f32[4]\nL^{4}_{a=0}[C^{f32,g}_{a}=A^{f32,g}_{q};];\n";
  r = run("tune " + (dir / "broken.leir").string() + " --out " + (dir / "o").string());
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("broken.leir:3:"), std::string::npos) << r.out;
  std::ofstream(dir / "file") << "x";
  r = run("tune " + root.string() + " --out " + (dir / "file").string());
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("cannot create output folder"), std::string::npos) << r.out;
}

// stderr to a file (no TTY): a start line, trial lines with done/budget, elapsed and ETA, the
// stage's end and a final line; stdout is the --json object alone. --quiet: nothing on stderr.
TEST(TuneCli, WithoutATtyProgressLinesAndQuietNone) {
  auto dir = tmp("progress");
  auto root = write_root(dir);
  const std::string cmd =
      std::string(STEPTP_EXE) + " tune " + root.string() + " --trials 3 --seed 2 --threads 1 --json";
  auto r = steptp::testing::run_shell(cmd + " --out " + (dir / "a").string() + " 2>" + (dir / "a.err").string());
  ASSERT_EQ(r.code, 0) << r.out;
  const json result = json::parse(r.out);
  std::vector<std::string> lines;
  {
    std::istringstream in(slurp(dir / "a.err"));
    for (std::string l; std::getline(in, l);) lines.push_back(l);
  }
  ASSERT_GE(lines.size(), 3u) << slurp(dir / "a.err");
  EXPECT_TRUE(
      std::regex_match(lines.front(), std::regex(R"(tune: search started \(scale, 3 trials\) \| elapsed \d+s)")))
      << lines.front();
  const std::regex trial(R"(tune: trials (\d)/3 round \d+, best \S+ ms, speedup \S+x \| elapsed \S+ \| eta \S+)");
  int last = 0;
  for (size_t i = 1; i + 2 < lines.size(); ++i) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(lines[i], m, trial)) << lines[i];
    EXPECT_GT(std::stoi(m[1]), last) << "trials count up";
    last = std::stoi(m[1]);
  }
  EXPECT_EQ(last, result["trials_measured"].get<int>()) << "the last round's line always shows";
  EXPECT_TRUE(std::regex_match(lines[lines.size() - 2], std::regex(R"(tune: search done in \S+ \| elapsed \S+)")))
      << lines[lines.size() - 2];
  EXPECT_TRUE(std::regex_match(lines.back(), std::regex(R"(tune: finished: scale: root \S+ ms, best \S+ ms, )"
                                                        R"(speedup \S+x after 3 trials \| wall \S+)")))
      << lines.back();
  r = steptp::testing::run_shell(cmd + " --quiet --out " + (dir / "b").string() + " 2>" + (dir / "b.err").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(json::parse(r.out).contains("speedup"));
  EXPECT_EQ(slurp(dir / "b.err"), "");
}

}  // namespace
}  // namespace steptp::tune
