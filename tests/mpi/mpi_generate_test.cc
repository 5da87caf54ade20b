// `mpirun -n 2 steptp generate` on this machine (loopback, as root, oversubscribed, as in CI):
// the same bytes as one process for --cost model; a rank killed mid-run and a rerun give the
// same bytes again, the rerun resuming the killed run's finished roots; measured, two measuring
// ranks (two STEPTP_MEASURE_GROUPs stand for two nodes) give a merged store from which one
// process writes the same bytes without measuring anything. Also: steptp built without MPI
// refuses to run as one of several ranks.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "driver/mpi/launch.h"
#include "mpi/mpi_test_util.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace steptp::mpi {
namespace {

using namespace testing;

// Options of every run: by default enough roots that each rank gets several, each root a
// fraction of a second.
std::string generate_args(const fs::path& out, const std::string& extra, int programs = 14, int composites = 2) {
  return fmt::format("generate --out {} --seed 7 --programs {} --composites {} --no-examples --depth 2 --beam 2 "
                     "--eval-fraction 0.4 --token-sample 20 --json {}",
                     out.string(), programs, composites, extra);
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

TEST_F(MpiGenerate, RankKilledMidRunAndRerunGiveTheSameBytes) {
  fs::path out = *root_ / "killed";
  fs::create_directories(out);
  // Rank 1 killed as soon as it has finished its first root.
  const fs::path rank1_db = out / "ranks" / "rank-1" / "checkpoint.sqlite";
  const fs::path log = out.parent_path() / "killed.log";
  int status = kill_rank1_when(mpirun(std::string(STEPTP_EXE) + " " + generate_args(out, "--cost model")), log,
                               [&] { return count(rank1_db, "roots") > 0; });
  ASSERT_NE(status, -1);
  EXPECT_FALSE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << slurp(log);
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

// The tuned profile (steptp tune per root with measured trials, the records re-measured in quiet
// sessions, all cores) on a few roots at tiny shapes, so that each root takes seconds: the
// bench-shaped roots of the profile itself are mpi_tuned_heavy_test.cc's.
std::string tuned_tiny_args(const fs::path& out, const std::string& extra) {
  return fmt::format("generate --out {} --profile tuned --size tiny --min-root-ms 0 --min-headroom 0 --seed 7 "
                     "--programs 4 --composites 0 --no-examples --tune-trials 2 --eval-fraction 0.4 --token-sample 20 "
                     "--json {}",
                     out.string(), extra);
}

TEST_F(MpiGenerate, TunedProfileOnTwoRanksCompletesAndItsStoreReplaysOnOneAndTwoRanks) {
  expect_tuned_run_and_replays(*root_ / "tuned", tuned_tiny_args);
}

// A tuned two-rank run into DIR/run whose rank 1 is killed as soon as it has tuned its first root
// (its tuner's facts stay in its store); returns the roots the two ranks had finished.
int64_t killed_tuned_run(const fs::path& dir) {
  const fs::path out = dir / "run", rank1_db = out / "ranks" / "rank-1" / "checkpoint.sqlite";
  fs::create_directories(out);
  int status = kill_rank1_when(mpirun(std::string(STEPTP_EXE) + " " + tuned_tiny_args(out, "")), dir / "killed.log",
                               [&] { return count(rank1_db, "roots") > 0; });
  EXPECT_NE(status, -1);
  EXPECT_FALSE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << slurp(dir / "killed.log");
  EXPECT_FALSE(fs::exists(out / "manifest.json")) << "the run finished before rank 1 was killed";
  return count(out / "ranks" / "rank-0" / "checkpoint.sqlite", "roots") + count(rank1_db, "roots");
}

// The rerun `r` of DIR/run resumed `kept` roots and completed; an uninterrupted one-process run
// on its store writes the same bytes and times nothing.
void expect_resumed_like_uninterrupted(const fs::path& dir, const Result& r, int64_t kept) {
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_GE(kept, 1);
  EXPECT_EQ(summary(r)["roots_resumed"].get<int64_t>(), kept);
  EXPECT_LT(kept, summary(r)["roots"].get<int64_t>()) << "every root was finished before rank 1 was killed";
  const fs::path store = dir / "run" / "measurements.sqlite";
  const int64_t facts = count(store, "measurements");
  Result one = sh(std::string(STEPTP_EXE) + " " +
                  tuned_tiny_args(dir / "uninterrupted", "--jobs 1 --measurements " + store.string()));
  ASSERT_EQ(one.code, 0) << one.out;
  expect_same_files(dir / "run", dir / "uninterrupted");
  EXPECT_EQ(count(store, "measurements"), facts) << "the uninterrupted run timed something the resumed run's store lacked";
}

TEST_F(MpiGenerate, TunedRankKilledMidRunResumesToTheBytesOfAnUninterruptedRunOnItsStore) {
  const fs::path dir = *root_ / "tuned-killed";
  const int64_t kept = killed_tuned_run(dir);
  // The rerun on two ranks tunes only the unfinished roots.
  expect_resumed_like_uninterrupted(dir, two_ranks(tuned_tiny_args(dir / "run", "")), kept);
}

TEST_F(MpiGenerate, TunedRunKilledOnTwoRanksResumedByOneProcessTakesTheRankFoldersFacts) {
  // One process owns no rank folder: it takes their checkpoint rows and their stores' facts.
  const fs::path dir = *root_ / "tuned-killed-one";
  const int64_t kept = killed_tuned_run(dir);
  expect_resumed_like_uninterrupted(
      dir, sh(std::string(STEPTP_EXE) + " " + tuned_tiny_args(dir / "run", "--jobs 1")), kept);
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
