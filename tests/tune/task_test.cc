// Tasks and the task scheduler (search/tune/task.h, task_scheduler.h): extraction splits a program
// into stand-alone tasks whose hash ignores names and positions (two identical nests: one task,
// two uses), a task's trace composed onto the program replays and verifies, the scheduler gives
// the rounds to the task whose curve still improves, and a recurring task is served from the
// store instead of measured again.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "ir/leir/canonical.h"
#include "ir/leir/program_io.h"
#include "ir/verify/verifier.h"
#include "search/tune/task.h"
#include "search/tune/task_scheduler.h"
#include "search/tune/tuner.h"
#include "transform/schedule_state.h"
#include "transform/strategy.h"
#include "transform/trace.h"
#include "tune/fake_runner.h"

namespace fs = std::filesystem;

namespace steptp::tune {
namespace {

fs::path task_tmp(const std::string& name) {
  fs::path p = fs::temp_directory_path() / ("steptp_task_test_" + std::to_string(getpid())) / name;
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

// Two heavy nests of the same structure under different names, a light one between them.
leir::Program two_same_nests() {
  return leir::program_from_text(
      "input A: f32[64,32]\ninput X: f32[64,32]\noutput C: f32[64,32]\noutput E: f32[4]\noutput D: f32[64,32]\n"
      "L^{64}_{a=0}L^{32}_{c=0}[C^{f32,g}_{a,c}=A^{f32,g}_{a,c}*2;];"
      "L^{4}_{a=0}[E^{f32,g}_{a}=X^{f32,g}_{0,a}+1;];"
      "L^{64}_{i=0}L^{32}_{j=0}[D^{f32,g}_{i,j}=X^{f32,g}_{i,j}*2;];",
      "two_same.leir");
}

// The same nests renamed and moved: the light nest first, other tensor and loop names.
leir::Program same_nests_elsewhere() {
  return leir::program_from_text(
      "input Q: f32[64,32]\ninput R: f32[64,32]\noutput S: f32[4]\noutput W: f32[64,32]\noutput Z: f32[64,32]\n"
      "L^{4}_{a=0}[S^{f32,g}_{a}=R^{f32,g}_{1,a}+1;];"
      "L^{64}_{x=0}L^{32}_{y=0}[W^{f32,g}_{x,y}=Q^{f32,g}_{x,y}*2;];"
      "L^{64}_{x=0}L^{32}_{y=0}[Z^{f32,g}_{x,y}=R^{f32,g}_{x,y}*2;];",
      "elsewhere.leir");
}

// Time as a function of the program: each top-level item costs 1 ms, 0.25 ms when it holds a
// vectorized loop. Records the name of the reference program of every comparison it times.
class VectorRunner : public testing::FunctionRunner {
 public:
  std::string identity() const override { return "fake:vector-items"; }
  void timed(const leir::Program& reference) override { timed_names.push_back(reference.name); }
  static bool vectorized(const std::vector<leir::Item>& body) {
    for (const auto& it : body)
      if (it.is_nest()) {
        for (const auto& l : it.nest.loops)
          if (l.kind == leir::LoopKind::Vectorized) return true;
        if (vectorized(it.nest.body)) return true;
      }
    return false;
  }
  double time(const leir::Program& p) const override {
    double t = 0;
    for (const auto& it : p.body) t += vectorized({it}) ? 0.25 : 1.0;
    return t;
  }
  std::vector<std::string> timed_names;
};

TEST(Tasks, TwoIdenticalNestsAreOneTaskWithTwoUses) {
  const leir::Program p = two_same_nests();
  const auto tasks = extract_tasks(p);
  ASSERT_EQ(tasks.size(), 1u);  // the light nest (4 instances of 4100) is no task
  ASSERT_EQ(tasks[0].uses.size(), 2u);
  EXPECT_EQ(tasks[0].uses[0].first, 0);
  EXPECT_EQ(tasks[0].uses[1].first, 2);
  EXPECT_EQ(tasks[0].work, 64 * 32);
  // Canonical names: the written tensor first (A), then what it reads (C); loops a, c.
  EXPECT_EQ(leir::program_to_text(tasks[0].program, false).find("X"), std::string::npos);
  ASSERT_EQ(tasks[0].program.known.size(), 2u);
  EXPECT_EQ(tasks[0].program.known[0].name, "A");
  EXPECT_EQ(tasks[0].program.known[0].role, leir::Role::Output);
  EXPECT_EQ(tasks[0].program.known[1].name, "C");
  EXPECT_EQ(tasks[0].program.known[1].role, leir::Role::Input);
  EXPECT_EQ(tasks[0].hash, leir::program_hash(tasks[0].program));

  // Names and positions do not enter the hash; shapes do.
  const auto moved = extract_tasks(same_nests_elsewhere());
  ASSERT_EQ(moved.size(), 1u);
  EXPECT_EQ(moved[0].hash, tasks[0].hash);
  EXPECT_EQ(moved[0].uses[0].first, 1);
  const auto wider = group_program(
      leir::program_from_text("input A: f32[64,48]\noutput C: f32[64,48]\n"
                              "L^{64}_{a=0}L^{48}_{c=0}[C^{f32,g}_{a,c}=A^{f32,g}_{a,c}*2;];",
                              "wider.leir"),
      0, 1);
  ASSERT_TRUE(wider);
  EXPECT_NE(leir::program_hash(*wider), tasks[0].hash);
}

// The nest that zeroes an accumulator goes with the nest that accumulates into it; an
// intermediate read by a later group becomes an output of the task that writes it.
TEST(Tasks, GroupsKeepAnAccumulatorWithItsInitialisation) {
  const leir::Program p = leir::program_from_text(
      "input A: f32[16,8]\ninput W: f32[8,16]\noutput C: f32[16,16]\n"
      "L^{16}_{a=0}L^{16}_{c=0}[T^{f32,g}_{a,c}=0;];"
      "L^{16}_{a=0}L^{16}_{c=0}L^{8}_{d=0}[T^{f32,g}_{a,c}=T^{f32,g}_{a,c}+A^{f32,g}_{a,d}*W^{f32,g}_{d,c};];"
      "L^{16}_{a=0}L^{16}_{c=0}[C^{f32,g}_{a,c}=max(T^{f32,g}_{a,c},0);];",
      "gemm_relu.leir");
  const auto groups = item_groups(p);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].first, 0);
  EXPECT_EQ(groups[0].count, 2);
  EXPECT_EQ(groups[1].first, 2);
  const auto g = group_program(p, 0, 2);
  ASSERT_TRUE(g);
  ASSERT_EQ(g->known.size(), 3u);  // T (read by the relu), A, W
  EXPECT_EQ(g->known[0].role, leir::Role::Output);
  EXPECT_EQ(g->known[0].shape, (std::vector<int64_t>{16, 16}));
  EXPECT_EQ(g->known[1].role, leir::Role::Input);
  const auto relu = group_program(p, 2, 1);
  ASSERT_TRUE(relu);
  ASSERT_EQ(relu->known.size(), 2u);  // C, then T as an input
  EXPECT_EQ(relu->known[1].role, leir::Role::Input);
  EXPECT_EQ(relu->known[1].shape, (std::vector<int64_t>{16, 16}));
}

// A depthwise convolution of a zero-padded copy (the workloads' form), then a relu of its output.
leir::Program padded_depthwise_relu() {
  return leir::program_from_text(
      "input A: f32[2,4,16,16]\nparam D: f32[4,1,3,3]\noutput R: f32[2,4,16,16]\n"
      "B^{2}_{tx=0}L^{4}_{a=0}L^{18}_{c=0}L^{18}_{d=0}[E^{f32,g}_{tx,a,c,d}=if_then_else(1<=c<17&1<=d<17,"
      "A^{f32,g}_{tx,a,c-1,d-1},0);];"
      "B^{2}_{tx=0}L^{4}_{a=0}L^{16}_{c=0}L^{16}_{d=0}L^{1}_{f=0}L^{3}_{g=0}L^{3}_{h=0}[C^{f32,g}_{tx,a,c,d}="
      "C^{f32,g}_{tx,a,c,d}+E^{f32,g}_{tx,a,c+g,d+h}*D^{f32,g}_{a,f,g,h};];"
      "B^{2}_{tx=0}L^{4}_{a=0}L^{16}_{c=0}L^{16}_{d=0}[R^{f32,g}_{tx,a,c,d}=max(C^{f32,g}_{tx,a,c,d},0);];",
      "depthwise_relu.leir");
}

// The padded copy goes with the convolution that reads it (so that inlining it is a step of one
// task); the relu stays a group of its own, and so does a plain copy.
TEST(Tasks, APaddedCopyGoesWithTheConvolutionThatReadsIt) {
  const auto groups = item_groups(padded_depthwise_relu());
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].first, 0);
  EXPECT_EQ(groups[0].count, 2);
  EXPECT_EQ(groups[1].first, 2);
  EXPECT_EQ(groups[1].count, 1);
  const auto g = group_program(padded_depthwise_relu(), 0, 2);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->known.size(), 3u);  // the convolution's output, A, D: the padded copy stays inside
  const leir::Program plain = leir::program_from_text(
      "input A: f32[16,16]\noutput C: f32[16,16]\n"
      "L^{16}_{a=0}L^{16}_{c=0}[T^{f32,g}_{a,c}=A^{f32,g}_{c,a};];"
      "L^{16}_{a=0}L^{16}_{c=0}[C^{f32,g}_{a,c}=T^{f32,g}_{a,c}*2;];",
      "transpose_scale.leir");
  EXPECT_EQ(item_groups(plain).size(), 2u);
}

// Tuned as tasks, the padded depthwise convolution is one task whose rule chains inline the copy:
// the inlined candidate is generated, verified and timed.
TEST(Tasks, TheInlinedPadIsACandidateOfTheConvolutionsTask) {
  const leir::Program p = padded_depthwise_relu();
  const auto tasks = extract_tasks(p);
  ASSERT_EQ(tasks.size(), 2u);  // the padded convolution, the relu (1/11 of the work)
  EXPECT_EQ(tasks[0].uses[0].count, 2);
  const fs::path dir = task_tmp("padded");
  TuneOptions o;
  o.trials = 48;  // the inlining chains come after the others, in the task's second round
  o.seed = 5;
  o.store_path = (dir / "m.sqlite").string();
  VectorRunner runner;
  o.runner = &runner;
  const TuneResult r = tune_program(p, o);
  int inlined = 0;
  for (const auto& t : r.history)
    if (!t.trace.empty() && t.trace.front().strategy == "compute_inline" && t.verified && t.ok) ++inlined;
  EXPECT_GE(inlined, 1) << result_json(r).dump(1);
  EXPECT_TRUE(verify::verify(p, r.best, verify::VerifyOptions{.trials = 2, .seed = 1}).equivalent);
}

// mul_add (E = A*C; F = E + D) after an unrelated nest G = X*2: E is read only by the next nest
// and operator_fusion (same headers) and compute_inline (an elementwise producer) both apply, so
// the pair is one fusion group, one task whose search can fuse it; without fusion groups it was two
// tasks and no step spanning both nests was ever proposed.
leir::Program mul_add_after_scale() {
  return leir::program_from_text(
      "input X: f32[64,32]\ninput A: f32[64,32]\ninput C: f32[64,32]\ninput D: f32[64,32]\n"
      "output G: f32[64,32]\noutput F: f32[64,32]\n"
      "L^{64}_{a=0}L^{32}_{c=0}[G^{f32,g}_{a,c}=X^{f32,g}_{a,c}*2;];"
      "L^{64}_{a=0}L^{32}_{c=0}[E^{f32,g}_{a,c}=A^{f32,g}_{a,c}*C^{f32,g}_{a,c};];"
      "L^{64}_{a=0}L^{32}_{c=0}[F^{f32,g}_{a,c}=E^{f32,g}_{a,c}+D^{f32,g}_{a,c};];",
      "mul_add_after_scale.leir");
}

TEST(Tasks, AProducerAndItsOnlyConsumerAreOneFusionGroup) {
  const leir::Program p = mul_add_after_scale();
  ASSERT_EQ(item_groups(p).size(), 3u);  // no two nests write the same tensor
  const auto groups = fusion_groups(p);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].first, 0);
  EXPECT_EQ(groups[0].count, 1);  // G is read by nobody: it joins nothing
  EXPECT_EQ(groups[1].first, 1);
  EXPECT_EQ(groups[1].count, 2);
  const auto tasks = extract_tasks(p);
  ASSERT_EQ(tasks.size(), 2u);
  EXPECT_EQ(tasks[1].program.body.size(), 2u);
  EXPECT_EQ(tasks[1].uses.size(), 1u);
  EXPECT_EQ(tasks[1].uses[0].first, 1);

  // A consumer that is not next (a nest between reads E too) keeps the producer alone.
  const leir::Program split = leir::program_from_text(
      "input A: f32[64,32]\ninput C: f32[64,32]\ninput D: f32[64,32]\n"
      "output G: f32[64,32]\noutput F: f32[64,32]\n"
      "L^{64}_{a=0}L^{32}_{c=0}[E^{f32,g}_{a,c}=A^{f32,g}_{a,c}*C^{f32,g}_{a,c};];"
      "L^{64}_{a=0}L^{32}_{c=0}[G^{f32,g}_{a,c}=E^{f32,g}_{a,c}*2;];"
      "L^{64}_{a=0}L^{32}_{c=0}[F^{f32,g}_{a,c}=E^{f32,g}_{a,c}+D^{f32,g}_{a,c};];",
      "shared_producer.leir");
  EXPECT_EQ(fusion_groups(split).size(), 3u);
}

// The fusion group's operator_fusion step (path: the task's items 0 and 1) composes at the use
// (items 1 and 2 of the program), replays from the root and verifies.
TEST(Tasks, AFusionStepComposesAtItsUseAndVerifies) {
  const leir::Program p = mul_add_after_scale();
  const auto tasks = extract_tasks(p);
  ASSERT_EQ(tasks.size(), 2u);
  const strategies::Strategy& fusion = *strategies::find_strategy("operator_fusion");
  const strategies::ScheduleState st(tasks[1].program);
  const auto& sites = fusion.sites(st);
  ASSERT_EQ(sites.size(), 1u);
  const strategies::Trace step = {strategies::TraceStep{"operator_fusion", strategies::address_of(sites, 0),
                                                        sites[0].description, fusion.param_space(st, sites[0]).at(0)}};
  const Composition c = compose(p, tasks, {{}, {step}});
  EXPECT_TRUE(c.skipped.empty()) << c.skipped.at(0);
  ASSERT_EQ(c.trace.size(), 1u);
  EXPECT_EQ(c.trace[0].site.path, (std::vector<int>{1, 2}));
  EXPECT_EQ(c.program.body.size(), 2u);
  EXPECT_EQ(leir::program_to_text(strategies::replay(p, c.trace), false), leir::program_to_text(c.program, false));
  const auto rep = verify::verify(p, c.program, verify::VerifyOptions{.trials = 2, .seed = 7});
  EXPECT_TRUE(rep.equivalent) << rep.error;
}

// Tuned with tasks, the fusion group's search proposes the join and keeps it (each top-level item
// costs the fake runner 1 ms, so the fused pair is faster); the composed program verifies and its
// trace replays from the root.
TEST(Tasks, TheTunerKeepsTheFusedProducerAndConsumer) {
  const fs::path dir = task_tmp("fusion");
  const leir::Program p = mul_add_after_scale();
  TuneOptions o;
  o.trials = 16;
  o.seed = 5;
  o.store_path = (dir / "m.sqlite").string();
  VectorRunner runner;
  o.runner = &runner;
  const TuneResult r = tune_program(p, o);
  ASSERT_FALSE(r.tasks.is_null());
  ASSERT_EQ(r.tasks["list"].size(), 2u);
  EXPECT_EQ(r.tasks["list"][1]["nests"], nlohmann::json::parse("[[1,2]]"));
  EXPECT_LE(r.best.body.size(), 2u) << leir::program_to_text(r.best, false);  // E's nest joined F's
  bool joined = false;
  for (const auto& s : r.best_trace) joined |= s.strategy == "operator_fusion" || s.strategy == "compute_inline";
  EXPECT_TRUE(joined);
  EXPECT_TRUE(verify::verify(p, r.best, verify::VerifyOptions{.trials = 2, .seed = 1}).equivalent);
  EXPECT_EQ(leir::program_to_text(strategies::replay(p, r.best_trace), false), leir::program_to_text(r.best, false));
}

// A step found on the task, re-addressed to each use, replays on the program; the composed trace
// replays from the root to the composed program's bytes, which verify against the root.
TEST(Tasks, CompositionReplaysOnEveryUseAndVerifies) {
  const leir::Program p = two_same_nests();
  const auto tasks = extract_tasks(p);
  ASSERT_EQ(tasks.size(), 1u);
  // Vectorize the task's inner loop (its only vectorization site).
  const strategies::Strategy& vec = *strategies::find_strategy("loop_vectorization");
  const strategies::ScheduleState st(tasks[0].program);
  const auto& sites = vec.sites(st);
  ASSERT_EQ(sites.size(), 1u);
  const strategies::Trace step = {strategies::TraceStep{"loop_vectorization", strategies::address_of(sites, 0),
                                                        sites[0].description, vec.param_space(st, sites[0]).at(0)}};
  const leir::Program task_best = strategies::replay(tasks[0].program, step);
  ASSERT_TRUE(VectorRunner::vectorized(task_best.body));
  const Composition c = compose(p, tasks, {{step}});
  EXPECT_TRUE(c.skipped.empty());
  ASSERT_EQ(c.trace.size(), 2u);
  EXPECT_EQ(c.trace[0].site.path[0], 2);  // the last use first: the first keeps its position
  EXPECT_EQ(c.trace[1].site.path[0], 0);
  EXPECT_TRUE(VectorRunner::vectorized({c.program.body[0]}));
  EXPECT_FALSE(VectorRunner::vectorized({c.program.body[1]}));
  EXPECT_TRUE(VectorRunner::vectorized({c.program.body[2]}));
  EXPECT_EQ(leir::program_to_text(strategies::replay(p, c.trace), false), leir::program_to_text(c.program, false));
  const auto rep = verify::verify(p, c.program, verify::VerifyOptions{.trials = 2, .seed = 7});
  EXPECT_TRUE(rep.equivalent) << rep.error;
  // A whole-program step has no meaning at one use: that use keeps its items.
  strategies::Trace whole = step;
  whole[0].site.path.clear();
  const Composition none = compose(p, tasks, {{whole}});
  EXPECT_EQ(none.skipped.size(), 2u);
  EXPECT_EQ(leir::program_to_text(none.program, false), leir::program_to_text(p, false));
  // The next candidate that replays takes its place.
  const Composition second = compose(p, tasks, {{whole, step}});
  EXPECT_TRUE(second.skipped.empty());
  EXPECT_EQ(leir::program_to_text(second.program, false), leir::program_to_text(c.program, false));
}

// A step addressed to the whole task program (a param's layout: its site is the tensor's position
// in the signature, 2 in the task, 1 in the program) is found in the program by its effect.
TEST(Tasks, AWholeProgramStepComposesAtTheSiteWithTheSameEffect) {
  const leir::Program p = leir::program_from_text(
      "input X: f32[4]\nparam W: f32[32,64]\ninput A: f32[16,32]\noutput E: f32[4]\noutput C: f32[16,64]\n"
      "L^{4}_{a=0}[E^{f32,g}_{a}=X^{f32,g}_{a}+1;];"
      "L^{16}_{a=0}L^{64}_{c=0}L^{32}_{d=0}[C^{f32,g}_{a,c}=C^{f32,g}_{a,c}+A^{f32,g}_{a,d}*W^{f32,g}_{d,c};];",
      "gemm_param.leir");
  const auto tasks = extract_tasks(p);
  ASSERT_EQ(tasks.size(), 1u);
  ASSERT_EQ(tasks[0].uses[0].first, 1);
  const strategies::Strategy& layout = *strategies::find_strategy("layout_transformation");
  const strategies::ScheduleState st(tasks[0].program);
  const auto& sites = layout.sites(st);
  ASSERT_EQ(sites.size(), 2u);  // the task's input A (the program's A) and D (W)
  const strategies::TraceStep step{"layout_transformation", strategies::address_of(sites, 1), sites[1].description,
                                   layout.param_space(st, sites[1]).at(0)};
  ASSERT_EQ(step.site.detail, (std::vector<int>{2}));
  const Composition c = compose(p, tasks, {{{step}}});
  ASSERT_TRUE(c.skipped.empty()) << c.skipped[0];
  ASSERT_EQ(c.trace.size(), 1u);
  EXPECT_TRUE(c.trace[0].site.path.empty());
  EXPECT_EQ(c.trace[0].site.detail, (std::vector<int>{1}));  // W
  EXPECT_EQ(c.program.body.size(), 3u);                        // the copy of W before its reader
  EXPECT_TRUE(verify::verify(p, c.program, verify::VerifyOptions{.trials = 2, .seed = 3}).equivalent);
}

// Synthetic curves: task 0 improves by 20 % a round for ever, task 1 once by 10 % and then never.
// Expected allocation with ε = 0 (gain = weight × share × slope, window 3, both weights 1):
// warm-up 0, 1; then task 0 while its gain is the larger; task 1 at decision 5 (task 0's slope
// 0.163 × share 5.12/14.12 = 0.059 < task 1's 0.1 × 9/14.12 = 0.064) and again at decision 9
// (0.163 × 2.62/11.62 = 0.037 < 0.05 × 9/11.62 = 0.039).
std::vector<int> allocate(TaskScheduler& s, int decisions) {
  std::vector<int> picks;
  std::vector<double> best = {10, 10};
  for (int d = 0; d < decisions; ++d) {
    const int k = s.next();
    picks.push_back(k);
    if (k == 0) best[0] *= 0.8;
    else if (s.rounds()[1] == 0) best[1] = 9;
    s.report(k, 10, best[size_t(k)], (s.rounds()[size_t(k)] + 1) * 8);
  }
  return picks;
}

TEST(TaskScheduler, GivesTheImprovingTaskMoreRounds) {
  TaskScheduler s({1, 1}, 11, SchedulerOptions{.epsilon = 0});
  const auto picks = allocate(s, 9);
  EXPECT_EQ(picks, (std::vector<int>{0, 1, 0, 0, 1, 0, 0, 0, 1}));
  TaskScheduler longer({1, 1}, 11, SchedulerOptions{.epsilon = 0});
  allocate(longer, 24);
  EXPECT_GT(longer.trials()[0], longer.trials()[1]);
  EXPECT_GT(longer.trials()[1], 8);  // the slope floor keeps the stalled task from starving
  // A task used twice weighs twice: its flat curve still wins the round after the warm-up.
  TaskScheduler weighted({1, 3}, 11, SchedulerOptions{.epsilon = 0});
  EXPECT_EQ(allocate(weighted, 3), (std::vector<int>{0, 1, 1}));
}

TEST(TaskScheduler, EpsilonPicksAreAFunctionOfTheSeed) {
  auto run = [](uint64_t seed) {
    TaskScheduler s({1, 1, 1}, seed, SchedulerOptions{.epsilon = 0.5});
    return allocate(s, 40);
  };
  EXPECT_EQ(run(5), run(5));
  EXPECT_NE(run(5), run(6));
  TaskScheduler s({1, 1}, 5);
  s.exhaust(0);
  s.exhaust(1);
  EXPECT_EQ(s.next(), -1);
}

// Tuning as tasks: the task of both nests is tuned once (its candidates timed once, not once per
// use), composed onto both uses and verified; the same nests in another program, renamed and
// moved, are served from the store: no comparison of the task is timed again.
TEST(Tasks, ARecurringTaskIsServedFromTheStore) {
  const fs::path dir = task_tmp("recurring");
  const leir::Program p = two_same_nests();
  TuneOptions o;
  o.trials = 8;
  o.seed = 3;
  o.store_path = (dir / "m.sqlite").string();
  VectorRunner first;
  o.runner = &first;
  const TuneResult r = tune_program(p, o);
  ASSERT_FALSE(r.tasks.is_null());
  ASSERT_EQ(r.tasks["list"].size(), 1u);
  EXPECT_EQ(r.tasks["list"][0]["nests"], nlohmann::json::parse("[[0],[2]]"));
  EXPECT_EQ(r.tasks["list"][0]["trials"], r.trials);
  EXPECT_NEAR(r.speedup, 3.0 / 1.5, 1e-9) << result_json(r).dump(1);  // both heavy items vectorized
  EXPECT_TRUE(verify::verify(p, r.best, verify::VerifyOptions{.trials = 2, .seed = 1}).equivalent);
  EXPECT_EQ(leir::program_to_text(strategies::replay(p, r.best_trace), false), leir::program_to_text(r.best, false));
  int task_timings = 0;
  for (const auto& name : first.timed_names) task_timings += name.rfind("task_", 0) == 0;
  EXPECT_EQ(task_timings, r.measured_now - 1);  // all but the composed program's confirmation
  EXPECT_LE(task_timings, r.trials + 3);           // each candidate once (+ the confirmations)

  VectorRunner second;
  o.runner = &second;
  const TuneResult moved = tune_program(same_nests_elsewhere(), o);
  ASSERT_EQ(moved.tasks["list"].size(), 1u);
  EXPECT_EQ(moved.tasks["list"][0]["hash"], r.tasks["list"][0]["hash"]);
  for (const auto& name : second.timed_names) EXPECT_EQ(name.rfind("task_", 0), std::string::npos) << name;
  EXPECT_EQ(second.timed_names.size(), 1u);  // the composed program against this root only
  EXPECT_NEAR(moved.speedup, 2.0, 1e-9);

  // Without tasks the same program is one root again.
  const TuneResult whole = tune_program(p, o, TaskOptions{.enabled = false});
  EXPECT_TRUE(whole.tasks.is_null());
  EXPECT_FALSE(result_json(whole).contains("tasks"));
}

}  // namespace
}  // namespace steptp::tune
