// steptp tune FILE [--trials N] [--time-limit S] [--threads T] [--seed S] [--out DIR] [--measure cpu|model]
//             [--cost-model FILE] [--no-tasks] [--json]:
// measurement-guided search from one program (search/tune/tuner.h; a program of several tasks is
// tuned task by task, search/tune/task_scheduler.h); `--measure model` ranks by the
// analytic estimate instead of timings (apps/optimize/model_runner.h: deterministic, for checks). Writes
// DIR/best.json (the best program, LEIR.md §1 JSON), DIR/trajectory.json (its steps from the root,
// each with the strategy, stable site address, typed parameters and step timings), DIR/result.json
// (the deterministic summary: times, speedup, trials, every trial, cost-model quality) and keeps
// every measurement in DIR/measurements.sqlite (or --store PATH). Progress on stderr
// (base/progress.h: a status line on a TTY, otherwise a line per round every few seconds; --quiet:
// none); --json prints result.json's object plus "wall_s" and "store" (reused / measured now), the
// only fields that depend on the clock or the store's history. Exit 1 on invalid input.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/progress.h"
#include "driver/cli/command.h"
#include "front/onnx/onnx_import.h"
#include "ir/leir/program_io.h"
#include "apps/optimize/model_runner.h"
#include "search/tune/task_scheduler.h"
#include "search/tune/tuner.h"

namespace fs = std::filesystem;

namespace steptp::cli {
namespace {

void write_file(const fs::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::binary);
  f << text;
  if (!f.flush()) throw base::Error(base::ErrorKind::Failed, "cannot write " + p.string());
}

RegisterCommand tune_cmd{{"tune", "search for a faster program with measurements in the loop", [](CLI::App& sub) {
  struct Opts {
    std::string file, out = "tune-out", store, measure = "cpu", cost_model;
    int trials = 64, threads = 0;
    double time_limit = 0;
    uint64_t seed = 0;
    bool json = false, quiet = false, no_tasks = false;
  };
  auto o = std::make_shared<Opts>();
  sub.add_option("FILE", o->file, "root program (.json or .leir), one program")->required();
  sub.add_option("--trials", o->trials, "measured candidates (verified or not: each tried candidate counts; default 64)")
      ->check(CLI::PositiveNumber);
  sub.add_option("--time-limit", o->time_limit, "stop after this many seconds (checked between rounds; default none)")
      ->check(CLI::NonNegativeNumber);
  sub.add_option("--threads", o->threads, "OpenMP threads of the timed kernels (default: all cores)")
      ->check(CLI::NonNegativeNumber);
  sub.add_option("--seed", o->seed, "search seed (same seed + same store: identical output)");
  sub.add_option("--out", o->out, "output folder (default tune-out)");
  sub.add_option("--store", o->store, "measurement store (default OUT/measurements.sqlite)");
  sub.add_option("--measure", o->measure,
                 "cpu (time candidates) | model (the analytic estimate: deterministic and untimed, its figures are "
                 "model units)")
      ->check(CLI::IsMember({"cpu", "model"}))
      ->capture_default_str();
  sub.add_flag("--no-tasks", o->no_tasks,
               "tune the whole program as one root, even when it splits into several tasks (by default its heavy "
               "nests are tuned as tasks with trials allocated by the task scheduler, docs/tune.md)");
  sub.add_option("--cost-model", o->cost_model,
                 "pre-trained cost model (`steptp cost-model train`, this machine's kind): ranks candidates from the "
                 "first round and is fine-tuned on this root's measurements (default: the analytic prior, then a "
                 "model trained from scratch)");
  sub.add_flag("--json", o->json, "print one JSON object on stdout");
  sub.add_flag("--quiet", o->quiet,
               "no progress on stderr (by default a status line on a terminal; otherwise a line per tuner round, "
               "at most one every few seconds, with elapsed time and ETA, and a final line)");
  return [o]() -> int {
    auto ps = onnx_import::read_programs_any(o->file);
    if (ps.size() != 1)
      throw base::Error(base::ErrorKind::Invalid,
                        fmt::format("{} holds {} programs; tune takes one", o->file, ps.size()));
    std::error_code ec;
    fs::create_directories(o->out, ec);
    if (ec || !fs::is_directory(o->out))
      throw base::Error(base::ErrorKind::Failed, "cannot create output folder " + o->out);
    tune::TuneOptions t;
    t.trials = o->trials;
    t.time_limit_s = o->time_limit;
    t.threads = o->threads;
    t.seed = o->seed;
    t.cost_model = o->cost_model;
    t.store_path = o->store.empty() ? (fs::path(o->out) / "measurements.sqlite").string() : o->store;
    std::unique_ptr<tune::Runner> model;
    if (o->measure == "model") t.runner = (model = std::make_unique<optimize::ModelRunner>(o->threads)).get();
    // Rounds can take well under a second: a log gets a line every few seconds at most.
    Progress progress("tune", progress_style(o->quiet), 3.0);
    progress.stage_start("search", "trials", t.trials, 0, fmt::format("{}, {} trials", ps.front().name, t.trials));
    auto r = tune::tune_program(ps.front(), t, tune::TaskOptions{.enabled = !o->no_tasks}, [&](const tune::Progress& p) {
      progress.report(p.trials,
                      fmt::format("round {}, best {:.4g} ms, speedup {:.2f}x", p.round, p.best_ms, p.speedup));
    });
    progress.stage_end();
    progress.finish(fmt::format("{}: root {:.4g} ms, best {:.4g} ms, speedup {:.2f}x after {} trials", r.root.name,
                                r.root_ms, r.best_ms, r.speedup, r.trials));
    auto result = tune::result_json(r);
    write_file(fs::path(o->out) / "best.json", leir::program_to_json(r.best).dump() + "\n");
    write_file(fs::path(o->out) / "trajectory.json", tune::trajectory_json(r).dump(1) + "\n");
    write_file(fs::path(o->out) / "result.json", result.dump(1) + "\n");
    if (o->json) {
      result["wall_s"] = r.wall_s;
      result["store"] = {{"path", t.store_path}, {"reused", r.reused}, {"measured_now", r.measured_now}};
      std::cout << result.dump() << "\n";
    } else {
      std::cout << fmt::format("{}: root {:.4g} ms, best {:.4g} ms, speedup {:.2f}x after {} trials ({} steps) -> {}\n",
                               r.root.name, r.root_ms, r.best_ms, r.speedup, r.trials, r.best_trace.size(), o->out);
      if (r.roofline) std::cout << tune::roofline_line(*r.roofline) << "\n";
    }
    return 0;
  };
}}};

}  // namespace
}  // namespace steptp::cli
