// The pipeline of `steptp generate`, one stage per file: roots (roots.cc) → trajectories per root
// (records.cc: the beam search, or the tuner via tuned_trajectory.h) in forked workers with a
// checkpoint (checkpoint.h) → filter (filter.h) → measure (measurement.h) → export (export.h,
// which makes the split of split.h once the records' token counts are known). This file runs the
// stages, locally or over MPI ranks (cluster.h).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "base/error.h"
#include "base/hash.h"
#include "base/progress.h"
#include "apps/dataset/dataset.h"
#include "apps/dataset/checkpoint.h"
#include "apps/dataset/cluster.h"
#include "apps/dataset/export.h"
#include "apps/dataset/filter.h"
#include "apps/dataset/split.h"
#include "apps/dataset/measurement.h"
#include "apps/dataset/root_headroom.h"
#include "apps/dataset/root_sizing.h"
#include "apps/dataset/sharding.h"
#include "apps/dataset/workers.h"
#include "ir/leir/canonical.h"
#include "transform/sampler.h"
#include "search/tune/timing_lock.h"

namespace fs = std::filesystem;

namespace steptp::dataset {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;
double secs(Clock::time_point a) { return std::chrono::duration<double>(Clock::now() - a).count(); }


// Options that change the raw per-root records (the checkpoint is only valid for these).
std::string checkpoint_fingerprint(const GenerateOptions& o, const std::vector<Root>& roots) {
  json j = options_json(o);
  // Measurement happens after filtering (apps/dataset/measurement.h): not part of the raw records —
  // except the thread count of a tuned run, whose search is measured.
  for (const char* k : {"cost", "measure_min_time", "improve_threshold"}) j.erase(k);
  if (o.trajectories != Trajectories::Tune) j.erase("measure_threads");
  j.erase("multi_per_strategy_cap");  // applied at export only
  std::string s = j.dump() + kGenerateVersion;
  for (const auto& r : roots) s += r.key + base::hex64(leir::program_hash(r.program));
  return base::hex64(base::fnv1a(s, base::kProgramHashBasis));
}

void validate(const GenerateOptions& o) {
  auto bad = [](const std::string& m) { throw base::Error(base::ErrorKind::BadRequest, m); };
  if (o.out_dir.empty()) bad("--out must not be empty");
  if (o.programs < -1) bad("--programs must be >= 0 (or -1 for all)");
  if (!(o.min_root_ms >= 0) || o.min_root_ms > 1000) bad("--min-root-ms must be in [0, 1000]");
  if (!(o.max_root_ms >= 0) || (o.max_root_ms > 0 && o.max_root_ms < o.min_root_ms))
    bad("--max-root-ms must be 0 (no ceiling) or at least --min-root-ms");
  if (!(o.min_headroom >= 0) || o.min_headroom > 1e6) bad("--min-headroom must be in [0, 1000000]");
  if (o.composites < 0) bad("--composites must be >= 0");
  if (o.beam < 1 || o.beam > 64) bad("--beam must be in [1, 64]");
  if (o.depth < 1 || o.depth > 16) bad("--depth must be in [1, 16]");
  if (o.jobs < 1 || o.jobs > 256) bad("--jobs must be in [1, 256]");
  if (o.sites_per_strategy < 1 || o.params_per_site < 1) bad("sites/params per strategy must be >= 1");
  if (o.verify_trials < 1 || o.verify_trials > 16) bad("verify trials must be in [1, 16]");
  if (o.per_strategy_cap < 1) bad("--per-strategy-cap must be >= 1");
  if (o.trivial_keep < 0 || o.trivial_keep > 1) bad("--trivial-keep must be in [0, 1]");
  if (o.eval_fraction < 0 || o.eval_fraction >= 1) bad("--eval-fraction must be in [0, 1)");
  if (o.per_strategy_per_state < 1 || o.non_improving_per_state < 0) bad("per-state limits must be >= 1 / >= 0");
  if (o.non_improving_per_root < -1) bad("--non-improving-per-root must be >= -1");
  if (o.multi_answer_max < 2) bad("--multi-answer-max must be >= 2");
  if (o.multi_trivial_max < 0) bad("--multi-trivial-max must be >= 0");
  if (o.multi_per_strategy_cap < 1) bad("--multi-per-strategy-cap must be >= 1");
  if (o.format != "steptp" && o.format != "public" && o.format != "both")
    bad("--format must be steptp, public or both (got '" + o.format + "')");
  if (o.token_sample < -1) bad("--token-sample must be >= 0 (or -1 for all)");
  if (!(o.measure_min_time >= 0 && o.measure_min_time <= 10)) bad("--measure-min-time must be in [0, 10] seconds");
  if (o.measure_threads < 1 || o.measure_threads > 1024) bad("--measure-threads must be in [1, 1024]");
  if (!(o.improve_threshold > 0)) bad("--improve-threshold must be > 0");
  if (!o.input.empty() && !fs::exists(o.input)) bad("cannot read --input " + o.input);
  if (o.trajectories == Trajectories::Tune && !o.measured)
    bad("--trajectories tune measures in the search: it needs --cost measured");
  if (o.tune_trials < 1 || o.tune_trials > 4096) bad("--tune-trials must be in [1, 4096]");
  if (o.target != "cpu" && o.target != "cuda") bad("--target must be cpu or cuda (got '" + o.target + "')");
  if (o.target == "cuda" && (o.measured || o.trajectories == Trajectories::Tune))
    bad("--target cuda: CUDA kernels are not timed here (no GPU measurement), so its records are unmeasured: use "
        "--cost model with --trajectories search");
}

}  // namespace

std::string rank_dir(const GenerateOptions& o, int rank) {
  return (fs::path(o.out_dir) / "ranks" / fmt::format("rank-{}", rank)).string();
}

namespace {

// Rank 0 sizes the roots by measurement (apps/dataset/root_sizing.h) and every other rank takes its
// decisions, so all ranks hold the same roots (the sharding and the checkpoint rest on that).
std::vector<RootSizing> size_roots(std::vector<Root>& roots, const GenerateOptions& o, Cluster& cluster,
                                   json* skipped) {
  std::vector<RootSizing> sizing;
  json plan = json::object();
  if (cluster.rank() == 0) {
    sizing = size_roots_by_measurement(roots, o, measurement_store_path(o), skipped);
    screen_roots_by_headroom(roots, sizing, o, measurement_store_path(o), skipped);
    for (size_t i = 0; i < roots.size(); ++i)
      plan[roots[i].key] = {sizing[i].naive_ms_one_thread, sizing[i].bench_doublings, sizing[i].traffic_ms};
  }
  if (cluster.size() == 1) return sizing;
  plan = json::parse(cluster.all_gather(cluster.rank() == 0 ? plan.dump() : "").at(0));
  if (cluster.rank() == 0) return sizing;
  std::vector<Root> kept;
  for (auto& r : roots) {
    if (!plan.contains(r.key)) continue;  // rank 0 left it out
    const int doublings = plan[r.key][1].get<int>();
    if (doublings > 0) r.program = emit_root_program(r, o.size, doublings);
    sizing.push_back({plan[r.key][0].get<double>(), doublings, plan[r.key][2].get<double>()});
    kept.push_back(std::move(r));
  }
  roots = std::move(kept);
  return sizing;
}

}  // namespace

GenerateSummary generate(const GenerateOptions& o) {
  SingleProcess one;
  return generate(o, one);
}

GenerateSummary generate(const GenerateOptions& o, Cluster& cluster) {
  auto t0 = Clock::now();
  validate(o);
  Progress none("generate", ProgressStyle::Off);
  Progress& progress = o.progress ? *o.progress : none;
  GenerateSummary sum;
  json skipped_roots = json::array();
  std::vector<Root> roots = collect_roots(o, &skipped_roots);
  const bool distributed = cluster.size() > 1, lead = cluster.rank() == 0;
  if (roots.empty())
    throw base::Error(base::ErrorKind::BadRequest, "no programs: use --programs, --composites or --input");
  sum.ranks = cluster.size();

  // This rank's folder (the output folder itself for a single process) must be writable before
  // any work starts.
  const fs::path out(o.out_dir), work = distributed ? fs::path(rank_dir(o, cluster.rank())) : out;
  std::error_code ec;
  fs::create_directories(work, ec);
  if (ec || !fs::is_directory(work)) throw base::Error(base::ErrorKind::Failed, "cannot create --out " + work.string());
  {
    fs::path probe = work / ".write-probe";
    std::ofstream f(probe);
    if (!f) throw base::Error(base::ErrorKind::Failed, "--out " + work.string() + " is not writable");
    f.close();
    fs::remove(probe, ec);
  }
  // Sizing measures roots only when asked to (bench shapes): a stage worth a line then.
  const bool sizing_stage = o.min_root_ms > 0 || o.min_headroom > 0;
  if (sizing_stage) progress.stage_start("sizing", "root", -1, 0, fmt::format("{} roots", roots.size()));
  const std::vector<RootSizing> sizing = size_roots(roots, o, cluster, &skipped_roots);
  if (sizing_stage) progress.stage_end();
  if (roots.empty()) throw base::Error(base::ErrorKind::BadRequest, "no roots left after sizing them (--min-root-ms)");
  sum.roots = int(roots.size());
  // Checkpoints: OUT/checkpoint.sqlite (rank 0 merges into it), and each rank's own when
  // distributed, so a rank that dies keeps its finished roots.
  const std::string merged_db = (out / "checkpoint.sqlite").string(), rank_db = (work / "checkpoint.sqlite").string();
  const std::string fp = checkpoint_fingerprint(o, roots);
  json finished = {{"merged", json::array()}, {"rank", json::array()}};
  if (lead) {
    finished["merged"] = open_checkpoint(merged_db, fp);  // empties a checkpoint of other options
    adopt_rank_checkpoints(out, cluster.size(), merged_db, fp, roots);
    // Their measurement facts too (the tuners' of the roots adopted above, measurements a killed
    // run left): a fact is keyed by its content, so any folder's are valid here.
    if (o.measured)
      for (const fs::path& dir : unowned_rank_dirs(out, cluster.size()))
        if (fs::exists(dir / "measurements.sqlite"))
          tune::MeasurementStore(measurement_store_path(o))
              .put_all(tune::MeasurementStore((dir / "measurements.sqlite").string()).entries());
    finished["merged"] = open_checkpoint(merged_db, fp);
  }
  finished["rank"] = distributed ? json(open_checkpoint(rank_db, fp)) : finished["merged"];
  // Roots finished anywhere (in the merged checkpoint or any rank's) are not searched again.
  std::set<int> merged_before, done_anywhere;
  {
    auto all = cluster.all_gather(finished.dump());
    for (size_t r = 0; r < all.size(); ++r) {
      json f = json::parse(all[r]);
      for (int i : f["rank"]) done_anywhere.insert(i);
      for (int i : f["merged"]) merged_before.insert(i), done_anywhere.insert(i);
    }
  }
  sum.roots_resumed = int(done_anywhere.size());
  std::vector<int> todo, mine;
  for (int i = 0; i < int(roots.size()); ++i)
    if (!done_anywhere.count(i)) todo.push_back(i);
  // The sharding key of ranks and workers (also stats.json's roots[].cost_estimate): a tuned
  // root's cost is its tuner's trials, timed against the root, so it follows the root's measured
  // naive time.
  std::vector<uint64_t> cost_estimate(roots.size());
  for (size_t i = 0; i < roots.size(); ++i)
    cost_estimate[i] = o.trajectories == Trajectories::Tune
                           ? tuned_root_cost(roots[i].program, sizing[i].naive_ms_one_thread, o.tune_trials)
                           : root_cost(roots[i].program);
  {
    std::vector<uint64_t> costs;
    for (int i : todo) costs.push_back(cost_estimate[size_t(i)]);
    auto owner = shard_by_cost(costs, cluster.size());
    for (size_t k = 0; k < todo.size(); ++k)
      if (owner[k] == cluster.rank()) mine.push_back(todo[k]);
  }

  // The tuner's measurement store (--trajectories tune): this rank's, merged by measure_kept.
  // The tuner reuses every fact its store holds and times only what is missing, so before the
  // search each rank's store gets the run's facts: those of the store given (a replay of a
  // merged store times nothing, on any number of ranks) and those the ranks of an interrupted
  // run left (a root resharded to another rank goes on from the same facts).
  const std::string tune_store =
      distributed ? (work / "measurements.sqlite").string() : measurement_store_path(o);
  if (distributed && o.trajectories == Trajectories::Tune) {
    merge_rank_stores(cluster, tune_store, measurement_store_path(o));
    cluster.all_gather("");  // rank 0 has written the run's store
    if (fs::exists(measurement_store_path(o)))
      tune::MeasurementStore(tune_store).put_all(tune::MeasurementStore(measurement_store_path(o)).entries());
  }
  // Workers: forked processes. The roots go to them as to ranks (longest first, each to the least
  // loaded worker) and each worker takes its own longest first: a static split in draw order left
  // one worker tuning the two largest roots alone for the last two minutes of the main job.
  auto split_for_workers = [&](const std::vector<int>& roots_left, int J) {
    std::vector<uint64_t> costs;
    for (int i : roots_left) costs.push_back(cost_estimate[size_t(i)]);
    std::vector<std::vector<int>> lists;
    for (const auto& part : shard_lists_by_cost(costs, J)) {
      lists.emplace_back();
      for (size_t k : part) lists.back().push_back(roots_left[k]);
    }
    return lists;
  };
  auto run_worker = [&](const std::vector<int>& list, int limit) -> int {
    CheckpointDb db(rank_db);
    int n = 0;
    for (int idx : list) {
      if (limit >= 0 && n >= limit) return 3;
      const Root& r = roots[size_t(idx)];
      search::SearchStats st;
      json payload;
      const double timed_before = tune::timed_section_seconds();
      try {
        payload = {{"records", root_records(r, o, &st, tune_store)}, {"error", ""}};
      } catch (const std::exception& e) {
        payload = {{"records", json::array()}, {"error", e.what()}};
      }
      payload["stats"] = {{"states", st.states}, {"candidates", st.candidates}, {"verified", st.verified},
                          {"failed", st.failed}, {"duplicates", st.duplicates},
                          {"root_inconclusive", st.root_inconclusive}, {"root_finite_share", st.root_finite_share}};
      // timed_s: the search's timed sections (the tuner's trials), the part a machine serializes.
      payload["timing"] = {{"search_s", st.search_s}, {"verify_s", st.verify_s}, {"cost_s", st.cost_s},
                           {"timed_s", tune::timed_section_seconds() - timed_before}};
      db.put("INSERT OR REPLACE INTO roots(idx, key, payload) VALUES(?, ?, ?)", idx, r.key, payload.dump());
      ++n;
      const std::string error = payload["error"];
      progress.advance(fmt::format("{} {} ({} records)", r.key, error.empty() ? "done" : "failed",
                                   payload["records"].size()));
    }
    return 0;
  };
  int J = std::max(1, std::min(o.jobs, int(mine.size())));
  bool stopped = false;
  {
    // This rank's roots: all of them in a single process; a resumed run counts on from those done.
    const int total = sum.roots - int(todo.size() - mine.size());
    progress.stage_start("search", "root", total, total - int(mine.size()),
                         fmt::format("{} roots, {} resumed, {} workers", total, sum.roots_resumed, J));
  }
  if (!mine.empty()) {
    // A crashed worker (exit code -1 or 1) leaves roots undone: they are finished serially below
    // (a root that crashes again aborts the run with a clear error).
    const auto lists = split_for_workers(mine, J);
    for (int rc : run_workers(J, [&](int k) { return run_worker(lists[size_t(k)], o.stop_after); }))
      if (rc == 3) stopped = true;
  }
  if (!stopped) {
    std::set<int> have;
    for (int i : open_checkpoint(rank_db, fp)) have.insert(i);
    std::vector<int> left;
    for (int i : mine)
      if (!have.count(i)) left.push_back(i);
    mine = left;
    run_worker(split_for_workers(mine, 1)[0], -1);
  }
  progress.stage_end();
  // Rank 0 merges what the ranks finished into OUT/checkpoint.sqlite.
  if (distributed) {
    std::vector<std::string> rows;
    for (auto& [i, payload] : CheckpointDb(rank_db).done())
      if (!merged_before.count(i)) rows.push_back(std::to_string(i) + "\t" + payload);
    rows = cluster.gather(std::move(rows));
    if (lead) {
      CheckpointDb db(merged_db);
      db.exec("BEGIN IMMEDIATE");
      for (const auto& row : rows) {
        size_t tab = row.find('\t');
        int i = std::stoi(row.substr(0, tab));
        db.put("INSERT OR REPLACE INTO roots(idx, key, payload) VALUES(?, ?, ?)", i, roots.at(size_t(i)).key,
               row.substr(tab + 1));
      }
      db.exec("COMMIT");
    }
  }
  bool stopped_anywhere = false;
  for (const auto& s : cluster.all_gather(stopped ? "stopped" : "")) stopped_anywhere |= !s.empty();
  std::map<int, std::string> done;
  if (lead) done = CheckpointDb(merged_db).done();
  sum.roots_done = lead ? int(done.size()) : sum.roots_resumed + int(mine.size());
  if (stopped_anywhere) {
    sum.complete = false;
    sum.wall_s = secs(t0);
    return sum;
  }
  if (lead && int(done.size()) < int(roots.size()))
    throw base::Error(base::ErrorKind::Failed, "checkpoint: roots missing after the search");
  sum.complete = true;
  if (!lead) {
    // The other ranks' part ends with measuring what rank 0 hands them.
    if (o.measured) {
      std::vector<json> none;
      std::vector<char> keep;
      measure_kept(none, keep, o, cluster);
    }
    sum.wall_s = secs(t0);
    return sum;
  }

  // ---- gather, filter (the split is made at export, apps/dataset/split.h) ----
  auto te = Clock::now();
  const std::vector<std::string> families = root_families(roots);
  std::vector<json> recs;
  json root_stats = json::array();
  // Roots the verifier got no evidence on (outputs mostly NaN/inf by design or on every input
  // set): they yield no records, and are listed rather than silently missing.
  json inconclusive_roots = json::array();
  for (const auto& [i, payload] : done) {
    json p = json::parse(payload);
    sum.search_s += p["timing"]["search_s"].get<double>();
    sum.verify_s += p["timing"]["verify_s"].get<double>();
    sum.cost_s += p["timing"]["cost_s"].get<double>();
    json rs = {{"key", roots[size_t(i)].key}, {"family", roots[size_t(i)].family},
               {"cost_estimate", cost_estimate[size_t(i)]},
               {"search", p["stats"]}, {"error", p["error"]}};
    if (sizing[size_t(i)].naive_ms_one_thread > 0) {
      rs["naive_ms_one_thread"] = sizing[size_t(i)].naive_ms_one_thread;
      rs["bench_doublings"] = sizing[size_t(i)].bench_doublings;
    }
    if (sizing[size_t(i)].traffic_ms > 0) {
      rs["traffic_ms_all_cores"] = sizing[size_t(i)].traffic_ms;
      rs["headroom"] = headroom(sizing[size_t(i)]);
    }
    root_stats.push_back(std::move(rs));
    if (p["stats"].value("root_inconclusive", false))
      inconclusive_roots.push_back({{"key", roots[size_t(i)].key}, {"finite_share", p["stats"]["root_finite_share"]}});
    for (auto& r : p["records"]) recs.push_back(std::move(r));
  }
  std::map<std::string, int> drops;
  std::vector<char> keep = filter_records(recs, o, drops);

  // ---- measure the kept records on the CPU backend (apps/dataset/measurement.h) ----
  MeasureSummary meas;
  if (o.measured) {
    meas = measure_kept(recs, keep, o, cluster);
    const int failed = meas.dropped_records - meas.noisy_records;
    if (failed) drops["measure_failed"] = failed;
    if (meas.noisy_records) drops["measure_noisy"] = meas.noisy_records;
    sum.compile_s = meas.compile_s;
    sum.measure_s = meas.measure_s;
    sum.pairs_measured = meas.measured;
    sum.pairs_reused = meas.reused;
  }

  // ---- export ----
  progress.stage_start("export", "record", -1, 0, fmt::format("{} records", recs.size()));
  export_dataset(recs, keep, {o, roots, families, drops, meas, root_stats, inconclusive_roots, skipped_roots},
                 sum);
  sum.export_s = secs(te);
  progress.stage_end();
  sum.wall_s = secs(t0);
  return sum;
}

nlohmann::json summary_json(const GenerateSummary& s, const std::string& out_dir) {
  const double rpm = s.wall_s > 0 ? s.steps / (s.wall_s / 60.0) : 0;
  return {{"out", out_dir}, {"roots", s.roots}, {"records", s.steps}, {"train", s.train}, {"eval", s.eval},
          {"single", s.single}, {"multi", s.multi}, {"strategies_covered", s.strategies_covered},
          {"wall_s", s.wall_s}, {"records_per_minute", rpm}, {"ranks", s.ranks}, {"roots_resumed", s.roots_resumed},
          {"comparisons_measured", s.pairs_measured},
          {"comparisons_reused", s.pairs_reused},
          {"breakdown_s", {{"search", s.search_s}, {"verify", s.verify_s}, {"cost_model", s.cost_s},
                           {"compile", s.compile_s}, {"measure", s.measure_s}, {"export", s.export_s}}},
          {"inconclusive_roots", s.stats.is_object() && s.stats.contains("inconclusive_roots")
                                     ? s.stats["inconclusive_roots"].size() : 0}};
}

}  // namespace steptp::dataset
