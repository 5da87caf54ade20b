// The facts a prompt states and the rules the `<think>` reasons with (docs/dataset.md, "Chain of
// thought"). Everything here is a function of programs and the machine description only — never
// of a measurement, a verification or a model's estimate — so a record's reasoning can be
// recomputed from its prompt and its answer:
//
// - machine_json: the machine the kernels are timed on (record field `machine`);
// - analysis_json: per top-level item of a program, its work, traffic, contiguity and every loop
//   with its kind and dependence (the prompt's analysis facts);
// - step_effect: what a step changes, from the parent program and the answer's result program
//   (the "effect facts": the result program is the IR answer, or what applying the action gives);
// - expect: the expectation ("faster" | "slower" | "same") that the reasoning rules give for an
//   answer from its effect facts and the machine, with the grounds in words.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ir/analysis/dependence.h"
#include "ir/leir/ast.h"
#include "ir/analysis/program_facts.h"
#include "search/tune/machine.h"

namespace steptp::dataset {

// {"cpu", "cores", "threads" (timed), "vector_isa", "vector_bytes", "f32_lanes", "l1_bytes",
// "l2_bytes", "l3_bytes", "compiler", "flags"}: what the prompt says about the machine.
nlohmann::json machine_json(const tune::Machine& m);

// A LEIR loop kind letter (or "new" / "removed" of an effect's loop) in words: "serial",
// "parallel", "vectorized", "unrolled", "bound to a hardware axis".
std::string loop_kind_name(const std::string& kind);
// A loop's dependence as records and prompts name it: "independent", "reduction_only" or "carried".
const char* dependence_name(analysis::LoopDep dep);

// {"items", "statements", "flops", "bytes", "nests": [{"item", "header", "writes", "reads",
// "iterations", "flops", "bytes", "accesses", "contiguous_accesses", "loops": [{"var", "extent",
// "kind" (LEIR letter), "dependence" ("independent" | "reduction_only" | "carried")}]}]}
// ("nests": the top-level items that are nests; their inner nests' loops follow the outer ones).
nlohmann::json analysis_json(const leir::Program& p);

// What a step changes, each as [before, after]: "flops", "bytes", "local_accesses", "items",
// "contiguous_share" (whole program), "changed_contiguous_share" (over the top-level items that
// differ), "inner_loops" ([before, after] lists of the innermost loops of extent > 1 of those
// items, {"var", "extent", "kind", "dependence"}), "parallel_items" (how many of those items run
// a parallel/bound loop of extent > 1), and "loops" (loops that gain or lose a
// parallel/bound/vector/unroll kind or are new, {"var", "extent", "before", "after", "dependence"}).
// `parent_facts` is analysis::program_facts(parent) (callers reuse it across a state's steps).
nlohmann::json step_effect(const leir::Program& parent, const analysis::ProgramFacts& parent_facts,
                           const leir::Program& result);
nlohmann::json step_effect(const leir::Program& parent, const leir::Program& result);
// The top-level items that differ (by printed text), before -> after, and the tensors added or
// removed: {"first_item", "before", "after", "tensors_added", "tensors_removed"}.
nlohmann::json step_transition(const leir::Program& parent, const leir::Program& result);

// The reasoning rules (each a signed vote, weight in brackets; the sum's sign is the expectation):
//  work [2]      flops fall (rise) by at least 5 %: less (more) arithmetic;
//  traffic [1]   global bytes fall (rise) by at least 5 % and the number of top-level items changes
//                (an intermediate is no longer stored, or newly stored); with the same items the
//                difference is repeated reads within a statement, which the compiler loads once;
//  contiguity [1] the changed items' contiguous share rises (falls) by at least 0.05: accesses
//                stream through cache lines and SIMD lanes (or stop doing so);
//  inner loop [1] fewer (more) innermost loops stay scalar, i.e. are neither independent (the
//                compiler vectorizes those at -O3 -march=native) nor explicitly vectorized (V:
//                `omp simd`, which also vectorizes an accumulation the compiler keeps scalar);
//  parallel [2]  a changed nest that ran serially gets a parallel/bound loop (one stops having
//                any) while the kernels run on more than one thread; a parallel loop inside a nest
//                that already has one adds no threads, and on one thread nothing changes (no vote);
//  staging [1]   more local/shared buffer accesses (CPU target): copies through ordinary memory,
//                extra work without faster storage.
// No vote (only new, split, unrolled or renamed loops): "same".
struct Expectation {
  std::string verdict;             // "faster" | "slower" | "same"
  std::vector<std::string> gains;  // the rules that vote for, in words (their numbers are effect facts)
  std::vector<std::string> costs;  // the rules that vote against
  std::vector<std::string> notes;  // facts that vote neither way (e.g. parallel on one thread)
};
// `rec` supplies the machine (rec["machine"], optional) and `answer` its "effect".
Expectation expect(const nlohmann::json& rec, const nlohmann::json& answer);

// How often answers[].expectation agrees with the measured label ("faster" with "improving";
// "same" or "slower" with "non_improving" or "enabling"), overall and per strategy:
// {"rule", "overall": {"answers", "agree", "share"}, "per_strategy": {name: {...}}, "confusion":
// {expectation: {label: count}}, "vs_noise_verdict": {...}} — the last against the measured
// verdict on the step alone where the cost has one (cost.noise_verdict "faster" | "within_noise"
// | "slower"; "same" agrees with "within_noise"). Answers without an expectation are not counted.
nlohmann::json expectation_agreement(const std::vector<nlohmann::json>& records, const std::vector<char>& keep);

}  // namespace steptp::dataset
