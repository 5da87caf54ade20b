// steptp import MODEL.onnx [--out PROGRAM.json] [--dtype f32|f64] [--shape NAME=DIMS ...]:
// one LEIR program from an ONNX model (front/onnx/onnx_import.h, docs/import.md). Exit codes: 0
// success, 1 a model that cannot be imported (malformed, unsupported op or attribute, shape
// mismatch; the message names the node, op and attribute), 2 usage errors.
#include <fmt/format.h>

#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "driver/cli/command.h"
#include "driver/cli/output.h"
#include "front/onnx/onnx_import.h"
#include "ir/leir/program_io.h"

namespace steptp::cli {
namespace {

// "x=1,3,224,224" (or 1x3x224x224) → {"x", {1,3,224,224}}; a symbolic dimension: "batch=8".
std::pair<std::string, std::vector<int64_t>> parse_shape(const std::string& arg) {
  size_t eq = arg.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == arg.size())
    throw CLI::ValidationError("--shape", "expected NAME=DIMS (e.g. x=1,3,32,32 or batch=8), got '" + arg + "'");
  std::vector<int64_t> dims;
  std::string rest = arg.substr(eq + 1);
  for (size_t p = 0; p <= rest.size();) {
    size_t q = rest.find_first_of(",x", p);
    std::string part = rest.substr(p, q == std::string::npos ? std::string::npos : q - p);
    size_t used = 0;
    int64_t d = 0;
    try {
      d = std::stoll(part, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != part.size() || part.empty() || d <= 0)
      throw CLI::ValidationError("--shape", "dimensions must be positive integers in '" + arg + "'");
    dims.push_back(d);
    if (q == std::string::npos) break;
    p = q + 1;
  }
  return {arg.substr(0, eq), dims};
}

RegisterCommand import_cmd{{"import", "import an ONNX model as one LEIR program", [](CLI::App& sub) {
  struct Opts {
    std::string model, out, dtype;
    std::vector<std::string> shapes;
  };
  auto o = std::make_shared<Opts>();
  sub.add_option("MODEL", o->model, "ONNX model (.onnx)")->required();
  sub.add_option("--out", o->out, "write the program (JSON, LEIR.md §1) here instead of stdout");
  sub.add_option("--dtype", o->dtype, "float type of the program (default: the model's)")
      ->check(CLI::IsMember({"f32", "f64"}));
  sub.add_option("--shape", o->shapes, "NAME=DIMS: shape of a graph input (x=1,3,32,32) or value of a symbolic dimension (batch=8); repeatable");
  return [o]() -> int {
    onnx_import::ImportOptions opts;
    if (!o->dtype.empty()) opts.float_type = *leir::parse_dtype(o->dtype);
    for (const auto& s : o->shapes) {
      std::pair<std::string, std::vector<int64_t>> parsed;
      try {
        parsed = parse_shape(s);
      } catch (const CLI::ValidationError& e) {
        std::cerr << "steptp import: " << e.what() << "\n";
        return 2;
      }
      if (!opts.shapes.emplace(parsed).second) {
        std::cerr << "steptp import: --shape " << parsed.first << " is given twice\n";
        return 2;
      }
    }
    leir::Program p;
    try {
      p = onnx_import::import_onnx_file(o->model, opts);
    } catch (const onnx_import::ImportError& e) {
      std::cerr << e.what() << "\n";
      return base::exit_code(e.kind());
    }
    write_result(o->out, leir::program_to_json(p).dump() + "\n");
    return 0;
  };
}}};

}  // namespace
}  // namespace steptp::cli
