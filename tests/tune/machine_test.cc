// The machine description (search/tune/machine.h) and the schedule parameters derived from it: the
// values the schedule rules and the analytic prior used to hard-code for AVX-512 come out of an
// AVX-512 fingerprint unchanged, and an AVX2 fingerprint gets its own.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "lower/cpu/compiler.h"
#include "search/tune/machine.h"

namespace steptp::tune {
namespace {

using Shapes = std::vector<std::pair<int64_t, int64_t>>;

// The development VM of docs/tune.md: AMD EPYC Zen 4 (family 25, model 17), 32 zmm registers.
Machine zen4_avx512() {
  Machine m;
  m.cpu_model = "AMD EPYC";
  m.vector_bytes = 64;
  m.vector_registers = 32;
  m.datapath_bytes = datapath_bytes("AuthenticAMD", 25, 17, 64);
  return m;
}

// The AVX2 machine of issue 39 (AMD EPYC Zen 3): 16 ymm registers of 8 f32 lanes.
Machine zen3_avx2() {
  Machine m;
  m.cpu_model = "AMD EPYC 7B13";
  m.vector_bytes = 32;
  m.vector_registers = 16;
  m.datapath_bytes = datapath_bytes("AuthenticAMD", 25, 1, 32);
  return m;
}

TEST(Machine, DatapathWidthByVendorAndFamily) {
  EXPECT_EQ(datapath_bytes("AuthenticAMD", 25, 17, 64), 32);   // Zen 4: 512-bit ops in two halves
  EXPECT_EQ(datapath_bytes("AuthenticAMD", 25, 1, 32), 32);    // Zen 3: AVX2 whole
  EXPECT_EQ(datapath_bytes("AuthenticAMD", 26, 68, 64), 64);   // Zen 5: a full 512-bit datapath
  EXPECT_EQ(datapath_bytes("AuthenticAMD", 23, 1, 32), 16);    // Zen 1: 256-bit ops in two halves
  EXPECT_EQ(datapath_bytes("AuthenticAMD", 23, 49, 32), 32);   // Zen 2
  EXPECT_EQ(datapath_bytes("GenuineIntel", 6, 85, 64), 64);    // Skylake-SP
  EXPECT_EQ(datapath_bytes("GenuineIntel", 6, 63, 32), 32);    // Haswell
}

TEST(Machine, Avx512ScheduleParamsAreTheOnesTheRulesWereTunedWith) {
  const ScheduleParams p = schedule_params(zen4_avx512());
  EXPECT_EQ(p.accumulators, 16);
  EXPECT_EQ(p.block_shapes, (Shapes{{8, 2}, {8, 1}, {4, 1}}));
  EXPECT_EQ(p.f32_throughput_lanes, 8);
}

TEST(Machine, Avx2ScheduleParamsFitSixteenRegisters) {
  const ScheduleParams p = schedule_params(zen3_avx2());
  EXPECT_EQ(p.accumulators, 8);
  // 8 x 2 would need all 16 registers for accumulators: only the one-vector blocks.
  EXPECT_EQ(p.block_shapes, (Shapes{{8, 1}, {4, 1}}));
  EXPECT_EQ(p.f32_throughput_lanes, 8);
}

TEST(Machine, AFullWidthAvx512DatapathDoublesTheLanes) {
  Machine m = zen4_avx512();
  m.datapath_bytes = datapath_bytes("GenuineIntel", 6, 85, 64);
  EXPECT_EQ(schedule_params(m).f32_throughput_lanes, 16);
  EXPECT_EQ(schedule_params(m).accumulators, 16);
}

TEST(Machine, ThisMachineHasARegisterFileForItsVectorWidth) {
  const Machine m = this_machine(1);
  EXPECT_EQ(m.vector_registers, m.vector_bytes == 64 ? 32 : 16);
  EXPECT_GE(m.datapath_bytes, 16);
  EXPECT_LE(m.datapath_bytes, m.vector_bytes);
  EXPECT_FALSE(schedule_params(m).block_shapes.empty());
}

// $STEPTP_ISA=avx2 describes this machine as the AVX2 machine its kernels are then compiled for.
TEST(Machine, IsaAvx2MakesThisMachineAnAvx2One) {
  if (!__builtin_cpu_supports("avx2")) GTEST_SKIP() << "no AVX2 on this CPU";
  const char* before = std::getenv("STEPTP_ISA");
  const std::string saved = before ? before : "";
  setenv("STEPTP_ISA", "avx2", 1);
  EXPECT_TRUE(backend::cpu::avx2_kernels());
  const Machine m = this_machine(1);
  EXPECT_EQ(m.vector_bytes, 32);
  EXPECT_EQ(m.vector_registers, 16);
  EXPECT_EQ(schedule_params(m).block_shapes, (Shapes{{8, 1}, {4, 1}}));
  setenv("STEPTP_ISA", "sse9", 1);
  EXPECT_THROW(backend::cpu::avx2_kernels(), std::runtime_error);
  setenv("STEPTP_ISA", "native", 1);
  EXPECT_FALSE(backend::cpu::avx2_kernels());
  if (before) setenv("STEPTP_ISA", saved.c_str(), 1);
  else unsetenv("STEPTP_ISA");
}

}  // namespace
}  // namespace steptp::tune
