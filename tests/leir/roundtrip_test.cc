// print(parse(x)) == x, byte for byte, for every public-translator program we have.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "ir/leir/parser.h"
#include "ir/leir/printer.h"
#include "ir/leir/program_io.h"
#include "ir/leir/values.h"

namespace fs = std::filesystem;
using namespace steptp::leir;

namespace {

std::vector<std::pair<std::string, std::string>> corpus_bodies() {
  std::vector<std::pair<std::string, std::string>> out;
  const fs::path shared = STEPTP_SHARED_DIR;
  for (const auto& e : fs::directory_iterator(shared / "examples")) {
    std::ifstream in(e.path());
    auto j = nlohmann::json::parse(in);
    out.emplace_back(e.path().filename().string(), j["leir"].get<std::string>());
  }
  std::ifstream t(shared / "corpus" / "public_translator_sample.jsonl");
  std::string line;
  while (std::getline(t, line)) {
    auto j = nlohmann::json::parse(line);
    out.emplace_back(j["name"].get<std::string>(), j["leir"].get<std::string>());
  }
  std::ifstream p(shared / "corpus" / "public_strategy_pairs_sample.jsonl");
  int k = 0;
  while (std::getline(p, line)) {
    auto j = nlohmann::json::parse(line);
    std::string tag = j["workload"].get<std::string>() + "/" + j["strategy"].get<std::string>() + "#" + std::to_string(k++);
    out.emplace_back(tag + "/before", j["before_leir"].get<std::string>());
    out.emplace_back(tag + "/after", j["after_leir"].get<std::string>());
  }
  return out;
}

// The continuation form `]L^{..}` (LEIR.md §2) is accepted but printed in the explicit form.
bool uses_continuation(const std::string& text) { return text.find("]L^") != std::string::npos ||
                                                         text.find("]B^") != std::string::npos; }

}  // namespace

TEST(RoundTrip, ContinuationFormPrintsExplicitly) {
  auto body = parse_body("L^{2}_{a=0}[X^{f64,g}_{a}=1;]L^{3}_{c=0}[Y^{f64,g}_{a,c}=2;]L^{4}_{d=0}[Z^{f64,g}_{a,c,d}=3;];");
  EXPECT_EQ(print_body(body),
            "L^{2}_{a=0}[X^{f64,g}_{a}=1;L^{3}_{c=0}[Y^{f64,g}_{a,c}=2;L^{4}_{d=0}[Z^{f64,g}_{a,c,d}=3;];];];");
  int seen = 0;
  for (const auto& [name, text] : corpus_bodies()) {
    if (!uses_continuation(text)) continue;
    ++seen;
    std::string once = print_body(parse_body(text, name));
    EXPECT_EQ(print_body(parse_body(once, name)), once) << name;
  }
  EXPECT_GE(seen, 1);
}

TEST(RoundTrip, EveryPublicProgramPrintsByteIdentically) {
  auto bodies = corpus_bodies();
  ASSERT_GE(bodies.size(), 10u + 40u + 350u);
  int failures = 0;
  for (const auto& [name, text] : bodies) {
    if (uses_continuation(text)) continue;
    std::string printed;
    try {
      printed = print_body(parse_body(text, name));
    } catch (const LeirError& e) {
      ADD_FAILURE() << e.what();
      ++failures;
      continue;
    }
    if (printed != text) {
      ++failures;
      size_t i = 0;
      while (i < printed.size() && i < text.size() && printed[i] == text[i]) ++i;
      ADD_FAILURE() << name << ": differs at byte " << i << "\n  source : " << text.substr(i > 40 ? i - 40 : 0, 120)
                    << "\n  printed: " << printed.substr(i > 40 ? i - 40 : 0, 120);
    }
  }
  EXPECT_EQ(failures, 0);
}

TEST(RoundTrip, PrettyFormParsesBackToTheSameProgram) {
  for (const auto& [name, text] : corpus_bodies()) {
    auto body = parse_body(text, name);
    EXPECT_EQ(print_body(parse_body(print_body_pretty(body), name)), print_body(body)) << name;
  }
}

TEST(RoundTrip, ProgramFilesReadInEveryForm) {
  const fs::path shared = STEPTP_SHARED_DIR;
  auto progs = read_programs((shared / "corpus" / "public_translator_sample.jsonl").string());
  ASSERT_EQ(progs.size(), 40u);
  for (const auto& p : progs) {
    // JSON form -> text form -> back: same signature and body.
    auto again = program_from_text(program_to_text(p), p.name + ".leir");
    EXPECT_EQ(print_body(again.body), print_body(p.body));
    ASSERT_EQ(again.known.size(), p.known.size());
    for (size_t i = 0; i < p.known.size(); ++i) {
      EXPECT_EQ(again.known[i].name, p.known[i].name);
      EXPECT_EQ(again.known[i].shape, p.known[i].shape);
      EXPECT_EQ(again.known[i].role, p.known[i].role);
      EXPECT_EQ(again.known[i].value, p.known[i].value) << p.name << " " << p.known[i].name;
    }
    auto j = program_to_json(p);
    auto back = program_from_json(j);
    EXPECT_EQ(print_body(back.body), print_body(p.body));
  }
}

namespace steptp::leir {
namespace {

TEST(ValuesFiles, KeyByNameResolvesAliasesAndRefusesAmbiguity) {
  // LEIR.md §1: values files may key a known tensor by its name or its alias (run/verify --inputs).
  auto p = program_from_text("input A: f64[2] as \"x.in\"\nparam W: f64[2] as \"A2\"\noutput C: f64[2]\n"
                             "L^{2}_{a=0}[C^{f64,g}_{a}=A^{f64,g}_{a}*W^{f64,g}_{a};];",
                             "alias.leir");
  TensorValue v{DType::F64, {2}, {1, 2}};
  auto keyed = key_by_name(p, {{"x.in", v}, {"W", v}}, "vals.json");
  EXPECT_EQ(keyed.count("A"), 1u);
  EXPECT_EQ(keyed.count("x.in"), 0u);
  TensorMap by_alias{{"x.in", v}};
  EXPECT_EQ(find_value(by_alias, "A", "x.in"), &by_alias.at("x.in"));
  EXPECT_EQ(find_value(by_alias, "W", "A2"), nullptr);
  // "A" names one tensor and is the alias of another: refused, not guessed.
  auto q = program_from_text("input A: f64[2]\nparam W: f64[2] as \"A\"\noutput C: f64[2]\n"
                             "L^{2}_{a=0}[C^{f64,g}_{a}=A^{f64,g}_{a}*W^{f64,g}_{a};];",
                             "ambiguous.leir");
  EXPECT_THROW(key_by_name(q, {{"A", v}}, "vals.json"), LeirError);
  try {
    key_by_name(p, {{"A", v}, {"x.in", v}}, "vals.json");
    ADD_FAILURE() << "a tensor given by name and alias was accepted";
  } catch (const LeirError& e) {
    EXPECT_NE(std::string(e.what()).find("given twice"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("vals.json"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace steptp::leir
