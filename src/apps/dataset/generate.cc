// The pipeline of `steptp generate`. generate() below reads as its list of stages, in the style
// of Halide's Lower.cpp; each stage is a function with explicit inputs and outputs:
//   roots    collect_roots (roots.cc): built-in workloads, composites, user programs
//   size     size_roots_by_measurement (root_sizing.h): bench roots timed naive, redrawn larger
//   screen   screen_roots_by_headroom (root_headroom.h): roots with room to optimize
//   search   search_root → root_records (records.cc: the beam search, or the tuner via
//            tuned_trajectory.h): one root's raw records, its search statistics and timings
//   select   select_records: the finished roots' records in root order, with per-root stats
//   filter   filter_records (filter.h): which raw records are kept, every drop counted
//   measure  measure_kept (measurement.h): the kept records (measured after the filter, since
//            compiling is the expensive part) rewritten from the measurement store; failed and
//            noisy ones dropped
//   export   export_dataset (export.h): the files, with the split of split.h
// Around the stages, plumbing no stage sees: the checkpoint (checkpoint.h: each finished root's
// search result is stored as it ends, so a killed run resumes), forked workers (workers.h) and
// MPI ranks (cluster.h: rank 0 sizes the roots and the others take its plan, each rank searches
// its shard, rank 0 merges the checkpoints and runs the stages after the search; before the
// measure stage, fill_store times the comparisons the store lacks on the measuring ranks'
// workers).
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

// ---- plumbing: folders, the root plan, checkpoints, shards, workers ----

// Where this rank works: OUT itself for a single process, OUT/ranks/rank-R when distributed
// (rank_dir), with its checkpoint; rank 0 merges every rank's into OUT/checkpoint.sqlite.
struct Folders {
  fs::path out, work;
  std::string merged_db, rank_db;
};

// This rank's folder must be writable before any work starts.
Folders prepare_folders(const GenerateOptions& o, const Cluster& cluster) {
  Folders f;
  f.out = o.out_dir;
  f.work = cluster.size() > 1 ? fs::path(rank_dir(o, cluster.rank())) : f.out;
  std::error_code ec;
  fs::create_directories(f.work, ec);
  if (ec || !fs::is_directory(f.work))
    throw base::Error(base::ErrorKind::Failed, "cannot create --out " + f.work.string());
  {
    fs::path probe = f.work / ".write-probe";
    std::ofstream file(probe);
    if (!file) throw base::Error(base::ErrorKind::Failed, "--out " + f.work.string() + " is not writable");
    file.close();
    fs::remove(probe, ec);
  }
  f.merged_db = (f.out / "checkpoint.sqlite").string();
  f.rank_db = (f.work / "checkpoint.sqlite").string();
  return f;
}

// Rank 0 sized and screened the roots; every other rank takes its decisions (which roots stay,
// their bench doublings and times), so all ranks hold the same roots (the sharding and the
// checkpoint rest on that).
void share_root_plan(std::vector<Root>& roots, std::vector<RootSizing>& sizing, const GenerateOptions& o,
                     Cluster& cluster) {
  if (cluster.size() == 1) return;
  json plan = json::object();
  if (cluster.rank() == 0)
    for (size_t i = 0; i < roots.size(); ++i)
      plan[roots[i].key] = {sizing[i].naive_ms_one_thread, sizing[i].bench_doublings, sizing[i].traffic_ms};
  plan = json::parse(cluster.all_gather(cluster.rank() == 0 ? plan.dump() : "").at(0));
  if (cluster.rank() == 0) return;
  std::vector<Root> kept;
  for (auto& r : roots) {
    if (!plan.contains(r.key)) continue;  // rank 0 left it out
    const int doublings = plan[r.key][1].get<int>();
    if (doublings > 0) r.program = emit_root_program(r, o.size, doublings);
    sizing.push_back({plan[r.key][0].get<double>(), doublings, plan[r.key][2].get<double>()});
    kept.push_back(std::move(r));
  }
  roots = std::move(kept);
}

// What earlier runs of these options finished.
struct Resumed {
  std::set<int> merged_before;  // in OUT/checkpoint.sqlite when this run started
  std::set<int> done_anywhere;  // ... or in any rank's: not searched again
};

// Rank 0 opens OUT/checkpoint.sqlite (emptied when it holds other options) and adopts the rank
// folders no rank of this run owns; every rank opens its own when distributed.
Resumed resume_from_checkpoints(const GenerateOptions& o, const std::vector<Root>& roots, const std::string& fp,
                                const Folders& f, Cluster& cluster) {
  json finished = {{"merged", json::array()}, {"rank", json::array()}};
  if (cluster.rank() == 0) {
    finished["merged"] = open_checkpoint(f.merged_db, fp);  // empties a checkpoint of other options
    adopt_rank_checkpoints(f.out, cluster.size(), f.merged_db, fp, roots);
    // Their measurement facts too (the tuners' of the roots adopted above, measurements a killed
    // run left): a fact is keyed by its content, so any folder's are valid here.
    if (o.measured)
      for (const fs::path& dir : unowned_rank_dirs(f.out, cluster.size()))
        if (fs::exists(dir / "measurements.sqlite"))
          tune::ObservationStore(measurement_store_path(o))
              .put_all(tune::ObservationStore((dir / "measurements.sqlite").string()).entries());
    finished["merged"] = open_checkpoint(f.merged_db, fp);
  }
  finished["rank"] = cluster.size() > 1 ? json(open_checkpoint(f.rank_db, fp)) : finished["merged"];
  Resumed r;
  for (const auto& part : cluster.all_gather(finished.dump())) {
    json p = json::parse(part);
    for (int i : p["rank"]) r.done_anywhere.insert(i);
    for (int i : p["merged"]) r.merged_before.insert(i), r.done_anywhere.insert(i);
  }
  return r;
}

// The sharding key of ranks and workers (also stats.json's roots[].cost_estimate): a tuned root's
// cost is its tuner's trials, timed against the root, so it follows the root's measured naive time.
std::vector<uint64_t> root_cost_estimates(const std::vector<Root>& roots, const std::vector<RootSizing>& sizing,
                                          const GenerateOptions& o) {
  std::vector<uint64_t> cost(roots.size());
  for (size_t i = 0; i < roots.size(); ++i)
    cost[i] = o.trajectories == Trajectories::Tune
                  ? tuned_root_cost(roots[i].program, sizing[i].naive_ms_one_thread, o.tune_trials)
                  : root_cost(roots[i].program);
  return cost;
}

// The roots `ids` as `parts` lists (sharding.h): longest first, each to the least loaded part,
// each list in the order it was given its roots (longest first).
std::vector<std::vector<int>> lists_by_cost(const std::vector<int>& ids, const std::vector<uint64_t>& cost,
                                            int parts) {
  std::vector<uint64_t> costs;
  for (int i : ids) costs.push_back(cost[size_t(i)]);
  std::vector<std::vector<int>> lists;
  for (const auto& part : shard_lists_by_cost(costs, parts)) {
    lists.emplace_back();
    for (size_t k : part) lists.back().push_back(ids[k]);
  }
  return lists;
}

// The roots no checkpoint holds, and this rank's share of them.
struct Shard {
  std::vector<int> todo, mine;
};

Shard shard_roots(size_t roots, const Resumed& resumed, const std::vector<uint64_t>& cost, Cluster& cluster) {
  Shard s;
  std::vector<uint64_t> costs;
  for (int i = 0; i < int(roots); ++i)
    if (!resumed.done_anywhere.count(i)) s.todo.push_back(i), costs.push_back(cost[size_t(i)]);
  const std::vector<int> owner = shard_by_cost(costs, cluster.size());
  for (size_t k = 0; k < s.todo.size(); ++k)
    if (owner[k] == cluster.rank()) s.mine.push_back(s.todo[k]);
  return s;
}

// The tuner's measurement store (--trajectories tune): this rank's, merged by fill_store.
// The tuner reuses every fact its store holds and times only what is missing, so before the
// search each rank's store gets the run's facts: those of the store given (a replay of a merged
// store times nothing, on any number of ranks) and those the ranks of an interrupted run left (a
// root resharded to another rank goes on from the same facts).
std::string prepare_tune_store(const GenerateOptions& o, const Folders& f, Cluster& cluster) {
  if (cluster.size() == 1) return measurement_store_path(o);
  const std::string tune_store = (f.work / "measurements.sqlite").string();
  if (o.trajectories == Trajectories::Tune) {
    merge_rank_stores(cluster, tune_store, measurement_store_path(o));
    cluster.all_gather("");  // rank 0 has written the run's store
    if (fs::exists(measurement_store_path(o)))
      tune::ObservationStore(tune_store).put_all(tune::ObservationStore(measurement_store_path(o)).entries());
  }
  return tune_store;
}

// ---- stage "search": one root ----

// One root's raw records (records.cc: the beam search, or the tuner with `tune_store`), its search
// statistics and timings, as the checkpoint keeps them; a root whose search throws keeps its
// error and no records.
json search_root(const Root& r, const GenerateOptions& o, const std::string& tune_store) {
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
  return payload;
}

// ---- plumbing around the search: workers and the checkpoint ----

// Runs search_root over this rank's roots in o.jobs forked workers, each root's result stored in
// this rank's checkpoint as it ends. The roots go to the workers as to ranks (longest first, each
// to the least loaded worker) and each worker takes its own longest first: a static split in draw
// order left one worker tuning the two largest roots alone for the last two minutes of the main
// job. A crashed worker (exit code -1 or 1) leaves roots undone: they are finished serially after
// (a root that crashes again aborts the run with a clear error). Returns whether --stop-after
// stopped a worker (testing).
bool search_roots(const std::vector<Root>& roots, const Shard& shard, int resumed, const std::vector<uint64_t>& cost,
                  const GenerateOptions& o, const std::string& tune_store, const Folders& f, const std::string& fp,
                  Progress& progress) {
  const std::vector<int>& mine = shard.mine;
  auto run_worker = [&](const std::vector<int>& list, int limit) -> int {
    CheckpointDb db(f.rank_db);
    int n = 0;
    for (int idx : list) {
      if (limit >= 0 && n >= limit) return 3;
      const Root& r = roots[size_t(idx)];
      const json payload = search_root(r, o, tune_store);
      db.put("INSERT OR REPLACE INTO roots(idx, key, payload) VALUES(?, ?, ?)", idx, r.key, payload.dump());
      ++n;
      const std::string error = payload["error"];
      progress.advance(fmt::format("{} {} ({} records)", r.key, error.empty() ? "done" : "failed",
                                   payload["records"].size()));
    }
    return 0;
  };
  const int J = std::max(1, std::min(o.jobs, int(mine.size())));
  {
    // This rank's roots: all of them in a single process; a resumed run counts on from those done.
    const int total = int(roots.size()) - int(shard.todo.size() - mine.size());
    progress.stage_start("search", "root", total, total - int(mine.size()),
                         fmt::format("{} roots, {} resumed, {} workers", total, resumed, J));
  }
  bool stopped = false;
  if (!mine.empty()) {
    const auto lists = lists_by_cost(mine, cost, J);
    for (int rc : run_workers(J, [&](int k) { return run_worker(lists[size_t(k)], o.stop_after); }))
      if (rc == 3) stopped = true;
  }
  if (!stopped) {
    std::set<int> have;
    for (int i : open_checkpoint(f.rank_db, fp)) have.insert(i);
    std::vector<int> left;
    for (int i : mine)
      if (!have.count(i)) left.push_back(i);
    run_worker(lists_by_cost(left, cost, 1)[0], -1);
  }
  progress.stage_end();
  return stopped;
}

// What the search left, on every rank: whether --stop-after stopped any rank, and on rank 0 every
// finished root, read back from OUT/checkpoint.sqlite in root order.
struct Searched {
  bool stopped_anywhere = false;
  std::map<int, std::string> done;  // rank 0: root index -> search_root's payload
  int resumed = 0;                  // roots an earlier run finished
  int roots_done = 0;               // rank 0: of the run; another rank: its part
};

// Rank 0 takes the roots the ranks finished in this run into OUT/checkpoint.sqlite. Collective.
void merge_rank_checkpoints(const std::vector<Root>& roots, const Resumed& resumed, const Folders& f,
                            Cluster& cluster) {
  std::vector<std::string> rows;
  for (auto& [i, payload] : CheckpointDb(f.rank_db).done())
    if (!resumed.merged_before.count(i)) rows.push_back(std::to_string(i) + "\t" + payload);
  rows = cluster.gather(std::move(rows));
  if (cluster.rank() != 0) return;
  CheckpointDb db(f.merged_db);
  db.exec("BEGIN IMMEDIATE");
  for (const auto& row : rows) {
    size_t tab = row.find('\t');
    int i = std::stoi(row.substr(0, tab));
    db.put("INSERT OR REPLACE INTO roots(idx, key, payload) VALUES(?, ?, ?)", i, roots.at(size_t(i)).key,
           row.substr(tab + 1));
  }
  db.exec("COMMIT");
}

// The plumbing around stage "search": the roots no checkpoint holds (resume_from_checkpoints),
// this rank's shard of them, search_roots in workers, then the ranks' checkpoints merged.
Searched search_with_checkpoints(const std::vector<Root>& roots, const std::vector<uint64_t>& cost,
                                 const GenerateOptions& o, const Folders& f, Cluster& cluster, Progress& progress) {
  const std::string fp = checkpoint_fingerprint(o, roots);
  const Resumed resumed = resume_from_checkpoints(o, roots, fp, f, cluster);
  Searched s;
  s.resumed = int(resumed.done_anywhere.size());
  const Shard shard = shard_roots(roots.size(), resumed, cost, cluster);
  const std::string tune_store = prepare_tune_store(o, f, cluster);
  const bool stopped = search_roots(roots, shard, s.resumed, cost, o, tune_store, f, fp, progress);
  if (cluster.size() > 1) merge_rank_checkpoints(roots, resumed, f, cluster);
  for (const auto& part : cluster.all_gather(stopped ? "stopped" : "")) s.stopped_anywhere |= !part.empty();
  if (cluster.rank() == 0) s.done = CheckpointDb(f.merged_db).done();
  s.roots_done = cluster.rank() == 0 ? int(s.done.size()) : s.resumed + int(shard.mine.size());
  return s;
}

// ---- stage "select": the finished roots' records, in root order ----

struct Selected {
  std::vector<json> records;  // every root's raw records, in root order
  json root_stats = json::array();
  // Roots the verifier got no evidence on (outputs mostly NaN/inf by design or on every input
  // set): they yield no records, and are listed rather than silently missing.
  json inconclusive_roots = json::array();
  double search_s = 0, verify_s = 0, cost_s = 0;  // summed over the roots
};

Selected select_records(const std::map<int, std::string>& done, const std::vector<Root>& roots,
                        const std::vector<RootSizing>& sizing, const std::vector<uint64_t>& cost) {
  Selected s;
  for (const auto& [i, payload] : done) {
    json p = json::parse(payload);
    s.search_s += p["timing"]["search_s"].get<double>();
    s.verify_s += p["timing"]["verify_s"].get<double>();
    s.cost_s += p["timing"]["cost_s"].get<double>();
    json rs = {{"key", roots[size_t(i)].key}, {"family", roots[size_t(i)].family},
               {"cost_estimate", cost[size_t(i)]},
               {"search", p["stats"]}, {"error", p["error"]}};
    if (sizing[size_t(i)].naive_ms_one_thread > 0) {
      rs["naive_ms_one_thread"] = sizing[size_t(i)].naive_ms_one_thread;
      rs["bench_doublings"] = sizing[size_t(i)].bench_doublings;
    }
    if (sizing[size_t(i)].traffic_ms > 0) {
      rs["traffic_ms_all_cores"] = sizing[size_t(i)].traffic_ms;
      rs["headroom"] = headroom(sizing[size_t(i)]);
    }
    s.root_stats.push_back(std::move(rs));
    if (p["stats"].value("root_inconclusive", false))
      s.inconclusive_roots.push_back(
          {{"key", roots[size_t(i)].key}, {"finite_share", p["stats"]["root_finite_share"]}});
    for (auto& r : p["records"]) s.records.push_back(std::move(r));
  }
  return s;
}

// ---- stage "measure": the kept records from the measurement store, their drops counted ----

// `filled`: what fill_store timed for the stage beforehand (reporting only).
MeasureSummary measure_stage(std::vector<json>& recs, std::vector<char>& keep, std::map<std::string, int>& drops,
                             GenerateSummary& sum, const GenerateOptions& o, const FillTiming& filled) {
  MeasureSummary meas = measure_kept(recs, keep, o);
  meas.add(filled);
  const int failed = meas.dropped_records - meas.noisy_records;
  if (failed) drops["measure_failed"] = failed;
  if (meas.noisy_records) drops["measure_noisy"] = meas.noisy_records;
  sum.compile_s = meas.compile_s;
  sum.measure_s = meas.measure_s;
  sum.pairs_measured = meas.measured;
  sum.pairs_reused = meas.reused;
  return meas;
}

}  // namespace

GenerateSummary generate(const GenerateOptions& o) {
  SingleProcess one;
  return generate(o, one);
}

GenerateSummary generate(const GenerateOptions& o, Cluster& cluster) {
  const auto t0 = Clock::now();
  validate(o);
  Progress none("generate", ProgressStyle::Off);
  Progress& progress = o.progress ? *o.progress : none;
  const bool lead = cluster.rank() == 0;
  GenerateSummary sum;
  sum.ranks = cluster.size();

  // roots
  json skipped_roots = json::array();
  std::vector<Root> roots = collect_roots(o, &skipped_roots);
  if (roots.empty())
    throw base::Error(base::ErrorKind::BadRequest, "no programs: use --programs, --composites or --input");
  const Folders folders = prepare_folders(o, cluster);

  // size → screen: rank 0 measures, the other ranks take its plan. Sizing measures roots only
  // when asked to (bench shapes): a stage worth a line then.
  const bool sizing_stage = o.min_root_ms > 0 || o.min_headroom > 0;
  if (sizing_stage) progress.stage_start("sizing", "root", -1, 0, fmt::format("{} roots", roots.size()));
  std::vector<RootSizing> sizing;
  if (lead) {
    sizing = size_roots_by_measurement(roots, o, measurement_store_path(o), &skipped_roots);
    screen_roots_by_headroom(roots, sizing, o, measurement_store_path(o), &skipped_roots);
  }
  share_root_plan(roots, sizing, o, cluster);
  if (sizing_stage) progress.stage_end();
  if (roots.empty())
    throw base::Error(base::ErrorKind::BadRequest, "no roots left after sizing them (--min-root-ms)");
  sum.roots = int(roots.size());

  // search / tune: every root's raw records (search_root), but those a checkpoint holds
  const std::vector<uint64_t> cost_estimate = root_cost_estimates(roots, sizing, o);
  const Searched searched = search_with_checkpoints(roots, cost_estimate, o, folders, cluster, progress);
  sum.roots_resumed = searched.resumed;
  sum.roots_done = searched.roots_done;
  if (searched.stopped_anywhere) {
    sum.wall_s = secs(t0);
    return sum;
  }
  if (lead && searched.done.size() < roots.size())
    throw base::Error(base::ErrorKind::Failed, "checkpoint: roots missing after the search");
  sum.complete = true;
  if (!lead) {
    // The other ranks' part ends with timing what rank 0 hands them (fill_store is collective).
    if (o.measured) fill_store({}, {}, o, cluster, progress);
    sum.wall_s = secs(t0);
    return sum;
  }

  // select → filter → measure → export (rank 0)
  const auto te = Clock::now();
  Selected sel = select_records(searched.done, roots, sizing, cost_estimate);
  sum.search_s = sel.search_s;
  sum.verify_s = sel.verify_s;
  sum.cost_s = sel.cost_s;
  std::map<std::string, int> drops;
  std::vector<char> keep = filter_records(sel.records, o, drops);
  MeasureSummary meas;
  if (o.measured) {
    const FillTiming filled = fill_store(sel.records, keep, o, cluster, progress);
    meas = measure_stage(sel.records, keep, drops, sum, o, filled);
    progress.stage_end();
  }
  progress.stage_start("export", "record", -1, 0, fmt::format("{} records", sel.records.size()));
  const std::vector<std::string> families = root_families(roots);
  export_dataset(sel.records, keep,
                 {o, roots, families, drops, meas, sel.root_stats, sel.inconclusive_roots, skipped_roots}, sum);
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
