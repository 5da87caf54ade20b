// Mutant battery over every built-in workload with restricted-domain operations (log, sqrt,
// fractional pow, division, log-sum-exp: those whose inputs reach such an operation,
// ir/interp/domains.h). A mutant counts when, on in-domain and ordinary inputs drawn independently of
// the verifier's (other seeds), its outputs differ from the original's where the original's are
// finite: beyond the dtype tolerance, non-finite where the original is finite, or a run-time
// error. The verifier must accept none of those. Tiny sizes run in the default suite
// (domain_mutants_test.cc), small sizes in the heavy one (domain_mutants_heavy_test.cc).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <map>
#include <optional>

#include "ir/interp/domains.h"
#include "ir/interp/inputs.h"
#include "ir/interp/interpreter.h"
#include "ir/leir/printer.h"
#include "verify/mutants.h"
#include "ir/verify/verifier.h"
#include "front/workloads/workload.h"

namespace steptp::testing {

// Whether `m` computes something else than `base` on `inputs` where `base`'s outputs (`ref`) are
// finite; nullopt when base has no finite output element there (no judgement possible).
inline std::optional<bool> differs_where_finite(const leir::Program& base, const leir::TensorMap& ref,
                                                const leir::Program& m, const leir::TensorMap& inputs) {
  leir::TensorMap got;
  try {
    got = interp::run_program(m, inputs);
  } catch (const std::exception&) {
    return true;  // a run-time error (unset read, out of bounds, race) on valid inputs
  }
  bool any_finite = false, differs = false;
  for (const auto& d : base.known) {
    if (d.role != leir::Role::Output) continue;
    const auto& a = ref.at(d.name).data;
    const auto& b = got.at(d.name).data;
    auto tol = verify::tolerance_for(d.dtype);
    double scale = 0;
    for (double x : a)
      if (std::isfinite(x)) scale = std::max(scale, std::abs(x));
    for (size_t i = 0; i < a.size(); ++i) {
      if (!std::isfinite(a[i])) continue;
      any_finite = true;
      if (!std::isfinite(b[i]) || std::abs(a[i] - b[i]) > tol.atol_scale * scale + tol.rtol * std::abs(a[i]))
        differs = true;
    }
  }
  if (!any_finite) return std::nullopt;
  return differs;
}

struct DomainBattery {
  int workloads = 0, mutants = 0, counted = 0, accepted = 0, inconclusive = 0;
};

// Runs the battery at `size`; every accepted mutant is a test failure naming it.
inline DomainBattery run_domain_mutants(workloads::SizeClass size) {
  DomainBattery t;
  std::map<std::string, int> per_kind;
  for (const auto& w : workloads::all_workloads()) {
    leir::Program base = workloads::emit(w, 3, size);
    if (interp::domain_restricted_inputs(base).empty()) continue;
    ++t.workloads;
    // Oracle inputs: in-domain and ordinary, seeds the verifier does not use by default.
    std::vector<std::pair<leir::TensorMap, leir::TensorMap>> oracle;
    for (auto [seed, profile] : {std::pair{901u, interp::InputProfile::Domain}, {902u, interp::InputProfile::Ordinary}}) {
      auto in = interp::generate_inputs(base, seed, profile);
      oracle.emplace_back(in, interp::run_program(base, in));
    }
    for (const auto& m : make_mutants(base)) {
      ++t.mutants;
      bool differs = false;
      for (const auto& [in, ref] : oracle) differs = differs || differs_where_finite(base, ref, m.program, in).value_or(false);
      if (!differs) continue;
      ++t.counted;
      per_kind[m.what.substr(m.what.find(": ") + 2, m.what.find(" #") - m.what.find(": ") - 2)]++;
      auto r = verify::verify(base, m.program);
      EXPECT_FALSE(r.invalid_reference) << m.what << ": " << r.error;
      if (r.verdict == verify::Verdict::Inconclusive) ++t.inconclusive;
      if (r.equivalent) {
        ++t.accepted;
        ADD_FAILURE() << "accepted mutant " << m.what << " (" << workloads::to_string(size) << "): " << verify::to_json(r)
                      << "\n" << leir::print_body(base.body) << "\n->\n" << leir::print_body(m.program.body);
      }
    }
  }
  std::cout << "[" << workloads::to_string(size) << "] " << t.workloads << " workloads with restricted-domain operations, "
            << t.mutants << " mutants, " << t.counted << " differ where the original is finite: " << t.accepted
            << " accepted, " << t.inconclusive << " of the rejections inconclusive\n";
  for (const auto& [k, n] : per_kind) std::cout << "  " << k << ": " << n << "\n";
  return t;
}

}  // namespace steptp::testing
