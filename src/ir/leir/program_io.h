// Reading and writing whole programs: the JSON/JSONL form with its `known` signature and the
// `.leir` text form (LEIR.md §1).
//
// .leir text form, as this project defines the parts LEIR.md leaves open:
//   name matmul                       optional; default: the file name without extension (with
//                                     characters outside the program-name set as '_')
//   input  A: f64[512,1024]           role NAME: dtype[dims]   ([] = scalar)
//   constant F: f64[] = [2.0]         constants may carry values, flat, row-major
//   param  G: f64[16,32] as "gemm.weight"   optional alias, a JSON string literal (escapes allowed)
// Names follow ir/leir/identifiers.h in both forms.
//   <body>                            everything from the first line that is not a declaration
// '#' starts a comment to the end of the line anywhere.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "ir/leir/ast.h"

namespace steptp::leir {

// `raw` is the record's text if available (lets errors inside "leir" point at the true file
// line and column); `line` is the record's first line in `file`.
Program program_from_json(const nlohmann::json& j, const std::string& file = {}, uint32_t line = 1,
                          std::string_view raw = {});
Program program_from_text(std::string_view text, const std::string& file = {});

// Reads .json (one object), .jsonl (one object per non-empty line) or .leir (anything else that
// does not start with '{'). Throws LeirError with file:line:col on any problem.
std::vector<Program> read_programs(const std::string& path);

nlohmann::json program_to_json(const Program& p);
std::string program_to_text(const Program& p, bool pretty = true);
std::string signature_line(const TensorDecl& d);  // "input  A: f64[512,1024]"

}  // namespace steptp::leir
