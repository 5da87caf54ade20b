// Read footprints (ir/analysis/footprint.h): boxes and density on hand-derived cases.
#include <gtest/gtest.h>

#include "ir/analysis/footprint.h"
#include "ir/leir/parser.h"

namespace steptp::analysis {
namespace {

std::optional<Footprint> fp(const std::vector<std::string>& accesses, const std::map<std::string, Interval>& ranges) {
  std::vector<leir::ExprPtr> es;
  for (const auto& a : accesses) es.push_back(leir::parse_expr(a));
  return read_footprint(es, ranges);
}

TEST(Footprint, PlainAndOffsetSubscriptsAreDenseBoxes) {
  // G_{tx,a,d+5}, d in 0..1: only elements 5 and 6 of the last dimension.
  auto f = fp({"G^{f64,g}_{tx,a,d+5}"}, {{"tx", {0, 0}}, {"a", {0, 5}}, {"d", {0, 1}}});
  ASSERT_TRUE(f);
  EXPECT_TRUE(f->dense);
  ASSERT_EQ(f->box.size(), 3u);
  EXPECT_EQ(f->box[2].lo, 5);
  EXPECT_EQ(f->box[2].hi, 6);
  EXPECT_EQ(f->box[1].hi, 5);
}

TEST(Footprint, WindowSumsAreDenseStridesAreNot) {
  // a+k over a 0..5, k 0..2 hits 0..7; a*2 over a 0..3 hits 0,2,4,6 only.
  auto w = fp({"X^{f64,g}_{a+k}"}, {{"a", {0, 5}}, {"k", {0, 2}}});
  ASSERT_TRUE(w);
  EXPECT_TRUE(w->dense);
  EXPECT_EQ(w->box[0].hi, 7);
  auto s = fp({"X^{f64,g}_{a*2}"}, {{"a", {0, 3}}});
  ASSERT_TRUE(s);
  EXPECT_FALSE(s->dense);
  EXPECT_EQ(s->box[0].hi, 6);
  // a*2+k with k 0..1 fills 0..7 again.
  auto sk = fp({"X^{f64,g}_{a*2+k}"}, {{"a", {0, 3}}, {"k", {0, 1}}});
  ASSERT_TRUE(sk);
  EXPECT_TRUE(sk->dense);
}

TEST(Footprint, DiagonalsAndGapsAreNotDense) {
  auto diag = fp({"X^{f64,g}_{a,a}"}, {{"a", {0, 3}}});
  ASSERT_TRUE(diag);
  EXPECT_FALSE(diag->dense);
  // Two reads X_{a} and X_{a+6} over a 0..3: 0..3 and 6..9 leave a gap.
  auto gap = fp({"X^{f64,g}_{a}", "X^{f64,g}_{a+6}"}, {{"a", {0, 3}}});
  ASSERT_TRUE(gap);
  EXPECT_FALSE(gap->dense);
  EXPECT_EQ(gap->box[0].hi, 9);
  // X_{a} and X_{a+1}: 0..4 with overlap, dense.
  auto touch = fp({"X^{f64,g}_{a}", "X^{f64,g}_{a+1}"}, {{"a", {0, 3}}});
  ASSERT_TRUE(touch);
  EXPECT_TRUE(touch->dense);
  // Boxes differing in two dimensions do not fill their bounding box.
  auto two = fp({"X^{f64,g}_{a,c}", "X^{f64,g}_{a+4,c+4}"}, {{"a", {0, 3}}, {"c", {0, 3}}});
  ASSERT_TRUE(two);
  EXPECT_FALSE(two->dense);
}

TEST(Footprint, GathersAndUnknownVariablesHaveNone) {
  EXPECT_FALSE(fp({"X^{f64,g}_{I^{i64,g}_{a}}"}, {{"a", {0, 3}}}));
  EXPECT_FALSE(fp({"X^{f64,g}_{b}"}, {{"a", {0, 3}}}));
  EXPECT_FALSE(fp({"X^{f64,g}_{a//2}"}, {{"a", {0, 3}}}));
}

}  // namespace
}  // namespace steptp::analysis

namespace steptp::analysis {
namespace {

TEST(Footprint, WritesCoverOnlyWhatTheyDenselySet) {
  auto body = leir::parse_body(
      "L^{6}_{a=0}L^{2}_{d=0}[G^{f64,l}_{a,d+5}=H^{f64,g}_{a,d+5};];"
      "L^{3}_{a=0}[X^{f64,g}_{a}=1;];L^{3}_{a=0}[X^{f64,g}_{a+3}=2;];"
      "L^{4}_{a=0}[S^{f64,g}_{a*2}=1;];");
  auto g = write_footprints(body, 1, "G");
  ASSERT_EQ(g.size(), 1u);
  EXPECT_TRUE(covered({{0, 5}, {5, 6}}, g));
  EXPECT_FALSE(covered({{0, 5}, {0, 6}}, g));  // elements 0..4 of the last dimension are unset
  EXPECT_TRUE(write_footprints(body, 0, "G").empty());
  // Two halves fill X[0..5]; only the first half exists before item 2.
  EXPECT_TRUE(covered({{0, 5}}, write_footprints(body, 3, "X")));
  EXPECT_FALSE(covered({{0, 5}}, write_footprints(body, 2, "X")));
  EXPECT_TRUE(covered({{1, 2}}, write_footprints(body, 2, "X")));
  // A strided write sets no box.
  EXPECT_FALSE(covered({{0, 6}}, write_footprints(body, 4, "S")));
  EXPECT_FALSE(covered({{0, 0}}, write_footprints(body, 4, "S")));
}

}  // namespace
}  // namespace steptp::analysis
