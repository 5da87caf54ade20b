// Backend benchmarks (run: build-*/bench/steptp_bench_backend).
//
// 1. Candidate throughput — what a search loop pays per candidate program: lower to C++, compile
//    (the uncached candidates of one round form one batch, split over parallel compiler
//    processes), load, run on seeded inputs. Reported as items_per_second = candidates/s.
//      BM_CandidatesUncached/N: N fresh tiny programs per round (distinct code, no kernel cached;
//                               the cache dir's precompiled prelude is built before timing, as
//                               it is once per cache). Counters: compile_ms and run_ms per
//                               candidate (lower+compile+load vs bind+run+outputs, wall) and
//                               compiler_cpu_ms (CPU time of the compiler processes per
//                               candidate: independent of the machine's load).
//      BM_CandidatesUncachedSerial/N: the same with one compiler process per batch and no
//                               precompiled prelude (the compiler before those two changes).
//      BM_CandidatesCached/N:   the same N programs again (kernels already loaded: lower + hash +
//                               run only). Target on 2 cores: >= 10 candidates/s for tiny programs.
// 2. BM_Gemm512_f32: a 512x512x512 f32 GEMM as the naive public-style LEIR, and after a sequence
//    of registry strategies (kGemmSteps: loop_reorder for unit stride, loop_tiling, loop_split,
//    loop_reorder + loop_unrolling for a 4 x 16 register block, loop_vectorization; each step checked with strategies::check_equivalent on a 128^3 replay,
//    the final program against the naive one at 512^3 on the CPU), against OpenBLAS sgemm with
//    the same thread count. All three are timed in one run; counters: naive_ms, steps_ms,
//    sgemm_ms, steps_vs_naive (speedup), steps_vs_sgemm (sgemm time / steps time: 1.0 = as fast
//    as OpenBLAS), openblas_parallel (1 = pthreads build). The OpenBLAS configuration is printed:
//    Debian's OpenBLAS 0.3.21 (DYNAMIC_ARCH) picks its kernels by CPU model and falls back to
//    Prescott (SSE3) on CPUs it does not know (e.g. a VM reporting "Intel Xeon Processor" with
//    AVX-512); OPENBLAS_CORETYPE=SkylakeX (or Haswell) in the environment forces the fast ones.
#include <benchmark/benchmark.h>
#include <cblas.h>
#include <omp.h>
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <stdexcept>

#include <fmt/format.h>

#include "lower/cpu/cpu_program.h"
#include "lower/measure/measure.h"
#include "ir/interp/inputs.h"
#include "ir/leir/printer.h"
#include "ir/leir/program_io.h"
#include "transform/equivalence.h"
#include "transform/strategy.h"

extern "C" void openblas_set_num_threads(int);
extern "C" int openblas_get_parallel();
extern "C" char* openblas_get_config();

namespace {

using namespace steptp;

// A fresh cache dir for one benchmark, removed afterwards (loaded kernels stay mapped).
struct TempCache {
  std::string path;
  explicit TempCache(const std::string& tag) : path(fmt::format("/tmp/steptp-bench-{}-{}", tag, getpid())) {
    std::filesystem::remove_all(path);
  }
  ~TempCache() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

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

// CPU time of the finished child processes (the compilers), milliseconds: unlike wall time it
// does not depend on what else runs on the machine.
double children_cpu_ms() {
  rusage ru{};
  getrusage(RUSAGE_CHILDREN, &ru);
  return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

void candidates_uncached(benchmark::State& state, bool serial) {
  const int n = static_cast<int>(state.range(0));
  TempCache dir(serial ? "serial" : "uncached");
  backend::cpu::KernelCompiler cc(serial ? backend::cpu::CompilerOptions{.cache_dir = dir.path, .jobs = 1, .precompiled_prelude = false}
                                         : backend::cpu::CompilerOptions{.cache_dir = dir.path});
  backend::cpu::build_cpu_programs({tiny_candidate(-1000 - n)}, {}, &cc);  // builds the PCH
  const int invocations0 = cc.stats().invocations;
  double compile_ms = 0, run_ms = 0;
  const double cpu0 = children_cpu_ms();
  for (auto _ : state) {
    std::vector<leir::Program> ps;
    for (int i = 0; i < n; ++i) ps.push_back(tiny_candidate(g_salt++));
    auto t0 = std::chrono::steady_clock::now();
    auto built = backend::cpu::build_cpu_programs(ps, {}, &cc);
    compile_ms += ms_since(t0);
    t0 = std::chrono::steady_clock::now();
    for (size_t i = 0; i < ps.size(); ++i) {
      if (!built[i].program) state.SkipWithError(built[i].error.c_str());
      else benchmark::DoNotOptimize(built[i].program->run(interp::generate_inputs(ps[i], i)));
    }
    run_ms += ms_since(t0);
  }
  const double cands = static_cast<double>(state.iterations()) * n;
  state.SetItemsProcessed(state.iterations() * n);
  state.counters["compiler_calls"] = cc.stats().invocations - invocations0;
  state.counters["compile_ms"] = compile_ms / cands;
  state.counters["run_ms"] = run_ms / cands;
  state.counters["compiler_cpu_ms"] = (children_cpu_ms() - cpu0) / cands;
}
void BM_CandidatesUncached(benchmark::State& state) { candidates_uncached(state, false); }
BENCHMARK(BM_CandidatesUncached)->Arg(1)->Arg(16)->Arg(32)->Arg(64)->Unit(benchmark::kMillisecond)->UseRealTime();
// The compiler as it was before batches were split: one process, prelude parsed as text.
void BM_CandidatesUncachedSerial(benchmark::State& state) { candidates_uncached(state, true); }
BENCHMARK(BM_CandidatesUncachedSerial)->Arg(1)->Arg(32)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_CandidatesCached(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  TempCache dir("cached");
  backend::cpu::KernelCompiler cc({.cache_dir = dir.path});
  std::vector<leir::Program> ps;
  for (int i = 0; i < n; ++i) ps.push_back(tiny_candidate(100000 + i));
  backend::cpu::build_cpu_programs(ps, {}, &cc);  // warm the cache
  for (auto _ : state) {
    auto built = backend::cpu::build_cpu_programs(ps, {}, &cc);
    for (size_t i = 0; i < ps.size(); ++i) benchmark::DoNotOptimize(built[i].program->run(interp::generate_inputs(ps[i], i)));
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_CandidatesCached)->Arg(16)->Arg(32)->Unit(benchmark::kMillisecond)->UseRealTime();

// The naive public translator form of D = A @ C (n x n x n, f32): B over rows; reduction c
// outside the column loop a, so C is read with stride n.
leir::Program gemm_naive(int n) {
  return leir::program_from_text(
      fmt::format("input A: f32[{0},{0}]\ninput C: f32[{0},{0}]\noutput D: f32[{0},{0}]\n"
                  "B^{{{0}}}_{{tx=0}}L^{{{0}}}_{{a=0}}L^{{{0}}}_{{c=0}}[D^{{f32,g}}_{{tx,a}}=D^{{f32,g}}_{{tx,a}}+"
                  "A^{{f32,g}}_{{tx,c}}*C^{{f32,g}}_{{c,a}};];",
                  n),
      fmt::format("gemm{}.leir", n));
}

// One strategy application: the registry strategy `name` at the site whose description contains
// `site` (descriptions name loops, not extents, so the same steps replay at another size).
struct Step {
  const char* name;
  const char* site;
  strategies::Params params;
};

// 1. loop_reorder c before a: D and C rows become unit-stride in the innermost loop.
// 2. loop_tiling rows x k by 32 x 64: the 64 C rows of a k-tile are reused by 32 rows of A.
// 3. loop_split the column loop into 32 x 16 and 4. the row loop of a tile into 8 x 4,
// 5. loop_reorder the 16-column block (c) outside k (g) and the 4 rows (i) inside it, so a 4 x 16
//    block of D is updated across the whole k-tile: register blocking;
// 6. loop_unrolling the 4 rows (U: unrolled, 4 independent vector updates per C row segment) and
// 7. loop_vectorization of the 16 columns (V: omp simd).
// The row-tile loop is B in the naive form already (OpenMP parallel for), so no parallelization
// step is needed: loop_parallelization refuses it ("loop is already B").
const std::vector<Step> kGemmSteps = {
    {"loop_reorder", "nest 0", {{"order", std::vector<int64_t>{0, 2, 1}}}},
    {"loop_tiling", "loops tx,c", {{"tiles", std::vector<int64_t>{32, 64}}}},
    {"loop_split", "loop a (", {{"factor", int64_t{32}}}},
    {"loop_split", "loop d (", {{"factor", int64_t{8}}}},
    {"loop_reorder", "nest 0", {{"order", std::vector<int64_t>{0, 1, 2, 5, 4, 3, 6}}}},
    {"loop_unrolling", "loop i (", {}},
    {"loop_vectorization", "loop h (", {}},
};

leir::Program apply_step(const leir::Program& p, const Step& st) {
  const auto* s = strategies::find_strategy(st.name);
  if (!s) throw std::runtime_error(fmt::format("strategy {} is not registered", st.name));
  auto sites = s->sites(p);
  for (size_t i = 0; i < sites.size(); ++i) {
    if (sites[i].description.find(st.site) == std::string::npos) continue;
    auto space = s->param_space(p, sites[i]);
    if (std::find(space.begin(), space.end(), st.params) == space.end())
      throw std::runtime_error(fmt::format("{} at '{}': params {} not in the parameter space", st.name,
                                           sites[i].description, strategies::params_to_json(st.params)));
    auto c = s->apply(p, sites[i], st.params);
    if (!c) throw std::runtime_error(fmt::format("{} at '{}' refused its params", st.name, sites[i].description));
    return c->program;
  }
  std::string have;
  for (const auto& r : s->explain(p)) have += fmt::format("\n  refused {}: {}", r.site, r.reason);
  throw std::runtime_error(fmt::format("{}: no site '{}' in {}{}", st.name, st.site, leir::print_body(p.body), have));
}

// Applies kGemmSteps to the naive n^3 GEMM; with `check`, every step's result must be
// equivalent to its input (interpreter, seeded trials: strategies::check_equivalent).
leir::Program gemm_stepped(int n, bool check, bool print) {
  leir::Program p = gemm_naive(n);
  for (const auto& st : kGemmSteps) {
    leir::Program q = apply_step(p, st);
    if (check) {
      auto eq = strategies::check_equivalent(p, q, {.trials = 1, .seed = 1});
      if (!eq.ok) throw std::runtime_error(fmt::format("{} is not equivalent: {}", st.name, eq.message));
    }
    if (print)
      std::cerr << fmt::format("[gemm step] {} at '{}' {} -> {}\n", st.name, st.site, strategies::params_to_json(st.params),
                               leir::print_body(q.body));
    p = std::move(q);
  }
  return p;
}

void BM_Gemm512_f32(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  TempCache dir("gemm");
  backend::cpu::KernelCompiler cc({.cache_dir = dir.path});
  leir::Program naive = gemm_naive(512), steps;
  try {
    gemm_stepped(128, /*check=*/true, /*print=*/false);  // the same steps, verified at 128^3
    steps = gemm_stepped(512, false, true);
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return;
  }
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
  // The stepped kernel and sgemm must compute the naive kernel's product (f32, 512-term sums of
  // products of values in [-1, 1]: |error| well below 1e-3).
  built[0].program->run(*bn);
  built[1].program->run(*bs);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 512, 512, 512, 1.0f, a.data(), 512, c.data(), 512, 0.0f, d.data(), 512);
  auto dn = built[0].program->outputs(*bn).at("D").data, ds = built[1].program->outputs(*bs).at("D").data;
  double err_steps = 0, err_blas = 0;
  for (size_t i = 0; i < dn.size(); ++i) {
    err_steps = std::max(err_steps, std::abs(dn[i] - ds[i]));
    err_blas = std::max(err_blas, std::abs(dn[i] - d[i]));
  }
  if (!(err_steps < 1e-3 && err_blas < 1e-3)) {
    state.SkipWithError(fmt::format("results differ: steps {} sgemm {}", err_steps, err_blas).c_str());
    return;
  }
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
  std::cerr << "[gemm] OpenBLAS: " << openblas_get_config() << "\n";
  state.counters["naive_ms"] = naive_vs_steps.a.median_ms;
  state.counters["steps_ms"] = naive_vs_steps.b.median_ms;
  state.counters["sgemm_ms"] = steps_vs_blas.b.median_ms;
  state.counters["steps_vs_naive"] = naive_vs_steps.speedup;
  state.counters["steps_vs_sgemm"] = 1.0 / steps_vs_blas.speedup;
  state.counters["openblas_parallel"] = openblas_get_parallel();
}
BENCHMARK(BM_Gemm512_f32)->Arg(2)->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
