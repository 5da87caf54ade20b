// Helpers of the generate tests: read output files, a fresh temporary folder per test binary,
// and the small search configuration every test starts from.
#pragma once

#include <unistd.h>

#include <cctype>
#include <filesystem>
#include <set>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/dataset/dataset.h"
#include "apps/dataset/reasoning.h"
#include "file_text.h"
#include "ir/leir/program_io.h"
#include "tune/fake_runner.h"
#include "search/tune/runner.h"
#include "front/workloads/bench_size.h"
#include "front/workloads/workload.h"

namespace steptp::dataset::testing {

namespace fs = std::filesystem;
using nlohmann::json;

using ::slurp;  // tests/file_text.h

inline std::vector<json> lines(const fs::path& p) {
  std::vector<json> v;
  std::ifstream f(p);
  std::string l;
  while (std::getline(f, l))
    if (!l.empty()) v.push_back(json::parse(l));
  return v;
}

// An empty folder `name` under a per-process temporary root named after `suite`.
inline fs::path tmpdir(const std::string& suite, const std::string& name) {
  fs::path p = fs::temp_directory_path() / ("steptp_" + suite + "_" + std::to_string(::getpid())) / name;
  fs::remove_all(p);
  return p;
}

// A few workloads, one beam, one site and parameter choice per strategy, depth 2: seconds.
inline GenerateOptions small_search(const std::string& out, uint64_t seed, int programs) {
  GenerateOptions o;
  o.out_dir = out;
  o.seed = seed;
  o.programs = programs;
  o.composites = 0;
  o.examples = false;
  o.depth = 2;
  o.beam = 1;
  o.sites_per_strategy = 1;
  o.params_per_site = 1;
  o.verify_trials = 2;
  o.eval_fraction = 0.4;
  return o;
}

// Quiet timings as a pure function of the program (10 runs a side, cv 0.01): vectorizing a loop
// makes it 2.5x faster, every loop costs 10 % (a split alone is slower), so a path can hold
// improving, enabling and slower steps whatever the machine's load. As GenerateOptions::tune_runner
// it times the tuner and the records (apps/dataset/measurement.h), so tests that count records do not
// depend on how quiet the machine is.
class QuietRunner : public tune::Runner {
 public:
  std::string identity() const override { return "fake:quiet-vectorize"; }
  std::vector<tune::PairResult> run(const std::vector<leir::Program>& programs,
                                    const std::vector<std::pair<int, int>>& pairs) override {
    std::vector<tune::PairResult> out;
    for (auto [a, b] : pairs) {
      tune::PairResult r;
      r.ok = true;
      const double ta = ms(programs[size_t(a)]), tb = ms(programs[size_t(b)]);
      r.cmp.a = {ta, ta, ta, 0.01, 10};
      r.cmp.b = {tb, tb, tb, 0.01, 10};
      r.cmp.speedup = ta / tb;
      out.push_back(r);
    }
    return out;
  }
  static double ms(const leir::Program& p) {
    bool v = false;
    const int loops = tune::testing::count_loops(p.body, &v);
    return (v ? 0.4 : 1.0) * (1 + 0.1 * loops);
  }
};

// A built-in workload's root at bench shapes in f32, as `generate` draws it.
inline Root bench_root(const char* name, uint64_t seed) {
  const workloads::Workload* w = workloads::find_workload(name);
  if (!w) throw std::invalid_argument(std::string("no workload ") + name);
  Root r{std::string("w/") + name, w->family, {}, w, seed};
  r.program = workloads::to_f32(workloads::emit(*w, seed, workloads::SizeClass::Bench));
  return r;
}

// Options of a measured bench run that sizes its roots against `min_ms`.
inline GenerateOptions bench_sizing_options(double min_ms) {
  GenerateOptions o;
  o.size = workloads::SizeClass::Bench;
  o.measured = true;
  o.min_root_ms = min_ms;
  return o;
}

// Each record of steps.jsonl in `dir` with its chat line (train.jsonl or eval.jsonl by its split,
// in export order).
inline std::vector<std::pair<json, json>> records_with_chats(const fs::path& dir) {
  auto train = lines(dir / "train.jsonl"), eval = lines(dir / "eval.jsonl");
  size_t t = 0, e = 0;
  std::vector<std::pair<json, json>> out;
  for (auto& r : lines(dir / "steps.jsonl")) {
    json chat = r["split"] == "eval" ? eval.at(e++) : train.at(t++);
    out.emplace_back(std::move(r), std::move(chat));
  }
  return out;
}

// The records of `dir` past their root, each checked for its prompt stating the current program's
// measured speedup over the root (the one its producing step measured); returns how many.
inline int expect_later_prompts_state_measured_speedup(const fs::path& dir) {
  int stated = 0;
  for (const auto& [r, chat] : records_with_chats(dir)) {
    if (r["steps_so_far"].empty()) continue;
    const std::string user = chat["messages"][1]["content"];
    EXPECT_NE(user.find("Speedup of the current program over the root: " + r["parent_speedup_vs_root"].dump() +
                        " (measured)."),
              std::string::npos)
        << user;
    ++stated;
  }
  return stated;
}

// The `<think>` text of an assistant message.
inline std::string think_of(const json& chat) {
  const std::string a = chat["messages"][2]["content"];
  const size_t b = a.find("<think>"), e = a.find("</think>");
  if (b == std::string::npos || e == std::string::npos) throw std::runtime_error("no <think> in " + a);
  return a.substr(b + 7, e - b - 7);
}

// The numbers of a record's `<think>` that are neither in its user message, nor in its answer,
// nor derivable from the answer by the documented rule: the effect facts of each answer's result
// program against the parent (apps/dataset/reasoning.h step_effect, recomputed here from the two
// programs, not read from the record) and the result program itself (the IR answer; an action
// answer gives it by applying the step).
inline std::vector<std::string> underived_think_numbers(const json& rec, const json& chat) {
  std::set<std::string> have;
  auto add = [&](const std::string& text) {
    for (auto& n : numbers_in(text)) have.insert(std::move(n));
  };
  add(chat["messages"][1]["content"]);
  const std::string asst = chat["messages"][2]["content"];
  add(asst.substr(asst.find("</think>")));
  const leir::Program parent = leir::program_from_text(rec["parent_program"].get<std::string>());
  for (const auto& a : rec["answers"]) {
    add(a["result_program"]);
    add(step_effect(parent, leir::program_from_text(a["result_program"].get<std::string>())).dump());
  }
  std::vector<std::string> missing;
  for (const auto& n : numbers_in(think_of(chat)))
    if (!have.count(n)) missing.push_back(n);
  return missing;
}

// Outcome and hindsight phrases (the step's measurement, verification, label, trajectory, a
// model's estimate) found in a `<think>`.
inline std::vector<std::string> hindsight_phrases(const std::string& think) {
  static const std::vector<std::string> kPhrases = {
      "measured", "measurement", "verified", "verification", "trials", "label", "improving", "enabling",
      "trajectory", "best-found", "later steps", "learned model", "cost model", "estimate", "predicted", "as expected",
      "contrary to", "outcome", "noise", "median", " ms", "speedup of", "times faster"};
  std::vector<std::string> found;
  std::string lower = think;
  for (auto& c : lower) c = char(std::tolower(static_cast<unsigned char>(c)));
  for (const auto& p : kPhrases)
    if (lower.find(p) != std::string::npos) found.push_back(p);
  // "step N of M": a place on a path.
  for (size_t p = lower.find("step "); p != std::string::npos; p = lower.find("step ", p + 1))
    if (p + 5 < lower.size() && std::isdigit(static_cast<unsigned char>(lower[p + 5]))) found.push_back("step N");
  return found;
}

}  // namespace steptp::dataset::testing
