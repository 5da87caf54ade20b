// The public Step-TP chat layout (reconstruction; see public_format.h).
#include "apps/dataset/public_format.h"

#include <fmt/format.h>

#include "apps/dataset/dataset.h"
#include "ir/leir/printer.h"
#include "ir/leir/program_io.h"

namespace steptp::dataset {
namespace {

using nlohmann::json;

std::string quoted(const std::string& n) { return "'" + n + "'"; }

// "'A'", "'A' and 'C'", "'A', 'C' and 'D'".
std::string and_list(const std::vector<std::string>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i > 0) s += i + 1 == v.size() ? " and " : ", ";
    s += v[i];
  }
  return s;
}

// The value list of a constant exactly as the signature line spells it ("[2.0]", "[true,false]").
std::string value_text(const leir::TensorDecl& d) {
  leir::TensorDecl c = d;
  c.alias.clear();
  std::string s = leir::signature_line(c);
  auto p = s.find(" = [");
  return p == std::string::npos ? "[]" : s.substr(p + 3);
}

std::string compact_body(const std::string& program_text) {
  return leir::print_body(leir::program_from_text(program_text).body);
}

}  // namespace

std::string public_dtype_name(leir::DType t) {
  switch (t) {
    case leir::DType::F16: return "float16";
    case leir::DType::BF16: return "bfloat16";
    case leir::DType::F32: return "float32";
    case leir::DType::F64: return "float64";
    case leir::DType::I8: return "int8";
    case leir::DType::I16: return "int16";
    case leir::DType::I32: return "int32";
    case leir::DType::I64: return "int64";
    case leir::DType::U8: return "uint8";
    case leir::DType::Bool: return "bool";
  }
  return "unknown";
}

std::string known_prose(const leir::Program& p) {
  std::vector<std::string> vars, inputs, constants, params, outputs;
  for (const auto& d : p.known) {
    vars.push_back(fmt::format("{} with dtype {} and shape [{}]", quoted(d.name), public_dtype_name(d.dtype),
                               fmt::join(d.shape, ", ")));
    switch (d.role) {
      case leir::Role::Input: inputs.push_back(quoted(d.name)); break;
      case leir::Role::Constant:
        constants.push_back(d.value ? fmt::format("{} = {}", quoted(d.name), value_text(d)) : quoted(d.name));
        break;
      case leir::Role::Param:
        params.push_back(d.alias.empty() ? quoted(d.name)
                                         : fmt::format("{} (originally {})", quoted(d.name), quoted(d.alias)));
        break;
      case leir::Role::Output: outputs.push_back(quoted(d.name)); break;
    }
  }
  std::string s = "The known variables are " + and_list(vars) + ".";
  auto role = [&](const char* one, const char* many, const std::vector<std::string>& v) {
    if (!v.empty()) s += fmt::format(" {}: {}.", v.size() == 1 ? one : many, and_list(v));
  };
  role("Input", "Inputs", inputs);
  role("Constant", "Constants", constants);
  role("Parameter", "Parameters", params);
  role("Output", "Outputs", outputs);
  return s;
}

json make_public_chat(const json& rec) {
  const std::string sys =
      "You are an expert in tensor program optimization. Programs are written in LEIR, a compact loop-nest "
      "intermediate representation. You optimize a program one atomic strategy at a time.";
  leir::Program parent = leir::program_from_text(rec["parent_program"].get<std::string>());
  bool multi = rec["kind"] == "multi";
  std::string user = known_prose(parent) + "\nThe current LEIR program is:\n" + leir::print_body(parent.body) + "\n";
  user += multi ? "Give several different optimization strategies that are valid for this program, each with the "
                  "transformed LEIR program. Answer in <answer></answer> with a JSON list of "
                  "{\"strategy\", \"transformed_IR\"}."
                : "Choose one optimization strategy that is valid for this program and give the transformed LEIR "
                  "program. Answer in <answer></answer> with JSON {\"strategy\", \"transformed_IR\"}.";
  // CoT: the diff only.
  std::string cot;
  json ans = json::array();
  for (const auto& a : rec["answers"]) {
    const auto& t = a["transition"];
    cot += fmt::format("Apply {} to {}.\n", a["strategy"].get<std::string>(),
                       a["site"]["description"].get<std::string>());
    cot += "The changed part of the program is\n";
    for (const auto& s : t["before"]) cot += "  " + s.get<std::string>() + "\n";
    cot += "which becomes\n";
    for (const auto& s : t["after"]) cot += "  " + s.get<std::string>() + "\n";
    for (const auto& s : t["tensors_added"]) cot += "New known variable: " + s.get<std::string>() + "\n";
    for (const auto& s : t["tensors_removed"]) cot += "Removed known variable: " + s.get<std::string>() + "\n";
    cot += "The rest of the program is unchanged.\n";
    ans.push_back({{"strategy", a["strategy"]}, {"transformed_IR", compact_body(a["result_program"])}});
  }
  std::string asst = "<think>\n" + cot + "</think>\n<answer>" + (multi ? ans.dump() : ans[0].dump()) + "</answer>";
  return {{"messages", json::array({{{"role", "system"}, {"content", sys}},
                                    {{"role", "user"}, {"content", user}},
                                    {{"role", "assistant"}, {"content", asst}}})},
          {"reward_context", reward_context(rec)}};
}

}  // namespace steptp::dataset
