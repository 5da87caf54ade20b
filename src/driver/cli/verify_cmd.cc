// steptp verify A B [--trials N] [--seed S] [--json] [--inputs VALUES.json]: are two programs
// equivalent (LEIR.md §5)? Exit 0 equivalent, 1 not equivalent, 2 invalid input (a file that
// cannot be read or parsed, or a reference program A that is itself invalid), 3 inconclusive
// (nothing differed, but no trial gave evidence: the reference's outputs were mostly NaN/inf on
// every input set; ir/verify/verifier.h).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <iostream>

#include "apps/api/api.h"
#include "driver/cli/command.h"
#include "front/onnx/onnx_import.h"
#include "ir/leir/diagnostic.h"
#include "ir/leir/program_io.h"
#include "ir/leir/values.h"
#include "ir/verify/verifier.h"

namespace steptp::cli {
namespace {

std::string number(double v) { return fmt::format("{:.17g}", v); }

RegisterCommand verify_cmd{{"verify", "check that program B is equivalent to program A", [](CLI::App& sub) {
  auto file_a = std::make_shared<std::string>();
  auto file_b = std::make_shared<std::string>();
  auto inputs = std::make_shared<std::string>();
  auto opts = std::make_shared<verify::VerifyOptions>();
  auto json = std::make_shared<bool>(false);
  sub.add_option("A", *file_a, "reference program (.json, .jsonl (first record) or .leir)")->required();
  sub.add_option("B", *file_b, "candidate program")->required();
  sub.add_option("--trials", opts->trials, "seeded input sets (profiles cycle domain, scaled up, domain small, signs; ir/interp/inputs.h)")
      ->check(CLI::Range(1, 1000000));
  sub.add_option("--seed", opts->seed, "seed of the first trial's inputs");
  sub.add_option("--inputs", *inputs, "run once on these values (LEIR.md §1 values JSON) instead of seeded inputs");
  sub.add_flag("--json", *json, "print the report as one JSON object");
  return [=]() -> int {
    leir::Program a, b;
    try {
      a = onnx_import::read_programs_any(*file_a).at(0);
      b = onnx_import::read_programs_any(*file_b).at(0);
    } catch (const leir::LeirError& e) {
      std::cerr << e.what() << "\n";
      return 2;
    }
    verify::VerifyReport r;
    try {
      api::VerifyRequest req{.a = std::move(a), .b = std::move(b), .options = *opts};
      // keyed by name as `run --inputs` does (aliases resolved, ambiguous keys refused)
      if (!inputs->empty()) req.inputs = leir::key_by_name(req.a, leir::read_values_file(*inputs), *inputs);
      r = api::verify(req);
    } catch (const leir::LeirError& e) {
      std::cerr << e.what() << "\n";
      return 2;
    }
    if (!r.error.empty()) std::cerr << "steptp verify: " << r.error << "\n";
    if (*json) {
      std::cout << verify::to_json(r) << "\n";
    } else {
      const bool inconclusive = r.verdict == verify::Verdict::Inconclusive;
      std::cout << (r.equivalent ? "equivalent" : inconclusive ? "inconclusive" : "not equivalent") << " ("
                << verify::to_string(r.verdict) << ", " << r.trials << " trial" << (r.trials == 1 ? "" : "s") << ", "
                << r.evidential << " evidential, finite share " << fmt::format("{:.3g}", r.finite_share) << ")";
      if (r.worst) {
        const auto& w = *r.worst;
        std::cout << fmt::format("; worst {}[{}]: a={} b={} abs_err={} rel_err={} (trial {}, seed {})", w.tensor,
                                 fmt::join(w.index, ","), number(w.a), number(w.b), number(w.abs_err),
                                 number(w.rel_err), w.trial, w.seed);
      }
      std::cout << "\n";
    }
    if (r.invalid_reference) return 2;
    if (r.verdict == verify::Verdict::Inconclusive) return 3;
    return r.equivalent ? 0 : 1;
  };
}}};

}  // namespace
}  // namespace steptp::cli
