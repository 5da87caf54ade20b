// OpenBLAS sgemm baseline of bench/tune_panel.py (docs/benchmarks.md): C = A·B in f32, row major,
// M×K times K×N, timed with steptp's protocol (lower/measure) in a process of its own, so no
// OpenMP pool of ours spins beside OpenBLAS's threads.
//   steptp_sgemm [--m 512] [--n 512] [--k 512] [--threads T] [--min-time S] [--json]
// Prints openblas_get_config() (on stderr, and as "config" in the JSON): Debian's OpenBLAS 0.3.21
// (DYNAMIC_ARCH) falls back to Prescott kernels on CPUs it does not know, so the caller sets
// OPENBLAS_CORETYPE to the kernels the CPU really supports (tune_panel.py does) and the output
// says which ran. --json: {"median_ms","min_ms","max_ms","cv","repeats","gflops","config","threads"}.
#include <cblas.h>

#include <CLI/CLI.hpp>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>
#include <vector>

#include "lower/measure/measure.h"

extern "C" void openblas_set_num_threads(int);
extern "C" char* openblas_get_config();

int main(int argc, char** argv) {
  CLI::App app{"time OpenBLAS sgemm with steptp's measurement protocol"};
  int m = 512, n = 512, k = 512, threads = 1;
  double min_time = 0.5;
  bool json = false;
  app.add_option("--m", m, "rows of A and C")->check(CLI::PositiveNumber);
  app.add_option("--n", n, "columns of B and C")->check(CLI::PositiveNumber);
  app.add_option("--k", k, "columns of A, rows of B")->check(CLI::PositiveNumber);
  app.add_option("--threads", threads, "OpenBLAS threads")->check(CLI::PositiveNumber);
  app.add_option("--min-time", min_time, "minimum measuring time in seconds")->check(CLI::NonNegativeNumber);
  app.add_flag("--json", json, "one JSON object on stdout");
  CLI11_PARSE(app, argc, argv);

  std::mt19937 rng(0);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> a(size_t(m) * k), b(size_t(k) * n), c(size_t(m) * n);
  for (auto& x : a) x = u(rng);
  for (auto& x : b) x = u(rng);
  openblas_set_num_threads(threads);
  steptp::backend::MeasureOptions o;
  o.min_time_s = min_time;
  auto s = steptp::backend::measure(
      [&] { cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, c.data(), n); },
      o);
  const std::string config = openblas_get_config();
  std::cerr << "OpenBLAS: " << config << "\n";
  const double gflops = 2.0 * m * n * k / (s.median_ms * 1e6);
  if (json) {
    std::cout << nlohmann::json{{"median_ms", s.median_ms}, {"min_ms", s.min_ms}, {"max_ms", s.max_ms}, {"cv", s.cv},
                                {"repeats", s.repeats}, {"gflops", gflops}, {"config", config}, {"threads", threads}}
                     .dump()
              << "\n";
  } else {
    std::cout << "sgemm " << m << "x" << n << "x" << k << ": median " << s.median_ms << " ms (" << gflops << " GFLOP/s, cv "
              << s.cv << ", " << s.repeats << " repeats, " << threads << " threads)\n";
  }
  return 0;
}
