// The reference interpreter (LEIR.md §3): float64 arithmetic, program order, lazy if_then_else,
// element-wise "unset" tracking with the accumulation rule, bounds checks, and dynamic race
// detection on P/V/B loops. Its result is the meaning of a program.
//
// The AST is compiled once into a flat form (slot-indexed tensors, resolved loop variables,
// precomputed strides) so the hot loop does no string lookups or virtual calls.
//
// Values: arithmetic is float64; a store rounds to the tensor's dtype (f32/f16/bf16 to the nearest
// representable value, integers truncate toward zero, bool stores v != 0), so an f32 program means
// f32 storage; inputs are rounded to their declared dtype the same way. The remaining scalar
// decisions (// and % by zero, pow of a negative base, NaN in max/min and conditions) are
// documented in interp/scalar_ops.h. Compile-time errors (unknown index variables, writes to
// read-only tensors, inconsistent annotations, uninferable shapes) are leir::LeirError.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

#include "base/error.h"
#include "ir/leir/ast.h"
#include "ir/leir/values.h"

namespace steptp::interp {

// A run-time violation: out-of-bounds index, read of an unset element, write to a read-only
// tensor, race on an independent loop, missing/mis-shaped input. what() is a full diagnostic
// "file:line:col: error: ..." naming the access/loop, the tensor and the offending index.
class RuntimeError : public base::Error {
 public:
  explicit RuntimeError(const std::string& what) : base::Error(base::ErrorKind::Invalid, what) {}
};

struct RunOptions {
  bool detect_races = true;  // check P/V/B loop independence on the data actually run
  bool keep_intermediates = false;  // also return intermediates in the result
  // LEIR.md §5: every output element must be set. By default an unset output element is a
  // RuntimeError ("output X element [i,j] was never set"); with this option it is NaN instead.
  bool allow_unset_outputs = false;
};

struct CompiledProgram;  // opaque (ir/interp/bytecode.h)

// Compile once, run many times (the verifier runs each program on several input sets).
class Interpreter {
 public:
  explicit Interpreter(const leir::Program& p);  // throws leir::LeirError if the program is invalid
  ~Interpreter();
  Interpreter(Interpreter&&) noexcept;
  Interpreter& operator=(Interpreter&&) noexcept;

  // `inputs` must hold every input and param (constants come from the signature unless given),
  // with the declared shape and dtype; other entries are ignored. Returns every known output (and
  // intermediates if asked; their unset elements are NaN). Throws RuntimeError.
  leir::TensorMap run(const leir::TensorMap& inputs, const RunOptions& opts = {}) const;

  // Number of statement executions of the last run() (for throughput benchmarks). run() itself
  // is const and may be called from several threads at once; this counter is then the last one.
  uint64_t last_statement_count() const;

 private:
  std::unique_ptr<CompiledProgram> impl_;
};

// Convenience: compile + run once.
leir::TensorMap run_program(const leir::Program& p, const leir::TensorMap& inputs, const RunOptions& opts = {});

}  // namespace steptp::interp
