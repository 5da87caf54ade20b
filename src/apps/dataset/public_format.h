// The public Step-TP chat layout (`steptp generate --format public|both`), for direct comparison
// with this project's layout (make_chat in dataset.h). Both are made from the same records (same
// split, same order), so public_train.jsonl line k and train.jsonl line k describe the same step.
//
// We do not have the public code's template; this is a reconstruction from what is known of it
// (../shared/LEIR.md §1 quotes its prompts: "the known variables are 'A' with dtype float64 and
// shape [512, 1024] ..."):
//   * system: a short role statement;
//   * user:   the known tensors in prose ("The known variables are 'A' with dtype float64 and shape
//             [512, 1024], ..."), followed by which of them are inputs / constants (with their
//             values) / parameters (with their original names) / outputs, so the prose carries
//             the whole signature; then the current program as one line of compact LEIR; then
//             the task: one strategy (single-answer) or several distinct valid strategies
//             (multi-answer). No steps so far, no target, no program facts.
//   * assistant: `<think>` a CoT that only describes the diff (which strategy, at which site, the
//             items before and after, tensors added or removed) `</think>` then
//             `<answer>{"strategy": NAME, "transformed_IR": COMPACT_LEIR}</answer>` (multi-answer:
//             a JSON list of such objects, in the record's answer order).
// Deliberate differences from the public text: the public prompts claimed every rewrite is
// "bitwise identical"; we make no such claim (the step's exactness class lives in steps.jsonl).
// The answer's LEIR is the result program's body printed compactly (leir::print_body); with the
// prose signature it rebuilds the result program exactly (same program_hash).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "ir/leir/ast.h"

namespace steptp::dataset {

// "float64", "float32", "float16", "bfloat16", "int64", ..., "uint8", "bool" (PyTorch names).
std::string public_dtype_name(leir::DType t);
// The prose description of a program's known tensors (the user prompt's first paragraph).
std::string known_prose(const leir::Program& p);
// The public-layout chat record {"messages":[system,user,assistant]} of a steps.jsonl record.
nlohmann::json make_public_chat(const nlohmann::json& rec);

}  // namespace steptp::dataset
