// Progress of `steptp generate` without a TTY (base/progress.h): stderr redirected to a file, as
// under CI, nohup or Slurm, gets a line per stage start and end, exactly one line per root with
// roots done/total, elapsed time and an ETA, and a final summary; --quiet gets none; --json's
// stdout stays one parseable object. And the helper itself: rate limiting and counting across
// forked workers.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <regex>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "base/progress.h"
#include "dataset/dataset_test_util.h"
#include "shell_command.h"

namespace steptp::dataset {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::slurp;

fs::path tmp(const std::string& name) { return testing::tmpdir("progress_test", name); }

std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> v;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) v.push_back(l);
  return v;
}

// Runs `body` with stderr (fd 2) going to a file, as a log; returns what it wrote.
template <class F>
std::string stderr_of(const fs::path& file, F body) {
  fs::create_directories(file.parent_path());
  int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  int saved = ::dup(2);
  ::dup2(fd, 2);
  ::close(fd);
  body();
  ::dup2(saved, 2);
  ::close(saved);
  return slurp(file);
}

TEST(Progress, DurationsReadAsMinutesAndHours) {
  EXPECT_EQ(format_duration(0.4), "0s");
  EXPECT_EQ(format_duration(59.4), "59s");
  EXPECT_EQ(format_duration(151), "2m31s");
  EXPECT_EQ(format_duration(3600 + 120 + 5), "1h02m");
}

TEST(Progress, LinesCountAcrossForkedWorkersAndEstimateTheRest) {
  const std::string err = stderr_of(tmp("fork") / "err.log", [] {
    Progress p("demo", ProgressStyle::Lines);
    p.stage_start("work", "unit", 6, 2, "6 units");
    for (int k = 0; k < 2; ++k) {
      pid_t pid = fork();
      if (pid == 0) {
        p.advance("x");
        p.advance("y");
        _exit(0);
      }
      waitpid(pid, nullptr, 0);
    }
    p.stage_end();
    p.finish("all");
  });
  const auto lines = split_lines(err);
  ASSERT_EQ(lines.size(), 7u) << err;
  EXPECT_TRUE(std::regex_match(lines[0], std::regex(R"(demo: work started \(6 units\) \| elapsed \d+s)"))) << lines[0];
  // The resumed units (2) count in done/total; the children's units continue one count.
  for (int i = 0; i < 4; ++i) {
    const std::regex unit(fmt::format(R"(demo: unit {}/6 [xy] \| elapsed \d+s \| eta \d+s)", 3 + i));
    EXPECT_TRUE(std::regex_match(lines[size_t(1 + i)], unit)) << lines[size_t(1 + i)];
  }
  EXPECT_TRUE(std::regex_match(lines[5], std::regex(R"(demo: work done in \d+s \| elapsed \d+s)"))) << lines[5];
  EXPECT_EQ(lines[6].rfind("demo: finished: all | wall ", 0), 0u) << lines[6];
}

TEST(Progress, LinesAreRateLimitedButTheLastUnitAlwaysShows) {
  const std::string err = stderr_of(tmp("rate") / "err.log", [] {
    Progress p("demo", ProgressStyle::Lines, 60);
    p.stage_start("work", "trials", 10);
    for (int done = 1; done <= 10; ++done) p.report(done, "");
  });
  const auto lines = split_lines(err);
  ASSERT_EQ(lines.size(), 3u) << err;  // the start, the first unit, the last
  EXPECT_EQ(lines[1].rfind("demo: trials 1/10 | elapsed", 0), 0u) << lines[1];
  EXPECT_EQ(lines[2].rfind("demo: trials 10/10 | elapsed", 0), 0u) << lines[2];
}

TEST(Progress, OffWritesNothing) {
  EXPECT_EQ(stderr_of(tmp("off") / "err.log",
                      [] {
                        Progress p("demo", ProgressStyle::Off);
                        p.stage_start("work", "unit", 2);
                        p.advance("x");
                        p.stage_end();
                        p.finish("all");
                      }),
            "");
}

// A few roots in seconds (the analytic cost model, no timing), two forked workers; stderr to
// OUT.err, a file as in a log.
std::string generate(const fs::path& out, const std::string& extra) {
  const fs::path err = out.parent_path() / (out.filename().string() + ".err");
  fs::create_directories(out.parent_path());  // the shell opens the .err file before steptp runs
  return fmt::format("{} generate --out {} --seed 3 --programs 4 --composites 1 --no-examples --depth 2 --beam 1 "
                     "--cost model --token-sample 0 --jobs 2 --json {} 2>{}",
                     STEPTP_EXE, out.string(), extra, err.string());
}

TEST(GenerateProgress, WithoutATtyALinePerRootAndStageAndASummary) {
  const fs::path out = tmp("lines");
  auto r = steptp::testing::run_shell(generate(out, ""));
  ASSERT_EQ(r.code, 0) << r.out;
  const json summary = json::parse(r.out);  // stdout: the --json object alone
  const int roots = summary["roots"].get<int>();
  ASSERT_GE(roots, 4);
  const auto lines = split_lines(slurp(out.parent_path() / "lines.err"));
  const std::string duration = R"(\d+(s|m\d\ds|h\d\dm))";
  const std::regex root_line(R"(generate: root (\d+)/(\d+) (\S+) done \((\d+) records\) \| elapsed )" + duration +
                             R"( \| eta )" + duration);
  const std::regex stage_line(R"(generate: (search|export) (started \(.*\)|done in \S+) \| elapsed \S+)");
  std::set<int> counts;
  std::set<std::string> keys;
  std::vector<std::string> stages;
  for (const auto& l : lines) {
    std::smatch m;
    if (std::regex_match(l, m, root_line)) {
      EXPECT_EQ(std::stoi(m[2]), roots) << l;
      counts.insert(std::stoi(m[1]));
      EXPECT_TRUE(keys.insert(m[3]).second) << "two lines for root " << m[3];
    } else if (std::regex_match(l, m, stage_line)) {
      stages.push_back(m[1].str() + (m[2].str().rfind("started", 0) == 0 ? " start" : " end"));
    } else {
      EXPECT_EQ(&l, &lines.back()) << "unexpected line: " << l;
    }
  }
  // One line per root, counting 1..roots (workers may write their lines in either order).
  EXPECT_EQ(int(keys.size()), roots);
  ASSERT_EQ(int(counts.size()), roots);
  EXPECT_EQ(*counts.begin(), 1);
  EXPECT_EQ(*counts.rbegin(), roots);
  EXPECT_EQ(stages, (std::vector<std::string>{"search start", "search end", "export start", "export end"}));
  ASSERT_FALSE(lines.empty());
  const std::regex finished(fmt::format(R"(generate: finished: {} roots \(0 resumed\), {} records .* \| wall \S+)",
                                         roots, summary["records"].get<int>()));
  EXPECT_TRUE(std::regex_match(lines.back(), finished)) << lines.back();
}

TEST(GenerateProgress, QuietPrintsNothingAndJsonStillParses) {
  const fs::path out = tmp("quiet");
  auto r = steptp::testing::run_shell(generate(out, "--quiet"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(json::parse(r.out).contains("records"));
  EXPECT_EQ(slurp(out.parent_path() / "quiet.err"), "");
}

}  // namespace
}  // namespace steptp::dataset
