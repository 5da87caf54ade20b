// Vector math in the CPU lowering (issue 14): every elementwise function LEIR has, in V loops and
// in plain loops GCC vectorizes, on edge inputs (±inf, NaN, ±0, denormals, overflow and
// underflow boundaries, huge arguments), f32 and f64, against the reference interpreter: finite
// values within the dtype's verifier tolerance, NaN and inf (with sign) exactly where the
// interpreter has them. Also checks that the kernels really call libmvec's vector variants, that
// turning vector math off changes the cache key, that reductions of plain loops keep their exact
// order and that V loops over a reduction axis become vector reductions.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cfloat>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include "lower/cpu/codegen.h"
#include "lower/cpu/cpu_program.h"
#include "backend_test_util.h"
#include "ir/interp/interpreter.h"
#include "ir/leir/program_io.h"
#include "ir/verify/verifier.h"

namespace steptp::backend {
namespace {

using namespace cpu;
using testing::TempDir;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct Fn {
  std::string leir;     // the right-hand side over X (and Y for pow)
  std::string libmvec;  // the vector entry point it must become ("" when inlined: sqrt, abs)
};

const std::vector<Fn> kFunctions = {
    {"exp(X)", "exp"},     {"log(X)", "log"},       {"sqrt(X)", ""},     {"erf(X)", "erf"},
    {"tanh(X)", "tanh"},   {"sigmoid(X)", "exp"},   {"X**Y", "pow"},     {"sin(X)", "sin"},
    {"cos(X)", "cos"},     {"log1p(X)", "log1p"},   {"rsqrt(X)", ""},
    // Branch-free max/min (NaN from either side) and if_then_else with both branches evaluated:
    // the clamps and piecewise activations; elu's exp must still be the vector variant, which
    // it can only be when the select does not branch (elu-like; exp(X)-1 would cancel in f32).
    {"max(X,Y)", ""},      {"min(X,Y)", ""},        {"min(max(X,0),6)", ""},
    {"if_then_else(X>0,X,0.5*exp(X))", "exp"},  {"if_then_else(X<Y,0.01*X,Y)", ""},
};

// Edge values of both dtypes; the f32 programs get them rounded to float (beyond-range ones
// become ±inf, tiny ones denormal or zero).
std::vector<double> edge_values() {
  std::vector<double> v = {kNaN, -kNaN, kInf, -kInf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0, 0.1, -0.1,
                           1e-8, -1e-8, 10.0, -10.0, 30.0, -30.0, 88.7, -87.3, 88.73, 89.0, -103.9, -104.0, -150.0,
                           709.7, 709.8, -745.0, -746.0, 1e4, -1e4, 1e20, -1e20, 1e300, -1e300, M_PI, -M_PI,
                           M_PI / 2, 1e6 * M_PI, 1.5e38, -1.5e38, FLT_MAX, -FLT_MAX, DBL_MAX, -DBL_MAX,
                           FLT_MIN, -FLT_MIN, FLT_TRUE_MIN, -FLT_TRUE_MIN, 1e-40, -1e-40, DBL_MIN, DBL_TRUE_MIN,
                           -DBL_TRUE_MIN, 1e-310, -0.99999, -1.0 + 1e-12, 0.4999, 4.0, 5.5, -5.5};
  return v;
}
std::vector<double> exponents() { return {0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 3.0, -2.0, 2.5, -0.5, 40.0, kInf, -kInf, kNaN}; }

double as_dtype(double x, leir::DType d) { return d == leir::DType::F32 ? static_cast<double>(static_cast<float>(x)) : x; }

// X holds every edge value (each once per exponent, so pow sees every pair) padded with
// ordinary values, long enough that the edges land in the vector body, not only the remainder.
leir::TensorMap sweep_inputs(leir::DType d, int64_t n) {
  auto xs = edge_values(), ys = exponents();
  leir::TensorValue x{d, {n}, {}}, y{d, {n}, {}};
  for (int64_t i = 0; i < n; ++i) {
    int64_t pair = i / 2;  // every other element ordinary: edges in every vector lane position
    double xv = (i % 2) ? std::sin(0.37 * i) * 4 : xs[pair % xs.size()];
    double yv = ys[(pair / xs.size() + i) % ys.size()];
    x.data.push_back(as_dtype(xv, d));
    y.data.push_back(as_dtype(yv, d));
  }
  return {{"X", x}, {"Y", y}};
}

leir::Program function_program(const Fn& f, leir::DType d, int64_t n, char loop) {
  std::string t = std::string(leir::to_string(d));
  std::string body = f.leir;
  for (std::string v : {"X", "Y"}) {
    std::string acc = fmt::format("{}^{{{},g}}_{{a}}", v, t);
    for (size_t pos = body.find(v); pos != std::string::npos; pos = body.find(v, pos + acc.size()))
      body.replace(pos, 1, acc);
  }
  return leir::program_from_text(fmt::format("input X: {0}[{1}]\ninput Y: {0}[{1}]\noutput D: {0}[{1}]\n"
                                             "{2}^{{{1}}}_{{a=0}}[D^{{{0},g}}_{{a}}={3};];\n",
                                             t, n, loop, body),
                                 "vecmath.leir");
}

// Strict element rule: NaN where NaN, the same infinity, else |got - want| <= rtol |want| + the
// dtype's smallest normal (denormal results may differ in their few significant bits).
std::string compare_strict(const leir::TensorValue& got, const leir::TensorValue& want, const leir::TensorValue& x,
                           const leir::TensorValue& y, leir::DType d) {
  double rtol = verify::tolerance_for(d).rtol;
  double atol = d == leir::DType::F32 ? FLT_MIN : DBL_MIN;
  for (size_t i = 0; i < want.data.size(); ++i) {
    double g = got.data[i], w = want.data[i];
    bool ok = std::isnan(w) ? std::isnan(g) : (std::isinf(w) || std::isinf(g)) ? g == w
                                                                                 : std::abs(g - w) <= atol + rtol * std::abs(w);
    if (!ok) return fmt::format("element {} (x={}, y={}): got {}, interpreter {}", i, x.data[i], y.data[i], g, w);
  }
  return "";
}

// Names of the vector-ABI functions (_ZGV...) a kernel's shared object imports.
std::vector<std::string> vector_symbols(const std::string& so_path) {
  std::ifstream in(so_path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string bytes = ss.str();
  std::vector<std::string> out;
  for (size_t pos = bytes.find("_ZGV"); pos != std::string::npos; pos = bytes.find("_ZGV", pos + 1))
    out.emplace_back(bytes.c_str() + pos);
  return out;
}

bool imports_vector(const std::vector<std::string>& syms, const std::string& fn) {
  for (const auto& s : syms) {
    auto us = s.rfind('_');
    if (us != std::string::npos && s.substr(us + 1) == fn) return true;
  }
  return false;
}

class VectorMath : public ::testing::TestWithParam<leir::DType> {};

// An if_then_else whose branches read only elements the condition reads (same subscripts, a
// tensor no larger) is evaluated eagerly through steptp_select; one reading anything else (the
// prefix scan's P_{a-1}, out of bounds at a=0) stays a lazy `?:`, and still runs correctly.
TEST(VectorMathCompiler, OnlyBranchesSafeToSpeculateBecomeSelects) {
  auto eager = leir::program_from_text(
      "input X: f32[64]\noutput D: f32[64]\nL^{64}_{a=0}[D^{f32,g}_{a}=if_then_else(X^{f32,g}_{a}>0,X^{f32,g}_{a},"
      "exp(X^{f32,g}_{a})-1);];\n",
      "eager.leir");
  auto scan = leir::program_from_text(
      "input X: f32[64]\noutput P: f32[64]\nL^{64}_{a=0}[P^{f32,g}_{a}=X^{f32,g}_{a}+if_then_else(a-1<0,0,"
      "P^{f32,g}_{a-1});];\n",
      "scan.leir");
  auto eager_src = generate_cpu_kernel(eager).code;
  auto scan_src = generate_cpu_kernel(scan).code;
  EXPECT_NE(eager_src.find("steptp_select("), std::string::npos) << eager_src;
  EXPECT_EQ(scan_src.find("steptp_select("), std::string::npos) << scan_src;
  TempDir dir("cpu-select");
  KernelCompiler cc({.cache_dir = dir.path});
  auto built = build_cpu_programs({scan}, {}, &cc);
  ASSERT_TRUE(built[0].program) << built[0].error;
  leir::TensorValue x{leir::DType::F32, {64}, {}};
  for (int i = 0; i < 64; ++i) x.data.push_back(i % 3 - 1.0);
  leir::TensorMap in{{"X", x}};
  EXPECT_EQ(built[0].program->run(in).at("P").data, interp::run_program(scan, in).at("P").data);
}

TEST_P(VectorMath, EdgeInputsMatchInterpreterInVAndPlainLoops) {
  const leir::DType d = GetParam();
  const int64_t n = static_cast<int64_t>(2 * edge_values().size() * exponents().size());
  TempDir dir(fmt::format("cpu-vecmath-{}", leir::to_string(d)));
  KernelCompiler cc({.cache_dir = dir.path});
  std::vector<leir::Program> progs;
  for (char loop : {'V', 'L'})
    for (const auto& f : kFunctions) progs.push_back(function_program(f, d, n, loop));
  auto built = build_cpu_programs(progs, {}, &cc);
  auto inputs = sweep_inputs(d, n);
  for (size_t i = 0; i < progs.size(); ++i) {
    const auto& f = kFunctions[i % kFunctions.size()];
    SCOPED_TRACE(fmt::format("{} {} loop", f.leir, i < kFunctions.size() ? 'V' : 'L'));
    ASSERT_TRUE(built[i].program) << built[i].error;
    auto want = interp::run_program(progs[i], inputs);
    auto got = built[i].program->run(inputs);
    EXPECT_EQ(compare_strict(got.at("D"), want.at("D"), inputs.at("X"), inputs.at("Y"), d), "");
#if defined(__x86_64__) && defined(__GLIBC__) && __GLIBC_PREREQ(2, 35)
    // The kernel calls libmvec's vector variant (the point of the exercise), not only libm.
    if (!f.libmvec.empty()) {
      std::string fn = f.libmvec + (d == leir::DType::F32 ? "f" : "");
      auto syms = vector_symbols(fmt::format("{}/{}.so", dir.path, built[i].program->pieces().front().key));
      EXPECT_TRUE(imports_vector(syms, fn)) << "no vector " << fn << " in\n" << built[i].program->source().code;
    }
#endif
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, VectorMath, ::testing::Values(leir::DType::F32, leir::DType::F64),
                         [](const auto& info) { return std::string(leir::to_string(info.param)); });

TEST_P(VectorMath, MaxAndMinOrderTheZerosAndPropagateNaNFromEitherSide) {
  // The sweep above compares zeros by value; here their signs count: max(-0, +0) = +0 and
  // min = -0 in either order, and a NaN on either side gives NaN, in V loops (the vector body,
  // every lane position) and plain ones alike.
  const leir::DType d = GetParam();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<std::pair<double, double>> pairs = {{-0.0, 0.0}, {0.0, -0.0}, {-0.0, -0.0}, {0.0, 0.0},
                                                        {nan, 1.0},  {1.0, nan},  {nan, -0.0},  {3.0, -2.0}};
  const int64_t n = 64;
  leir::TensorValue x{d, {n}, {}}, y{d, {n}, {}};
  for (int64_t i = 0; i < n; ++i) {
    x.data.push_back(pairs[size_t(i) % pairs.size()].first);
    y.data.push_back(pairs[size_t(i) % pairs.size()].second);
  }
  const leir::TensorMap in{{"X", x}, {"Y", y}};
  TempDir dir(fmt::format("cpu-extremum-{}", leir::to_string(d)));
  KernelCompiler cc({.cache_dir = dir.path});
  for (const char* f : {"max", "min"})
    for (char loop : {'V', 'L'}) {
      SCOPED_TRACE(fmt::format("{} {} loop", f, loop));
      auto got = build_cpu_program(function_program({fmt::format("{}(X,Y)", f), ""}, d, n, loop), {}, &cc)->run(in);
      for (int64_t i = 0; i < n; ++i) {
        const auto [a, b] = pairs[size_t(i) % pairs.size()];
        const double v = got.at("D").data[size_t(i)];
        if (std::isnan(a) || std::isnan(b)) {
          EXPECT_TRUE(std::isnan(v)) << i;
          continue;
        }
        const bool larger = f[1] == 'a';
        const double want = a == b ? (larger == std::signbit(a) ? b : a) : (larger == (a > b) ? a : b);
        EXPECT_EQ(v, want) << i;
        EXPECT_EQ(std::signbit(v), std::signbit(want)) << i << ": " << a << ", " << b;
      }
    }
}

TEST(VectorMathCompiler, ScalarLoweringHasItsOwnCacheKeyAndNoVectorCalls) {
  TempDir dir("cpu-vecmath-key");
  KernelCompiler vec({.cache_dir = dir.path});
  KernelCompiler scalar({.vector_math = false, .cache_dir = dir.path});
  auto p = function_program(kFunctions[0], leir::DType::F32, 1024, 'V');
  auto a = build_cpu_program(p, {}, &vec);
  auto b = build_cpu_program(p, {}, &scalar);
  EXPECT_NE(a->pieces().front().key, b->pieces().front().key);  // a stale scalar kernel is never reused, nor the reverse
  EXPECT_TRUE(vector_symbols(fmt::format("{}/{}.so", dir.path, b->pieces().front().key)).empty());
  auto in = sweep_inputs(leir::DType::F32, 1024);
  EXPECT_EQ(compare_strict(b->run(in).at("D"), a->run(in).at("D"), in.at("X"), in.at("Y"), leir::DType::F32), "");
}

TEST(VectorMathCompiler, ReductionIntoAFixedElementAccumulatesLocallyInOrder) {
  // Softmax's max and sum of exponentials: each is kept in a local over the reduced axis (so GCC
  // can vectorize exp in an in-order reduction) and stored after it; -inf terms (exp -> 0) and a
  // large leading term (order matters in f32) still give the interpreter's sums.
  auto p = leir::program_from_text(R"(input A: f32[4,4096]
output S: f32[4]
output M: f32[4]
B^{4}_{tx=0}L^{4096}_{a=0}[M^{f32,g}_{tx}=max(M^{f32,g}_{tx},A^{f32,g}_{tx,a});];
B^{4}_{tx=0}L^{4096}_{a=0}[S^{f32,g}_{tx}=S^{f32,g}_{tx}+exp(A^{f32,g}_{tx,a}-M^{f32,g}_{tx});];
)",
                                   "softmax_sum.leir");
  TempDir dir("cpu-vecmath-red");
  KernelCompiler cc({.cache_dir = dir.path});
  auto prog = build_cpu_program(p, {}, &cc);
  const auto& code = prog->source().code;
  EXPECT_NE(code.find("float a_S = t_S["), std::string::npos) << code;
  EXPECT_NE(code.find("t_S[v_tx] = a_S;"), std::string::npos) << code;
  leir::TensorValue a{leir::DType::F32, {4, 4096}, {}};
  for (int r = 0; r < 4; ++r)
    for (int i = 0; i < 4096; ++i) a.data.push_back(i == 0 ? 18.0 + r : (i % 7 == 0 ? -kInf : std::cos(i * 0.1) * 0.01));
  leir::TensorMap in{{"A", a}};
  auto got = prog->run(in), want = interp::run_program(p, in);
  EXPECT_EQ(testing::compare_section5(got, want, verify::tolerance_for(leir::DType::F32)), "");
}

class VectorReduction : public ::testing::TestWithParam<leir::DType> {};

TEST_P(VectorReduction, VLoopReducesWithSimdAndKeepsNaNInfAndZeros) {
  // A V loop over a reduction axis is a vector reduction (LEIR.md §3, exception (1)): the sum and
  // product reassociate (within tolerance), max/min reduce over order keys with a NaN flag. Rows
  // put NaN first, last and in the middle (every lane position), ±inf, only -inf, ±0 and
  // denormals in the way; NaN and inf must land exactly where the interpreter puts them.
  const leir::DType d = GetParam();
  const std::string t(leir::to_string(d));
  const int64_t rows = 12, n = 1037;  // odd length: vector body and remainder
  auto p = leir::program_from_text(
      fmt::format("input A: {0}[{1},{2}]\noutput S: {0}[{1}]\noutput M: {0}[{1}]\noutput N: {0}[{1}]\n"
                  "output Q: {0}[{1}]\n"
                  "B^{{{1}}}_{{tx=0}}V^{{{2}}}_{{a=0}}[M^{{{0},g}}_{{tx}}=max(M^{{{0},g}}_{{tx}},A^{{{0},g}}_{{tx,a}});];\n"
                  "B^{{{1}}}_{{tx=0}}V^{{{2}}}_{{a=0}}[N^{{{0},g}}_{{tx}}=min(A^{{{0},g}}_{{tx,a}}*2,N^{{{0},g}}_{{tx}});];\n"
                  "B^{{{1}}}_{{tx=0}}V^{{{2}}}_{{a=0}}[S^{{{0},g}}_{{tx}}=S^{{{0},g}}_{{tx}}+exp(A^{{{0},g}}_{{tx,a}}-M^{{{0},g}}_{{tx}});];\n"
                  "B^{{{1}}}_{{tx=0}}V^{{{2}}}_{{a=0}}[Q^{{{0},g}}_{{tx}}=Q^{{{0},g}}_{{tx}}*(1+A^{{{0},g}}_{{tx,a}}*0.0001);];\n",
                  t, rows, n),
      "vector_reduction.leir");
  TempDir dir(fmt::format("cpu-vecred-{}", t));
  KernelCompiler cc({.cache_dir = dir.path});
  auto prog = build_cpu_program(p, {}, &cc);
  const auto& code = prog->source().code;
  for (const char* clause : {"reduction(max:k_M) reduction(|:n_M)", "reduction(min:k_N) reduction(|:n_N)",
                             "reduction(+:a_S)", "reduction(*:a_Q)"})
    EXPECT_NE(code.find(clause), std::string::npos) << clause << " missing in\n" << code;
  leir::TensorValue a{d, {rows, n}, {}};
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < n; ++i) {
      double v = std::sin(0.37 * i + r) * 3;
      if (r < 8 && i == (r * 131) % n) v = r % 2 ? kNaN : -kNaN;  // NaN at first/middle/last lanes
      if (r == 0 && i == n - 1) v = kNaN;
      if (r == 8) v = -kInf;                               // only -inf: max -inf, sum NaN (exp(nan))
      if (r == 9) v = i % 3 == 0 ? 0.0 : -0.0;             // zeros of both signs
      if (r == 10 && i == 500) v = kInf;                   // one +inf
      if (r == 11) v = (i % 2 ? 1e-40 : -1e-40);           // denormals (f32), tiny (f64)
      a.data.push_back(as_dtype(v, d));
    }
  leir::TensorMap in{{"A", a}};
  auto got = prog->run(in), want = interp::run_program(p, in);
  EXPECT_EQ(testing::compare_section5(got, want, verify::tolerance_for(d)), "");
  for (const char* out : {"M", "N"})
    for (int64_t r = 0; r < rows; ++r) {  // max/min exact (up to the sign of zero and NaN payload)
      double g = got.at(out).data[r], w = want.at(out).data[r];
      EXPECT_TRUE(std::isnan(w) ? std::isnan(g) : g == w) << out << "[" << r << "]: " << g << " vs " << w;
    }
  EXPECT_TRUE(std::isnan(got.at("M").data[0]) && std::isnan(got.at("M").data[1]));
  EXPECT_EQ(got.at("M").data[8], -kInf);
  EXPECT_EQ(got.at("M").data[10], kInf);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, VectorReduction, ::testing::Values(leir::DType::F32, leir::DType::F64),
                         [](const auto& info) { return std::string(leir::to_string(info.param)); });

}  // namespace
}  // namespace steptp::backend
