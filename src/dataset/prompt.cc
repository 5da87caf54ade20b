#include "dataset/prompt.h"

#include <stdexcept>

#include <fmt/format.h>

#include "leir/program_io.h"
#include "strategies/schedule_state.h"

namespace steptp::dataset {

using nlohmann::json;

namespace {

// Parameter choices shown per site; the rest are summarised by their count.
constexpr size_t kChoicesShown = 6;

std::string menu_text(const std::vector<MenuSite>& menu) {
  std::string s;
  std::string last;
  for (const auto& m : menu) {
    if (m.strategy != last) s += m.strategy + ":\n";
    last = m.strategy;
    s += fmt::format("  {} ({})", tune::to_handle(m.address), m.description);
    if (m.choices.size() > 1 || !m.choices.front().empty()) {
      s += " params:";
      for (size_t k = 0; k < m.choices.size() && k < kChoicesShown; ++k)
        s += " " + strategies::params_to_json(m.choices[k]);
      if (m.choices.size() > kChoicesShown) s += fmt::format(" (+{} more)", m.choices.size() - kChoicesShown);
    }
    s += "\n";
  }
  return s;
}

}  // namespace

AnswerFormat answer_format_from(const std::string& s) {
  if (s == "ir") return AnswerFormat::IR;
  if (s == "action") return AnswerFormat::Action;
  throw std::invalid_argument("answer format must be ir or action (got '" + s + "')");
}

std::vector<MenuSite> action_menu(const leir::Program& p) {
  std::vector<MenuSite> menu;
  const strategies::ScheduleState st(p);
  for (const auto* s : strategies::all_strategies()) {
    const auto& sites = s->sites(st);
    for (size_t i = 0; i < sites.size() && i < kMenuSitesPerStrategy; ++i) {
      auto choices = s->param_space(st, sites[i]);
      if (choices.empty()) choices.push_back({});
      menu.push_back({std::string(s->name()), tune::address_of(sites, i), sites[i].description, std::move(choices)});
    }
  }
  return menu;
}

json prompt_messages(const json& rec, AnswerFormat f) {
  std::string sys =
      "You are an expert optimizer of tensor programs written in LEIR, a loop-nest tensor IR. Given a program, "
      "propose a single semantics-preserving optimization step from the known strategy catalogue. Think step by "
      "step inside <think></think>, then give the answer as JSON inside <answer></answer>.";
  std::string user = "Program (LEIR):\n" + rec["parent_program"].get<std::string>() + "\n";
  user += rec.value("target", "cpu") == "cuda" ? "Target: GPU (CUDA).\nSteps so far: "
                                                : "Target: CPU (C++ with OpenMP).\nSteps so far: ";
  if (rec["steps_so_far"].empty()) user += "none";
  else {
    bool first = true;
    for (const auto& s : rec["steps_so_far"]) {
      user += (first ? "" : ", ") + s["strategy"].get<std::string>() + " " + s["params"].dump();
      first = false;
    }
  }
  user += "\n";
  bool multi = rec["kind"] == "multi";
  std::string shape = f == AnswerFormat::IR ? "{\"strategy\", \"params\", \"transformed_IR\"}"
                                            : "{\"strategy\", \"site\", \"params\"}";
  if (f == AnswerFormat::Action)
    user += "Applicable strategies, their sites (handle and description) and parameter choices:\n" +
            menu_text(action_menu(leir::program_from_text(rec["parent_program"].get<std::string>())));
  user += multi ? "Task: give several distinct valid single optimization steps, as a JSON list of " + shape + "."
                : "Task: give one valid optimization step as JSON " + shape + ".";
  if (f == AnswerFormat::Action) user += " \"site\" is a handle from the list above.";
  if (rec.contains("feedback") && !rec["feedback"].get<std::string>().empty())
    user += "\nFeedback on your previous proposal: " + rec["feedback"].get<std::string>();
  return json::array({{{"role", "system"}, {"content", sys}}, {{"role", "user"}, {"content", user}}});
}

json action_answer(const leir::Program& parent, const json& a) {
  const auto* s = strategies::find_strategy(a["strategy"].get<std::string>());
  if (!s) throw std::invalid_argument("unknown strategy " + a["strategy"].get<std::string>());
  auto sites = s->sites(parent);
  size_t i = a["site"]["index"].get<size_t>();
  if (i >= sites.size()) throw std::invalid_argument("site index out of range");
  return {{"strategy", a["strategy"]}, {"site", tune::to_handle(tune::address_of(sites, i))}, {"params", a["params"]}};
}

}  // namespace steptp::dataset
