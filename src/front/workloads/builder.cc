#include "front/workloads/builder.h"

#include <fmt/format.h>

#include <cctype>
#include <stdexcept>

#include "ir/leir/parser.h"
#include "ir/leir/printer.h"

namespace steptp::workloads {
namespace {

// Upper-case letters the public translator uses for tensor names, and the lower-case second
// letters of two-letter names (corpus: ... Z Aa Ac Ad ... Az Ca Cc ...): B L P T U V are skipped.
constexpr std::string_view kFirst = "ACDEFGHIJKMNOQRSWXYZ";
constexpr std::string_view kSecond = "acdefghijkmnoqrswxyz";
// Loop variables after tx (corpus: a c d f g h i j); b e l p t u v are never used.
constexpr std::string_view kIndex = "acdfghijkmnoqrswxyz";

bool is_ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

}  // namespace

std::string tensor_name(size_t k) {
  if (k < kFirst.size()) return std::string(1, kFirst[k]);
  k -= kFirst.size();
  size_t first = k / kSecond.size();
  if (first >= kFirst.size()) throw std::out_of_range("too many tensors for public-style names");
  return std::string{kFirst[first], kSecond[k % kSecond.size()]};
}

std::string index_name(size_t k) {
  if (k == 0) return "tx";
  if (k - 1 < kIndex.size()) return std::string(1, kIndex[k - 1]);
  return fmt::format("a{}", k - 1 - kIndex.size());  // beyond 20 loops (never in practice)
}

std::string num(double v) { return leir::format_number(v, false); }

ProgramBuilder::ProgramBuilder(std::string name, leir::DType float_type)
    : program_name_(std::move(name)), float_type_(float_type) {}

namespace {
thread_local bool shapes_only = false;
}  // namespace

ShapesOnly::ShapesOnly() : outer_(shapes_only) { shapes_only = true; }
ShapesOnly::~ShapesOnly() { shapes_only = outer_; }
bool ShapesOnly::active() { return shapes_only; }

std::string ProgramBuilder::allocate(const std::string& alias, leir::DType dtype, bool known,
                                     leir::Role role, std::vector<int64_t> shape,
                                     std::optional<std::vector<double>> value) {
  if (aliases_.count(alias)) throw std::logic_error("workload alias declared twice: " + alias);
  Entry e;
  e.name = tensor_name(next_name_++);
  e.dtype = dtype;
  e.known = known;
  if (known) {
    leir::TensorDecl d;
    d.name = e.name;
    d.role = role;
    d.dtype = dtype;
    d.shape = std::move(shape);
    if (!ShapesOnly::active()) d.value = std::move(value);
    known_.push_back(std::move(d));
  }
  aliases_[alias] = e;
  return e.name;
}

std::string ProgramBuilder::input(const std::string& alias, std::vector<int64_t> shape) {
  return input(alias, std::move(shape), float_type_);
}
std::string ProgramBuilder::input(const std::string& alias, std::vector<int64_t> shape,
                                  leir::DType dtype) {
  return allocate(alias, dtype, true, leir::Role::Input, std::move(shape), std::nullopt);
}
std::string ProgramBuilder::param(const std::string& alias, std::vector<int64_t> shape) {
  return allocate(alias, float_type_, true, leir::Role::Param, std::move(shape), std::nullopt);
}
std::string ProgramBuilder::param(const std::string& alias, std::vector<int64_t> shape, leir::DType dtype,
                                  std::vector<double> value) {
  return allocate(alias, dtype, true, leir::Role::Param, std::move(shape), std::move(value));
}
std::string ProgramBuilder::constant(const std::string& alias, std::vector<int64_t> shape,
                                     std::vector<double> value, leir::DType dtype) {
  return allocate(alias, dtype, true, leir::Role::Constant, std::move(shape), std::move(value));
}
std::string ProgramBuilder::constant(const std::string& alias, std::vector<int64_t> shape,
                                     std::vector<double> value) {
  return constant(alias, std::move(shape), std::move(value), float_type_);
}
std::string ProgramBuilder::output(const std::string& alias, std::vector<int64_t> shape) {
  return output(alias, std::move(shape), float_type_);
}
std::string ProgramBuilder::output(const std::string& alias, std::vector<int64_t> shape,
                                   leir::DType dtype) {
  return allocate(alias, dtype, true, leir::Role::Output, std::move(shape), std::nullopt);
}
std::string ProgramBuilder::temp(const std::string& alias) { return temp(alias, float_type_); }
std::string ProgramBuilder::temp(const std::string& alias, leir::DType dtype) {
  return allocate(alias, dtype, false, leir::Role::Output, {}, std::nullopt);
}

void ProgramBuilder::keep_original_name(const std::string& alias, std::string original) {
  const std::string& name = name_of(alias);
  for (auto& d : known_)
    if (d.name == name) d.alias = original;
}

const std::string& ProgramBuilder::name_of(const std::string& alias) const {
  auto it = aliases_.find(alias);
  if (it == aliases_.end())
    throw std::logic_error("workload " + program_name_ + ": unknown alias $" + alias);
  return it->second.name;
}

std::string ProgramBuilder::expand(const std::string& tmpl) const {
  std::string out;
  size_t i = 0;
  while (i < tmpl.size()) {
    char c = tmpl[i];
    if (c != '$') {
      out += c;
      ++i;
      continue;
    }
    size_t j = i + 1;
    while (j < tmpl.size() && is_ident_char(tmpl[j])) ++j;
    std::string alias = tmpl.substr(i + 1, j - i - 1);
    auto it = aliases_.find(alias);
    if (alias.empty() || it == aliases_.end())
      throw std::logic_error("workload " + program_name_ + ": unknown alias $" + alias +
                             " in template: " + tmpl);
    out += it->second.name;
    out += "^{";
    out += leir::to_string(it->second.dtype);
    out += ",g}";
    if (j < tmpl.size() && tmpl[j] == '[') {
      // Subscripts up to the matching ']' (subscripts may contain gathers: $x[tx,$t[tx]]).
      int depth = 0;
      size_t k = j;
      for (; k < tmpl.size(); ++k) {
        if (tmpl[k] == '[') ++depth;
        if (tmpl[k] == ']' && --depth == 0) break;
      }
      if (k >= tmpl.size())
        throw std::logic_error("workload " + program_name_ + ": unbalanced [ in: " + tmpl);
      out += "_{" + expand(tmpl.substr(j + 1, k - j - 1)) + "}";
      j = k + 1;
    }
    i = j;
  }
  return out;
}

namespace {
std::string statements(const ProgramBuilder& b, const std::string& stmts) {
  std::string out = b.expand(stmts);
  if (out.empty() || out.back() != ';') out += ';';
  return out;
}
}  // namespace

void ProgramBuilder::nest(const std::vector<int64_t>& extents, const std::string& stmts) {
  std::vector<LoopSpec> loops;
  for (size_t k = 0; k < extents.size(); ++k)
    loops.push_back({k == 0 ? 'B' : 'L', extents[k], index_name(k)});
  nest(loops, stmts);
}

void ProgramBuilder::nest(const std::vector<LoopSpec>& loops, const std::string& stmts) {
  if (loops.empty()) throw std::logic_error("workload " + program_name_ + ": nest without loops");
  for (const auto& l : loops) {
    if (l.extent < 1)
      throw std::logic_error(fmt::format("workload {}: loop {} has extent {}", program_name_,
                                         l.var, l.extent));
    body_ += fmt::format("{}^{{{}}}_{{{}=0}}", l.kind, l.extent, l.var);
  }
  body_ += "[" + statements(*this, stmts) + "];";
}

void ProgramBuilder::raw(const std::string& tmpl) { body_ += expand(tmpl); }

leir::Program ProgramBuilder::finish() const {
  leir::Program p;
  p.name = program_name_;
  for (leir::Role group : {leir::Role::Input, leir::Role::Param, leir::Role::Output})
    for (const auto& d : known_) {
      bool in_group = d.role == group || (group == leir::Role::Param && d.role == leir::Role::Constant);
      if (in_group) p.known.push_back(d);
    }
  p.body = leir::parse_body(body_, "<workload " + program_name_ + ">");
  return p;
}

}  // namespace steptp::workloads
