// The issue-4 sweep (heavy): every strategy at every site (≤ 3 parameter samples) of every
// workload at tiny size, 100 composites and the 10 examples, every result verified — through the
// `steptp strategy-sweep` command, whose table is the human-readable report. Plus 500 random
// sequences of 5 strategies verified against their start program.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "ir/leir/printer.h"
#include "strategies/check_util.h"
#include "transform/sampler.h"
#include "transform/strategy.h"
#include "front/workloads/workload.h"

namespace steptp::strategies {
namespace {

std::string run(const std::string& cmd) {
  std::string out;
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
  if (!pipe) return out;
  std::array<char, 4096> buf;
  while (fgets(buf.data(), buf.size(), pipe.get())) out += buf.data();
  return out;
}

TEST(Sweep, EveryStrategyEverywhereVerifies) {
  std::string out = run(std::string(STEPTP_EXE) + " strategy-sweep --json --composites 100 --shared " +
                        STEPTP_SHARED_DIR + " 2>/dev/null");
  std::istringstream in(out);
  std::string line;
  int rows = 0;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line);
    ++rows;
    std::string name = j["strategy"];
    EXPECT_TRUE(j["registered"].get<bool>()) << name;
    EXPECT_EQ(j["failed"].get<int>(), 0) << name << " produced non-equivalent results";
    EXPECT_EQ(j["errors"].get<int>(), 0) << name << " threw";
    EXPECT_EQ(j["exact_claim_broken"].get<int>(), 0) << name << " claimed exact but changed rounding";
    EXPECT_GE(j["distinct_inputs"].get<int>(), 3) << name << " applies to fewer than 3 distinct inputs";
  }
  EXPECT_EQ(rows, 43);
}

TEST(Composition, FiveHundredSequencesOfFiveVerify) {
  std::vector<leir::Program> starts = testing::examples();
  for (const auto& w : workloads::all_workloads()) {
    try {
      starts.push_back(workloads::emit(w, 0, workloads::SizeClass::Tiny));
    } catch (const std::exception&) {
    }
  }
  const auto& strategies = all_strategies();
  std::set<std::string> used;  // strategies that took part in some sequence
  // STEPTP_COMPOSITION_BASE shifts the 500 sequences to another seeded batch (bug hunting).
  const char* base_env = std::getenv("STEPTP_COMPOSITION_BASE");
  const uint64_t base = base_env ? std::strtoull(base_env, nullptr, 10) : 0;
  for (uint64_t seq = base; seq < base + 500; ++seq) {
    const auto& start = starts[base::mix_seed(seq, 99) % starts.size()];
    leir::Program cur = start;
    std::string trail;
    int applied = 0;
    for (int step = 0; step < 5; ++step) {
      for (size_t k : choose_indices(strategies.size(), strategies.size(), base::mix_seed(seq, step))) {
        std::optional<Candidate> c;
        try {
          c = sample_one(*strategies[k], cur, base::mix_seed(seq * 31 + step, k));
        } catch (const std::exception& e) {
          ADD_FAILURE() << strategies[k]->name() << " threw: " << e.what();
        }
        if (!c) continue;
        trail += std::string(strategies[k]->name()) + " ";
        ++applied;
        used.insert(std::string(strategies[k]->name()));
        cur = std::move(c->program);
        break;
      }
    }
    // Every step finds some applicable strategy (something always applies to a program), so
    // each sequence really is five strategies long.
    EXPECT_EQ(applied, 5) << start.name << ": only " << trail;
    auto eq = testing::check_equivalent(start, cur);
    EXPECT_TRUE(eq.ok) << start.name << " after " << trail << ": " << eq.message << "\n" << leir::print_body(cur.body);
  }
  std::cout << "500 sequences of 5 strategies verified; " << used.size() << " distinct strategies took part\n";
  EXPECT_GE(used.size(), 30u);
}

}  // namespace
}  // namespace steptp::strategies
