// The CPU differential check shared by the suite, strategy and f32 tests: compile many programs
// in batches (one build_cpu_programs call per batch, which the compiler itself spreads over its
// parallel processes; `workers` batches at a time), run each on seeded
// inputs and compare with the reference interpreter (the verifier's element rule, LEIR.md §5).
#pragma once

#include <algorithm>
#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "lower/cpu/cpu_program.h"
#include "backend_test_util.h"
#include "ir/interp/inputs.h"
#include "ir/interp/interpreter.h"
#include "suite.h"

namespace steptp::backend::testing {

struct CpuDiffOptions {
  cpu::CpuCodegenOptions codegen{.all_f64 = true};
  std::vector<interp::InputProfile> profiles{interp::InputProfile::Ordinary, interp::InputProfile::Signs};
  uint64_t seed = 4321;   // inputs of program i, profile k: seed + 7919*i + k
  size_t batch = 200;     // kernels per build_cpu_programs call
  int workers = 1;        // batches compiled and checked concurrently
  // Tolerance of a program; default: the loosest per-dtype verifier tolerance (program_tolerance).
  std::function<verify::Tolerance(const leir::Program&)> tolerance;
};

struct CpuDiffTally {
  int programs = 0, built = 0, matched = 0;
  int interp_errors = 0;         // the interpreter itself refused the inputs (not compared)
  int compiler_invocations = 0;
  std::vector<std::string> failures;  // "label: why"
};

inline CpuDiffTally cpu_differential(const std::vector<SuiteProgram>& progs, const std::string& cache_dir,
                                     const CpuDiffOptions& o = {}) {
  CpuDiffTally t;
  t.programs = static_cast<int>(progs.size());
  std::mutex mu;
  std::atomic<size_t> next{0};
  auto work = [&] {
    cpu::KernelCompiler cc({.cache_dir = cache_dir});
    for (size_t begin; (begin = next.fetch_add(o.batch)) < progs.size();) {
      size_t end = std::min(progs.size(), begin + o.batch);
      std::vector<leir::Program> batch;
      for (size_t i = begin; i < end; ++i) batch.push_back(progs[i].program);
      auto built = cpu::build_cpu_programs(batch, o.codegen, &cc);
      for (size_t i = begin; i < end; ++i) {
        const auto& b = built[i - begin];
        const auto& p = progs[i].program;
        std::string why;
        bool interp_error = false;
        if (!b.program) {
          why = "build failed: " + b.error.substr(0, 1500);
        } else {
          auto tol = o.tolerance ? o.tolerance(p) : program_tolerance(p);
          for (size_t k = 0; k < o.profiles.size() && why.empty() && !interp_error; ++k) {
            auto inputs = interp::generate_inputs(p, o.seed + 7919 * i + k, o.profiles[k]);
            leir::TensorMap want;
            try {
              want = interp::run_program(p, inputs);
            } catch (const std::exception& e) {
              interp_error = true;
              break;
            }
            try {
              why = compare_section5(b.program->run(inputs), want, tol);
            } catch (const std::exception& e) {
              why = std::string("run failed: ") + e.what();
            }
            if (!why.empty()) why = fmt::format("profile {}: {}", k, why);
          }
        }
        std::lock_guard lock(mu);
        t.built += b.program != nullptr;
        if (interp_error) ++t.interp_errors;
        else if (why.empty()) ++t.matched;
        else t.failures.push_back(progs[i].label() + ": " + why);
      }
    }
    std::lock_guard lock(mu);
    t.compiler_invocations += cc.stats().invocations;
  };
  std::vector<std::thread> pool;
  for (int w = 1; w < o.workers; ++w) pool.emplace_back(work);
  work();
  for (auto& th : pool) th.join();
  std::sort(t.failures.begin(), t.failures.end());
  return t;
}

}  // namespace steptp::backend::testing
