// Programs and requests shared by the service tests.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "ir/leir/printer.h"
#include "ir/leir/program_io.h"

namespace steptp::serve::testing {

using nlohmann::json;

inline std::string matmul() {
  return leir::program_to_text(leir::read_programs(std::string(STEPTP_SHARED_DIR) + "/examples/matmul.json").at(0));
}

// The matmul with its reduction turned into a subtraction: valid, not equivalent.
inline std::string wrong_matmul() {
  std::string s = matmul();
  s.replace(s.find("+A"), 2, "-A");
  return s;
}

inline const char* kInvalidLeir = "input A: f64[4]\noutput B: f64[4]\nL^{4}_{i=0}[B^{f64,g}_{i}=A^{f64,g}_{q};];";

inline json matmul_context() { return {{"root_program", matmul()}, {"parent_program", matmul()}}; }

// An action answer the dataset could teach: parallelize matmul's loop a.
inline std::string parallel_answer() {
  return "<think>loop a is independent</think><answer>{\"strategy\":\"loop_parallelization\",\"site\":0}</answer>";
}

inline std::string peaks_cache() { return std::string(STEPTP_BINARY_DIR) + "/serve_test_peaks.json"; }

}  // namespace steptp::serve::testing
