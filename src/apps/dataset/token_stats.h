// Token consumption of LEIR vs the code it lowers to (the Step-TP paper's token-consumption
// figure): each program is lowered to TVMScript (lower/tir), C++ (lower/cpu, without the
// shared prelude) and CUDA C (lower/cuda, without the shared prelude) and every text is counted
// with the Qwen3 tokenizer. Used by `steptp generate` (stats.json "token_comparison") and
// `steptp tokens --compare`.
//
// A program enters the totals, medians and ratios only when every target accepts it, so all
// columns count the same programs; rejections are counted per target with their reasons.
#pragma once

#include <cstddef>
#include <exception>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ir/leir/ast.h"

namespace steptp::tokenizer {
class BpeTokenizer;
}

namespace steptp::dataset {

// The median (mean of the middle two for an even count); 0 for none.
double median(std::vector<double> v);

// Qwen3 tokens of a chat as its template frames it: every message's content plus the
// "<|im_start|>ROLE\n" ... "<|im_end|>\n" around it (kChatFramingTokens per message). Records are
// capped by this count (kMaxRecordTokens, docs/dataset.md "Files"); tests/dataset/trl_load_test.py
// checks it against the tokenizer's real chat template.
inline constexpr size_t kChatFramingTokens = 5;
inline constexpr size_t kMaxRecordTokens = 16384;
size_t chat_tokens(const nlohmann::json& messages, const tokenizer::BpeTokenizer& tok);

// The texts compared, in this order:
//   "leir"       the compact body (what the public prompts and answers show);
//   "leir_decl"  the .leir text: declaration lines + compact body (the whole program);
//   "tvmscript"  TVMScript, current dialect (T.sblock);
//   "cpp"        the CPU kernel function (C++/OpenMP);
//   "cuda"       the CUDA kernels + host launcher.
const std::vector<std::string>& token_columns();
// The lowering targets among the columns (those that can reject a program).
const std::vector<std::string>& token_targets();

struct ProgramTexts {
  std::vector<std::string> text;    // per column; empty when rejected
  std::vector<std::string> reject;  // per column; non-empty = rejected with this reason
  bool all_accepted() const;
};
ProgramTexts lower_all(const leir::Program& p);

// {"programs", "compared", "tokenizer", "tvmscript_dialect",
//  "excluded": {target: {"count", "reasons": {reason: n}}},
//  "totals": {column: tokens}, "median": {column: per-program median},
//  "ratio_of_totals": {"tvmscript/leir", ...}, "median_ratio": {"tvmscript/leir", ...},
//  "prelude_tokens": {"cpp", "cuda"}, optional "per_program": [{"name", column: tokens, ...}]}
// Ratios are column/leir and column/leir_decl for each lowered column.
nlohmann::json compare_tokens(const std::vector<leir::Program>& programs, const tokenizer::BpeTokenizer& tok,
                              bool per_program = false);

// The reason class of a failed lowering, so like rejections count together: a target's rejection
// by its code (backend::rejection_group, lower/rejection.h), any other error by its kind.
std::string reason_class(const std::exception& e);

}  // namespace steptp::dataset
