// `steptp serve` under hostile or careless clients, against real server processes on loopback:
// limits before work (body also when chunked, JSON depth, program size, statements, nest
// iterations, tensor elements and bytes), admission that answers 429 at once while /health
// stays quick, idle connections that cannot starve it, clients that leave their queued job
// behind, SIGTERM with queued work, and the API key.
#include <arpa/inet.h>
#include <signal.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <thread>

#include <fmt/format.h>

#include "serve/server_process.h"
#include "serve/serve_test_util.h"

namespace steptp::serve::testing {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// /health, timed; status 0 when it gave no answer within 5 s.
std::pair<int, double> timed_health(const ServerProcess& server) {
  auto c = server.client(5);
  auto t0 = Clock::now();
  auto res = c->Get("/health");
  return {res ? res->status : 0, seconds_since(t0)};
}

json hang_request() {
  return {{"answer", parallel_answer()}, {"reward_context", matmul_context()}, {"fault", "hang"}};
}

std::vector<std::string> hang_server(int workers, int queue, std::vector<std::string> more = {}) {
  std::vector<std::string> a = {"--workers", std::to_string(workers), "--queue", std::to_string(queue),
                                "--fault-injection", "--job-timeout", "30", "--measure-timeout", "6",
                                "--peaks", "none"};
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

// A copy X -> Y, then one more nest with the given loop extents around a copy of one element.
std::string nest_program(const std::vector<int64_t>& extents) {
  std::string loops;
  for (size_t i = 0; i < extents.size(); ++i) loops += fmt::format("L^{{{}}}_{{i{}=0}}", extents[i], i);
  return "input X: f32[4]\noutput Y: f32[4]\nL^{4}_{j=0}[Y^{f32,g}_{j}=X^{f32,g}_{j};];" + loops +
         "[Y^{f32,g}_{0}=X^{f32,g}_{0};];";
}

class Limits : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server = new ServerProcess({"--workers", "1", "--max-body", "100000", "--max-statements", "50", "--peaks", "none"});
  }
  static void TearDownTestSuite() {
    delete server;
    server = nullptr;
  }
  static ServerProcess* server;
};
ServerProcess* Limits::server = nullptr;

TEST_F(Limits, HundredThousandDeepJsonIs400AndTheServerLives) {
  std::string deep(100000, '[');
  auto r = server->post("/v1/check", deep);
  ASSERT_EQ(r.status, 400) << r.body.dump();
  EXPECT_EQ(r.body["limit"], "max_json_depth");
  // Deep objects too, and a deep value inside an otherwise valid request.
  std::string objects;
  for (int i = 0; i < 20000; ++i) objects += "{\"a\":";
  EXPECT_EQ(server->post("/v1/check", objects).body["limit"], "max_json_depth");
  std::string nested = "{\"program\":" + std::string(70, '[') + std::string(70, ']') + "}";
  EXPECT_EQ(server->post("/v1/check", nested).status, 400);
  EXPECT_EQ(timed_health(*server).first, 200);
  EXPECT_EQ(server->post("/v1/check", json{{"program", matmul()}}).status, 200);
}

TEST_F(Limits, ChunkedBodyOverTheLimitIs413) {
  signal(SIGPIPE, SIG_IGN);  // the server closes the connection under the upload
  auto c = server->client(30);
  size_t sent = 0;
  std::string chunk(16384, ' ');
  // No length: cpp-httplib sends it chunked.
  auto res = c->Post(
      "/v1/check",
      [&](size_t, httplib::DataSink& sink) {
        if (sent >= (size_t{64} << 20)) {
          sink.done();
          return true;
        }
        sent += chunk.size();
        return sink.write(chunk.data(), chunk.size());
      },
      "application/json");
  // The server answers as soon as the limit is passed and closes the connection; the client may
  // see the reply or, having been cut off mid-upload, no reply — but never a 400 or a 200.
  if (res) {
    EXPECT_EQ(res->status, 413) << res->body;
    EXPECT_EQ(json::parse(res->body)["limit"], "max_body_bytes");
  }
  EXPECT_LT(sent, size_t{64} << 20) << "the upload was cut off at the limit";
  // A Content-Length body over the limit, as before.
  auto big = server->post("/v1/check", json{{"program", std::string(150000, ' ')}});
  EXPECT_EQ(big.status, 413);
  EXPECT_EQ(big.body["limit"], "max_body_bytes");
  EXPECT_EQ(timed_health(*server).first, 200);
}

TEST_F(Limits, ProgramLimitsAreNamedBeforeAnyWork) {
  // 10^12 iterations in one nest: refused by /v1/check before validation or interpretation.
  auto t0 = Clock::now();
  auto huge = server->post("/v1/check", json{{"program", nest_program({1000000, 1000000})}});
  EXPECT_LT(seconds_since(t0), 5.0);
  ASSERT_EQ(huge.status, 413) << huge.body.dump();
  EXPECT_EQ(huge.body["limit"], "max_nest_iterations");
  EXPECT_EQ(huge.body["field"], "program");
  // The same through /v1/verify and as a reward context of /v1/score (never a scored answer).
  auto v = server->post("/v1/verify", json{{"a", nest_program({1000000, 1000000})}, {"b", matmul()}});
  EXPECT_EQ(v.body["limit"], "max_nest_iterations");
  auto s = server->post("/v1/score", json{{"answer", parallel_answer()},
                                          {"reward_context", {{"root_program", nest_program({1000000, 1000000})},
                                                              {"parent_program", nest_program({1000000, 1000000})}}}});
  EXPECT_EQ(s.status, 413) << s.body.dump();
  EXPECT_EQ(s.body["field"], "reward_context.root_program");
  // A shape [2^32, 2^32] has more elements than int64 holds: an invalid program (the reader's
  // overflow check), never a wrapped count or a crashed worker.
  std::string wide = "input X: f32[4294967296,4294967296]\noutput Y: f32[4]\nL^{4}_{i=0}[Y^{f32,g}_{i}=X^{f32,g}_{0,i};];";
  auto w = server->post("/v1/check", json{{"program", wide}});
  EXPECT_TRUE(w.status == 413 || w.status == 422) << w.body.dump();
  EXPECT_TRUE(w.body.contains("error")) << w.body.dump();
  // 2^32 elements fit int64 but not the service's per-tensor limit.
  std::string big = "input X: f32[65536,65536]\noutput Y: f32[4]\nL^{4}_{i=0}[Y^{f32,g}_{i}=X^{f32,g}_{0,i};];";
  auto b = server->post("/v1/check", json{{"program", big}});
  ASSERT_EQ(b.status, 413) << b.body.dump();
  EXPECT_EQ(b.body["limit"], "max_tensor_elements");
  EXPECT_EQ(timed_health(*server).first, 200);
  // Elements within the per-tensor limit that add up to too many bytes.
  std::string many = "input X: f64[16384,16384]\ninput Z: f64[16384,16384]\noutput Y: f64[4]\n"
                     "L^{4}_{i=0}[Y^{f64,g}_{i}=X^{f64,g}_{0,i}+Z^{f64,g}_{0,i};];";
  EXPECT_EQ(server->post("/v1/check", json{{"program", many}}).body["limit"], "max_total_bytes");
  // More statements than --max-statements 50.
  std::string body;
  for (int i = 0; i < 60; ++i) body += "Y^{f32,g}_{0}=X^{f32,g}_{0};";
  std::string stmts = "input X: f32[4]\noutput Y: f32[4]\nL^{4}_{j=0}[Y^{f32,g}_{j}=X^{f32,g}_{j};];" + body;
  EXPECT_EQ(server->post("/v1/check", json{{"program", stmts}}).body["limit"], "max_statements");
  // Under every limit: still fine.
  EXPECT_EQ(server->post("/v1/check", json{{"program", nest_program({4, 4})}}).status, 200);
  // An *answer* over a limit is a scored failure at `valid` (not a time-out turned into no score).
  json huge_answer = {{"transformed_IR", nest_program({1000000, 1000000})}};
  auto a = server->post("/v1/score", json{{"answer", "<answer>" + huge_answer.dump() + "</answer>"},
                                          {"measure", false},
                                          {"reward_context", {{"root_program", nest_program({4, 4})},
                                                              {"parent_program", nest_program({4, 4})}}}});
  ASSERT_EQ(a.status, 200) << a.body.dump();
  EXPECT_EQ(a.body["answers"][0]["failed_stage"], "valid") << a.body.dump();
  EXPECT_NE(a.body["answers"][0]["reason"].get<std::string>().find("max_nest_iterations"), std::string::npos);
  EXPECT_DOUBLE_EQ(a.body["reward"].get<double>(), -0.75);
}

// The attack that compiled and ran attacker C++ through /v1/measure: text that would close the
// emitter's comment line and define a constructor creating a file. Through every identifier of
// both forms, and through every endpoint that compiles or emits code, it is a 4xx and no code runs.
TEST_F(Limits, InjectionThroughEveryIdentifierOfBothFormsIsRefusedAndRunsNothing) {
  const std::string marker = fmt::format("/tmp/steptp-injected-{}", getpid());
  std::remove(marker.c_str());
  const std::string code = fmt::format(
      "x\n#include <fcntl.h>\n__attribute__((constructor)) static void pwn() {{ creat(\"{}\", 0644); }}\n//", marker);
  json base = json::parse(R"({"name": "m", "known": [
      {"name": "A", "role": "input", "dtype": "f64", "shape": [4]},
      {"name": "D", "role": "output", "dtype": "f64", "shape": [4]}],
      "leir": "L^{4}_{i=0}[D^{f64,g}_{i}=A^{f64,g}_{i};];"})");
  std::vector<std::pair<std::string, json>> cases;
  auto with = [&](const std::string& what, auto edit) {
    json p = base;
    edit(p);
    cases.push_back({what, p});
  };
  with("program name", [&](json& p) { p["name"] = code; });
  with("tensor name", [&](json& p) {
    p["known"][0]["name"] = code;
  });
  with("tensor name in the body", [&](json& p) {
    p["leir"] = "L^{4}_{i=0}[D^{f64,g}_{i}=" + code + "^{f64,g}_{i};];";
  });
  with("loop variable", [&](json& p) { p["leir"] = "L^{4}_{" + code + "=0}[D^{f64,g}_{i}=A^{f64,g}_{i};];"; });
  with("dtype", [&](json& p) { p["known"][0]["dtype"] = code; });
  with("role", [&](json& p) { p["known"][0]["role"] = code; });
  const std::string body = "\ninput A: f64[4]\noutput D: f64[4]\nL^{4}_{i=0}[D^{f64,g}_{i}=A^{f64,g}_{i};];";
  std::vector<std::pair<std::string, std::string>> texts = {
      {"text: program name", "name " + code + body},
      {"text: tensor name", "input " + code + ": f64[4]\noutput D: f64[4]\nL^{4}_{i=0}[D^{f64,g}_{i}=A^{f64,g}_{i};];"},
      {"text: name ending in a backslash", "name m\\" + body},
  };
  for (const auto& [what, text] : texts) cases.push_back({what, text});
  for (const auto& [what, program] : cases)
    for (const char* ep : {"/v1/measure", "/v1/lower", "/v1/check"}) {
      json req = {{"program", program}};
      if (std::string(ep) == "/v1/lower") req["target"] = "cpu";
      auto r = server->post(ep, req);
      if (std::string(ep) == "/v1/check" && r.status == 200) {
        EXPECT_FALSE(r.body["valid"].get<bool>()) << what;  // check reports, it does not refuse
        continue;
      }
      EXPECT_GE(r.status, 400) << what << " via " << ep << ": " << r.body.dump();
      EXPECT_LT(r.status, 500) << what << " via " << ep << ": " << r.body.dump();
    }
  // An alias is free text (an ONNX name) without control characters: accepted, and never in
  // generated code. (With the newlines of `code` it is refused like the rest.)
  json aliased = base;
  aliased["known"][0]["alias"] = code;
  EXPECT_EQ(server->post("/v1/lower", json{{"program", aliased}}).status, 422);
  aliased["known"][0]["alias"] = "*/ \"); __attribute__((constructor)) static void pwn() {} /* \\";
  for (const char* target : {"cpu", "cuda", "tir"}) {
    auto r = server->post("/v1/lower", json{{"program", aliased}, {"target", target}});
    ASSERT_EQ(r.status, 200) << target << ": " << r.body.dump();
    EXPECT_EQ(r.body["source"].get<std::string>().find("pwn"), std::string::npos) << target;
  }
  EXPECT_EQ(server->post("/v1/measure", json{{"program", aliased}}).status, 200);
  EXPECT_NE(access(marker.c_str(), F_OK), 0) << "injected code ran";
}

TEST(Admission, OverCapacityIs429WithinASecondWhileHealthStaysQuick) {
  ServerProcess server(hang_server(1, 2));
  // One hang runs and two wait: the queue is full. 70 more concurrent requests (more than the 64
  // connection threads kept ready) must each be refused at once, not left waiting.
  std::vector<std::future<ServerProcess::Reply>> hangs;
  for (int i = 0; i < 3; ++i) {
    hangs.push_back(std::async(std::launch::async, [&] { return server.post("/v1/score", hang_request()); }));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  std::vector<std::future<std::pair<int, double>>> flood;
  for (int i = 0; i < 70; ++i)
    flood.push_back(std::async(std::launch::async, [&] {
      auto t0 = Clock::now();
      auto r = server.post("/v1/measure", json{{"program", matmul()}});
      return std::make_pair(r.status, seconds_since(t0));
    }));
  auto [hs, ht] = timed_health(server);
  EXPECT_EQ(hs, 200);
  EXPECT_LT(ht, 1.0);
  int refused = 0;
  double slowest = 0;
  for (auto& f : flood) {
    auto [status, secs] = f.get();
    refused += status == 429;
    slowest = std::max(slowest, secs);
  }
  EXPECT_EQ(refused, 70);
  EXPECT_LT(slowest, 1.5) << "every refusal came at once";
  for (auto& h : hangs) EXPECT_EQ(h.get().status, 200);
}

TEST(Admission, MeasuringJobsHaveTheirOwnBound) {
  // Two measuring jobs in flight at most: the third is refused although the queue has room,
  // and quick requests are still admitted.
  ServerProcess server(hang_server(1, 16, {"--max-inflight-measure", "2"}));
  std::vector<std::future<ServerProcess::Reply>> hangs;
  for (int i = 0; i < 2; ++i) {
    hangs.push_back(std::async(std::launch::async, [&] { return server.post("/v1/score", hang_request()); }));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_EQ(server.post("/v1/measure", json{{"program", matmul()}}).status, 429);
  auto quick = std::async(std::launch::async, [&] {
    return server.post("/v1/check", json{{"program", matmul()}});
  });
  for (auto& h : hangs) EXPECT_EQ(h.get().status, 200);
  EXPECT_EQ(quick.get().status, 200);
}

TEST(Admission, IdleConnectionsDoNotStarveHealth) {
  ServerProcess server({"--workers", "1", "--threads", "8", "--peaks", "none"});
  // 100 connections that send nothing (more than the threads kept ready).
  std::vector<int> idle;
  for (int i = 0; i < 100; ++i) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(uint16_t(server.port()));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    idle.push_back(fd);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  auto [status, secs] = timed_health(server);
  EXPECT_EQ(status, 200);
  EXPECT_LT(secs, 1.0);
  EXPECT_EQ(server.post("/v1/check", json{{"program", matmul()}}).status, 200);
  for (int fd : idle) close(fd);
}

TEST(Admission, AClientThatLeavesTakesItsQueuedJobWithIt) {
  ServerProcess server(hang_server(1, 4));
  auto running = std::async(std::launch::async, [&] { return server.post("/v1/score", hang_request()); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  {
    // Queued behind the hang; the client gives up after 1 s.
    auto c = server.client(1);
    auto res = c->Post("/v1/check", json{{"program", matmul()}}.dump(), "application/json");
    EXPECT_FALSE(res);
  }
  // The queue empties without a worker ever taking the job.
  double queued = 1;
  for (int i = 0; i < 50 && queued > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    auto h = server.client(5)->Get("/health");
    ASSERT_TRUE(h);
    queued = json::parse(h->body)["queued"].get<double>();
  }
  EXPECT_EQ(queued, 0);
  auto m = server.client(5)->Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_NE(m->body.find("steptp_requests_abandoned_total 1"), std::string::npos) << m->body;
  EXPECT_EQ(running.get().status, 200);
}

TEST(Shutdown, SigtermWithQueuedWorkExitsWithinTheGrace) {
  ServerProcess server(hang_server(1, 8, {"--shutdown-grace", "1"}));
  std::vector<std::future<ServerProcess::Reply>> jobs;
  for (int i = 0; i < 4; ++i) {
    jobs.push_back(std::async(std::launch::async, [&] { return server.post("/v1/score", hang_request()); }));
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
  }
  auto t0 = Clock::now();
  int rc = server.terminate(10);
  double took = seconds_since(t0);
  EXPECT_EQ(rc, 0);
  EXPECT_LT(took, 5.0) << "grace 1 s, plus stopping the workers and the idle keep-alive";
  int unavailable = 0;
  for (auto& j : jobs) {
    auto r = j.get();
    unavailable += r.status == 503;
    if (r.status == 503) EXPECT_FALSE(r.retry_after.empty());
  }
  EXPECT_EQ(unavailable, 4) << "three were queued, the running one passed the grace";
}

TEST(ApiKey, RequiredOnV1AndMetricsButNotHealth) {
  ServerProcess server({"--workers", "1", "--api-key", "s3cret", "--peaks", "none"});
  auto c = server.client(30);
  auto no = c->Post("/v1/check", json{{"program", matmul()}}.dump(), "application/json");
  ASSERT_TRUE(no);
  EXPECT_EQ(no->status, 401);
  EXPECT_EQ(no->get_header_value("WWW-Authenticate"), "Bearer");
  auto wrong = c->Post("/v1/check", httplib::Headers{{"Authorization", "Bearer s3cre"}},
                       json{{"program", matmul()}}.dump(), "application/json");
  EXPECT_EQ(wrong->status, 401);
  auto ok = c->Post("/v1/check", httplib::Headers{{"Authorization", "Bearer s3cret"}},
                    json{{"program", matmul()}}.dump(), "application/json");
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(c->Get("/metrics")->status, 401);
  EXPECT_EQ(c->Get("/health")->status, 200);
}

TEST(ApiKey, ANonLoopbackAddressNeedsAKey) {
  std::string cmd = fmt::format("{} serve --host 0.0.0.0 --port 0 --workers 1 --peaks none 2>&1", STEPTP_EXE);
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_TRUE(p);
  std::string out;
  char buf[512];
  while (fgets(buf, sizeof buf, p)) out += buf;
  int rc = pclose(p);
  EXPECT_NE(rc, 0);
  EXPECT_NE(out.find("--api-key"), std::string::npos) << out;
  EXPECT_EQ(out.find("listening"), std::string::npos) << out;
}

}  // namespace
}  // namespace steptp::serve::testing
