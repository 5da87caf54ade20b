// Lowers test programs with the CUDA backend and keeps the tally both CUDA tests report: how many
// lowered, how many were rejected and why (a table of reasons with numbers masked), and the
// lowered code in translation units of at most `per_tu` programs (each starts with the prelude),
// so nvcc compiles the suite in a few calls.
#pragma once

#include <cctype>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "lower/cuda/cuda_codegen.h"
#include "ir/leir/diagnostic.h"
#include "suite.h"

namespace steptp::backend::testing {

struct CudaLowering {
  int lowered = 0, rejected = 0;
  std::vector<std::string> rejections;       // "label: message"
  std::vector<std::string> bad_rejections;   // a rejection without the target's reason prefix
  std::map<std::string, int> reasons;        // message with digits masked -> count
  std::vector<std::string> units;            // translation units of lowered code
};

inline std::string mask_digits(const std::string& s) {
  std::string out;
  for (char ch : s)
    if (!std::isdigit(static_cast<unsigned char>(ch))) out += ch;
    else if (out.empty() || out.back() != 'N') out += 'N';
  return out;
}

inline CudaLowering lower_cuda(const std::vector<SuiteProgram>& programs, size_t per_tu = 1000000) {
  CudaLowering r;
  size_t in_unit = per_tu;
  for (size_t i = 0; i < programs.size(); ++i) {
    const auto& p = programs[i].program;
    try {
      auto src = cuda::generate_cuda(p, fmt::format("steptp_p{}", i));
      if (in_unit >= per_tu) r.units.emplace_back(cuda::cuda_prelude()), in_unit = 0;
      r.units.back() += fmt::format("// ---- {} ----\n", programs[i].label()) + src.code;
      ++in_unit;
      ++r.lowered;
    } catch (const leir::LeirError& e) {
      ++r.rejected;
      std::string why = e.message();
      const std::string prefix = "cuda target rejects the program: ";
      // A reason must be there and say something beyond the prefix.
      if (why.rfind(prefix, 0) != 0 || why.size() < prefix.size() + 20) r.bad_rejections.push_back(programs[i].label() + ": " + why);
      r.rejections.push_back(programs[i].label() + ": " + why);
      ++r.reasons[mask_digits(why.substr(std::min(why.size(), prefix.size())))];
    }
  }
  return r;
}

inline void print_cuda_lowering(const CudaLowering& r, size_t total) {
  std::cout << fmt::format("[cuda] {} programs: {} lowered, {} rejected\n", total, r.lowered, r.rejected);
  for (const auto& [why, n] : r.reasons) std::cout << fmt::format("  {:>4}  {}\n", n, why.substr(0, 200));
  std::cout.flush();  // the nvcc step after it takes minutes
}

}  // namespace steptp::backend::testing
