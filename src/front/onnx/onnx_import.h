// `steptp import`: ONNX models (opsets 13-18, read with the ONNX protobuf library) into one LEIR
// program in the public translator's style (LEIR.md §1): graph inputs become `input`s,
// initializers `param`s carrying their values, graph outputs `output`s, and every known tensor
// keeps its ONNX name as its alias. Shapes are static; symbolic dimensions are fixed by
// ImportOptions::shapes. Coverage and lowering rules: docs/import.md.
#pragma once

#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "ir/leir/ast.h"

namespace steptp::onnx_import {

// Any reason a model cannot be imported (malformed file, unsupported op or attribute, shape
// mismatch); what() names the file, and the node, op and attribute where one is at fault.
class ImportError : public base::Error {
 public:
  explicit ImportError(const std::string& what) : base::Error(base::ErrorKind::Invalid, what) {}
};

struct ImportOptions {
  // Float type of the program; default: the model's (float64 models → f64, all others f32).
  std::optional<leir::DType> float_type;
  // Shapes of graph inputs by ONNX name, or the value of a symbolic dimension by its name.
  std::map<std::string, std::vector<int64_t>> shapes;
};

// `bytes` is a serialized ModelProto; `file` names it in errors and gives the program its name.
leir::Program import_onnx(std::string_view bytes, const std::string& file, const ImportOptions& options = {});
leir::Program import_onnx_file(const std::string& path, const ImportOptions& options = {});

// Every program reader's entry point: `.onnx` files are imported with default options, anything
// else goes to leir::read_programs (.json, .jsonl, .leir).
std::vector<leir::Program> read_programs_any(const std::string& path);

}  // namespace steptp::onnx_import
