// The searches of `steptp optimize` on their defining properties, with the random and model
// policies and the analytic stand-in runner (no timing): BFS asks level by level, MCTS expands
// siblings and backs up values, DFS goes deep first, no search exceeds its measurement budget,
// and a rerun on the same store and seed gives the same tree and events.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "ir/leir/program_io.h"
#include "apps/optimize/metrics.h"
#include "apps/optimize/model_runner.h"
#include "apps/optimize/optimize.h"
#include "search/tune/database.h"
#include "front/workloads/workload.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace steptp::optimize {
namespace {

leir::Program root_program() {
  return leir::program_from_text(
      "name two_nests\ninput A: f64[8,16]\noutput C: f64[8,16]\n"
      "B^{8}_{tx=0}L^{16}_{a=0}[D^{f64,g}_{tx,a}=A^{f64,g}_{tx,a}*3+1;];"
      "B^{8}_{tx=0}L^{16}_{a=0}[C^{f64,g}_{tx,a}=D^{f64,g}_{tx,a}*D^{f64,g}_{tx,a};];\n");
}

std::string store_path(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("steptp_optimize_search_" + std::to_string(getpid()));
  fs::create_directories(d);
  return (d / (name + ".sqlite")).string();
}

json run(SearchKind kind, const std::string& policy, int64_t measured, const std::string& store_name,
         uint64_t seed = 7) {
  tune::ObservationStore store(store_path(store_name));
  ModelRunner runner(1);
  auto p = policy == "model" ? make_model_policy(seed, 1) : make_random_policy(seed);
  OptimizeOptions o;
  o.search.kind = kind;
  o.search.depth = 3;
  o.search.proposals = 3;
  o.search.nodes = 12;
  o.budget.measured = measured;
  o.funnel.verify_seed = seed;
  return optimize_program(root_program(), *p, store, runner, o);
}

TEST(OptimizeSearch, BfsAsksLevelByLevel) {
  json r = run(SearchKind::Bfs, "random", 0, "bfs");
  int last = 0, levels = 0;
  for (int n : r["expansion_order"]) {
    int d = r["nodes"][size_t(n)]["depth"];
    EXPECT_GE(d, last) << "a state of depth " << d << " asked after one of depth " << last;
    levels += d > last;
    last = d;
  }
  EXPECT_GE(levels, 1) << "the search never left the root";
}

TEST(OptimizeSearch, DfsGoesDeepBeforeWide) {
  json r = run(SearchKind::Dfs, "random", 0, "dfs");
  const json& order = r["expansion_order"];
  ASSERT_GE(order.size(), 3u);
  // The second state asked is a child of the first, the third a child of the second.
  EXPECT_EQ(r["nodes"][order[1].get<size_t>()]["parent"], order[0]);
  EXPECT_EQ(r["nodes"][order[2].get<size_t>()]["parent"], order[1]);
}

TEST(OptimizeSearch, MctsExpandsSiblingsAndBacksUpValues) {
  json r = run(SearchKind::Mcts, "random", 0, "mcts");
  const json& nodes = r["nodes"];
  EXPECT_GE(nodes[0]["children"].size(), 2u) << "no sibling expansion at the root";
  int iterations = nodes[0]["visits"];
  EXPECT_GT(iterations, 0);
  bool deeper = false;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const json& n = nodes[i];
    int child_visits = 0;
    double child_values = 0;
    for (int c : n["children"]) {
      child_visits += nodes[size_t(c)]["visits"].get<int>();
      child_values += nodes[size_t(c)]["value_sum"].get<double>();
      deeper = deeper || !nodes[size_t(c)]["children"].empty();
    }
    // Every visit of a child passed through its parent; a parent's own visits add the failed
    // expansions (value 0) and its leaf visits. Values are speedups over the root.
    EXPECT_GE(n["visits"].get<int>(), child_visits) << i;
    EXPECT_GE(n["value_sum"].get<double>() + 1e-9, child_values) << i;
    if (i > 0) EXPECT_GE(n["visits"].get<int>(), 1) << "a state that was never backed up: " << i;
  }
  EXPECT_TRUE(deeper) << "MCTS never selected through a child (a chain or a star)";
  // Progressive widening: the root holds at most ceil(c (N+1)^alpha) children.
  EXPECT_LE(nodes[0]["children"].size(), size_t(std::ceil(std::pow(iterations + 1, 0.5))));
}

TEST(OptimizeSearch, NoSearchExceedsItsMeasurementBudget) {
  for (SearchKind k : {SearchKind::Chain, SearchKind::Greedy, SearchKind::Beam, SearchKind::Dfs, SearchKind::Bfs,
                       SearchKind::Mcts}) {
    json r = run(k, "model", 5, std::string("budget-") + std::string(to_string(k)));
    EXPECT_LE(r["spend"]["measured"].get<int>(), 5) << to_string(k);
    EXPECT_LE(r["metrics"]["curve_measured"].size(), 5u) << to_string(k);
    int64_t last = 0;
    for (const auto& e : r["events"]) {
      EXPECT_LE(e["measured_after"].get<int64_t>(), 5);
      EXPECT_GE(e["measured_after"].get<int64_t>(), last);
      last = e["measured_after"];
    }
  }
}

TEST(OptimizeSearch, SameSeedAndStoreReplayTheSameRun) {
  for (SearchKind k : {SearchKind::Beam, SearchKind::Mcts}) {
    std::string store = std::string("replay-") + std::string(to_string(k));
    json a = run(k, "model", 8, store), b = run(k, "model", 8, store);
    a.erase("wall_s");
    b.erase("wall_s");
    EXPECT_EQ(a, b) << to_string(k);
    json c = run(k, "model", 8, store + "-other-seed", 8);
    EXPECT_NE(a["events"], c["events"]) << "the seed changes nothing";
  }
}

TEST(OptimizeMetrics, PassAtKIsTheUnbiasedEstimator) {
  EXPECT_DOUBLE_EQ(pass_at_k(10, 0, 1), 0.0);
  EXPECT_DOUBLE_EQ(pass_at_k(10, 10, 5), 1.0);
  EXPECT_NEAR(pass_at_k(10, 3, 1), 0.3, 1e-12);
  EXPECT_NEAR(pass_at_k(4, 1, 2), 0.5, 1e-12);  // 1 - C(3,2)/C(4,2) = 1 - 3/6
}

}  // namespace
}  // namespace steptp::optimize
