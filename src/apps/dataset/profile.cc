#include "apps/dataset/profile.h"

#include <algorithm>

#include "search/tune/machine.h"

namespace steptp::dataset {

const std::vector<Profile>& profiles() {
  using workloads::SizeClass;
  static const std::vector<Profile> p = {
      {"quick", "tiny shapes, analytic beam search, every record re-measured (minutes on a laptop)", SizeClass::Tiny,
       Trajectories::Search, 16, -1, 4, true, 1, 0.003, 12, -1, 0, 0, 0},
      {"tuned", "bench shapes in f32 (1-50 ms naive), steptp tune per root (16 measured trials), all cores",
       SizeClass::Bench, Trajectories::Tune, 16, -1, 4, false, 0, 0.02, 1, 1, 1.0, 50, 16},
      {"paper", "tuned at the public Step-TP dataset's scale: every workload plus composites, 6,300 roots",
       SizeClass::Bench, Trajectories::Tune, 16, -1, -6300, false, 0, 0.02, 1, 1, 1.0, 50, 16},
  };
  return p;
}

std::optional<Profile> find_profile(std::string_view name) {
  for (const auto& p : profiles())
    if (p.name == name) return p;
  return std::nullopt;
}

void apply_profile(const Profile& p, GenerateOptions& o, const std::set<std::string>& given) {
  auto set = [&](const char* option, auto& field, auto value) {
    if (!given.count(option)) field = value;
  };
  set("size", o.size, p.size);
  set("trajectories", o.trajectories, p.trajectories);
  set("tune-trials", o.tune_trials, p.tune_trials);
  set("programs", o.programs, p.programs);
  const int workloads = int(workloads::all_workloads().size());
  set("composites", o.composites, p.composites >= 0 ? p.composites : std::max(0, -p.composites - workloads));
  if (!given.count("no-examples")) o.examples = p.examples;
  set("measure-threads", o.measure_threads, p.measure_threads > 0 ? p.measure_threads : tune::core_count());
  set("measure-min-time", o.measure_min_time, p.measure_min_time);
  set("non-improving-per-state", o.non_improving_per_state, p.non_improving_per_state);
  set("non-improving-per-root", o.non_improving_per_root, p.non_improving_per_root);
  set("min-root-ms", o.min_root_ms, p.min_root_ms);
  set("max-root-ms", o.max_root_ms, p.max_root_ms);
  set("min-headroom", o.min_headroom, p.min_headroom);
}

}  // namespace steptp::dataset
