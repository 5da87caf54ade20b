// Test helpers: load programs, and check that a transformed program is equivalent to its input
// by running both in the reference interpreter on several seeded input sets (LEIR.md §5).
#pragma once

#include <string>
#include <vector>

#include "transform/equivalence.h"
#include "ir/leir/ast.h"
#include "ir/leir/parser.h"
#include "ir/leir/program_io.h"

namespace steptp::testing {

using strategies::Equivalence;
inline Equivalence check_equivalent(const leir::Program& a, const leir::Program& b) {
  return strategies::check_equivalent(a, b);
}

inline std::string shared_path(const std::string& rel) { return std::string(STEPTP_SHARED_DIR) + "/" + rel; }

inline std::vector<leir::Program> examples() {
  std::vector<leir::Program> out;
  for (const char* n : {"argmax", "conv2d_pad1", "gelu", "gemm_multiply_leakyrelu", "layernorm", "matmul",
                        "maxpool2d", "nll_loss_mean", "online_softmax", "softmax"})
    for (auto& p : leir::read_programs(shared_path("examples/" + std::string(n) + ".json"))) out.push_back(std::move(p));
  return out;
}

// A program from declarations + body text (the .leir form).
inline leir::Program program(const std::string& text) { return leir::program_from_text(text, "test.leir"); }

}  // namespace steptp::testing
