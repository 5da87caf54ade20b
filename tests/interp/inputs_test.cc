// Seeded inputs: reproducible bytes, valid gather indices, profiles, and the Rng itself.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

#include "ir/interp/domains.h"
#include "ir/interp/inputs.h"
#include "ir/interp/interpreter.h"
#include "interp_test_util.h"

namespace steptp::interp_test {
namespace {

TEST(Rng, SplitMix64ReferenceValues) {
  // Reference outputs of SplitMix64 (Vigna) for seed 0 — https://prng.di.unimi.it/splitmix64.c
  interp::Rng rng(0);
  EXPECT_EQ(rng.next(), 0xe220a8397b1dcdafULL);
  EXPECT_EQ(rng.next(), 0x6e789e6aa1b965f4ULL);
  EXPECT_EQ(rng.next(), 0x06c45d188009454fULL);
}

TEST(Rng, RangesAndDeterminism) {
  interp::Rng a(42), b(42);
  std::set<int64_t> seen;
  for (int i = 0; i < 2000; ++i) {
    double u = a.uniform();
    EXPECT_EQ(u, b.uniform());
    EXPECT_GE(u, 0.0);
    EXPECT_LT(u, 1.0);
    int64_t k = a.uniform_int(-2, 3);
    EXPECT_EQ(k, b.uniform_int(-2, 3));
    EXPECT_GE(k, -2);
    EXPECT_LE(k, 3);
    seen.insert(k);
    double x = a.uniform(5.0, 6.0);
    EXPECT_EQ(x, b.uniform(5.0, 6.0));
    EXPECT_GE(x, 5.0);
    EXPECT_LT(x, 6.0);
    EXPECT_TRUE(std::isfinite(a.normal()));
    b.normal();
  }
  EXPECT_EQ(seen.size(), 6u);  // every value of the range occurs
}

const char* kGather =
    "input A: f64[6,5]\ninput C: i64[6]\ninput W: f32[3]\ninput K: i32[4]\ninput M: bool[8]\nconstant F: f64[] = [2.0]\n"
    "output D: f64[]\n"
    "B^{5}_{tx=0}[N^{i64,g}_{tx}=1;];"
    "B^{6}_{tx=0}[D^{f64,g}=D^{f64,g}+N^{i64,g}_{C^{i64,g}_{tx}}*A^{f64,g}_{tx,C^{i64,g}_{tx}}*F^{f64,g};];"
    "L^{3}_{i=0}[D^{f64,g}=D^{f64,g}+W^{f32,g}_{i}+K^{i32,g}_{i}*M^{bool,g}_{i};];";

TEST(Inputs, SameSeedSameBytesDifferentSeedDifferentValues) {
  auto p = program(kGather);
  auto a = interp::generate_inputs(p, 7), b = interp::generate_inputs(p, 7), c = interp::generate_inputs(p, 8);
  EXPECT_EQ(leir::values_to_json(a).dump(), leir::values_to_json(b).dump());
  EXPECT_NE(leir::values_to_json(a).dump(), leir::values_to_json(c).dump());
  // Inputs and params only: constants come from the signature, outputs are computed.
  EXPECT_EQ(a.size(), 5u);
  EXPECT_EQ(a.count("F"), 0u);
  EXPECT_EQ(a.at("A").shape, (std::vector<int64_t>{6, 5}));
}

TEST(Inputs, GatherIndicesStayInRangeOfEveryUse) {
  // C feeds A's dimension 1 (size 5) and N's dimension 0 (size 5, inferred): values in [0, 5).
  auto p = program(kGather);
  for (auto profile : {interp::InputProfile::Ordinary, interp::InputProfile::Signs}) {
    std::set<double> values;
    for (uint64_t seed = 0; seed < 20; ++seed) {
      auto in = interp::generate_inputs(p, seed, profile);
      for (double v : in.at("C").data) {
        EXPECT_GE(v, 0);
        EXPECT_LE(v, 4);
        values.insert(v);
      }
      EXPECT_NO_THROW(interp::run_program(p, in));
    }
    EXPECT_TRUE(values.count(0) && values.count(4));  // the ends of the range occur
  }
}

TEST(Inputs, GatherWithOffsetNarrowsTheRange) {
  // A_{i + G_i} with i in [0, 3) and A of size 6: G in [0, 3].
  auto p = program("input A: f64[6]\ninput G: i64[3]\noutput C: f64[3]\nL^{3}_{i=0}[C^{f64,g}_{i}=A^{f64,g}_{i+G^{i64,g}_{i}};];");
  std::set<double> seen;
  for (uint64_t seed = 0; seed < 30; ++seed) {
    auto in = interp::generate_inputs(p, seed);
    for (double v : in.at("G").data) {
      EXPECT_GE(v, 0);
      EXPECT_LE(v, 3);
      seen.insert(v);
    }
  }
  EXPECT_EQ(seen.size(), 4u);
}

TEST(Inputs, ValuesFollowDtypeAndProfile) {
  auto p = program(kGather);
  auto in = interp::generate_inputs(p, 3);
  for (double v : in.at("W").data) EXPECT_EQ(v, static_cast<double>(static_cast<float>(v)));  // f32-representable
  for (double v : in.at("M").data) EXPECT_TRUE(v == 0 || v == 1);
  for (double v : in.at("K").data) EXPECT_EQ(v, std::trunc(v));
  for (double v : in.at("A").data) EXPECT_LE(std::fabs(v), 1.0);
  auto up = interp::generate_inputs(p, 3, interp::InputProfile::ScaledUp);
  auto down = interp::generate_inputs(p, 3, interp::InputProfile::ScaledDown);
  double max_up = 0, max_down = 0;
  for (double v : up.at("A").data) max_up = std::max(max_up, std::fabs(v));
  for (double v : down.at("A").data) max_down = std::max(max_down, std::fabs(v));
  EXPECT_GT(max_up, 10.0);
  EXPECT_LE(max_down, 1e-3);
  auto signs = interp::generate_inputs(p, 3, interp::InputProfile::Signs);
  int zeros = 0;
  for (double v : signs.at("A").data) zeros += v == 0.0;
  EXPECT_GT(zeros, 0);  // exact zeros are exercised
}

TEST(Inputs, AddingATensorLeavesOthersUnchanged) {
  auto small = program("input A: f64[4]\noutput C: f64[4]\nL^{4}_{i=0}[C^{f64,g}_{i}=A^{f64,g}_{i};];");
  auto big = program("input Z: f64[4]\ninput A: f64[4]\noutput C: f64[4]\nL^{4}_{i=0}[C^{f64,g}_{i}=A^{f64,g}_{i}+Z^{f64,g}_{i};];");
  EXPECT_EQ(interp::generate_inputs(small, 5).at("A").data, interp::generate_inputs(big, 5).at("A").data);
}

TEST(Domains, InputsThatReachRestrictedOperations) {
  // log through an intermediate, a divisor, sqrt, a fractional power; not: exp, an integer power,
  // a numerator, a gather index.
  auto p = program(
      "input A: f64[4]\ninput C: f64[4]\ninput D: f64[4]\ninput E: f64[4]\ninput G: f64[4]\ninput H: f64[4]\n"
      "input K: f64[4]\ninput N: i64[4]\ninput Q: f64[4]\noutput O: f64[4]\n"
      "L^{4}_{a=0}[M^{f64,g}_{a}=A^{f64,g}_{a}*2;];"
      "L^{4}_{a=0}[O^{f64,g}_{a}=log(M^{f64,g}_{a})+G^{f64,g}_{a}/C^{f64,g}_{a}+sqrt(D^{f64,g}_{a})+E^{f64,g}_{a}**0.5"
      "+H^{f64,g}_{a}**2+exp(K^{f64,g}_{a})+Q^{f64,g}_{N^{i64,g}_{a}};];");
  EXPECT_EQ(interp::domain_restricted_inputs(p), (std::set<std::string>{"A", "C", "D", "E"}));
  auto raw = interp::generate_inputs(p, 3, interp::InputProfile::Ordinary);
  auto dom = interp::generate_inputs(p, 3, interp::InputProfile::Domain);
  auto small = interp::generate_inputs(p, 3, interp::InputProfile::DomainSmall);
  auto down = interp::generate_inputs(p, 3, interp::InputProfile::ScaledDown);
  for (const auto& name : {"A", "C", "D", "E"}) {
    for (double x : dom.at(name).data) {
      EXPECT_GE(x, 0.25);
      EXPECT_LT(x, 2.0);
    }
    for (double x : small.at(name).data) {
      EXPECT_GE(x, 0.25e-3);
      EXPECT_LT(x, 2e-3);
    }
  }
  // Everything else draws exactly as in the raw profiles.
  for (const auto& name : {"G", "H", "K", "N", "Q"}) {
    EXPECT_EQ(dom.at(name).data, raw.at(name).data) << name;
    EXPECT_EQ(small.at(name).data, down.at(name).data) << name;
  }
}

TEST(Domains, ProgramWithoutRestrictedOperationsGetsTheRawInputs) {
  auto p = program("input A: f64[8]\ninput C: f64[8]\noutput O: f64[8]\n"
                   "L^{8}_{a=0}[O^{f64,g}_{a}=exp(A^{f64,g}_{a})*C^{f64,g}_{a}/2;];");
  EXPECT_TRUE(interp::domain_restricted_inputs(p).empty());
  for (uint64_t seed : {0u, 9u}) {
    EXPECT_EQ(interp::generate_inputs(p, seed, interp::InputProfile::Domain).at("A").data,
              interp::generate_inputs(p, seed, interp::InputProfile::Ordinary).at("A").data);
    EXPECT_EQ(interp::generate_inputs(p, seed, interp::InputProfile::DomainSmall).at("C").data,
              interp::generate_inputs(p, seed, interp::InputProfile::ScaledDown).at("C").data);
  }
}

}  // namespace
}  // namespace steptp::interp_test
