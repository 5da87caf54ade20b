// `steptp optimize --policy llm` end to end against a real HTTP server process on loopback
// (chat_server.py: the Chat Completions protocol, scripted replies): valid actions, a full IR
// answer, malformed JSON, invalid LEIR, a non-equivalent program, an unchanged program, a huge
// output, HTTP 429 (retried) and 500, and a hang past the timeout — each a counted outcome, none
// a crash; then a rerun without a server replays the answers from the run directory.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "dataset/dataset_test_util.h"
#include "apps/dataset/prompt.h"
#include "ir/leir/program_io.h"
#include "apps/optimize/policy.h"
#include "search/analytic/search.h"
#include "serve/server_process.h"
#include "transform/trace.h"
#include "ir/verify/verifier.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace steptp::optimize {
namespace {

const char* kRoot =
    "name scale\ninput A: f64[4,8]\noutput C: f64[4,8]\n"
    "B^{4}_{tx=0}L^{8}_{a=0}[C^{f64,g}_{tx,a}=A^{f64,g}_{tx,a}*3+1;];\n";

// chat_server.py on a free loopback port, stopped by the destructor.
serve::testing::ServerProcess chat_server(const fs::path& script, const fs::path& log) {
  return serve::testing::ServerProcess(serve::testing::ServerProcess::Command{
      {"/usr/bin/python3", std::string(STEPTP_SOURCE_DIR) + "/tests/optimize/chat_server.py", script.string(),
       log.string()}});
}

std::string url(const serve::testing::ServerProcess& s) { return "http://127.0.0.1:" + std::to_string(s.port()) + "/v1"; }

int run(const std::string& cmd) {
  int rc = std::system((cmd + " > /dev/null 2>&1").c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

std::string wrap(const json& answer) { return "<think>scripted</think><answer>" + answer.dump() + "</answer>"; }

TEST(OptimizeChat, EveryScriptedCaseEndsInItsFunnelCount) {
  leir::Program root = leir::program_from_text(kRoot);
  // Two menu actions whose results differ from the root and from each other.
  std::vector<std::pair<json, std::string>> good;  // (action answer, result program text)
  for (const auto& m : dataset::action_menu(root)) {
    if (good.size() == 2) break;
    leir::Program r = strategies::apply_step(root, {m.strategy, m.address, m.description, m.choices.front()});
    std::string t = leir::program_to_text(r);
    if (t == leir::program_to_text(root) || (!good.empty() && good[0].second == t)) continue;
    if (!verify::verify(root, r, verify::VerifyOptions{}).equivalent) continue;
    good.push_back({{{"strategy", m.strategy}, {"site", strategies::to_handle(m.address)},
                     {"params", json::parse(strategies::params_to_json(m.choices.front()))}},
                    t});
  }
  ASSERT_EQ(good.size(), 2u);
  std::string wrong = kRoot;
  wrong.replace(wrong.find("*3+1"), 4, "*3+2");
  json script = json::array({
      {{"content", wrap(good[0].first)}, {"completion_tokens", 20}},                                // 1 valid action
      {{"content", wrap({{"strategy", "x"}, {"transformed_IR", good[1].second}})}},                 // 2 full IR
      {{"content", "<answer>{\"strategy\": \"loop_split\", \"site\": </answer>"}},                   // 3 malformed JSON
      {{"content", wrap({{"transformed_IR", "input A: f64[4,8]\noutput C: f64[4,8]\n"
                                            "B^{4}_{tx=0}L^{8}_{a=0}[C^{f64,g}_{tx,a}=Z^{f64,g}_{tx,a};];"}})}},  // 4 invalid
      {{"content", wrap({{"transformed_IR", wrong}})}},                                             // 5 not equivalent
      {{"content_repeat", {"<answer>", 200000}}},                                                   // 6 huge (1.6 MB)
      {{"status", 429}, {"body", "slow down"}},                                                     // 7 429 ...
      {{"content", wrap({{"transformed_IR", kRoot}})}},                                             //   ... then unchanged
      {{"status", 500}}, {{"status", 500}},                                                         // 8 500, 500
      {{"delay_s", 4}, {"content", "late"}}, {{"delay_s", 4}, {"content", "late"}},                 // 9 hang, hang
  });
  fs::path dir = dataset::testing::tmpdir("optimize_e2e", "funnel");
  fs::create_directories(dir);
  std::ofstream(dir / "script.json") << script.dump();
  std::ofstream(dir / "root.leir") << kRoot;
  std::string cmd;
  {
    auto server = chat_server(dir / "script.json", dir / "requests.jsonl");
    cmd = std::string(STEPTP_EXE) + " optimize " + (dir / "root.leir").string() + " --policy llm --out " +
          (dir / "run").string() +
          " --search bfs --depth 1 --nodes 1 --proposals 9 --concurrency 1 --measure model --timeout 1"
          " --http-retries 1 --backoff 0.05 --max-calls 9 --model scripted-model --json --base-url ";
    ASSERT_EQ(run(cmd + url(server)), 0);
  }
  json m = json::parse(std::ifstream(dir / "run" / "metrics.json"));
  const json& f = m["aggregate"]["funnel"];
  EXPECT_EQ(f["judged"], 7);
  EXPECT_EQ(f["transport_failures"], 2);
  EXPECT_EQ(f["parsed"], 5);      // all but the malformed and the huge answer
  EXPECT_EQ(f["valid"], 4);       // ... and the invalid program
  EXPECT_EQ(f["differs"], 3);     // ... and the unchanged one
  EXPECT_EQ(f["equivalent"], 2);  // ... and the wrong one
  EXPECT_EQ(f["compiles"], 2);
  EXPECT_EQ(f["inconclusive"], 0);
  EXPECT_EQ(m["aggregate"]["cost"]["calls"], 9);

  auto events = dataset::testing::lines(dir / "run" / "events" / "000-scale.jsonl");
  ASSERT_EQ(events.size(), 9u);
  EXPECT_EQ(events[0]["outcome"]["form"], "action");
  EXPECT_EQ(events[1]["outcome"]["form"], "ir");
  EXPECT_EQ(events[2]["outcome"]["failed_stage"], "parsed");
  EXPECT_NE(events[2]["outcome"]["reason"].get<std::string>().find("answer JSON"), std::string::npos);
  EXPECT_EQ(events[3]["outcome"]["failed_stage"], "valid");
  EXPECT_NE(events[3]["outcome"]["reason"].get<std::string>().find("transformed_IR:3:"), std::string::npos)
      << events[3]["outcome"]["reason"];
  EXPECT_EQ(events[4]["outcome"]["failed_stage"], "equivalent");
  EXPECT_NE(events[5]["outcome"]["reason"].get<std::string>().find("longer than"), std::string::npos);
  EXPECT_EQ(events[6]["outcome"]["failed_stage"], "differs");
  EXPECT_NE(events[7]["error"].get<std::string>().find("HTTP 500"), std::string::npos);
  EXPECT_NE(events[8]["error"].get<std::string>().find("HTTP request failed"), std::string::npos) << events[8]["error"];

  // What was sent: the model, the prompt of apps/dataset/prompt.h with the action menu, and one
  // request per HTTP attempt (the 429 and the 500 retried once, the hang timed out twice).
  auto requests = dataset::testing::lines(dir / "requests.jsonl");
  EXPECT_EQ(requests.size(), 12u);
  EXPECT_EQ(requests[0]["path"], "/v1/chat/completions");
  EXPECT_EQ(requests[0]["body"]["model"], "scripted-model");
  std::string user = requests[0]["body"]["messages"][1]["content"];
  EXPECT_NE(user.find(good[0].first["site"].get<std::string>()), std::string::npos);

  // No server now: every answer is replayed from the run directory, to the same events.
  ASSERT_EQ(run(cmd + "http://127.0.0.1:9/v1"), 0);
  auto replayed = dataset::testing::lines(dir / "run" / "events" / "000-scale.jsonl");
  ASSERT_EQ(replayed.size(), events.size());
  for (size_t i = 0; i < events.size(); ++i) {
    EXPECT_TRUE(replayed[i]["replayed"].get<bool>() || !replayed[i]["call"].get<bool>());
    replayed[i].erase("replayed");
    events[i].erase("replayed");
    EXPECT_EQ(replayed[i], events[i]) << i;
  }
}

}  // namespace
}  // namespace steptp::optimize
