// What the MPI tests share (mpi_generate_test.cc, mpi_tuned_heavy_test.cc): two ranks of
// `steptp generate` through mpirun on this machine, the files a run writes, the rows of its
// SQLite stores, and killing one rank of a run mid-way.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "dataset/dataset_test_util.h"
#include "shell_command.h"

namespace steptp::mpi::testing {

namespace fs = std::filesystem;
using dataset::testing::slurp;

inline fs::path tmpdir(const std::string& name) { return dataset::testing::tmpdir("mpi_test", name); }

inline const std::vector<std::string> kFiles = {"train.jsonl", "eval.jsonl", "steps.jsonl", "manifest.json",
                                                "stats.json"};

// Two ranks on loopback in a container, as root: shared memory without the single-copy
// mechanism (CMA needs ptrace rights containers often lack), no core binding (2 ranks may
// exceed the cores CI gives), the test's timing lock passed on.
inline std::string mpirun(const std::string& rank_command) {
  return fmt::format("env OMPI_MCA_btl_vader_single_copy_mechanism=none mpirun --allow-run-as-root -n 2 --oversubscribe "
                     "--bind-to none --mca btl self,vader -x STEPTP_TIMING_LOCK {}",
                     rank_command);
}

using Result = steptp::testing::ShellResult;
inline Result sh(const std::string& cmd) { return steptp::testing::run_shell(cmd + " 2>&1"); }

// Runs `steptp ARGS` on two ranks; fails clearly when steptp lacks MPI although mpirun is here.
inline Result two_ranks(const std::string& args) {
  Result r = sh(mpirun(std::string(STEPTP_EXE) + " " + args));
  EXPECT_EQ(r.out.find("built without MPI"), std::string::npos)
      << "steptp was built without MPI although OpenMPI is installed (was build/ configured before it was?): "
         "re-run scripts/build.sh\n"
      << r.out;
  return r;
}

// The summary line of a generate --json run (its last line starting with '{').
inline nlohmann::json summary(const Result& r) {
  size_t at = r.out.rfind("\n{");
  std::string line = r.out.substr(at == std::string::npos ? 0 : at + 1);
  return nlohmann::json::parse(line.substr(0, line.find('\n')));
}

// Rows of a table of a store; 0 while the store or its table does not exist yet. Opened for
// writing: reading a WAL database a killed process left behind needs to recover it.
inline int64_t count(const fs::path& db_path, const std::string& table) {
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

inline void expect_same_files(const fs::path& a, const fs::path& b) {
  for (const auto& f : kFiles) {
    ASSERT_TRUE(fs::exists(a / f)) << a / f;
    EXPECT_EQ(slurp(a / f), slurp(b / f)) << f << " differs between " << a << " and " << b;
  }
}

// The PID of rank `rank` among mpirun's children (rank processes carry OMPI_COMM_WORLD_RANK).
inline pid_t rank_pid(pid_t mpirun_pid, int rank) {
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

// Runs the shell command `cmd` (an mpirun of two ranks, output to `log`), kills rank 1 (SIGKILL)
// as soon as `ready()` holds (polled every 10 ms, for at most `limit`) and waits for mpirun.
// Returns mpirun's wait status; -1 (with a test failure) when the run ended first, rank 1 was not
// found or the limit passed.
inline int kill_rank1_when(const std::string& cmd, const fs::path& log, const std::function<bool()>& ready,
                           std::chrono::seconds limit = std::chrono::minutes(5)) {
  pid_t mpirun_pid = fork();
  if (mpirun_pid < 0) {
    ADD_FAILURE() << "fork failed";
    return -1;
  }
  if (mpirun_pid == 0) {
    execl("/bin/sh", "sh", "-c", ("exec " + cmd + " >" + log.string() + " 2>&1").c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  auto deadline = std::chrono::steady_clock::now() + limit;
  int status = 0;
  bool failed = false;
  while (!ready()) {
    if (waitpid(mpirun_pid, &status, WNOHANG) != 0) {
      ADD_FAILURE() << "the run ended before rank 1 was killed:\n" << slurp(log);
      return -1;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      ADD_FAILURE() << "the run was not ready to be killed within the limit";
      failed = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  pid_t victim = failed ? -1 : rank_pid(mpirun_pid, 1);
  if (!failed && victim <= 0) ADD_FAILURE() << "rank 1 not found";
  kill(victim > 0 ? victim : mpirun_pid, SIGKILL);
  waitpid(mpirun_pid, &status, 0);
  return failed || victim <= 0 ? -1 : status;
}

// `steptp generate` options of a run into `out`, plus `extra`.
using GenerateArgs = std::function<std::string(const fs::path& out, const std::string& extra)>;

// A tuned run (--trajectories tune: every rank's tuner times its trials) on two ranks into
// DIR/two completes with both ranks having tuned roots, and its merged store replays: one
// process and two ranks given it write the run's bytes and add no fact to it (neither the tuners
// nor the records' measurement timed anything, so every fact of the run is in it).
inline void expect_tuned_run_and_replays(const fs::path& dir, const GenerateArgs& args) {
  const fs::path two = dir / "two", store = two / "measurements.sqlite";
  Result r = two_ranks(args(two, ""));
  ASSERT_EQ(r.code, 0) << r.out;
  const nlohmann::json s = summary(r);
  EXPECT_EQ(s["ranks"], 2);
  int64_t r0 = count(two / "ranks" / "rank-0" / "checkpoint.sqlite", "roots");
  int64_t r1 = count(two / "ranks" / "rank-1" / "checkpoint.sqlite", "roots");
  EXPECT_GT(r0, 0);
  EXPECT_GT(r1, 0);
  EXPECT_EQ(r0 + r1, s["roots"].get<int64_t>());
  // Rank 1 measures nothing after the search (one measuring rank per machine), but its tuner
  // timed its trials into its own store, which rank 0 merged.
  EXPECT_GT(count(two / "ranks" / "rank-1" / "measurements.sqlite", "measurements"), 0);
  const int64_t facts = count(store, "measurements");
  ASSERT_GT(facts, 0);

  Result one = sh(std::string(STEPTP_EXE) + " " + args(dir / "replay-one", "--jobs 1 --measurements " + store.string()));
  ASSERT_EQ(one.code, 0) << one.out;
  EXPECT_EQ(summary(one)["comparisons_measured"], 0);
  expect_same_files(two, dir / "replay-one");
  Result again = two_ranks(args(dir / "replay-two", "--measurements " + store.string()));
  ASSERT_EQ(again.code, 0) << again.out;
  EXPECT_EQ(summary(again)["comparisons_measured"], 0);
  expect_same_files(two, dir / "replay-two");
  EXPECT_EQ(count(store, "measurements"), facts) << "a replay timed something the run's store lacked";
}

}  // namespace steptp::mpi::testing
