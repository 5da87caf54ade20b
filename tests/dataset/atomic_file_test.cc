// base::write_file_atomically (the dataset's exported files, the peaks cache): the target gets
// the whole new contents, and a file or link planted at a guessable temporary name is not written
// through.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/atomic_file.h"
#include "file_text.h"

namespace steptp::base {
namespace {

namespace fs = std::filesystem;

TEST(AtomicFile, ReplacesTheTargetWithoutFollowingPlantedTemporaryNames) {
  fs::path dir = fs::temp_directory_path() / ("steptp-atomic-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const fs::path target = dir / "stats.json", victim = dir / "victim";
  std::ofstream(victim) << "keep";
  // The names earlier versions used for their temporary files.
  fs::create_symlink(victim, dir / "stats.json.tmp");
  fs::create_symlink(victim, dir / ("stats.json." + std::to_string(getpid()) + ".tmp"));
  write_file_atomically(target, "first\n");
  write_file_atomically(target, "second\n");
  EXPECT_EQ(slurp(target), "second\n");
  EXPECT_EQ(slurp(victim), "keep");
  struct stat st {};
  ASSERT_EQ(stat(target.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
  size_t leftovers = 0;
  for (const auto& e : fs::directory_iterator(dir))
    leftovers += e.path().filename().string().find(".tmp-") != std::string::npos;
  EXPECT_EQ(leftovers, 0u);
  EXPECT_THROW(write_file_atomically(dir / "missing-dir" / "x", "y"), std::runtime_error);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace steptp::base
