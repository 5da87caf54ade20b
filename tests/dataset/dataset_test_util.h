// Helpers of the generate tests: read output files, a fresh temporary folder per test binary,
// and the small search configuration every test starts from.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dataset/dataset.h"
#include "file_text.h"
#include "tune/fake_runner.h"
#include "tune/runner.h"
#include "workloads/bench_size.h"
#include "workloads/workload.h"

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
// it times the tuner and the records (dataset/measurement.h), so tests that count records do not
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

}  // namespace steptp::dataset::testing
