#include "front/onnx/importer.h"

#include <fmt/format.h>

#include <cmath>
#include <algorithm>
#include <cstring>

#include "ir/leir/printer.h"

namespace steptp::onnx_import {

int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

std::string shape_text(const Shape& s) { return fmt::format("[{}]", fmt::join(s, ",")); }

int64_t Value::numel() const { return onnx_import::numel(shape); }

int64_t to_int(double x) {
  if (std::isnan(x)) return 0;
  return x >= 0x1p63 ? INT64_MAX : x <= -0x1p63 ? INT64_MIN : static_cast<int64_t>(x);
}

void check_shape(const Node& n, const Shape& shape) {
  int64_t total = 1;
  for (int64_t d : shape) {
    if (d <= 0)
      n.fail(fmt::format("an output would have shape [{}]; empty tensors are not supported", fmt::join(shape, ",")));
    if (d > (int64_t(1) << 31) || (total *= d) > (int64_t(1) << 40))
      n.fail(fmt::format("an output would have shape [{}], which is too large", fmt::join(shape, ",")));
  }
}

void check_small(const Node& n, const std::vector<int64_t>& values, const std::string& what) {
  for (int64_t v : values)
    if (v > (int64_t(1) << 31) || v < -(int64_t(1) << 31)) n.fail(fmt::format("{} holds {}, which is out of range", what, v));
}

// ---- Node ----------------------------------------------------------------------------------

std::string Node::where() const {
  return fmt::format("node '{}' ({})", proto_.name().empty() ? proto_.output_size() ? proto_.output(0) : "" : proto_.name(),
                     proto_.op_type());
}

void Node::fail(const std::string& message) const { throw ImportError(fmt::format("{}: {}", where(), message)); }

void Node::unsupported(const std::string& attribute, const std::string& value) const {
  fail(fmt::format("attribute '{}' = {} is not supported", attribute, value));
}

const onnx::AttributeProto* Node::attr(const std::string& name) const {
  for (const auto& a : proto_.attribute())
    if (a.name() == name) {
      read_.insert(name);
      return &a;
    }
  return nullptr;
}

bool Node::has(const std::string& name) const { return attr(name) != nullptr; }

int64_t Node::i(const std::string& name, int64_t fallback) const {
  const auto* a = attr(name);
  return a ? a->i() : fallback;
}
double Node::f(const std::string& name, double fallback) const {
  const auto* a = attr(name);
  return a ? a->f() : fallback;
}
std::string Node::s(const std::string& name, const std::string& fallback) const {
  const auto* a = attr(name);
  return a ? a->s() : fallback;
}
std::vector<int64_t> Node::ints(const std::string& name, std::vector<int64_t> fallback) const {
  const auto* a = attr(name);
  return a ? std::vector<int64_t>(a->ints().begin(), a->ints().end()) : fallback;
}
std::vector<double> Node::floats(const std::string& name) const {
  const auto* a = attr(name);
  return a ? std::vector<double>(a->floats().begin(), a->floats().end()) : std::vector<double>{};
}
const onnx::TensorProto* Node::tensor(const std::string& name) const {
  const auto* a = attr(name);
  return a && a->has_t() ? &a->t() : nullptr;
}

std::vector<std::string> Node::unread() const {
  std::vector<std::string> out;
  for (const auto& a : proto_.attribute())
    if (!read_.count(a.name())) out.push_back(a.name());
  return out;
}

bool Node::has_input(int k) const { return k < proto_.input_size() && !proto_.input(k).empty(); }

bool Node::output_used(int k) const {
  return k < proto_.output_size() && !proto_.output(k).empty() && consumed && consumed->count(proto_.output(k));
}

// ---- index arithmetic ----------------------------------------------------------------------

leir::ExprPtr var(size_t k) { return leir::make_var(workloads::index_name(k)); }

Index vars(size_t count, size_t first) {
  Index idx;
  for (size_t k = 0; k < count; ++k) idx.push_back(var(first + k));
  return idx;
}

leir::ExprPtr iconst(int64_t c) {
  return c < 0 ? leir::make_neg(leir::make_int(-c)) : leir::make_int(c);
}

namespace {
std::optional<int64_t> const_of(const leir::ExprPtr& e) {
  if (e->is_number()) return static_cast<int64_t>(e->value);
  if (e->kind == leir::ExprKind::Unary && e->args[0]->is_number()) return -static_cast<int64_t>(e->args[0]->value);
  return std::nullopt;
}
}  // namespace

leir::ExprPtr iadd(leir::ExprPtr a, leir::ExprPtr b) {
  auto ca = const_of(a), cb = const_of(b);
  if (ca && cb) return iconst(*ca + *cb);
  if (ca == 0) return b;
  if (cb == 0) return a;
  if (cb && *cb < 0) return leir::make_binary(leir::BinaryOp::Sub, a, leir::make_int(-*cb));
  return leir::make_binary(leir::BinaryOp::Add, a, b);
}
leir::ExprPtr isub(leir::ExprPtr a, leir::ExprPtr b) {
  auto cb = const_of(b);
  if (cb) return iadd(a, iconst(-*cb));
  return leir::make_binary(leir::BinaryOp::Sub, a, b);
}
leir::ExprPtr imul(leir::ExprPtr a, int64_t c) {
  if (auto ca = const_of(a)) return iconst(*ca * c);
  if (c == 1) return a;
  if (c == 0) return iconst(0);
  return leir::make_binary(leir::BinaryOp::Mul, a, iconst(c));
}
leir::ExprPtr idiv(leir::ExprPtr a, int64_t c) {
  if (auto ca = const_of(a)) return iconst(*ca >= 0 ? *ca / c : -((-*ca + c - 1) / c));
  if (c == 1) return a;
  return leir::make_binary(leir::BinaryOp::FloorDiv, a, iconst(c));
}
leir::ExprPtr imod(leir::ExprPtr a, int64_t c) {
  if (auto ca = const_of(a)) return iconst(((*ca % c) + c) % c);
  if (c == 1) return iconst(0);
  return leir::make_binary(leir::BinaryOp::Mod, a, iconst(c));
}

std::string text(const leir::ExprPtr& e) { return leir::print_expr(e); }

std::string joined(const Index& idx) {
  std::string s;
  for (size_t i = 0; i < idx.size(); ++i) s += (i ? "," : "") + text(idx[i]);
  return s;
}

std::string lit(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "(-inf)";
  std::string s = leir::format_number(v, false);
  return v < 0 ? "(" + s + ")" : s;
}

Shape broadcast(const Node& n, const std::vector<Shape>& shapes) {
  size_t rank = 0;
  for (const auto& s : shapes) rank = std::max(rank, s.size());
  Shape out(rank, 1);
  for (const auto& s : shapes)
    for (size_t k = 0; k < s.size(); ++k) {
      int64_t& o = out[rank - s.size() + k];
      if (s[k] == o || s[k] == 1) continue;
      if (o != 1) {
        std::vector<std::string> texts;
        for (const auto& x : shapes) texts.push_back(shape_text(x));
        n.fail(fmt::format("shape mismatch: cannot broadcast {}", fmt::join(texts, " with ")));
      }
      o = s[k];
    }
  return out;
}

int64_t axis(const Node& n, int64_t a, size_t rank, const std::string& what) {
  auto r = static_cast<int64_t>(rank);
  if (a < -r || a >= r) n.fail(fmt::format("{} {} is out of range for rank {}", what, a, rank));
  return a < 0 ? a + r : a;
}

// ---- tensors -------------------------------------------------------------------------------

leir::DType dtype_of(int32_t t, leir::DType float_type, const std::string& where) {
  using TP = onnx::TensorProto;
  switch (t) {
    case TP::FLOAT: case TP::DOUBLE: case TP::FLOAT16: case TP::BFLOAT16: return float_type;
    case TP::INT64: return leir::DType::I64;
    case TP::INT32: return leir::DType::I32;
    case TP::INT16: return leir::DType::I16;
    case TP::INT8: return leir::DType::I8;
    case TP::UINT8: return leir::DType::U8;
    case TP::BOOL: return leir::DType::Bool;
    default:
      throw ImportError(fmt::format("{}: element type {} ({}) is not supported (float, double, float16, "
                                    "bfloat16, int8/16/32/64, uint8, bool are)",
                                    where, TP::DataType_IsValid(t) ? TP::DataType_Name(TP::DataType(t)) : "unknown", t));
  }
}

Shape tensor_shape(const onnx::TensorProto& t) { return Shape(t.dims().begin(), t.dims().end()); }

namespace {
double half_to_double(uint16_t h) {
  int exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  double v = exp == 0 ? std::ldexp(man, -24) : exp == 31 ? (man ? NAN : INFINITY) : std::ldexp(man + 1024, exp - 25);
  return (h & 0x8000) ? -v : v;
}
double bf16_to_double(uint16_t h) {
  uint32_t bits = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
template <typename T>
T read_le(const std::string& raw, size_t i) {
  T v;
  std::memcpy(&v, raw.data() + i * sizeof(T), sizeof(T));
  return v;
}
}  // namespace

std::vector<double> tensor_values(const onnx::TensorProto& t, const std::string& where) {
  using TP = onnx::TensorProto;
  if (t.data_location() == TP::EXTERNAL)
    throw ImportError(fmt::format("{}: tensor '{}' keeps its data in an external file, which is not supported", where, t.name()));
  int64_t n = 1;
  for (int64_t d : t.dims()) {
    if (d < 0 || (d > 0 && n > (int64_t(1) << 31) / d))
      throw ImportError(fmt::format("{}: tensor '{}' has an invalid or too large shape", where, t.name()));
    n *= d;
  }
  std::vector<double> out;
  auto check = [&](size_t count) {
    if (static_cast<int64_t>(count) != n)
      throw ImportError(fmt::format("{}: tensor '{}' holds {} values, its shape [{}] needs {}", where, t.name(), count,
                                    fmt::join(t.dims(), ","), n));
  };
  int32_t type = t.data_type();
  if (t.has_raw_data()) {
    const std::string& raw = t.raw_data();
    size_t width = 0;
    switch (type) {
      case TP::FLOAT: case TP::INT32: width = 4; break;
      case TP::DOUBLE: case TP::INT64: width = 8; break;
      case TP::FLOAT16: case TP::BFLOAT16: case TP::INT16: width = 2; break;
      case TP::INT8: case TP::UINT8: case TP::BOOL: width = 1; break;
      default: dtype_of(type, leir::DType::F32, where + ": tensor '" + t.name() + "'");
    }
    if (raw.size() % width) check(raw.size() / width + 1);
    check(raw.size() / width);
    out.reserve(n);
    for (int64_t i = 0; i < n; ++i) switch (type) {
        case TP::FLOAT: out.push_back(read_le<float>(raw, i)); break;
        case TP::DOUBLE: out.push_back(read_le<double>(raw, i)); break;
        case TP::INT32: out.push_back(read_le<int32_t>(raw, i)); break;
        case TP::INT64: out.push_back(static_cast<double>(read_le<int64_t>(raw, i))); break;
        case TP::INT16: out.push_back(read_le<int16_t>(raw, i)); break;
        case TP::FLOAT16: out.push_back(half_to_double(read_le<uint16_t>(raw, i))); break;
        case TP::BFLOAT16: out.push_back(bf16_to_double(read_le<uint16_t>(raw, i))); break;
        case TP::INT8: out.push_back(read_le<int8_t>(raw, i)); break;
        case TP::UINT8: out.push_back(read_le<uint8_t>(raw, i)); break;
        case TP::BOOL: out.push_back(read_le<uint8_t>(raw, i) != 0); break;
      }
    return out;
  }
  switch (type) {
    case TP::FLOAT: out.assign(t.float_data().begin(), t.float_data().end()); break;
    case TP::DOUBLE: out.assign(t.double_data().begin(), t.double_data().end()); break;
    case TP::INT64: for (int64_t v : t.int64_data()) out.push_back(static_cast<double>(v)); break;
    case TP::INT32: case TP::INT16: case TP::INT8: case TP::UINT8: case TP::BOOL:
      for (int32_t v : t.int32_data()) out.push_back(type == TP::BOOL ? v != 0 : v);
      break;
    case TP::FLOAT16: for (int32_t v : t.int32_data()) out.push_back(half_to_double(uint16_t(v))); break;
    case TP::BFLOAT16: for (int32_t v : t.int32_data()) out.push_back(bf16_to_double(uint16_t(v))); break;
    default: dtype_of(type, leir::DType::F32, where + ": tensor '" + t.name() + "'");
  }
  check(out.size());
  return out;
}

// ---- Importer ------------------------------------------------------------------------------

Importer::Importer(std::string program_name, leir::DType float_type, std::set<std::string> graph_outputs)
    : builder_(std::move(program_name), float_type), graph_outputs_(std::move(graph_outputs)) {}

void Importer::bind(const std::string& onnx_name, ValuePtr v) { values_[onnx_name] = std::move(v); }

ValuePtr Importer::value(const std::string& onnx_name) const {
  auto it = values_.find(onnx_name);
  if (it == values_.end()) throw ImportError(fmt::format("tensor '{}' is used before it is defined", onnx_name));
  return it->second;
}

ValuePtr Importer::input(const Node& n, int k) const {
  if (!n.has_input(k)) n.fail(fmt::format("input {} is required", k));
  return value(n.proto().input(k));
}

std::vector<int64_t> Importer::ints(const Node& n, int k) const {
  ValuePtr v = input(n, k);
  if (!v->data)
    n.fail(fmt::format("input {} ('{}') must be known when importing (a constant or initializer); "
                       "computed values there are not supported", k, n.proto().input(k)));
  // INT64_MAX/MIN (Slice's "to the end") do not survive the trip through double: saturate.
  std::vector<int64_t> out;
  for (double x : *v->data)
    out.push_back(to_int(x));
  return out;
}

std::optional<double> Importer::scalar(const Node& n, int k) const {
  if (!n.has_input(k)) return std::nullopt;
  ValuePtr v = input(n, k);
  if (!v->data || v->data->size() != 1)
    n.fail(fmt::format("input {} ('{}') must be a known scalar", k, n.proto().input(k)));
  return v->data->front();
}

ValuePtr Importer::result(const Node& n, int k, leir::DType dtype, Shape shape) {
  check_shape(n, shape);
  auto v = std::make_shared<Value>();
  v->dtype = dtype;
  v->shape = shape;
  v->onnx_name = n.proto().output(k);
  v->tensor = fmt::format("v{}", next_alias_++);
  if (graph_outputs_.erase(v->onnx_name)) {
    builder_.output(v->tensor, shape, dtype);
    originals_.push_back({v->tensor, v->onnx_name});
  } else {
    builder_.temp(v->tensor, dtype);
  }
  bind(v->onnx_name, v);
  return v;
}

ValuePtr Importer::scratch(leir::DType dtype, Shape shape) {
  auto v = std::make_shared<Value>();
  v->dtype = dtype;
  v->shape = std::move(shape);
  v->tensor = fmt::format("v{}", next_alias_++);
  builder_.temp(v->tensor, dtype);
  return v;
}

void Importer::view(const Node& n, int k, ValuePtr base, Shape shape, std::function<Index(const Index&)> map) {
  check_shape(n, shape);
  auto v = std::make_shared<Value>();
  v->dtype = base->dtype;
  v->shape = std::move(shape);
  v->onnx_name = n.proto().output(k);
  v->base = std::move(base);
  v->map = std::move(map);
  bind(v->onnx_name, v);
}

void Importer::known(const Node& n, int k, leir::DType dtype, Shape shape, std::vector<double> data) {
  check_shape(n, shape);
  auto v = std::make_shared<Value>();
  v->dtype = dtype;
  v->shape = std::move(shape);
  v->data = std::move(data);
  v->onnx_name = n.proto().output(k);
  bind(v->onnx_name, v);
}

std::string Importer::materialize(const ValuePtr& v) {
  auto it = declared_.find(v.get());
  if (it != declared_.end()) return it->second.second;
  std::string alias = fmt::format("v{}", next_alias_++);
  if (v->initializer) builder_.param(alias, v->shape, v->dtype, *v->data);
  else builder_.constant(alias, v->shape, *v->data, v->dtype);
  if (!v->onnx_name.empty()) originals_.push_back({alias, v->onnx_name});
  declared_[v.get()] = {v, alias};
  return alias;
}

namespace {
// Data read as a literal: one repeated finite value that is not a weight (initializers stay
// params, LEIR.md §1).
bool is_literal(const Value& v) {
  const auto& d = *v.data;
  return !v.initializer && std::isfinite(d.front()) &&
         std::all_of(d.begin(), d.end(), [&](double x) { return x == d.front(); });
}
}  // namespace

// Reads print as the real tensor names, which template expansion passes through unchanged.
std::string Importer::at(const ValuePtr& v, const Index& idx) { return text(access(v, idx)); }

leir::ExprPtr Importer::access(const ValuePtr& v, const Index& idx) {
  if (v->is_view()) return access(v->base, v->map(idx));
  std::string alias = v->tensor;
  if (alias.empty()) {
    if (is_literal(*v)) {
      double x = v->data->front();
      if (!leir::is_floating(v->dtype)) return iconst(to_int(x));
      return x < 0 ? leir::make_neg(leir::make_number(-x)) : leir::make_number(x);
    }
    alias = materialize(v);
  }
  return leir::make_access(builder_.name_of(alias), v->dtype, leir::Scope::Global, idx);
}

ValuePtr Importer::table(leir::DType dtype, Shape shape, std::vector<double> data) {
  auto v = std::make_shared<Value>();
  v->dtype = dtype;
  v->shape = std::move(shape);
  v->data = std::move(data);
  return v;
}

std::string Importer::at_broadcast(const ValuePtr& v, size_t out_rank) {
  Index idx;
  size_t r = v->shape.size();
  for (size_t k = 0; k < r; ++k) idx.push_back(v->shape[k] == 1 ? iconst(0) : var(out_rank - r + k));
  return at(v, idx);
}

void Importer::nest(const Shape& extents, const std::string& stmts) {
  builder_.nest(extents.empty() ? Shape{1} : extents, stmts);
}

void Importer::fill(const ValuePtr& out, const std::string& rhs) {
  nest(out->shape, at(out, vars(out->shape.size())) + "=" + rhs);
}

leir::Program Importer::finish(const std::vector<std::string>& order) {
  for (const auto& name : order) {
    if (!graph_outputs_.count(name)) continue;  // produced straight into an output tensor
    ValuePtr v = value(name);
    auto out = std::make_shared<Value>(*v);
    out->base = nullptr;
    out->data.reset();
    out->tensor = fmt::format("v{}", next_alias_++);
    builder_.output(out->tensor, out->shape.empty() ? Shape{} : out->shape, out->dtype);
    originals_.push_back({out->tensor, name});
    fill(out, at(v, vars(v->shape.size())));
    graph_outputs_.erase(name);
  }
  for (const auto& [alias, original] : originals_) builder_.keep_original_name(alias, original);
  return builder_.finish();
}

}  // namespace steptp::onnx_import
