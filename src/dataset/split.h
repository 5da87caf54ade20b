// Stage "split" of `steptp generate`: train/eval by workload family, so no eval root — nor any
// program derived from it — appears in training.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "dataset/dataset.h"

namespace steptp::dataset {

// The distinct families of the roots, sorted.
std::vector<std::string> root_families(const std::vector<Root>& roots);

// Whole families, in an order drawn from `seed`, while the eval share of roots stays within
// `eval_fraction` — at least one family, never all of them (none when there is only one family
// or eval_fraction is 0).
std::set<std::string> eval_families(const std::vector<Root>& roots, double eval_fraction, uint64_t seed);

}  // namespace steptp::dataset
