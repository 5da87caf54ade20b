// Every candidate the tuner measures is verified against its root first; only `equivalent`
// counts (anything else — failed, or a verdict the verifier cannot reach — is "not verified" and
// the candidate is dropped).
//
// Small programs (root at most kInterpreterInstances statement instances) go through the
// reference interpreter: verify::verify, the meaning of LEIR. At bench shapes the interpreter
// needs seconds per candidate, so root and candidate are compiled as f64 builds (every float
// tensor stored and computed in double: CpuCodegenOptions::all_f64), run in a sandbox on the same
// seeded inputs (kCompiledTrials input sets: ordinary and x1e3, or in-domain and ordinary for a
// root whose inputs reach log, sqrt, powers or divisors), and their outputs
// compared by verify::compare_outputs with the verifier's own element rule and the declared
// dtype's tolerance.
//
// What that proves: the CPU backend is itself checked against the interpreter (tests/backend:
// every workload and a seeded sample of strategy results, f64 builds, element for element), so a
// candidate whose f64 build matches the root's f64 build on these inputs computes what the root
// computes on them, up to reassociation in double — a far tighter bound than the f32 tolerance it
// is held to. It is still a test on sampled inputs, as verify() is, not a proof for all inputs;
// and it checks the transformation (subscripts, bounds, tiling edges, reductions) at the very
// shapes that are timed, which the interpreter at tiny shapes would not.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lower/cpu/cpu_program.h"
#include "ir/interp/inputs.h"
#include "ir/leir/ast.h"
#include "ir/leir/values.h"
#include "ir/verify/verifier.h"

namespace steptp::tune {

inline constexpr int64_t kInterpreterInstances = int64_t{1} << 21;
inline constexpr int kCompiledTrials = 2;

struct Verification {
  bool verified = false;
  std::string method;  // "interpreter" or "compiled-f64"
  verify::VerifyReport report;
};

// Verifies candidates against one root; the root's f64 outputs are computed once.
class RootVerifier {
 public:
  RootVerifier(leir::Program root, uint64_t seed);
  // One verdict per candidate; the compiled path builds all candidates in one compiler batch.
  std::vector<Verification> check(const std::vector<const leir::Program*>& candidates);
  const std::string& method() const { return method_; }
  // What a stored verdict was reached with (search/tune/observations.h keys verdicts by it): the method and,
  // for compiled builds, the input sets, so verdicts drawn on other inputs are not reused.
  const std::string& identity() const { return identity_; }

 private:
  std::vector<backend::cpu::CpuBuildResult> build_f64(const std::vector<const leir::Program*>& ps) const;
  // A build's outputs on each trial's inputs (sandboxed), or nullopt with `error` set.
  std::optional<std::vector<leir::TensorMap>> run_f64(const backend::cpu::CpuProgram& p, std::string* error) const;

  void run_root();  // the root's f64 outputs (or its error), once

  leir::Program root_;
  uint64_t seed_;
  bool root_ran_ = false;
  std::string method_;
  std::string identity_;
  std::vector<interp::InputProfile> profiles_;  // compiled: the input set of each trial
  std::vector<leir::TensorMap> inputs_;
  std::optional<std::vector<leir::TensorMap>> root_outputs_;
  std::string root_error_;
};

}  // namespace steptp::tune
