// Untrusted work that crashes, hangs or eats memory is a scored failure, the service keeps
// serving meanwhile, a full queue answers 429 with Retry-After, and SIGTERM finishes in-flight
// requests. The faults come from the test-only switch (serve --fault-injection), which makes the
// sandboxed "kernel run" of a score crash, hang or allocate without limit.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>

#include <fmt/format.h>

#include "serve/server_process.h"
#include "serve/serve_test_util.h"

namespace steptp::serve::testing {
namespace {

// Short timeouts so a hang costs seconds; no peaks check (measuring the peaks the first time
// would not fit in the 2 s measurement budget).
std::vector<std::string> fault_server_args(int workers, int queue, int measure_timeout_s = 2) {
  return {"--workers", std::to_string(workers), "--queue", std::to_string(queue), "--fault-injection",
          "--job-timeout", "20", "--measure-timeout", std::to_string(measure_timeout_s), "--memory-limit", "512",
          "--peaks", "none"};
}

json fault_request(const std::string& fault) {
  return {{"answer", parallel_answer()}, {"reward_context", matmul_context()}, {"fault", fault}};
}

TEST(Faults, CrashHangAndMemoryHogAreScoredFailuresWhileOthersSucceed) {
  // 6 s: the memory hog page-faults its way to the 512 MiB limit, which took over 2 s on a
  // 2-core machine busy compiling (it was then reported as a timeout, not out of memory).
  ServerProcess server(fault_server_args(3, 16, 6));
  struct Case {
    const char* fault;
    const char* reason;
  } cases[] = {{"crash", "crashed"}, {"hang", "timed out"}, {"oom", "out of memory"}};
  for (const auto& c : cases) {
    auto faulty = std::async(std::launch::async, [&] { return server.post("/v1/score", fault_request(c.fault)); });
    // Meanwhile other requests are served (verification needs no machine lock).
    int ok = 0;
    for (int i = 0; i < 4; ++i) {
      auto v = server.post("/v1/verify", {{"a", matmul()}, {"b", wrong_matmul()}, {"trials", 1}});
      ok += v.status == 200 && v.body["equivalent"] == false;
    }
    EXPECT_EQ(ok, 4) << c.fault;
    auto r = faulty.get();
    ASSERT_EQ(r.status, 200) << c.fault << ": " << r.body.dump();
    const json& a = r.body["answers"][0];
    EXPECT_EQ(a["failed_stage"], "compiles") << c.fault << ": " << a.dump();
    EXPECT_NE(a["reason"].get<std::string>().find(c.reason), std::string::npos) << c.fault << ": " << a.dump();
    // Equivalence was verified before the kernel ran: +0.1, nothing for compiling or speed.
    EXPECT_DOUBLE_EQ(r.body["reward"].get<double>(), 0.1) << a.dump();
  }
  // And the service still scores normally afterwards.
  auto s = server.post("/v1/score", {{"answer", parallel_answer()}, {"reward_context", matmul_context()}});
  ASSERT_EQ(s.status, 200);
  EXPECT_EQ(s.body["answers"][0]["stages_passed"][4], "compiles") << s.body.dump();
  auto health = server.client()->Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  // Each death is counted by kind, apart from the scores.
  auto m = server.client()->Get("/metrics");
  ASSERT_TRUE(m);
  for (const char* kind : {"crash", "timeout", "out_of_memory"})
    EXPECT_NE(m->body.find(fmt::format("steptp_job_failures_total{{kind=\"{}\"}} 1", kind)), std::string::npos)
        << kind << "\n" << m->body;
}

TEST(Faults, FullQueueAnswers429WithRetryAfter) {
  ServerProcess server(fault_server_args(1, 1));
  // One hang runs, one waits; every further request is refused until they finish.
  std::vector<std::future<ServerProcess::Reply>> hangs;
  for (int i = 0; i < 2; ++i) {
    hangs.push_back(std::async(std::launch::async, [&] { return server.post("/v1/score", fault_request("hang")); }));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  auto refused = server.post("/v1/verify", {{"a", matmul()}, {"b", matmul()}});
  EXPECT_EQ(refused.status, 429) << refused.body.dump();
  EXPECT_EQ(refused.retry_after, "1");
  auto batch = server.post("/v1/score/batch", {{"items", json::array({fault_request("crash")})}});
  EXPECT_EQ(batch.status, 429);
  for (auto& h : hangs) EXPECT_EQ(h.get().status, 200);
  auto later = server.post("/v1/verify", {{"a", matmul()}, {"b", matmul()}});
  EXPECT_EQ(later.status, 200);
}

TEST(Faults, SigtermFinishesInFlightRequests) {
  ServerProcess server(fault_server_args(1, 4));
  auto inflight = std::async(std::launch::async, [&] { return server.post("/v1/score", fault_request("hang")); });
  // SIGTERM once the job runs: a queued job is answered 503 by design, and a fixed 500 ms wait
  // lost that race on a loaded CI machine.
  bool running = false;
  for (int i = 0; i < 400 && !running; ++i) {
    auto h = server.client()->Get("/health");
    running = h && json::parse(h->body, nullptr, false).value("running", 0) >= 1;
    if (!running) std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  ASSERT_TRUE(running) << "the hang never started";
  int rc = server.terminate();
  auto r = inflight.get();
  EXPECT_EQ(r.status, 200) << "the in-flight request was answered";
  EXPECT_NE(r.body["answers"][0]["reason"].get<std::string>().find("timed out"), std::string::npos);
  EXPECT_EQ(rc, 0);
  httplib::Client c("127.0.0.1", server.port());
  EXPECT_FALSE(c.Get("/health")) << "no longer listening";
}

}  // namespace
}  // namespace steptp::serve::testing
