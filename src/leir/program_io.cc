#include "leir/program_io.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "leir/diagnostic.h"
#include "leir/parser.h"
#include "leir/printer.h"

namespace steptp::leir {

namespace {

// Line and column (1-based) of byte `offset` in `text`, counted from `origin`.
SourceLoc locate(std::string_view text, size_t offset, SourceLoc origin = {1, 1}) {
  SourceLoc loc = origin;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++loc.line;
      loc.col = 1;
    } else {
      ++loc.col;
    }
  }
  return loc;
}

void check_decls(const std::vector<TensorDecl>& known, const std::string& file) {
  std::set<std::string> seen;
  for (const auto& d : known) {
    if (d.name.empty() || !std::isupper(static_cast<unsigned char>(d.name[0])))
      throw LeirError(file, d.loc, fmt::format("known tensor name '{}' must start with an upper-case letter", d.name));
    for (char c : d.name)
      if (!std::isalnum(static_cast<unsigned char>(c)))
        throw LeirError(file, d.loc, fmt::format("known tensor name '{}' may only contain letters and digits", d.name));
    if (!seen.insert(d.name).second)
      throw LeirError(file, d.loc, fmt::format("tensor '{}' is declared twice", d.name));
    for (int64_t s : d.shape)
      if (s <= 0) throw LeirError(file, d.loc, fmt::format("tensor '{}': every dimension must be positive", d.name));
    if (d.value) {
      if (d.role != Role::Constant && d.role != Role::Param)
        throw LeirError(file, d.loc, fmt::format("tensor '{}': only constants and params carry a value", d.name));
      if (static_cast<int64_t>(d.value->size()) != d.numel())
        throw LeirError(file, d.loc, fmt::format("{} '{}': shape needs {} values, got {}", to_string(d.role), d.name, d.numel(),
                                                 d.value->size()));
    }
  }
}

TensorDecl decl_from_json(const nlohmann::json& k, const std::string& file, SourceLoc loc) {
  if (!k.is_object()) throw LeirError(file, loc, "each entry of \"known\" must be an object");
  auto str = [&](const char* key) -> std::string {
    if (!k.contains(key) || !k[key].is_string())
      throw LeirError(file, loc, fmt::format("known tensor {} needs a string \"{}\"", k.dump(), key));
    return k[key].get<std::string>();
  };
  TensorDecl d;
  d.loc = loc;
  d.name = str("name");
  auto role = parse_role(str("role"));
  if (!role)
    throw LeirError(file, loc, fmt::format("tensor '{}': role must be input, constant, param or output", d.name));
  d.role = *role;
  auto dt = parse_dtype(str("dtype"));
  if (!dt) throw LeirError(file, loc, fmt::format("tensor '{}': unknown dtype '{}'", d.name, k["dtype"].get<std::string>()));
  d.dtype = *dt;
  if (!k.contains("shape") || !k["shape"].is_array())
    throw LeirError(file, loc, fmt::format("tensor '{}' needs a \"shape\" array", d.name));
  for (const auto& s : k["shape"]) {
    if (!s.is_number_integer()) throw LeirError(file, loc, fmt::format("tensor '{}': shape entries must be integers", d.name));
    d.shape.push_back(s.get<int64_t>());
  }
  if (k.contains("value") && !k["value"].is_null()) {
    if (!k["value"].is_array()) throw LeirError(file, loc, fmt::format("constant '{}': \"value\" must be a flat array", d.name));
    std::vector<double> vals;
    for (const auto& v : k["value"]) {
      if (v.is_boolean()) vals.push_back(v.get<bool>() ? 1.0 : 0.0);
      else if (v.is_number()) vals.push_back(v.get<double>());
      else throw LeirError(file, loc, fmt::format("constant '{}': values must be numbers or booleans", d.name));
    }
    d.value = std::move(vals);
  }
  if (k.contains("alias") && k["alias"].is_string()) d.alias = k["alias"].get<std::string>();
  return d;
}

// Position of the first character of the "leir" string value in `raw`, if the JSON spells it
// without escapes (then offsets inside the string map 1:1 to the file).
std::optional<size_t> leir_offset(std::string_view raw, const std::string& leir) {
  size_t key = raw.find("\"leir\"");
  while (key != std::string_view::npos) {
    size_t p = key + 6;
    while (p < raw.size() && std::isspace(static_cast<unsigned char>(raw[p]))) ++p;
    if (p < raw.size() && raw[p] == ':') {
      ++p;
      while (p < raw.size() && std::isspace(static_cast<unsigned char>(raw[p]))) ++p;
      if (p < raw.size() && raw[p] == '"' && raw.substr(p + 1, leir.size()) == leir) return p + 1;
    }
    key = raw.find("\"leir\"", key + 1);
  }
  return std::nullopt;
}

nlohmann::json parse_json(std::string_view text, const std::string& file, SourceLoc origin) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    size_t at = e.byte > 0 ? e.byte - 1 : 0;
    std::string what = e.what();
    auto colon = what.find("syntax error");
    throw LeirError(file, locate(text, at, origin),
                    fmt::format("invalid JSON: {}", colon == std::string::npos ? what : what.substr(colon)));
  }
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw LeirError(path, {}, "cannot open file");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

Program program_from_json(const nlohmann::json& j, const std::string& file, uint32_t line, std::string_view raw) {
  SourceLoc rec{line, 1};
  if (!j.is_object()) throw LeirError(file, rec, "a program must be a JSON object with \"known\" and \"leir\"");
  Program p;
  p.file = file;
  if (j.contains("name") && j["name"].is_string()) p.name = j["name"].get<std::string>();
  if (!j.contains("known") || !j["known"].is_array())
    throw LeirError(file, rec, "program needs a \"known\" array (the signature)");
  for (const auto& k : j["known"]) p.known.push_back(decl_from_json(k, file, rec));
  check_decls(p.known, file);
  if (!j.contains("leir") || !j["leir"].is_string()) throw LeirError(file, rec, "program needs a \"leir\" string");
  const auto& leir = j["leir"].get_ref<const std::string&>();
  SourceLoc origin{line, 1};
  if (auto off = leir_offset(raw, leir)) origin = locate(raw, *off, {line, 1});
  p.body = parse_body(leir, file, origin);
  return p;
}

Program program_from_text(std::string_view text, const std::string& file) {
  // Blank out comments, keeping every position where it was.
  std::string src(text);
  for (size_t i = 0; i < src.size(); ++i) {
    if (src[i] != '#') continue;
    while (i < src.size() && src[i] != '\n') src[i++] = ' ';
  }
  static const std::regex decl_re(
      R"(^\s*(input|constant|param|output)\s+([A-Za-z0-9_]+)\s*:\s*([a-z0-9]+)\s*\[([^\]]*)\]\s*(?:=\s*\[([^\]]*)\])?\s*(?:as\s+\"([^\"]*)\")?\s*$)");
  // Any name without newlines or '#' (JSON names like "matm>=" must survive the text form).
  static const std::regex name_re(R"(^\s*name\s+(\S(?:.*\S)?)\s*$)");
  static const std::regex decl_start_re(R"(^\s*(input|constant|param|output|name)\b)");
  Program p;
  p.file = file;
  p.name = std::filesystem::path(file).stem().string();
  size_t pos = 0;
  uint32_t line = 1;
  while (pos < src.size()) {
    size_t eol = src.find('\n', pos);
    if (eol == std::string::npos) eol = src.size();
    std::string l = src.substr(pos, eol - pos);
    std::smatch m;
    bool blank = l.find_first_not_of(" \t\r") == std::string::npos;
    if (!blank && !std::regex_search(l, decl_start_re)) break;  // the body starts here
    if (!blank) {
      if (std::regex_match(l, m, name_re)) {
        p.name = m[1];
      } else if (std::regex_match(l, m, decl_re)) {
        TensorDecl d;
        d.loc = {line, static_cast<uint32_t>(l.find_first_not_of(" \t") + 1)};
        d.role = *parse_role(m[1].str());
        d.name = m[2];
        auto dt = parse_dtype(m[3].str());
        if (!dt) throw LeirError(file, d.loc, fmt::format("unknown dtype '{}' for '{}'", m[3].str(), d.name));
        d.dtype = *dt;
        auto parse_list = [&](const std::string& s, auto&& push) {
          std::stringstream ss(s);
          std::string tok;
          while (std::getline(ss, tok, ',')) {
            size_t b = tok.find_first_not_of(" \t"), e = tok.find_last_not_of(" \t");
            if (b == std::string::npos) {
              if (s.find_first_not_of(" \t") == std::string::npos) return;
              throw LeirError(file, d.loc, fmt::format("empty list entry in the declaration of '{}'", d.name));
            }
            push(tok.substr(b, e - b + 1));
          }
        };
        parse_list(m[4].str(), [&](const std::string& t) {
          char* end = nullptr;
          long long v = std::strtoll(t.c_str(), &end, 10);
          if (*end != '\0') throw LeirError(file, d.loc, fmt::format("dimension '{}' of '{}' is not an integer", t, d.name));
          d.shape.push_back(v);
        });
        if (m[5].matched) {
          std::vector<double> vals;
          parse_list(m[5].str(), [&](const std::string& t) {
            if (t == "true" || t == "false") {
              vals.push_back(t == "true" ? 1.0 : 0.0);
              return;
            }
            char* end = nullptr;
            double v = std::strtod(t.c_str(), &end);
            if (*end != '\0') throw LeirError(file, d.loc, fmt::format("value '{}' of '{}' is not a number", t, d.name));
            vals.push_back(v);
          });
          d.value = std::move(vals);
        }
        if (m[6].matched) d.alias = m[6];
        p.known.push_back(std::move(d));
      } else {
        throw LeirError(file, {line, 1},
                        "malformed declaration; expected 'ROLE NAME: DTYPE[d1,d2,...]' with ROLE one of input, "
                        "constant, param, output (optionally '= [values]' and 'as \"alias\"')");
      }
    }
    pos = eol + 1;
    ++line;
  }
  check_decls(p.known, file);
  if (pos >= src.size()) throw LeirError(file, {line, 1}, "expected the program body after the declarations");
  p.body = parse_body(std::string_view(src).substr(pos), file, {line, 1});
  return p;
}

std::vector<Program> read_programs(const std::string& path) {
  std::string text = read_file(path);
  std::vector<Program> out;
  auto ext = std::filesystem::path(path).extension().string();
  size_t first = text.find_first_not_of(" \t\r\n");
  if (ext == ".jsonl") {
    size_t pos = 0;
    uint32_t line = 1;
    while (pos < text.size()) {
      size_t eol = text.find('\n', pos);
      if (eol == std::string::npos) eol = text.size();
      std::string_view rec(text.data() + pos, eol - pos);
      if (rec.find_first_not_of(" \t\r") != std::string_view::npos)
        out.push_back(program_from_json(parse_json(rec, path, {line, 1}), path, line, rec));
      pos = eol + 1;
      ++line;
    }
    if (out.empty()) throw LeirError(path, {}, "no programs in the JSONL file");
  } else if (ext == ".json" || (ext != ".leir" && first != std::string::npos && text[first] == '{')) {
    out.push_back(program_from_json(parse_json(text, path, {1, 1}), path, 1, text));
  } else {
    out.push_back(program_from_text(text, path));
  }
  return out;
}

nlohmann::json program_to_json(const Program& p) {
  nlohmann::json known = nlohmann::json::array();
  for (const auto& d : p.known) {
    nlohmann::json o = {{"name", d.name}, {"role", std::string(to_string(d.role))},
                        {"dtype", std::string(to_string(d.dtype))}, {"shape", d.shape}};
    if (d.value) {
      nlohmann::json vals = nlohmann::json::array();
      for (double v : *d.value) {
        if (d.dtype == DType::Bool) vals.push_back(v != 0.0);
        else if (is_integer(d.dtype)) vals.push_back(static_cast<int64_t>(v));
        else vals.push_back(v);
      }
      o["value"] = std::move(vals);
    }
    if (!d.alias.empty()) o["alias"] = d.alias;
    known.push_back(std::move(o));
  }
  nlohmann::json j;
  j["name"] = p.name;
  j["known"] = std::move(known);
  j["leir"] = print_body(p.body);
  return j;
}

std::string signature_line(const TensorDecl& d) {
  std::string s = fmt::format("{:<8} {}: {}[{}]", to_string(d.role), d.name, to_string(d.dtype), fmt::join(d.shape, ","));
  if (d.value) {
    std::vector<std::string> vals;
    for (double v : *d.value) {
      if (d.dtype == DType::Bool) vals.push_back(v != 0.0 ? "true" : "false");
      else vals.push_back(format_number(v, is_integer(d.dtype)));
    }
    s += fmt::format(" = [{}]", fmt::join(vals, ","));
  }
  if (!d.alias.empty()) s += fmt::format(" as \"{}\"", d.alias);
  return s;
}

std::string program_to_text(const Program& p, bool pretty) {
  std::string out;
  if (!p.name.empty()) out += "name " + p.name + "\n";
  for (const auto& d : p.known) out += signature_line(d) + "\n";
  out += pretty ? print_body_pretty(p.body) : print_body(p.body) + "\n";
  return out;
}

}  // namespace steptp::leir
