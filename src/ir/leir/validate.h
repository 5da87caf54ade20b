// Static validation of a LEIR program (LEIR.md §3-4) and the summary facts `steptp check` prints.
//
// What is checked, in this order (each error carries file:line:col of the construct, what it is
// and what would be valid):
//   1. the tensor table (tensors.h): annotation consistency, signature conformance, ranks,
//      intermediate shapes;
//   2. loop variables: every variable used is bound by an enclosing loop, no loop rebinds a
//      variable of an enclosing loop;
//   3. writes to read-only tensors (inputs, constants, params);
//   4. bounds: every access whose subscripts are affine in the loop variables (interval analysis
//      over the loop ranges); data-dependent subscripts (gathers) are checked where they read the
//      index tensor, their value range is a run-time matter;
//   5. reads of unset elements, where decidable soundly (see validate.cc);
//   6. independence of P/V/B loops with the accumulation exception.
// The interpreter re-checks bounds, unset reads and races dynamically on the data it runs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "ir/leir/ast.h"
#include "ir/leir/diagnostic.h"
#include "ir/leir/tensors.h"

namespace steptp::leir {

struct Diagnostic {
  std::string file;
  SourceLoc loc;
  std::string message;

  std::string format() const;  // "file:line:col: error: message"
  LeirError to_error() const;
};

struct IntermediateFact {
  std::string name;
  DType dtype = DType::F64;
  Scope scope = Scope::Global;
  std::vector<int64_t> shape;
};

// Counting rule for `flops`: every arithmetic operator (+ - * / // % ** unary -, comparisons, & |)
// and every call (exp, max, if_then_else, ...) in a statement's right side counts 1, evaluated in
// full (both branches of if_then_else); subscripts count nothing. A statement contributes that
// count times the product of the extents of its enclosing loops. Pure copies count 0.
struct ProgramSummary {
  std::string name;
  int64_t nests = 0;       // loop nests, nested nests included
  int64_t statements = 0;  // statements in the text (not executions)
  std::vector<IntermediateFact> intermediates;  // in order of first occurrence
  double flops = 0;        // estimated arithmetic operations of one run
  double statement_executions = 0;
};

struct ValidationReport {
  std::vector<Diagnostic> errors;  // every error found, in the order the checks meet them
  ProgramSummary summary;          // filled when the tensor table could be built

  bool ok() const { return errors.empty(); }
};

// Collects every error; never throws.
ValidationReport validate_all(const Program& p);
// Throws the first error as a LeirError; returns the summary of a valid program.
ProgramSummary validate(const Program& p);
// The report as `steptp check --json` prints it (and the Python check() returns): {"name",
// "valid", "errors": [{"line", "col", "message"}]} and, when valid, "nests", "statements",
// "flops", "statement_executions", "intermediates": [{"name", "dtype", "scope", "shape"}].
nlohmann::json report_json(const ValidationReport& r);

// Summary facts of a program whose tensor table is known.
ProgramSummary summarize(const Program& p, const TensorTable& table);

}  // namespace steptp::leir
