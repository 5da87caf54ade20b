// Which vector math library the CPU lowering calls (docs/vector-math.md): glibc's libmvec
// against SLEEF's GNU-ABI build (libsleefgnuabi.so.3, Debian libsleef3, which python3-torch
// already pulls in), through the very entry points GCC emits for AVX2 loops (_ZGVdN8v_expf,
// _ZGVdN4v_exp, ...), plus glibc's scalar function. Per function and dtype: nanoseconds per
// element (best of 5 passes over 2^20 seeded inputs) and the max error in ulps against the
// float64 (for f32) or long double (for f64) result over the same inputs.
//
// usage: build/bench/steptp_bench_vector_libs        (needs an AVX2 CPU)
#include <dlfcn.h>
#include <immintrin.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

namespace {

struct Fn {
  const char* name;
  double lo, hi;                    // f32 sweep
  double lo64, hi64;                // f64 sweep
  long double (*ref)(long double);  // nullptr: pow
};

const Fn kFns[] = {
    {"exp", -87, 88, -700, 700, expl},       {"log", 1e-30, 1e30, 1e-300, 1e300, logl},
    {"log1p", -0.99, 100, -0.99, 100, log1pl}, {"erf", -6, 6, -6, 6, erfl},
    {"tanh", -10, 10, -20, 20, tanhl},       {"sin", -100, 100, -100, 100, sinl},
    {"cos", -100, 100, -100, 100, cosl},     {"pow", 1e-3, 10, 1e-3, 10, nullptr},
};

template <class T>
double ulp_error(T got, long double want) {
  if (std::isnan(want) || std::isinf(want)) return (got == want || (std::isnan(got) && std::isnan(want))) ? 0 : INFINITY;
  T w = static_cast<T>(want);
  long double spacing = std::nextafter(std::fabs(w), static_cast<T>(INFINITY)) - std::fabs(w);
  return static_cast<double>(std::fabs(static_cast<long double>(got) - want) / spacing);
}

// One pass of the vector entry point over x (and y for pow) into out; 8 floats or 4 doubles a call.
template <class T>
__attribute__((target("avx2,fma"))) void run_vector(void* fn, bool binary, const std::vector<T>& x,
                                                     const std::vector<T>& y, std::vector<T>& out) {
  if constexpr (sizeof(T) == 4) {
    for (size_t i = 0; i < x.size(); i += 8) {
      __m256 a = _mm256_loadu_ps(&x[i]), b = _mm256_loadu_ps(&y[i]);
      __m256 r = binary ? reinterpret_cast<__m256 (*)(__m256, __m256)>(fn)(a, b) : reinterpret_cast<__m256 (*)(__m256)>(fn)(a);
      _mm256_storeu_ps(&out[i], r);
    }
  } else {
    for (size_t i = 0; i < x.size(); i += 4) {
      __m256d a = _mm256_loadu_pd(&x[i]), b = _mm256_loadu_pd(&y[i]);
      __m256d r = binary ? reinterpret_cast<__m256d (*)(__m256d, __m256d)>(fn)(a, b)
                         : reinterpret_cast<__m256d (*)(__m256d)>(fn)(a);
      _mm256_storeu_pd(&out[i], r);
    }
  }
}

template <class T>
void measure(const Fn& f, void* mvec, void* sleef, void* libm) {
  constexpr bool f32 = sizeof(T) == 4;
  const size_t n = 1 << 20;
  const bool binary = f.ref == nullptr;
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> ux(f32 ? f.lo : f.lo64, f32 ? f.hi : f.hi64), uy(-4, 4);
  std::vector<T> x(n), y(n), out(n);
  for (size_t i = 0; i < n; ++i) x[i] = static_cast<T>(ux(rng)), y[i] = static_cast<T>(uy(rng));
  std::vector<long double> want(n);
  for (size_t i = 0; i < n; ++i) want[i] = binary ? powl(x[i], y[i]) : f.ref(x[i]);
  std::string scalar = std::string(f.name) + (f32 ? "f" : "");
  std::string vec = std::string(f32 ? "_ZGVdN8" : "_ZGVdN4") + (binary ? "vv_" : "v_") + scalar;
  struct Lib {
    const char* label;
    void* fn;
    bool vector;
  } libs[] = {{"libmvec", dlsym(mvec, vec.c_str()), true},
              {"sleef", sleef ? dlsym(sleef, vec.c_str()) : nullptr, true},
              {"libm (scalar)", dlsym(libm, scalar.c_str()), false}};
  for (const auto& lib : libs) {
    if (!lib.fn) {
      std::printf("| %s | %s | %s | - | - |\n", scalar.c_str(), f32 ? "f32" : "f64", lib.label);
      continue;
    }
    double best = INFINITY;
    for (int rep = 0; rep < 5; ++rep) {
      auto t0 = std::chrono::steady_clock::now();
      if (lib.vector) {
        run_vector<T>(lib.fn, binary, x, y, out);
      } else if (binary) {
        auto g = reinterpret_cast<T (*)(T, T)>(lib.fn);
        for (size_t i = 0; i < n; ++i) out[i] = g(x[i], y[i]);
      } else {
        auto g = reinterpret_cast<T (*)(T)>(lib.fn);
        for (size_t i = 0; i < n; ++i) out[i] = g(x[i]);
      }
      best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    double worst = 0;
    for (size_t i = 0; i < n; ++i) worst = std::max(worst, ulp_error(out[i], want[i]));
    std::printf("| %s | %s | %s | %.2f | %.2f |\n", scalar.c_str(), f32 ? "f32" : "f64", lib.label, best / n * 1e9, worst);
  }
}

}  // namespace

int main() {
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
    std::fprintf(stderr, "steptp_bench_vector_libs: needs an AVX2+FMA CPU (the _ZGVd entry points)\n");
    return 1;
  }
  void* mvec = dlopen("libmvec.so.1", RTLD_NOW | RTLD_LOCAL);
  void* sleef = dlopen("libsleefgnuabi.so.3", RTLD_NOW | RTLD_LOCAL);
  void* libm = dlopen("libm.so.6", RTLD_NOW | RTLD_LOCAL);
  if (!mvec || !libm) {
    std::fprintf(stderr, "steptp_bench_vector_libs: cannot load libmvec/libm: %s\n", dlerror());
    return 1;
  }
  if (!sleef) std::fprintf(stderr, "note: libsleefgnuabi.so.3 not found (apt-get install libsleef3); SLEEF rows empty\n");
  std::printf("| function | dtype | library | ns/element | max ulp |\n|---|---|---|---|---|\n");
  for (const auto& f : kFns) measure<float>(f, mvec, sleef, libm);
  for (const auto& f : kFns) measure<double>(f, mvec, sleef, libm);
  return 0;
}
