// The cost model that transfers (search/tune/cost_model.h PretrainedModel, search/tune/training_set.h):
// the training set is read from records beside a store and from the candidates a tune run keeps
// in its store (a store written before it kept them still replays, and a replay keeps them), a
// saved model predicts what it predicted before, training is a function of the data and the seed,
// a model or programs of another machine kind are refused, and a model trained where the target is
// a known function of a feature ranks the programs of workloads it never saw.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/hash.h"
#include "base/sqlite.h"
#include "ir/leir/canonical.h"
#include "ir/leir/program_io.h"
#include "search/tune/cost_model.h"
#include "search/tune/database.h"
#include "search/tune/schedule_rules.h"
#include "search/tune/training_set.h"
#include "search/tune/tuner.h"
#include "tune/fake_runner.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace steptp::tune {
namespace {

fs::path transfer_tmp(const std::string& name) {
  fs::path p = fs::temp_directory_path() / ("steptp_transfer_test_" + std::to_string(getpid())) / name;
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

size_t feature_index(std::string_view name) {
  const auto& n = feature_names();
  for (size_t i = 0; i < n.size(); ++i)
    if (n[i] == name) return i;
  ADD_FAILURE() << "no feature " << name;
  return 0;
}

// Synthetic roots: random features; the measured log2 speedup is the change of one feature
// (vectorizable_share) from the root's, so the order within a root follows that feature alone.
std::vector<RootGroup> synthetic_groups(int roots, int programs, uint64_t seed, const std::string& prefix) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(0, 1);
  const size_t key = feature_index("vectorizable_share");
  std::vector<RootGroup> out;
  for (int r = 0; r < roots; ++r) {
    RootGroup g;
    g.workload = prefix + std::to_string(r);
    g.family = "family" + std::to_string(r % 4);
    g.root = g.workload;
    for (auto& v : g.root_x) v = 10 * u(rng);
    for (int p = 0; p < programs; ++p) {
      Features x;
      for (auto& v : x) v = 10 * u(rng);
      g.x.push_back(x);
      g.log2_speedup.push_back(3.0 * (x[key] - g.root_x[key]));
    }
    out.push_back(std::move(g));
  }
  return out;
}

TEST(PretrainedModel, RanksTheProgramsOfWorkloadsItNeverSaw) {
  auto model = PretrainedModel::train(synthetic_groups(30, 12, 1, "seen"), "kind", 7);
  double tau = 0;
  auto held = synthetic_groups(10, 12, 2, "unseen");
  for (const auto& g : held) tau += kendall_tau(model->predict(g.root_x, g.x), g.log2_speedup);
  EXPECT_GT(tau / double(held.size()), 0.8);
  // Fine-tuned on half of a held-out root's programs, it still ranks the other half.
  const RootGroup& g = held[0];
  std::vector<Features> xtr(g.x.begin(), g.x.begin() + 6), xte(g.x.begin() + 6, g.x.end());
  std::vector<double> ytr(g.log2_speedup.begin(), g.log2_speedup.begin() + 6),
      yte(g.log2_speedup.begin() + 6, g.log2_speedup.end());
  CostModel fine;
  fine.use_pretrained(model, g.root_x);
  EXPECT_TRUE(fine.learned());
  EXPECT_EQ(fine.predict(xte), model->predict(g.root_x, xte));  // before any measurement: the pre-trained model
  fine.train(xtr, ytr);
  EXPECT_GT(kendall_tau(fine.predict(xte), yte), 0.5);
}

TEST(PretrainedModel, SaveLoadRoundTripPredictsTheSameAndTrainingIsDeterministic) {
  auto groups = synthetic_groups(8, 10, 3, "w");
  auto a = PretrainedModel::train(groups, "cpu=test", 11);
  auto b = PretrainedModel::train(groups, "cpu=test", 11);
  EXPECT_EQ(a->booster_json(), b->booster_json());
  const fs::path dir = transfer_tmp("round_trip");
  a->save((dir / "m.json").string());
  b->save((dir / "m2.json").string());
  std::ifstream f1(dir / "m.json"), f2(dir / "m2.json");
  std::string s1((std::istreambuf_iterator<char>(f1)), {}), s2((std::istreambuf_iterator<char>(f2)), {});
  EXPECT_EQ(s1, s2);
  auto loaded = PretrainedModel::load((dir / "m.json").string());
  EXPECT_EQ(loaded->machine_kind(), "cpu=test");
  EXPECT_EQ(loaded->training()["seed"], 11);
  for (const auto& g : groups) EXPECT_EQ(loaded->predict(g.root_x, g.x), a->predict(g.root_x, g.x));
  // Not a model file.
  std::ofstream((dir / "bad.json").string()) << "{\"format\": \"other\"}";
  EXPECT_THROW(PretrainedModel::load((dir / "bad.json").string()), base::Error);
}

leir::Program scale_root() {
  return leir::program_from_text(
      "input A: f64[8,64]\noutput C: f64[8,64]\n"
      "B^{8}_{tx=0}L^{64}_{a=0}[C^{f64,g}_{tx,a}=A^{f64,g}_{tx,a}*3+1;];",
      "scale.leir");
}

TEST(PretrainedModel, ATuneRunRefusesAModelOfAnotherMachineKind) {
  const fs::path dir = transfer_tmp("kind");
  PretrainedModel::train(synthetic_groups(4, 6, 5, "w"), "cpu=Another CPU;cores=64", 1)
      ->save((dir / "m.json").string());
  leir::Program root = scale_root();
  testing::FakeRunner fake(root);
  TuneOptions o;
  o.trials = 8;
  o.store_path = (dir / "s.sqlite").string();
  o.runner = &fake;
  o.cost_model = (dir / "m.json").string();
  try {
    tune(root, o);
    FAIL() << "a model of another machine kind was accepted";
  } catch (const base::Error& e) {
    EXPECT_EQ(e.kind(), base::ErrorKind::Invalid);
    EXPECT_NE(std::string(e.what()).find("machine kind 'cpu=Another CPU;cores=64'"), std::string::npos) << e.what();
  }
  // This machine's kind: the run uses it and reports its ranking beside the others.
  PretrainedModel::train(synthetic_groups(4, 6, 5, "w"), machine_kind(this_machine(0)), 1)
      ->save((dir / "m.json").string());
  o.trials = 16;
  auto r = tune(root, o);
  EXPECT_TRUE(r.history.front().learned);  // ranked by the pre-trained model from the first round
  EXPECT_TRUE(r.cost_model.contains("pretrained")) << r.cost_model.dump();
}

// The rule chains' programs come first in the first round: in their designed order without a
// pre-trained model, in the order a pre-trained model ranks them with one (round 0 has no
// measurement of the root's own, so the pre-trained model is the only learned ranking there).
TEST(PretrainedModel, RanksTheFirstRoundsRuleChains) {
  const fs::path dir = transfer_tmp("chains");
  const leir::Program root = leir::program_from_text(
      "input A: f64[16,32]\ninput W: f64[32,16]\noutput C: f64[16,16]\n"
      "B^{16}_{tx=0}L^{16}_{a=0}L^{32}_{b=0}[C^{f64,g}_{tx,a}=C^{f64,g}_{tx,a}+A^{f64,g}_{tx,b}*W^{f64,g}_{b,a};];",
      "mm.leir");
  PretrainedModel::train(synthetic_groups(6, 8, 9, "w"), machine_kind(this_machine(0)), 1)
      ->save((dir / "m.json").string());
  testing::FakeRunner fake(root);
  TuneOptions o;
  o.trials = 24;
  o.runner = &fake;
  o.store_path = (dir / "base.sqlite").string();
  const TuneResult base = tune(root, o);
  std::vector<uint64_t> chain_ends;
  for (const auto& chain : schedule_rule_chains(root, base.machine, o.search.max_depth)) {
    const uint64_t h = leir::program_hash(chain.back().program);
    if (std::find(chain_ends.begin(), chain_ends.end(), h) == chain_ends.end()) chain_ends.push_back(h);
  }
  ASSERT_GE(chain_ends.size(), 3u);
  ASSERT_GE(base.history.size(), chain_ends.size());
  for (size_t k = 0; k < chain_ends.size(); ++k) EXPECT_EQ(base.history[k].hash, chain_ends[k]) << "trial " << k;
  o.cost_model = (dir / "m.json").string();
  o.store_path = (dir / "cm.sqlite").string();
  const TuneResult cm = tune(root, o);
  std::vector<double> predicted;
  for (size_t k = 0; k < chain_ends.size(); ++k) {
    ASSERT_NE(std::find(chain_ends.begin(), chain_ends.end(), cm.history[k].hash), chain_ends.end()) << "trial " << k;
    predicted.push_back(cm.history[k].predicted);
  }
  EXPECT_TRUE(std::is_sorted(predicted.rbegin(), predicted.rend()));  // best-ranked first
  EXPECT_NE(predicted.front(), predicted.back());  // the model tells them apart: the order is its
}

// A record as `steptp generate` writes it (the fields the builder reads).
json record(const Machine& m, const std::string& root, const std::string& parent, double parent_speedup,
            const std::string& result, double speedup) {
  json machine = {{"cpu", m.cpu_model},       {"cores", m.cores},
                  {"threads", m.threads},     {"vector_bytes", m.vector_bytes},
                  {"compiler", m.compiler.substr(0, m.compiler.rfind(" #"))}};
  return {{"root", {{"name", "scale"}}},
          {"root_program", root},
          {"parent_program", parent},
          {"parent_speedup_measured", true},
          {"parent_speedup_vs_root", parent_speedup},
          {"machine", machine},
          {"answers", json::array({{{"result_program", result},
                                    {"cost", {{"measured", true}, {"speedup_vs_root", speedup}}}}})}};
}

TEST(TrainingSet, ReadsTheRecordsBesideAStoreAndRefusesAnotherMachineKind) {
  const fs::path dir = transfer_tmp("store");
  { ObservationStore store((dir / "measurements.sqlite").string()); }
  const Machine m = this_machine(2);
  const std::string root = leir::program_to_text(scale_root(), false);
  const std::string par = "input A: f64[8,64]\noutput C: f64[8,64]\n"
                          "P^{8}_{tx=0}L^{64}_{a=0}[C^{f64,g}_{tx,a}=A^{f64,g}_{tx,a}*3+1;];";
  const std::string vec = "input A: f64[8,64]\noutput C: f64[8,64]\n"
                          "P^{8}_{tx=0}V^{64}_{a=0}[C^{f64,g}_{tx,a}=A^{f64,g}_{tx,a}*3+1;];";
  {
    std::ofstream f(dir / "steps.jsonl");
    f << record(m, root, root, 1.0, par, 2.0).dump() << "\n";
    f << record(m, root, par, 2.0, vec, 8.0).dump() << "\n";
    // The parallel program measured a third time: its log2 speedup is the mean of 1, 1 and 2.
    f << record(m, root, par, 4.0, vec, 8.0).dump() << "\n";
  }
  TrainingSet set = build_training_set({(dir / "measurements.sqlite").string()}, m);
  EXPECT_EQ(set.records, 3);
  ASSERT_EQ(set.groups.size(), 1u);
  const RootGroup& g = set.groups[0];
  EXPECT_EQ(g.workload, "scale");
  ASSERT_EQ(g.x.size(), 3u);  // root, parallel, parallel + vectorized
  std::vector<double> y = g.log2_speedup;
  std::sort(y.begin(), y.end());
  EXPECT_DOUBLE_EQ(y[0], 0);
  EXPECT_DOUBLE_EQ(y[1], 4.0 / 3.0);
  EXPECT_DOUBLE_EQ(y[2], 3);
  // Features are the extractor's for this machine.
  const auto root_x = extract_features(scale_root(), m);
  EXPECT_EQ(g.root_x, root_x);
  // Another machine kind (4 timed threads): a clear error naming the line.
  try {
    build_training_set({dir.string()}, this_machine(4));
    FAIL() << "records of another machine kind were accepted";
  } catch (const base::Error& e) {
    EXPECT_NE(std::string(e.what()).find("steps.jsonl:1:1: measured on machine kind"), std::string::npos) << e.what();
  }
  // A folder with neither records nor a store: its reason.
  const fs::path empty = transfer_tmp("empty");
  try {
    build_training_set({empty.string()}, m);
    FAIL() << "an empty folder was accepted";
  } catch (const base::Error& e) {
    EXPECT_NE(std::string(e.what()).find("neither the records"), std::string::npos) << e.what();
  }
}

// The labels of a group, sorted (groups list programs in text order).
std::vector<double> sorted_labels(const RootGroup& g) {
  std::vector<double> y = g.log2_speedup;
  std::sort(y.begin(), y.end());
  return y;
}

// A tune run keeps every measured candidate with its log2 speedup in its store; its output
// folder is then a training source: one group, the root (0) and each distinct measured program
// with the speedup the run measured (the fake: 4x for a split loop then vectorized, else 1x).
TEST(TrainingSet, ATuneRunsStoreTrainsAModelAndAnOldStoreReplaysAndKeepsThem) {
  const fs::path dir = transfer_tmp("tune_store");
  leir::Program root = scale_root();
  root.name = "scale_test";
  testing::FakeRunner fake(root);
  TuneOptions o;
  o.trials = 40;  // as the tuner's test that finds the 4x program (seed 3)
  o.seed = 3;
  o.threads = 2;
  o.store_path = (dir / "measurements.sqlite").string();
  o.runner = &fake;
  const TuneResult r = tune(root, o);
  ASSERT_GE(r.measured, 8);
  const Machine m = this_machine(2);
  const TrainingSet set = build_training_set({dir.string()}, m);
  EXPECT_EQ(set.records, 0);
  ASSERT_EQ(set.groups.size(), 1u);
  const RootGroup& g = set.groups[0];
  EXPECT_EQ(g.workload, "scale_test");
  EXPECT_EQ(g.family, "scale_test");  // not a registry workload: a family of its own
  EXPECT_EQ(g.root_x, extract_features(root, m));
  std::map<std::string, double> measured;  // history "hash" -> log2 speedup
  const json history = result_json(r)["history"];
  for (const auto& h : history)
    if (h["ok"].get<bool>()) measured[h["hash"].get<std::string>()] = std::log2(h["speedup"].get<double>());
  std::vector<double> expected = {0.0};
  for (const auto& [hash, l2] : measured) expected.push_back(l2);
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(sorted_labels(g), expected);
  EXPECT_EQ(expected.back(), 2.0) << "the search found the 4x program";
  // Each trial's hash names a kept program: the text of every trial can be read back.
  std::set<std::string> kept;
  for (const auto& [key, row] : ObservationStore(o.store_path).candidates()) {
    kept.insert(row["hash"].get<std::string>());
    EXPECT_EQ(row["hash"], base::hex64(leir::program_hash(leir::program_from_text(row["program"].get<std::string>()))));
  }
  for (const auto& [hash, l2] : measured) EXPECT_TRUE(kept.count(hash)) << hash;
  // The same root in a dataset's records beside the store: one group (both are filed under the
  // root's program hash), which gains the record's program.
  {
    const fs::path recs = transfer_tmp("tune_store_records");
    const std::string root_text = leir::program_to_text(root, false);
    const std::string other = "input A: f64[8,64]\noutput C: f64[8,64]\n"
                              "B^{8}_{tx=0}L^{64}_{a=0}[C^{f64,g}_{tx,a}=(A^{f64,g}_{tx,a}*3+1)*1;];";
    std::ofstream(recs / "steps.jsonl") << record(m, root_text, root_text, 1.0, other, 2.0).dump() << "\n";
    const TrainingSet both = build_training_set({dir.string(), recs.string()}, m);
    ASSERT_EQ(both.groups.size(), 1u);
    EXPECT_EQ(both.groups[0].x.size(), g.x.size() + 1);
  }
  auto model = PretrainedModel::train(set.groups, set.machine_kind, 3);
  EXPECT_EQ(model->training()["samples"], g.x.size());
  EXPECT_EQ(model->machine_kind(), machine_kind(m));

  // Programs timed with 2 threads do not train a model for 4.
  try {
    build_training_set({dir.string()}, this_machine(4));
    FAIL() << "kept candidates of another machine kind were accepted";
  } catch (const base::Error& e) {
    EXPECT_NE(std::string(e.what()).find("the candidates of scale_test: measured on machine kind"), std::string::npos)
        << e.what();
  }

  // A store written before tune kept candidates: the same store without that table.
  const fs::path old = dir / "old.sqlite";
  fs::copy_file(o.store_path, old);
  {
    sqlite3* db = base::open_sqlite(old.string(), "test store");
    base::sqlite_exec(db, "DROP TABLE candidates", "test store");
    sqlite3_close(db);
  }
  try {
    build_training_set({old.string()}, m);
    FAIL() << "a store without kept candidates was accepted";
  } catch (const base::Error& e) {
    EXPECT_EQ(e.kind(), base::ErrorKind::Invalid);
    EXPECT_NE(std::string(e.what()).find("no candidate programs in this store"), std::string::npos) << e.what();
  }
  // A rerun on it measures nothing, writes the same result and keeps the same candidates.
  const int calls = fake.calls;
  TuneOptions again = o;
  again.store_path = old.string();
  const TuneResult replay = tune(root, again);
  EXPECT_EQ(fake.calls, calls);
  EXPECT_EQ(result_json(replay).dump(), result_json(r).dump());
  const TrainingSet upgraded = build_training_set({old.string()}, m);
  ASSERT_EQ(upgraded.groups.size(), 1u);
  EXPECT_EQ(sorted_labels(upgraded.groups[0]), expected);
  EXPECT_EQ(upgraded.kept, set.kept);
  // And a replay on a store that keeps them adds none.
  const TuneResult third = tune(root, again);
  EXPECT_EQ(result_json(third).dump(), result_json(r).dump());
  EXPECT_EQ(int(ObservationStore(old.string()).candidates().size()), set.kept);
}

// A runner whose figures are estimates, not timings (as `tune --measure model`'s): nothing is
// kept, and the store says why it trains nothing.
class EstimateRunner : public testing::FakeRunner {
 public:
  using FakeRunner::FakeRunner;
  bool times() const override { return false; }
};

TEST(TrainingSet, EstimatesAreNotKept) {
  const fs::path dir = transfer_tmp("estimates");
  leir::Program root = scale_root();
  EstimateRunner estimate(root);
  TuneOptions o;
  o.trials = 8;
  o.store_path = (dir / "measurements.sqlite").string();
  o.runner = &estimate;
  ASSERT_GT(tune(root, o).measured, 0);
  EXPECT_TRUE(ObservationStore(o.store_path).candidates().empty());
  EXPECT_THROW(build_training_set({dir.string()}, this_machine(0)), base::Error);
}

TEST(TrainingSet, HeldOutEvaluationNeverTrainsOnTheWorkloadItRanks) {
  TrainingSet set;
  set.machine_kind = "kind";
  set.groups = synthetic_groups(12, 10, 9, "w");
  auto r = evaluate_held_out(set, {.folds = 3, .seed = 4});
  EXPECT_EQ(r["roots_evaluated"], 12);
  for (const auto& root : r["per_root"]) {
    const auto& held = r["folds"][root["fold"].get<size_t>()]["held_out_workloads"];
    EXPECT_NE(std::find(held.begin(), held.end(), root["workload"]), held.end());
  }
  // The synthetic target transfers; the analytic prior (a random feature here) does not.
  EXPECT_GT(r["whole_root"]["pretrained"]["kendall_tau"].get<double>(), 0.6) << r["whole_root"].dump();
  EXPECT_LT(std::abs(r["whole_root"]["analytic"]["kendall_tau"].get<double>()), 0.3) << r["whole_root"].dump();
  EXPECT_EQ(r, evaluate_held_out(set, {.folds = 3, .seed = 4}));
  // By family: a fold's training roots are those of the other families.
  auto f = evaluate_held_out(set, {.folds = 2, .seed = 4, .by_family = true});
  std::map<std::string, std::set<int>> folds_of_family;
  for (const auto& root : f["per_root"]) {
    auto g = std::find_if(set.groups.begin(), set.groups.end(),
                          [&](const RootGroup& x) { return x.root == root["root"]; });
    folds_of_family[g->family].insert(root["fold"].get<int>());
  }
  EXPECT_EQ(folds_of_family.size(), 4u);
  for (const auto& [family, folds] : folds_of_family) EXPECT_EQ(folds.size(), 1u) << family;
  EXPECT_EQ(f["folds"][0]["training_roots"].get<int>() + f["folds"][1]["training_roots"].get<int>(), 12);
}

}  // namespace
}  // namespace steptp::tune
