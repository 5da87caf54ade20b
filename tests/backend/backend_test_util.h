// Shared helpers of the backend tests: the example and corpus programs of shared/, element-wise
// comparison with LEIR.md §5 semantics, and a per-test temporary kernel cache.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ir/leir/program_io.h"
#include "ir/leir/tensors.h"
#include "ir/leir/types.h"
#include "ir/leir/values.h"
#include "ir/verify/verifier.h"

namespace steptp::backend::testing {

struct CorpusCase {
  leir::Program program;
  leir::TensorMap inputs;    // stored inputs (corpus) or empty (examples)
  leir::TensorMap expected;  // PyTorch outputs (corpus) or empty
  std::string note;          // corpus caveat (LEIR differs from PyTorch on purpose)
};

inline std::string shared_dir() { return STEPTP_SHARED_DIR; }

inline std::vector<CorpusCase> example_cases() {
  std::vector<CorpusCase> out;
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(shared_dir() + "/examples"))
    if (e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const auto& f : files)
    for (auto& p : leir::read_programs(f.string())) out.push_back({std::move(p), {}, {}, {}});
  return out;
}

inline std::vector<CorpusCase> corpus_cases() {
  std::vector<CorpusCase> out;
  std::string path = shared_dir() + "/corpus/public_translator_sample.jsonl";
  std::ifstream in(path);
  std::string line;
  uint32_t n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty()) continue;
    auto j = nlohmann::json::parse(line);
    CorpusCase c;
    c.program = leir::program_from_json(j, path, n, line);
    c.inputs = leir::values_from_json(j["inputs"], path);
    c.expected = leir::values_from_json(j["pytorch_output"], path);
    if (j.contains("note")) c.note = j["note"].get<std::string>();
    out.push_back(std::move(c));
  }
  return out;
}

// |x - y| <= atol + rtol*|y|, NaN == NaN, infinities only equal to themselves. Returns "" when
// every element agrees, else a description of the worst element.
inline std::string compare_values(const leir::TensorMap& got, const leir::TensorMap& want, double atol, double rtol) {
  for (const auto& [name, w] : want) {
    auto it = got.find(name);
    if (it == got.end()) return fmt::format("output {} missing", name);
    const auto& g = it->second;
    if (g.data.size() != w.data.size()) return fmt::format("{}: {} elements, expected {}", name, g.data.size(), w.data.size());
    double worst = 0;
    size_t worst_i = 0;
    bool bad = false;
    for (size_t i = 0; i < w.data.size(); ++i) {
      double x = g.data[i], y = w.data[i];
      if (std::isnan(x) && std::isnan(y)) continue;
      if (std::isinf(y) || std::isinf(x)) {
        if (x != y) return fmt::format("{}[{}] = {}, expected {}", name, i, x, y);
        continue;
      }
      double excess = std::abs(x - y) - (atol + rtol * std::abs(y));
      if (std::isnan(x) != std::isnan(y) || excess > 0) {
        if (!bad || std::isnan(excess) || excess > worst) worst = excess, worst_i = i;
        bad = true;
      }
    }
    if (bad) return fmt::format("{}[{}] = {}, expected {}", name, worst_i, g.data[worst_i], w.data[worst_i]);
  }
  return "";
}

// The verifier's element rule (LEIR.md §5, ir/verify/verifier.h): |x - y| <= atol + rtol*|y| with
// atol = atol_scale * max|y| over the tensor, NaN == NaN, infinities only equal to themselves.
// `tol` is the loosest per-dtype tolerance of the program (program_tolerance): an all-f64 build
// keeps f32 intermediates in f64 where the interpreter rounds them, so a program with any f32
// tensor is held to the f32 tolerance. Returns "" when every element agrees, else the worst one.
inline verify::Tolerance program_tolerance(const leir::Program& p) {
  verify::Tolerance t = verify::tolerance_for(leir::DType::F64);
  for (const auto& [name, info] : leir::build_tensor_table(p).tensors) {
    auto u = verify::tolerance_for(info.dtype);
    t.rtol = std::max(t.rtol, u.rtol), t.atol_scale = std::max(t.atol_scale, u.atol_scale);
  }
  return t;
}

inline std::string compare_section5(const leir::TensorMap& got, const leir::TensorMap& want, verify::Tolerance tol) {
  for (const auto& [name, w] : want) {
    auto it = got.find(name);
    if (it == got.end()) return fmt::format("output {} missing", name);
    const auto& g = it->second;
    if (g.data.size() != w.data.size()) return fmt::format("{}: {} elements, expected {}", name, g.data.size(), w.data.size());
    double scale = 0;
    for (double y : w.data)
      if (std::isfinite(y)) scale = std::max(scale, std::abs(y));
    double atol = tol.atol_scale * scale, rtol = tol.rtol;
    if (!leir::is_floating(w.dtype)) atol = rtol = 0;  // integer and bool outputs: exact
    for (size_t i = 0; i < w.data.size(); ++i) {
      double x = g.data[i], y = w.data[i];
      if (std::isnan(x) && std::isnan(y)) continue;
      bool ok = (std::isinf(x) || std::isinf(y)) ? x == y : std::abs(x - y) <= atol + rtol * std::abs(y);
      if (!ok) return fmt::format("{}[{}] = {}, expected {} (atol {:g}, rtol {:g})", name, i, x, y, atol, rtol);
    }
  }
  return "";
}

// A fresh kernel cache directory under the build tree, removed at scope exit.
struct TempDir {
  std::string path;
  explicit TempDir(const std::string& tag) {
    path = fmt::format("{}/test-tmp/{}-{}", STEPTP_BINARY_DIR, tag, ::getpid());
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

}  // namespace steptp::backend::testing
