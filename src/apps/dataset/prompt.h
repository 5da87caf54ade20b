// The prompt of a step: the system and user messages that `steptp generate` writes into every
// chat record and that `steptp optimize` sends to a model — one code path, so a model is asked
// in operation exactly what it was trained on.
//
// Two answer formats. IR (Step-TP): the answer carries the whole transformed program. Action:
// the answer names a strategy, a site by its stable handle (transform/trace.h to_handle) and
// parameters, and steptp applies it (apps/reward/answer.h) — far fewer output tokens; the prompt then
// lists every applicable strategy's sites by handle with their parameter choices (the menu).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ir/leir/ast.h"
#include "transform/strategy.h"
#include "transform/trace.h"

namespace steptp::dataset {

enum class AnswerFormat { IR, Action };
AnswerFormat answer_format_from(const std::string& s);  // "ir" | "action"; throws base::Error (BadRequest)

// One site of the action menu: strategy, stable address, description and parameter choices.
struct MenuSite {
  std::string strategy;
  strategies::SiteAddress address;
  std::string description;
  std::vector<strategies::Params> choices;  // never empty (a parameterless site has one empty choice)
};
// Every registered strategy's sites in `p` (catalogue order, then site order), at most
// kMenuSitesPerStrategy per strategy — the menu a prompt lists and the baselines choose from.
inline constexpr size_t kMenuSitesPerStrategy = 12;
std::vector<MenuSite> action_menu(const leir::Program& p);

// The [system, user] messages for a record's state: rec needs "parent_program" (LEIR text),
// "steps_so_far" ([{"strategy", "params", "site" (handle, optional)}]) and "kind" ("single" |
// "multi"). Optional: "target" ("cpu" default | "cuda"), "machine" (apps/dataset/reasoning.h
// machine_json: the machine the kernels are timed on), "parent_speedup_vs_root" with
// "parent_speedup_measured" (the current program's speedup over the root; stated only when
// measured, else "not measured"), "feedback" (multi-turn: what became of the previous proposal).
// The user message also lists the analysis facts of the program (apps/dataset/reasoning.h
// analysis_json), so every fact the `<think>` may use is in the prompt.
nlohmann::json prompt_messages(const nlohmann::json& rec, AnswerFormat f);

// The stable handle (transform/trace.h to_handle) of site `index` of `strategy` in `parent`.
// Throws std::logic_error for an unknown strategy or an index out of range (records are ours).
std::string site_handle(const leir::Program& parent, const std::string& strategy, size_t index);

// An action answer {"strategy","site": handle,"params"}, keys in that order — the order of the
// decision: a model writing left to right names the strategy, then one of the sites the menu
// lists under it, then its parameters (a sorted object would make it write the parameters and
// the site first). The dataset's records and `optimize`'s baseline policies both write it.
nlohmann::ordered_json action_object(const std::string& strategy, const std::string& handle,
                                     const nlohmann::json& params);

// The action-form answer object (action_object) of a record's answer
// {"strategy","site":{"index"},"params"}.
nlohmann::ordered_json action_answer(const leir::Program& parent, const nlohmann::json& answer);

}  // namespace steptp::dataset
