#include "search/tune/training_set.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <random>
#include <set>

#include <fmt/format.h>

#include "base/error.h"
#include "base/hash.h"
#include "front/workloads/workload.h"
#include "ir/leir/canonical.h"
#include "ir/leir/program_io.h"
#include "search/tune/database.h"

namespace fs = std::filesystem;

namespace steptp::tune {
namespace {

using nlohmann::json;

// What a source names (see build_training_set): records of `steptp generate`, or the candidates a
// `steptp tune` store keeps.
struct SourceFile {
  fs::path path;
  bool store = false;
};

SourceFile source_file(const std::string& source) {
  const fs::path p(source);
  auto invalid = [&](const std::string& why) { return base::Error(base::ErrorKind::Invalid, source + ": " + why); };
  if (fs::is_directory(p)) {
    if (fs::exists(p / "steps.jsonl")) return {p / "steps.jsonl"};
    if (fs::exists(p / "measurements.sqlite")) return {p / "measurements.sqlite", true};
    throw invalid("neither the records of `steptp generate` (steps.jsonl) nor a `steptp tune` store "
                  "(measurements.sqlite) in this folder");
  }
  if (!fs::exists(p)) throw invalid("no such file or folder");
  if (p.extension() == ".sqlite") {
    // A dataset's store: its records hold the programs (and the same searches' results).
    if (fs::exists(p.parent_path() / "steps.jsonl")) return {p.parent_path() / "steps.jsonl"};
    return {p, true};
  }
  return {p};
}

struct MeasuredProgram {
  double sum = 0;
  int n = 0;
};

struct PendingRoot {
  std::string workload, family, text;
  std::map<std::string, MeasuredProgram> programs;  // text -> log2 speedups
};

std::string other_machine_kind(const std::string& kind, const std::string& this_kind) {
  return fmt::format("measured on machine kind '{}', not this one ('{}'); a cost model is trained per machine kind: "
                     "train it on the machine (and --threads) its programs were timed on",
                     kind, this_kind);
}

// The candidates a `steptp tune` store keeps (database.h), grouped by their root like records.
// Returns how many were read.
int read_kept_candidates(const fs::path& file, const std::string& this_kind,
                         std::map<std::string, PendingRoot>& roots) {
  ObservationStore store(file.string());
  const auto rows = store.candidates();
  if (rows.empty())
    throw base::Error(base::ErrorKind::Invalid,
                      file.string() + ": no candidate programs in this store (written by `steptp tune` before it "
                                      "kept them, or by `tune --measure model`, whose estimates are not timings); "
                                      "rerun the same `steptp tune` on it to keep them (its measurements are reused)");
  for (const auto& [key, row] : rows) {
    const std::string workload = row.at("workload").get<std::string>();
    const std::string kind = row.at("machine_kind").get<std::string>();
    if (kind != this_kind)
      throw base::Error(base::ErrorKind::Invalid, fmt::format("{}: the candidates of {}: {}", file.string(), workload,
                                                              other_machine_kind(kind, this_kind)));
    PendingRoot& root = roots[row.at("root").get<std::string>()];
    root.workload = workload;
    const auto* w = workloads::find_workload(workload);
    root.family = w ? w->family : workload;  // a program outside the registry is a family of its own
    const std::string text = row.at("program").get<std::string>();
    if (row.at("hash") == row.at("root")) {
      root.text = text;  // the root itself: 0 by definition (build_training_set)
      continue;
    }
    MeasuredProgram& e = root.programs[text];
    e.sum += row.at("log2_speedup").get<double>(), e.n++;
  }
  return int(rows.size());
}

struct RankQuality {
  double tau = 0, recall = 0;
};

RankQuality quality_of(const std::vector<double>& predicted, const std::vector<double>& measured, size_t k) {
  return {kendall_tau(predicted, measured), top_k_recall(predicted, measured, k)};
}

json quality_json(const RankQuality& q) {
  return {{"kendall_tau", round_quality(q.tau)}, {"top_k_recall", round_quality(q.recall)}};
}

// Means of named qualities over the evaluated roots.
struct RankQualityMeans {
  std::map<std::string, RankQuality> sum;
  double chance = 0;
  int n = 0;
  void add(const std::map<std::string, RankQuality>& qs, double chance_recall) {
    for (const auto& [name, q] : qs) sum[name].tau += q.tau, sum[name].recall += q.recall;
    chance += chance_recall;
    n++;
  }
  json to_json() const {
    json j = json::object();
    for (const auto& [name, q] : sum) j[name] = quality_json({q.tau / std::max(1, n), q.recall / std::max(1, n)});
    j["chance_top_k_recall"] = round_quality(chance / std::max(1, n));
    return j;
  }
};

std::vector<double> priors_of(const std::vector<Features>& x) {
  std::vector<double> out;
  for (const auto& r : x) out.push_back(CostModel::prior(r));
  return out;
}

}  // namespace

TrainingSet build_training_set(const std::vector<std::string>& sources, const Machine& m) {
  TrainingSet set;
  set.machine_kind = machine_kind(m);
  std::map<std::string, PendingRoot> roots;     // root hash -> programs
  std::map<std::string, std::string> root_keys;  // a record's root text -> its hash
  for (const auto& source : sources) {
    const SourceFile src = source_file(source);
    const fs::path& file = src.path;
    set.files.push_back(file.string());
    if (src.store) {
      set.kept += read_kept_candidates(file, set.machine_kind, roots);
      continue;
    }
    std::ifstream in(file);
    if (!in) throw base::Error(base::ErrorKind::Invalid, "cannot read " + file.string());
    std::string line;
    int lines = 0, records = 0;
    while (std::getline(in, line)) {
      ++lines;
      if (line.empty()) continue;
      auto at = [&](const std::string& why) {
        return base::Error(base::ErrorKind::Invalid, fmt::format("{}:{}:1: {}", file.string(), lines, why));
      };
      json r = json::parse(line, nullptr, false);
      if (r.is_discarded() || !r.is_object() || !r.contains("root_program") || !r.contains("answers"))
        throw at("not a record of `steptp generate` (no root_program and answers)");
      const json& mj = r.value("machine", json());
      if (!mj.is_object() || mj.empty())
        throw at(fmt::format("a record of target {} without a CPU machine: the cost model is for the CPU backend",
                             r.value("target", "?")));
      const std::string kind = machine_kind(mj.value("cpu", ""), mj.value("cores", 0), mj.value("threads", 0),
                                            mj.value("vector_bytes", 0), mj.value("compiler", ""));
      if (kind != set.machine_kind) throw at(other_machine_kind(kind, set.machine_kind));
      const std::string root_text = r["root_program"].get<std::string>();
      // Filed under the program hash, as a tune store files its candidates (tuner.cc): the same
      // root read from a dataset and from a store is one group. Parsed once per distinct root.
      auto [known, fresh] = root_keys.try_emplace(root_text);
      if (fresh) known->second = base::hex64(leir::program_hash(leir::program_from_text(root_text, file.string())));
      PendingRoot& root = roots[known->second];
      root.text = root_text;
      root.workload = r.value("root", json::object()).value("name", std::string("?"));
      root.family = r.value("root", json::object()).value("family", std::string("?"));
      auto add = [&](const std::string& text, double speedup) {
        if (!(speedup > 0) || !std::isfinite(speedup)) return;
        MeasuredProgram& e = root.programs[text];
        e.sum += std::log2(speedup), e.n++;
      };
      if (r.value("parent_speedup_measured", false) && r.contains("parent_program"))
        add(r["parent_program"].get<std::string>(), r.value("parent_speedup_vs_root", 0.0));
      for (const auto& a : r["answers"]) {
        const json& c = a.value("cost", json::object());
        if (c.value("measured", false) && c.contains("speedup_vs_root") && a.contains("result_program") &&
            c["speedup_vs_root"].is_number())
          add(a["result_program"].get<std::string>(), c["speedup_vs_root"].get<double>());
      }
      ++records;
    }
    if (records == 0) throw base::Error(base::ErrorKind::Invalid, file.string() + ": no records");
    set.records += records;
  }
  for (auto& [hash, pending] : roots) {
    if (pending.text.empty())
      throw base::Error(base::ErrorKind::Invalid,
                        fmt::format("root {} of {}: its candidates are kept, its program is not", hash,
                                    pending.workload));
    RootGroup g;
    g.workload = pending.workload;
    g.family = pending.family;
    g.root = hash;
    g.root_x = extract_features(leir::program_from_text(pending.text, g.root), m);
    pending.programs[pending.text] = {0, 1};  // the root: speedup 1 by definition
    for (const auto& [text, e] : pending.programs) {
      g.x.push_back(text == pending.text ? g.root_x : extract_features(leir::program_from_text(text, g.root), m));
      g.log2_speedup.push_back(e.sum / e.n);
    }
    set.groups.push_back(std::move(g));
  }
  return set;
}

json evaluate_held_out(const TrainingSet& set, const HeldOutOptions& o) {
  if (o.folds < 2) throw base::Error(base::ErrorKind::BadRequest, "--folds must be at least 2", "folds");
  auto unit_of = [&](const RootGroup& g) { return o.by_family ? g.family : g.workload; };
  std::set<std::string> names, units;
  for (const auto& g : set.groups) names.insert(g.workload), units.insert(unit_of(g));
  std::vector<std::string> workloads(names.begin(), names.end()), dealt(units.begin(), units.end());
  if (dealt.size() < size_t(o.folds))
    throw base::Error(base::ErrorKind::Invalid,
                      fmt::format("{} {} for {} folds", dealt.size(), o.by_family ? "families" : "workloads", o.folds));
  std::mt19937_64 rng(base::mix_seed(o.seed, 1));
  std::shuffle(dealt.begin(), dealt.end(), rng);
  std::map<std::string, int> fold_of_unit, fold_of;
  for (size_t i = 0; i < dealt.size(); ++i) fold_of_unit[dealt[i]] = int(i % size_t(o.folds));
  for (const auto& g : set.groups) fold_of[g.workload] = fold_of_unit[unit_of(g)];

  RankQualityMeans whole, half;
  json roots = json::array(), folds = json::array();
  int programs = 0;
  for (int f = 0; f < o.folds; ++f) {
    std::vector<RootGroup> train;
    std::vector<const RootGroup*> test;
    for (const auto& g : set.groups) {
      if (fold_of[g.workload] != f) train.push_back(g);
      else if (g.x.size() >= o.min_programs) test.push_back(&g);
    }
    std::vector<std::string> held;
    for (const auto& w : workloads)  // sorted: from a std::set
      if (fold_of[w] == f) held.push_back(w);
    folds.push_back({{"fold", f}, {"held_out_workloads", held}, {"training_roots", train.size()}});
    if (test.empty()) continue;
    auto model = PretrainedModel::train(train, set.machine_kind, base::mix_seed(o.seed, 2 + uint64_t(f)), o.objective);
    for (const RootGroup* g : test) {
      const size_t n = g->x.size();
      programs += int(n);
      // The whole root: no program of this workload was seen in training.
      const size_t k_whole = std::min<size_t>(5, n / 2);
      std::map<std::string, RankQuality> qw = {
          {"pretrained", quality_of(model->predict(g->root_x, g->x), g->log2_speedup, k_whole)},
          {"analytic", quality_of(priors_of(g->x), g->log2_speedup, k_whole)}};
      whole.add(qw, double(k_whole) / double(n));
      // A seeded half measured (per-root training, fine-tuning), the other half ranked.
      std::vector<size_t> order(n);
      std::iota(order.begin(), order.end(), size_t{0});
      std::mt19937_64 root_rng(base::mix_seed(o.seed, base::fnv1a(g->root)));
      std::shuffle(order.begin(), order.end(), root_rng);
      std::vector<Features> xtr, xte;
      std::vector<double> ytr, yte;
      for (size_t i = 0; i < n; ++i) {
        (i < n / 2 ? xtr : xte).push_back(g->x[order[i]]);
        (i < n / 2 ? ytr : yte).push_back(g->log2_speedup[order[i]]);
      }
      const size_t k_half = held_out_k(yte.size());  // the tuner's rule
      CostModel per_root, fine;
      per_root.train(xtr, ytr);
      fine.use_pretrained(model, g->root_x);
      fine.train(xtr, ytr);
      std::map<std::string, RankQuality> qh = {
          {"pretrained", quality_of(model->predict(g->root_x, xte), yte, k_half)},
          {"fine_tuned", quality_of(fine.predict(xte), yte, k_half)},
          {"per_root", quality_of(per_root.predict(xte), yte, k_half)},
          {"analytic", quality_of(priors_of(xte), yte, k_half)}};
      half.add(qh, double(k_half) / double(yte.size()));
      json jw = json::object(), jh = json::object();
      for (const auto& [name, q] : qw) jw[name] = quality_json(q);
      for (const auto& [name, q] : qh) jh[name] = quality_json(q);
      jw["k"] = k_whole;
      jh["k"] = k_half, jh["measured"] = xtr.size(), jh["ranked"] = xte.size();
      roots.push_back({{"workload", g->workload}, {"root", g->root}, {"fold", f}, {"programs", n},
                       {"whole_root", jw}, {"half", jh}});
    }
  }
  json jw = whole.to_json(), jh = half.to_json();
  jw["k"] = "min(5, programs / 2)";
  jh["k"] = "max(1, min(5, ranked / 4)), as the tuner's held-out report";
  return {{"machine_kind", set.machine_kind},
          {"objective", o.objective == Objective::Rank ? "rank" : "regression"},
          {"seed", o.seed},
          {"split", o.by_family ? "family" : "workload"},
          {"folds", folds},
          {"records", set.records},
          {"kept", set.kept},
          {"roots", set.groups.size()},
          {"workloads", workloads.size()},
          {"min_programs", o.min_programs},
          {"roots_evaluated", roots.size()},
          {"programs_evaluated", programs},
          {"whole_root", jw},
          {"half", jh},
          {"per_root", roots}};
}

}  // namespace steptp::tune
