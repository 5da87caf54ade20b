// Stage "split" of `steptp generate`: which roots go to eval. Whole roots, never single records,
// so no eval root — nor any program derived from it — appears in training (docs/dataset.md,
// "Split"):
//  * in every family with at least kRootsForHeldOutRoots roots, eval_fraction of its roots (at
//    least one, always leaving two for training) — so eval covers conv, matmul, attention, ...
//    with workloads training never saw;
//  * of the smaller families, whole families in a seeded order while their roots stay within
//    eval_fraction of those families' roots (at least one family when there are two or more) —
//    so eval also asks about families training never saw;
//  * then, while eval's median record token count is more than kTokenMedianTarget away from
//    train's, the swap (an eval root for a train root of the same family, or an eval small family
//    for a train one) that brings the two medians closest, as long as one improves them — so eval
//    is not easier or harder merely by its programs' size.
// The result depends only on the roots, their records' token counts, eval_fraction and seed.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/dataset/dataset.h"

namespace steptp::dataset {

inline constexpr int kRootsForHeldOutRoots = 3;
inline constexpr double kTokenMedianTarget = 0.10;

// The distinct families of the roots, sorted.
std::vector<std::string> root_families(const std::vector<Root>& roots);

// A root that has exported records: its key, family and the token count of each record.
struct SplitRoot {
  std::string key, family;
  std::vector<double> tokens;
};

struct EvalSplit {
  std::set<std::string> roots;           // keys of every eval root
  std::set<std::string> whole_families;  // families held out whole
  std::set<std::string> sampled_families;  // families with >= kRootsForHeldOutRoots roots (some held out)
  double train_median_tokens = 0, eval_median_tokens = 0;  // over records; 0 for an empty side
  int swaps = 0;                                           // balancing swaps made
  nlohmann::json to_json() const;  // {"by", "eval_roots", "whole_families", "sampled_families", "median_tokens"}
};

// No eval root when eval_fraction <= 0 or there are fewer than two roots.
EvalSplit split_roots(const std::vector<SplitRoot>& roots, double eval_fraction, uint64_t seed);

}  // namespace steptp::dataset
