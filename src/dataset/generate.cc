// Roots, checkpointing (SQLite), forked workers, filtering, split and export.
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "base/hash.h"
#include "dataset/dataset.h"
#include "dataset/cluster.h"
#include "import/onnx_import.h"
#include "dataset/measurement.h"
#include "dataset/public_format.h"
#include "dataset/sharding.h"
#include "dataset/shortcut.h"
#include "dataset/record_stats.h"
#include "dataset/token_stats.h"
#include "dataset/workers.h"
#include "interp/inputs.h"
#include "leir/program_io.h"
#include "strategies/sampler.h"
#include "tokenizer/bpe_tokenizer.h"
#include "workloads/composite.h"

namespace fs = std::filesystem;

namespace steptp::dataset {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;
double secs(Clock::time_point a) { return std::chrono::duration<double>(Clock::now() - a).count(); }

constexpr const char* kVersion = "steptp-generate 0.1.0";

// File and record hashes keep the basis they have always had (they are in manifests).
uint64_t fnv(const std::string& s) { return base::fnv1a(s, base::kProgramHashBasis); }

json options_json(const GenerateOptions& o) {
  return {{"seed", o.seed},
          {"size", std::string(workloads::to_string(o.size))},
          {"programs", o.programs},
          {"composites", o.composites},
          {"input", o.input},
          {"examples", o.examples},
          {"search", o.mode == search::Mode::Greedy ? "greedy" : "beam"},
          {"beam", o.beam},
          {"depth", o.depth},
          {"sites_per_strategy", o.sites_per_strategy},
          {"params_per_site", o.params_per_site},
          {"verify_trials", o.verify_trials},
          {"per_strategy_cap", o.per_strategy_cap},
          {"non_improving_per_state", o.non_improving_per_state},
          {"per_strategy_per_state", o.per_strategy_per_state},
          {"trivial_keep", o.trivial_keep},
          {"multi_answer_max", o.multi_answer_max},
          {"multi_trivial_max", o.multi_trivial_max},
          {"multi_per_strategy_cap", o.multi_per_strategy_cap},
          {"eval_fraction", o.eval_fraction},
          {"cost", o.measured ? "measured" : "model"},
          {"measure_min_time", o.measure_min_time},
          {"measure_threads", o.measure_threads},
          {"improve_threshold", o.improve_threshold}};
}

// Options that change the raw per-root records (the checkpoint is only valid for these).
std::string checkpoint_fingerprint(const GenerateOptions& o, const std::vector<Root>& roots) {
  json j = options_json(o);
  // Measurement happens after filtering (dataset/measurement.h): not part of the raw records.
  for (const char* k : {"cost", "measure_min_time", "measure_threads", "improve_threshold"}) j.erase(k);
  j.erase("multi_per_strategy_cap");  // applied at export only
  std::string s = j.dump() + kVersion;
  for (const auto& r : roots) s += r.key + search::hex64(search::program_hash(r.program));
  return search::hex64(fnv(s));
}

void validate(const GenerateOptions& o) {
  auto bad = [](const std::string& m) { throw std::invalid_argument(m); };
  if (o.out_dir.empty()) bad("--out must not be empty");
  if (o.programs < -1) bad("--programs must be >= 0 (or -1 for all)");
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
}

// ---- SQLite checkpoint ----
struct Db {
  sqlite3* db = nullptr;
  explicit Db(const std::string& path) {
    if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) {
      std::string m = db ? sqlite3_errmsg(db) : "out of memory";
      sqlite3_close(db);
      throw std::runtime_error("cannot open checkpoint " + path + ": " + m);
    }
    sqlite3_busy_timeout(db, 600000);
    exec("PRAGMA journal_mode=WAL");
    exec("CREATE TABLE IF NOT EXISTS meta(k TEXT PRIMARY KEY, v TEXT)");
    exec("CREATE TABLE IF NOT EXISTS roots(idx INTEGER PRIMARY KEY, key TEXT, payload TEXT)");
  }
  ~Db() { sqlite3_close(db); }
  void exec(const std::string& sql) {
    char* err = nullptr;
    if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
      std::string m = err ? err : "?";
      sqlite3_free(err);
      throw std::runtime_error("checkpoint: " + m);
    }
  }
  std::string get_meta(const std::string& k) {
    sqlite3_stmt* st = nullptr;
    sqlite3_prepare_v2(db, "SELECT v FROM meta WHERE k=?", -1, &st, nullptr);
    sqlite3_bind_text(st, 1, k.c_str(), -1, SQLITE_TRANSIENT);
    std::string v;
    if (sqlite3_step(st) == SQLITE_ROW) v = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return v;
  }
  void put(const char* sql, int idx, const std::string& a, const std::string& b) {
    sqlite3_stmt* st = nullptr;
    sqlite3_prepare_v2(db, sql, -1, &st, nullptr);
    int c = 1;
    if (idx >= 0) sqlite3_bind_int(st, c++, idx);
    sqlite3_bind_text(st, c++, a.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, c++, b.c_str(), -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) throw std::runtime_error(std::string("checkpoint write: ") + sqlite3_errmsg(db));
  }
  std::map<int, std::string> done() {
    std::map<int, std::string> m;
    sqlite3_stmt* st = nullptr;
    sqlite3_prepare_v2(db, "SELECT idx, payload FROM roots", -1, &st, nullptr);
    while (sqlite3_step(st) == SQLITE_ROW)
      m[sqlite3_column_int(st, 0)] = reinterpret_cast<const char*>(sqlite3_column_text(st, 1));
    sqlite3_finalize(st);
    return m;
  }
};

// Indices of the finished roots of a checkpoint; a checkpoint of other options is emptied.
std::vector<int> open_checkpoint(const std::string& path, const std::string& fingerprint) {
  Db db(path);
  if (db.get_meta("fingerprint") != fingerprint) {
    db.exec("DELETE FROM roots");
    db.put("INSERT OR REPLACE INTO meta(k, v) VALUES(?, ?)", -1, "fingerprint", fingerprint);
  }
  std::vector<int> idx;
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db.db, "SELECT idx FROM roots ORDER BY idx", -1, &st, nullptr);
  while (sqlite3_step(st) == SQLITE_ROW) idx.push_back(sqlite3_column_int(st, 0));
  sqlite3_finalize(st);
  return idx;
}

// Rank 0 takes into the merged checkpoint the finished roots of rank folders no rank of this
// run owns (OUT/ranks/rank-R with R >= ranks: an earlier run had more ranks, or an MPI run is
// resumed by one process), where it sees them (a filesystem shared by the nodes). A folder of
// other options is left alone.
void adopt_rank_checkpoints(const fs::path& out, int ranks, const std::string& merged_db, const std::string& fp,
                            const std::vector<Root>& roots) {
  std::error_code ec;
  if (!fs::is_directory(out / "ranks", ec)) return;
  std::vector<std::pair<int, std::string>> rows;
  for (const auto& e : fs::directory_iterator(out / "ranks", ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("rank-", 0) != 0 || name.size() == 5 ||
        name.find_first_not_of("0123456789", 5) != std::string::npos)
      continue;
    const int r = std::atoi(name.c_str() + 5);
    if ((ranks > 1 && r < ranks) || !fs::exists(e.path() / "checkpoint.sqlite")) continue;
    Db db((e.path() / "checkpoint.sqlite").string());
    if (db.get_meta("fingerprint") != fp) continue;
    for (auto& [i, payload] : db.done())
      if (i >= 0 && i < int(roots.size())) rows.push_back({i, std::move(payload)});
  }
  if (rows.empty()) return;
  Db db(merged_db);
  db.exec("BEGIN IMMEDIATE");
  for (const auto& [i, payload] : rows)
    db.put("INSERT OR IGNORE INTO roots(idx, key, payload) VALUES(?, ?, ?)", i, roots[size_t(i)].key, payload);
  db.exec("COMMIT");
}

void write_atomic(const fs::path& path, const std::string& data) {
  fs::path tmp = path;
  tmp += ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw std::runtime_error("cannot write " + tmp.string());
    f << data;
    f.flush();
    if (!f) throw std::runtime_error("cannot write " + tmp.string());
  }
  fs::rename(tmp, path);
}

json quantiles(std::vector<double> v) {
  if (v.empty()) return json::object();
  std::sort(v.begin(), v.end());
  auto q = [&](double p) { return v[size_t(std::floor(p * double(v.size() - 1)))]; };
  return {{"min", v.front()}, {"p25", q(0.25)}, {"median", q(0.5)}, {"p75", q(0.75)}, {"max", v.back()},
          {"count", v.size()}};
}

}  // namespace

std::string rank_dir(const GenerateOptions& o, int rank) {
  return (fs::path(o.out_dir) / "ranks" / fmt::format("rank-{}", rank)).string();
}

std::vector<Root> collect_roots(const GenerateOptions& o) {
  std::vector<Root> roots;
  const auto& ws = workloads::all_workloads();
  size_t n = o.programs < 0 ? ws.size() : std::min(ws.size(), size_t(o.programs));
  // Spread over the suite: a seeded choice of workloads, kept in suite order.
  auto idx = strategies::choose_indices(ws.size(), n, strategies::mix_seed(o.seed, 0x5417e));
  std::sort(idx.begin(), idx.end());
  for (size_t i : idx) {
    const auto& w = ws[i];
    Root r{"w/" + w.name, w.family, workloads::emit(w, strategies::mix_seed(o.seed, i), o.size)};
    roots.push_back(std::move(r));
  }
  if (o.composites > 0) {
    auto cs = workloads::sample_composites(o.composites, strategies::mix_seed(o.seed, 0xc0),  o.size);
    for (size_t i = 0; i < cs.size(); ++i) roots.push_back({fmt::format("c/{}", i), "composite", cs[i]});
  }
  if (o.examples) {
    fs::path ex = fs::path(tokenizer::default_qwen3_path()).parent_path().parent_path().parent_path() / "examples";
    std::vector<fs::path> files;
    std::error_code ec;
    if (fs::is_directory(ex, ec))
      for (const auto& e : fs::directory_iterator(ex))
        if (e.path().extension() == ".json") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const auto& f : files)
      for (auto& p : leir::read_programs(f.string())) roots.push_back({"e/" + f.stem().string(), "example", p});
  }
  if (!o.input.empty()) {
    auto ps = onnx_import::read_programs_any(o.input);
    for (size_t i = 0; i < ps.size(); ++i) roots.push_back({fmt::format("u/{}", i), "user", ps[i]});
  }
  return roots;
}

GenerateSummary generate(const GenerateOptions& o) {
  SingleProcess one;
  return generate(o, one);
}

GenerateSummary generate(const GenerateOptions& o, Cluster& cluster) {
  auto t0 = Clock::now();
  validate(o);
  GenerateSummary sum;
  std::vector<Root> roots = collect_roots(o);
  if (roots.empty()) throw std::invalid_argument("no programs: use --programs, --composites or --input");
  sum.roots = int(roots.size());
  sum.ranks = cluster.size();
  const bool distributed = cluster.size() > 1, lead = cluster.rank() == 0;

  // This rank's folder (the output folder itself for a single process) must be writable before
  // any work starts.
  const fs::path out(o.out_dir), work = distributed ? fs::path(rank_dir(o, cluster.rank())) : out;
  std::error_code ec;
  fs::create_directories(work, ec);
  if (ec || !fs::is_directory(work)) throw std::runtime_error("cannot create --out " + work.string());
  {
    fs::path probe = work / ".write-probe";
    std::ofstream f(probe);
    if (!f) throw std::runtime_error("--out " + work.string() + " is not writable");
    f.close();
    fs::remove(probe, ec);
  }
  // Checkpoints: OUT/checkpoint.sqlite (rank 0 merges into it), and each rank's own when
  // distributed, so a rank that dies keeps its finished roots.
  const std::string merged_db = (out / "checkpoint.sqlite").string(), rank_db = (work / "checkpoint.sqlite").string();
  const std::string fp = checkpoint_fingerprint(o, roots);
  json finished = {{"merged", json::array()}, {"rank", json::array()}};
  if (lead) {
    finished["merged"] = open_checkpoint(merged_db, fp);  // empties a checkpoint of other options
    adopt_rank_checkpoints(out, cluster.size(), merged_db, fp, roots);
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
  {
    std::vector<uint64_t> costs;
    for (int i : todo) costs.push_back(root_cost(roots[size_t(i)].program));
    auto owner = shard_by_cost(costs, cluster.size());
    for (size_t k = 0; k < todo.size(); ++k)
      if (owner[k] == cluster.rank()) mine.push_back(todo[k]);
  }

  // Workers: forked processes, worker k takes mine[k], mine[k+J], ...
  auto run_worker = [&](int k, int J, int limit) -> int {
    Db db(rank_db);
    int n = 0;
    for (size_t j = size_t(k); j < mine.size(); j += size_t(J)) {
      if (limit >= 0 && n >= limit) return 3;
      const Root& r = roots[size_t(mine[j])];
      search::SearchStats st;
      json payload;
      try {
        payload = {{"records", root_records(r, o, &st)}, {"error", ""}};
      } catch (const std::exception& e) {
        payload = {{"records", json::array()}, {"error", e.what()}};
      }
      payload["stats"] = {{"states", st.states}, {"candidates", st.candidates}, {"verified", st.verified},
                          {"failed", st.failed}, {"duplicates", st.duplicates},
                          {"root_inconclusive", st.root_inconclusive}, {"root_finite_share", st.root_finite_share}};
      payload["timing"] = {{"search_s", st.search_s}, {"verify_s", st.verify_s}, {"cost_s", st.cost_s}};
      db.put("INSERT OR REPLACE INTO roots(idx, key, payload) VALUES(?, ?, ?)", mine[j], r.key, payload.dump());
      ++n;
      if (o.progress) std::cerr << fmt::format("\r[generate] worker {} finished {} ({} roots)   ", k, r.key, n) << std::flush;
    }
    return 0;
  };
  int J = std::max(1, std::min(o.jobs, int(mine.size())));
  bool stopped = false;
  if (!mine.empty()) {
    // A crashed worker (exit code -1 or 1) leaves roots undone: they are finished serially below
    // (a root that crashes again aborts the run with a clear error).
    for (int rc : run_workers(J, [&](int k) { return run_worker(k, J, o.stop_after); }))
      if (rc == 3) stopped = true;
  }
  if (o.progress) std::cerr << "\n";
  if (!stopped) {
    std::set<int> have;
    for (int i : open_checkpoint(rank_db, fp)) have.insert(i);
    std::vector<int> left;
    for (int i : mine)
      if (!have.count(i)) left.push_back(i);
    mine = left;
    run_worker(0, 1, -1);
  }
  // Rank 0 merges what the ranks finished into OUT/checkpoint.sqlite.
  if (distributed) {
    std::vector<std::string> rows;
    for (auto& [i, payload] : Db(rank_db).done())
      if (!merged_before.count(i)) rows.push_back(std::to_string(i) + "\t" + payload);
    rows = cluster.gather(std::move(rows));
    if (lead) {
      Db db(merged_db);
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
  if (lead) done = Db(merged_db).done();
  sum.roots_done = lead ? int(done.size()) : sum.roots_resumed + int(mine.size());
  if (stopped_anywhere) {
    sum.complete = false;
    sum.wall_s = secs(t0);
    return sum;
  }
  if (lead && int(done.size()) < int(roots.size())) throw std::runtime_error("checkpoint: roots missing after the search");
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

  // ---- gather, filter, split ----
  auto te = Clock::now();
  std::vector<std::string> families;
  for (const auto& r : roots) families.push_back(r.family);
  std::sort(families.begin(), families.end());
  families.erase(std::unique(families.begin(), families.end()), families.end());
  std::set<std::string> eval_fams;
  if (families.size() >= 2 && o.eval_fraction > 0) {
    // Whole families, in a seeded order, while the eval share of roots stays within eval_fraction
    // (at least one family, never all of them).
    std::map<std::string, int> roots_of;
    for (const auto& r : roots) roots_of[r.family]++;
    double budget = o.eval_fraction * double(roots.size());
    int taken = 0;
    auto fam_order = strategies::choose_indices(families.size(), families.size(), strategies::mix_seed(o.seed, 0xe7a1));
    for (size_t i : fam_order) {
      if (eval_fams.size() + 1 >= families.size()) break;
      int n = roots_of[families[i]];
      if (double(taken + n) > budget) continue;
      eval_fams.insert(families[i]);
      taken += n;
    }
    if (eval_fams.empty()) eval_fams.insert(families[fam_order.front()]);
  }

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
    root_stats.push_back({{"key", roots[size_t(i)].key}, {"family", roots[size_t(i)].family},
                          {"cost_estimate", root_cost(roots[size_t(i)].program)},
                          {"search", p["stats"]}, {"error", p["error"]}});
    if (p["stats"].value("root_inconclusive", false))
      inconclusive_roots.push_back({{"key", roots[size_t(i)].key}, {"finite_share", p["stats"]["root_finite_share"]}});
    for (auto& r : p["records"]) recs.push_back(std::move(r));
  }
  std::map<std::string, int> drops;
  std::set<std::string> seen_hash;
  std::vector<char> keep(recs.size(), 1);
  for (size_t i = 0; i < recs.size(); ++i) {
    auto& r = recs[i];
    // Drop anything that failed a check.
    bool ok = true;
    for (const auto& a : r["answers"])
      if (!a["verification"]["equivalent"].get<bool>() || a["verification"]["class"] == "failed") ok = false;
    if (!ok) { keep[i] = 0; drops["failed"]++; continue; }
    if (r["kind"] == "single") {
      const auto& a = r["answers"][0];
      std::string h = a["result_hash"];
      if (seen_hash.count(h)) { keep[i] = 0; drops["duplicate"]++; continue; }
      seen_hash.insert(h);
      std::string s = a["strategy"];
      if (!r["steps_so_far"].empty()) {
        std::string last = r["steps_so_far"].back()["strategy"];
        auto inv = inverses().find(s);
        if (inv != inverses().end() && inv->second == last) { keep[i] = 0; drops["inverse_of_previous"]++; continue; }
      }
      if (trivial_strategies().count(s) && a["label"] != "improving") {
        interp::Rng rng(strategies::mix_seed(o.seed, fnv(h)));
        if (rng.uniform() >= o.trivial_keep) { keep[i] = 0; drops["trivial_downweighted"]++; continue; }
      }
    }
  }
  // Per-strategy caps, applied in a seeded order so every root gets its chance.
  {
    auto order = strategies::choose_indices(recs.size(), recs.size(), strategies::mix_seed(o.seed, 0xca9));
    std::map<std::string, int> count;
    for (size_t i : order) {
      if (!keep[i] || recs[i]["kind"] != "single") continue;
      std::string s = recs[i]["answers"][0]["strategy"];
      if (++count[s] > o.per_strategy_cap) { keep[i] = 0; drops["per_strategy_cap"]++; }
    }
  }
  // Multi-answer records: at most multi_per_strategy_cap appearances per strategy, in a seeded
  // order. An over-cap answer is removed; the record goes when its first answer (the one its
  // facts describe) is over cap or fewer than 2 answers remain.
  {
    auto order = strategies::choose_indices(recs.size(), recs.size(), strategies::mix_seed(o.seed, 0x3a17));
    std::map<std::string, int> count;
    for (size_t i : order) {
      if (!keep[i] || recs[i]["kind"] != "multi") continue;
      json& answers = recs[i]["answers"];
      std::vector<char> over(answers.size(), 0);
      int left = 0;
      for (size_t k = 0; k < answers.size(); ++k) {
        over[k] = count[answers[k]["strategy"].get<std::string>()] >= o.multi_per_strategy_cap;
        left += !over[k];
      }
      if (over[0] || left < 2) { keep[i] = 0; drops["multi_per_strategy_cap"]++; continue; }
      json kept = json::array();
      for (size_t k = 0; k < answers.size(); ++k) {
        if (over[k]) { drops["multi_answer_over_cap"]++; continue; }
        count[answers[k]["strategy"].get<std::string>()]++;
        kept.push_back(answers[k]);
      }
      answers = kept;
    }
  }

  // ---- measure the kept records on the CPU backend (dataset/measurement.h) ----
  MeasureSummary meas;
  if (o.measured) {
    meas = measure_kept(recs, keep, o, cluster);
    if (meas.dropped_records) drops["measure_failed"] = meas.dropped_records;
    sum.compile_s = meas.compile_s;
    sum.measure_s = meas.measure_s;
    sum.pairs_measured = meas.measured;
    sum.pairs_reused = meas.reused;
  }

  // ---- export ----
  tokenizer::BpeTokenizer tok = tokenizer::BpeTokenizer::load(tokenizer::default_qwen3_path());
  const bool steptp_layout = o.format != "public", public_layout = o.format != "steptp";
  std::string train, eval, steps, public_train, public_eval;
  std::map<std::string, int> multi_appearances;
  int multi_slots = 0;
  std::map<std::string, std::string> programs_by_hash;  // distinct programs of the kept records
  std::map<std::string, std::map<std::string, int>> per_strategy;
  std::map<std::string, int> classes, exactness, labels;
  std::vector<double> sp_parent, sp_root;
  std::vector<double> tok_train, tok_eval, tok_public_train, tok_public_eval;
  int64_t tok_cot = 0;
  std::set<std::string> covered;
  RecordStats record_stats;
  int n = 0;
  for (size_t i = 0; i < recs.size(); ++i) {
    if (!keep[i]) continue;
    json& r = recs[i];
    std::string split = eval_fams.count(r["root"]["family"].get<std::string>()) ? "eval" : "train";
    r["split"] = split;
    r["id"] = fmt::format("{:06d}", n++);
    json chat = make_chat(r, o.answer_format);
    r["cot"] = make_cot(r);
    std::string chat_line = chat.dump() + "\n";
    size_t ntok = 0;
    for (const auto& m : chat["messages"]) ntok += tok.count(m["content"].get<std::string>());
    tok_cot += int64_t(tok.count(r["cot"].get<std::string>()));
    r["tokens"] = ntok;
    if (split == "eval") { eval += chat_line; tok_eval.push_back(double(ntok)); sum.eval++; }
    else { train += chat_line; tok_train.push_back(double(ntok)); sum.train++; }
    if (public_layout) {
      json pub = make_public_chat(r);
      size_t ptok = 0;
      for (const auto& m : pub["messages"]) ptok += tok.count(m["content"].get<std::string>());
      (split == "eval" ? tok_public_eval : tok_public_train).push_back(double(ptok));
      (split == "eval" ? public_eval : public_train) += pub.dump() + "\n";
    }
    if (r["kind"] == "multi") {
      for (const auto& a : r["answers"]) multi_appearances[a["strategy"].get<std::string>()]++;
      multi_slots += int(r["answers"].size());
    }
    if (o.token_sample != 0) {
      programs_by_hash.emplace(r["root"]["hash"].get<std::string>(), r["root_program"].get<std::string>());
      programs_by_hash.emplace(r["parent_hash"].get<std::string>(), r["parent_program"].get<std::string>());
      for (const auto& a : r["answers"])
        programs_by_hash.emplace(a["result_hash"].get<std::string>(), a["result_program"].get<std::string>());
    }
    steps += r.dump() + "\n";
    record_stats.add(r);
    sum.steps++;
    (r["kind"] == "multi" ? sum.multi : sum.single)++;
    for (const auto& a : r["answers"]) {
      std::string s = a["strategy"];
      per_strategy[s][split]++;
      covered.insert(s);
      classes[a["verification"]["class"].get<std::string>()]++;
      exactness[a["exactness"].get<std::string>()]++;
      labels[a["label"].get<std::string>()]++;
      if (r["kind"] == "single") {
        sp_parent.push_back(a["cost"]["speedup_vs_parent"].get<double>());
        sp_root.push_back(a["cost"]["speedup_vs_root"].get<double>());
      }
    }
  }
  sum.strategies_covered = int(covered.size());
  json ps = json::object();
  for (auto& [s, m] : per_strategy) ps[s] = m;
  json uncovered = json::array();
  for (auto nm : strategies::strategy_names())
    if (!covered.count(std::string(nm))) uncovered.push_back(std::string(nm));
  json stats = {{"records", sum.steps},
                {"train", sum.train},
                {"eval", sum.eval},
                {"single", sum.single},
                {"multi", sum.multi},
                {"strategies_covered", sum.strategies_covered},
                {"strategies_total", strategies::kStrategyCount},
                {"strategies_uncovered", uncovered},
                {"per_strategy", ps},
                {"verification_classes", classes},
                {"exactness", exactness},
                {"labels", labels},
                {"speedup_measured", o.measured},
                {"measurement", {{"comparisons", meas.pairs}, {"failed", meas.failed},
                                 {"dropped_records", meas.dropped_records},
                                 {"dropped_answers", meas.dropped_answers}}},
                {"speedup_vs_parent", quantiles(sp_parent)},
                {"speedup_vs_root", quantiles(sp_root)},
                {"filter_drops", drops},
                {"tokens", {{"tokenizer", "qwen3"},
                            {"train", quantiles(tok_train)},
                            {"eval", quantiles(tok_eval)},
                            {"cot_total", tok_cot}}},
                {"inconclusive_roots", inconclusive_roots},
                {"roots", root_stats}};
  stats.update(record_stats.to_json());
  if (public_layout)
    stats["tokens"]["public"] = {{"train", quantiles(tok_public_train)}, {"eval", quantiles(tok_public_eval)}};
  {
    json share = json::object();
    for (const auto& [s, n] : multi_appearances)
      share[s] = {{"records", n}, {"share_of_answers", multi_slots ? std::round(1e4 * n / multi_slots) / 1e4 : 0.0}};
    stats["multi_answer"] = {{"answers", multi_slots},
                             {"per_strategy_cap", o.multi_per_strategy_cap},
                             {"trivial_max_per_set", o.multi_trivial_max},
                             {"per_strategy", share}};
  }
  if (o.token_sample != 0) {
    // A seeded sample of the distinct programs (in hash order) so the comparison stays cheap.
    std::vector<const std::string*> texts;
    for (const auto& [h, t] : programs_by_hash) texts.push_back(&t);
    size_t n = o.token_sample < 0 ? texts.size() : std::min(texts.size(), size_t(o.token_sample));
    auto pick = strategies::choose_indices(texts.size(), n, strategies::mix_seed(o.seed, 0x70c5));
    std::sort(pick.begin(), pick.end());
    std::vector<leir::Program> progs;
    for (size_t i : pick) progs.push_back(leir::program_from_text(*texts[i]));
    json cmp = compare_tokens(progs, tok);
    cmp["distinct_programs"] = texts.size();
    stats["token_comparison"] = cmp;
  }
  std::string stats_text = stats.dump(1) + "\n";
  json eval_f = json::array(), train_f = json::array();
  for (const auto& f : families) (eval_fams.count(f) ? eval_f : train_f).push_back(f);
  json inputs = json::array();
  for (const auto& r : roots)
    inputs.push_back({{"key", r.key}, {"family", r.family}, {"name", r.program.name},
                      {"hash", search::hex64(search::program_hash(r.program))}});
  json manifest = {{"tool", kVersion},
                   {"strategies_registered", strategies::all_strategies().size()},
                   {"workloads_registered", workloads::all_workloads().size()},
                   {"cost", measurement_json(o)},
                   {"options", options_json(o)},
                   {"seed", o.seed},
                   {"inputs", inputs},
                   {"split", {{"by", "workload family"}, {"train_families", train_f}, {"eval_families", eval_f}}},
                   {"counts", {{"roots", sum.roots}, {"records", sum.steps}, {"train", sum.train}, {"eval", sum.eval},
                               {"single", sum.single}, {"multi", sum.multi}}},
                   {"files", {{"steps.jsonl", search::hex64(fnv(steps))},
                              {"stats.json", search::hex64(fnv(stats_text))}}}};
  manifest["options"]["format"] = o.format;
  manifest["options"]["answer_format"] = o.answer_format == AnswerFormat::IR ? "ir" : "action";
  manifest["options"]["token_sample"] = o.token_sample;
  // Each layout's files exist only when it was asked for (no stale files of an earlier run).
  std::vector<std::pair<std::string, const std::string*>> layout_files = {
      {"train.jsonl", steptp_layout ? &train : nullptr}, {"eval.jsonl", steptp_layout ? &eval : nullptr},
      {"public_train.jsonl", public_layout ? &public_train : nullptr},
      {"public_eval.jsonl", public_layout ? &public_eval : nullptr}};
  for (const auto& [name, data] : layout_files) {
    if (data) {
      manifest["files"][name] = search::hex64(fnv(*data));
      write_atomic(out / name, *data);
    } else {
      fs::remove(out / name, ec);
    }
  }
  write_atomic(out / "steps.jsonl", steps);
  write_atomic(out / "stats.json", stats_text);
  write_atomic(out / "manifest.json", manifest.dump(1) + "\n");
  sum.stats = stats;
  sum.export_s = secs(te);
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
