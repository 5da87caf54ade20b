// Interleaved timing sessions (lower/measure/measure.h): round order, shared reference, caps.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lower/measure/measure.h"

namespace steptp::backend {
namespace {

MeasureOptions fixed_rounds(int rounds) {
  MeasureOptions o;
  o.warmup = 1;
  o.min_repeats = rounds;
  o.max_repeats = rounds;
  o.min_time_s = 0;
  o.max_time_s = 1e9;
  return o;
}

TEST(CompareGroup, RoundsAlternateDirectionAndShareTheReference) {
  std::string order;
  auto side = [&](char c) { return [&order, c] { order += c; }; };
  auto cs = compare_group(side('a'), {side('x'), side('y'), side('z')}, fixed_rounds(4));
  // Warm-up round, then forward and backward rounds: drift over a round hits the reference and
  // each other side symmetrically.
  EXPECT_EQ(order, "axyz" "axyz" "zyxa" "axyz" "zyxa");
  ASSERT_EQ(cs.size(), 3u);
  for (const auto& c : cs) {
    EXPECT_EQ(c.a.repeats, 4);
    EXPECT_EQ(c.b.repeats, 4);
    EXPECT_EQ(c.a.median_ms, cs[0].a.median_ms);  // one reference, timed once per round
    EXPECT_DOUBLE_EQ(c.speedup, c.b.median_ms > 0 ? c.a.median_ms / c.b.median_ms : 1);
  }
}

TEST(CompareGroup, APairIsTheGroupOfOne) {
  std::string order;
  auto c = compare_interleaved([&] { order += 'a'; }, [&] { order += 'b'; }, fixed_rounds(4));
  EXPECT_EQ(order, "ab" "ab" "ba" "ab" "ba");
  EXPECT_EQ(c.a.repeats, 4);
}

TEST(CompareGroup, SlowSidesStillGetMinRepeatsPastTheTimeCap) {
  MeasureOptions o = fixed_rounds(0);
  o.warmup = 0;
  o.min_repeats = 5;
  o.max_repeats = 100;
  o.max_time_s = 0;  // every round is over the cap: the session stops at min_repeats
  int runs = 0;
  auto cs = compare_group([&] { ++runs; }, {[&] { ++runs; }, [&] { ++runs; }}, o);
  EXPECT_EQ(runs, 15);
  EXPECT_EQ(cs[1].b.repeats, 5);
}

}  // namespace
}  // namespace steptp::backend
