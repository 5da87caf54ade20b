// Named presets of `steptp generate --profile` (docs/dataset.md, "Profiles"): the scale and
// realism of a run in one word. Options given explicitly on the command line win over the
// profile's values.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "apps/dataset/dataset.h"

namespace steptp::dataset {

struct Profile {
  std::string name, description;
  workloads::SizeClass size;
  Trajectories trajectories;
  int tune_trials;
  int programs;
  int composites;  // < 0: as many as bring the roots to -composites (with every workload)
  bool examples;
  int measure_threads;  // 0: every core of the machine
  double measure_min_time;
  int non_improving_per_state;  // contrast kept per state (a tuned state has few measured steps)
  int non_improving_per_root;   // ... per root, beside a tuned path (-1: no limit)
  double min_root_ms;           // naive one-core floor of a root (apps/dataset/root_sizing.h)
  double max_root_ms;           // ... and ceiling (0: none)
  double min_headroom;          // headroom floor of a root (apps/dataset/root_headroom.h)
};

// quick (the default: tiny shapes, beam search, seconds per root), tuned (bench shapes in f32,
// `steptp tune` per root, all cores) and paper (tuned at the public Step-TP dataset's scale:
// every workload plus composites, ~6,300 roots).
const std::vector<Profile>& profiles();
std::optional<Profile> find_profile(std::string_view name);

// Sets the profile's fields of `o`, except those whose option (by its long name without "--",
// e.g. "size", "tune-trials") is in `explicit_options`.
void apply_profile(const Profile& p, GenerateOptions& o, const std::set<std::string>& explicit_options);

}  // namespace steptp::dataset
