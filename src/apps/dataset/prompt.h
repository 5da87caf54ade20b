// The prompt of a step: the system and user messages that `steptp generate` writes into every
// chat record and that `steptp optimize` sends to a model — one code path, so a model is asked
// in operation exactly what it was trained on.
//
// Three answer formats. IR (Step-TP): the answer carries the whole transformed program. Action:
// the answer names a strategy, a site by its stable handle (transform/trace.h to_handle) and
// parameters, and steptp applies it (apps/reward/answer.h) — far fewer output tokens; the prompt then
// lists every applicable strategy's sites by handle with their parameter choices (the menu).
// Choice: the same menu with every listed (site, parameters) option numbered, and the answer
// {"choice": N} names option N — a small model need not copy a handle and a parameter object from
// the menu into its answer, only a number; an option the menu does not number (a site's choices
// beyond those listed) is answered in the action form, which every format accepts. Its menu lists
// the loop schedule's strategies first (choice_menu).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ir/leir/ast.h"
#include "transform/strategy.h"
#include "transform/trace.h"

namespace steptp::dataset {

enum class AnswerFormat { IR, Action, Choice };
AnswerFormat answer_format_from(const std::string& s);  // "ir" | "action" | "choice"; throws base::Error (BadRequest)
std::string to_string(AnswerFormat f);

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

// Parameter choices a menu lists per site (the rest summarised by their count): the action
// format shows a few as examples of the parameters' form; the choice format numbers more, so that
// a step the search takes is almost always an option (a loop reorder's choices are the nest's
// loop transpositions: 28 for 8 loops).
inline constexpr size_t kChoicesShown = 6;
inline constexpr size_t kChoicesNumbered = 28;
// The choice format's menu: action_menu with the loop schedule's strategies first (vectorization,
// parallelization, unrolling, then loop order), the rest in catalogue order after them. Those
// apply to nearly every program and make most of the steps the tuned paths take, so their options
// keep small numbers that mean the same kind of step from program to program; the sections whose
// size varies most (splits, tilings, bindings, rewrites) come after them.
std::vector<MenuSite> choice_menu(const leir::Program& p);
// Its numbered options: each site's first kChoicesNumbered parameter choices, in menu order;
// option N of a prompt is element N - 1.
struct MenuOption {
  std::string strategy;
  strategies::SiteAddress address;
  strategies::Params params;
};
std::vector<MenuOption> choice_options(const leir::Program& p);

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

// The choice-form answer of a record's answer: {"choice": N} when the parent's menu numbers that
// option, else the action-form object.
nlohmann::ordered_json choice_answer(const leir::Program& parent, const nlohmann::json& answer);

}  // namespace steptp::dataset
