// Internal to src/front/onnx: the state of one ONNX → LEIR import and the helpers every op family
// uses (values and views, attribute access with "unsupported attribute" detection, broadcasting,
// nest emission through workloads::ProgramBuilder).
//
// A Value is what an ONNX tensor name stands for. It is either
//  * a LEIR tensor (`tensor` = its builder alias: input, param, constant, output or temp),
//  * data known at import time (`data`: initializers, Constant nodes, folded shape arithmetic),
//    declared in the signature only when a nest reads it (splat data is read as a literal), or
//  * a view of another value (`base` + `map`): Transpose, Reshape, Squeeze, Slice, Expand, ...
//    cost no nest; a read of the view reads the base at mapped subscripts.
#pragma once

#include <onnx/onnx_pb.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "front/onnx/onnx_import.h"
#include "ir/leir/ast.h"
#include "front/workloads/builder.h"

namespace steptp::onnx_import {

using Index = std::vector<leir::ExprPtr>;
using Shape = std::vector<int64_t>;

struct Value;
using ValuePtr = std::shared_ptr<const Value>;

struct Value {
  leir::DType dtype = leir::DType::F32;
  Shape shape;
  std::optional<std::vector<double>> data;
  bool initializer = false;  // data from a graph initializer: declared as a param
  std::string tensor;        // builder alias once it lives in a LEIR tensor
  std::string onnx_name;
  ValuePtr base;                            // view: reads go to base at map(index)
  std::function<Index(const Index&)> map;

  int64_t numel() const;
  bool is_view() const { return base != nullptr; }
};

// One node with its attributes; every attribute an op reads is marked, and the importer rejects
// a node that carries any attribute its op did not read (so none is ever silently ignored).
class Node {
 public:
  explicit Node(const onnx::NodeProto& p) : proto_(p) {}
  const onnx::NodeProto& proto() const { return proto_; }
  const std::string& op() const { return proto_.op_type(); }
  std::string where() const;  // "node 'conv1' (Conv)"
  [[noreturn]] void fail(const std::string& message) const;
  [[noreturn]] void unsupported(const std::string& attribute, const std::string& value) const;

  bool has(const std::string& name) const;
  int64_t i(const std::string& name, int64_t fallback) const;
  double f(const std::string& name, double fallback) const;
  std::string s(const std::string& name, const std::string& fallback) const;
  std::vector<int64_t> ints(const std::string& name, std::vector<int64_t> fallback = {}) const;
  std::vector<double> floats(const std::string& name) const;
  const onnx::TensorProto* tensor(const std::string& name) const;
  // Attributes present but never read.
  std::vector<std::string> unread() const;

  // Inputs and outputs: a trailing or empty name means "absent" (ONNX optional inputs).
  bool has_input(int k) const;
  int num_outputs() const { return proto_.output_size(); }
  bool output_used(int k) const;  // named (set by the importer from the graph's consumers)
  std::set<std::string>* consumed = nullptr;

 private:
  const onnx::AttributeProto* attr(const std::string& name) const;
  const onnx::NodeProto& proto_;
  mutable std::set<std::string> read_;
};

class Importer {
 public:
  Importer(std::string program_name, leir::DType float_type, std::set<std::string> graph_outputs);

  leir::DType float_type() const { return builder_.float_type(); }
  workloads::ProgramBuilder& builder() { return builder_; }

  // Values by ONNX name.
  void bind(const std::string& onnx_name, ValuePtr v);
  bool bound(const std::string& onnx_name) const { return values_.count(onnx_name) > 0; }
  ValuePtr value(const std::string& onnx_name) const;
  ValuePtr input(const Node& n, int k) const;  // fails naming the node if absent
  // An input that must be known at import time (shape, axes, pads ...), as integers.
  std::vector<int64_t> ints(const Node& n, int k) const;
  std::optional<double> scalar(const Node& n, int k) const;  // absent → nullopt; must be known data

  // A new LEIR tensor for output `k` of `n`: an `output` when the graph exposes it, else a temp.
  ValuePtr result(const Node& n, int k, leir::DType dtype, Shape shape);
  // An intermediate with no ONNX name (partial sums, maxima of a softmax ...).
  ValuePtr scratch(leir::DType dtype, Shape shape);
  // A view of `base` as output `k` of `n`.
  void view(const Node& n, int k, ValuePtr base, Shape shape, std::function<Index(const Index&)> map);
  // Data known at import time as output `k` of `n`.
  void known(const Node& n, int k, leir::DType dtype, Shape shape, std::vector<double> data);
  // Data known at import time with no ONNX name (index tables of Gather, Pad, Resize).
  static ValuePtr table(leir::DType dtype, Shape shape, std::vector<double> data);

  // Text of a read of `v` at `idx` ("D^{f32,g}_{tx,a}", a literal, or the view's base at mapped subscripts).
  std::string at(const ValuePtr& v, const Index& idx);
  // `v` read at `idx` as an expression node (for data-dependent subscripts: Gather, Pad, Resize).
  leir::ExprPtr access(const ValuePtr& v, const Index& idx);
  // `v` read inside a nest over `out_rank` loops tx,a,c,...: numpy broadcasting, right-aligned.
  std::string at_broadcast(const ValuePtr& v, size_t out_rank);
  // Writes `rhs` (a template) to every element of `out`: one nest over its shape.
  void fill(const ValuePtr& out, const std::string& rhs);
  void nest(const Shape& extents, const std::string& stmts);

  // Makes sure every graph output lives in an `output` tensor (copying views and data), records
  // ONNX names as aliases and returns the program.
  leir::Program finish(const std::vector<std::string>& graph_output_order);

 private:
  std::string materialize(const ValuePtr& v);
  workloads::ProgramBuilder builder_;
  std::set<std::string> graph_outputs_;
  std::map<std::string, ValuePtr> values_;
  // Data values declared as param/constant (held, so that an address is never reused).
  std::map<const Value*, std::pair<ValuePtr, std::string>> declared_;
  std::vector<std::pair<std::string, std::string>> originals_;  // builder alias → ONNX name
  size_t next_alias_ = 0;
};

// Loop variable k of a nest (tx, a, c, ...) as an expression, and the list for a whole nest.
leir::ExprPtr var(size_t k);
Index vars(size_t count, size_t first = 0);
// Integer index arithmetic with the obvious simplifications (x+0, x*1, x//1, 0*x ...).
leir::ExprPtr iadd(leir::ExprPtr a, leir::ExprPtr b);
leir::ExprPtr isub(leir::ExprPtr a, leir::ExprPtr b);
leir::ExprPtr imul(leir::ExprPtr a, int64_t c);
leir::ExprPtr idiv(leir::ExprPtr a, int64_t c);
leir::ExprPtr imod(leir::ExprPtr a, int64_t c);
leir::ExprPtr iconst(int64_t c);
std::string text(const leir::ExprPtr& e);  // printed expression
std::string joined(const Index& idx);      // "tx,a,c"

// Integer value of known data (saturating: INT64_MAX, Slice's "to the end", does not survive
// the trip through double).
int64_t to_int(double x);
// Fails naming the node unless every dim is positive and the element count is sane.
void check_shape(const Node& n, const Shape& shape);
// Fails naming the node and `what` unless every value is within ±2^31 (so that window, padding
// and repeat arithmetic cannot overflow).
void check_small(const Node& n, const std::vector<int64_t>& values, const std::string& what);
// Broadcast of shapes (numpy rules); fails naming the node on a mismatch.
Shape broadcast(const Node& n, const std::vector<Shape>& shapes);
int64_t numel(const Shape& s);
std::string shape_text(const Shape& s);  // "[2,3]"
// Normalizes a possibly negative axis against `rank`, failing naming the node and attribute.
int64_t axis(const Node& n, int64_t a, size_t rank, const std::string& what);
// Float literal in the public spelling ("0.5", "1e-05"; negative values parenthesized).
std::string lit(double v);

// LEIR dtype of an ONNX element type under the program's float type.
leir::DType dtype_of(int32_t onnx_type, leir::DType float_type, const std::string& where);
// Flat values of a TensorProto (raw or typed fields); fails on external data or a wrong count.
std::vector<double> tensor_values(const onnx::TensorProto& t, const std::string& where);
Shape tensor_shape(const onnx::TensorProto& t);

// Op families register their lowerings here (one function per family, called by model.cc).
using Lowering = std::function<void(Importer&, const Node&)>;
using OpTable = std::map<std::string, Lowering>;
void add_elementwise_ops(OpTable& t);
void add_linear_ops(OpTable& t);
void add_conv_ops(OpTable& t);
void add_norm_ops(OpTable& t);
void add_reduce_ops(OpTable& t);
void add_shape_ops(OpTable& t);

}  // namespace steptp::onnx_import
