// Helpers shared by the interpreter tests: programs from .leir text, tensor values, captured errors.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "ir/interp/interpreter.h"
#include "ir/leir/diagnostic.h"
#include "ir/leir/program_io.h"
#include "ir/leir/values.h"

namespace steptp::interp_test {

inline leir::Program program(std::string_view text, const std::string& file = "t.leir") {
  return leir::program_from_text(text, file);
}

inline leir::TensorValue tensor(leir::DType dtype, std::vector<int64_t> shape, std::vector<double> data) {
  leir::TensorValue v;
  v.dtype = dtype;
  v.shape = std::move(shape);
  v.data = std::move(data);
  return v;
}

inline leir::TensorValue f64(std::vector<int64_t> shape, std::vector<double> data) {
  return tensor(leir::DType::F64, std::move(shape), std::move(data));
}

// Runs the program text on `inputs` and returns the data of output `out`.
inline std::vector<double> run_output(std::string_view text, const leir::TensorMap& inputs, const std::string& out,
                                      const interp::RunOptions& opts = {}) {
  auto result = interp::run_program(program(text), inputs, opts);
  return result.at(out).data;
}

// The diagnostic of a LeirError or RuntimeError thrown by `f` ("" and a test failure if none).
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const leir::LeirError& e) {
    return e.what();
  } catch (const interp::RuntimeError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an error, none was thrown";
  return {};
}

// "FILE:LINE:COL" of the `nth` occurrence (0-based) of `needle` in `text`, computed from the
// source text itself (1-based lines and columns).
inline std::string position_of(std::string_view text, std::string_view needle, const std::string& file = "t.leir",
                               int nth = 0) {
  size_t at = text.find(needle);
  for (int i = 0; i < nth && at != std::string_view::npos; ++i) at = text.find(needle, at + 1);
  if (at == std::string_view::npos) {
    ADD_FAILURE() << "'" << needle << "' not in the program text";
    return {};
  }
  int line = 1;
  size_t line_start = 0;
  for (size_t i = 0; i < at; ++i)
    if (text[i] == '\n') ++line, line_start = i + 1;
  return file + ":" + std::to_string(line) + ":" + std::to_string(at - line_start + 1);
}

}  // namespace steptp::interp_test
