// `mpirun -n 2 steptp generate` on this machine (loopback, as root, oversubscribed, as in CI):
// the same bytes as one process for --cost model; a rank killed mid-run and a rerun give the
// same bytes again, the rerun resuming the killed run's finished roots; measured, two measuring
// ranks (two STEPTP_MEASURE_GROUPs stand for two nodes) give a merged store from which one
// process writes the same bytes without measuring anything. Also: steptp built without MPI
// refuses to run as one of several ranks.
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "dataset/dataset_test_util.h"
#include "mpi/launch.h"
#include "shell_command.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace steptp::mpi {
namespace {

using dataset::testing::slurp;

fs::path tmpdir(const std::string& name) { return dataset::testing::tmpdir("mpi_test", name); }

const std::vector<std::string> kFiles = {"train.jsonl", "eval.jsonl", "steps.jsonl", "manifest.json", "stats.json"};

// Options of every run: by default enough roots that each rank gets several, each root a
// fraction of a second.
std::string generate_args(const fs::path& out, const std::string& extra, int programs = 14, int composites = 2) {
  return fmt::format("generate --out {} --seed 7 --programs {} --composites {} --no-examples --depth 2 --beam 2 "
                     "--eval-fraction 0.4 --token-sample 20 --json {}",
                     out.string(), programs, composites, extra);
}

// Two ranks on loopback in a container, as root: shared memory without the single-copy
// mechanism (CMA needs ptrace rights containers often lack), no core binding (2 ranks may
// exceed the cores CI gives), the test's timing lock passed on.
std::string mpirun(const std::string& rank_command) {
  return fmt::format("env OMPI_MCA_btl_vader_single_copy_mechanism=none mpirun --allow-run-as-root -n 2 --oversubscribe "
                     "--bind-to none --mca btl self,vader -x STEPTP_TIMING_LOCK {}",
                     rank_command);
}

using Result = steptp::testing::ShellResult;
Result sh(const std::string& cmd) { return steptp::testing::run_shell(cmd + " 2>&1"); }

// The summary line of a generate --json run (its last line starting with '{').
json summary(const Result& r) {
  size_t at = r.out.rfind("\n{");
  std::string line = r.out.substr(at == std::string::npos ? 0 : at + 1);
  return json::parse(line.substr(0, line.find('\n')));
}

// Rows of a table of a store; 0 while the store or its table does not exist yet. Opened for
// writing: reading a WAL database a killed process left behind needs to recover it.
int64_t count(const fs::path& db_path, const std::string& table) {
  if (!fs::exists(db_path)) return 0;
  sqlite3* db = nullptr;
  sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr);
  sqlite3_busy_timeout(db, 10000);
  sqlite3_stmt* st = nullptr;
  int64_t n = 0;
  if (sqlite3_prepare_v2(db, ("SELECT COUNT(*) FROM " + table).c_str(), -1, &st, nullptr) == SQLITE_OK &&
      sqlite3_step(st) == SQLITE_ROW)
    n = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(db);
  return n;
}

void expect_same_files(const fs::path& a, const fs::path& b) {
  for (const auto& f : kFiles) {
    ASSERT_TRUE(fs::exists(a / f)) << a / f;
    EXPECT_EQ(slurp(a / f), slurp(b / f)) << f << " differs between " << a << " and " << b;
  }
}

class MpiGenerate : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = new fs::path(tmpdir(""));
    reference_ = new Result(sh(std::string(STEPTP_EXE) + " " + generate_args(*root_ / "one", "--cost model --jobs 1")));
  }
  static void TearDownTestSuite() {
    fs::remove_all(*root_);
    delete root_;
    delete reference_;
  }
  void SetUp() override {
    ASSERT_EQ(reference_->code, 0) << reference_->out;
    if (sh("command -v mpirun").code != 0)
      GTEST_SKIP() << "mpirun not installed (scripts/deps-test.sh installs OpenMPI for the tests)";
  }
  // Runs `steptp ARGS` on two ranks; fails clearly when steptp lacks MPI although mpirun is here.
  static Result two_ranks(const std::string& args) {
    Result r = sh(mpirun(std::string(STEPTP_EXE) + " " + args));
    EXPECT_EQ(r.out.find("built without MPI"), std::string::npos)
        << "steptp was built without MPI although OpenMPI is installed (was build/ configured before it was?): "
           "re-run scripts/build.sh\n"
        << r.out;
    return r;
  }
  static fs::path* root_;
  static Result* reference_;
};
fs::path* MpiGenerate::root_ = nullptr;
Result* MpiGenerate::reference_ = nullptr;

TEST_F(MpiGenerate, ModelCostOnTwoRanksEqualsOneProcessByteForByte) {
  fs::path out = *root_ / "two";
  Result r = two_ranks(generate_args(out, "--cost model"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(summary(r)["ranks"], 2);
  expect_same_files(*root_ / "one", out);
  // Both ranks searched: each one's checkpoint holds roots, together all of them, once.
  int64_t r0 = count(out / "ranks" / "rank-0" / "checkpoint.sqlite", "roots");
  int64_t r1 = count(out / "ranks" / "rank-1" / "checkpoint.sqlite", "roots");
  EXPECT_GT(r0, 0);
  EXPECT_GT(r1, 0);
  EXPECT_EQ(r0 + r1, summary(*reference_)["roots"].get<int64_t>());
}

// The PID of rank `rank` among mpirun's children (rank processes carry OMPI_COMM_WORLD_RANK).
pid_t rank_pid(pid_t mpirun_pid, int rank) {
  for (const auto& e : fs::directory_iterator("/proc")) {
    std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string stat = slurp(e.path() / "stat");
    size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    int ppid = 0;
    if (std::sscanf(stat.c_str() + close + 2, "%*c %d", &ppid) != 1 || ppid != mpirun_pid) continue;
    std::string env = slurp(e.path() / "environ");
    if (env.find(fmt::format("OMPI_COMM_WORLD_RANK={}", rank) + '\0') != std::string::npos) return std::stoi(name);
  }
  return -1;
}

TEST_F(MpiGenerate, RankKilledMidRunAndRerunGiveTheSameBytes) {
  fs::path out = *root_ / "killed";
  fs::create_directories(out);
  std::string cmd = mpirun(std::string(STEPTP_EXE) + " " + generate_args(out, "--cost model")) + " >" +
                    (out.parent_path() / "killed.log").string() + " 2>&1";
  pid_t mpirun_pid = fork();
  ASSERT_GE(mpirun_pid, 0);
  if (mpirun_pid == 0) {
    execl("/bin/sh", "sh", "-c", ("exec " + cmd).c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  // Kill rank 1 (SIGKILL) as soon as it has finished its first root.
  const fs::path rank1_db = out / "ranks" / "rank-1" / "checkpoint.sqlite";
  auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(5);
  int status = 0;
  while (count(rank1_db, "roots") == 0) {
    ASSERT_EQ(waitpid(mpirun_pid, &status, WNOHANG), 0) << slurp(out.parent_path() / "killed.log");
    ASSERT_LT(std::chrono::steady_clock::now(), deadline);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  pid_t victim = rank_pid(mpirun_pid, 1);
  ASSERT_GT(victim, 0) << "rank 1 not found";
  ASSERT_EQ(kill(victim, SIGKILL), 0);
  ASSERT_EQ(waitpid(mpirun_pid, &status, 0), mpirun_pid);
  EXPECT_FALSE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << slurp(out.parent_path() / "killed.log");
  EXPECT_FALSE(fs::exists(out / "manifest.json")) << "the run finished before rank 1 was killed";
  int64_t kept_rank0 = count(out / "ranks" / "rank-0" / "checkpoint.sqlite", "roots");
  int64_t kept_rank1 = count(rank1_db, "roots");
  EXPECT_GE(kept_rank1, 1);
  EXPECT_LT(kept_rank0 + kept_rank1, summary(*reference_)["roots"].get<int64_t>());

  // The rerun searches only what was unfinished and writes the one-process bytes.
  Result r = two_ranks(generate_args(out, "--cost model"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(summary(r)["roots_resumed"].get<int64_t>(), kept_rank0 + kept_rank1);
  expect_same_files(*root_ / "one", out);
}

TEST_F(MpiGenerate, OneProcessResumesFromRankFoldersNoRankOfItOwns) {
  // A checkpoint with two finished roots, left as rank 3's folder (an earlier run had 4 ranks):
  // one process takes those roots into its checkpoint instead of searching them again.
  fs::path out = *root_ / "adopt";
  Result stopped = sh(std::string(STEPTP_EXE) + " " + generate_args(out, "--cost model --jobs 1 --stop-after 2"));
  ASSERT_EQ(stopped.code, 3) << stopped.out;
  fs::create_directories(out / "ranks" / "rank-3");
  for (const char* suffix : {"", "-wal", "-shm"})
    if (fs::exists(out / (std::string("checkpoint.sqlite") + suffix)))
      fs::rename(out / (std::string("checkpoint.sqlite") + suffix),
                 out / "ranks" / "rank-3" / (std::string("checkpoint.sqlite") + suffix));
  Result r = sh(std::string(STEPTP_EXE) + " " + generate_args(out, "--cost model --jobs 1"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(summary(r)["roots_resumed"], 2);
  expect_same_files(*root_ / "one", out);
}

TEST_F(MpiGenerate, TwoMeasuringRanksMergeAStoreThatReproducesTheirBytes) {
  fs::path out = *root_ / "measured";
  std::string args = generate_args(out, "--cost measured --measure-min-time 0.001", 4, 0);
  // One measuring group per rank: two "nodes", each measuring into its own store.
  Result r = sh(mpirun(fmt::format("sh -c 'STEPTP_MEASURE_GROUP=node$OMPI_COMM_WORLD_RANK exec {} {}'", STEPTP_EXE, args)));
  ASSERT_EQ(r.out.find("built without MPI"), std::string::npos) << r.out;
  ASSERT_EQ(r.code, 0) << r.out;
  int64_t m0 = count(out / "ranks" / "rank-0" / "measurements.sqlite", "measurements");
  int64_t m1 = count(out / "ranks" / "rank-1" / "measurements.sqlite", "measurements");
  EXPECT_GT(m0, 0);
  EXPECT_GT(m1, 0);
  // Rank 0 merged both stores: every fact of each rank is in the merged store.
  EXPECT_GE(count(out / "measurements.sqlite", "measurements"), std::max(m0, m1));

  // One process given the merged store measures nothing and writes the same bytes.
  fs::path again = *root_ / "measured-again";
  std::string one_args = generate_args(
      again, "--cost measured --measure-min-time 0.001 --jobs 1 --measurements " + (out / "measurements.sqlite").string(),
      4, 0);
  Result s = sh(std::string(STEPTP_EXE) + " " + one_args);
  ASSERT_EQ(s.code, 0) << s.out;
  EXPECT_EQ(summary(s)["comparisons_measured"], 0);
  expect_same_files(out, again);
}

TEST(WithoutMpi, RefusesToRunAsOneOfSeveralRanks) {
  // steptp_mpi_absent is what steptp links when CMake finds no MPI.
  ASSERT_EQ(setenv("OMPI_COMM_WORLD_SIZE", "2", 1), 0);
  try {
    join_cluster();
    ADD_FAILURE() << "joined a 2-rank run without MPI";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("built without MPI"), std::string::npos) << e.what();
  }
  unsetenv("OMPI_COMM_WORLD_SIZE");
  EXPECT_EQ(join_cluster()->size(), 1);
}

}  // namespace
}  // namespace steptp::mpi
