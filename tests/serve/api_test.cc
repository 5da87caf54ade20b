// Every endpoint of `steptp serve` and every error class, against a real server process on
// loopback (docs/openapi.yaml).
#include <gtest/gtest.h>

#include <thread>
#include <tuple>
#include <vector>

#include "base/error.h"
#include "serve/server_process.h"
#include "serve/serve_test_util.h"

namespace steptp::serve::testing {
namespace {

class Api : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server = new ServerProcess({"--workers", "2", "--max-body", "200000", "--peaks", peaks_cache()});
  }
  static void TearDownTestSuite() {
    delete server;
    server = nullptr;
  }
  static ServerProcess* server;
  ServerProcess::Reply post(const std::string& path, const json& body) { return server->post(path, body); }
};
ServerProcess* Api::server = nullptr;

TEST_F(Api, Health) {
  auto res = server->client()->Get("/health");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  json h = json::parse(res->body);
  EXPECT_EQ(h["status"], "ok");
  EXPECT_EQ(h["workers"], 2);
  EXPECT_TRUE(h["network_isolated"].is_boolean());
}

TEST_F(Api, Check) {
  auto ok = post("/v1/check", {{"program", matmul()}});
  ASSERT_EQ(ok.status, 200);
  EXPECT_TRUE(ok.body["valid"].get<bool>());
  EXPECT_EQ(ok.body["flops"], 3072.0);  // 8*12*16 multiply-adds
  auto bad = post("/v1/check", {{"program", kInvalidLeir}});
  ASSERT_EQ(bad.status, 200);
  EXPECT_FALSE(bad.body["valid"].get<bool>());
  EXPECT_EQ(bad.body["errors"][0]["line"], 3);
  auto unparsable = post("/v1/check", {{"program", "input A: f64[4]\noutput B: f64[4]\nL^{4}_{i=0}[B^{f64,g}_{i}=;];"}});
  ASSERT_EQ(unparsable.status, 422) << unparsable.body.dump();
  EXPECT_EQ(unparsable.body["field"], "program");
  EXPECT_EQ(unparsable.body["line"], 3);
  EXPECT_GT(unparsable.body["col"].get<int>(), 1);
}

TEST_F(Api, Verify) {
  auto par = post("/v1/apply", {{"program", matmul()}, {"strategy", "loop_parallelization"}, {"site", 0}, {"params", json::object()}});
  ASSERT_EQ(par.status, 200) << par.body.dump();
  auto eq = post("/v1/verify", {{"a", matmul()}, {"b", par.body["results"][0]["program"]}});
  ASSERT_EQ(eq.status, 200);
  EXPECT_TRUE(eq.body["equivalent"].get<bool>());
  EXPECT_EQ(eq.body["class"], "exact");
  auto ne = post("/v1/verify", {{"a", matmul()}, {"b", wrong_matmul()}, {"seed", 7}, {"trials", 2}});
  ASSERT_EQ(ne.status, 200);
  EXPECT_FALSE(ne.body["equivalent"].get<bool>());
  EXPECT_EQ(ne.body["worst"]["tensor"], "D");
  EXPECT_EQ(ne.body["seed"], 7);
  // A given seed reproduces; without one every request draws fresh inputs.
  auto again = post("/v1/verify", {{"a", matmul()}, {"b", wrong_matmul()}, {"seed", 7}, {"trials", 2}});
  EXPECT_EQ(again.body["worst"], ne.body["worst"]);
  auto f1 = post("/v1/verify", {{"a", matmul()}, {"b", wrong_matmul()}});
  auto f2 = post("/v1/verify", {{"a", matmul()}, {"b", wrong_matmul()}});
  EXPECT_NE(f1.body["seed"], f2.body["seed"]);
}

TEST_F(Api, VerifyErrors) {
  auto inv = post("/v1/verify", {{"a", matmul()}, {"b", kInvalidLeir}});
  ASSERT_EQ(inv.status, 422);
  EXPECT_EQ(inv.body["field"], "b");
  EXPECT_EQ(inv.body["line"], 3);
  EXPECT_EQ(post("/v1/verify", {{"a", matmul()}}).status, 400);
  auto range = post("/v1/verify", {{"a", matmul()}, {"b", matmul()}, {"trials", 0}});
  EXPECT_EQ(range.status, 400);
  EXPECT_NE(range.body["error"].get<std::string>().find("trials"), std::string::npos);
  EXPECT_EQ(post("/v1/verify", {{"a", 3}, {"b", matmul()}}).status, 400);
  auto unknown = post("/v1/verify", {{"a", matmul()}, {"b", matmul()}, {"tirals", 2}});
  EXPECT_EQ(unknown.status, 400);
  EXPECT_NE(unknown.body["error"].get<std::string>().find("tirals"), std::string::npos);
}

TEST_F(Api, Apply) {
  auto sampled = post("/v1/apply", {{"program", matmul()}, {"strategy", "loop_split"}, {"samples", 2}, {"seed", 3}});
  ASSERT_EQ(sampled.status, 200) << sampled.body.dump();
  ASSERT_FALSE(sampled.body["results"].empty());
  const json& first = sampled.body["results"][0];
  // The exact (site, params) choice reproduces the sampled program.
  auto exact = post("/v1/apply", {{"program", matmul()}, {"strategy", "loop_split"}, {"site", first["site"]},
                                  {"params", first["params"]}});
  ASSERT_EQ(exact.status, 200);
  EXPECT_EQ(exact.body["results"][0]["hash"], first["hash"]);
  EXPECT_EQ(post("/v1/apply", {{"program", matmul()}, {"strategy", "no_such"}}).status, 400);
  // Parameters or a site the program does not have are a value out of range: 400 naming the field,
  // as every other request error (base/error.h; before issue 36 these two were 422).
  auto bad = post("/v1/apply", {{"program", matmul()}, {"strategy", "loop_split"}, {"site", 0}, {"params", {{"factor", 999}}}});
  EXPECT_EQ(bad.status, 400) << bad.body.dump();
  EXPECT_EQ(bad.body["field"], "params");
  EXPECT_NE(bad.body["error"].get<std::string>().find("not among the"), std::string::npos) << bad.body.dump();
  auto no_site = post("/v1/apply", {{"program", matmul()}, {"strategy", "loop_split"}, {"site", 999}, {"params", json::object()}});
  EXPECT_EQ(no_site.status, 400) << no_site.body.dump();
  EXPECT_EQ(no_site.body["field"], "site");
  EXPECT_NE(no_site.body["error"].get<std::string>().find("site 999 does not exist"), std::string::npos);
}

TEST_F(Api, Lower) {
  auto cpu = post("/v1/lower", {{"program", matmul()}, {"target", "cpu"}});
  ASSERT_EQ(cpu.status, 200);
  EXPECT_NE(cpu.body["source"].get<std::string>().find("extern \"C\""), std::string::npos);
  auto tir = post("/v1/lower", {{"program", matmul()}, {"target", "tir"}});
  ASSERT_EQ(tir.status, 200);
  EXPECT_NE(tir.body["source"].get<std::string>().find("prim_func"), std::string::npos);
  EXPECT_EQ(post("/v1/lower", {{"program", matmul()}, {"target", "fpga"}}).status, 400);
}

TEST_F(Api, Measure) {
  auto m = post("/v1/measure", {{"program", matmul()}, {"against", matmul()}, {"min_time", 0.002}});
  ASSERT_EQ(m.status, 200) << m.body.dump();
  EXPECT_GT(m.body["program"]["median_ms"].get<double>(), 0);
  EXPECT_GT(m.body["speedup"].get<double>(), 0);
  EXPECT_EQ(m.body["threads"], 1);
  auto other = post("/v1/measure", {{"program", matmul()}, {"against", kInvalidLeir}});
  EXPECT_EQ(other.status, 422);
  std::string renamed = matmul();
  renamed.replace(renamed.find("C: f64[16,12]"), 1, "E");
  auto sig = post("/v1/measure", {{"program", matmul()}, {"against", renamed}});
  EXPECT_EQ(sig.status, 422) << sig.body.dump();
}

TEST_F(Api, Score) {
  auto s = post("/v1/score", {{"answer", parallel_answer()}, {"reward_context", matmul_context()}});
  ASSERT_EQ(s.status, 200) << s.body.dump();
  const json& a = s.body["answers"][0];
  EXPECT_EQ(a["stages_passed"][4], "compiles") << a.dump();
  EXPECT_GT(a["speedup_vs_parent"].get<double>(), 0);
  EXPECT_EQ(a["implausible"], false);
  EXPECT_TRUE(s.body["verify_seed"].is_number_unsigned());
  auto unparsed = post("/v1/score", {{"answer", "no tags"}, {"reward_context", matmul_context()}});
  ASSERT_EQ(unparsed.status, 200);
  EXPECT_EQ(unparsed.body["reward"], -1.0);
  auto no_measure = post("/v1/score", {{"answer", parallel_answer()}, {"reward_context", matmul_context()}, {"measure", false}});
  EXPECT_DOUBLE_EQ(no_measure.body["reward"].get<double>(), 0.1);
}

TEST_F(Api, ScoreErrors) {
  EXPECT_EQ(post("/v1/score", {{"answer", parallel_answer()}}).status, 400);
  auto ctx = post("/v1/score", {{"answer", parallel_answer()},
                                {"reward_context", {{"root_program", kInvalidLeir}, {"parent_program", matmul()}}}});
  ASSERT_EQ(ctx.status, 422);
  EXPECT_EQ(ctx.body["field"], "reward_context.root_program");
  EXPECT_EQ(ctx.body["line"], 3);
  auto fault = post("/v1/score", {{"answer", parallel_answer()}, {"reward_context", matmul_context()}, {"fault", "crash"}});
  EXPECT_EQ(fault.status, 400);  // fault injection is off in a normal server
}

// One status per error kind (base/error.h kErrorKinds), whichever endpoint raises it: a field the
// endpoint does not have or a value out of range is BadRequest, a program that does not parse, that
// a target rejects or whose signature differs is Invalid. (Before issue 36, /v1/apply answered 422
// for a site or parameters out of range where every other endpoint said 400.)
TEST_F(Api, EveryEndpointGivesAnErrorKindItsOneStatus) {
  const int bad_request = base::http_status(base::ErrorKind::BadRequest);
  const int invalid = base::http_status(base::ErrorKind::Invalid);
  const std::string unparsable = "input A: f64[4]\noutput B: f64[4]\nL^{4}_{i=0}[B^{f64,g}_{i}=;];";
  // Each endpoint's request and the pointer to a program it reads.
  const std::vector<std::tuple<std::string, json, std::string>> requests = {
      {"/v1/check", {{"program", matmul()}}, "/program"},
      {"/v1/verify", {{"a", matmul()}, {"b", matmul()}}, "/b"},
      {"/v1/apply", {{"program", matmul()}, {"strategy", "loop_split"}}, "/program"},
      {"/v1/lower", {{"program", matmul()}, {"target", "cpu"}}, "/program"},
      {"/v1/measure", {{"program", matmul()}, {"min_time", 0.002}}, "/program"},
      {"/v1/score", {{"answer", parallel_answer()}, {"reward_context", matmul_context()}, {"measure", false}},
       "/reward_context/root_program"},
  };
  for (const auto& [path, request, program] : requests) {
    SCOPED_TRACE(path);
    json unknown = request;
    unknown["colour"] = "blue";
    auto u = post(path, unknown);
    EXPECT_EQ(u.status, bad_request) << u.body.dump();
    json broken = request;
    broken[json::json_pointer(program)] = unparsable;
    auto b = post(path, broken);
    EXPECT_EQ(b.status, invalid) << b.body.dump();
  }
  auto range = [&](const std::string& path, const json& request) {
    auto r = post(path, request);
    EXPECT_EQ(r.status, bad_request) << path << ": " << r.body.dump();
  };
  range("/v1/apply", {{"program", matmul()}, {"strategy", "loop_split"}, {"site", 999}, {"params", json::object()}});
  range("/v1/apply", {{"program", matmul()}, {"strategy", "no_such"}});
  range("/v1/verify", {{"a", matmul()}, {"b", matmul()}, {"trials", 0}});
  range("/v1/lower", {{"program", matmul()}, {"target", "fpga"}});
  range("/v1/measure", {{"program", matmul()}, {"threads", 0}});
  const std::string half =
      "input A: f16[16]\noutput D: f16[16]\nL^{16}_{a=0}[D^{f16,g}_{a}=A^{f16,g}_{a}+A^{f16,g}_{a};];";
  auto rejected = post("/v1/lower", {{"program", half}, {"target", "cuda"}});
  EXPECT_EQ(rejected.status, invalid) << rejected.body.dump();
  std::string renamed = matmul();
  renamed.replace(renamed.find("C: f64[16,12]"), 1, "E");
  auto differ = post("/v1/measure", {{"program", matmul()}, {"against", renamed}});
  EXPECT_EQ(differ.status, invalid) << differ.body.dump();
}

TEST_F(Api, Batch) {
  json items = json::array({{{"answer", parallel_answer()}, {"reward_context", matmul_context()}, {"measure", false}},
                            {{"answer", "nothing"}, {"reward_context", matmul_context()}},
                            {{"reward_context", matmul_context()}}});
  auto b = post("/v1/score/batch", {{"items", items}});
  ASSERT_EQ(b.status, 200) << b.body.dump();
  ASSERT_EQ(b.body["results"].size(), 3u);
  EXPECT_DOUBLE_EQ(b.body["results"][0]["reward"].get<double>(), 0.1);
  EXPECT_EQ(b.body["results"][1]["reward"], -1.0);
  EXPECT_EQ(b.body["results"][2]["status"], 400);
  EXPECT_EQ(post("/v1/score/batch", {{"items", json::array()}}).status, 400);
  EXPECT_EQ(post("/v1/score/batch", {{"items", 3}}).status, 400);
}

TEST_F(Api, TransportErrors) {
  auto bad = server->post("/v1/check", std::string("{\"program\":\n  \"x\",,}"));
  ASSERT_EQ(bad.status, 400);
  EXPECT_EQ(bad.body["line"], 2);
  EXPECT_EQ(bad.body["col"], 7);  // the second comma
  EXPECT_EQ(server->post("/v1/check", std::string("[1,2]")).status, 400);
  auto big = server->post("/v1/check", json{{"program", std::string(300000, ' ')}});
  EXPECT_EQ(big.status, 413);
  auto nf = server->post("/v1/nothing", json::object());
  EXPECT_EQ(nf.status, 404);
  EXPECT_TRUE(nf.body.contains("error"));
  auto get = server->client()->Get("/v1/score");
  ASSERT_TRUE(get);
  EXPECT_EQ(get->status, 405);
  EXPECT_EQ(get->get_header_value("Allow"), "POST");
  auto rid = post("/v1/check", {{"program", matmul()}, {"request_id", "abc-17"}});
  EXPECT_EQ(rid.body["request_id"], "abc-17");
}

TEST_F(Api, Metrics) {
  post("/v1/score", {{"answer", "x"}, {"reward_context", matmul_context()}});
  post("/v1/check", {{"program", matmul()}});
  auto res = server->client()->Get("/metrics");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  const std::string& t = res->body;
  EXPECT_NE(t.find("steptp_requests_total{endpoint=\"/v1/check\",code=\"200\"}"), std::string::npos) << t;
  EXPECT_NE(t.find("steptp_request_duration_seconds_bucket{endpoint=\"/v1/score\",le=\"+Inf\"}"), std::string::npos);
  EXPECT_NE(t.find("steptp_score_answers_total{failed_stage=\"parsed\"}"), std::string::npos);
  EXPECT_NE(t.find("steptp_queue_depth 0"), std::string::npos);
  EXPECT_NE(t.find("steptp_workers 2"), std::string::npos);
}

}  // namespace
}  // namespace steptp::serve::testing
