// The job sandbox of a real `steptp serve` (lower/sandbox, docs/serve.md "Isolation"): every
// layer is reported in /health and /metrics (applied, or off with its reason), a normal job
// (verify, compile, measure, score) works inside it, --require-sandbox refuses to start without
// the full set and names what is missing, and the sandbox's cost per job is measured.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <iostream>

#include <fmt/format.h>

#include "lower/sandbox/layers.h"
#include "serve/server_process.h"
#include "serve/serve_test_util.h"
#include "shell_command.h"

namespace steptp::serve::testing {
namespace {

const std::vector<std::string>& layers() { return backend::sandbox::layer_names(); }

TEST(SandboxServe, HealthAndMetricsReportEveryLayerAndAScoredJobRunsInside) {
  ServerProcess server({"--workers", "2", "--peaks", peaks_cache()});
  auto health = server.client()->Get("/health");
  ASSERT_TRUE(health);
  json h = json::parse(health->body);
  const json& sb = h["sandbox"];
  ASSERT_TRUE(sb.is_object()) << h.dump();
  EXPECT_EQ(sb["enabled"], true);
  for (const auto& layer : layers()) {
    ASSERT_TRUE(sb["layers"][layer].is_boolean()) << layer << ": " << sb.dump();
    // Off only with a reason.
    if (!sb["layers"][layer].get<bool>())
      EXPECT_FALSE(sb["missing"].value(layer, "").empty()) << layer << ": " << sb.dump();
    else EXPECT_FALSE(sb["missing"].contains(layer)) << layer << ": " << sb.dump();
  }
  auto metrics = server.client()->Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_NE(metrics->body.find("steptp_sandbox_enabled 1"), std::string::npos);
  for (const auto& layer : layers()) {
    std::string line = fmt::format("steptp_sandbox_layer{{layer=\"{}\"}} {}", layer,
                                   sb["layers"][layer].get<bool>() ? 1 : 0);
    EXPECT_NE(metrics->body.find(line), std::string::npos) << line;
  }

  // A normal job inside: verified, compiled (the compiler runs as the sandbox uid, writing the
  // server's kernel cache), run, timed, scored.
  auto s = server.post("/v1/score", {{"answer", parallel_answer()}, {"reward_context", matmul_context()}});
  ASSERT_EQ(s.status, 200) << s.body.dump();
  const json& a = s.body["answers"][0];
  std::vector<std::string> stages = a["stages_passed"];
  EXPECT_NE(std::find(stages.begin(), stages.end(), "compiles"), stages.end()) << a.dump();
  EXPECT_TRUE(a["speedup_vs_parent"].is_number()) << a.dump();
  auto m = server.post("/v1/measure", {{"program", matmul()}, {"against", wrong_matmul()}});
  ASSERT_EQ(m.status, 200) << m.body.dump();
  EXPECT_TRUE(m.body["speedup"].is_number()) << m.body.dump();
}

TEST(SandboxServe, RequireSandboxRefusesToStartWithoutEveryLayerAndNamesTheMissingOnes) {
  // uid 0 as the sandbox user leaves the "user" layer off on any machine.
  auto r = steptp::testing::run_shell(
      std::string(STEPTP_EXE) + " serve --port 0 --workers 1 --peaks none --require-sandbox --sandbox-uid 0 2>&1");
  EXPECT_NE(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("--require-sandbox"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("user (the sandbox uid is root)"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("listening"), std::string::npos) << r.out;

  // With the default uid it starts exactly when a plain server reports the full set.
  bool complete = false;
  {
    ServerProcess plain({"--workers", "1", "--peaks", "none"});
    json h = json::parse(plain.client()->Get("/health")->body);
    complete = h["sandbox"]["missing"].empty();
  }
  if (complete) {
    ServerProcess strict({"--workers", "1", "--peaks", "none", "--require-sandbox"});
    auto v = strict.post("/v1/verify", {{"a", matmul()}, {"b", wrong_matmul()}, {"trials", 1}});
    EXPECT_EQ(v.status, 200) << v.body.dump();
  } else {
    auto strict = steptp::testing::run_shell(std::string(STEPTP_EXE) +
                                             " serve --port 0 --workers 1 --peaks none --require-sandbox 2>&1");
    EXPECT_NE(strict.code, 0) << strict.out;
    EXPECT_NE(strict.out.find("sandbox is incomplete"), std::string::npos) << strict.out;
  }
}

// Run as an unprivileged user (nobody, through setpriv), the server may not make namespaces or
// cgroups: those layers are reported off with the kernel's reason, the others still apply, jobs
// still run, and --require-sandbox names what is missing.
TEST(SandboxServe, UnprivilegedServerReportsTheLayersItCannotHave) {
  ASSERT_EQ(geteuid(), 0u) << "this test drops to nobody from root";
  auto as_nobody = [](std::vector<std::string> args) {
    std::vector<std::string> argv = {"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                                     STEPTP_EXE, "serve", "--host", "127.0.0.1", "--port", "0"};
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  };
  {
    ServerProcess server(ServerProcess::Command{as_nobody({"--workers", "1", "--peaks", "none"})});
    json sb = json::parse(server.client()->Get("/health")->body)["sandbox"];
    SCOPED_TRACE(sb.dump());
    for (const char* off : {"pid_ns", "mount_ns", "net_ns", "pids_cgroup"}) {
      EXPECT_EQ(sb["layers"][off], false) << off;
      EXPECT_FALSE(sb["missing"].value(off, "").empty()) << off << " is off without a reason";
    }
    for (const char* on : {"user", "capabilities", "no_new_privs", "landlock", "seccomp", "seccomp_kernel", "job_dir"})
      EXPECT_EQ(sb["layers"][on], true) << on;
    auto v = server.post("/v1/verify", {{"a", matmul()}, {"b", wrong_matmul()}, {"trials", 1}});
    EXPECT_EQ(v.status, 200) << v.body.dump();
    auto m = server.post("/v1/measure", {{"program", matmul()}});
    EXPECT_EQ(m.status, 200) << m.body.dump();
  }
  std::string cmd;
  for (const auto& a : as_nobody({"--workers", "1", "--peaks", "none", "--require-sandbox"})) cmd += a + " ";
  auto r = steptp::testing::run_shell(cmd + "2>&1");
  EXPECT_NE(r.code, 0) << r.out;
  for (const char* off : {"pid_ns (", "mount_ns (", "net_ns (", "pids_cgroup ("})
    EXPECT_NE(r.out.find(off), std::string::npos) << off << " not named: " << r.out;
}

// The sandbox's cost per job: median latency of the same requests with the sandbox on and off
// (printed; the replies must all succeed either way).
TEST(SandboxServe, OverheadPerJob) {
  auto median_ms = [](const ServerProcess& server, const std::string& path, const json& body, int n) {
    server.post(path, body);  // warm: kernel cache, peaks
    std::vector<double> ms;
    for (int i = 0; i < n; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      auto r = server.post(path, body);
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      EXPECT_EQ(r.status, 200) << r.body.dump();
    }
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
  };
  const json verify = {{"a", matmul()}, {"b", wrong_matmul()}, {"trials", 1}};
  const json score = {{"answer", parallel_answer()}, {"reward_context", matmul_context()}};
  double on_v, on_s, off_v, off_s;
  {
    ServerProcess on({"--workers", "1", "--peaks", peaks_cache()});
    on_v = median_ms(on, "/v1/verify", verify, 30);
    on_s = median_ms(on, "/v1/score", score, 10);
  }
  {
    ServerProcess off({"--workers", "1", "--peaks", peaks_cache(), "--no-sandbox"});
    off_v = median_ms(off, "/v1/verify", verify, 30);
    off_s = median_ms(off, "/v1/score", score, 10);
  }
  std::cout << fmt::format("sandbox overhead per job (median): /v1/verify {:.2f} ms on vs {:.2f} ms off (+{:.2f} ms); "
                           "/v1/score with measure {:.1f} ms on vs {:.1f} ms off (+{:.1f} ms)\n",
                           on_v, off_v, on_v - off_v, on_s, off_s, on_s - off_s);
  RecordProperty("verify_on_ms", std::to_string(on_v));
  RecordProperty("verify_off_ms", std::to_string(off_v));
  RecordProperty("score_on_ms", std::to_string(on_s));
  RecordProperty("score_off_ms", std::to_string(off_s));
}

}  // namespace
}  // namespace steptp::serve::testing
