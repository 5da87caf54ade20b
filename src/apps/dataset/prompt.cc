#include "apps/dataset/prompt.h"

#include <algorithm>
#include <iterator>
#include <stdexcept>
#include <string_view>

#include <fmt/format.h>

#include "apps/dataset/reasoning.h"
#include "base/error.h"
#include "ir/leir/program_io.h"
#include "transform/schedule_state.h"

namespace steptp::dataset {

using nlohmann::json;

namespace {

// The menu, one line per site: handle, description and its first parameter choices (prompt.h
// kChoicesShown, kChoicesNumbered), the rest summarised by their count. Numbered (choice format):
// each listed option gets its number in brackets, before the site's handle when it has one
// choice, else before each choice.
std::string menu_text(const std::vector<MenuSite>& menu, bool numbered) {
  std::string s;
  std::string last;
  size_t number = 0;
  for (const auto& m : menu) {
    if (m.strategy != last) s += m.strategy + ":\n";
    last = m.strategy;
    const bool parameterless = m.choices.size() == 1 && m.choices.front().empty();
    s += "  ";
    if (numbered && parameterless) s += fmt::format("[{}] ", ++number);
    s += fmt::format("{} ({})", strategies::to_handle(m.address), m.description);
    if (!parameterless) {
      s += " params:";
      const size_t shown = std::min(m.choices.size(), numbered ? kChoicesNumbered : kChoicesShown);
      for (size_t k = 0; k < shown; ++k) {
        s += " ";
        if (numbered) s += fmt::format("[{}] ", ++number);
        s += strategies::params_to_json(m.choices[k]);
      }
      if (m.choices.size() > shown) s += fmt::format(" (+{} more)", m.choices.size() - shown);
    }
    s += "\n";
  }
  return s;
}

}  // namespace

AnswerFormat answer_format_from(const std::string& s) {
  if (s == "ir") return AnswerFormat::IR;
  if (s == "action") return AnswerFormat::Action;
  if (s == "choice") return AnswerFormat::Choice;
  throw base::Error(base::ErrorKind::BadRequest, "answer format must be ir, action or choice (got '" + s + "')");
}

std::string to_string(AnswerFormat f) {
  switch (f) {
    case AnswerFormat::IR: return "ir";
    case AnswerFormat::Action: return "action";
    case AnswerFormat::Choice: return "choice";
  }
  throw std::logic_error("unreachable");
}

std::vector<MenuSite> action_menu(const leir::Program& p) {
  std::vector<MenuSite> menu;
  const strategies::ScheduleState st(p);
  for (const auto* s : strategies::all_strategies()) {
    const auto& sites = s->sites(st);
    for (size_t i = 0; i < sites.size() && i < kMenuSitesPerStrategy; ++i) {
      auto choices = s->param_space(st, sites[i]);
      if (choices.empty()) choices.push_back({});
      menu.push_back(
          {std::string(s->name()), strategies::address_of(sites, i), sites[i].description, std::move(choices)});
    }
  }
  return menu;
}

std::vector<MenuSite> choice_menu(const leir::Program& p) {
  static constexpr std::string_view kFirst[] = {"loop_vectorization", "loop_parallelization", "loop_unrolling",
                                                 "loop_reorder"};
  auto rank = [](const MenuSite& m) {
    return size_t(std::find(std::begin(kFirst), std::end(kFirst), m.strategy) - std::begin(kFirst));
  };
  std::vector<MenuSite> menu = action_menu(p);
  std::stable_sort(menu.begin(), menu.end(), [&](const MenuSite& a, const MenuSite& b) { return rank(a) < rank(b); });
  return menu;
}

std::vector<MenuOption> choice_options(const leir::Program& p) {
  std::vector<MenuOption> out;
  for (const auto& m : choice_menu(p))
    for (size_t k = 0; k < m.choices.size() && k < kChoicesNumbered; ++k)
      out.push_back({m.strategy, m.address, m.choices[k]});
  return out;
}

namespace {

// The machine in one line (apps/dataset/reasoning.h machine_json).
std::string machine_text(const json& m) {
  const int threads = m["threads"].get<int>();
  return fmt::format("Machine: {}, {} cores; kernels timed on {} thread{}; {} vectors of {} bytes ({} f32 lanes); data "
                     "caches L1 {} bytes, L2 {} bytes, L3 {} bytes; kernel compiler {} with {}.\n",
                     m["cpu"].get<std::string>(), m["cores"].dump(), threads, threads == 1 ? "" : "s",
                     m["vector_isa"].get<std::string>(), m["vector_bytes"].dump(), m["f32_lanes"].dump(),
                     m["l1_bytes"].dump(), m["l2_bytes"].dump(), m["l3_bytes"].dump(), m["compiler"].get<std::string>(),
                     m["flags"].get<std::string>());
}

// The analysis facts of the program (apps/dataset/reasoning.h analysis_json), one line per nest.
std::string facts_text(const json& a) {
  std::string s = fmt::format("Analysis facts: {} top-level items, {} statements, {} flops and {} bytes of global "
                              "memory traffic in total. Per nest:\n",
                              a["items"].dump(), a["statements"].dump(), a["flops"].dump(), a["bytes"].dump());
  for (const auto& n : a["nests"]) {
    s += fmt::format("  item {} {}: writes {}", n["item"].dump(), n["header"].get<std::string>(),
                     n["writes"].get<std::string>());
    if (!n["reads"].get<std::string>().empty()) s += ", reads " + n["reads"].get<std::string>();
    s += fmt::format("; {} iterations, {} flops, {} bytes, {} of {} global accesses contiguous in their innermost "
                     "loop; loops:",
                     n["iterations"].dump(), n["flops"].dump(), n["bytes"].dump(), n["contiguous_accesses"].dump(),
                     n["accesses"].dump());
    for (const auto& l : n["loops"])
      s += fmt::format(" {} (extent {}, {}, {})", l["var"].get<std::string>(), l["extent"].dump(),
                       loop_kind_name(l["kind"].get<std::string>()), l["dependence"].get<std::string>());
    s += "\n";
  }
  return s;
}

}  // namespace

json prompt_messages(const json& rec, AnswerFormat f) {
  const bool multi = rec["kind"] == "multi";
  std::string sys =
      std::string("You are an expert optimizer of tensor programs written in LEIR, a loop-nest tensor IR. Given a "
                  "program, its target machine and analysis facts, propose ") +
      (multi ? "several distinct semantics-preserving optimization steps from the known strategy catalogue, each "
               "applied on its own to the current program"
             : "a single semantics-preserving optimization step from the known strategy catalogue") +
      ". Think step by step inside <think></think>, reasoning only from the facts given, then give the answer as "
      "JSON inside <answer></answer>.";
  const std::string& text = rec["parent_program"].get_ref<const std::string&>();
  const leir::Program program = leir::program_from_text(text);
  std::string user = "Program (LEIR):\n" + text + "\n";
  user += rec.value("target", "cpu") == "cuda" ? "Target: GPU (CUDA).\n" : "Target: CPU (C++ with OpenMP).\n";
  if (rec.contains("machine") && rec["machine"].is_object()) user += machine_text(rec["machine"]);
  if (rec["steps_so_far"].empty()) {
    user += "Steps so far: none (the current program is the root).\n";
  } else {
    user += "Steps so far (from the root):\n";
    int k = 0;
    for (const auto& s : rec["steps_so_far"])
      user += fmt::format("  {}. {}{} {}\n", ++k, s["strategy"].get<std::string>(),
                          s.contains("site") ? " at " + s["site"].get<std::string>() : std::string(), s["params"].dump());
    user += "Speedup of the current program over the root: " +
            (rec.value("parent_speedup_measured", false) ? rec["parent_speedup_vs_root"].dump() + " (measured)"
                                                         : std::string("not measured")) +
            ".\n";
  }
  user += facts_text(analysis_json(program));
  std::string shape = f == AnswerFormat::IR       ? "{\"strategy\", \"params\", \"transformed_IR\"}"
                      : f == AnswerFormat::Action ? "{\"strategy\", \"site\", \"params\"}"
                                                  : "{\"choice\": N}";
  if (f != AnswerFormat::IR)
    user += std::string("Applicable strategies, their sites (handle and description) and parameter choices") +
            (f == AnswerFormat::Choice ? ", each option numbered in brackets" : "") + ":\n" +
            menu_text(f == AnswerFormat::Choice ? choice_menu(program) : action_menu(program), f == AnswerFormat::Choice);
  user += multi ? "Task: give several distinct valid single optimization steps, as a JSON list of " + shape + "."
                : "Task: give one valid optimization step as JSON " + shape + ".";
  if (f == AnswerFormat::Action) user += " \"site\" is a handle from the list above.";
  if (f == AnswerFormat::Choice)
    user += " N is the number of an option above; a choice the list does not number is given as {\"strategy\", "
            "\"site\", \"params\"} with a handle from the list.";
  if (rec.contains("feedback") && !rec["feedback"].get<std::string>().empty())
    user += "\nFeedback on your previous proposal: " + rec["feedback"].get<std::string>();
  return json::array({{{"role", "system"}, {"content", sys}}, {{"role", "user"}, {"content", user}}});
}

std::string site_handle(const leir::Program& parent, const std::string& strategy, size_t index) {
  const auto* s = strategies::find_strategy(strategy);
  if (!s) throw std::logic_error("unknown strategy " + strategy);
  auto sites = s->sites(parent);
  if (index >= sites.size()) throw std::logic_error("site index out of range");
  return strategies::to_handle(strategies::address_of(sites, index));
}

nlohmann::ordered_json action_object(const std::string& strategy, const std::string& handle, const json& params) {
  return {{"strategy", strategy}, {"site", handle}, {"params", params}};
}

nlohmann::ordered_json action_answer(const leir::Program& parent, const json& a) {
  const std::string strategy = a["strategy"].get<std::string>();
  return action_object(strategy, site_handle(parent, strategy, a["site"]["index"].get<size_t>()), a["params"]);
}

nlohmann::ordered_json choice_answer(const leir::Program& parent, const json& a) {
  const std::string strategy = a["strategy"].get<std::string>();
  const auto* s = strategies::find_strategy(strategy);
  if (!s) throw std::logic_error("unknown strategy " + strategy);
  const auto address = strategies::address_of(s->sites(parent), a["site"]["index"].get<size_t>());
  const strategies::Params params = strategies::params_from_json(a["params"]);
  const auto options = choice_options(parent);
  for (size_t n = 0; n < options.size(); ++n)
    if (options[n].strategy == strategy && options[n].address == address && options[n].params == params)
      return {{"choice", n + 1}};
  return action_answer(parent, a);
}

}  // namespace steptp::dataset
