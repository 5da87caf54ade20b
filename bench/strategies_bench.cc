// Strategy-layer costs on a 30-nest program (issue 4 target: every site of every strategy in
// ≤ 50 ms; issue 12: sites and parameter spaces ≥ 3x faster with the schedule state). Every
// iteration starts from a fresh ScheduleState, as a search does at each new program, so cached
// analyses are paid for once per iteration and never carried over. The program chains 30
// public-style nests: reductions, element-wise maps, a padded stencil and a softmax-like
// max/exp/normalize triple, 10 times over.
//
// BM_ApplyEverywhere reports apply throughput: every (site, parameter choice) of every strategy
// applied, candidates per second.
#include <benchmark/benchmark.h>

#include <string>

#include "ir/leir/program_io.h"
#include "transform/schedule_state.h"

namespace {

using namespace steptp;

leir::Program thirty_nests() {
  std::string decl = "input A: f64[8,16]\ninput W: f64[16,16]\n";
  std::string body;
  std::string prev = "A";
  for (int k = 0; k < 10; ++k) {
    std::string m = "M" + std::to_string(k), s = "S" + std::to_string(k), e = "E" + std::to_string(k);
    std::string out = k == 9 ? "C" : "X" + std::to_string(k);
    // GEMM-like reduction, then a padded shift stencil with a max-reduction, then normalize.
    body += "B^{8}_{tx=0}L^{16}_{a=0}L^{16}_{c=0}[" + m + "^{f64,g}_{tx,a}=" + m + "^{f64,g}_{tx,a}+" + prev +
            "^{f64,g}_{tx,c}*W^{f64,g}_{c,a};];";
    body += "B^{8}_{tx=0}L^{16}_{a=0}[" + s + "^{f64,g}_{tx}=max(" + s + "^{f64,g}_{tx},if_then_else(1<=a," + m +
            "^{f64,g}_{tx,a-1},0));];";
    body += "B^{8}_{tx=0}L^{4}_{a=0}L^{4}_{c=0}[" + out + "^{f64,g}_{tx,a*4+c}=exp(" + m + "^{f64,g}_{tx,a*4+c}-" + s +
            "^{f64,g}_{tx})*0.5;];";
    prev = out;
  }
  return leir::program_from_text(decl + "output C: f64[8,16]\n" + body, "bench.leir");
}

void BM_EnumerateSites(benchmark::State& state) {
  auto p = thirty_nests();
  size_t n = 0;
  for (auto _ : state) {
    n = 0;
    const strategies::ScheduleState st(p);
    for (const auto* s : strategies::all_strategies()) n += s->sites(st).size();
    benchmark::DoNotOptimize(n);
  }
  state.counters["sites"] = static_cast<double>(n);
  state.counters["strategies"] = static_cast<double>(strategies::all_strategies().size());
}
BENCHMARK(BM_EnumerateSites)->Unit(benchmark::kMillisecond);

void BM_EnumerateSitesAndParams(benchmark::State& state) {
  auto p = thirty_nests();
  size_t n = 0;
  for (auto _ : state) {
    n = 0;
    const strategies::ScheduleState st(p);
    for (const auto* s : strategies::all_strategies())
      for (const auto& site : s->sites(st)) n += s->param_space(st, site).size();
    benchmark::DoNotOptimize(n);
  }
  state.counters["choices"] = static_cast<double>(n);
}
BENCHMARK(BM_EnumerateSitesAndParams)->Unit(benchmark::kMillisecond);

void BM_ApplyEverywhere(benchmark::State& state) {
  auto p = thirty_nests();
  size_t applied = 0, choices = 0;
  for (auto _ : state) {
    const strategies::ScheduleState st(p);
    for (const auto* s : strategies::all_strategies())
      for (const auto& site : s->sites(st))
        for (const auto& params : s->param_space(st, site)) {
          ++choices;
          if (auto c = s->apply(st, site, params)) ++applied;
        }
  }
  state.counters["choices"] = static_cast<double>(choices / state.iterations());
  state.counters["candidates/s"] = benchmark::Counter(static_cast<double>(applied), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_ApplyEverywhere)->Unit(benchmark::kMillisecond);

// Per strategy, to see which one dominates.
void BM_SitesOf(benchmark::State& state) {
  auto p = thirty_nests();
  const auto* s = strategies::all_strategies().at(state.range(0));
  state.SetLabel(std::string(s->name()));
  for (auto _ : state) {
    const strategies::ScheduleState st(p);
    benchmark::DoNotOptimize(s->sites(st).size());
  }
}
BENCHMARK(BM_SitesOf)->DenseRange(0, 42)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
