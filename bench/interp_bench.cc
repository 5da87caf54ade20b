// Interpreter throughput in statement executions per second (issue 2 target: >= 30 M/s on one
// core) on a matmul-like and a softmax-like program, with and without race detection.
#include <benchmark/benchmark.h>

#include "ir/interp/inputs.h"
#include "ir/interp/interpreter.h"
#include "ir/leir/program_io.h"

namespace {

using namespace steptp;

// 128x128x128 f64 matmul in the public translator's style (B loop outermost: race-checked).
const char* kMatmul = R"(
input  A: f64[128,128]
input  C: f64[128,128]
output D: f64[128,128]
B^{128}_{tx=0}L^{128}_{a=0}L^{128}_{c=0}[D^{f64,g}_{tx,a}=D^{f64,g}_{tx,a}+A^{f64,g}_{tx,c}*C^{f64,g}_{c,a};];
)";

// Row softmax over 256x1024: max, sum of exponentials, normalize.
const char* kSoftmax = R"(
input  A: f64[256,1024]
output C: f64[256,1024]
B^{256}_{tx=0}L^{1024}_{a=0}[D^{f64,g}_{tx}=max(D^{f64,g}_{tx},A^{f64,g}_{tx,a});];
B^{256}_{tx=0}L^{1024}_{a=0}[E^{f64,g}_{tx}=E^{f64,g}_{tx}+exp(A^{f64,g}_{tx,a}-D^{f64,g}_{tx});];
B^{256}_{tx=0}L^{1024}_{a=0}[C^{f64,g}_{tx,a}=exp(A^{f64,g}_{tx,a}-D^{f64,g}_{tx})/E^{f64,g}_{tx};];
)";

void run_bench(benchmark::State& state, const char* text, bool races) {
  leir::Program p = leir::program_from_text(text, "bench.leir");
  interp::Interpreter interp(p);
  leir::TensorMap inputs = interp::generate_inputs(p, 1);
  interp::RunOptions opts;
  opts.detect_races = races;
  uint64_t stmts = 0;
  for (auto _ : state) {
    auto out = interp.run(inputs, opts);
    benchmark::DoNotOptimize(out);
    stmts += interp.last_statement_count();
  }
  state.counters["stmts_per_s"] = benchmark::Counter(static_cast<double>(stmts), benchmark::Counter::kIsRate);
}

void BM_Matmul128(benchmark::State& s) { run_bench(s, kMatmul, true); }
void BM_Matmul128_NoRaceCheck(benchmark::State& s) { run_bench(s, kMatmul, false); }
void BM_Softmax256x1024(benchmark::State& s) { run_bench(s, kSoftmax, true); }
void BM_Softmax256x1024_NoRaceCheck(benchmark::State& s) { run_bench(s, kSoftmax, false); }

BENCHMARK(BM_Matmul128)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Matmul128_NoRaceCheck)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Softmax256x1024)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Softmax256x1024_NoRaceCheck)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
