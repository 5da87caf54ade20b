#include "ir/leir/program_io.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cctype>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "ir/leir/diagnostic.h"
#include "ir/leir/identifiers.h"
#include "ir/leir/parser.h"
#include "ir/leir/printer.h"
#include "ir/leir/tensors.h"

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
    require_tensor_name(d.name, "known tensor name", file, d.loc);
    if (!seen.insert(d.name).second)
      throw LeirError(file, d.loc, fmt::format("tensor '{}' is declared twice", d.name));
    require_alias(d.alias, fmt::format("alias of {}", d.name), file, d.loc);
    for (int64_t s : d.shape)
      if (s <= 0) throw LeirError(file, d.loc, fmt::format("tensor '{}': every dimension must be positive", d.name));
    const int64_t numel = require_numel(d.shape, d.name, file, d.loc);
    if (d.value) {
      if (d.role != Role::Constant && d.role != Role::Param)
        throw LeirError(file, d.loc, fmt::format("tensor '{}': only constants and params carry a value", d.name));
      if (static_cast<int64_t>(d.value->size()) != numel)
        throw LeirError(
            file, d.loc,
            fmt::format("{} '{}': shape needs {} values, got {}", to_string(d.role), d.name, numel, d.value->size()));
    }
  }
}

TensorDecl decl_from_json(const nlohmann::json& k, const std::string& file, SourceLoc loc) {
  if (!k.is_object()) throw LeirError(file, loc, "each entry of \"known\" must be an object");
  auto str = [&](const char* key) -> std::string {
    if (!k.contains(key) || !k[key].is_string())
      throw LeirError(file, loc,
                      fmt::format("known tensor {} needs a string \"{}\"",
                                  quote_text(k.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)), key));
    return k[key].get<std::string>();
  };
  TensorDecl d;
  d.loc = loc;
  d.name = str("name");
  // Checked first: the messages below show it.
  require_tensor_name(d.name, "known tensor name", file, loc);
  const std::string role_text = str("role"), dtype_text = str("dtype");
  auto role = parse_role(role_text);
  if (!role)
    throw LeirError(file, loc,
                    fmt::format("tensor '{}': role {} is not one of input, constant, param or output", d.name,
                                quote_text(role_text)));
  d.role = *role;
  auto dt = parse_dtype(dtype_text);
  if (!dt)
    throw LeirError(file, loc,
                    fmt::format("tensor '{}': unknown dtype {} (expected f16 bf16 f32 f64 i8 i16 i32 i64 u8 bool)",
                                d.name, quote_text(dtype_text)));
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
  if (k.contains("alias") && !k["alias"].is_null()) {
    if (!k["alias"].is_string())
      throw LeirError(file, loc, fmt::format("tensor '{}': \"alias\" must be a string", d.name));
    d.alias = k["alias"].get<std::string>();
  }
  return d;
}

// Offset in `raw` of the first character inside the quotes of the value of `key` whose text there is
// `spelled` (the value as the file spells it between the quotes), searching from `from`.
std::optional<size_t> value_offset(std::string_view raw, std::string_view key, std::string_view spelled,
                                   size_t from = 0) {
  const std::string quoted_key = fmt::format("\"{}\"", key);
  size_t at = raw.find(quoted_key, from);
  while (at != std::string_view::npos) {
    size_t p = at + quoted_key.size();
    while (p < raw.size() && std::isspace(static_cast<unsigned char>(raw[p]))) ++p;
    if (p < raw.size() && raw[p] == ':') {
      ++p;
      while (p < raw.size() && std::isspace(static_cast<unsigned char>(raw[p]))) ++p;
      if (p < raw.size() && raw[p] == '"' && raw.substr(p + 1, spelled.size()) == spelled &&
          raw.substr(p + 1 + spelled.size(), 1) == "\"")
        return p + 1;
    }
    at = raw.find(quoted_key, at + 1);
  }
  return std::nullopt;
}

// `s` as a JSON writer spells it between the quotes (escapes included).
std::string json_spelling(const std::string& s) {
  std::string q = nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return q.substr(1, q.size() - 2);
}

// Source positions of string values inside one JSON record, found front to back from `from` (each
// search starts at the last hit, so locating every known tensor stays linear in the record's size).
class RecordLocator {
 public:
  RecordLocator(std::string_view raw, uint32_t line, size_t from = 0)
      : raw_(raw), record_{line, 1}, loc_(locate(raw, from, record_)), at_(std::min(from, raw.size())) {}

  // Where the string value `value` of `key` starts (past the opening quote); the record's start
  // when the file spells it differently (e.g. "\u0041" for "A"), and for every later value then
  // (searching on to the end each time would make hostile records quadratic).
  SourceLoc find(std::string_view key, const std::string& value) {
    auto off = lost_ ? std::nullopt : value_offset(raw_, key, json_spelling(value), at_);
    if (!off) {
      lost_ = true;
      return record_;
    }
    loc_ = locate(raw_.substr(at_), *off - at_, loc_);
    at_ = *off;
    return loc_;
  }

 private:
  std::string_view raw_;
  SourceLoc record_;
  SourceLoc loc_;
  size_t at_;
  bool lost_ = false;
};

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
  if (j.contains("name") && !j["name"].is_null()) {
    if (!j["name"].is_string()) throw LeirError(file, rec, "the program's \"name\" must be a string");
    p.name = j["name"].get<std::string>();
    require_program_name(p.name, "the program's \"name\"", file, RecordLocator(raw, line).find("name", p.name));
  }
  if (!j.contains("known") || !j["known"].is_array())
    throw LeirError(file, rec, "program needs a \"known\" array (the signature)");
  RecordLocator decls(raw, line, raw.find("\"known\""));
  for (const auto& k : j["known"]) {
    SourceLoc at = k.is_object() && k.contains("name") && k["name"].is_string()
                       ? decls.find("name", k["name"].get_ref<const std::string&>())
                       : rec;
    p.known.push_back(decl_from_json(k, file, at));
  }
  check_decls(p.known, file);
  if (!j.contains("leir") || !j["leir"].is_string()) throw LeirError(file, rec, "program needs a \"leir\" string");
  const auto& leir = j["leir"].get_ref<const std::string&>();
  SourceLoc origin{line, 1};
  // Offsets inside the body map 1:1 to the file only when the file spells it without escapes.
  if (auto off = value_offset(raw, "leir", leir)) origin = locate(raw, *off, {line, 1});
  p.body = parse_body(leir, file, origin);
  return p;
}

namespace {

// One line of the text form's declarations, scanned left to right. (std::regex recursed once per
// character and overflowed the stack on lines of some 40,000 characters, e.g. a constant's values.)
class DeclLine {
 public:
  DeclLine(std::string_view l, const std::string& file, uint32_t line) : l_(l), file_(file), line_(line) {}

  // The keyword that makes this a declaration line (input constant param output name), if any.
  std::string_view keyword() {
    skip_space();
    std::string_view w = word();
    for (std::string_view k : {"input", "constant", "param", "output", "name"})
      if (w == k) return w;
    return {};
  }

  // The rest of a `name` line, trimmed; checked as a program name.
  std::string program_name() {
    skip_space();
    size_t end = l_.find_last_not_of(kSpace);
    if (pos_ >= l_.size() || end == std::string_view::npos) malformed("a program name after 'name'");
    std::string name(l_.substr(pos_, end + 1 - pos_));
    require_program_name(name, "program name", file_, here());
    return name;
  }

  // ROLE NAME: DTYPE[dims] [= [values]] [as "alias"], the role already read.
  TensorDecl decl(Role role, SourceLoc at) {
    TensorDecl d;
    d.loc = at;
    d.role = role;
    if (!skip_space()) malformed("blank after the role");
    d.name = std::string(word());
    if (d.name.empty()) malformed("a tensor name");
    skip_space();
    expect(':');
    skip_space();
    SourceLoc dtype_at = here();
    std::string dtype(word());
    auto dt = parse_dtype(dtype);
    if (!dt) throw LeirError(file_, dtype_at, fmt::format("unknown dtype {} for '{}'", quote_text(dtype), d.name));
    d.dtype = *dt;
    skip_space();
    for (const auto& t : list(d.name)) {
      char* end = nullptr;
      errno = 0;
      long long v = std::strtoll(t.c_str(), &end, 10);
      if (*end != '\0' || errno == ERANGE)
        throw LeirError(file_, d.loc,
                        fmt::format("dimension {} of '{}' is not a 64-bit integer", quote_text(t), d.name));
      d.shape.push_back(v);
    }
    skip_space();
    if (peek('=')) {
      ++pos_;
      skip_space();
      std::vector<double> vals;
      for (const auto& t : list(d.name)) {
        if (t == "true" || t == "false") {
          vals.push_back(t == "true" ? 1.0 : 0.0);
          continue;
        }
        char* end = nullptr;
        double v = std::strtod(t.c_str(), &end);
        if (*end != '\0')
          throw LeirError(file_, d.loc, fmt::format("value {} of '{}' is not a number", quote_text(t), d.name));
        vals.push_back(v);
      }
      d.value = std::move(vals);
      skip_space();
    }
    size_t before_as = pos_;
    if (std::string_view w = word(); !w.empty()) {
      if (w != "as") {
        pos_ = before_as;
        malformed("'as \"alias\"' or the end of the declaration");
      }
      if (!skip_space()) malformed("blank after 'as'");
      // A JSON string literal (signature_line writes one), so any alias survives the text form.
      SourceLoc alias_at = here();
      std::string_view rest = l_.substr(pos_, l_.find_last_not_of(kSpace) + 1 - pos_);
      auto lit = nlohmann::json::parse(rest, nullptr, /*allow_exceptions=*/false);
      if (!lit.is_string())
        throw LeirError(
            file_, alias_at,
            fmt::format("the alias of '{}' must be one JSON string literal, got {}", d.name, quote_text(rest)));
      d.alias = lit.get<std::string>();
      pos_ = l_.size();
    }
    if (skip_space(); pos_ < l_.size()) malformed("the end of the declaration");
    return d;
  }

  SourceLoc here() const { return {line_, static_cast<uint32_t>(pos_ + 1)}; }

 private:
  static constexpr std::string_view kSpace = " \t\r\f\v";

  bool skip_space() {
    size_t start = pos_;
    while (pos_ < l_.size() && kSpace.find(l_[pos_]) != std::string_view::npos) ++pos_;
    return pos_ > start;
  }
  std::string_view word() {
    size_t start = pos_;
    while (pos_ < l_.size() && (std::isalnum(static_cast<unsigned char>(l_[pos_])) || l_[pos_] == '_')) ++pos_;
    return l_.substr(start, pos_ - start);
  }
  bool peek(char c) const { return pos_ < l_.size() && l_[pos_] == c; }
  void expect(char c) {
    if (!peek(c)) malformed(fmt::format("'{}'", c));
    ++pos_;
  }
  // "[a, b, ...]": the trimmed entries; "[]" and "[ ]" are empty.
  std::vector<std::string> list(const std::string& tensor) {
    expect('[');
    size_t close = l_.find(']', pos_);
    if (close == std::string_view::npos) malformed("']'");
    std::string_view inside = l_.substr(pos_, close - pos_);
    pos_ = close + 1;
    std::vector<std::string> out;
    if (inside.find_first_not_of(kSpace) == std::string_view::npos) return out;
    for (size_t start = 0;;) {
      size_t comma = std::min(inside.find(',', start), inside.size());
      std::string_view tok = inside.substr(start, comma - start);
      size_t b = tok.find_first_not_of(kSpace), e = tok.find_last_not_of(kSpace);
      if (b == std::string_view::npos)
        throw LeirError(file_, {line_, 1}, fmt::format("empty list entry in the declaration of '{}'", tensor));
      out.emplace_back(tok.substr(b, e - b + 1));
      if (comma == inside.size()) return out;
      start = comma + 1;
    }
  }
  [[noreturn]] void malformed(const std::string& expected) const {
    throw LeirError(file_, here(),
                    fmt::format("malformed declaration: expected {}; a declaration reads 'ROLE NAME: DTYPE[d1,d2,...]' "
                                "with ROLE one of input, constant, param, output (optionally '= [values]' and "
                                "'as \"alias\"'), or 'name NAME'",
                                expected));
  }

  std::string_view l_;
  const std::string& file_;
  uint32_t line_;
  size_t pos_ = 0;
};

}  // namespace

Program program_from_text(std::string_view text, const std::string& file) {
  // Blank out comments, keeping every position where it was.
  std::string src(text);
  for (size_t i = 0; i < src.size(); ++i) {
    if (src[i] != '#') continue;
    while (i < src.size() && src[i] != '\n') src[i++] = ' ';
  }
  Program p;
  p.file = file;
  p.name = program_name_from_path(file);
  size_t pos = 0;
  uint32_t line = 1;
  while (pos < src.size()) {
    size_t eol = src.find('\n', pos);
    if (eol == std::string::npos) eol = src.size();
    std::string_view l = std::string_view(src).substr(pos, eol - pos);
    if (l.find_first_not_of(" \t\r\f\v") != std::string_view::npos) {
      DeclLine d(l, file, line);
      SourceLoc at = {line, static_cast<uint32_t>(l.find_first_not_of(" \t\r\f\v") + 1)};
      std::string_view kw = d.keyword();
      if (kw.empty()) break;  // the body starts here
      if (kw == "name")
        p.name = d.program_name();
      else
        p.known.push_back(d.decl(*parse_role(kw), at));
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
  if (!d.alias.empty()) {
    // As a JSON string literal, with '#' escaped too: the text form reads '#' as a comment.
    std::string lit = nlohmann::json(d.alias).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    for (size_t at = lit.find('#'); at != std::string::npos; at = lit.find('#', at)) lit.replace(at, 1, "\\u0023");
    s += " as " + lit;
  }
  return s;
}

std::string program_to_text(const Program& p, bool pretty) {
  // The name line is read back as it is written: only a valid name keeps the text form a program.
  require_program_name(p.name, "program name", p.file, {});
  std::string out;
  if (!p.name.empty()) out += "name " + p.name + "\n";
  for (const auto& d : p.known) out += signature_line(d) + "\n";
  out += pretty ? print_body_pretty(p.body) : print_body(p.body) + "\n";
  return out;
}

}  // namespace steptp::leir
