// Benchmark of `steptp generate` (issue 6): records per minute and the wall-time breakdown
// (search, verify, cost model, compile, measure, export) on a small built-in configuration.
// Run: build/bench/steptp_bench_generate  (counters: records, records_per_min, *_s).
// compile_s / measure_s are 0 while the search uses the analytic cost model (measured=false).
#include <benchmark/benchmark.h>

#include <filesystem>

#include "dataset/dataset.h"

namespace {

void BM_GenerateSmall(benchmark::State& state) {
  namespace fs = std::filesystem;
  steptp::dataset::GenerateSummary s;
  int round = 0;
  for (auto _ : state) {
    fs::path out = fs::temp_directory_path() / ("steptp_generate_bench_" + std::to_string(round++));
    fs::remove_all(out);
    steptp::dataset::GenerateOptions o;
    o.out_dir = out.string();
    o.programs = int(state.range(0));
    o.composites = 2;
    o.examples = false;
    o.depth = 2;
    o.beam = 2;
    s = steptp::dataset::generate(o);
    fs::remove_all(out);
  }
  state.counters["records"] = s.steps;
  state.counters["strategies"] = s.strategies_covered;
  state.counters["records_per_min"] = s.wall_s > 0 ? s.steps / (s.wall_s / 60.0) : 0;
  state.counters["search_s"] = s.search_s;
  state.counters["verify_s"] = s.verify_s;
  state.counters["cost_s"] = s.cost_s;
  state.counters["compile_s"] = 0;
  state.counters["measure_s"] = 0;
  state.counters["export_s"] = s.export_s;
}
BENCHMARK(BM_GenerateSmall)->Arg(8)->Unit(benchmark::kSecond)->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
