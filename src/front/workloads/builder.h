// Writing workload programs in the public translator's style (LEIR.md §1, corpus records).
//
// Names follow the public allocation: tensors A C D E F G H I J K M N O Q R S W X Y Z Aa Ac Ad ...
// (the letters B L P T U V, and b l p t u v as second letters, are never used), loop variables
// tx a c d f g h i j k m n o q r s w x y z within each nest. The public translator names the
// inputs first, then the main chain of results (ending with the output), then parameters and
// constants, then temporaries; a workload reproduces that by declaring in that order.
//
// Statements are written as templates where `$x[i,j]` is the tensor bound to alias `x`, read or
// written at `[i,j]`, and `$s` a scalar; the builder spells out `NAME^{dtype,g}_{i,j}`:
//
//   ProgramBuilder b("matmul");
//   b.input("a", {n, k}); b.input("b", {k, m}); b.output("out", {n, m});
//   b.nest({n, m, k}, "$out[tx,a]=$out[tx,a]+$a[tx,c]*$b[c,a]");
//   leir::Program p = b.finish();
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/leir/ast.h"

namespace steptp::workloads {

// k-th public-style tensor name (0 → "A", 1 → "C", ..., 20 → "Aa", 21 → "Ac").
std::string tensor_name(size_t k);
// k-th loop variable of a nest (0 → "tx", 1 → "a", 2 → "c", 3 → "d", 4 → "f", ...).
std::string index_name(size_t k);
// Python spelling of a real constant ("0.5", "1e-05", "1.0"), as the public code prints numbers.
std::string num(double v);

// While one is alive on this thread, constant and param values are dropped as they are
// declared: a program built only to count its work (bench sizing bisects over dozens of shapes,
// bench_size.h) need not fill and copy tensors of megabytes each time.
class ShapesOnly {
 public:
  ShapesOnly();
  ~ShapesOnly();
  ShapesOnly(const ShapesOnly&) = delete;
  ShapesOnly& operator=(const ShapesOnly&) = delete;
  static bool active();

 private:
  bool outer_;
};

class ProgramBuilder {
 public:
  explicit ProgramBuilder(std::string name, leir::DType float_type = leir::DType::F64);

  // Each call allocates the next public name, binds it to `alias` and returns the name.
  std::string input(const std::string& alias, std::vector<int64_t> shape);
  std::string input(const std::string& alias, std::vector<int64_t> shape, leir::DType dtype);
  std::string param(const std::string& alias, std::vector<int64_t> shape);
  // A param of any dtype that carries its values in the signature (LEIR.md §1).
  std::string param(const std::string& alias, std::vector<int64_t> shape, leir::DType dtype,
                    std::vector<double> value);
  std::string constant(const std::string& alias, std::vector<int64_t> shape,
                       std::vector<double> value, leir::DType dtype);
  std::string constant(const std::string& alias, std::vector<int64_t> shape,
                       std::vector<double> value);
  std::string output(const std::string& alias, std::vector<int64_t> shape);
  std::string output(const std::string& alias, std::vector<int64_t> shape, leir::DType dtype);
  std::string temp(const std::string& alias);  // intermediate of the float type
  std::string temp(const std::string& alias, leir::DType dtype);

  // Expands a statement template (see above); throws std::logic_error on an unknown alias.
  std::string expand(const std::string& tmpl) const;

  // Appends the nest "B^{e0}_{tx=0}L^{e1}_{a=0}...[s1;s2;];" — statements are templates
  // separated by ';' (a trailing ';' is optional).
  void nest(const std::vector<int64_t>& extents, const std::string& stmts);
  // Brace lists of extents ({n}, {n, m}) pick this overload instead of the LoopSpec one.
  void nest(std::initializer_list<int64_t> extents, const std::string& stmts) {
    nest(std::vector<int64_t>(extents), stmts);
  }
  // Appends a nest with explicit loop kinds and variables, e.g. {{'L',2,"a"},{'B',4,"tx"}}.
  struct LoopSpec {
    char kind;
    int64_t extent;
    std::string var;
  };
  void nest(const std::vector<LoopSpec>& loops, const std::string& stmts);
  void nest_loops(const std::vector<LoopSpec>& loops, const std::string& stmts) { nest(loops, stmts); }
  // Appends raw body text after template expansion (for nests nested inside nests).
  void raw(const std::string& tmpl);

  // Records the original (e.g. ONNX graph) name of a known tensor as its signature alias.
  void keep_original_name(const std::string& alias, std::string original);

  leir::DType float_type() const { return float_type_; }
  const std::string& name_of(const std::string& alias) const;

  // Parses the body (throws leir::LeirError if a workload wrote invalid LEIR) and assembles the
  // signature: inputs, then params and constants in allocation order, then outputs.
  leir::Program finish() const;

 private:
  struct Entry {
    std::string name;
    leir::DType dtype;
    bool known;
  };
  std::string allocate(const std::string& alias, leir::DType dtype, bool known, leir::Role role,
                       std::vector<int64_t> shape, std::optional<std::vector<double>> value);
  std::string program_name_;
  leir::DType float_type_;
  size_t next_name_ = 0;
  std::map<std::string, Entry> aliases_;
  std::vector<leir::TensorDecl> known_;  // allocation order
  std::string body_;
};

}  // namespace steptp::workloads
