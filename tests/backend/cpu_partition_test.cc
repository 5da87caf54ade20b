// Loop partitioning of the CPU lowering (lower/cpu/partition.h): exact split points, the same bits
// as the unpartitioned kernel and the interpreter on padded convolutions, and an interior that
// reads without the bounds check.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <random>
#include <sstream>

#include "backend_test_util.h"
#include "ir/interp/inputs.h"
#include "ir/interp/interpreter.h"
#include "ir/leir/program_io.h"
#include "lower/cpu/codegen.h"
#include "lower/cpu/cpu_program.h"
#include "lower/cpu/partition.h"

namespace steptp::backend {
namespace {

using namespace cpu;
using testing::compare_values;
using testing::TempDir;

TEST(CpuPartition, SplitPointsByHand) {
  // lo <= a*i + b < hi for every b of the rest's range, i in [start, start + extent).
  // A 3-tap window with padding 1 over 16 rows (1 <= c + g < 17, g in 0..2): rows 1..14.
  EXPECT_EQ(always_inside(1, {0, 2}, 1, 17, 0, 16), (IterRange{1, 15}));
  // Stride 2, padding 2, a 5-tap window over 9 rows (2*y + j - 2 in [0, 9), j in 0..4): b is
  // negative at one end; 2y - 2 >= 0 from y = 1, 2y + 2 <= 8 up to y = 3.
  EXPECT_EQ(always_inside(2, {-2, 2}, 0, 9, 0, 5), (IterRange{1, 4}));
  // Negative coefficient (a flipped index 10..12 - i in [0, 8)): i <= 10 and i >= 5.
  EXPECT_EQ(always_inside(-1, {10, 12}, 0, 8, 0, 16), (IterRange{5, 11}));
  // Rounding of negative quotients: 3i - 7 >= 0 from i = ceil(7/3) = 3; 3i + 7 >= 0 from
  // i = ceil(-7/3) = -2 (not -3 or -1); 2i <= -4 up to i = -2, so [.., -1).
  EXPECT_EQ(always_inside(3, {-7, -7}, 0, std::nullopt, -5, 10), (IterRange{3, 5}));
  EXPECT_EQ(always_inside(3, {7, 7}, 0, std::nullopt, -5, 10), (IterRange{-2, 5}));
  EXPECT_EQ(always_inside(2, {0, 0}, std::nullopt, -3, -5, 10), (IterRange{-5, -1}));
  // An extent smaller than the halo (3 outputs of a 5-tap window with padding 2): no interior.
  EXPECT_EQ(always_inside(1, {0, 4}, 2, 5, 0, 3), (IterRange{2, 2}));
  // Clamped to the loop: everything holds, or nothing (a range below the loop).
  EXPECT_EQ(always_inside(1, {0, 0}, -100, 100, 3, 4), (IterRange{3, 7}));
  EXPECT_EQ(always_inside(1, {0, 0}, 100, std::nullopt, 3, 4), (IterRange{7, 7}));
  EXPECT_EQ(always_inside(0, {0, 0}, 1, std::nullopt, 0, 4), (IterRange{0, 0}));
}

TEST(CpuPartition, SplitPointsAreExactAgainstEnumeration) {
  // The interior is exactly the iterations at which every b of the range satisfies the check
  // (an interval, since a*i + b is monotone in i), on seeded random cases.
  std::mt19937 rng(39);
  auto draw = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int t = 0; t < 3000; ++t) {
    const int64_t a = draw(-4, 4), b_lo = draw(-9, 9), b_hi = b_lo + draw(0, 6), start = draw(-6, 6),
                  extent = draw(1, 12);
    std::optional<int64_t> lo, hi;
    if (draw(0, 3) > 0) lo = draw(-12, 12);
    if (draw(0, 3) > 0) hi = draw(-12, 20);
    std::vector<int64_t> want;
    for (int64_t i = start; i < start + extent; ++i) {
      bool all = true;
      for (int64_t b = b_lo; b <= b_hi; ++b) all &= (!lo || *lo <= a * i + b) && (!hi || a * i + b < *hi);
      if (all) want.push_back(i);
    }
    const IterRange got = always_inside(a, {b_lo, b_hi}, lo, hi, start, extent);
    SCOPED_TRACE(fmt::format("a={} b=[{},{}] lo={} hi={} start={} extent={}", a, b_lo, b_hi, lo.value_or(-999),
                             hi.value_or(999), start, extent));
    ASSERT_LE(got.begin, got.end);
    ASSERT_GE(got.begin, start);
    ASSERT_LE(got.end, start + extent);
    ASSERT_EQ(got.end - got.begin, int64_t(want.size()));
    if (!want.empty()) EXPECT_EQ(got.begin, want.front());
  }
}

// Lines of `code` that read tensor A, and those of them that read it without a `?:`.
std::pair<int, int> reads_of_a(const std::string& code) {
  std::istringstream in(code);
  int all = 0, plain = 0;
  for (std::string l; std::getline(in, l);) {
    if (l.find("t_A[") == std::string::npos || l.find("__restrict") != std::string::npos) continue;
    ++all;
    plain += l.find(" ? ") == std::string::npos;
  }
  return {all, plain};
}

// The program of `text` (f32), compiled partitioned, against the unpartitioned kernel and the
// interpreter; and its f64 variant's verification build against the interpreter.
void expect_same_values(const std::string& text, const std::string& dir) {
  // Without FMA contraction the partitioned kernel gives the unpartitioned one's bits: the same
  // operations in the same order. With it (GCC's default, -ffp-contract=fast) GCC may fuse
  // `a_C + A*D` in the interior, where the border's `?:` between the product's operand and 0
  // keeps them apart: a rounding apart, as any other change of the code's shape.
  CompilerOptions strict;
  strict.cache_dir = dir;
  strict.flags.emplace_back(std::string_view("-ffp-contract=off"));
  KernelCompiler exact(strict), cc({.cache_dir = dir});
  const leir::Program p = leir::program_from_text(text, "padded.leir");
  auto in = interp::generate_inputs(p, 5);
  auto split = build_cpu_program(p, {}, &exact)->run(in);
  auto whole = build_cpu_program(p, {.partition_loops = false}, &exact)->run(in);
  EXPECT_EQ(compare_values(split, whole, 0, 0), "") << "partitioning must not change a bit";
  EXPECT_EQ(compare_values(build_cpu_program(p, {}, &cc)->run(in), interp::run_program(p, in), 1e-4, 1e-4), "");
  std::string f64;
  for (size_t i = 0; i < text.size(); ++i) {
    const bool f32 = text.compare(i, 3, "f32") == 0;
    f64 += f32 ? "f64" : std::string(1, text[i]);
    i += f32 ? 2 : 0;
  }
  const leir::Program q = leir::program_from_text(f64, "padded64.leir");
  auto in64 = interp::generate_inputs(q, 5);
  EXPECT_EQ(compare_values(build_cpu_program(q, {.all_f64 = true}, &cc)->run(in64), interp::run_program(q, in64), 1e-10,
                           1e-9),
            "");
}

TEST(CpuPartition, InlinedDepthwisePadOneKeepsTheBitsAndReadsPlainInTheInterior) {
  // A depthwise 3x3 convolution with its padding-1 copy inlined (compute_inline's form), register
  // tiled as the tuner does: 4 rows unrolled x 8 columns vectorized over 32 x 32 outputs.
  const std::string text =
      "input A: f32[2,4,32,32]\nparam D: f32[4,1,3,3]\noutput C: f32[2,4,32,32]\n"
      "B^{2}_{tx=0}L^{4}_{a=0}L^{8}_{co=0}L^{4}_{do=0}L^{3}_{g=0}L^{3}_{h=0}U^{4}_{ci=0}V^{8}_{di=0}["
      "C^{f32,g}_{tx,a,co*4+ci,do*8+di}=C^{f32,g}_{tx,a,co*4+ci,do*8+di}+if_then_else("
      "1<=co*4+ci+g<33&1<=do*8+di+h<33,A^{f32,g}_{tx,a,co*4+ci+g-1,do*8+di+h-1},0)*D^{f32,g}_{a,0,g,h};];";
  const leir::Program p = leir::program_from_text(text, "depthwise.leir");
  int split = 0;
  partition_loops(p, &split);
  EXPECT_EQ(split, 4);  // rows once, then the columns in each of the three row ranges
  const std::string code = generate_cpu_kernel(p, {}).code;
  // Rows 1..6 of co (4co + ci + g - 1 in [0, 32) for every ci, g), columns 1..2 of do.
  EXPECT_NE(code.find("for (int64_t v_co = 1; v_co < 7; ++v_co)"), std::string::npos) << code;
  EXPECT_NE(code.find("for (int64_t v_do = 1; v_do < 3; ++v_do)"), std::string::npos);
  EXPECT_NE(code.find("for (int64_t v_co = 7; v_co < 8; ++v_co)"), std::string::npos);
  // Nine copies of the statement; the interior one reads A with no condition, and keeps its
  // register block and vector loop.
  EXPECT_EQ(reads_of_a(code), std::make_pair(9, 1));
  EXPECT_EQ(reads_of_a(generate_cpu_kernel(p, {.partition_loops = false}).code), std::make_pair(1, 0));
  EXPECT_NE(code.find("b_C[32];  // register block"), std::string::npos);
  TempDir dir("cpu-partition");
  expect_same_values(text, dir.path);
}

TEST(CpuPartition, Conv2dPadTwoStrideTwoKeepsTheBits) {
  // 5x5 window, stride 2, padding 2 over an odd 11 x 13 input: 6 x 7 outputs, rows 1..4 and
  // columns 1..5 read inside A everywhere.
  const std::string text =
      "input A: f32[1,3,11,13]\nparam W: f32[4,3,5,5]\noutput C: f32[1,4,6,7]\n"
      "B^{4}_{o=0}L^{6}_{y=0}L^{7}_{x=0}L^{3}_{c=0}L^{5}_{i=0}L^{5}_{j=0}["
      "C^{f32,g}_{0,o,y,x}=C^{f32,g}_{0,o,y,x}+if_then_else(2<=y*2+i<13&2<=x*2+j<15,"
      "A^{f32,g}_{0,c,y*2+i-2,x*2+j-2},0)*W^{f32,g}_{o,c,i,j};];";
  const leir::Program p = leir::program_from_text(text, "conv2d.leir");
  const std::string code = generate_cpu_kernel(p, {}).code;
  EXPECT_NE(code.find("for (int64_t v_y = 1; v_y < 5; ++v_y)"), std::string::npos) << code;
  EXPECT_NE(code.find("for (int64_t v_x = 1; v_x < 6; ++v_x)"), std::string::npos);
  EXPECT_EQ(reads_of_a(code), std::make_pair(9, 1));
  TempDir dir("cpu-partition-conv");
  expect_same_values(text, dir.path);
}

TEST(CpuPartition, OneDimensionalPads) {
  TempDir dir("cpu-partition-1d");
  // 3 outputs of a 5-tap window with padding 2: every output reads the padding, no interior, so
  // nothing is split and the code is what it was.
  const std::string empty_text =
      "input A: f32[3,3]\nparam W: f32[5]\noutput C: f32[3,3]\n"
      "L^{3}_{r=0}L^{3}_{y=0}L^{5}_{k=0}[C^{f32,g}_{r,y}=C^{f32,g}_{r,y}+if_then_else(2<=y+k<5,"
      "A^{f32,g}_{r,y+k-2},0)*W^{f32,g}_{k};];";
  const leir::Program empty = leir::program_from_text(empty_text, "pad1d.leir");
  int split = -1;
  partition_loops(empty, &split);
  EXPECT_EQ(split, 0);
  EXPECT_EQ(generate_cpu_kernel(empty, {}).code, generate_cpu_kernel(empty, {.partition_loops = false}).code);
  expect_same_values(empty_text, dir.path);
  // 7 outputs, 3 taps, padding 1, and the padded copy kept as its own nest (the workloads' form):
  // the copy and the convolution are both split.
  const std::string odd_text =
      "input A: f32[5,7]\nparam W: f32[3]\noutput C: f32[5,7]\n"
      "L^{5}_{r=0}L^{9}_{y=0}[E^{f32,g}_{r,y}=if_then_else(1<=y<8,A^{f32,g}_{r,y-1},0);];"
      "L^{5}_{r=0}L^{7}_{y=0}L^{3}_{k=0}[C^{f32,g}_{r,y}=C^{f32,g}_{r,y}+if_then_else(1<=y+k<8,"
      "A^{f32,g}_{r,y+k-1},0)*W^{f32,g}_{k}+E^{f32,g}_{r,y+k};];";
  const leir::Program odd = leir::program_from_text(odd_text, "pad1d_odd.leir");
  partition_loops(odd, &split);
  EXPECT_EQ(split, 2);
  const std::string code = generate_cpu_kernel(odd, {}).code;
  EXPECT_NE(code.find("for (int64_t v_y = 1; v_y < 8; ++v_y)"), std::string::npos) << code;
  EXPECT_NE(code.find("for (int64_t v_y = 1; v_y < 6; ++v_y)"), std::string::npos);
  expect_same_values(odd_text, dir.path);
  // The window loop outside a vector row (no unrolled rows, so no register tile to keep whole):
  // the vector loop itself is split, its interior a plain `omp simd` loop.
  const std::string row_text =
      "input A: f32[5,7]\nparam W: f32[3]\noutput C: f32[5,7]\n"
      "L^{5}_{r=0}L^{3}_{k=0}V^{7}_{y=0}[C^{f32,g}_{r,y}=C^{f32,g}_{r,y}+if_then_else(1<=y+k<8,"
      "A^{f32,g}_{r,y+k-1},0)*W^{f32,g}_{k};];";
  const leir::Program row = leir::program_from_text(row_text, "pad1d_row.leir");
  partition_loops(row, &split);
  EXPECT_EQ(split, 1);
  const std::string row_code = generate_cpu_kernel(row, {}).code;
  EXPECT_NE(row_code.find("#pragma omp simd\n      for (int64_t v_y = 1; v_y < 6; ++v_y)"), std::string::npos)
      << row_code;
  EXPECT_EQ(reads_of_a(row_code), std::make_pair(3, 1));
  expect_same_values(row_text, dir.path);
  // The outermost loop of a top-level nest split: its parts stay one top-level item (one kernel
  // piece, one accumulation plan), a nest without loops around them.
  const std::string outer_text =
      "input A: f32[16]\noutput C: f32[18]\n"
      "L^{18}_{c=0}[C^{f32,g}_{c}=if_then_else(1<=c<17,A^{f32,g}_{c-1},0);];";
  const leir::Program outer = leir::program_from_text(outer_text, "pad1d_outer.leir");
  const leir::Program outer_split = partition_loops(outer, &split);
  EXPECT_EQ(split, 1);
  ASSERT_EQ(outer_split.body.size(), 1u);
  EXPECT_TRUE(outer_split.body[0].nest.loops.empty());
  EXPECT_EQ(outer_split.body[0].nest.body.size(), 3u);
  EXPECT_EQ(generate_cpu_kernel(outer, {}).pieces.size(), 1u);
  expect_same_values(outer_text, dir.path);
}

TEST(CpuPartition, WhatCannotBeSplitStaysAsWritten) {
  // A causal mask holds everywhere on the last row only (no steady state); a parallel loop keeps
  // its collapse; a nest whose output a later item accumulates into stays whole (the later item
  // would have to track which elements are set); a data-dependent condition is no bounds check.
  for (const char* text : {
           "input S: f32[16,16]\noutput O: f32[16,16]\n"
           "L^{16}_{i=0}L^{16}_{j=0}[O^{f32,g}_{i,j}=if_then_else(j<=i,S^{f32,g}_{i,j},0);];",
           "input A: f32[16]\noutput C: f32[18]\n"
           "P^{18}_{c=0}[C^{f32,g}_{c}=if_then_else(1<=c<17,A^{f32,g}_{c-1},0);];",
           "input A: f32[16]\ninput B: f32[18]\noutput C: f32[18]\n"
           "L^{18}_{c=0}[C^{f32,g}_{c}=if_then_else(1<=c<17,A^{f32,g}_{c-1},0);];"
           "L^{18}_{c=0}[C^{f32,g}_{c}=C^{f32,g}_{c}+B^{f32,g}_{c};];",
           "input A: f32[16]\ninput M: i64[16]\noutput C: f32[16]\n"
           "L^{16}_{c=0}[C^{f32,g}_{c}=if_then_else(M^{i64,g}_{c}<3,A^{f32,g}_{c},0);];",
       }) {
    const leir::Program p = leir::program_from_text(text, "whole.leir");
    int split = -1;
    partition_loops(p, &split);
    EXPECT_EQ(split, 0) << text;
    EXPECT_EQ(generate_cpu_kernel(p, {}).code, generate_cpu_kernel(p, {.partition_loops = false}).code);
  }
}

}  // namespace
}  // namespace steptp::backend
