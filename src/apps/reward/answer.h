// The answer parser shared by `steptp serve` (/v1/score), the Python reward clients (through the
// service) and `steptp optimize`: it accepts exactly what `steptp generate` teaches.
//
// An assistant answer is `<think>…</think><answer>JSON</answer>` (the think part is optional;
// text around the tags is ignored; the LAST <answer>…</answer> counts, so a model that quotes
// the format in its reasoning is not misread). JSON is one step object or, for multi-answer
// prompts, a non-empty list of them. A step object is either
//   * IR form (train.jsonl, Step-TP): {"strategy"?, "params"?, "transformed_IR": LEIR}, where the
//     LEIR is a whole program (signature + body, as train.jsonl writes it) or only the compact
//     body (as public_train.jsonl writes it; the parent's signature is then prepended); or
//   * action form: {"strategy": NAME, "site": K or HANDLE, "params"?: {...}}: steptp applies
//     strategy NAME at its K-th site (the index `steptp apply --explain` lists) or at the site
//     with that stable handle ("@0/1.2": transform/trace.h's site address, as `optimize` prompts and
//     `generate --answer-format action` list them) with those parameters (omitted: the site's
//     only parameter choice, or its first one); or
//   * choice form: {"choice": N}: option N (from 1) of the menu the prompt numbers (`generate
//     --answer-format choice`, apps/dataset/prompt.h choice_options); the reward resolves it
//     against the parent program into the action it names.
// Parsing never throws: a bad answer is a result with `ok == false` and a reason.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace steptp::reward {

struct AnswerStep {
  enum class Form { IR, Action, Choice };
  Form form = Form::IR;
  std::optional<int> choice;       // choice form: the option's number (from 1)
  std::string strategy;            // may be empty in IR form
  std::optional<int> site;         // action form, by index ...
  std::string site_handle;         // ... or by stable handle (transform/trace.h to_handle)
  std::optional<nlohmann::json> params;  // object, when given
  std::string ir;                  // IR form
};

struct ParsedAnswer {
  bool ok = false;
  std::string reason;       // why not, when !ok ("no <answer> tag", "answer JSON: ...", ...)
  bool list = false;        // the answer was a JSON list (multi-answer prompt)
  std::vector<AnswerStep> steps;  // >= 1 when ok
};

// Answers longer than this are refused unparsed (a runaway generation).
inline constexpr size_t kMaxAnswerBytes = size_t{1} << 20;

ParsedAnswer parse_answer(std::string_view assistant_text);

std::string_view to_string(AnswerStep::Form f);  // "ir" | "action" | "choice"

}  // namespace steptp::reward
