// Backend benchmarks (run: build-*/bench/steptp_bench_backend).
//
// 1. Candidate throughput — what a search loop pays per candidate program: lower to C++, compile
//    (uncached candidates of one round batched into ONE compiler invocation), load, run on seeded
//    inputs. Reported as items_per_second = candidates/s.
//      BM_CandidatesUncached/N: N fresh tiny programs per round (distinct code, cold disk cache).
//      BM_CandidatesCached/N:   the same N programs again (kernels already loaded: lower + hash +
//                               run only). Target on 2 cores: >= 10 candidates/s for tiny programs.
// 2. BM_Gemm512_f32: a 512x512x512 f32 GEMM as the naive public-style LEIR, and after
//    strategy-like steps written by hand (loop reorder for unit stride, tiling, vectorized inner
//    loop, parallel outer loop), against OpenBLAS sgemm with the same thread count. All three are
//    timed in one run; counters: naive_ms, steps_ms, sgemm_ms, steps_vs_naive (speedup),
//    steps_vs_sgemm (sgemm time / steps time: 1.0 = as fast as OpenBLAS).
#include <benchmark/benchmark.h>
#include <cblas.h>
#include <omp.h>

#include <atomic>
#include <filesystem>

#include <fmt/format.h>

#include "backend/cpu/cpu_program.h"
#include "backend/measure/measure.h"
#include "interp/inputs.h"
#include "leir/program_io.h"

extern "C" void openblas_set_num_threads(int);

namespace {

using namespace steptp;

std::string temp_cache(const std::string& tag) {
  std::string d = fmt::format("/tmp/steptp-bench-{}-{}", tag, getpid());
  std::filesystem::remove_all(d);
  return d;
}

// A tiny public-style program (GEMM + bias + activation, 8x16x32); `salt` makes the code distinct.
leir::Program tiny_candidate(int salt) {
  return leir::program_from_text(fmt::format(R"(input A: f64[8,32]
param G: f64[16,32]
param H: f64[16]
output E: f64[8,16]
B^{{8}}_{{tx=0}}L^{{16}}_{{a=0}}L^{{32}}_{{c=0}}[C^{{f64,g}}_{{tx,a}}=C^{{f64,g}}_{{tx,a}}+A^{{f64,g}}_{{tx,c}}*G^{{f64,g}}_{{a,c}};];
B^{{8}}_{{tx=0}}L^{{16}}_{{a=0}}[E^{{f64,g}}_{{tx,a}}=max(C^{{f64,g}}_{{tx,a}}+H^{{f64,g}}_{{a}},{}*C^{{f64,g}}_{{tx,a}});];
)",
                                             0.001 * (salt + 1)),
                                 "candidate.leir");
}

std::atomic<int> g_salt{0};

void BM_CandidatesUncached(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  backend::cpu::KernelCompiler cc({.cache_dir = temp_cache("uncached")});
  for (auto _ : state) {
    std::vector<leir::Program> ps;
    for (int i = 0; i < n; ++i) ps.push_back(tiny_candidate(g_salt++));
    auto built = backend::cpu::build_cpu_programs(ps, {}, &cc);
    for (size_t i = 0; i < ps.size(); ++i) {
      if (!built[i].program) state.SkipWithError(built[i].error.c_str());
      else benchmark::DoNotOptimize(built[i].program->run(interp::generate_inputs(ps[i], i)));
    }
  }
  state.SetItemsProcessed(state.iterations() * n);
  state.counters["compiler_calls"] = cc.stats().invocations;
}
BENCHMARK(BM_CandidatesUncached)->Arg(1)->Arg(16)->Arg(64)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_CandidatesCached(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  backend::cpu::KernelCompiler cc({.cache_dir = temp_cache("cached")});
  std::vector<leir::Program> ps;
  for (int i = 0; i < n; ++i) ps.push_back(tiny_candidate(100000 + i));
  backend::cpu::build_cpu_programs(ps, {}, &cc);  // warm the cache
  for (auto _ : state) {
    auto built = backend::cpu::build_cpu_programs(ps, {}, &cc);
    for (size_t i = 0; i < ps.size(); ++i) benchmark::DoNotOptimize(built[i].program->run(interp::generate_inputs(ps[i], i)));
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_CandidatesCached)->Arg(16)->Unit(benchmark::kMillisecond)->UseRealTime();

constexpr const char* kGemmSig = "input A: f32[512,512]\ninput C: f32[512,512]\noutput D: f32[512,512]\n";
// Public translator form.
constexpr const char* kGemmNaive =
    "B^{512}_{tx=0}L^{512}_{a=0}L^{512}_{c=0}[D^{f32,g}_{tx,a}=D^{f32,g}_{tx,a}+A^{f32,g}_{tx,c}*C^{f32,g}_{c,a};];";
// After: reorder (c before a: unit-stride C and D rows), tile rows by 32 and k by 64 and columns
// by 256, vectorize the 256-wide column loop, parallelize the row tiles.
constexpr const char* kGemmSteps =
    "P^{16}_{i=0}L^{2}_{j=0}L^{8}_{k=0}L^{32}_{ii=0}L^{64}_{kk=0}V^{256}_{jj=0}"
    "[D^{f32,g}_{i*32+ii,j*256+jj}=D^{f32,g}_{i*32+ii,j*256+jj}+A^{f32,g}_{i*32+ii,k*64+kk}*C^{f32,g}_{k*64+kk,j*256+jj};];";

void BM_Gemm512_f32(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  backend::cpu::KernelCompiler cc({.cache_dir = temp_cache("gemm")});
  auto naive = leir::program_from_text(std::string(kGemmSig) + kGemmNaive, "naive.leir");
  auto steps = leir::program_from_text(std::string(kGemmSig) + kGemmSteps, "steps.leir");
  auto built = backend::cpu::build_cpu_programs({naive, steps}, {}, &cc);
  if (!built[0].program || !built[1].program) {
    state.SkipWithError((built[0].error + built[1].error).c_str());
    return;
  }
  auto in = interp::generate_inputs(naive, 1);
  auto bn = built[0].program->bind(in);
  auto bs = built[1].program->bind(in);
  std::vector<float> a(in.at("A").data.begin(), in.at("A").data.end()), c(in.at("C").data.begin(), in.at("C").data.end()),
      d(512 * 512);
  openblas_set_num_threads(threads);
  backend::MeasureOptions m{.min_time_s = 1.0, .min_repeats = 5, .max_time_s = 30, .threads = threads};
  backend::Comparison naive_vs_steps, steps_vs_blas;
  for (auto _ : state) {
    naive_vs_steps = backend::compare_interleaved([&] { built[0].program->run(*bn); }, [&] { built[1].program->run(*bs); }, m);
    steps_vs_blas = backend::compare_interleaved(
        [&] { built[1].program->run(*bs); },
        [&] { cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 512, 512, 512, 1.0f, a.data(), 512, c.data(), 512, 0.0f, d.data(), 512); },
        m);
  }
  state.counters["naive_ms"] = naive_vs_steps.a.median_ms;
  state.counters["steps_ms"] = naive_vs_steps.b.median_ms;
  state.counters["sgemm_ms"] = steps_vs_blas.b.median_ms;
  state.counters["steps_vs_naive"] = naive_vs_steps.speedup;
  state.counters["steps_vs_sgemm"] = 1.0 / steps_vs_blas.speedup;
}
BENCHMARK(BM_Gemm512_f32)->Arg(2)->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
