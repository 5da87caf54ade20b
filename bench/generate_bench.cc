// Benchmark of `steptp generate` (issue 6): records per minute and the wall-time breakdown
// (search, verify, cost model, compile, measure, export) on a small built-in configuration.
// Run: build/bench/steptp_bench_generate  (counters: records, records_per_min, *_s).
//
// BM_GenerateMeasured/8: the default --cost measured pipeline with a fresh measurement store
// and a fresh kernel cache (so compile_s is the uncached compile cost); BM_GenerateModel/8: the
// analytic model only (compile_s = measure_s = 0). compile_s and measure_s are summed over the
// measuring workers (jobs = 1 here, so they are wall time).
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>

#include "apps/dataset/dataset.h"

namespace {

void run(benchmark::State& state, bool measured) {
  namespace fs = std::filesystem;
  steptp::dataset::GenerateSummary s;
  int round = 0;
  for (auto _ : state) {
    fs::path out = fs::temp_directory_path() / ("steptp_generate_bench_" + std::to_string(round++));
    fs::remove_all(out);
    fs::path cache = out / "kernel-cache";  // uncached compiles: what a fresh machine pays
    fs::create_directories(cache);
    setenv("STEPTP_CACHE_DIR", cache.c_str(), 1);
    steptp::dataset::GenerateOptions o;
    o.out_dir = (out / "data").string();
    o.programs = int(state.range(0));
    o.composites = 2;
    o.examples = false;
    o.depth = 2;
    o.beam = 2;
    o.measured = measured;
    s = steptp::dataset::generate(o);
    unsetenv("STEPTP_CACHE_DIR");
    fs::remove_all(out);
  }
  state.counters["records"] = s.steps;
  state.counters["strategies"] = s.strategies_covered;
  state.counters["records_per_min"] = s.wall_s > 0 ? s.steps / (s.wall_s / 60.0) : 0;
  state.counters["wall_s"] = s.wall_s;
  state.counters["search_s"] = s.search_s;
  state.counters["verify_s"] = s.verify_s;
  state.counters["cost_s"] = s.cost_s;
  state.counters["compile_s"] = s.compile_s;
  state.counters["measure_s"] = s.measure_s;
  state.counters["comparisons"] = s.pairs_measured;
  state.counters["export_s"] = s.export_s;
}

void BM_GenerateMeasured(benchmark::State& state) { run(state, true); }
void BM_GenerateModel(benchmark::State& state) { run(state, false); }
BENCHMARK(BM_GenerateMeasured)->Arg(8)->Unit(benchmark::kSecond)->Iterations(1);
BENCHMARK(BM_GenerateModel)->Arg(8)->Unit(benchmark::kSecond)->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
