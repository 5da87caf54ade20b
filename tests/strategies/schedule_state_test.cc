// The schedule state: analyses and surveys computed once per state and shared by every call,
// nests found by path, refusals of applied choices with their reasons, and one state shared by
// threads giving what a state per call gives.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "ir/leir/printer.h"
#include "strategies/check_util.h"
#include "transform/schedule_state.h"
#include "transform/site_address.h"

namespace steptp::strategies {
namespace {

using testing::program;

const char* kTwoNests =
    "input A: f64[4,6]\ninput C: f64[6,8]\noutput D: f64[4,8]\noutput F: f64[4,8]\n"
    "B^{4}_{tx=0}L^{8}_{a=0}L^{6}_{c=0}[D^{f64,g}_{tx,a}=D^{f64,g}_{tx,a}+A^{f64,g}_{tx,c}*C^{f64,g}_{c,a};];"
    "B^{4}_{tx=0}L^{8}_{a=0}[F^{f64,g}_{tx,a}=exp(D^{f64,g}_{tx,a})*exp(D^{f64,g}_{tx,a});];";

// A strategy that counts its surveys: one site per top-level item.
class CountingStrategy final : public Strategy {
 public:
  mutable std::atomic<int> surveys{0};
  std::string_view name() const override { return "counting"; }
  std::string_view description() const override { return "test"; }
  Exactness exactness() const override { return Exactness::Exact; }
  Survey survey(const ScheduleState& st) const override {
    ++surveys;
    Survey s;
    for (int i = 0; i < static_cast<int>(st.program().body.size()); ++i)
      s.consider({{i}, {}, "item " + std::to_string(i)}, i == 0 ? std::nullopt : std::optional<std::string>("odd"));
    return s;
  }
  Applied apply(const ScheduleState& st, const Site& s, const Params& params) const override {
    if (s.path.at(0) != 0) return refuse(s, "only item 0");
    return candidate(st, s, params, Exactness::Exact, st.program());
  }
};

TEST(ScheduleState, SurveysAndAnalysesAreComputedOncePerState) {
  const ScheduleState st(program(kTwoNests));
  CountingStrategy s;
  EXPECT_EQ(s.sites(st).size(), 1u);
  EXPECT_EQ(s.explain(st).size(), 1u);
  EXPECT_EQ(s.explain(st)[0].reason, "odd");
  auto c = s.apply(st, s.sites(st)[0], {});
  ASSERT_TRUE(c);
  EXPECT_EQ(c->site, 0);
  EXPECT_EQ(s.surveys.load(), 1);  // sites, explain and the candidate's site index share one survey
  EXPECT_EQ(&st.use_def(), &st.use_def());
  EXPECT_EQ(&st.tensors(), &st.tensors());
  EXPECT_EQ(&st.dependences({0}), &st.dependences({0}));
  // A new program is a new state: nothing carries over.
  const ScheduleState other(program(kTwoNests));
  EXPECT_EQ(s.sites(other).size(), 1u);
  EXPECT_EQ(s.surveys.load(), 2);
}

TEST(ScheduleState, NestsAreFoundByPath) {
  const ScheduleState st(program(kTwoNests));
  EXPECT_EQ(st.nest_at({1}).nest, &st.program().body[1].nest);
  EXPECT_EQ(st.nest_at({1}).nest->loops.size(), 2u);
  EXPECT_THROW(st.nest_at({2}), std::out_of_range);
  EXPECT_THROW(st.nest_at({0, 0}), std::out_of_range);
}

TEST(ScheduleState, AnIllegalChoiceComesBackAsARefusalWithItsReason) {
  const ScheduleState st(program(kTwoNests));
  CountingStrategy s;
  auto r = s.apply(st, {{1}, {}, "item 1"}, {});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.refusal().site, "item 1");
  EXPECT_EQ(r.refusal().reason, "only item 0");
  // A registered strategy: loop_split with a factor that does not divide the extent.
  const Strategy* split = find_strategy("loop_split");
  ASSERT_NE(split, nullptr);
  const auto& sites = split->sites(st);
  auto at = find_site(sites, {{0}, {1}, 0});  // nest 0, loop a (extent 8)
  ASSERT_TRUE(at);
  auto bad = split->apply(st, sites[*at], {{"factor", int64_t{3}}});
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.refusal().reason.find("not a proper divisor of 8"), std::string::npos) << bad.refusal().reason;
}

// Every strategy's sites, parameter spaces and results printed, from a state per call or one state.
std::string everything(const leir::Program& p, const ScheduleState* shared) {
  std::string out;
  for (const auto* s : all_strategies()) {
    const ScheduleState own(p);
    const ScheduleState& st = shared ? *shared : own;
    for (const auto& site : s->sites(st))
      for (const auto& params : s->param_space(st, site)) {
        auto c = s->apply(st, site, params);
        out += std::string(s->name()) + " " + site.description + " " + params_to_json(params) + " -> " +
               (c ? leir::print_body(c->program.body) : "refused: " + c.refusal().reason) + "\n";
      }
  }
  return out;
}

TEST(ScheduleState, OneStateSharedByThreadsGivesWhatAStatePerCallGives) {
  auto p = program(kTwoNests);
  const std::string expected = everything(p, nullptr);
  ASSERT_FALSE(expected.empty());
  const ScheduleState shared(p);
  std::string a, b;
  std::thread t1([&] { a = everything(p, &shared); });
  std::thread t2([&] { b = everything(p, &shared); });
  t1.join();
  t2.join();
  EXPECT_EQ(a, expected);
  EXPECT_EQ(b, expected);
}

}  // namespace
}  // namespace steptp::strategies
