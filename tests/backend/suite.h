// The program suite of the backend tests, in one place so the CPU, CUDA and TVM tests agree on it:
//   core      = the 10 examples of shared/examples, the 40 public corpus programs and the three
//               own golden programs of tests/backend/golden (53 programs);
//   workloads = every registered workload (workloads/registry) at tiny size, seed 0;
//   suite     = core + workloads.
// The strategy test set (inputs of the strategy sweep) is the workloads + the examples + seeded
// composites (front/workloads/composite.h), as `steptp strategy-sweep` builds it.
#pragma once

#include <string>
#include <vector>

#include "backend_test_util.h"
#include "ir/leir/program_io.h"
#include "front/workloads/composite.h"
#include "front/workloads/workload.h"

namespace steptp::backend::testing {

struct SuiteProgram {
  std::string origin;  // "example", "corpus", "golden", "workload", "composite"
  leir::Program program;
  std::string label() const { return origin + ":" + program.name; }
};

inline std::vector<SuiteProgram> core_programs() {
  std::vector<SuiteProgram> out;
  for (auto& c : example_cases()) out.push_back({"example", std::move(c.program)});
  for (auto& c : corpus_cases()) out.push_back({"corpus", std::move(c.program)});
  for (const char* own : {"offset_reduction", "tiled_bound_cached", "fused_softmax"})
    out.push_back({"golden", leir::read_programs(std::string(STEPTP_SOURCE_DIR) + "/tests/backend/golden/" + own + ".leir").at(0)});
  return out;
}

// Every workload at tiny size. A workload that cannot be emitted is a bug of that workload: it
// is reported in `errors` (the callers assert it is empty) rather than silently dropped.
inline std::vector<SuiteProgram> workload_programs(std::vector<std::string>* errors = nullptr, uint64_t seed = 0) {
  std::vector<SuiteProgram> out;
  for (const auto& w : workloads::all_workloads()) {
    try {
      out.push_back({"workload", workloads::emit(w, seed, workloads::SizeClass::Tiny)});
    } catch (const std::exception& e) {
      if (errors) errors->push_back(w.name + ": " + e.what());
    }
  }
  return out;
}

inline std::vector<SuiteProgram> suite_programs(std::vector<std::string>* errors = nullptr) {
  auto out = core_programs();
  for (auto& p : workload_programs(errors)) out.push_back(std::move(p));
  return out;
}

inline std::vector<SuiteProgram> composite_programs(int count, uint64_t seed) {
  std::vector<SuiteProgram> out;
  for (auto& p : workloads::sample_composites(count, seed, workloads::SizeClass::Tiny)) out.push_back({"composite", std::move(p)});
  for (size_t i = 0; i < out.size(); ++i) out[i].program.name = "composite" + std::to_string(i);
  return out;
}

}  // namespace steptp::backend::testing
