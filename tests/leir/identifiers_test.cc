// Names and free text where programs enter (ir/leir/identifiers.h): the grammar of each kind of name,
// errors with file:line:col naming the field, aliases that survive both forms whatever they hold,
// and sizes that overflow 64-bit integers.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "ir/leir/diagnostic.h"
#include "ir/leir/identifiers.h"
#include "ir/leir/program_io.h"
#include "ir/leir/tensors.h"
#include "ir/leir/validate.h"
#include "shell_command.h"

namespace fs = std::filesystem;
using namespace steptp::leir;

namespace {

const char* kBody = "L^{2}_{a=0}[C^{f64,g}_{a}=A^{f64,g}_{a}*2;];";

nlohmann::json json_program() {
  return {{"name", "scale"},
          {"known",
           {{{"name", "A"}, {"role", "input"}, {"dtype", "f64"}, {"shape", {2}}},
            {{"name", "C"}, {"role", "output"}, {"dtype", "f64"}, {"shape", {2}}}}},
          {"leir", kBody}};
}

// The LeirError a reader throws, or a failure when it accepts.
LeirError rejection(const std::function<void()>& read) {
  try {
    read();
  } catch (const LeirError& e) {
    return e;
  }
  ADD_FAILURE() << "accepted";
  return LeirError("", {}, "");
}

}  // namespace

TEST(Identifiers, GrammarOfEachKind) {
  EXPECT_TRUE(is_tensor_name("A"));
  EXPECT_TRUE(is_tensor_name("Ae12"));
  for (const char* bad : {"", "a", "A_b", "1A", "A-b", "A b", "\xc3\x89"}) EXPECT_FALSE(is_tensor_name(bad)) << bad;
  EXPECT_TRUE(is_loop_var("tx"));
  EXPECT_TRUE(is_loop_var("bya2"));
  for (const char* bad : {"", "A", "aB", "a_b", "1a", "if_then_else"}) EXPECT_FALSE(is_loop_var(bad)) << bad;
  // Program names: every workload and example name, model stems with dots and dashes.
  for (const char* ok : {"gemm_multiply_leakyrelu", "Conv3d_Mish_Tanh", "resnet-18.v2", "_x", "MatMul4D_MatMul4D"})
    EXPECT_TRUE(is_program_name(ok)) << ok;
  for (const char* bad : {"", ".hidden", "-x", "a b", "a/b", "a\\", "a\nb", "a#b", "\xc3\xa9"})
    EXPECT_FALSE(is_program_name(bad)) << bad;
  EXPECT_TRUE(is_program_name(std::string(kMaxProgramNameLength, 'a')));
  EXPECT_FALSE(is_program_name(std::string(kMaxProgramNameLength + 1, 'a')));
  EXPECT_FALSE(alias_problem("/blocks.0/attn/MatMul_output_0"));
  EXPECT_FALSE(alias_problem("gemm.weight \"quoted\" # \\ \xc3\xa9"));
  EXPECT_EQ(alias_problem("a\nb"), "it contains a control character");
  EXPECT_EQ(alias_problem("\xff"), "it is not valid UTF-8");
  EXPECT_TRUE(alias_problem(std::string(kMaxAliasBytes + 1, 'a')));
}

TEST(Identifiers, ProgramNameFromPath) {
  EXPECT_EQ(program_name_from_path("/m/resnet-18.v2.onnx"), "resnet-18.v2");
  EXPECT_EQ(program_name_from_path("dir/my model (1).leir"), "my_model__1_");
  EXPECT_EQ(program_name_from_path("<string>"), "_string_");
  EXPECT_EQ(program_name_from_path(""), "");
  EXPECT_TRUE(is_program_name(program_name_from_path("x/\n;system(1)\\.leir")));
}

TEST(Identifiers, QuotedTextCannotForgeDiagnosticLines) {
  EXPECT_EQ(quote_text("a\nb\"c"), "\"a\\nb\\\"c\"");
  std::string shown = quote_text(std::string(500, 'x'));
  EXPECT_LT(shown.size(), 100u);
  EXPECT_NE(shown.find("of 500 bytes"), std::string::npos);
}

TEST(Identifiers, TextFormNamesErrorsAtTheirPosition) {
  LeirError e = rejection(
      [] { program_from_text("name evil\\\ninput A: f64[2]\noutput C: f64[2]\n" + std::string(kBody), "p.leir"); });
  EXPECT_EQ(e.file(), "p.leir");
  EXPECT_EQ(e.loc().line, 1u);
  EXPECT_EQ(e.loc().col, 6u);
  EXPECT_NE(e.message().find("program name \"evil\\\\\" is not valid"), std::string::npos) << e.what();

  e = rejection([] { program_from_text("input A_b: f64[2]\noutput C: f64[2]\n" + std::string(kBody), "p.leir"); });
  EXPECT_EQ(e.loc().line, 1u);
  EXPECT_NE(e.message().find("known tensor name \"A_b\""), std::string::npos) << e.what();

  // Body names: tensors [A-Z][A-Za-z0-9]*, loop variables [a-z][a-z0-9]*.
  e = rejection([] {
    program_from_text("input A: f64[2]\noutput C: f64[2]\nL^{2}_{a=0}[C_x^{f64,g}_{a}=A^{f64,g}_{a};];", "p.leir");
  });
  EXPECT_EQ(e.loc().line, 3u);
  EXPECT_EQ(e.loc().col, 13u);
  EXPECT_NE(e.message().find("tensor name \"C_x\""), std::string::npos) << e.what();
  e = rejection([] {
    program_from_text("input A: f64[2]\noutput C: f64[2]\nL^{2}_{aB=0}[C^{f64,g}_{aB}=A^{f64,g}_{aB};];", "p.leir");
  });
  EXPECT_EQ(e.loc().col, 8u);
  EXPECT_NE(e.message().find("loop variable \"aB\""), std::string::npos) << e.what();
}

TEST(Identifiers, JsonFormNamesErrorsAtTheirPosition) {
  nlohmann::json j = json_program();
  j["name"] = "x\n#include <cstdlib>";
  std::string raw = "{\"name\": " + nlohmann::json(j["name"]).dump() + ",\n \"known\": " + j["known"].dump() +
                    ",\n \"leir\": \"" + kBody + "\"}";
  LeirError e = rejection([&] { program_from_json(nlohmann::json::parse(raw), "p.json", 1, raw); });
  EXPECT_EQ(e.loc().line, 1u);
  EXPECT_EQ(e.loc().col, 11u);
  EXPECT_NE(e.message().find("the program's \"name\" \"x\\n#include <cstdlib>\" is not valid"), std::string::npos)
      << e.what();

  j = json_program();
  j["known"][1]["name"] = "C; exit(1)";
  raw = "{\"name\": \"scale\",\n \"known\": [" + j["known"][0].dump() + ",\n  " + j["known"][1].dump() +
        "],\n \"leir\": \"" + kBody + "\"}";
  e = rejection([&] { program_from_json(nlohmann::json::parse(raw), "p.json", 1, raw); });
  EXPECT_EQ(e.loc().line, 3u);
  EXPECT_NE(e.message().find("known tensor name \"C; exit(1)\""), std::string::npos) << e.what();

  for (const char* key : {"role", "dtype"}) {
    j = json_program();
    j["known"][0][key] = "f64\n*/";
    e = rejection([&] { program_from_json(j, "p.json"); });
    EXPECT_NE(e.message().find("\"f64\\n*/\""), std::string::npos) << e.what();
  }
  j = json_program();
  j["name"] = 7;
  EXPECT_NE(rejection([&] { program_from_json(j, "p.json"); }).message().find("must be a string"), std::string::npos);
  j = json_program();
  j["known"][0]["alias"] = 7;
  EXPECT_NE(rejection([&] { program_from_json(j, "p.json"); }).message().find("\"alias\" must be a string"),
            std::string::npos);
}

TEST(Identifiers, AliasesSurviveBothFormsVerbatim) {
  for (std::string alias : {"gemm.weight", "/blocks.0/attn/MatMul_output_0", "say \"hi\"", "back\\slash\\",
                            "# not a comment", "\xc3\xa9t\xc3\xa9 \xe2\x80\x8b", "as \"x\" as"}) {
    nlohmann::json j = json_program();
    j["known"][0]["alias"] = alias;
    Program p = program_from_json(j, "p.json");
    EXPECT_EQ(p.known[0].alias, alias);
    std::string text = program_to_text(p);
    EXPECT_EQ(text.find('\n'), text.find("\ninput"));  // the alias stays on its declaration line
    Program back = program_from_text(text, "p.leir");
    EXPECT_EQ(back.known[0].alias, alias) << text;
    EXPECT_EQ(program_to_json(back), program_to_json(p));
  }
  // Text written before aliases were JSON literals reads as it did.
  EXPECT_EQ(program_from_text("param W: f64[2] as \"gemm.weight\"\noutput C: f64[2]\n"
                              "L^{2}_{a=0}[C^{f64,g}_{a}=W^{f64,g}_{a};];")
                .known[0]
                .alias,
            "gemm.weight");
  for (std::string bad : {"a\nb", "tab\there", "\xff\xfe"}) {
    nlohmann::json j = json_program();
    j["known"][0]["alias"] = bad;
    // nlohmann holds invalid UTF-8 as given (as Python bytes would reach it).
    LeirError e = rejection([&] { program_from_json(j, "p.json"); });
    EXPECT_NE(e.message().find("alias of A"), std::string::npos) << e.what();
  }
  LeirError e = rejection(
      [] { program_from_text("input A: f64[2] as \"a\" + \"b\"\noutput C: f64[2]\n" + std::string(kBody), "p.leir"); });
  EXPECT_NE(e.message().find("one JSON string literal"), std::string::npos) << e.what();
}

TEST(Identifiers, LongDeclarationLinesAreReadWithoutRecursion) {
  // std::regex overflowed the stack on declaration lines of ~40,000 characters.
  std::string values;
  for (int i = 0; i < 50000; ++i) values += (i ? ",1.5" : "1.5");
  Program p = program_from_text("constant K: f64[50000] = [" + values +
                                    "]\noutput C: f64[2]\n"
                                    "L^{2}_{a=0}[C^{f64,g}_{a}=K^{f64,g}_{a};];",
                                "p.leir");
  EXPECT_EQ(p.known[0].value->size(), 50000u);
  LeirError e = rejection([] { program_from_text("name " + std::string(200000, 'q') + "!\n" + kBody, "p.leir"); });
  EXPECT_NE(e.message().find("(first 60 of 200001 bytes)"), std::string::npos) << e.what();
  e = rejection([] { program_from_text("input A: f64[2] junk\noutput C: f64[2]\n" + std::string(kBody), "p.leir"); });
  EXPECT_EQ(e.loc().col, 17u);
  EXPECT_NE(e.message().find("malformed declaration: expected 'as \"alias\"' or the end"), std::string::npos)
      << e.what();
}

TEST(Identifiers, ValidatorAndPrinterRefuseNamesBuiltInCpp) {
  Program p = program_from_json(json_program(), "p.json");
  p.name = "x\ny";
  ValidationReport r = validate_all(p);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_NE(r.errors[0].message.find("program name \"x\\ny\""), std::string::npos);
  EXPECT_THROW(program_to_text(p), LeirError);
  p.name = "ok";
  p.known[0].alias = "bad\x01";
  EXPECT_FALSE(validate_all(p).ok());
}

TEST(Sizes, ElementCountsThatOverflowAreRejected) {
  EXPECT_EQ(checked_numel({}), 1);
  EXPECT_EQ(checked_numel({3, 4}), 12);
  EXPECT_EQ(checked_numel({int64_t{1} << 32, int64_t{1} << 32}), std::nullopt);  // 2^64 elements
  EXPECT_EQ(checked_numel({int64_t{1} << 30, int64_t{1} << 30}), std::nullopt);  // 2^60 elements are 2^63 bytes
  EXPECT_EQ(checked_numel({int64_t{1} << 30, (int64_t{1} << 30) - 1}), (int64_t{1} << 60) - (int64_t{1} << 30));
  EXPECT_EQ(checked_numel({-1}), std::nullopt);

  nlohmann::json j = json_program();
  j["known"][0]["shape"] = {int64_t{1} << 32, int64_t{1} << 32};
  LeirError e = rejection([&] { program_from_json(j, "p.json"); });
  EXPECT_NE(e.message().find("tensor A of shape [4294967296,4294967296] is too large"), std::string::npos) << e.what();
  e = rejection([] {
    program_from_text("input A: f64[4294967296,4294967296]\noutput C: f64[2]\n" + std::string(kBody), "p.leir");
  });
  EXPECT_EQ(e.loc().line, 1u);
  e = rejection(
      [] { program_from_text("input A: f64[99999999999999999999]\noutput C: f64[2]\n" + std::string(kBody)); });
  EXPECT_NE(e.message().find("not a 64-bit integer"), std::string::npos) << e.what();

  // Intermediates take their shape from loop ranges: the table refuses one that overflows.
  Program p = program_from_text(
      "output C: "
      "f64[]\nL^{4294967296}_{a=0}L^{4294967296}_{c=0}[T^{f64,g}_{a,c}=1;];L^{1}_{a=0}[C^{f64,g}=T^{f64,g}_{0,0};];",
      "p.leir");
  e = rejection([&] { build_tensor_table(p); });
  EXPECT_NE(e.message().find("tensor T of shape [4294967296,4294967296] is too large"), std::string::npos) << e.what();
  EXPECT_FALSE(validate_all(p).ok());

  // A loop whose end passes INT64_MAX is refused where it is read.
  e = rejection(
      [] { program_from_text("output C: f64[2]\nL^{9223372036854775807}_{a=1}[C^{f64,g}_{0}=1;];", "p.leir"); });
  EXPECT_EQ(e.loc().line, 2u);
  EXPECT_NE(e.message().find("runs past the largest 64-bit integer"), std::string::npos) << e.what();
}

TEST(Identifiers, CliCheckAndLowerRejectWithPosition) {
  const fs::path dir = fs::temp_directory_path() / ("steptp_ident_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path leir = dir / "evil.leir";
  std::ofstream(leir) << "name evil\\\ninput A: f64[2]\noutput C: f64[2]\n" << kBody << "\n";
  const fs::path json = dir / "evil.json";
  nlohmann::json j = json_program();
  j["name"] = "x\nint main(){}";
  const std::string raw = j.dump();
  std::ofstream(json) << raw << "\n";
  const std::string json_at =
      fmt::format("{}:1:{}: error: the program's \"name\"", json.string(), raw.rfind("\"name\":\"") + 9);
  for (const std::string cmd : {"check", "lower --target cpu", "lower --target cuda", "lower --target tir"}) {
    auto r = steptp::testing::run_shell(std::string(STEPTP_EXE) + " " + cmd + " " + leir.string() + " 2>&1");
    EXPECT_NE(r.code, 0) << cmd;
    EXPECT_NE(r.out.find(leir.string() + ":1:6: error: program name \"evil\\\\\" is not valid"), std::string::npos)
        << cmd << "\n"
        << r.out;
    r = steptp::testing::run_shell(std::string(STEPTP_EXE) + " " + cmd + " " + json.string() + " 2>&1");
    EXPECT_NE(r.code, 0) << cmd;
    EXPECT_NE(r.out.find(json_at), std::string::npos) << cmd << "\n" << r.out;
    EXPECT_EQ(r.out.find("\nint main"), std::string::npos) << r.out;  // shown escaped, never as a line
  }
  fs::remove_all(dir);
}
