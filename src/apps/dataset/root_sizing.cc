#include "apps/dataset/root_sizing.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include <fmt/format.h>

#include "base/error.h"
#include "ir/leir/program_io.h"
#include "transform/sampler.h"
#include "search/tune/database.h"
#include "search/tune/machine.h"
#include "search/tune/runner.h"
#include "front/workloads/bench_size.h"

namespace steptp::dataset {
namespace {

using nlohmann::json;

constexpr int kSizingRounds = 4;
constexpr int kMaxDoublings = 8;
// Aim a little above the floor: a root measured at exactly the floor would miss it on a rerun.
constexpr double kSizingMargin = 1.25;

backend::MeasureOptions sizing_options() {
  backend::MeasureOptions mo;
  mo.threads = 1;
  mo.warmup = 1;
  mo.min_repeats = 3;
  mo.min_time_s = 0.01;
  mo.max_time_s = 0.3;
  return mo;
}

// The naive one-core time of each program, from the store or measured now (one batch).
std::vector<std::optional<double>> naive_ms(const std::vector<const leir::Program*>& programs, uint64_t input_seed,
                                            tune::ObservationStore& store) {
  const auto mo = sizing_options();
  const std::string machine = tune::fingerprint(tune::this_machine(1));
  const std::string config = fmt::format("naive-one-thread warmup={} repeats={} min={} max={}", mo.warmup,
                                         mo.min_repeats, mo.min_time_s, mo.max_time_s);
  std::vector<std::string> keys;
  std::vector<std::optional<json>> found;
  std::vector<leir::Program> missing;
  std::vector<size_t> missing_idx;
  for (size_t i = 0; i < programs.size(); ++i) {
    keys.push_back(tune::observation_key({machine, leir::program_to_text(*programs[i], false), config}));
    found.push_back(store.get(keys.back()));
    if (!found.back()) missing.push_back(*programs[i]), missing_idx.push_back(i);
  }
  if (!missing.empty()) {
    std::vector<std::pair<int, int>> self;  // a program against itself: one session, its own median
    for (int i = 0; i < int(missing.size()); ++i) self.push_back({i, i});
    auto measured = tune::measure_pairs(missing, self, mo, input_seed, 30.0);
    std::vector<std::pair<std::string, json>> entries;
    for (size_t m = 0; m < missing.size(); ++m) {
      const auto& r = measured[m];
      json v = r.ok ? json{{"ok", true}, {"median_ms", r.cmp.a.median_ms}} : json{{"ok", false}, {"error", r.error}};
      entries.push_back({keys[missing_idx[m]], v});
    }
    store.put_all(entries);
    for (size_t i : missing_idx) found[i] = store.get(keys[i]);  // another worker's entry wins
  }
  std::vector<std::optional<double>> out;
  for (const auto& f : found)
    out.push_back(f && (*f)["ok"].get<bool>() ? std::optional<double>((*f)["median_ms"].get<double>()) : std::nullopt);
  return out;
}

}  // namespace

std::vector<RootSizing> size_roots_by_measurement(std::vector<Root>& roots, const GenerateOptions& o,
                                                  const std::string& store_path, json* skipped) {
  std::vector<RootSizing> sizing(roots.size());
  if (!(o.min_root_ms > 0) || !o.measured || o.size != workloads::SizeClass::Bench) return sizing;
  tune::ObservationStore store(store_path);
  const uint64_t input_seed = base::mix_seed(o.seed, 0x512e);
  std::vector<char> settled(roots.size(), 0), left_out(roots.size(), 0);
  std::vector<std::string> reason(roots.size());
  for (int round = 0; round < kSizingRounds; ++round) {
    std::vector<size_t> todo;
    for (size_t i = 0; i < roots.size(); ++i)
      if (!settled[i]) todo.push_back(i);
    if (todo.empty()) break;
    std::vector<const leir::Program*> programs;
    for (size_t i : todo) programs.push_back(&roots[i].program);
    auto ms = naive_ms(programs, input_seed, store);
    for (size_t k = 0; k < todo.size(); ++k) {
      const size_t i = todo[k];
      Root& r = roots[i];
      if (!ms[k]) {  // the tuner and the records would fail on it the same way: they report it
        settled[i] = 1;
        continue;
      }
      sizing[i].naive_ms_one_thread = *ms[k];
      if (o.max_root_ms > 0 && *ms[k] > o.max_root_ms) {
        reason[i] = fmt::format("naive program {:.3g} ms on one core, above --max-root-ms {}", *ms[k], o.max_root_ms);
        left_out[i] = settled[i] = 1;
        continue;
      }
      if (*ms[k] >= o.min_root_ms) {
        settled[i] = 1;
        continue;
      }
      reason[i] = fmt::format("naive program {:.3g} ms on one core, below --min-root-ms {}", *ms[k], o.min_root_ms);
      const int more = std::max(1, int(std::ceil(std::log2(o.min_root_ms * kSizingMargin / *ms[k]))));
      const int doublings = sizing[i].bench_doublings + more;
      if (!r.workload || round + 1 == kSizingRounds || doublings > kMaxDoublings) {
        left_out[i] = settled[i] = 1;
        continue;
      }
      try {
        r.program = emit_root_program(r, o.size, doublings);
        sizing[i].bench_doublings = doublings;
      } catch (const base::Error& e) {  // its ranges end before the larger window (workloads' BadRequest)
        if (e.kind() != base::ErrorKind::BadRequest) throw;
        reason[i] += fmt::format("; no shapes {} doublings up ({})", doublings, e.what());
        left_out[i] = settled[i] = 1;
      }
    }
  }
  if (skipped)
    for (size_t i = 0; i < roots.size(); ++i)
      if (left_out[i]) skipped->push_back({{"key", roots[i].key}, {"reason", reason[i]}});
  remove_left_out(roots, sizing, left_out);
  return sizing;
}

void remove_left_out(std::vector<Root>& roots, std::vector<RootSizing>& sizing, const std::vector<char>& left_out) {
  std::vector<Root> kept;
  std::vector<RootSizing> kept_sizing;
  for (size_t i = 0; i < roots.size(); ++i) {
    if (left_out[i]) continue;
    kept.push_back(std::move(roots[i]));
    kept_sizing.push_back(sizing[i]);
  }
  roots = std::move(kept);
  sizing = std::move(kept_sizing);
}

}  // namespace steptp::dataset
