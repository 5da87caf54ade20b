// Models of the workload suite, exported from PyTorch to ONNX, import and compute what ONNX
// Runtime computes.
//
// Every level-1 and level-2 workload is emitted at `tiny` size (seed 1); its PyTorch reference
// (Workload::torch_reference) is wrapped as a module (inputs → graph inputs "in_<NAME>", params
// and constants → buffers, i.e. initializers) and exported with Debian's torch.onnx.export at
// opset 17, in float64 and float32 (tests/import/export_models.py). ONNX Runtime (PyPI, in
// .venv-onnx) runs the float64 model, or the float32 one where it lacks a float64 kernel
// (tests/import/ort_run.py). The importer's program runs in the interpreter on the same inputs,
// given by their ONNX names, and must agree within the verifier's tolerance of the model's float
// type (f64: 1e-9 relative; f32: 1e-4). Models the exporter refuses and models the importer
// refuses are counted with their reasons (printed, and written to BINARY_DIR/tmp/onnx_import/
// summary.json); a refusal must be an ImportError naming the node and op, never a crash or a
// wrong result.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <nlohmann/json.hpp>
#include <onnx/onnx_pb.h>

#include "front/onnx/onnx_import.h"
#include "ir/interp/inputs.h"
#include "ir/interp/interpreter.h"
#include "ir/leir/values.h"
#include "ir/verify/verifier.h"
#include "workloads/torch_harness.h"

namespace steptp::onnx_import {
namespace {

namespace fs = std::filesystem;

std::vector<nlohmann::json> read_jsonl(const fs::path& p) {
  std::vector<nlohmann::json> out;
  std::ifstream in(p);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(nlohmann::json::parse(line));
  return out;
}

// Worst tolerance violation between the interpreter's output and ONNX Runtime's ("" if none).
std::string compare(const std::string& name, const leir::TensorValue& got, const leir::TensorValue& want,
                    leir::DType float_type) {
  if (got.shape != want.shape)
    return fmt::format("{}: shape [{}] vs ONNX Runtime [{}]", name, fmt::join(got.shape, ","), fmt::join(want.shape, ","));
  verify::Tolerance tol = verify::tolerance_for(leir::is_floating(got.dtype) ? float_type : got.dtype);
  // The absolute term scales with max(1, max|y|): an output that cancels to about zero (a loss
  // of 1 - cos) carries the rounding of its O(1) terms.
  double scale = 1.0;
  for (double y : want.data)
    if (std::isfinite(y)) scale = std::max(scale, std::fabs(y));
  for (size_t i = 0; i < got.data.size(); ++i) {
    double x = got.data[i], y = want.data[i];
    bool ok = std::isnan(x) || std::isnan(y) ? std::isnan(x) && std::isnan(y)
              : std::isinf(x) || std::isinf(y) ? x == y
                                               : std::fabs(x - y) <= tol.atol_scale * scale + tol.rtol * std::fabs(y);
    if (!ok) return fmt::format("{}[{}]: LEIR {} vs ONNX Runtime {}", name, i, x, y);
  }
  return {};
}

struct Tally {
  int cases = 0, exported = 0, ort_ran = 0, agreed = 0;
  std::map<std::string, std::vector<std::string>> refused;  // reason → cases
  std::set<std::string> imported, export_refused;
  std::vector<std::string> mixed_precision;
};

bool casts_to_float32(const std::string& path) {
  onnx::ModelProto m;
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(m.ParseFromIstream(&in)) << path;
  for (const auto& n : m.graph().node())
    if (n.op_type() == "Cast")
      for (const auto& a : n.attribute())
        if (a.name() == "to" && a.i() == onnx::TensorProto::FLOAT) return true;
  return false;
}

// Exports every case of `cases_path` (tests/import/export_models.py), runs ONNX Runtime on it,
// imports the model and compares; summary in DIR/summary.json and on stdout.
Tally check_cases(const fs::path& dir, const fs::path& cases_path) {
  fs::path status_path = dir / "export.jsonl", ort_path = dir / "ort.jsonl";
  std::string src = STEPTP_SOURCE_DIR;
  std::string py_ort = src + "/.venv-onnx/bin/python3";
  EXPECT_TRUE(fs::exists(py_ort)) << py_ort << " is missing: run scripts/deps-test.sh";
  EXPECT_EQ(std::system(fmt::format("/usr/bin/python3 {}/tests/import/export_models.py {} {}", src, cases_path.string(),
                                    status_path.string()).c_str()), 0);
  EXPECT_EQ(std::system(fmt::format("{} {}/tests/import/ort_run.py {} {}", py_ort, src, cases_path.string(),
                                    ort_path.string()).c_str()), 0);
  Tally t;
  std::map<std::string, nlohmann::json> ort, cases;
  for (auto& r : read_jsonl(ort_path)) ort[r["id"]] = r;
  for (auto& r : read_jsonl(cases_path)) cases[r["id"]] = r;
  for (const auto& s : read_jsonl(status_path)) {
    std::string id = s["id"];
    ++t.cases;
    if (s.contains("error")) {
      t.refused["torch.onnx.export: " + s["error"].get<std::string>()].push_back(id);
      t.export_refused.insert(id);
      continue;
    }
    ++t.exported;
    const auto& o = ort.at(id);
    if (o.contains("error")) {
      t.refused["onnxruntime: " + o["error"].get<std::string>()].push_back(id);
      continue;
    }
    ++t.ort_ran;
    std::string model = o["model"];
    leir::Program p;
    try {
      p = import_onnx_file(model);
    } catch (const ImportError& e) {
      std::string why = e.what();
      why = why.substr(why.find("error: ") + 7);
      // Group refusals by the op and reason, without node names.
      size_t open = why.find("' (");
      t.refused["import: " + (open == std::string::npos ? why : why.substr(open + 2))].push_back(id);
      continue;
    }
    t.imported.insert(id);
    leir::DType float_type = model.ends_with("f64.onnx") ? leir::DType::F64 : leir::DType::F32;
    // A float64 model that casts to float32 inside (the exporter does, e.g. around its
    // SoftmaxCrossEntropyLoss) computes those parts in float32 in ONNX Runtime, while the importer
    // computes every float in the program's float type: held to the float32 tolerance.
    leir::DType compare_type = float_type == leir::DType::F64 && casts_to_float32(model) ? leir::DType::F32 : float_type;
    if (compare_type != float_type) t.mixed_precision.push_back(id);
    // Graph inputs keyed by their ONNX names ("in_A"): the values-file alias path of `steptp run`.
    leir::TensorMap by_onnx_name;
    const auto& rec = cases.at(id);
    leir::TensorMap values = leir::values_from_json(rec["inputs"]);
    for (const auto& k : rec["known"])
      if (k["role"] == "input") {
        leir::TensorValue v = values.at(k["name"]);
        if (leir::is_floating(v.dtype)) v.dtype = float_type;  // the interpreter rounds the values to it
        by_onnx_name["in_" + k["name"].get<std::string>()] = v;
      }
    leir::TensorMap outs;
    try {
      outs = interp::Interpreter(p).run(leir::key_by_name(p, by_onnx_name));
    } catch (const std::exception& e) {
      ADD_FAILURE() << id << " (" << model << "): the imported program fails to run: " << e.what();
      continue;
    }
    leir::TensorMap want = leir::values_from_json(o["outputs"]);
    std::string bad;
    for (const auto& d : p.known)
      if (d.role == leir::Role::Output && bad.empty()) {
        auto it = want.find(d.alias);
        if (it == want.end()) bad = "ONNX Runtime has no output " + d.alias;
        else bad = compare(d.alias, outs.at(d.name), it->second, compare_type);
      }
    if (bad.empty()) ++t.agreed;
    else ADD_FAILURE() << id << " (" << model << "): " << bad;
  }
  nlohmann::json summary = {{"cases", t.cases}, {"exported", t.exported}, {"onnxruntime_ran", t.ort_ran},
                            {"imported", t.imported.size()}, {"agreed", t.agreed}, {"refused", t.refused},
                            {"f64_models_held_to_f32_tolerance", t.mixed_precision}};
  std::ofstream(dir / "summary.json") << summary.dump(1) << "\n";
  std::cout << summary.dump(1) << "\n";
  EXPECT_EQ(t.agreed, static_cast<int>(t.imported.size()));
  return t;
}

fs::path test_dir(const std::string& name) {
  fs::path dir = fs::path(STEPTP_BINARY_DIR) / "tmp" / name;
  fs::create_directories(dir);
  return dir;
}

TEST(OnnxImport, WorkloadsMatchOnnxRuntime) {
  fs::path dir = test_dir("onnx_import");
  {
    std::ofstream out(dir / "cases.jsonl");
    for (const auto& w : workloads::all_workloads()) {
      if (w.level > 2) continue;
      auto hv = workloads::sample_hyper(w, 1, workloads::SizeClass::Tiny);
      leir::Program p = workloads::emit(w, hv);
      leir::TensorMap inputs = workloads::harness::torch_inputs(p, interp::generate_inputs(p, 1));
      nlohmann::json known = nlohmann::json::array();
      for (const auto& d : p.known) known.push_back({{"name", d.name}, {"role", std::string(leir::to_string(d.role))}});
      out << nlohmann::json{{"id", w.name}, {"source", w.torch_reference}, {"hp", hv}, {"known", known},
                            {"inputs", leir::values_to_json(inputs)}, {"dir", (dir / w.name).string()}}
                 .dump()
          << "\n";
    }
  }
  Tally t = check_cases(dir, dir / "cases.jsonl");
  // Every level-1 family imports at least one model; at least 40 level-2 chains import. (A family
  // whose every model the exporter refuses is reported, not failed: the optimizer steps use
  // aten::addcdiv and gru_cell aten::uniform, which torch 1.13 cannot export.)
  std::map<std::string, int> exportable, imported;
  int level_two = 0;
  for (const auto& w : workloads::all_workloads()) {
    if (w.level == 1 && !t.export_refused.count(w.name)) ++exportable[w.family];
    if (w.level == 1 && t.imported.count(w.name)) ++imported[w.family];
    if (w.level == 2 && t.imported.count(w.name)) ++level_two;
  }
  for (const auto& [family, n] : exportable) EXPECT_GT(imported[family], 0) << family;
  EXPECT_GE(level_two, 40);
  std::cout << "level-1 models imported per family: " << nlohmann::json(imported).dump() << "; level-2: " << level_two
            << "\n";
}

// Modules for the ops the suite does not reach (tests/import/op_cases.py).
TEST(OnnxImport, OpCasesMatchOnnxRuntime) {
  fs::path dir = test_dir("onnx_import_ops");
  ASSERT_EQ(std::system(fmt::format("/usr/bin/python3 {}/tests/import/op_cases.py {} {}", STEPTP_SOURCE_DIR,
                                    dir.string(), (dir / "cases.jsonl").string()).c_str()), 0);
  Tally t = check_cases(dir, dir / "cases.jsonl");
  EXPECT_GE(t.agreed, 40);
}

}  // namespace
}  // namespace steptp::onnx_import
