#include "ir/leir/identifiers.h"

#include <fmt/format.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "ir/leir/diagnostic.h"
#include "ir/leir/ir_mutator.h"

namespace steptp::leir {

namespace {

// Plain ASCII classes: std::isalnum and friends depend on the locale.
bool upper(char c) { return c >= 'A' && c <= 'Z'; }
bool lower(char c) { return c >= 'a' && c <= 'z'; }
bool digit(char c) { return c >= '0' && c <= '9'; }
bool program_name_char(char c) { return upper(c) || lower(c) || digit(c) || c == '_' || c == '.' || c == '-'; }

[[noreturn]] void reject(std::string_view s, std::string_view what, std::string_view expected, const std::string& file,
                         SourceLoc loc) {
  throw LeirError(file, loc, fmt::format("{} {} is not valid: expected {}", what, quote_text(s), expected));
}

constexpr std::string_view kTensorNameRule = "a tensor name [A-Z][A-Za-z0-9]* (LEIR.md §2)";
constexpr std::string_view kLoopVarRule = "a loop variable [a-z][a-z0-9]* (LEIR.md §2)";

}  // namespace

bool is_tensor_name(std::string_view s) {
  if (s.empty() || !upper(s[0])) return false;
  for (char c : s)
    if (!upper(c) && !lower(c) && !digit(c)) return false;
  return true;
}

bool is_loop_var(std::string_view s) {
  if (s.empty() || !lower(s[0])) return false;
  for (char c : s)
    if (!lower(c) && !digit(c)) return false;
  return true;
}

bool is_program_name(std::string_view s) {
  if (s.empty() || s.size() > kMaxProgramNameLength || s[0] == '.' || s[0] == '-') return false;
  for (char c : s)
    if (!program_name_char(c)) return false;
  return true;
}

bool is_c_identifier(std::string_view s) {
  if (s.empty() || digit(s[0])) return false;
  for (char c : s)
    if (!upper(c) && !lower(c) && !digit(c) && c != '_') return false;
  return true;
}

std::optional<std::string> alias_problem(std::string_view alias) {
  if (alias.size() > kMaxAliasBytes) return fmt::format("it is longer than {} bytes", kMaxAliasBytes);
  for (char c : alias)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return std::string("it contains a control character");
  try {
    // nlohmann refuses to serialize invalid UTF-8: the one check JSON output needs anyway.
    (void)nlohmann::json(std::string(alias)).dump();
  } catch (const nlohmann::json::type_error&) {
    return std::string("it is not valid UTF-8");
  }
  return std::nullopt;
}

std::string quote_text(std::string_view text) {
  constexpr size_t kShown = 60;
  const bool cut = text.size() > kShown;
  std::string shown(text.substr(0, kShown));
  return nlohmann::json(shown).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
         (cut ? fmt::format(" (first {} of {} bytes)", kShown, text.size()) : "");
}

void require_tensor_name(std::string_view s, std::string_view what, const std::string& file, SourceLoc loc) {
  if (!is_tensor_name(s)) reject(s, what, kTensorNameRule, file, loc);
}

void require_loop_var(std::string_view s, std::string_view what, const std::string& file, SourceLoc loc) {
  if (!is_loop_var(s)) reject(s, what, kLoopVarRule, file, loc);
}

void require_program_name(std::string_view s, std::string_view what, const std::string& file, SourceLoc loc) {
  if (!s.empty() && !is_program_name(s))
    reject(s, what,
           fmt::format("a program name of at most {} characters from [A-Za-z0-9_.-], not starting with '.' or '-'",
                       kMaxProgramNameLength),
           file, loc);
}

void require_alias(std::string_view s, std::string_view what, const std::string& file, SourceLoc loc) {
  if (auto why = alias_problem(s))
    throw LeirError(file, loc,
                    fmt::format("{} {} is not valid: {} (an alias is UTF-8 text of at most {} bytes without control "
                                "characters)",
                                what, quote_text(s), *why, kMaxAliasBytes));
}

std::string program_name_from_path(const std::string& path) {
  std::string name = std::filesystem::path(path).stem().string().substr(0, kMaxProgramNameLength);
  for (char& c : name)
    if (!program_name_char(c)) c = '_';
  if (!name.empty() && (name[0] == '.' || name[0] == '-')) name[0] = '_';
  return name;
}

void check_names(const Program& p) {
  require_program_name(p.name, "program name", p.file, {});
  for (const auto& d : p.known) {
    require_tensor_name(d.name, "known tensor name", p.file, d.loc);
    require_alias(d.alias, fmt::format("alias of {}", d.name), p.file, d.loc);
  }
  auto check_expr = [&](const ExprPtr& e) {
    for_each_expr(e, [&](const Expr& x) {
      if (x.is_access())
        require_tensor_name(x.tensor, "tensor name", p.file, x.loc);
      else if (x.is_var())
        require_loop_var(x.var_name(), "loop variable", p.file, x.loc);
    });
  };
  auto walk = [&](const std::vector<Item>& body, auto&& self) -> void {
    for (const auto& it : body) {
      if (it.is_stmt()) {
        check_expr(it.stmt.lhs);
        check_expr(it.stmt.rhs);
        continue;
      }
      for (const auto& l : it.nest.loops) require_loop_var(l.var, "loop variable", p.file, l.loc);
      self(it.nest.body, self);
    }
  };
  walk(p.body, walk);
}

}  // namespace steptp::leir
