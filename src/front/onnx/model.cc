// Reading a ModelProto and importing its graph: opset and input checks, topological order (with
// cycle and dangling-input detection), constant folding of shape arithmetic, op dispatch, and the
// checks of declared shapes against the computed ones.
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "front/onnx/importer.h"
#include "ir/interp/interpreter.h"
#include "ir/leir/identifiers.h"
#include "ir/leir/program_io.h"

namespace steptp::onnx_import {
namespace {

const OpTable& op_table() {
  static const OpTable table = [] {
    OpTable t;
    add_elementwise_ops(t);
    add_linear_ops(t);
    add_conv_ops(t);
    add_norm_ops(t);
    add_reduce_ops(t);
    add_shape_ops(t);
    return t;
  }();
  return table;
}

// Declared shape of a graph input/output/value_info: known dims, or -1 where symbolic.
struct DeclaredShape {
  std::vector<int64_t> dims;
  std::vector<std::string> symbols;
};
std::optional<DeclaredShape> declared_shape(const onnx::ValueInfoProto& vi) {
  if (!vi.type().has_tensor_type() || !vi.type().tensor_type().has_shape()) return std::nullopt;
  DeclaredShape s;
  for (const auto& d : vi.type().tensor_type().shape().dim()) {
    s.dims.push_back(d.has_dim_value() ? d.dim_value() : -1);
    s.symbols.push_back(d.has_dim_param() ? d.dim_param() : "");
  }
  return s;
}

// The opset of the default domain.
int64_t default_opset(const onnx::ModelProto& m) {
  for (const auto& o : m.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") return o.version();
  throw ImportError("the model imports no opset of the default ONNX domain");
}

// Nodes in an order where every input is defined before use; fails on dangling inputs and cycles.
std::vector<int> topological_order(const onnx::GraphProto& g, const std::set<std::string>& defined) {
  std::map<std::string, int> producer;
  for (int i = 0; i < g.node_size(); ++i)
    for (const auto& o : g.node(i).output()) {
      if (o.empty()) continue;
      if (defined.count(o) || !producer.emplace(o, i).second)
        throw ImportError(fmt::format("{}: tensor '{}' is defined more than once", Node(g.node(i)).where(), o));
    }
  std::vector<int> pending(g.node_size(), 0);
  std::vector<std::vector<int>> users(g.node_size());
  for (int i = 0; i < g.node_size(); ++i)
    for (const auto& in : g.node(i).input()) {
      if (in.empty() || defined.count(in)) continue;
      auto it = producer.find(in);
      if (it == producer.end())
        throw ImportError(fmt::format("{}: input '{}' is produced by no node and is neither a graph input nor an "
                                      "initializer (missing initializer?)", Node(g.node(i)).where(), in));
      ++pending[i];
      users[it->second].push_back(i);
    }
  std::vector<int> order;
  for (int i = 0; i < g.node_size(); ++i)
    if (pending[i] == 0) order.push_back(i);
  for (size_t k = 0; k < order.size(); ++k)
    for (int u : users[order[k]])
      if (--pending[u] == 0) order.push_back(u);
  if (static_cast<int>(order.size()) != g.node_size()) {
    std::vector<std::string> stuck;
    for (int i = 0; i < g.node_size() && stuck.size() < 4; ++i)
      if (pending[i] > 0) stuck.push_back(Node(g.node(i)).where());
    throw ImportError(fmt::format("the graph has a cycle: {} depend on each other", fmt::join(stuck, ", ")));
  }
  return order;
}

// Runs `node` on known inputs at import time: lowers it into a scratch program whose outputs are
// the node's outputs and runs that in the interpreter (so folding means what lowering means).
// Returns false, folding nothing, when the outputs are too large to be worth holding as data.
bool fold(Importer& im, const Node& node, const std::string& name) {
  std::set<std::string> outs;
  std::vector<std::string> order;
  for (const auto& o : node.proto().output())
    if (!o.empty() && outs.insert(o).second) order.push_back(o);
  Importer scratch(name, im.float_type(), outs);
  for (int k = 0; k < node.proto().input_size(); ++k)
    if (node.has_input(k)) scratch.bind(node.proto().input(k), im.value(node.proto().input(k)));
  op_table().at(node.op())(scratch, node);
  leir::Program p = scratch.finish(order);
  int64_t total = 0;
  for (const auto& d : p.known)
    if (d.role == leir::Role::Output) total += d.numel();
  if (total > (int64_t(1) << 20)) return false;
  leir::TensorMap values = interp::Interpreter(p).run({});
  for (const auto& d : p.known) {
    if (d.role != leir::Role::Output) continue;
    for (int k = 0; k < node.num_outputs(); ++k)
      if (node.proto().output(k) == d.alias) im.known(node, k, d.dtype, d.shape, values.at(d.name).data);
  }
  return true;
}

bool foldable(const Importer& im, const Node& node) {
  bool any = false;
  for (int k = 0; k < node.proto().input_size(); ++k) {
    if (!node.has_input(k)) continue;
    ValuePtr v = im.value(node.proto().input(k));
    // Weights stay params: only shape arithmetic and Constant-node data are folded.
    if (!v->data || (v->initializer && leir::is_floating(v->dtype))) return false;
    any = true;
  }
  return any;
}

void check_declared(const onnx::ValueInfoProto& vi, const Value& v, const std::string& what) {
  auto d = declared_shape(vi);
  if (!d) return;
  bool ok = d->dims.size() == v.shape.size();
  for (size_t k = 0; ok && k < v.shape.size(); ++k) ok = d->dims[k] < 0 || d->dims[k] == v.shape[k];
  if (!ok) {
    std::vector<std::string> dims;
    for (int64_t x : d->dims) dims.push_back(x < 0 ? "?" : std::to_string(x));
    throw ImportError(fmt::format("shape mismatch: {} '{}' is declared [{}] but its producer computes {}", what, vi.name(),
                                  fmt::join(dims, ","), shape_text(v.shape)));
  }
}

leir::Program import_graph(const onnx::ModelProto& m, const std::string& name, const ImportOptions& opts) {
  int64_t opset = default_opset(m);
  if (opset < 13 || opset > 18)
    throw ImportError(fmt::format("opset {} is not supported (the importer covers opsets 13 to 18)", opset));
  const onnx::GraphProto& g = m.graph();

  std::set<std::string> init_names;
  for (const auto& t : g.initializer()) init_names.insert(t.name());
  if (g.sparse_initializer_size()) throw ImportError("sparse initializers are not supported");

  leir::DType float_type = leir::DType::F32;
  if (opts.float_type) {
    float_type = *opts.float_type;
  } else {
    for (const auto& in : g.input())
      if (in.type().tensor_type().elem_type() == onnx::TensorProto::DOUBLE) float_type = leir::DType::F64;
    for (const auto& t : g.initializer())
      if (t.data_type() == onnx::TensorProto::DOUBLE) float_type = leir::DType::F64;
  }

  std::set<std::string> outputs;
  std::vector<std::string> output_order;
  for (const auto& o : g.output()) {
    if (o.name().empty()) throw ImportError("a graph output has no name");
    if (outputs.insert(o.name()).second) output_order.push_back(o.name());
  }
  if (outputs.empty()) throw ImportError("the graph has no outputs");
  Importer im(name, float_type, outputs);

  // Graph inputs (those with an initializer of the same name are weights with defaults).
  std::set<std::string> defined = init_names, used_shapes;
  for (const auto& in : g.input()) {
    if (init_names.count(in.name())) continue;
    if (!in.type().has_tensor_type())
      throw ImportError(fmt::format("graph input '{}' is not a tensor; only tensor inputs are supported", in.name()));
    leir::DType dt = dtype_of(in.type().tensor_type().elem_type(), float_type, "graph input '" + in.name() + "'");
    auto decl = declared_shape(in);
    Shape shape;
    if (auto it = opts.shapes.find(in.name()); it != opts.shapes.end()) {
      used_shapes.insert(in.name());
      shape = it->second;
      if (decl && decl->dims.size() != shape.size())
        throw ImportError(fmt::format("--shape {}: the model declares rank {}, got {}", in.name(), decl->dims.size(), shape_text(shape)));
      for (size_t k = 0; decl && k < shape.size(); ++k)
        if (decl->dims[k] > 0 && decl->dims[k] != shape[k])
          throw ImportError(fmt::format("--shape {}: dimension {} is {} in the model, got {}", in.name(), k, decl->dims[k], shape[k]));
    } else {
      if (!decl) throw ImportError(fmt::format("graph input '{}' has no shape: give it with --shape {}=DIMS", in.name(), in.name()));
      for (size_t k = 0; k < decl->dims.size(); ++k) {
        if (decl->dims[k] > 0) {
          shape.push_back(decl->dims[k]);
          continue;
        }
        auto sym = opts.shapes.find(decl->symbols[k]);
        if (decl->symbols[k].empty() || sym == opts.shapes.end() || sym->second.size() != 1)
          throw ImportError(fmt::format("graph input '{}': dimension {} is symbolic ('{}'): give --shape {}=DIMS{}", in.name(), k,
                                        decl->symbols[k], in.name(),
                                        decl->symbols[k].empty() ? "" : " or --shape " + decl->symbols[k] + "=N"));
        used_shapes.insert(decl->symbols[k]);
        shape.push_back(sym->second[0]);
      }
    }
    for (int64_t d : shape)
      if (d <= 0) throw ImportError(fmt::format("graph input '{}' has shape {}: every dimension must be positive", in.name(), shape_text(shape)));
    auto v = std::make_shared<Value>();
    v->dtype = dt;
    v->shape = shape;
    v->onnx_name = in.name();
    v->tensor = "in" + std::to_string(defined.size());
    im.builder().input(v->tensor, shape, dt);
    im.builder().keep_original_name(v->tensor, in.name());
    im.bind(in.name(), v);
    if (!defined.insert(in.name()).second) throw ImportError(fmt::format("graph input '{}' is declared twice", in.name()));
  }
  for (const auto& [key, dims] : opts.shapes)
    if (!used_shapes.count(key))
      throw ImportError(fmt::format("--shape {}: the model has no symbolic input or dimension of that name", key));

  for (const auto& t : g.initializer()) {
    auto v = std::make_shared<Value>();
    std::string where = "initializer '" + t.name() + "'";
    v->dtype = dtype_of(t.data_type(), float_type, where);
    v->shape = tensor_shape(t);
    v->data = tensor_values(t, where);
    v->initializer = true;
    v->onnx_name = t.name();
    im.bind(t.name(), v);
  }

  std::set<std::string> consumed(outputs.begin(), outputs.end());
  for (const auto& n : g.node())
    for (const auto& in : n.input()) consumed.insert(in);
  std::map<std::string, const onnx::ValueInfoProto*> value_info;
  for (const auto& vi : g.value_info()) value_info[vi.name()] = &vi;

  for (int i : topological_order(g, defined)) {
    Node node(g.node(i));
    node.consumed = &consumed;
    const auto& p = node.proto();
    if (!p.domain().empty() && p.domain() != "ai.onnx")
      node.fail(fmt::format("op domain '{}' is not supported (only the default ONNX domain is)", p.domain()));
    auto lowering = op_table().find(p.op_type());
    if (lowering == op_table().end()) node.fail("this op is not supported (docs/import.md lists the covered ops)");
    if (!foldable(im, node) || !fold(im, node, name)) lowering->second(im, node);
    if (auto unread = node.unread(); !unread.empty())
      node.fail(fmt::format("attribute '{}' is not supported", unread.front()));
    for (int k = 0; k < node.num_outputs(); ++k) {
      if (!node.output_used(k)) continue;
      if (!im.bound(p.output(k))) node.fail(fmt::format("output {} ('{}') is not supported", k, p.output(k)));
      if (auto it = value_info.find(p.output(k)); it != value_info.end())
        check_declared(*it->second, *im.value(p.output(k)), "tensor");
    }
  }
  for (const auto& o : g.output()) check_declared(o, *im.value(o.name()), "graph output");
  return im.finish(output_order);
}

}  // namespace

leir::Program import_onnx(std::string_view bytes, const std::string& file, const ImportOptions& options) {
  onnx::ModelProto m;
  if (bytes.size() > static_cast<size_t>(INT32_MAX) || !m.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    throw ImportError(fmt::format("{}: error: not a valid ONNX model (the protobuf does not parse: truncated or not ONNX)", file));
  std::string name = leir::program_name_from_path(file);
  if (name.empty()) name = "model";
  try {
    leir::Program p = import_graph(m, name, options);
    p.file = file;
    // LEIR names are the builder's own; the ONNX names are kept as aliases, which are free text but
    // must be printable (ir/leir/identifiers.h).
    for (const auto& d : p.known)
      if (auto why = leir::alias_problem(d.alias))
        throw ImportError(fmt::format("the ONNX name {} of {} {} cannot be kept as its alias: {}",
                                      leir::quote_text(d.alias), leir::to_string(d.role), d.name, *why));
    return p;
  } catch (const ImportError& e) {
    throw ImportError(fmt::format("{}: error: {}", file, e.what()));
  }
}

leir::Program import_onnx_file(const std::string& path, const ImportOptions& options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ImportError(fmt::format("{}: error: cannot open the file", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return import_onnx(ss.str(), path, options);
}

std::vector<leir::Program> read_programs_any(const std::string& path) {
  if (std::filesystem::path(path).extension() == ".onnx") return {import_onnx_file(path)};
  return leir::read_programs(path);
}

}  // namespace steptp::onnx_import
