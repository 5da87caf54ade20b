// The kernel cache on disk (lower/cpu/compiler.h): a size cap kept by least-recently-used
// eviction, writes only through private temporary directories (nothing at a name another user
// could guess), concurrent processes compiling one kernel, and diagnostics without paths.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include "lower/cpu/codegen.h"
#include "lower/cpu/compiler.h"
#include "backend_test_util.h"
#include "file_text.h"
#include "error_kind.h"

namespace steptp::backend {
namespace {

using namespace cpu;
namespace fs = std::filesystem;
using testing::TempDir;

// A kernel returning `body`'s value; distinct bodies give distinct kernels.
std::string kernel(const std::string& body) {
  return fmt::format("extern \"C\" int {}(void* const*) {{ return {}; }}\n", kSymbolPlaceholder, body);
}

// Options of a test whose kernels no other test shares (loaded kernels are process-wide by key,
// and the key covers the flags).
CompilerOptions options(const std::string& dir, const std::string& tag) {
  CompilerOptions o{.cache_dir = dir, .jobs = 1, .precompiled_prelude = false};
  o.flags.push_back("-DSTEPTP_TEST_" + tag + "=1");
  return o;
}

std::string so_path(const KernelCompiler& cc, const std::string& code) {
  return fmt::format("{}/{}.so", cc.cache_dir(), cc.key_of(code));
}

int64_t bytes_in(const std::string& dir) {
  int64_t total = 0;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file()) total += int64_t(e.file_size());
  return total;
}

void pause_for_mtime() { std::this_thread::sleep_for(std::chrono::milliseconds(50)); }  // coarse clocks

TEST(KernelCache, EvictionKeepsTheMostRecentlyUsedKernelsUnderTheCap) {
  TempDir probe_dir("cache-probe"), dir("cache-evict");
  KernelCompiler probe(options(probe_dir.path, "EVICT"));
  ASSERT_TRUE(probe.compile_one(kernel("100")).kernel);
  const int64_t one = bytes_in(probe_dir.path);
  ASSERT_GT(one, 0);

  CompilerOptions o = options(dir.path, "EVICT");
  o.cache_max_bytes = 3 * one + one / 2;  // room for three kernels
  o.evict_grace_s = 0;
  KernelCompiler cc(o);
  const std::string a = kernel("1"), b = kernel("2"), c = kernel("3"), d = kernel("4"), e = kernel("5");
  std::optional<LoadedKernel> b_loaded;
  for (const auto& k : {a, b, c}) {
    auto r = cc.compile_one(k);
    ASSERT_TRUE(r.kernel) << r.error;
    if (k == b) b_loaded = r.kernel;
    pause_for_mtime();
  }
  ASSERT_TRUE(cc.compile_one(a).cache_hit);  // a use (in memory) makes `a` recent: `b` is now the oldest
  pause_for_mtime();
  ASSERT_TRUE(cc.compile_one(d).kernel);

  EXPECT_EQ(cc.stats().evicted, 1);
  EXPECT_FALSE(fs::exists(so_path(cc, b)));
  for (const auto& k : {a, c, d}) EXPECT_TRUE(fs::exists(so_path(cc, k))) << k;
  EXPECT_LE(bytes_in(dir.path), o.cache_max_bytes);
  EXPECT_EQ(b_loaded->fn(nullptr), 2);  // removing a loaded kernel's file does not unload it

  // The next kernel pushes out the next least recently used one, `c`.
  pause_for_mtime();
  ASSERT_TRUE(cc.compile_one(e).kernel);
  EXPECT_EQ(cc.stats().evicted, 2);
  EXPECT_FALSE(fs::exists(so_path(cc, c)));
  for (const auto& k : {a, d, e}) EXPECT_TRUE(fs::exists(so_path(cc, k))) << k;
  EXPECT_LE(bytes_in(dir.path), o.cache_max_bytes);
}

TEST(KernelCache, RecentlyUsedFilesAreNotEvictedWhateverTheCap) {
  // The grace period: files just compiled (between their rename into place and their dlopen in
  // another process) or just used are never removed.
  TempDir dir("cache-grace");
  CompilerOptions o = options(dir.path, "GRACE");
  o.cache_max_bytes = 1;
  KernelCompiler cc(o);
  for (const auto& k : {kernel("1"), kernel("2")}) ASSERT_TRUE(cc.compile_one(k).kernel);
  EXPECT_EQ(cc.stats().evicted, 0);
  EXPECT_TRUE(fs::exists(so_path(cc, kernel("1"))));
}

TEST(KernelCache, CapComesFromTheEnvironmentWithASafeDefault) {
  TempDir dir("cache-cap");
  unsetenv("STEPTP_CACHE_MAX_MB");
  EXPECT_EQ(KernelCompiler(options(dir.path, "CAP")).cache_max_bytes(), int64_t{512} << 20);
  setenv("STEPTP_CACHE_MAX_MB", "7", 1);
  EXPECT_EQ(KernelCompiler(options(dir.path, "CAP")).cache_max_bytes(), int64_t{7} << 20);
  setenv("STEPTP_CACHE_MAX_MB", "lots", 1);
  // The service's configuration, not a request's: Failed (exit 1, HTTP 422), as before it was typed.
  EXPECT_EQ(steptp::testing::thrown_kind([&] { KernelCompiler(options(dir.path, "CAP")); }),
            base::ErrorKind::Failed);
  unsetenv("STEPTP_CACHE_MAX_MB");
}

TEST(KernelCache, TwoProcessesCompilingOneKernelLeaveOneValidObject) {
  TempDir dir("cache-race");
  const CompilerOptions o = options(dir.path, "RACE");
  const std::string code = kernel("42");
  int go[2];
  ASSERT_EQ(pipe(go), 0);
  pid_t kids[2];
  for (pid_t& kid : kids) {
    kid = fork();
    if (kid == 0) {
      close(go[1]);
      KernelCompiler cc(o);
      char c;
      if (read(go[0], &c, 1) != 0) _exit(3);  // both start when the parent closes the pipe
      auto r = cc.compile_one(code);
      _exit(r.kernel && r.kernel->fn(nullptr) == 42 ? 0 : 1);
    }
  }
  close(go[0]);
  close(go[1]);
  for (pid_t kid : kids) {
    int st = 0;
    ASSERT_EQ(waitpid(kid, &st, 0), kid);
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << st;
  }
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir.path)) names.push_back(e.path().filename().string());
  KernelCompiler cc(o);
  EXPECT_EQ(names, std::vector<std::string>{cc.key_of(code) + ".so"});  // no temporaries left
  auto r = cc.compile_one(code);
  ASSERT_TRUE(r.kernel) << r.error;
  EXPECT_TRUE(r.cache_hit);
  EXPECT_EQ(r.kernel->fn(nullptr), 42);
}

TEST(KernelCache, SymlinksPlantedAtPredictableNamesAreNotWrittenThrough) {
  // Temporaries used to be CACHE/tmp-<pid>-<n>.{cc,so,log,h,tmp} and CACHE/version-<pid>.txt:
  // whoever could guess them could plant a symlink there and have the compile write through it.
  TempDir dir("cache-planted"), outside("cache-victim");
  const std::string victim = outside.path + "/victim";
  std::ofstream(victim) << "precious";
  const pid_t me = getpid();
  for (int n = 0; n < 2000; ++n)
    for (const char* ext : {".cc", ".so", ".log", ".h", ".tmp"})
      fs::create_symlink(victim, fmt::format("{}/tmp-{}-{}{}", dir.path, me, n, ext));
  fs::create_symlink(victim, fmt::format("{}/version-{}.txt", dir.path, me));
  CompilerOptions o{.cache_dir = dir.path, .jobs = 2};  // with the precompiled prelude
  o.flags.push_back("-DSTEPTP_TEST_PLANTED=1");
  KernelCompiler cc(o);
  auto r = cc.compile({kernel("7"), kernel("8"), kernel("nope")});
  ASSERT_TRUE(r[0].kernel && r[1].kernel) << r[0].error << r[1].error;
  EXPECT_FALSE(r[2].kernel);
  EXPECT_EQ(slurp(victim), "precious");
  // Besides the planted links: the kernels and the prelude, nothing else.
  for (const auto& e : fs::directory_iterator(dir.path)) {
    const std::string name = e.path().filename().string();
    if (e.is_symlink()) continue;
    const bool kernel_file = name == cc.key_of(kernel("7")) + ".so" || name == cc.key_of(kernel("8")) + ".so";
    EXPECT_TRUE(kernel_file || name.rfind("prelude-", 0) == 0) << name;
  }
}

TEST(KernelCache, CompilerErrorsNameNoPathsOfThisMachine) {
  TempDir dir("cache-paths");
  CompilerOptions o{.cache_dir = dir.path, .jobs = 1};  // with the prelude -included
  o.flags.push_back("-DSTEPTP_TEST_PATHS=1");
  KernelCompiler cc(o);
  auto r = cc.compile_one(kernel("undeclared_name"));
  ASSERT_FALSE(r.kernel);
  EXPECT_NE(r.error.find("<kernel>.cc:1:"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("undeclared_name"), std::string::npos) << r.error;
  for (std::string path : {dir.path, std::string(STEPTP_BINARY_DIR), std::string("tmp-")})
    EXPECT_EQ(r.error.find(path), std::string::npos) << path << " in " << r.error;
  if (const char* home = std::getenv("HOME"); home && std::string(home).size() > 1)
    EXPECT_EQ(r.error.find(home), std::string::npos) << r.error;
}

}  // namespace
}  // namespace steptp::backend
