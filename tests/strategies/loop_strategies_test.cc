// Unit tests of the loop/schedule strategies (9-22) on hand-written programs: expected result
// text (derived by hand), refusals of illegal sites, and equivalence of every result in the
// reference interpreter.
#include <gtest/gtest.h>

#include "ir/leir/printer.h"
#include "transform/sampler.h"
#include "transform/strategy.h"
#include "strategies/check_util.h"

namespace steptp::strategies {
namespace {

using testing::check_equivalent;
using testing::program;

const char* kMatmul =
    "input A: f64[4,6]\ninput C: f64[6,8]\noutput D: f64[4,8]\n"
    "B^{4}_{tx=0}L^{8}_{a=0}L^{6}_{c=0}[D^{f64,g}_{tx,a}=D^{f64,g}_{tx,a}+A^{f64,g}_{tx,c}*C^{f64,g}_{c,a};];";

const Strategy& get(std::string_view name) {
  const Strategy* s = find_strategy(name);
  if (!s) throw std::runtime_error("strategy not registered: " + std::string(name));
  return *s;
}

// Finds the site whose description is `where`; fails the test if absent.
Site site(const Strategy& s, const leir::Program& p, const std::string& where) {
  for (const auto& st : s.sites(p))
    if (st.description == where) return st;
  ADD_FAILURE() << s.name() << ": no site '" << where << "'";
  return {};
}

bool refused(const Strategy& s, const leir::Program& p, const std::string& where, const std::string& reason_part) {
  for (const auto& r : s.explain(p))
    if (r.site == where && r.reason.find(reason_part) != std::string::npos) return true;
  return false;
}

std::string applied(const Strategy& s, const leir::Program& p, const Site& st, const Params& params,
                    Exactness expect = Exactness::Exact) {
  auto c = s.apply(p, st, params);
  if (!c) {
    ADD_FAILURE() << s.name() << " refused " << st.description;
    return {};
  }
  EXPECT_EQ(c->exactness, expect);
  auto eq = check_equivalent(p, c->program);
  EXPECT_TRUE(eq.ok) << s.name() << " at " << st.description << ": " << eq.message << "\n"
                     << leir::print_body(c->program.body);
  if (expect == Exactness::Exact) EXPECT_TRUE(eq.exact) << leir::print_body(c->program.body);
  return leir::print_body(c->program.body);
}

TEST(LoopSplit, FlatSubscriptsAndFreshNames) {
  auto p = program(kMatmul);
  auto& s = get("loop_split");
  EXPECT_EQ(applied(s, p, site(s, p, "nest 0, loop a (L^{8}_{a=0})"), {{"factor", int64_t{2}}}),
            "B^{4}_{tx=0}L^{2}_{d=0}L^{4}_{f=0}L^{6}_{c=0}[D^{f64,g}_{tx,d*4+f}=D^{f64,g}_{tx,d*4+f}+A^{f64,g}_{tx,c}*"
            "C^{f64,g}_{c,d*4+f};];");
  // A bound loop keeps its axis on the outer loop.
  EXPECT_EQ(applied(s, p, site(s, p, "nest 0, loop tx (B^{4}_{tx=0})"), {{"factor", int64_t{2}}}),
            "B^{2}_{tx=0}L^{2}_{d=0}L^{8}_{a=0}L^{6}_{c=0}[D^{f64,g}_{tx*2+d,a}=D^{f64,g}_{tx*2+d,a}+"
            "A^{f64,g}_{tx*2+d,c}*C^{f64,g}_{c,a};];");
  // Prime extents have no factor.
  auto q = program("input A: f64[7]\noutput C: f64[7]\nL^{7}_{a=0}[C^{f64,g}_{a}=A^{f64,g}_{a};];");
  EXPECT_TRUE(s.sites(q).empty());
  EXPECT_TRUE(refused(s, q, "nest 0, loop a (L^{7}_{a=0})", "no factor"));
}

TEST(LoopFusion, IsTheRealInverseOfSplit) {
  auto p = program(kMatmul);
  auto& split = get("loop_split");
  auto& fuse = get("loop_fusion");
  auto c = split.apply(p, site(split, p, "nest 0, loop a (L^{8}_{a=0})"), {{"factor", int64_t{2}}});
  ASSERT_TRUE(c);
  auto fused = applied(fuse, c->program, site(fuse, c->program, "nest 0, loops d,f"), {});
  // `a` is free again in the split program, so the fused loop gets it back: the exact original.
  EXPECT_EQ(fused, leir::print_body(p.body));
  // The original matmul has no o*m+i pair: a and c are used apart.
  EXPECT_TRUE(fuse.sites(p).empty());
  EXPECT_TRUE(refused(fuse, p, "nest 0, loops a,c", "does not combine"));
  // Fusing a split bound loop gives the bound loop back.
  auto b = split.apply(p, site(split, p, "nest 0, loop tx (B^{4}_{tx=0})"), {{"factor", int64_t{2}}});
  ASSERT_TRUE(b);
  EXPECT_EQ(applied(fuse, b->program, site(fuse, b->program, "nest 0, loops tx,d"), {}), leir::print_body(p.body));
}

TEST(LoopFusion, StridedSubscripts) {
  // maxpool-style c*2+f: c (4) and f (2) fuse into one loop of 8 (coefficient of c = 2 * that of f).
  auto p = program("input A: f64[8]\noutput C: f64[8]\nL^{4}_{c=0}L^{2}_{f=0}[C^{f64,g}_{c*2+f}=A^{f64,g}_{c*2+f}*2;];");
  auto& fuse = get("loop_fusion");
  EXPECT_EQ(applied(fuse, p, site(fuse, p, "nest 0, loops c,f"), {}),
            "L^{8}_{a=0}[C^{f64,g}_{a}=A^{f64,g}_{a}*2;];");
  auto q = program("input A: f64[4,2]\noutput C: f64[4]\nL^{4}_{c=0}L^{2}_{f=0}[C^{f64,g}_{c}=C^{f64,g}_{c}+A^{f64,g}_{c,f};];");
  EXPECT_TRUE(fuse.sites(q).empty());
}

TEST(LoopTiling, TwoTileLoopsOutside) {
  auto p = program(kMatmul);
  auto& s = get("loop_tiling");
  EXPECT_EQ(applied(s, p, site(s, p, "nest 0, loops a,c"), {{"tiles", std::vector<int64_t>{4, 3}}}),
            "B^{4}_{tx=0}L^{2}_{d=0}L^{2}_{g=0}L^{4}_{f=0}L^{3}_{h=0}[D^{f64,g}_{tx,d*4+f}=D^{f64,g}_{tx,d*4+f}+"
            "A^{f64,g}_{tx,g*3+h}*C^{f64,g}_{g*3+h,d*4+f};];");
  // Tiling two reduction loops reorders the terms of each sum: reassoc.
  auto r = program("input A: f64[2,4,6]\noutput C: f64[2]\n"
                   "B^{2}_{tx=0}L^{4}_{a=0}L^{6}_{c=0}[C^{f64,g}_{tx}=C^{f64,g}_{tx}+A^{f64,g}_{tx,a,c};];");
  applied(s, r, site(s, r, "nest 0, loops a,c"), {{"tiles", std::vector<int64_t>{2, 3}}}, Exactness::Reassoc);
  // A dependence carried by both loops in opposite directions forbids it.
  auto w = program("input A: f64[4,4]\noutput D: f64[5,5]\n"
                   "L^{4}_{a=0}L^{4}_{c=0}[D^{f64,g}_{a+1,c}=A^{f64,g}_{a,c}+D^{f64,g}_{a,c+1};];");
  EXPECT_TRUE(refused(s, w, "nest 0, loops a,c", "carried by both"));
}

TEST(LoopReorder, LegalPermutationsOnly) {
  auto p = program(kMatmul);
  auto& s = get("loop_reorder");
  auto st = site(s, p, "nest 0");
  EXPECT_EQ(s.param_space(p, st).size(), 5u);  // every non-identity order of tx,a,c is legal
  EXPECT_EQ(applied(s, p, st, {{"order", std::vector<int64_t>{2, 0, 1}}}),
            "L^{6}_{c=0}B^{4}_{tx=0}L^{8}_{a=0}[D^{f64,g}_{tx,a}=D^{f64,g}_{tx,a}+A^{f64,g}_{tx,c}*C^{f64,g}_{c,a};];");
  // Wavefront dependence (<,>): no interchange.
  auto w = program("input A: f64[4,4]\noutput D: f64[5,5]\n"
                   "L^{4}_{a=1}L^{4}_{c=0}[D^{f64,g}_{a,c}=D^{f64,g}_{a-1,c+1}+A^{f64,g}_{a-1,c};];");
  EXPECT_TRUE(s.sites(w).empty());
  EXPECT_TRUE(refused(s, w, "nest 0", "reverses a dependence"));
  // Swapping two reduction loops: reassoc.
  auto r = program("input A: f64[2,4,6]\noutput C: f64[2]\n"
                   "B^{2}_{tx=0}L^{4}_{a=0}L^{6}_{c=0}[C^{f64,g}_{tx}=C^{f64,g}_{tx}+A^{f64,g}_{tx,a,c};];");
  applied(s, r, site(s, r, "nest 0"), {{"order", std::vector<int64_t>{0, 2, 1}}}, Exactness::Reassoc);
}

TEST(LoopAnnotations, IndependentLoopsOnly) {
  auto p = program(kMatmul);
  auto& par = get("loop_parallelization");
  auto& vec = get("loop_vectorization");
  auto& unr = get("loop_unrolling");
  auto& bind = get("loop_binding");
  EXPECT_EQ(applied(par, p, site(par, p, "nest 0, loop a (L^{8}_{a=0})"), {}),
            "B^{4}_{tx=0}P^{8}_{a=0}L^{6}_{c=0}[D^{f64,g}_{tx,a}=D^{f64,g}_{tx,a}+A^{f64,g}_{tx,c}*C^{f64,g}_{c,a};];");
  EXPECT_TRUE(refused(par, p, "nest 0, loop c (L^{6}_{c=0})", "parallel reduction"));
  EXPECT_TRUE(refused(par, p, "nest 0, loop tx (B^{4}_{tx=0})", "already B"));
  // The innermost loop c is a reduction: V (a vector reduction), never P.
  EXPECT_EQ(applied(vec, p, site(vec, p, "nest 0, loop c (L^{6}_{c=0})"), {}),
            "B^{4}_{tx=0}L^{8}_{a=0}V^{6}_{c=0}[D^{f64,g}_{tx,a}=D^{f64,g}_{tx,a}+A^{f64,g}_{tx,c}*C^{f64,g}_{c,a};];");
  EXPECT_TRUE(refused(vec, p, "nest 0, loop a (L^{8}_{a=0})", "not the innermost"));
  EXPECT_EQ(unr.sites(p).size(), 2u);  // a and c
  EXPECT_EQ(applied(unr, p, site(unr, p, "nest 0, loop c (L^{6}_{c=0})"), {}),
            "B^{4}_{tx=0}L^{8}_{a=0}U^{6}_{c=0}[D^{f64,g}_{tx,a}=D^{f64,g}_{tx,a}+A^{f64,g}_{tx,c}*C^{f64,g}_{c,a};];");
  auto bs = site(bind, p, "nest 0, loop a (L^{8}_{a=0})");
  EXPECT_EQ(bind.param_space(p, bs).size(), 5u);  // bx by bz ty tz (4*8 threads, tz 8 <= 64)
  EXPECT_EQ(applied(bind, p, bs, {{"axis", std::string("by")}}),
            "B^{4}_{tx=0}B^{8}_{by=0}L^{6}_{c=0}[D^{f64,g}_{tx,by}=D^{f64,g}_{tx,by}+A^{f64,g}_{tx,c}*C^{f64,g}_{c,by};];");
  // Thread limit: 512 threads on tx leave no room for a 4-wide ty.
  auto big = program("input A: f64[512,4]\noutput C: f64[512,4]\n"
                     "B^{512}_{tx=0}L^{4}_{a=0}[C^{f64,g}_{tx,a}=A^{f64,g}_{tx,a};];");
  std::vector<std::string> axes;
  for (const auto& pr : bind.param_space(big, site(bind, big, "nest 0, loop a (L^{4}_{a=0})")))
    axes.push_back(std::get<std::string>(pr.at("axis")));
  EXPECT_EQ(axes, (std::vector<std::string>{"bx", "by", "bz"}));
}

TEST(ReductionFactorization, PartialsAddedOncePerElement) {
  auto p = program(kMatmul);
  auto& s = get("reduction_factorization");
  EXPECT_EQ(applied(s, p, site(s, p, "nest 0, loop c (L^{6}_{c=0})"), {{"split", int64_t{3}}}, Exactness::Reassoc),
            "B^{4}_{tx=0}L^{8}_{a=0}L^{3}_{c=0}[E^{f64,g}_{tx,a}=E^{f64,g}_{tx,a}+A^{f64,g}_{tx,c}*C^{f64,g}_{c,a};];"
            "B^{4}_{tx=0}L^{8}_{a=0}L^{3}_{c=0}[F^{f64,g}_{tx,a}=F^{f64,g}_{tx,a}+A^{f64,g}_{tx,c+3}*C^{f64,g}_{c+3,a};];"
            "B^{4}_{tx=0}L^{8}_{a=0}[D^{f64,g}_{tx,a}=D^{f64,g}_{tx,a}+(E^{f64,g}_{tx,a}+F^{f64,g}_{tx,a});];");
  EXPECT_TRUE(refused(s, p, "nest 0, loop a (L^{8}_{a=0})", "") == false);  // a is spatial: no site, no refusal
  // Multi-axis reduction (the public engine's bug: partials added once per remaining reduction
  // iteration): the combine runs over tx only.
  auto r = program("input A: f64[2,4,6]\noutput C: f64[2]\n"
                   "B^{2}_{tx=0}L^{4}_{a=0}L^{6}_{c=0}[C^{f64,g}_{tx}=C^{f64,g}_{tx}+A^{f64,g}_{tx,a,c};];");
  EXPECT_EQ(applied(s, r, site(s, r, "nest 0, loop a (L^{4}_{a=0})"), {{"split", int64_t{1}}}, Exactness::Reassoc),
            "B^{2}_{tx=0}L^{1}_{a=0}L^{6}_{c=0}[D^{f64,g}_{tx}=D^{f64,g}_{tx}+A^{f64,g}_{tx,a,c};];"
            "B^{2}_{tx=0}L^{3}_{a=0}L^{6}_{c=0}[E^{f64,g}_{tx}=E^{f64,g}_{tx}+A^{f64,g}_{tx,a+1,c};];"
            "B^{2}_{tx=0}[C^{f64,g}_{tx}=C^{f64,g}_{tx}+(D^{f64,g}_{tx}+E^{f64,g}_{tx});];");
  // max reductions stay exact.
  auto m = program("input A: f64[2,6]\noutput C: f64[2]\nB^{2}_{tx=0}L^{6}_{a=0}[C^{f64,g}_{tx}=max(C^{f64,g}_{tx},A^{f64,g}_{tx,a});];");
  applied(s, m, site(s, m, "nest 0, loop a (L^{6}_{a=0})"), {{"split", int64_t{3}}}, Exactness::Exact);
  // Scalar accumulation: the combine is a bare statement.
  auto sc = program("input A: f64[6]\noutput C: f64[]\nB^{6}_{tx=0}[C^{f64,g}=C^{f64,g}+A^{f64,g}_{tx};];");
  EXPECT_EQ(applied(s, sc, site(s, sc, "nest 0, loop tx (B^{6}_{tx=0})"), {{"split", int64_t{2}}}, Exactness::Reassoc),
            "B^{2}_{tx=0}[D^{f64,g}=D^{f64,g}+A^{f64,g}_{tx};];B^{4}_{tx=0}[E^{f64,g}=E^{f64,g}+A^{f64,g}_{tx+2};];"
            "C^{f64,g}=C^{f64,g}+(D^{f64,g}+E^{f64,g});");
}

TEST(CacheReadWrite, StagesThroughLocalAndShared) {
  auto p = program(kMatmul);
  auto& s = get("cache_read_write");
  EXPECT_EQ(applied(s, p, site(s, p, "nest 0, read A"), {{"scope", std::string("l")}}),
            "L^{4}_{tx=0}L^{6}_{c=0}[E^{f64,l}_{tx,c}=A^{f64,g}_{tx,c};];"
            "B^{4}_{tx=0}L^{8}_{a=0}L^{6}_{c=0}[D^{f64,g}_{tx,a}=D^{f64,g}_{tx,a}+E^{f64,l}_{tx,c}*C^{f64,g}_{c,a};];");
  EXPECT_EQ(applied(s, p, site(s, p, "nest 0, write D"), {{"scope", std::string("s")}}),
            "B^{4}_{tx=0}L^{8}_{a=0}L^{6}_{c=0}[E^{f64,s}_{tx,a}=E^{f64,s}_{tx,a}+A^{f64,g}_{tx,c}*C^{f64,g}_{c,a};];"
            "L^{4}_{tx=0}L^{8}_{a=0}[D^{f64,g}_{tx,a}=E^{f64,s}_{tx,a};];");
  // D already holds a GEMM result when the bias nest runs: its write cannot be staged.
  auto g = program("input A: f64[2,3]\ninput H: f64[3]\noutput C: f64[2,3]\n"
                   "B^{2}_{tx=0}L^{3}_{a=0}[C^{f64,g}_{tx,a}=A^{f64,g}_{tx,a};];"
                   "B^{2}_{tx=0}L^{3}_{a=0}[C^{f64,g}_{tx,a}=C^{f64,g}_{tx,a}+H^{f64,g}_{a};];");
  EXPECT_TRUE(refused(s, g, "nest 1, write C", "used before"));
}

TEST(Layouts, CopyRewritesEveryRead) {
  auto p = program(kMatmul);
  auto& lt = get("layout_transformation");
  EXPECT_EQ(applied(lt, p, site(lt, p, "tensor C"), {{"layout", std::string("transpose")}, {"dims", std::vector<int64_t>{0, 1}}}),
            "L^{6}_{a=0}L^{8}_{c=0}[E^{f64,g}_{c,a}=C^{f64,g}_{a,c};];"
            "B^{4}_{tx=0}L^{8}_{a=0}L^{6}_{c=0}[D^{f64,g}_{tx,a}=D^{f64,g}_{tx,a}+A^{f64,g}_{tx,c}*E^{f64,g}_{a,c};];");
  EXPECT_EQ(applied(lt, p, site(lt, p, "tensor A"), {{"layout", std::string("merge")}, {"dims", std::vector<int64_t>{0}}}),
            "L^{4}_{a=0}L^{6}_{c=0}[E^{f64,g}_{a*6+c}=A^{f64,g}_{a,c};];"
            "B^{4}_{tx=0}L^{8}_{a=0}L^{6}_{c=0}[D^{f64,g}_{tx,a}=D^{f64,g}_{tx,a}+E^{f64,g}_{tx*6+c}*C^{f64,g}_{c,a};];");
  EXPECT_EQ(applied(lt, p, site(lt, p, "tensor A"), {{"layout", std::string("split")}, {"dims", std::vector<int64_t>{1}}, {"factor", int64_t{2}}}),
            "L^{4}_{a=0}L^{3}_{c=0}L^{2}_{d=0}[E^{f64,g}_{a,c,d}=A^{f64,g}_{a,c*2+d};];"
            "B^{4}_{tx=0}L^{8}_{a=0}L^{6}_{c=0}[D^{f64,g}_{tx,a}=D^{f64,g}_{tx,a}+E^{f64,g}_{tx,c//2,c%2}*C^{f64,g}_{c,a};];");
  EXPECT_TRUE(refused(lt, p, "tensor D", "not read-only"));
  // Parameters are typed: a layout with the wrong arity is refused with the reason, not parsed.
  auto bad = lt.apply(p, site(lt, p, "tensor C"), {{"layout", std::string("transpose")}, {"dims", std::vector<int64_t>{0}}});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.refusal().site, "tensor C");
  EXPECT_NE(bad.refusal().reason.find("not a layout"), std::string::npos) << bad.refusal().reason;

  auto q = program("input A: f64[3,4]\noutput C: f64[3,4]\n"
                   "L^{3}_{a=0}L^{4}_{c=0}[E^{f64,g}_{a,c}=A^{f64,g}_{a,c}*2;];"
                   "L^{3}_{a=0}L^{4}_{c=0}[C^{f64,g}_{a,c}=E^{f64,g}_{a,c}+1;];");
  auto& sl = get("set_storage_layout");
  EXPECT_EQ(applied(sl, q, site(sl, q, "tensor E"), {{"layout", std::string("transpose")}, {"dims", std::vector<int64_t>{0, 1}}}),
            "L^{3}_{a=0}L^{4}_{c=0}[E^{f64,g}_{c,a}=A^{f64,g}_{a,c}*2;];L^{3}_{a=0}L^{4}_{c=0}[C^{f64,g}_{a,c}=E^{f64,g}_{c,a}+1;];");
  EXPECT_EQ(applied(sl, q, site(sl, q, "tensor E"), {{"layout", std::string("merge")}, {"dims", std::vector<int64_t>{0}}}),
            "L^{3}_{a=0}L^{4}_{c=0}[E^{f64,g}_{a*4+c}=A^{f64,g}_{a,c}*2;];L^{3}_{a=0}L^{4}_{c=0}[C^{f64,g}_{a,c}=E^{f64,g}_{a*4+c}+1;];");
  auto& ss = get("set_storage_scope");
  EXPECT_EQ(applied(ss, q, site(ss, q, "tensor E"), {{"scope", std::string("s")}}),
            "L^{3}_{a=0}L^{4}_{c=0}[E^{f64,s}_{a,c}=A^{f64,g}_{a,c}*2;];L^{3}_{a=0}L^{4}_{c=0}[C^{f64,g}_{a,c}=E^{f64,s}_{a,c}+1;];");
  EXPECT_TRUE(refused(ss, q, "tensor C", "known"));
}

TEST(PrecomputeIndices, IndexTableReadIndirectly) {
  auto p = program("input A: f64[2,8]\noutput C: f64[2,4]\n"
                   "B^{2}_{tx=0}L^{4}_{c=0}L^{2}_{f=0}[C^{f64,g}_{tx,c}=max(C^{f64,g}_{tx,c},A^{f64,g}_{tx,c*2+f});];");
  auto& s = get("precompute_indices");
  EXPECT_EQ(s.sites(p).size(), 1u);
  EXPECT_EQ(applied(s, p, site(s, p, "nest 0, subscript c*2+f"), {}),
            "L^{4}_{c=0}L^{2}_{f=0}[D^{i64,g}_{c,f}=c*2+f;];"
            "B^{2}_{tx=0}L^{4}_{c=0}L^{2}_{f=0}[C^{f64,g}_{tx,c}=max(C^{f64,g}_{tx,c},A^{f64,g}_{tx,D^{i64,g}_{c,f}});];");
}

TEST(Sampler, SameSeedSameBytes) {
  auto p = program(kMatmul);
  for (const auto* s : all_strategies()) {
    SampleOptions o;
    o.seed = 7;
    auto a = sample_candidates(*s, p, o), b = sample_candidates(*s, p, o);
    ASSERT_EQ(a.size(), b.size()) << s->name();
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(params_to_json(a[i].params), params_to_json(b[i].params));
      EXPECT_EQ(leir::print_body(a[i].program.body), leir::print_body(b[i].program.body));
    }
    auto x = sample_one(*s, p, 11), y = sample_one(*s, p, 11);
    ASSERT_EQ(x.has_value(), y.has_value());
    if (x) EXPECT_EQ(leir::print_body(x->program.body), leir::print_body(y->program.body));
  }
}

}  // namespace
}  // namespace steptp::strategies
