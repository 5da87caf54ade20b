// steptp strategy-sweep [--composites N] [--seed S] [--samples K] [--strategy NAME] [--json]
//                       [--failures] [--input NAME]...
// The issue-4 sweep: every registered strategy at every site (≤ K parameter samples per site)
// of every workload at `tiny` size, N random composites and the 10 examples of ../shared; every
// result is checked against its input (transform/equivalence.h). Prints, per strategy: inputs
// where it applied (and how many distinct named inputs), results, verified, failed, inconclusive
// (the verifier had no evidence: the input's outputs are mostly NaN/inf; not verified, not a
// strategy failure; the inputs concerned are listed), results per exactness class, exact-claim
// violations, refusals with reasons, exceptions. For every strategy
// that applied to fewer than kListBelow distinct inputs, the table also names those inputs (the
// JSON rows always carry the full list), so a rare strategy says which programs make it apply.
// Exit 0 when nothing failed and every strategy applied to ≥ 3 distinct inputs; 1 otherwise.
//
// --results: instead of verifying samples, prints one JSON line per (input, strategy, site,
// parameter choice) over every site and the whole parameter space: the result's program hash, its
// exactness and the bytes of its intermediates, or the refusal of that choice. Two such listings
// (before and after a change to the strategy layer) compared by key show exactly which results
// moved.
#include <iostream>
#include <map>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/hash.h"
#include "driver/cli/command.h"
#include "ir/leir/canonical.h"
#include "ir/leir/printer.h"
#include "ir/leir/program_io.h"
#include "ir/leir/tensors.h"
#include "transform/equivalence.h"
#include "transform/sampler.h"
#include "transform/strategy.h"
#include "front/workloads/composite.h"
#include "front/workloads/workload.h"

namespace steptp::cli {
namespace {

constexpr size_t kListBelow = 10;

struct Row {
  int programs = 0, results = 0, verified = 0, failed = 0, inconclusive = 0, refusals = 0, errors = 0,
      exact_claim_broken = 0;
  std::map<std::string, int> by_class;
  std::set<std::string> inputs;  // distinct input names where it applied
};

struct Input {
  std::string name;
  leir::Program program;
};

std::vector<Input> sweep_inputs(const std::string& shared, int composites, uint64_t seed, bool examples) {
  std::vector<Input> out;
  for (const auto& w : workloads::all_workloads()) {
    try {
      out.push_back({w.name, workloads::emit(w, seed, workloads::SizeClass::Tiny)});
    } catch (const std::exception& e) {
      std::cerr << "warning: workload " << w.name << ": " << e.what() << "\n";
    }
  }
  if (composites > 0) {
    auto cs = workloads::sample_composites(composites, seed, workloads::SizeClass::Tiny);
    for (size_t i = 0; i < cs.size(); ++i) out.push_back({"composite" + std::to_string(i), std::move(cs[i])});
  }
  if (examples)
    for (const char* n : {"argmax", "conv2d_pad1", "gelu", "gemm_multiply_leakyrelu", "layernorm", "matmul",
                          "maxpool2d", "nll_loss_mean", "online_softmax", "softmax"})
      for (auto& p : leir::read_programs(shared + "/examples/" + n + ".json")) out.push_back({std::string("example:") + n, std::move(p)});
  return out;
}

// Bytes of the tensors a program keeps besides its signature (its intermediates, any scope).
int64_t intermediate_bytes(const leir::Program& p) {
  int64_t bytes = 0;
  for (const auto& [name, t] : leir::build_tensor_table(p).tensors)
    if (!t.known) bytes += t.numel() * leir::byte_size(t.dtype);
  return bytes;
}

// The --results listing (see the header comment).
void print_results(const std::vector<Input>& inputs, const std::vector<const strategies::Strategy*>& ss) {
  for (const auto& in : inputs) {
    const int64_t before = intermediate_bytes(in.program);
    for (const auto* s : ss) {
      nlohmann::json row = {{"input", in.name}, {"strategy", s->name()}};
      const strategies::ScheduleState st(in.program);
      std::vector<strategies::Site> sites;
      try {
        sites = s->sites(st);
      } catch (const std::exception& e) {
        row["error"] = e.what();
        std::cout << row.dump() << "\n";
        continue;
      }
      for (const auto& site : sites) {
        row["site"] = site.description;
        for (const auto& params : s->param_space(st, site)) {
          row["params"] = strategies::params_to_json(params);
          row.erase("hash");
          row.erase("refused");
          row.erase("error");
          try {
            auto c = s->apply(st, site, params);
            if (c) {
              row["hash"] = base::hex64(leir::program_hash(c->program));
              row["exactness"] = strategies::to_string(c->exactness);
              row["intermediate_bytes"] = {before, intermediate_bytes(c->program)};
            } else {
              row["refused"] = c.refusal().reason;
            }
          } catch (const std::exception& e) {
            row["error"] = e.what();
          }
          std::cout << row.dump() << "\n";
        }
      }
    }
  }
}

RegisterCommand sweep_cmd{{"strategy-sweep", "apply every strategy everywhere and verify every result (issue 4 sweep)",
                           [](CLI::App& sub) {
  struct Opts {
    int composites = 100, samples = 3;
    uint64_t seed = 0;
    std::string strategy, shared = "../shared";
    std::vector<std::string> only;
    bool json = false, failures = false, no_examples = false, results = false;
  };
  auto o = std::make_shared<Opts>();
  sub.group("");  // hidden: a test/benchmark command
  sub.add_option("--composites", o->composites, "random composites (default 100)");
  sub.add_option("--samples", o->samples, "parameter samples per site (default 3)");
  sub.add_option("--seed", o->seed, "seed of workloads, composites and samples (default 0)");
  sub.add_option("--strategy", o->strategy, "only this strategy");
  sub.add_option("--shared", o->shared, "the shared data folder (examples/), default ../shared");
  sub.add_flag("--no-examples", o->no_examples, "skip the 10 examples");
  sub.add_option("--input", o->only, "only these inputs (workload name, compositeN, example:NAME); repeatable");
  sub.add_flag("--json", o->json, "one JSON object per strategy instead of the table");
  sub.add_flag("--results", o->results,
               "list every (input, strategy, site, parameters) result's hash instead of verifying samples");
  sub.add_flag("--failures", o->failures, "print every failing result (stderr)");
  return [o]() -> int {
    auto inputs = sweep_inputs(o->shared, o->composites, o->seed, !o->no_examples);
    if (!o->only.empty()) {
      std::set<std::string> wanted(o->only.begin(), o->only.end());
      for (const auto& in : inputs) wanted.erase(in.name);
      if (!wanted.empty()) {
        std::cerr << "strategy-sweep: no input named " << *wanted.begin() << "\n";
        return 2;
      }
      std::set<std::string> keep(o->only.begin(), o->only.end());
      std::erase_if(inputs, [&](const Input& in) { return !keep.count(in.name); });
    }
    std::vector<const strategies::Strategy*> ss;
    for (const auto* s : strategies::all_strategies())
      if (o->strategy.empty() || s->name() == o->strategy) ss.push_back(s);
    if (o->results) {
      print_results(inputs, ss);
      return 0;
    }
    std::set<std::string> inconclusive_inputs;
    std::map<std::string, Row> rows;
    for (const auto& in : inputs) {
      const strategies::ScheduleState st(in.program);
      for (const auto* s : ss) {
        Row& r = rows[std::string(s->name())];
        std::vector<strategies::Candidate> cands;
        try {
          r.refusals += static_cast<int>(s->explain(st).size());
          strategies::SampleOptions so;
          so.seed = o->seed;
          so.per_site = o->samples;
          cands = strategies::sample_candidates(*s, st, so);
        } catch (const std::exception& e) {
          ++r.errors;
          if (o->failures) std::cerr << s->name() << " on " << in.name << " threw: " << e.what() << "\n";
          continue;
        }
        if (!cands.empty()) {
          ++r.programs;
          r.inputs.insert(in.name);
        }
        for (const auto& c : cands) {
          ++r.results;
          ++r.by_class[std::string(strategies::to_string(c.exactness))];
          auto eq = strategies::check_equivalent(in.program, c.program);
          if (eq.ok) {
            ++r.verified;
            if (c.exactness == strategies::Exactness::Exact && !eq.exact) ++r.exact_claim_broken;
          } else if (eq.inconclusive) {
            ++r.inconclusive;
            inconclusive_inputs.insert(in.name);
          } else {
            ++r.failed;
            if (o->failures)
              std::cerr << s->name() << " on " << in.name << " site " << c.site << " "
                        << strategies::params_to_json(c.params) << ": " << eq.message << "\n  "
                        << leir::print_body(in.program.body) << "\n  -> " << leir::print_body(c.program.body) << "\n";
          }
        }
      }
    }
    bool ok = true;
    int total_results = 0, total_verified = 0, total_failed = 0, total_inconclusive = 0, total_errors = 0;
    std::vector<std::string> rare;  // strategies under 3 distinct inputs
    if (!o->json)
      std::cout << fmt::format("{} inputs ({} workloads at tiny, {} composites, examples: {})\n", inputs.size(),
                               workloads::all_workloads().size(), o->composites, o->no_examples ? "no" : "10")
                << fmt::format("{:<56} {:>6} {:>6} {:>7} {:>8} {:>6} {:>6} {:>7} {:>9} {:>8} {:>8} {:>6}\n", "strategy",
                               "progs", "dist", "results", "verified", "failed", "exact", "reassoc", "algebraic",
                               "!exact", "refused", "errors");
    for (const auto& name : strategies::strategy_names()) {
      const auto* s = strategies::find_strategy(name);
      if (!o->strategy.empty() && name != o->strategy) continue;
      Row r = s ? rows[std::string(name)] : Row{};
      bool row_ok = s && r.failed == 0 && r.errors == 0 && r.inputs.size() >= 3;
      ok = ok && row_ok;
      total_results += r.results;
      total_verified += r.verified;
      total_failed += r.failed;
      total_inconclusive += r.inconclusive;
      total_errors += r.errors;
      if (r.inputs.size() < 3) rare.push_back(std::string(name));
      if (o->json) {
        nlohmann::json j = {{"strategy", name},      {"registered", s != nullptr}, {"programs", r.programs},
                            {"distinct_inputs", r.inputs.size()}, {"results", r.results}, {"verified", r.verified},
                            {"failed", r.failed},    {"inconclusive", r.inconclusive},
                            {"exact", r.by_class["exact"]}, {"reassoc", r.by_class["reassoc"]},
                            {"algebraic", r.by_class["algebraic"]}, {"exact_claim_broken", r.exact_claim_broken},
                            {"refusals", r.refusals}, {"errors", r.errors}, {"inputs", r.inputs}};
        std::cout << j.dump() << "\n";
      } else {
        std::cout << fmt::format("{:<56} {:>6} {:>6} {:>7} {:>8} {:>6} {:>6} {:>7} {:>9} {:>8} {:>8} {:>6}{}\n",
                                 std::string(name) + (s ? "" : " (unregistered)"), r.programs, r.inputs.size(),
                                 r.results, r.verified, r.failed, r.by_class["exact"], r.by_class["reassoc"],
                                 r.by_class["algebraic"], r.exact_claim_broken, r.refusals, r.errors,
                                 row_ok ? "" : "  <-");
        if (!r.inputs.empty() && r.inputs.size() < kListBelow) {
          std::string names;
          for (const auto& n : r.inputs) names += (names.empty() ? "" : ", ") + n;
          std::cout << "    applies to: " << names << "\n";
        }
      }
    }
    if (!o->json) {
      std::string under;
      for (const auto& n : rare) under += " " + n;
      std::cout << fmt::format("total: {} results, {} verified, {} failed, {} inconclusive, {} errors; strategies "
                               "under 3 distinct inputs: {}\n",
                               total_results, total_verified, total_failed, total_inconclusive, total_errors,
                               rare.empty() ? std::string("none") : under.substr(1));
      if (!inconclusive_inputs.empty()) {
        std::string names;
        for (const auto& n : inconclusive_inputs) names += (names.empty() ? "" : ", ") + n;
        std::cout << "inconclusive inputs (outputs mostly NaN/inf on every verification input set): " << names << "\n";
      }
    }
    return ok ? 0 : 1;
  };
}}};

}  // namespace
}  // namespace steptp::cli
