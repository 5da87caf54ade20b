// The service's timing lock: private to the service (mode 0600, --timing-lock) and waited for at
// most the job's deadline, so a process holding it makes /v1/measure fail as "machine busy"
// (503) at that deadline instead of hanging, while the service keeps answering.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>

#include "serve/server_process.h"
#include "serve/serve_test_util.h"

namespace steptp::serve::testing {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

TEST(MachineLock, HeldLockFailsAMeasureAtTheJobDeadlineAndTheServiceStaysUp) {
  const fs::path dir = fs::path(STEPTP_BINARY_DIR) / "test-tmp" / ("serve-lock-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string lock = (dir / "timing.lock").string();
  constexpr double kJobTimeout = 1.5;  // the lock wait defaults to it
  {
    ServerProcess server({"--workers", "2", "--job-timeout", std::to_string(kJobTimeout), "--peaks", "none",
                          "--timing-lock", lock});
    for (const std::string& f : {lock, lock + ".cpu"}) {
      struct stat st {};
      ASSERT_EQ(stat(f.c_str(), &st), 0) << f;
      EXPECT_EQ(st.st_mode & 0777, 0600u) << f;
    }

    int fd = open(lock.c_str(), O_RDONLY);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(flock(fd, LOCK_EX), 0);
    auto t0 = Clock::now();
    auto r = server.post("/v1/measure", {{"program", matmul()}});
    const double took = std::chrono::duration<double>(Clock::now() - t0).count();
    EXPECT_EQ(r.status, 503) << r.body.dump();
    EXPECT_EQ(r.body["failure"], "machine busy") << r.body.dump();
    EXPECT_EQ(r.body.value("error", "").find(dir.string()), std::string::npos) << r.body.dump();
    EXPECT_GE(took, kJobTimeout - 0.1);
    EXPECT_LT(took, kJobTimeout + 2.0) << "the wait ended at its deadline, not later";

    auto t1 = Clock::now();
    auto health = server.client(5)->Get("/health");
    ASSERT_TRUE(health);
    EXPECT_EQ(health->status, 200);
    EXPECT_LT(std::chrono::duration<double>(Clock::now() - t1).count(), 1.0);

    // Released, the same request is measured: the lock was what stopped it.
    close(fd);
    auto ok = server.post("/v1/measure", {{"program", matmul()}});
    EXPECT_EQ(ok.status, 200) << ok.body.dump();
  }
  fs::remove_all(dir);
}

TEST(MachineLock, ALockInADirectoryOthersMayWriteIsRefusedAtStart) {
  const fs::path dir = fs::path(STEPTP_BINARY_DIR) / "test-tmp" / ("serve-lock-open-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::permissions(dir, fs::perms::all);  // anyone may swap files in it
  EXPECT_THROW(ServerProcess({"--workers", "1", "--timing-lock", (dir / "timing.lock").string()}), std::runtime_error);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace steptp::serve::testing
