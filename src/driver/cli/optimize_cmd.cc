// steptp optimize PROGRAMS... --policy llm|random|model --search chain|greedy|beam|dfs|bfs|mcts
// [budgets] [--out DIR] [--json]: LLM-guided (or baseline) optimization in the loop through the
// verification funnel (optimize/). PROGRAMS are program files (.json/.jsonl/.leir/.onnx) or a
// `generate` output's manifest.json (its eval split). The run directory keeps everything:
//   DIR/store.sqlite          answers (keyed by request), verdicts and measurements: a rerun
//                             replays them, a killed run resumes
//   DIR/events/K-NAME.jsonl   every proposal: request (prompt), answer, funnel outcome, spend
//   DIR/programs/K-NAME.json  per program: best state, tree, spend, metrics
//   DIR/metrics.json          per program and aggregated metrics
// --rescore recomputes metrics.json from the events without running anything.
// Exit 1 on invalid input; a bad answer or a failing server is a counted failure, never an error.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/progress.h"
#include "driver/cli/command.h"
#include "driver/cli/output.h"
#include "apps/dataset/reasoning.h"
#include "front/onnx/onnx_import.h"
#include "ir/leir/canonical.h"
#include "ir/leir/program_io.h"
#include "apps/optimize/metrics.h"
#include "apps/optimize/model_runner.h"
#include "apps/optimize/optimize.h"
#include "transform/sampler.h"
#include "search/tune/database.h"
#include "search/tune/machine.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace steptp::cli {
namespace {

std::string read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) throw base::Error(base::ErrorKind::Failed, "cannot read " + p.string());
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

json read_manifest(const fs::path& manifest) {
  json m = json::parse(read_file(manifest), nullptr, false);
  if (m.is_discarded() || !m.contains("split"))
    throw base::Error(base::ErrorKind::Invalid, manifest.string() + ": not a generate manifest");
  return m;
}

// The OpenMP threads the dataset's records were timed with (`generate --measure-threads`), or none.
std::optional<int> manifest_threads(const json& manifest) {
  const json* t = manifest.contains("options") ? &manifest["options"] : nullptr;
  if (!t || !t->contains("measure_threads") || !(*t)["measure_threads"].is_number_integer()) return std::nullopt;
  return (*t)["measure_threads"].get<int>();
}

// The answer format the dataset's records teach (`generate --answer-format`), or none.
std::optional<std::string> manifest_answer_format(const json& manifest) {
  const json* t = manifest.contains("options") ? &manifest["options"] : nullptr;
  if (!t || !t->contains("answer_format") || !(*t)["answer_format"].is_string()) return std::nullopt;
  return (*t)["answer_format"].get<std::string>();
}

// Adopts a manifest's setting (`value`, when it has one) for the run: every manifest of the run
// must agree, else the flag decides.
template <class T>
void agree(std::optional<T>& agreed, const std::optional<T>& value, const std::string& manifest, const char* what,
           const char* flag) {
  if (!value) return;
  if (agreed && *agreed != *value)
    throw base::Error(base::ErrorKind::BadRequest, fmt::format("{}: its records' {} is {}, another manifest's {}: give {}",
                                                               manifest, what, *value, *agreed, flag));
  agreed = value;
}

// The eval split of a `generate` output (its manifest read by read_manifest): the distinct roots
// of its eval records, in order.
std::vector<leir::Program> eval_roots(const fs::path& manifest) {
  fs::path steps = manifest.parent_path() / "steps.jsonl";
  std::ifstream f(steps);
  if (!f) throw base::Error(base::ErrorKind::Failed, "cannot read " + steps.string() + " (next to the manifest)");
  std::vector<leir::Program> out;
  std::set<std::string> seen;
  std::string line;
  for (int n = 1; std::getline(f, line); ++n) {
    if (line.empty()) continue;
    json r = json::parse(line, nullptr, false);
    if (r.is_discarded())
      throw base::Error(base::ErrorKind::Invalid, fmt::format("{}:{}: not JSON", steps.string(), n));
    if (r.value("split", "") != "eval" || !seen.insert(r["root"]["hash"].get<std::string>()).second) continue;
    leir::Program p = leir::program_from_text(r["root_program"].get<std::string>(), steps.string());
    p.name = r["root"].value("name", p.name);
    out.push_back(std::move(p));
  }
  return out;
}

std::string file_stem(size_t k, const std::string& name) {
  std::string s;
  for (char c : name) s += std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' ? c : '_';
  return fmt::format("{:03d}-{}", k, s.empty() ? "program" : s.substr(0, 60));
}

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

RegisterCommand optimize_cmd{{"optimize", "optimize programs with an LLM (or a baseline policy) in the loop",
                              [](CLI::App& sub) {
  struct Opts {
    std::vector<std::string> inputs;
    std::string out = "optimize-out", store, policy = "llm", search = "greedy", measure = "cpu", answer_format = "action";
    int limit = 0, threads = 1;
    uint64_t seed = 0;
    double min_time = 0.05;
    optimize::OptimizeOptions opt;
    optimize::LlmOptions llm;
    bool single_turn = false, json = false, rescore = false, quiet = false;
  };
  auto o = std::make_shared<Opts>();
  o->opt.budget.measured = 32;
  sub.add_option("PROGRAMS", o->inputs, "program files (.json/.jsonl/.leir/.onnx) or a generate manifest.json (its eval split)");
  sub.add_option("--limit", o->limit, "use the first N programs (0: all)")->check(CLI::NonNegativeNumber);
  sub.add_option("--policy", o->policy, "llm | random | model (the tuner's cost model)")
      ->check(CLI::IsMember({"llm", "random", "model"}))->capture_default_str();
  sub.add_option("--search", o->search, "chain | greedy | beam | dfs | bfs | mcts")
      ->check(CLI::IsMember({"chain", "greedy", "beam", "dfs", "bfs", "mcts"}))->capture_default_str();
  sub.add_option("--out", o->out, "run directory")->capture_default_str();
  sub.add_option("--store", o->store, "answers/verdicts/measurements store (default OUT/store.sqlite)");
  sub.add_option("--seed", o->seed, "seed of every choice")->capture_default_str();
  auto& so = o->opt.search;
  sub.add_option("--depth", so.depth, "steps from the root")->check(CLI::PositiveNumber)->capture_default_str();
  sub.add_option("--proposals", so.proposals, "proposals per expansion (greedy, beam, dfs, bfs)")
      ->check(CLI::PositiveNumber)->capture_default_str();
  sub.add_option("--beam", so.beam, "beam width")->check(CLI::PositiveNumber)->capture_default_str();
  sub.add_option("--nodes", so.nodes, "expansions (dfs, bfs) or iterations (mcts)")->check(CLI::PositiveNumber)->capture_default_str();
  sub.add_option("--retries", so.retries, "failed proposals per state before it is given up")
      ->check(CLI::PositiveNumber)->capture_default_str();
  sub.add_option("--uct-c", so.uct_c, "MCTS exploration constant")->capture_default_str();
  sub.add_option("--widening-c", so.widening_c, "MCTS progressive widening: children <= c*(visits+1)^alpha")->capture_default_str();
  sub.add_option("--widening-alpha", so.widening_alpha, "MCTS progressive widening exponent")->capture_default_str();
  sub.add_flag("--single-turn", o->single_turn, "no feedback on the previous failed proposal in the prompt");
  auto& b = o->opt.budget;
  sub.add_option("--max-calls", b.calls, "LLM requests per program (0: unlimited)")->check(CLI::NonNegativeNumber)->capture_default_str();
  sub.add_option("--max-tokens-total", b.tokens, "completion tokens per program (0: unlimited)")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  sub.add_option("--max-measured", b.measured, "measured candidates per program (0: unlimited)")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  sub.add_option("--time-limit", b.wall_s, "seconds per program (0: none; the only budget that depends on the clock)")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  sub.add_option("--measure", o->measure, "cpu (time candidates) | model (the analytic estimate: quick, untimed)")
      ->check(CLI::IsMember({"cpu", "model"}))->capture_default_str();
  auto* threads = sub.add_option("--threads", o->threads,
                                 "OpenMP threads of timed kernels (0: all cores; default for a manifest: its records' "
                                 "--measure-threads, capped at this machine's cores; else 1)")
                      ->capture_default_str();
  sub.add_option("--min-time", o->min_time, "seconds per interleaved comparison")->capture_default_str();
  sub.add_option("--faster-ratio", o->opt.funnel.faster_ratio, "speedup over the parent that counts as faster")->capture_default_str();
  auto& c = o->llm.chat;
  sub.add_option("--base-url", c.base_url, "Chat Completions base URL (env OPENAI_BASE_URL)");
  sub.add_option("--model", c.model, "model name (env STEPTP_LLM_MODEL)");
  sub.add_option("--api-key", c.api_key, "API key (env OPENAI_API_KEY)");
  sub.add_option("--temperature", c.temperature)->capture_default_str();
  sub.add_option("--top-p", c.top_p)->capture_default_str();
  sub.add_option("--n", c.n, "choices per request")->check(CLI::PositiveNumber)->capture_default_str();
  sub.add_option("--max-tokens", c.max_tokens, "completion tokens per request")->check(CLI::PositiveNumber)->capture_default_str();
  sub.add_option("--timeout", c.timeout_s, "seconds per HTTP attempt")->check(CLI::PositiveNumber)->capture_default_str();
  sub.add_option("--http-retries", c.retries, "retries on 429/5xx/timeouts (exponential backoff)")->capture_default_str();
  sub.add_option("--backoff", c.backoff_s, "first backoff in seconds (doubles per retry)")->capture_default_str();
  sub.add_option("--concurrency", o->llm.concurrency, "requests in flight at once")->check(CLI::PositiveNumber)->capture_default_str();
  auto* answer_format = sub.add_option("--answer-format", o->answer_format,
                                       "ir (whole program) | action (strategy, site handle, params) | choice (the "
                                       "number of a menu option); default for a manifest: its records' format")
                            ->check(CLI::IsMember({"ir", "action", "choice"}))
                            ->capture_default_str();
  sub.add_flag("--rescore", o->rescore, "recompute OUT/metrics.json from OUT/events without running");
  sub.add_flag("--json", o->json, "print metrics.json's object on stdout");
  sub.add_flag("--quiet", o->quiet,
               "no progress on stderr (by default a status line on a terminal; otherwise a line per finished "
               "program, at most one every few seconds, with elapsed time and ETA, and a final line)");
  return [o, threads, answer_format]() -> int {
    const fs::path out(o->out);
    std::vector<std::string> names;
    std::string first_transport_error;  // of an llm run: what the first failed request said
    int timed_threads = 0;              // of a run (not a rescore): the threads its kernels were timed with
    std::vector<json> per;
    if (o->rescore) {
      if (!fs::is_directory(out / "events"))
        throw base::Error(base::ErrorKind::Invalid, o->out + " has no events/ folder");
      std::vector<fs::path> files;
      for (const auto& e : fs::directory_iterator(out / "events")) files.push_back(e.path());
      std::sort(files.begin(), files.end());
      for (const auto& f : files) {
        json events = json::array();
        std::ifstream in(f);
        std::string line;
        while (std::getline(in, line))
          if (!line.empty()) events.push_back(json::parse(line));
        names.push_back(f.stem().string());
        per.push_back(optimize::program_metrics(events));
      }
    } else {
      if (o->inputs.empty()) throw base::Error(base::ErrorKind::BadRequest, "no PROGRAMS given");
      std::vector<leir::Program> programs;
      // A manifest's eval roots are timed as its records were (a dataset timed on all cores says so
      // in every prompt; timing its roots on one thread compared other programs: batch_norm's
      // path gave 100x there and 1.0x here).
      std::optional<int> dataset_threads;
      std::optional<std::string> dataset_format;
      for (const auto& in : o->inputs) {
        const bool manifest = fs::path(in).filename() == "manifest.json";
        const json m = manifest ? read_manifest(in) : json();
        if (manifest && threads->count() == 0) agree(dataset_threads, manifest_threads(m), in, "timing threads", "--threads");
        // A model trained on a dataset is asked in the form its records answer in.
        if (manifest && answer_format->count() == 0)
          agree(dataset_format, manifest_answer_format(m), in, "answer format", "--answer-format");
        auto ps = manifest ? eval_roots(in) : onnx_import::read_programs_any(in);
        for (auto& p : ps) programs.push_back(std::move(p));
      }
      if (dataset_threads) o->threads = std::min(*dataset_threads, tune::core_count());
      if (dataset_format) o->answer_format = *dataset_format;
      if (o->limit > 0 && programs.size() > size_t(o->limit)) programs.resize(size_t(o->limit));
      fs::create_directories(out / "events");
      fs::create_directories(out / "programs");
      tune::ObservationStore store(o->store.empty() ? (out / "store.sqlite").string() : o->store);
      auto& opt = o->opt;
      opt.search.kind = optimize::search_kind_from(o->search);
      opt.search.multi_turn = !o->single_turn;
      auto& chat = o->llm.chat;
      if (chat.base_url == optimize::ChatOptions{}.base_url) chat.base_url = env_or("OPENAI_BASE_URL", chat.base_url);
      if (chat.model == optimize::ChatOptions{}.model) chat.model = env_or("STEPTP_LLM_MODEL", chat.model);
      if (chat.api_key.empty()) chat.api_key = env_or("OPENAI_API_KEY", "");
      o->llm.format = dataset::answer_format_from(o->answer_format);
      const tune::Machine machine = tune::this_machine(o->threads);
      timed_threads = machine.threads;
      o->llm.machine = dataset::machine_json(machine);
      o->llm.speedups_measured = o->measure != "model";
      // Programs of --measure model can take well under a second: a log gets a line every few seconds at most.
      Progress progress("optimize", progress_style(o->quiet), 3.0);
      progress.stage_start("run", "program", int(programs.size()), 0,
                           fmt::format("{} programs, policy {}, search {}", programs.size(), o->policy, o->search));
      for (size_t k = 0; k < programs.size(); ++k) {
        const leir::Program& root = programs[k];
        const uint64_t seed = base::mix_seed(o->seed, leir::program_hash(root));
        opt.funnel.verify_seed = base::mix_seed(seed, 0x7e);
        std::unique_ptr<tune::Runner> runner;
        if (o->measure == "model") runner = std::make_unique<optimize::ModelRunner>(o->threads);
        else
          runner = std::make_unique<tune::CpuRunner>(
              backend::MeasureOptions{.warmup = 2, .min_time_s = o->min_time, .min_repeats = 5, .max_time_s = 2.0,
                                      .stable_rel = 0.02, .threads = machine.threads},
              base::mix_seed(seed, 0x1b));
        std::unique_ptr<optimize::Policy> policy;
        if (o->policy == "random") policy = optimize::make_random_policy(seed);
        else if (o->policy == "model") policy = optimize::make_model_policy(seed, o->threads);
        else policy = optimize::make_llm_policy(o->llm, store);
        json r = optimize::optimize_program(root, *policy, store, *runner, opt);
        std::string stem = file_stem(k, root.name);
        std::string ev;
        for (const auto& e : r["events"]) {
          ev += e.dump() + "\n";
          if (first_transport_error.empty() && !e.value("error", "").empty()) first_transport_error = e["error"];
        }
        write_result(out / "events" / (stem + ".jsonl"), ev);
        r.erase("events");
        write_result(out / "programs" / (stem + ".json"), r.dump(1) + "\n");
        progress.advance(fmt::format("{} done (best speedup {:.2f}x)", root.name,
                                     r["metrics"]["best_speedup"].get<double>()));
        names.push_back(stem);
        per.push_back(r["metrics"]);
      }
      progress.stage_end();
      progress.finish(fmt::format("{} programs -> {}", programs.size(), o->out));
    }
    json agg = optimize::aggregate_metrics(per);
    json per_j = json::object();
    for (size_t i = 0; i < names.size(); ++i) per_j[names[i]] = per[i];
    json metrics = {{"policy", o->policy},   {"search", o->search},           {"measure", o->measure},
                    {"threads", timed_threads}, {"answer_format", o->answer_format}, {"aggregate", agg},
                    {"programs", per_j}};
    if (o->rescore)
      for (const char* run_only : {"policy", "search", "measure", "threads", "answer_format"}) metrics.erase(run_only);
    write_result(out / "metrics.json", metrics.dump(1) + "\n");
    if (o->json) std::cout << metrics.dump() << "\n";
    else std::cout << optimize::metrics_table(names, per, agg);
    // A server that answered no request at all (nothing listening, a wrong URL or port) is a set-up error, not
    // a model that failed every proposal: the counts stay written, the exit status and stderr say so.
    const int64_t calls = agg["cost"]["calls"].get<int64_t>();
    if (!o->rescore && o->policy == "llm" && calls > 0 && agg["funnel"].value("transport_failures", 0) == calls) {
      std::cerr << fmt::format("optimize: error: no answer from the Chat Completions server at {}: all {} requests "
                               "failed ({})\n",
                               o->llm.chat.base_url, calls, first_transport_error);
      return 1;
    }
    return 0;
  };
}}};

}  // namespace
}  // namespace steptp::cli
