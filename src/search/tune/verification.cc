#include "search/tune/verification.h"

#include <algorithm>
#include <string>

#include "lower/cpu/compiler.h"
#include "lower/cpu/cpu_program.h"
#include "lower/cpu/sandbox.h"
#include "ir/interp/domains.h"
#include "ir/interp/inputs.h"
#include "search/tune/timing_lock.h"
#include "front/workloads/bench_size.h"

namespace steptp::tune {
namespace {
// Input sets of the compiled check. A root whose inputs reach log, sqrt, fractional powers or
// divisors (ir/interp/domains.h) gets one in-domain set (those inputs positive and away from zero)
// and one ordinary set: either may be the one with finite outputs (a log of an input needs the
// first; a log(1 + exp(x @ W)) overflows on positive x and W and needs the second). Any other
// root gets the ordinary set and one x1e3 (for such a root the in-domain set would be the same).
std::vector<interp::InputProfile> input_profiles(const leir::Program& root) {
  if (interp::domain_restricted_inputs(root).empty()) return {interp::InputProfile::Ordinary, interp::InputProfile::ScaledUp};
  return {interp::InputProfile::Domain, interp::InputProfile::Ordinary};
}

std::string f64_build_error(const backend::cpu::CpuBuildResult& b) { return "f64 build: " + b.error.substr(0, 300); }

// The f64 builds run twice each and are never timed, so they are compiled at -O1: a third of
// the -O3 compile time (most of a tuner trial's cost at bench shapes). Both sides of a
// comparison (root and candidate) are built alike, and without -ffast-math either level keeps
// IEEE semantics, so the verdict does not depend on the level.
backend::cpu::KernelCompiler& f64_compiler() {
  static backend::cpu::KernelCompiler c([] {
    backend::cpu::CompilerOptions o;
    std::replace(o.flags.begin(), o.flags.end(), std::string("-O3"), std::string("-O1"));
    return o;
  }());
  return c;
}
}  // namespace

RootVerifier::RootVerifier(leir::Program root, uint64_t seed) : root_(std::move(root)), seed_(seed) {
  method_ = workloads::statement_instances(root_) <= kInterpreterInstances ? "interpreter" : "compiled-f64";
  identity_ = method_;
  if (method_ == "interpreter") return;
  profiles_ = input_profiles(root_);
  if (profiles_[0] == interp::InputProfile::Domain) identity_ += " inputs=domain,ordinary";
}

void RootVerifier::run_root() {
  // Deferred to the first compiled check: a verifier whose verdicts are all stored facts
  // (search/tune/observations.h) never builds the root.
  if (root_ran_) return;
  root_ran_ = true;
  for (int t = 0; t < kCompiledTrials; ++t)
    inputs_.push_back(interp::generate_inputs(root_, verify::trial_seed(seed_, t), profiles_[size_t(t)]));
  auto built = build_f64({&root_});
  if (!built[0].program) {
    root_error_ = f64_build_error(built[0]);
    return;
  }
  root_outputs_ = run_f64(*built[0].program, &root_error_);
}

std::vector<backend::cpu::CpuBuildResult> RootVerifier::build_f64(const std::vector<const leir::Program*>& ps) const {
  backend::cpu::CpuCodegenOptions o;
  o.all_f64 = true;
  std::vector<leir::Program> programs;
  for (const auto* p : ps) programs.push_back(*p);
  // Compiling the f64 builds is CPU work beside others' measurements (timing_lock.h).
  CpuWorkLock cpu_work(CpuWorkLock::Mode::Shared);
  return backend::cpu::build_cpu_programs(programs, o, &f64_compiler());
}

std::optional<std::vector<leir::TensorMap>> RootVerifier::run_f64(const backend::cpu::CpuProgram& p,
                                                                  std::string* error) const {
  CpuWorkLock cpu_work(CpuWorkLock::Mode::Shared);
  backend::cpu::SandboxLimits limits;
  limits.time_limit_s = 120;
  // One thread: the verdict is the same for any core count (no reduction split across threads),
  // and these runs share the cores with other work (timing_lock.h), where idle OpenMP threads
  // spinning at barriers would only take cycles from it.
  limits.threads = 1;
  std::vector<leir::TensorMap> outs;
  for (const auto& in : inputs_) {
    auto r = backend::cpu::run_sandboxed(p, in, limits);
    if (r.status != backend::cpu::RunStatus::Ok) {
      *error = "f64 run: " + std::string(backend::cpu::to_string(r.status)) + " " + r.message;
      return std::nullopt;
    }
    outs.push_back(std::move(r.outputs));
  }
  return outs;
}

std::vector<Verification> RootVerifier::check(const std::vector<const leir::Program*>& candidates) {
  std::vector<Verification> v(candidates.size());
  std::vector<const leir::Program*> to_run;
  std::vector<size_t> which;
  if (method_ != "interpreter" && !candidates.empty()) run_root();
  for (size_t i = 0; i < candidates.size(); ++i) {
    v[i].method = method_;
    if (method_ == "interpreter") {
      v[i].report = verify::verify(root_, *candidates[i], verify::VerifyOptions{.trials = 2, .seed = seed_});
    } else if (!root_outputs_) {
      v[i].report.error = "the root's " + root_error_;
      v[i].report.invalid_reference = true;
    } else if (auto diff = verify::signature_difference(root_, *candidates[i]); !diff.empty()) {
      v[i].report.error = "different signatures: " + diff;
    } else {
      to_run.push_back(candidates[i]);
      which.push_back(i);
    }
  }
  // One compiler batch; each candidate is then run and compared before the next runs, so at
  // most one candidate's outputs (tens of megabytes per trial at bench shapes) are held at once.
  auto built = to_run.empty() ? std::vector<backend::cpu::CpuBuildResult>{} : build_f64(to_run);
  for (size_t k = 0; k < which.size(); ++k) {
    auto& r = v[which[k]].report;
    if (!built[k].program) {
      r.error = f64_build_error(built[k]);
      continue;
    }
    auto outs = run_f64(*built[k].program, &r.error);
    if (!outs) continue;
    std::vector<verify::OutputPair> pairs;
    std::vector<uint64_t> seeds;
    for (int t = 0; t < kCompiledTrials; ++t) {
      pairs.push_back({&(*root_outputs_)[size_t(t)], &(*outs)[size_t(t)]});
      seeds.push_back(verify::trial_seed(seed_, t));
    }
    r = verify::compare_outputs(root_, pairs, seeds);
  }
  for (auto& x : v) x.verified = x.report.equivalent;
  return v;
}

}  // namespace steptp::tune
