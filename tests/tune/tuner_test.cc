// The tuner (search/tune/tuner.h) with a deterministic fake runner: traces replay to the best program's
// bytes, the best program verifies against its root, a rerun on the same store is identical,
// and the search reaches a two-step improvement whose first step alone is not faster.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ir/analysis/affine.h"
#include "lower/cpu/codegen.h"
#include "ir/leir/program_io.h"
#include "tune/fake_runner.h"
#include "search/tune/cost_model.h"
#include "search/tune/schedule_rules.h"
#include "search/tune/search_strategy.h"
#include "search/tune/task.h"
#include "search/tune/tuner.h"
#include "ir/verify/verifier.h"
#include "front/workloads/workload.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace steptp::tune {
namespace {

using testing::FakeRunner;

fs::path tmp(const std::string& name) {
  fs::path p = fs::temp_directory_path() / ("steptp_tune_test_" + std::to_string(getpid())) / name;
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

leir::Program root_program() {
  return leir::program_from_text(
      "input A: f64[8,64]\noutput C: f64[8,64]\n"
      "B^{8}_{tx=0}L^{64}_{a=0}[C^{f64,g}_{tx,a}=A^{f64,g}_{tx,a}*3+1;];",
      "scale.leir");
}

TuneOptions options(const fs::path& dir, Runner* runner, int trials = 40) {
  TuneOptions o;
  o.trials = trials;
  o.seed = 3;
  o.store_path = (dir / "m.sqlite").string();
  o.runner = runner;
  return o;
}

TEST(Tuner, FindsATwoStepImprovementWhoseFirstStepIsNotFaster) {
  leir::Program root = root_program();
  FakeRunner fake(root);
  auto r = tune(root, options(tmp("two_step"), &fake));
  EXPECT_NEAR(r.speedup, 4.0, 1e-9) << result_json(r).dump(1);
  ASSERT_GE(r.best_trace.size(), 2u);
  ASSERT_EQ(r.trajectory.size(), r.best_trace.size());
  // The first step on its own: measured against its parent (the root), not faster.
  EXPECT_TRUE(r.trajectory.front().measured);
  EXPECT_FALSE(r.trajectory.front().faster);
  EXPECT_TRUE(r.trajectory.back().faster);
  EXPECT_EQ(r.trials, 40);
  EXPECT_FALSE(r.roofline);  // the fake runner times nothing to set against a copy
}

// Round 0 measures the rule chains' programs first: every outermost independent loop parallel,
// every innermost loop vectorized, and both — as ordinary replayable traces.
TEST(EvolutionarySearch, RoundZeroStartsWithTheRuleChains) {
  leir::Program root = leir::program_from_text(
      "input A: f32[64,32]\ninput X: f32[64,32]\noutput C: f32[64,32]\noutput D: f32[64,32]\n"
      "L^{64}_{a=0}L^{32}_{c=0}[C^{f32,g}_{a,c}=A^{f32,g}_{a,c}*2;];"
      "L^{64}_{a=0}L^{32}_{c=0}[D^{f32,g}_{a,c}=X^{f32,g}_{a,c}+1;];",
      "two.leir");
  EvolutionarySearch search(root, this_machine(1), EvolutionaryOptions{.seed = 5});
  CostModel prior;
  auto chosen = search.next_round(prior, 8);
  ASSERT_GE(chosen.size(), 3u);
  auto kinds = [](const leir::Program& p) {
    std::string k;
    for (const auto& it : p.body)
      for (const auto& l : it.nest.loops) k += leir::to_char(l.kind);
    return k;
  };
  const auto& nodes = search.nodes();
  std::vector<std::string> first;
  for (size_t i = 0; i < 3; ++i) {
    const auto& n = nodes[size_t(chosen[i])];
    EXPECT_EQ(leir::program_to_text(strategies::replay(root, n.trace), false), n.text);
    first.push_back(kinds(n.program));
  }
  EXPECT_EQ(first, (std::vector<std::string>{"PLPL", "LVLV", "PVPV"}));
}

// `explore_untried` of the explored picks of a round are candidates of distinct strategies that
// nothing chosen before them tried, the strategies with the fewest candidates first (uniform
// picks over candidates would mostly take loop steps, which have the most sites and parameters).
TEST(EvolutionarySearch, ExplorationTriesStrategiesNotTriedYet) {
  leir::Program root = leir::program_from_text(
      "input A: f32[64,32]\noutput C: f32[64,32]\noutput D: f32[64]\n"
      "L^{64}_{a=0}L^{32}_{c=0}[C^{f32,g}_{a,c}=exp(A^{f32,g}_{a,c})*exp(A^{f32,g}_{a,c}*2)+A^{f32,g}_{a,c}*3;];"
      "L^{64}_{a=0}[D^{f32,g}_{a}=0;L^{32}_{c=0}[D^{f32,g}_{a}=D^{f32,g}_{a}+C^{f32,g}_{a,c};];];",
      "explore.leir");
  CostModel prior;
  for (uint64_t seed : {1, 2, 3, 4, 5}) {
    EvolutionarySearch search(root, this_machine(1), EvolutionaryOptions{.seed = seed, .per_round = 12, .explore = 6, .explore_untried = 3});
    auto chosen = search.next_round(prior, 12);
    ASSERT_EQ(chosen.size(), 12u) << seed;
    const auto& nodes = search.nodes();
    std::set<std::string> before;
    for (size_t i = 0; i < 6; ++i) before.insert(nodes[size_t(chosen[i])].trace.back().strategy);
    std::set<std::string> explored;
    for (size_t i = 6; i < 9; ++i) {
      const std::string s = nodes[size_t(chosen[i])].trace.back().strategy;
      EXPECT_FALSE(before.count(s)) << "seed " << seed << ": " << s << " was tried already";
      EXPECT_TRUE(explored.insert(s).second) << "seed " << seed << ": " << s << " explored twice";
    }
    // Rarest first: no untried strategy left out has fewer candidates than an explored one (the
    // candidates the exploration chose from: every node not chosen before it).
    const std::set<int> first(chosen.begin(), chosen.begin() + 6);
    std::map<std::string, int> candidates;
    for (int i = 0; i < int(nodes.size()); ++i) {
      const auto& n = nodes[size_t(i)];
      const bool offered = n.state == Node::State::Open || (n.state == Node::State::Selected && !first.count(i));
      if (offered && !n.trace.empty()) candidates[n.trace.back().strategy]++;
    }
    int most_explored = 0;
    for (const auto& s : explored) most_explored = std::max(most_explored, candidates[s]);
    for (const auto& [s, n] : candidates)
      if (!before.count(s) && !explored.count(s)) EXPECT_GE(n, most_explored) << "seed " << seed << ": " << s;
  }
}

// The rule chains of `root` on a machine with these vector registers (whatever this CPU has: the
// chains are a pure function of the machine), and the trace of one chain.
std::vector<RuleChain> chains_on(const leir::Program& root, int vector_bytes, int registers) {
  Machine m = this_machine(1);
  m.vector_bytes = vector_bytes;
  m.vector_registers = registers;
  m.datapath_bytes = 32;
  return schedule_rule_chains(root, m, 16);
}
std::vector<RuleChain> chains_on_avx512(const leir::Program& root) { return chains_on(root, 64, 32); }
std::vector<RuleChain> chains_on_avx2(const leir::Program& root) { return chains_on(root, 32, 16); }
strategies::Trace trace_of(const RuleChain& chain) {
  strategies::Trace t;
  for (const auto& rs : chain) t.push_back(rs.step);
  return t;
}

// D = A @ C (m x k @ k x n) accumulated, then a heavy elementwise epilogue E = tanh(D) * D; the
// outer loop of both nests is `outer` ("L" serial, "B" bound).
leir::Program gemm_with_epilogue(int m, int k, int n, const std::string& outer) {
  return leir::program_from_text(
      fmt::format("input A: f32[{0},{1}]\ninput C: f32[{1},{2}]\noutput E: f32[{0},{2}]\n"
                  "{3}^{{{0}}}_{{tx=0}}L^{{{2}}}_{{a=0}}L^{{{1}}}_{{c=0}}"
                  "[D^{{f32,g}}_{{tx,a}}=D^{{f32,g}}_{{tx,a}}+A^{{f32,g}}_{{tx,c}}*C^{{f32,g}}_{{c,a}};];"
                  "{3}^{{{0}}}_{{tx=0}}L^{{{2}}}_{{a=0}}[E^{{f32,g}}_{{tx,a}}=tanh(D^{{f32,g}}_{{tx,a}})*D^{{f32,g}}_{{tx,a}};];",
                  m, k, n, outer),
      "gemm_epilogue.leir");
}

// A chain's steps replay from the root to its last program, which the verifier accepts.
void expect_replays_and_verifies(const leir::Program& root, const RuleChain& chain, uint64_t seed) {
  const leir::Program& p = chain.back().program;
  EXPECT_EQ(leir::program_to_text(strategies::replay(root, trace_of(chain)), false), leir::program_to_text(p, false));
  auto rep = verify::verify(root, p, verify::VerifyOptions{.trials = 2, .seed = seed});
  EXPECT_TRUE(rep.equivalent) << rep.error;
}

TEST(ScheduleRules, RegisterTilingChainOfAGemmReplaysVerifiesAndKeepsTheBlockInRegisters) {
  leir::Program root = leir::program_from_text(
      "input A: f32[64,48]\ninput C: f32[48,64]\noutput D: f32[64,64]\n"
      "B^{64}_{tx=0}L^{64}_{a=0}L^{48}_{c=0}[D^{f32,g}_{tx,a}=D^{f32,g}_{tx,a}+A^{f32,g}_{tx,c}*C^{f32,g}_{c,a};];",
      "gemm.leir");
  auto chains = chains_on_avx512(root);
  // parallel, vector, parallel + vector, the three register tilings, the vectorized accumulation.
  ASSERT_EQ(chains.size(), 7u);
  std::vector<std::string> kinds;
  for (size_t k = 3; k < 6; ++k) {
    const auto& chain = chains[k];
    const strategies::Trace trace = trace_of(chain);
    const leir::Program& tiled = chain.back().program;
    EXPECT_EQ(leir::program_to_text(strategies::replay(root, trace), false), leir::program_to_text(tiled, false));
    auto rep = verify::verify(root, tiled, verify::VerifyOptions{.trials = 3, .seed = 3});
    EXPECT_TRUE(rep.equivalent) << rep.error;
    EXPECT_NE(backend::cpu::generate_cpu_kernel(tiled, {}).code.find("register block"), std::string::npos);
    std::string k_;
    for (const auto& l : tiled.body[0].nest.loops) k_ += fmt::format("{}{} ", leir::to_char(l.kind), l.extent);
    kinds.push_back(k_);
  }
  // rows x columns blocks over the whole reduction: 8 x 32 (two vectors), 8 x 16 and 4 x 16 (one).
  EXPECT_EQ(kinds, (std::vector<std::string>{"B8 L2 L48 U8 V32 ", "B8 L4 L48 U8 V16 ", "B16 L4 L48 U4 V16 "}));
}

TEST(ScheduleRules, EveryRegisterTilingOfABatchedProductStartsItsBlocksFromTheIdentity) {
  // The panel's batched_matmul shape, smaller: each rule tiling keeps a block per batch over the
  // whole reduction, so the lowering starts every block from zero instead of zeroing D in a
  // serial pass before the parallel nest (on two threads that pass and the other core's reads
  // of its lines cost the panel's batched_matmul 6 %: docs/tune.md, "Limits").
  leir::Program root = leir::program_from_text(
      "input A: f32[4,32,24]\ninput C: f32[4,24,64]\noutput D: f32[4,32,64]\n"
      "B^{4}_{tx=0}L^{32}_{a=0}L^{64}_{c=0}L^{24}_{d=0}"
      "[D^{f32,g}_{tx,a,c}=D^{f32,g}_{tx,a,c}+A^{f32,g}_{tx,a,d}*C^{f32,g}_{tx,d,c};];",
      "bmm.leir");
  auto chains = chains_on_avx512(root);
  ASSERT_EQ(chains.size(), 7u);
  for (size_t k = 3; k < 6; ++k) {
    expect_replays_and_verifies(root, chains[k], 9);
    const std::string code = backend::cpu::generate_cpu_kernel(chains[k].back().program, {}).code;
    EXPECT_NE(code.find("// identity, starts the register block"), std::string::npos) << code;
    EXPECT_EQ(code.find("// accumulation identity"), std::string::npos) << code;
  }
}

TEST(ScheduleRules, OnAvx2TheBlocksAreEightLanesWideAndFitSixteenRegisters) {
  // The GEMM above on an AVX2 machine: 8-lane vectors, and no 8 x 2 block (it would take all 16
  // ymm registers for accumulators).
  leir::Program root = leir::program_from_text(
      "input A: f32[64,48]\ninput C: f32[48,64]\noutput D: f32[64,64]\n"
      "B^{64}_{tx=0}L^{64}_{a=0}L^{48}_{c=0}[D^{f32,g}_{tx,a}=D^{f32,g}_{tx,a}+A^{f32,g}_{tx,c}*C^{f32,g}_{c,a};];",
      "gemm.leir");
  auto chains = chains_on_avx2(root);
  // parallel, vector, parallel + vector, the two register tilings, the vectorized accumulation.
  ASSERT_EQ(chains.size(), 6u);
  std::vector<std::string> kinds;
  for (size_t k = 3; k < 5; ++k) {
    const leir::Program& tiled = chains[k].back().program;
    expect_replays_and_verifies(root, chains[k], 7);
    EXPECT_NE(backend::cpu::generate_cpu_kernel(tiled, {}).code.find("register block"), std::string::npos);
    std::string k_;
    for (const auto& l : tiled.body[0].nest.loops) k_ += fmt::format("{}{} ", leir::to_char(l.kind), l.extent);
    kinds.push_back(k_);
  }
  EXPECT_EQ(kinds, (std::vector<std::string>{"B8 L8 L48 U8 V8 ", "B16 L8 L48 U4 V8 "}));
}

TEST(ScheduleRules, TilingAndAnnotationsTogetherReachTheEpilogue) {
  // A GEMM and a heavy elementwise epilogue: the tiling chains block the GEMM only; one more chain
  // tiles it and annotates the epilogue too (parallel + vector), so the tuner measures the
  // program a compiler would build in one trial rather than reaching it step by step.
  const leir::Program root = gemm_with_epilogue(64, 48, 64, "L");
  auto chains = chains_on_avx512(root);
  ASSERT_EQ(chains.size(), 8u);
  const auto& both = chains[6];
  const leir::Program& p = both.back().program;
  expect_replays_and_verifies(root, both, 4);
  // The last nest (the epilogue) is parallel and vectorized; the 8 x 1 tiling chain leaves it as is.
  auto kinds = [](const leir::Program& q) {
    std::string k;
    for (const auto& l : q.body.back().nest.loops) k += leir::to_char(l.kind);
    return k;
  };
  EXPECT_EQ(kinds(chains[4].back().program), "LL");
  EXPECT_EQ(kinds(p), "PV");
  EXPECT_NE(backend::cpu::generate_cpu_kernel(p, {}).code.find("register block"), std::string::npos);
}

TEST(ScheduleRules, ConvolutionBlocksOutputChannelsByAWholeMaskedRowAndParallelizesABatchOfOne) {
  // A batch of one (B^{1}: one core), 62 output columns: not a whole number of 16-lane vectors.
  leir::Program root = leir::program_from_text(
      "input A: f32[1,3,64,64]\nparam W: f32[8,3,3,3]\noutput C: f32[1,8,62,62]\n"
      "B^{1}_{tx=0}L^{8}_{a=0}L^{62}_{c=0}L^{62}_{d=0}L^{3}_{f=0}L^{3}_{g=0}L^{3}_{h=0}"
      "[C^{f32,g}_{tx,a,c,d}=C^{f32,g}_{tx,a,c,d}+W^{f32,g}_{a,f,g,h}*A^{f32,g}_{tx,f,c+g,d+h};];",
      "conv.leir");
  auto chains = chains_on_avx512(root);
  // 8 rows x 4 vectors (62 columns, masked tail) exceed 16 accumulators: only the 4-row block
  // (then the vectorized accumulation).
  ASSERT_EQ(chains.size(), 5u);
  const strategies::Trace trace = trace_of(chains[3]);
  const leir::Program& tiled = chains[3].back().program;
  EXPECT_EQ(leir::program_to_text(strategies::replay(root, trace), false), leir::program_to_text(tiled, false));
  auto rep = verify::verify(root, tiled, verify::VerifyOptions{.trials = 2, .seed = 5});
  EXPECT_TRUE(rep.equivalent) << rep.error;
  std::string kinds;
  for (const auto& l : tiled.body[0].nest.loops) kinds += fmt::format("{}{} ", leir::to_char(l.kind), l.extent);
  // Output channels in blocks of 4 (the outer 2 parallel), the whole 62 columns vectorized, the
  // channel and window loops between.
  EXPECT_EQ(kinds, "B1 P2 L62 L3 L3 L3 U4 V62 ");
  const std::string code = backend::cpu::generate_cpu_kernel(tiled, {}).code;
  EXPECT_NE(code.find("b_C[248];  // register block"), std::string::npos);
}

TEST(ScheduleRules, APaddedInputIsInlinedIntoTheConvolutionThenTiled) {
  // A depthwise convolution of a zero-padded copy (the workloads' form): the last chains inline
  // the copy (compute_inline), alone and then before each tiling of the convolution, which then
  // reads A through the pad's condition; they replay and verify, and the tiled ones keep the
  // register block.
  const leir::Program root = leir::program_from_text(
      "input A: f32[2,4,16,16]\nparam D: f32[4,1,3,3]\noutput C: f32[2,4,16,16]\n"
      "B^{2}_{tx=0}L^{4}_{a=0}L^{18}_{c=0}L^{18}_{d=0}[E^{f32,g}_{tx,a,c,d}=if_then_else(1<=c<17&1<=d<17,"
      "A^{f32,g}_{tx,a,c-1,d-1},0);];"
      "B^{2}_{tx=0}L^{4}_{a=0}L^{16}_{c=0}L^{16}_{d=0}L^{1}_{f=0}L^{3}_{g=0}L^{3}_{h=0}[C^{f32,g}_{tx,a,c,d}="
      "C^{f32,g}_{tx,a,c,d}+E^{f32,g}_{tx,a,c+g,d+h}*D^{f32,g}_{a,f,g,h};];",
      "depthwise.leir");
  const auto plain = chains_on_avx512(root);
  std::vector<const RuleChain*> inlined;
  for (const auto& c : plain)
    if (c.front().step.strategy == "compute_inline") inlined.push_back(&c);
  // The inlining alone, then one per block shape (16 columns: one 16-lane vector, which the 8 x 2
  // block takes whole).
  ASSERT_EQ(inlined.size(), 4u);
  EXPECT_EQ(inlined.front(), &plain[plain.size() - 4]);  // after every other chain
  EXPECT_EQ(inlined.front()->size(), 1u);
  for (const RuleChain* c : inlined) {
    const leir::Program& p = c->back().program;
    ASSERT_EQ(p.body.size(), 1u);  // no copy left
    expect_replays_and_verifies(root, *c, 8);
    EXPECT_EQ(backend::cpu::generate_cpu_kernel(p, {}).code.find("register block") != std::string::npos,
              c != inlined.front());
  }
  // A program without a copy producer gets no such chain.
  for (const auto& c : chains_on_avx512(gemm_with_epilogue(64, 48, 64, "L")))
    EXPECT_NE(c.front().step.strategy, "compute_inline");
}

TEST(ScheduleRules, AMaxPoolsMinusInfPadIsAPaddedCopyGroupedWithThePoolAndInlined) {
  // max_pool_2d as the workloads emit it: a copy padded with -inf, which parses as the negated
  // literal -(inf), then a 3 x 3 stride-2 window max. The copy is a padded copy like a
  // convolution's zero pad: one task with the pool, and a chain inlines it (the pool then reads A
  // through the pad's condition), which replays and verifies.
  const leir::Program root = leir::program_from_text(
      "input A: f32[2,4,16,16]\noutput C: f32[2,4,8,8]\n"
      "B^{2}_{tx=0}L^{4}_{a=0}L^{18}_{c=0}L^{18}_{d=0}[D^{f32,g}_{tx,a,c,d}=if_then_else(1<=c<17&1<=d<17,"
      "A^{f32,g}_{tx,a,c-1,d-1},-inf);];"
      "B^{2}_{tx=0}L^{4}_{a=0}L^{8}_{c=0}L^{8}_{d=0}L^{3}_{f=0}L^{3}_{g=0}[C^{f32,g}_{tx,a,c,d}="
      "max(C^{f32,g}_{tx,a,c,d},D^{f32,g}_{tx,a,c*2+f,d*2+g});];",
      "max_pool.leir");
  EXPECT_EQ(copy_producer(root, 0), CopyProducer::Padded);
  const auto groups = item_groups(root);
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].count, 2);
  const auto chains = chains_on_avx512(root);
  const RuleChain* inlined = nullptr;
  for (const auto& c : chains)
    if (c.size() == 1 && c.front().step.strategy == "compute_inline") inlined = &c;
  ASSERT_NE(inlined, nullptr);
  ASSERT_EQ(inlined->back().program.body.size(), 1u);  // no copy left
  expect_replays_and_verifies(root, *inlined, 9);
}

TEST(ScheduleRules, AnAccumulationThatDoesNotDivideIntoBlocksIsVectorizedAlongItsOutputRow) {
  // A bench-style draw: 7 x 5 @ 5 x 13 (7 divides by neither 8 nor 4, 13 by no vector), then a
  // heavy elementwise epilogue. No register block fits; the accumulation chain moves the
  // reduction outside the output's unit-stride loop and vectorizes that loop (remainder kept),
  // then annotates the epilogue.
  const leir::Program root = gemm_with_epilogue(7, 5, 13, "B");
  auto chains = chains_on_avx512(root);
  ASSERT_EQ(chains.size(), 4u);  // parallel, vector, parallel + vector, the vectorized accumulation
  const auto& chain = chains.back();
  const leir::Program& p = chain.back().program;
  expect_replays_and_verifies(root, chain, 6);
  std::vector<std::string> strategies;
  for (const auto& rs : chain) strategies.push_back(rs.step.strategy);
  EXPECT_EQ(strategies, (std::vector<std::string>{"loop_reorder", "loop_vectorization", "loop_vectorization"}));
  auto loops = [](const leir::Nest& n) {
    std::string k;
    for (const auto& l : n.loops) k += fmt::format("{}{} ", leir::to_char(l.kind), l.extent);
    return k;
  };
  EXPECT_EQ(loops(p.body[0].nest), "B7 L5 V13 ");  // the reduction outside, the output row vectorized
  EXPECT_EQ(loops(p.body[1].nest), "B7 V13 ");
}

// The loops of top-level nest `item` as kind and extent ("P32 L16 L16 V16 ").
std::string loop_kinds(const leir::Program& p, size_t item) {
  std::string k;
  for (const auto& l : p.body[item].nest.loops) k += fmt::format("{}{} ", leir::to_char(l.kind), l.extent);
  return k;
}

TEST(ScheduleRules, ATransposedWeightsCopyIsParallelVectorizedAndTiledAVectorWide) {
  // x @ W^T (W a 64 x 96 param read as W[n, k]): each tiling chain transposes W into a copy
  // T[k, n] = W[n, k], made parallel over n, vectorized along k and tiled a vector wide both ways,
  // so each vector's scattered stores stay in an L1-sized tile of T (untiled: 3x slower on the
  // panel's Gemm_ReLU_Divide weight, docs/tune.md).
  const leir::Program root = leir::program_from_text(
      "input A: f32[32,96]\nparam W: f32[64,96]\noutput D: f32[32,64]\n"
      "B^{32}_{tx=0}L^{64}_{a=0}L^{96}_{c=0}[D^{f32,g}_{tx,a}=D^{f32,g}_{tx,a}+A^{f32,g}_{tx,c}*W^{f32,g}_{a,c};];",
      "gemm_wt.leir");
  for (const auto& [chains, lanes] : {std::pair{chains_on_avx512(root), 16}, std::pair{chains_on_avx2(root), 8}}) {
    int tiled_copies = 0;
    for (const auto& chain : chains) {
      if (chain.front().step.strategy != "layout_transformation") continue;
      ++tiled_copies;
      std::vector<std::string> first;
      for (size_t k = 0; k < 4; ++k) first.push_back(chain[k].step.strategy);
      EXPECT_EQ(first, (std::vector<std::string>{"layout_transformation", "loop_parallelization", "loop_vectorization",
                                                 "loop_tiling"}));
      const leir::Program& p = chain.back().program;
      expect_replays_and_verifies(root, chain, 12);
      // n tiles (parallel), k tiles, then inside a tile n and the vector along k.
      EXPECT_EQ(loop_kinds(p, 0), fmt::format("P{} L{} L{} V{} ", 64 / lanes, 96 / lanes, lanes, lanes));
      EXPECT_NE(backend::cpu::generate_cpu_kernel(p, {}).code.find("#pragma omp simd"), std::string::npos);
    }
    EXPECT_GE(tiled_copies, 2) << lanes << " lanes";  // the register tilings and the vectorized accumulation
  }
}

TEST(ScheduleRules, AProductOfATransposedCopyIsParallelOverTheColumnsTheCopysThreadsWrote) {
  // The copy T[k, n] = W[n, k] is parallel over n; a register-tiled product parallel over its rows
  // would have every thread read the half of T the other thread wrote (on every call), so it is
  // parallel over its column blocks instead, outside the row loop (docs/tune.md, "Transposed
  // weights"). Without a transposed copy (A @ W, W read by rows) the rows stay the parallel loop.
  const leir::Program root = leir::program_from_text(
      "input A: f32[32,96]\nparam W: f32[64,96]\noutput D: f32[32,64]\n"
      "B^{32}_{tx=0}L^{64}_{a=0}L^{96}_{c=0}[D^{f32,g}_{tx,a}=D^{f32,g}_{tx,a}+A^{f32,g}_{tx,c}*W^{f32,g}_{a,c};];",
      "gemm_wt.leir");
  const leir::Program plain = leir::program_from_text(
      "input A: f32[32,96]\nparam W: f32[96,64]\noutput D: f32[32,64]\n"
      "B^{32}_{tx=0}L^{64}_{a=0}L^{96}_{c=0}[D^{f32,g}_{tx,a}=D^{f32,g}_{tx,a}+A^{f32,g}_{tx,c}*W^{f32,g}_{c,a};];",
      "gemm_w.leir");
  auto register_tiled = [](const RuleChain& c) {
    return std::any_of(c.begin(), c.end(), [](const RuleStep& s) { return s.step.strategy == "loop_unrolling"; });
  };
  for (const auto& chains : {chains_on_avx512(root), chains_on_avx2(root)}) {
    int tiled = 0;
    for (const auto& chain : chains) {
      if (!register_tiled(chain)) continue;
      ++tiled;
      const leir::Program& p = chain.back().program;
      ASSERT_EQ(p.body.size(), 2u);
      const leir::Nest& product = p.body[1].nest;
      const leir::Stmt& s = product.body[0].stmt;
      ASSERT_EQ(product.loops[0].kind, leir::LoopKind::Parallel) << loop_kinds(p, 1);
      EXPECT_EQ(product.loops[1].kind, leir::LoopKind::Bound) << loop_kinds(p, 1);
      auto column = analysis::to_affine(s.lhs->args.back()), row = analysis::to_affine(s.lhs->args.front());
      ASSERT_TRUE(column && row);
      EXPECT_TRUE(column->uses(product.loops[0].var) && !row->uses(product.loops[0].var)) << loop_kinds(p, 1);
      expect_replays_and_verifies(root, chain, 13);
    }
    EXPECT_GE(tiled, 2);
  }
  for (const auto& chain : chains_on_avx512(plain)) {
    if (!register_tiled(chain)) continue;
    const leir::Nest& product = chain.back().program.body[0].nest;
    EXPECT_EQ(product.loops[0].kind, leir::LoopKind::Bound) << loop_kinds(chain.back().program, 0);
  }
}

TEST(Tuner, TraceReplaysToTheBestProgramAndItVerifies) {
  leir::Program root = root_program();
  FakeRunner fake(root);
  auto r = tune(root, options(tmp("replay"), &fake));
  ASSERT_FALSE(r.best_trace.empty());
  // Through JSON, as trajectory.json stores it.
  strategies::Trace back;
  for (const auto& s : trajectory_json(r)) back.push_back(strategies::step_from_json(s));
  leir::Program replayed = strategies::replay(root, back);
  EXPECT_EQ(leir::program_to_text(replayed, false), leir::program_to_text(r.best, false));
  EXPECT_EQ(leir::program_to_json(replayed).dump(), leir::program_to_json(r.best).dump());
  auto rep = verify::verify(root, r.best, verify::VerifyOptions{.trials = 4, .seed = 11});
  EXPECT_TRUE(rep.equivalent) << rep.error;
}

TEST(Tuner, SameSeedAndStoreGiveIdenticalResultsAndReuseEveryFact) {
  auto dir = tmp("rerun");
  leir::Program root = root_program();
  FakeRunner first(root), second(root);
  auto a = tune(root, options(dir, &first, 24));
  auto b = tune(root, options(dir, &second, 24));
  EXPECT_EQ(result_json(a).dump(), result_json(b).dump());
  EXPECT_GT(first.calls, 0);
  EXPECT_EQ(second.calls, 0);  // every comparison came from the store
  EXPECT_EQ(b.measured_now, 0);
  // A shorter run is a prefix of the store's facts; the longer one on its store equals a fresh one.
  auto dir2 = tmp("rerun_prefix");
  FakeRunner third(root), fourth(root);
  tune(root, options(dir2, &third, 8));  // "killed" after 8 trials
  auto resumed = tune(root, options(dir2, &fourth, 24));
  EXPECT_EQ(result_json(resumed).dump(), result_json(a).dump());
}

TEST(Trace, BadStepsAreClearErrors) {
  leir::Program root = root_program();
  strategies::TraceStep s{"no_such_strategy", {}, "", {}};
  EXPECT_THROW(strategies::apply_step(root, s), strategies::ReplayError);
  s.strategy = "loop_split";
  s.site.path = {7, 7};
  try {
    strategies::apply_step(root, s);
    FAIL();
  } catch (const strategies::ReplayError& e) {
    EXPECT_NE(std::string(e.what()).find("no site at path [7,7]"), std::string::npos) << e.what();
  }
  EXPECT_THROW(strategies::step_from_json(json{{"strategy", "x"}}), strategies::ReplayError);
  EXPECT_THROW(strategies::params_from_json(json{{"factor", 1.5}}), strategies::ReplayError);
}

}  // namespace
}  // namespace steptp::tune
