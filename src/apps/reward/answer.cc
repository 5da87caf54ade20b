// Parsing assistant answers (see answer.h).
#include "apps/reward/answer.h"

#include <fmt/format.h>

#include "transform/trace.h"

namespace steptp::reward {
namespace {

using nlohmann::json;

// One step object, or the reason it is not one.
std::optional<std::string> parse_step(const json& j, AnswerStep& s) {
  if (!j.is_object()) return "a step must be a JSON object";
  if (j.contains("choice")) {
    if (j.size() != 1) return "a choice is {\"choice\": N} alone";
    const json& n = j["choice"];
    if (!n.is_number_integer() || n.get<int64_t>() < 1 || n.get<int64_t>() > 1000000)
      return "\"choice\" must be a positive integer (the number of a menu option)";
    s.form = AnswerStep::Form::Choice;
    s.choice = int(n.get<int64_t>());
    return std::nullopt;
  }
  if (j.contains("strategy")) {
    if (!j["strategy"].is_string()) return "\"strategy\" must be a string";
    s.strategy = j["strategy"].get<std::string>();
  }
  if (j.contains("params") && !j["params"].is_null()) {
    if (!j["params"].is_object()) return "\"params\" must be a JSON object";
    s.params = j["params"];
  }
  bool has_ir = j.contains("transformed_IR");
  bool has_site = j.contains("site");
  if (has_ir && has_site) return "a step has either \"transformed_IR\" or \"site\", not both";
  if (has_ir) {
    if (!j["transformed_IR"].is_string()) return "\"transformed_IR\" must be a string";
    s.form = AnswerStep::Form::IR;
    s.ir = j["transformed_IR"].get<std::string>();
    if (s.ir.find_first_not_of(" \t\r\n") == std::string::npos) return "\"transformed_IR\" is empty";
    return std::nullopt;
  }
  if (has_site) {
    if (s.strategy.empty()) return "an action needs \"strategy\"";
    const json& k = j["site"];
    if (k.is_string()) {
      if (!strategies::parse_handle(k.get<std::string>()))
        return "\"site\" must be a site handle such as \"@0/1.2\" (as the prompt lists them) or an index";
      s.form = AnswerStep::Form::Action;
      s.site_handle = k.get<std::string>();
      return std::nullopt;
    }
    // The dataset's records describe a site as {"index": K, ...}; an answer may copy that shape.
    const json& idx = k.is_object() && k.contains("index") ? k["index"] : k;
    if (!idx.is_number_integer() || idx.get<int64_t>() < 0 || idx.get<int64_t>() > 1000000)
      return "\"site\" must be a non-negative integer (the site's index)";
    s.form = AnswerStep::Form::Action;
    s.site = int(idx.get<int64_t>());
    return std::nullopt;
  }
  return "a step needs \"transformed_IR\" (a LEIR program), \"site\" (an action) or \"choice\" (a menu option)";
}

}  // namespace

std::string_view to_string(AnswerStep::Form f) {
  switch (f) {
    case AnswerStep::Form::IR: return "ir";
    case AnswerStep::Form::Action: return "action";
    case AnswerStep::Form::Choice: return "choice";
  }
  return "ir";
}

ParsedAnswer parse_answer(std::string_view text) {
  ParsedAnswer r;
  if (text.size() > kMaxAnswerBytes) {
    r.reason = fmt::format("answer longer than {} bytes", kMaxAnswerBytes);
    return r;
  }
  size_t open = text.rfind("<answer>");
  if (open == std::string_view::npos) {
    r.reason = "no <answer> tag";
    return r;
  }
  size_t from = open + std::string_view("<answer>").size();
  size_t close = text.find("</answer>", from);
  if (close == std::string_view::npos) {
    r.reason = "<answer> is not closed by </answer>";
    return r;
  }
  std::string_view body = text.substr(from, close - from);
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    // Where the JSON breaks, for the model's feedback.
    try {
      [[maybe_unused]] const json reparsed = json::parse(body);  // throws at the break
    } catch (const json::parse_error& e) {
      r.reason = fmt::format("answer JSON: {}", e.what());
      return r;
    }
    r.reason = "answer JSON does not parse";
    return r;
  }
  r.list = j.is_array();
  if (r.list && j.empty()) {
    r.reason = "answer is an empty list";
    return r;
  }
  json items = r.list ? j : json::array({j});
  for (size_t i = 0; i < items.size(); ++i) {
    AnswerStep s;
    if (auto why = parse_step(items[i], s)) {
      r.steps.clear();
      r.reason = r.list ? fmt::format("answer item {}: {}", i, *why) : *why;
      return r;
    }
    r.steps.push_back(std::move(s));
  }
  r.ok = true;
  return r;
}

}  // namespace steptp::reward
