// Timing of candidates and the machine's peaks (see timing.h).
#include "apps/reward/timing.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

#include "base/atomic_file.h"
#include "base/error.h"
#include "lower/cpu/codegen.h"
#include "lower/cpu/compiler.h"
#include "ir/analysis/program_facts.h"
#include "search/tune/machine.h"
#include "search/tune/runner.h"

namespace steptp::reward {
namespace {

using nlohmann::json;

// Independent FMA chains (vectorized by -O3 -march=native): 2 flops per element per round.
constexpr const char* kFlopsKernel = R"(
extern "C" int STEPTP_KERNEL_SYMBOL(void* const* args) {
  const long rounds = *static_cast<const long*>(args[0]);
  double* out = static_cast<double*>(args[1]);
  double total = 0;
  #pragma omp parallel reduction(+:total)
  {
    double a[64];
    for (int i = 0; i < 64; ++i) a[i] = 1.0 + i * 1e-3;
    for (long k = 0; k < rounds; ++k)
      #pragma omp simd
      for (int i = 0; i < 64; ++i) a[i] = a[i] * 0.9999999 + 1e-7;
    for (int i = 0; i < 64; ++i) total += a[i];
  }
  *out = total;
  return 0;
}
)";

// Triad a = b + s*c over n doubles, `rounds` times: 24 bytes per element per round.
constexpr const char* kTriadKernel = R"(
extern "C" int STEPTP_KERNEL_SYMBOL(void* const* args) {
  const long n = *static_cast<const long*>(args[0]);
  const long rounds = *static_cast<const long*>(args[1]);
  double* a = static_cast<double*>(args[2]);
  const double* b = static_cast<const double*>(args[3]);
  const double* c = static_cast<const double*>(args[4]);
  for (long r = 0; r < rounds; ++r) {
    #pragma omp parallel for simd schedule(static)
    for (long i = 0; i < n; ++i) a[i] = b[i] + 1.0000001 * c[i];
  }
  return 0;
}
)";

backend::cpu::KernelFn compile_kernel(const char* code) {
  auto r = backend::cpu::default_compiler().compile_one(code);
  if (!r.kernel)
    throw base::Error(base::ErrorKind::Failed, "peak benchmark does not compile: " + r.error.substr(0, 300));
  return r.kernel->fn;
}


}  // namespace

MeasuredStep MeasuredStep::failed(const tune::PairResult& r) {
  MeasuredStep m;
  m.error = r.error;
  m.compiled = r.failure != tune::MeasureFailure::Compile;
  m.infrastructure = r.failure == tune::MeasureFailure::Infrastructure;
  return m;
}

MeasuredStep measure_step(const leir::Program& root, const leir::Program& parent, const leir::Program& candidate,
                          const MeasureSettings& s) {
  MeasuredStep m;
  m.threads = s.options.threads;
  std::vector<leir::TensorMap> outputs;
  auto res = tune::measure_pairs({root, parent, candidate}, {{1, 2}, {0, 2}}, s.options, s.input_seed,
                                 s.pair_timeout_s, nullptr, &outputs);
  for (const auto& r : res)
    if (!r.ok) return MeasuredStep::failed(r);
  m.compiled = m.ok = true;
  m.vs_parent = res[0].cmp;
  m.vs_root = res[1].cmp;
  // The root and the candidate ran on the same inputs (a verified candidate declares the root's).
  m.outputs = verify::compare_outputs(root, {{&outputs[0], &outputs[2]}}, {s.input_seed});
  return m;
}

MeasuredPair measure_pair(const leir::Program& a, const leir::Program& b, const MeasureSettings& s) {
  MeasuredPair m;
  auto r = tune::measure_pairs({a, b}, {{0, 1}}, s.options, s.input_seed, s.pair_timeout_s).front();
  m.ok = r.ok;
  m.error = r.error;
  m.compiled = r.ok || r.failure != tune::MeasureFailure::Compile;
  m.cmp = r.cmp;
  return m;
}

MachinePeaks measure_peaks(int threads) {
  MachinePeaks p;
  p.threads = threads;
  backend::MeasureOptions mo{.warmup = 1, .min_time_s = 0.05, .min_repeats = 5, .max_time_s = 2.0,
                             .threads = threads};
  {
    auto fn = compile_kernel(kFlopsKernel);
    long rounds = 200000;
    double out = 0;
    void* args[] = {&rounds, &out};
    auto t = backend::measure([&] { fn(args); }, mo);
    p.flops_per_s = 2.0 * 64 * double(rounds) * threads / (t.min_ms * 1e-3);
  }
  auto fn = compile_kernel(kTriadKernel);
  for (long n : {1L << 10, 1L << 13, 1L << 16, 1L << 21}) {  // 24 KiB (L1) ... 48 MiB (DRAM)
    std::vector<double> a(size_t(n), 0.0), b(size_t(n), 1.0), c(size_t(n), 2.0);
    long rounds = std::max(1L, (1L << 24) / n);
    void* args[] = {&n, &rounds, a.data(), b.data(), c.data()};
    auto t = backend::measure([&] { fn(args); }, mo);
    p.bytes_per_s = std::max(p.bytes_per_s, 24.0 * double(n) * double(rounds) / (t.min_ms * 1e-3));
  }
  return p;
}

json to_json(const MachinePeaks& p) {
  return {{"flops_per_s", p.flops_per_s}, {"bytes_per_s", p.bytes_per_s}, {"threads", p.threads}};
}

json to_json(const backend::TimingStats& t) {
  return {{"median_ms", t.median_ms}, {"min_ms", t.min_ms}, {"max_ms", t.max_ms}, {"cv", t.cv}, {"repeats", t.repeats}};
}

MachinePeaks cached_peaks(const std::string& path, int threads) {
  namespace fs = std::filesystem;
  const std::string id = tune::fingerprint(tune::this_machine(threads));
  json all = json::object();
  if (std::ifstream in(path); in) {
    all = json::parse(in, nullptr, false);
    if (!all.is_object()) all = json::object();
  }
  const std::string& key = id;  // the fingerprint includes the thread count
  if (all.contains(key) && all[key].is_object()) {
    const auto& j = all[key];
    return {j.value("flops_per_s", 0.0), j.value("bytes_per_s", 0.0), threads};
  }
  MachinePeaks p = measure_peaks(threads);
  all[key] = to_json(p);
  fs::path target(path);
  if (target.has_parent_path()) fs::create_directories(target.parent_path());
  base::write_file_atomically(path, all.dump(2) + "\n");
  return p;
}

double lower_bound_seconds(const leir::Program& p, const MachinePeaks& peaks) {
  double io_bytes = 0;
  for (const auto& d : p.known) io_bytes += double(d.numel()) * leir::byte_size(d.dtype);
  double flops = double(analysis::program_facts(p).flops);
  double t_flops = peaks.flops_per_s > 0 ? flops / peaks.flops_per_s : 0;
  double t_bytes = peaks.bytes_per_s > 0 ? io_bytes / peaks.bytes_per_s : 0;
  return std::max(t_flops, t_bytes);
}

}  // namespace steptp::reward
