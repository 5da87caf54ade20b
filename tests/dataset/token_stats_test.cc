// LEIR vs TVMScript/C++/CUDA token comparison (apps/dataset/token_stats.h): the numbers are the
// tokenizer's counts of the texts each backend emits; a program one target rejects is excluded
// from every column and counted with its reason; lowered code costs more tokens than LEIR (the
// Step-TP paper's point); `steptp tokens --compare --json` prints the same numbers.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "lower/cpu/codegen.h"
#include "lower/cuda/cuda_codegen.h"
#include "lower/rejection.h"
#include "lower/tir/tvmscript.h"
#include "apps/dataset/token_stats.h"
#include "ir/leir/diagnostic.h"
#include "ir/leir/printer.h"
#include "ir/leir/program_io.h"
#include "front/tokenizer/bpe_tokenizer.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace steptp::dataset {
namespace {

const char* kMatmul =
    "name matmul\ninput A: f64[64,32]\ninput C: f64[32,48]\noutput D: f64[64,48]\n"
    "B^{64}_{tx=0}L^{48}_{a=0}L^{32}_{c=0}[D^{f64,g}_{tx,a}=D^{f64,g}_{tx,a}+A^{f64,g}_{tx,c}*C^{f64,g}_{c,a};];";
// f16 tensors: the CPU and TIR targets lower them, the CUDA backend rejects them.
const char* kHalf =
    "name half_add\ninput A: f16[16]\noutput D: f16[16]\nL^{16}_{a=0}[D^{f16,g}_{a}=A^{f16,g}_{a}+A^{f16,g}_{a};];";

const tokenizer::BpeTokenizer& tok() {
  static const auto t = tokenizer::BpeTokenizer::load(tokenizer::default_qwen3_path());
  return t;
}

TEST(TokenStats, CountsAreTheTokenizerCountsOfTheLoweredTexts) {
  auto p = leir::program_from_text(kMatmul);
  auto cmp = compare_tokens({p}, tok(), /*per_program=*/true);
  EXPECT_EQ(cmp["compared"], 1);
  size_t leir_n = tok().count(leir::print_body(p.body));
  size_t decl_n = tok().count("input    A: f64[64,32]\ninput    C: f64[32,48]\noutput   D: f64[64,48]\n" +
                              leir::print_body(p.body));
  size_t tir_n = tok().count(backend::tir::emit_tvmscript(p));
  size_t cpp_n = tok().count(backend::cpu::generate_cpu_kernel(p).code);
  size_t cuda_n = tok().count(backend::cuda::generate_cuda(p).code);
  EXPECT_EQ(cmp["totals"]["leir"].get<size_t>(), leir_n);
  EXPECT_EQ(cmp["totals"]["leir_decl"].get<size_t>(), decl_n);
  EXPECT_EQ(cmp["totals"]["tvmscript"].get<size_t>(), tir_n);
  EXPECT_EQ(cmp["totals"]["cpp"].get<size_t>(), cpp_n);
  EXPECT_EQ(cmp["totals"]["cuda"].get<size_t>(), cuda_n);
  EXPECT_EQ(cmp["per_program"][0]["tvmscript"].get<size_t>(), tir_n);
  EXPECT_EQ(cmp["median"]["cpp"].get<double>(), double(cpp_n));
  EXPECT_NEAR(cmp["ratio_of_totals"]["tvmscript/leir"].get<double>(), double(tir_n) / double(leir_n), 1e-4);
  EXPECT_EQ(cmp["prelude_tokens"]["cpp"].get<size_t>(), tok().count(backend::cpu::cpu_prelude()));
  // The paper's point, a real property of matmul: every lowering is longer than the LEIR.
  EXPECT_GT(cmp["ratio_of_totals"]["tvmscript/leir"].get<double>(), 1.0);
  EXPECT_GT(cmp["ratio_of_totals"]["tvmscript/leir_decl"].get<double>(), 1.0);
  EXPECT_GT(cmp["ratio_of_totals"]["cpp/leir"].get<double>(), 1.0);
  EXPECT_GT(cmp["ratio_of_totals"]["cuda/leir"].get<double>(), 1.0);
}

TEST(TokenStats, ARejectedProgramLeavesEveryColumnAndIsCounted) {
  auto m = leir::program_from_text(kMatmul);
  auto h = leir::program_from_text(kHalf);
  // The rejection is typed: its reason apart from the target's prefix the message opens with.
  std::optional<backend::RejectionCode> code;
  try {
    backend::cuda::generate_cuda(h);
    ADD_FAILURE() << "the CUDA target lowers a half-precision program";
  } catch (const backend::TargetRejection& e) {
    EXPECT_EQ(std::string(e.message()), "cuda target rejects the program: " + e.reason());
    EXPECT_EQ(e.reason(), "tensor A has dtype f16, which this CUDA backend does not lower");
    code = e.code();
  }
  EXPECT_EQ(code, backend::RejectionCode::UnsupportedDtype);
  EXPECT_NO_THROW(backend::cpu::generate_cpu_kernel(h));
  auto both = compare_tokens({m, h}, tok());
  auto only = compare_tokens({m}, tok());
  EXPECT_EQ(both["programs"], 2);
  EXPECT_EQ(both["compared"], 1);
  EXPECT_EQ(both["totals"], only["totals"]);
  EXPECT_EQ(both["excluded"]["cuda"]["count"], 1);
  EXPECT_EQ(both["excluded"]["cpp"]["count"], 0);
  ASSERT_EQ(both["excluded"]["cuda"]["reasons"].size(), 1u);
  std::string reason = both["excluded"]["cuda"]["reasons"].begin().key();
  EXPECT_NE(reason.find("dtype"), std::string::npos) << reason;
  EXPECT_EQ(reason, backend::rejection_group(backend::RejectionCode::UnsupportedDtype));
}

TEST(TokenStats, RejectionsCountByTheirCodeNotTheirText) {
  // Two blocks over the CUDA limit whose messages differ in every number and name, and one local
  // buffer that two kernels use: two reason classes, by code.
  auto wide = [](int n, const std::string& t) {
    return leir::program_from_text(fmt::format("input A: f64[{0}]\noutput {1}: f64[{0}]\n"
                                               "B^{{{0}}}_{{tx=0}}[{1}^{{f64,g}}_{{tx}}=A^{{f64,g}}_{{tx}}*2;];",
                                               n, t));
  };
  auto local = leir::program_from_text(
      "input A: f64[4]\noutput D: f64[4]\nL^{4}_{a=0}[E^{f64,l}_{a}=A^{f64,g}_{a}*2;];"
      "L^{4}_{a=0}[D^{f64,g}_{a}=E^{f64,l}_{a}+A^{f64,g}_{a};];");
  std::vector<std::string> reasons;
  for (const auto& p : {wide(2048, "D"), wide(4096, "Q"), local}) {
    try {
      backend::cuda::generate_cuda(p);
      ADD_FAILURE() << "the CUDA target lowers " << leir::print_body(p.body);
    } catch (const backend::TargetRejection& e) {
      reasons.push_back(e.reason());
    }
  }
  ASSERT_EQ(reasons.size(), 3u);
  EXPECT_NE(reasons[0], reasons[1]);
  auto cmp = compare_tokens({wide(2048, "D"), wide(4096, "Q"), local}, tok());
  EXPECT_EQ(cmp["excluded"]["cuda"]["count"], 3);
  EXPECT_EQ(cmp["excluded"]["cuda"]["reasons"],
            (json{{std::string(backend::rejection_group(backend::RejectionCode::ThreadsPerBlock)), 2},
                  {std::string(backend::rejection_group(backend::RejectionCode::LocalBufferAcrossKernels)), 1}}));
  // An error that is not a target's rejection is classed by its kind.
  EXPECT_EQ(reason_class(leir::LeirError("p.leir", {}, "no such tensor")), "invalid error, not a target's rejection");
}

TEST(TokenStats, CliCompareJsonPrintsTheSameNumbers) {
  fs::path f = fs::temp_directory_path() / ("steptp_token_stats_" + std::to_string(::getpid()) + ".leir");
  {
    std::ofstream o(f);
    o << kMatmul << "\n";
  }
  std::string cmd = std::string(STEPTP_EXE) + " tokens --compare --json " + f.string();
  FILE* pipe = popen(cmd.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
  EXPECT_EQ(pclose(pipe), 0);
  fs::remove(f);
  auto cli = json::parse(out);
  auto direct = compare_tokens({leir::program_from_text(kMatmul)}, tok(), true);
  EXPECT_EQ(cli["totals"], direct["totals"]);
  EXPECT_EQ(cli["ratio_of_totals"], direct["ratio_of_totals"]);
  EXPECT_EQ(cli["per_program"][0]["name"], "matmul");

  // A file that is not a program: a clear error and exit status 1.
  std::string bad = std::string(STEPTP_EXE) + " tokens --compare /nonexistent/prog.leir 2>/dev/null";
  EXPECT_EQ(WEXITSTATUS(std::system(bad.c_str())), 1);
}

}  // namespace
}  // namespace steptp::dataset
