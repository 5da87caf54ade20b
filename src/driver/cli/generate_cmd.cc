// steptp generate: the Step-TP dataset end to end (apps/dataset/dataset.h).
#include <iostream>
#include <memory>
#include <set>
#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include "base/error.h"
#include "base/progress.h"
#include "driver/cli/command.h"
#include "apps/dataset/cluster.h"
#include "apps/dataset/dataset.h"
#include "apps/dataset/profile.h"
#include "driver/mpi/launch.h"

namespace steptp::cli {
namespace {

RegisterCommand generate_cmd{{"generate", "generate the step-level training dataset (train/eval/steps/manifest/stats)",
                     [](CLI::App& sub) {
  auto o = std::make_shared<dataset::GenerateOptions>();
  auto size = std::make_shared<std::string>("tiny");
  auto mode = std::make_shared<std::string>("beam");
  auto json_out = std::make_shared<bool>(false);
  auto profile = std::make_shared<std::string>("quick");
  // A repeated option takes its last value, so a script's defaults can be overridden by the
  // arguments it passes on (scripts/generate.sh "$@").
  sub.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  sub.add_option("--profile", *profile,
                 "preset of scale and realism (options given explicitly win): quick (tiny shapes, beam search), "
                 "tuned (bench shapes in f32, steptp tune per root, all cores), paper (tuned, ~6,300 roots) — "
                 "docs/dataset.md")
      ->check(CLI::IsMember({"quick", "tuned", "paper"}))
      ->capture_default_str();
  sub.add_option("--out", o->out_dir, "output folder")->capture_default_str();
  sub.add_option("--seed", o->seed, "seed of every choice")->capture_default_str();
  sub.add_option("--size", *size, "workload size class: tiny|small|default|bench")->capture_default_str();
  sub.add_option("--programs", o->programs, "built-in workloads to use (-1 = all)")->capture_default_str();
  sub.add_option("--composites", o->composites, "random composite programs")->capture_default_str();
  sub.add_option("--input", o->input, "extra programs (.jsonl/.json/.leir, or an .onnx model)");
  auto no_examples = std::make_shared<bool>(false);
  sub.add_flag("--no-examples", *no_examples, "do not add the programs of ../shared/examples");
  auto trajectories = std::make_shared<std::string>("search");
  sub.add_option("--trajectories", *trajectories,
                 "where trajectories come from: search (the analytic beam search) or tune (`steptp tune` "
                 "per root, measurement in the loop; records from its measured search tree)")
      ->check(CLI::IsMember({"search", "tune"}))
      ->capture_default_str();
  sub.add_option("--tune-trials", o->tune_trials, "measured candidates per root with --trajectories tune")
      ->capture_default_str();
  sub.add_option("--target", o->target,
                 "cpu (measured here) or cuda (prompts name the GPU, results must lower to CUDA; unmeasured "
                 "without a GPU: needs --cost model)")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  sub.add_option("--search", *mode, "greedy|beam")->capture_default_str();
  sub.add_option("--beam", o->beam, "beam width")->capture_default_str();
  sub.add_option("--depth", o->depth, "maximum steps per trajectory")->capture_default_str();
  sub.add_option("--jobs", o->jobs, "worker processes (output identical for any value)")->capture_default_str();
  sub.add_option("--sites-per-strategy", o->sites_per_strategy, "sites sampled per strategy and state")->capture_default_str();
  sub.add_option("--params-per-site", o->params_per_site, "parameter choices sampled per site")->capture_default_str();
  sub.add_option("--verify-trials", o->verify_trials, "verifier input sets per candidate")->capture_default_str();
  sub.add_option("--per-strategy-cap", o->per_strategy_cap, "max single-answer records per strategy")->capture_default_str();
  sub.add_option("--non-improving-per-state", o->non_improving_per_state, "max non-improving steps kept per state")->capture_default_str();
  sub.add_option("--non-improving-per-root", o->non_improving_per_root,
                 "max non-improving steps kept per root beside a tuned path (-1: no limit)")->capture_default_str();
  sub.add_option("--per-strategy-per-state", o->per_strategy_per_state, "max steps of one strategy kept per state")->capture_default_str();
  sub.add_option("--trivial-keep", o->trivial_keep, "keep probability of trivially applicable strategies")->capture_default_str();
  sub.add_option("--multi-answer-max", o->multi_answer_max, "answers per multi-answer record")->capture_default_str();
  sub.add_option("--multi-trivial-max", o->multi_trivial_max,
                 "max trivially applicable strategies per multi-answer set")->capture_default_str();
  sub.add_option("--multi-per-strategy-cap", o->multi_per_strategy_cap,
                 "max multi-answer records a strategy appears in")->capture_default_str();
  sub.add_option("--format", o->format,
                 "chat layout: steptp (train/eval.jsonl), public (public_train/public_eval.jsonl: the "
                 "reconstructed public Step-TP layout) or both")->capture_default_str();
  auto answer_format = std::make_shared<std::string>("ir");
  sub.add_option("--answer-format", *answer_format,
                 "answers of train/eval.jsonl: ir (the transformed program, Step-TP), action "
                 "({\"strategy\",\"site\": handle,\"params\"}, the prompt listing each strategy's sites by handle) "
                 "or choice ({\"choice\": N}, the same list with its options numbered)")
      ->check(CLI::IsMember({"ir", "action", "choice"}))
      ->capture_default_str();
  sub.add_option("--token-sample", o->token_sample,
                 "programs in the LEIR vs TVMScript/C++/CUDA token comparison of stats.json (-1 = all, 0 = off)")
      ->capture_default_str();
  sub.add_option("--eval-fraction", o->eval_fraction,
                 "share of roots held out for eval: within every family of 3+ roots, plus whole smaller families")
      ->capture_default_str();
  auto cost = std::make_shared<std::string>("measured");
  sub.add_option("--cost", *cost,
                 "measured: time every exported step on the CPU backend vs its parent and the root "
                 "(interleaved; facts kept in the measurement store); model: analytic cost model only")
      ->capture_default_str();
  sub.add_option("--measure-min-time", o->measure_min_time, "seconds per interleaved comparison")->capture_default_str();
  sub.add_option("--measure-threads", o->measure_threads, "OpenMP threads of timed kernels")->capture_default_str();
  sub.add_option("--min-root-ms", o->min_root_ms,
                 "bench shapes, measured: redraw a root whose naive program runs below this on one core here "
                 "(0 = off; the tuned profiles use 1)")
      ->capture_default_str();
  sub.add_option("--max-root-ms", o->max_root_ms,
                 "bench shapes, measured: leave out a root whose naive program runs above this on one core here "
                 "(0 = no ceiling; the tuned profiles use 50)")
      ->capture_default_str();
  sub.add_option("--min-headroom", o->min_headroom,
                 "bench shapes, measured: leave out a root whose naive one-core time is below this many times an "
                 "all-core copy of its inputs and outputs, which bounds any speedup over it (0 = off; the tuned "
                 "profiles use 16)")
      ->capture_default_str();
  sub.add_option("--improve-threshold", o->improve_threshold,
                 "measured speedup over the parent from which a step is labelled improving")->capture_default_str();
  sub.add_option("--measurements", o->measurements,
                 "measurement store (SQLite; default OUT/measurements.sqlite): runs given the same store "
                 "write identical bytes");
  sub.add_option("--stop-after", o->stop_after, "testing: stop after N finished roots (resume later)");
  sub.add_flag("--json", *json_out, "print a JSON summary");
  auto quiet = std::make_shared<bool>(false);
  sub.add_flag("--quiet", *quiet,
               "no progress on stderr (by default a status line on a terminal; otherwise a line per stage and "
               "per finished root with elapsed time and ETA, and a summary line)");
  CLI::App* sub_app = &sub;  // the command outlives its callback: which options were given
  return [=]() -> int {
    auto sc = workloads::parse_size_class(*size);
    if (!sc) {
      std::cerr << "steptp generate: --size must be tiny, small, default or bench (got '" << *size << "')\n";
      return 2;
    }
    o->size = *sc;
    o->answer_format = dataset::answer_format_from(*answer_format);
    o->trajectories = *trajectories == "tune" ? dataset::Trajectories::Tune : dataset::Trajectories::Search;
    if (*mode == "greedy") o->mode = search::Mode::Greedy;
    else if (*mode == "beam") o->mode = search::Mode::Beam;
    else {
      std::cerr << "steptp generate: --search must be greedy or beam (got '" << *mode << "')\n";
      return 2;
    }
    if (*cost == "measured") o->measured = true;
    else if (*cost == "model") o->measured = false;
    else {
      std::cerr << "steptp generate: --cost must be measured or model (got '" << *cost << "')\n";
      return 2;
    }
    if (*no_examples) o->examples = false;
    {
      std::set<std::string> given;
      for (const CLI::Option* opt : sub_app->get_options())
        if (opt->count() > 0 && !opt->get_lnames().empty()) given.insert(opt->get_lnames().front());
      dataset::apply_profile(*dataset::find_profile(*profile), *o, given);
    }
    // Under mpirun every rank runs this; rank 0 writes the dataset and reports (docs/mpi.md).
    std::unique_ptr<dataset::Cluster> cluster;
    dataset::GenerateSummary s;
    int rc = 0;
    // Only rank 0 reports (counting its own share of the roots when distributed).
    std::unique_ptr<Progress> progress;
    try {
      cluster = mpi::join_cluster();
      progress = std::make_unique<Progress>("generate",
                                            cluster->rank() == 0 ? progress_style(*quiet) : ProgressStyle::Off);
      o->progress = progress.get();
      s = dataset::generate(*o, *cluster);
    } catch (const std::exception& e) {
      // The exit code is the kind's (base/error.h); a usage error is the same on every rank.
      const base::ErrorKind kind = base::kind_of(e);
      const bool rank_prefix = kind != base::ErrorKind::BadRequest && cluster && cluster->size() > 1;
      std::cerr << "steptp generate: " << (rank_prefix ? fmt::format("rank {}: ", cluster->rank()) : "") << e.what()
                << "\n";
      rc = base::exit_code(kind);
    }
    if (rc) {
      if (cluster) mpi::abort_all(*cluster, rc);  // the other ranks would wait for this one
      return rc;
    }
    if (!s.complete) {
      if (cluster->rank() == 0)
        std::cerr << fmt::format("steptp generate: stopped after {} of {} roots (checkpointed; rerun to resume)\n",
                                 s.roots_done, s.roots);
      return 3;
    }
    if (cluster->rank() != 0) return 0;
    nlohmann::json j = dataset::summary_json(s, o->out_dir);
    const auto& inconclusive = s.stats["inconclusive_roots"];
    if (!inconclusive.empty()) {
      std::string keys;
      for (const auto& r : inconclusive) keys += (keys.empty() ? "" : ", ") + r["key"].get<std::string>();
      std::cerr << fmt::format("steptp generate: {} root(s) gave the verifier no evidence (outputs mostly NaN/inf on "
                               "every input set), so no step of them is verified: {} (stats.json inconclusive_roots)\n",
                               inconclusive.size(), keys);
    }
    progress->finish(fmt::format("{} roots ({} resumed), {} records ({} train, {} eval) -> {}", s.roots,
                                 s.roots_resumed, s.steps, s.train, s.eval, o->out_dir));
    if (*json_out) std::cout << j.dump() << "\n";
    else
      std::cout << fmt::format("{} records ({} train, {} eval; {} multi-answer) from {} programs, {} of 43 strategies, "
                               "{:.1f}s wall ({:.0f} records/min) -> {}\n",
                               s.steps, s.train, s.eval, s.multi, s.roots, s.strategies_covered, s.wall_s,
                               j["records_per_minute"].get<double>(),
                               o->out_dir);
    return 0;
  };
}}};

}  // namespace
}  // namespace steptp::cli
