// The reference interpreter (LEIR.md §3): float64 arithmetic, program order, lazy if_then_else,
// element-wise "unset" tracking with the accumulation rule, bounds checks, and dynamic race
// detection on P/V/B loops. Its result is the meaning of a program.
//
// The AST is compiled once into a flat form (slot-indexed tensors, resolved loop variables,
// precomputed strides) so the hot loop does no string lookups or virtual calls.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

#include "leir/ast.h"
#include "leir/values.h"

namespace steptp::interp {

// A run-time violation: out-of-bounds index, read of an unset element, write to a read-only
// tensor, race on an independent loop, missing/mis-shaped input. what() is a full diagnostic
// "file:line:col: error: ..." naming the access/loop, the tensor and the offending index.
class RuntimeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct RunOptions {
  bool detect_races = true;  // check P/V/B loop independence on the data actually run
  bool keep_intermediates = false;  // also return intermediates in the result
};

class CompiledProgram;  // opaque

// Compile once, run many times (the verifier runs each program on several input sets).
class Interpreter {
 public:
  explicit Interpreter(const leir::Program& p);  // throws leir::LeirError if the program is invalid
  ~Interpreter();
  Interpreter(Interpreter&&) noexcept;
  Interpreter& operator=(Interpreter&&) noexcept;

  // `inputs` must hold every input and param (constants come from the signature unless given).
  // Returns every known output (and intermediates if asked). Unset output elements are NaN in
  // `data` and reported by `unset_outputs`. Throws RuntimeError.
  leir::TensorMap run(const leir::TensorMap& inputs, const RunOptions& opts = {}) const;

  // Number of statement executions of the last run() (for throughput benchmarks).
  uint64_t last_statement_count() const;

 private:
  std::unique_ptr<CompiledProgram> impl_;
};

// Convenience: compile + run once.
leir::TensorMap run_program(const leir::Program& p, const leir::TensorMap& inputs, const RunOptions& opts = {});

}  // namespace steptp::interp
