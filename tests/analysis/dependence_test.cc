// Analyses: affine forms, accumulation rule, loop-carried dependence, permutation legality,
// use-def and fresh names — on hand-written programs with hand-derived answers.
#include <gtest/gtest.h>

#include "ir/analysis/accumulation.h"
#include "ir/analysis/affine.h"
#include "ir/analysis/dependence.h"
#include "ir/analysis/names.h"
#include "ir/analysis/rewrite.h"
#include "ir/analysis/structure.h"
#include "ir/leir/parser.h"
#include "ir/leir/printer.h"
#include "ir/leir/program_io.h"

namespace steptp::analysis {
namespace {

leir::Program prog(const std::string& body, const std::string& decls = "") {
  return leir::program_from_text(decls + body, "t.leir");
}

leir::Stmt stmt(const std::string& text) { return leir::parse_body(text)[0].stmt; }

TEST(Affine, ParsesAndPrintsFlat) {
  auto a = to_affine(leir::parse_expr("c*2+f-1"));
  ASSERT_TRUE(a);
  EXPECT_EQ(a->coeff_of("c"), 2);
  EXPECT_EQ(a->coeff_of("f"), 1);
  EXPECT_EQ(a->constant, -1);
  EXPECT_FALSE(to_affine(leir::parse_expr("c//2")));
  EXPECT_FALSE(to_affine(leir::parse_expr("c*f")));
  EXPECT_FALSE(to_affine(leir::parse_expr("A^{i64,g}_{c}")));
  Affine by;
  by.add_term("o", 16);
  by.add_term("i", 1);
  EXPECT_EQ(leir::print_expr(to_expr(substitute(*a, "c", by))), "o*32+i*2+f-1");
}

TEST(Affine, SubstitutionKeepsSubscriptsFlat) {
  auto e = leir::parse_expr("A^{f64,g}_{tx*4+f,tx}+tx");
  Affine by;
  by.add_term("o", 8);
  by.add_term("i", 1);
  EXPECT_EQ(leir::print_expr(substitute_var(e, "tx", by)), "A^{f64,g}_{o*32+i*4+f,o*8+i}+(o*8+i)");
}

TEST(Accumulation, FollowsTheLeirRule) {
  EXPECT_EQ(accumulation_of(stmt("D^{f64,g}_{tx}=D^{f64,g}_{tx}+A^{f64,g}_{tx};"))->op, AccumOp::Add);
  EXPECT_EQ(accumulation_of(stmt("D^{f64,g}_{tx}=A^{f64,g}_{tx}+D^{f64,g}_{tx};"))->op, AccumOp::Add);
  EXPECT_EQ(accumulation_of(stmt("D^{f64,g}_{tx}=D^{f64,g}_{tx}-A^{f64,g}_{tx}+C^{f64,g};"))->op, AccumOp::Add);
  EXPECT_EQ(accumulation_of(stmt("D^{f64,g}=A^{f64,g}*D^{f64,g};"))->op, AccumOp::Mul);
  EXPECT_EQ(accumulation_of(stmt("M^{f64,g}_{a}=max(A^{f64,g}_{a},M^{f64,g}_{a});"))->op, AccumOp::Max);
  EXPECT_EQ(accumulation_of(stmt("M^{f64,g}_{a}=min(M^{f64,g}_{a},A^{f64,g}_{a});"))->op, AccumOp::Min);
  EXPECT_FALSE(accumulation_of(stmt("D^{f64,g}_{tx}=A^{f64,g}_{tx}-D^{f64,g}_{tx};")));      // negative sign
  EXPECT_FALSE(accumulation_of(stmt("D^{f64,g}_{tx}=D^{f64,g}_{tx+1}+A^{f64,g}_{tx};")));    // other element
  EXPECT_FALSE(accumulation_of(stmt("D^{f64,g}_{tx}=(D^{f64,g}_{tx}+A^{f64,g}_{tx})/2;")));  // top op is /
  EXPECT_EQ(accumulation_of(stmt("D^{f64,g}_{tx}=D^{f64,g}_{tx}+D^{f64,g}_{tx}*A^{f64,g}_{tx};"))->other_self_reads, 1);
}

TEST(Dependence, ProvesIndependentAndCarriedLoops) {
  // matmul: tx, a independent; c carries only the accumulation.
  auto p = prog("B^{8}_{tx=0}L^{12}_{a=0}L^{16}_{c=0}[D^{f64,g}_{tx,a}=D^{f64,g}_{tx,a}+A^{f64,g}_{tx,c}*C^{f64,g}_{c,a};];",
                "input A: f64[8,16]\ninput C: f64[16,12]\noutput D: f64[8,12]\n");
  auto nests = all_nests(p.body);
  ASSERT_EQ(nests.size(), 1u);
  EXPECT_EQ(check_loop(nests[0], 0).kind, LoopDep::Independent);
  EXPECT_EQ(check_loop(nests[0], 1).kind, LoopDep::Independent);
  EXPECT_EQ(check_loop(nests[0], 2).kind, LoopDep::ReductionOnly);
}

TEST(Dependence, ScanIsCarriedAndStridedWritesAreNot) {
  auto p = prog("L^{4}_{tx=0}L^{8}_{a=1}[D^{f64,g}_{tx,a}=D^{f64,g}_{tx,a-1}+A^{f64,g}_{tx,a};];"
                "L^{4}_{tx=0}L^{4}_{a=0}[E^{f64,g}_{tx*4+a}=A^{f64,g}_{tx,a};];"
                "L^{4}_{tx=0}L^{4}_{a=0}[F^{f64,g}_{tx*3+a}=A^{f64,g}_{tx,a};];");
  auto n = all_nests(p.body);
  EXPECT_EQ(check_loop(n[0], 0).kind, LoopDep::Independent);
  EXPECT_EQ(check_loop(n[0], 1).kind, LoopDep::Carried);  // D[a] reads D[a-1]
  EXPECT_EQ(check_loop(n[1], 0).kind, LoopDep::Independent);  // tx*4+a, a<4: injective
  EXPECT_EQ(check_loop(n[1], 1).kind, LoopDep::Independent);
  EXPECT_EQ(check_loop(n[2], 0).kind, LoopDep::Carried);  // tx*3+a overlaps: (0,3) and (1,0)
}

TEST(Dependence, ArgmaxInitInsideReductionLoopIsCarried) {
  auto p = prog("B^{4}_{tx=0}L^{6}_{a=0}L^{5}_{c=0}[M^{f64,g}_{tx,c}=max(M^{f64,g}_{tx,c},A^{f64,g}_{tx,a,c});C^{i64,g}_{tx,c}=0;];");
  auto n = all_nests(p.body);
  EXPECT_EQ(check_loop(n[0], 1).kind, LoopDep::Carried);
  EXPECT_EQ(check_loop(n[0], 2).kind, LoopDep::Independent);
}

TEST(Dependence, PermutationLegality) {
  // D[a][c] = D[a-1][c+1]: direction (<, >): interchanging a and c reverses it.
  auto p = prog("L^{4}_{a=1}L^{4}_{c=0}[D^{f64,g}_{a,c}=D^{f64,g}_{a-1,c+1}+A^{f64,g}_{a,c};];");
  auto n = all_nests(p.body)[0];
  auto deps = nest_dependences(n);
  std::string why;
  EXPECT_FALSE(permutation_legal(n, deps, {1, 0}, nullptr, &why));
  EXPECT_NE(why.find("D"), std::string::npos);
  // matmul: moving the reduction loop c outward changes the summation order of nothing
  // (still one c order per element) -> exact; tiling c with itself is not involved here.
  auto m = prog("L^{8}_{tx=0}L^{12}_{a=0}L^{16}_{c=0}[D^{f64,g}_{tx,a}=D^{f64,g}_{tx,a}+A^{f64,g}_{tx,c};];");
  auto mn = all_nests(m.body)[0];
  auto md = nest_dependences(mn);
  bool reassoc = true;
  EXPECT_TRUE(permutation_legal(mn, md, {2, 0, 1}, &reassoc, nullptr));
  EXPECT_FALSE(reassoc);
  // Two reduction loops swapped: the order of terms into each element changes -> reassoc.
  auto r = prog("L^{4}_{tx=0}L^{3}_{a=0}L^{5}_{c=0}[F^{f64,g}_{tx}=F^{f64,g}_{tx}+A^{f64,g}_{tx,a,c};];");
  auto rn = all_nests(r.body)[0];
  EXPECT_TRUE(permutation_legal(rn, nest_dependences(rn), {0, 2, 1}, &reassoc, nullptr));
  EXPECT_TRUE(reassoc);
}

TEST(UseDef, ItemsReadAndWrite) {
  auto p = prog("L^{4}_{a=0}[E^{f64,g}_{a}=A^{f64,g}_{a};];L^{4}_{a=0}[C^{f64,g}_{a}=E^{f64,g}_{a}*2;];");
  auto ud = use_def(p);
  EXPECT_TRUE(ud.read_after(0, "E"));
  EXPECT_FALSE(ud.read_after(1, "E"));
  EXPECT_TRUE(ud.written_before(1, "E"));
  EXPECT_EQ(ud.readers("A"), std::vector<int>{0});
  auto c = item_conflicts(p.body[0], p.body[1]);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].tensor, "E");
  EXPECT_EQ(c[0].kind, DepKind::RAW);
}

TEST(Names, FreshAndPublicStyle) {
  auto p = prog("B^{4}_{tx=0}L^{4}_{a=0}[C^{f64,g}_{tx,a}=A^{f64,g}_{tx,a};];", "input A: f64[4,4]\noutput C: f64[4,4]\n");
  NameAllocator n(p);
  EXPECT_EQ(n.fresh_tensor(), "D");
  EXPECT_EQ(n.fresh_tensor(), "E");
  EXPECT_EQ(n.fresh_var(), "c");
  EXPECT_EQ(n.fresh_axis_var("by"), "by");
  EXPECT_EQ(n.fresh_axis_var("tx"), "txa");
}

}  // namespace
}  // namespace steptp::analysis
