// The public Step-TP layout (`generate --format public|both`): one chat line per record of the
// same split as train/eval.jsonl; every answer parses; its LEIR is the record's result program,
// and the prose signature of the prompt plus the answer's LEIR rebuild the result program exactly
// (an independent re-parse of the prose, compared by program hash). Layout switches reuse the
// checkpoint and leave no stale files.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "base/hash.h"
#include "apps/dataset/dataset.h"
#include "dataset/dataset_test_util.h"
#include "apps/dataset/public_format.h"
#include "ir/leir/canonical.h"
#include "ir/leir/printer.h"
#include "ir/leir/program_io.h"
#include "error_kind.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace steptp::dataset {
namespace {

using namespace testing;

GenerateOptions tiny_opts(const std::string& out) {
  GenerateOptions o = small_search(out, 11, 4);
  o.examples = true;  // the examples bring constants and params into the signatures
  o.token_sample = 0;
  return o;
}

fs::path tmpdir(const std::string& name) { return testing::tmpdir("public_test", name); }

// Independent reader of the prose signature: "'A' with dtype float64 and shape [2, 3]" plus the
// role sentences ("Inputs: 'A' and 'C'.", "Constant: 'F' = [2.0].", "Parameter: 'G' (originally
// 'g.w').", "Output: 'D'.") -> .leir declaration lines.
std::string decls_from_prose(const std::string& prose) {
  static const std::map<std::string, std::string> dt = {
      {"float16", "f16"}, {"bfloat16", "bf16"}, {"float32", "f32"}, {"float64", "f64"}, {"int8", "i8"},
      {"int16", "i16"}, {"int32", "i32"}, {"int64", "i64"}, {"uint8", "u8"}, {"bool", "bool"}};
  std::vector<std::string> order;
  std::map<std::string, std::string> type_of, role_of, extra;
  std::regex var(R"('([A-Za-z0-9_]+)' with dtype ([a-z0-9]+) and shape \[([0-9, ]*)\])");
  for (std::sregex_iterator it(prose.begin(), prose.end(), var), end; it != end; ++it) {
    std::string shape = (*it)[3];
    shape.erase(std::remove(shape.begin(), shape.end(), ' '), shape.end());
    order.push_back((*it)[1]);
    type_of[(*it)[1]] = dt.at((*it)[2]) + "[" + shape + "]";
  }
  std::regex role(R"((Inputs?|Constants?|Parameters?|Outputs?): ([^\n]*?)\.(?= [A-Z]|$|\n))");
  std::regex item(R"('([A-Za-z0-9_]+)'( = (\[[^\]]*\]))?( \(originally '([^']*)'\))?)");
  for (std::sregex_iterator it(prose.begin(), prose.end(), role), end; it != end; ++it) {
    std::string r = (*it)[1];
    std::string rn = r[0] == 'I' ? "input" : r[0] == 'C' ? "constant" : r[0] == 'P' ? "param" : "output";
    std::string list = (*it)[2];
    for (std::sregex_iterator jt(list.begin(), list.end(), item); jt != end; ++jt) {
      role_of[(*jt)[1]] = rn;
      std::string e;
      if ((*jt)[3].matched) e += " = " + (*jt)[3].str();
      if ((*jt)[5].matched) e += " as \"" + (*jt)[5].str() + "\"";
      extra[(*jt)[1]] = e;
    }
  }
  std::string out;
  for (const auto& n : order) out += role_of.at(n) + " " + n + ": " + type_of.at(n) + extra[n] + "\n";
  return out;
}

TEST(PublicFormat, KnownProseOfMatmul) {
  auto p = leir::program_from_text(
      "input A: f64[512,1024]\ninput C: f32[1024,768]\nconstant F: f64[] = [2.0]\n"
      "param G: i64[3] as \"gemm.weight\"\noutput D: f64[512,768]\n"
      "L^{512}_{a=0}L^{768}_{c=0}L^{1024}_{d=0}[D^{f64,g}_{a,c}=D^{f64,g}_{a,c}+A^{f64,g}_{a,d}*C^{f32,g}_{d,c}*F^{f64,g}+G^{i64,g}_{0};];");
  EXPECT_EQ(known_prose(p),
            "The known variables are 'A' with dtype float64 and shape [512, 1024], 'C' with dtype float32 and shape "
            "[1024, 768], 'F' with dtype float64 and shape [], 'G' with dtype int64 and shape [3] and 'D' with "
            "dtype float64 and shape [512, 768]. Inputs: 'A' and 'C'. Constant: 'F' = [2.0]. Parameter: 'G' "
            "(originally 'gemm.weight'). Output: 'D'.");
  // The prose carries the whole signature.
  auto back = leir::program_from_text(decls_from_prose(known_prose(p)) + leir::print_body(p.body));
  EXPECT_EQ(leir::program_hash(back), leir::program_hash(p));
}

TEST(PublicFormat, SameRecordsEveryAnswerParsesAndRebuildsTheResult) {
  auto d = tmpdir("both");
  auto o = tiny_opts(d.string());
  o.format = "both";
  ASSERT_TRUE(generate(o).complete);
  auto steps = lines(d / "steps.jsonl");
  std::map<std::string, std::vector<json>> recs_of;
  for (const auto& r : steps) recs_of[r["split"].get<std::string>()].push_back(r);
  int rebuilt = 0, multi = 0;
  bool saw_constant = false;
  for (const std::string split : {"train", "eval"}) {
    auto pub = lines(d / ("public_" + split + ".jsonl"));
    const auto& recs = recs_of[split];
    ASSERT_EQ(pub.size(), recs.size()) << split;
    ASSERT_EQ(pub.size(), lines(d / (split + ".jsonl")).size());
    for (size_t k = 0; k < pub.size(); ++k) {
      const json& r = recs[k];
      const auto& m = pub[k]["messages"];
      ASSERT_EQ(m.size(), 3u);
      EXPECT_EQ(m[0]["role"], "system");
      EXPECT_EQ(m[1]["role"], "user");
      EXPECT_EQ(m[2]["role"], "assistant");
      std::string user = m[1]["content"], asst = m[2]["content"];
      // The user prompt: prose signature, then the current program in compact LEIR.
      auto nl = user.find("\nThe current LEIR program is:\n");
      ASSERT_NE(nl, std::string::npos);
      std::string prose = user.substr(0, nl);
      ASSERT_EQ(prose.rfind("The known variables are ", 0), 0u);
      if (prose.find("Constant") != std::string::npos) saw_constant = true;
      std::string decls = decls_from_prose(prose);
      auto body_start = nl + 30;
      std::string parent_body = user.substr(body_start, user.find('\n', body_start) - body_start);
      EXPECT_EQ(base::hex64(leir::program_hash(leir::program_from_text(decls + parent_body))),
                r["parent_hash"].get<std::string>());
      // The assistant: <think>diff</think><answer>JSON</answer>.
      ASSERT_EQ(asst.rfind("<think>\n", 0), 0u);
      auto t = asst.find("</think>\n<answer>");
      ASSERT_NE(t, std::string::npos);
      ASSERT_EQ(asst.substr(asst.size() - 9), "</answer>");
      std::string cot = asst.substr(8, t - 8);
      json ans = json::parse(asst.substr(t + 17, asst.size() - 9 - t - 17));
      bool is_multi = r["kind"] == "multi";
      EXPECT_EQ(ans.is_array(), is_multi);
      if (!ans.is_array()) ans = json::array({ans});
      multi += is_multi;
      ASSERT_EQ(ans.size(), r["answers"].size());
      for (size_t i = 0; i < ans.size(); ++i) {
        const auto& a = r["answers"][i];
        EXPECT_EQ(ans[i]["strategy"], a["strategy"]);
        EXPECT_NE(cot.find("Apply " + a["strategy"].get<std::string>() + " "), std::string::npos);
        std::string leir_text = ans[i]["transformed_IR"];
        auto result = leir::program_from_text(a["result_program"].get<std::string>());
        EXPECT_EQ(leir_text, leir::print_body(result.body));
        if (a["transition"]["tensors_added"].empty() && a["transition"]["tensors_removed"].empty()) {
          EXPECT_EQ(base::hex64(leir::program_hash(leir::program_from_text(decls + leir_text))),
                    a["result_hash"].get<std::string>());
          ++rebuilt;
        }
      }
    }
  }
  EXPECT_GT(rebuilt, 20);
  EXPECT_GT(multi, 0);
  EXPECT_TRUE(saw_constant);  // the examples' constants went through the prose

  // Switching the layout re-exports from the checkpoint: same bytes, no stale files.
  std::map<std::string, std::string> both;
  for (const char* f : {"train.jsonl", "eval.jsonl", "public_train.jsonl", "public_eval.jsonl", "steps.jsonl"})
    both[f] = slurp(d / f);
  o.format = "public";
  ASSERT_TRUE(generate(o).complete);
  EXPECT_FALSE(fs::exists(d / "train.jsonl"));
  EXPECT_FALSE(fs::exists(d / "eval.jsonl"));
  for (const char* f : {"public_train.jsonl", "public_eval.jsonl", "steps.jsonl"}) EXPECT_EQ(slurp(d / f), both[f]) << f;
  auto man = json::parse(slurp(d / "manifest.json"));
  EXPECT_TRUE(man["files"].contains("public_train.jsonl"));
  EXPECT_FALSE(man["files"].contains("train.jsonl"));
  o.format = "steptp";
  ASSERT_TRUE(generate(o).complete);
  EXPECT_FALSE(fs::exists(d / "public_train.jsonl"));
  for (const char* f : {"train.jsonl", "eval.jsonl", "steps.jsonl"}) EXPECT_EQ(slurp(d / f), both[f]) << f;
}

TEST(PublicFormat, BadFormatIsRejected) {
  auto d = tmpdir("bad");
  auto o = tiny_opts(d.string());
  o.format = "hf";
  EXPECT_EQ(steptp::testing::thrown_kind([&] { generate(o); }), base::ErrorKind::BadRequest);
  EXPECT_FALSE(fs::exists(d));
}

}  // namespace
}  // namespace steptp::dataset
