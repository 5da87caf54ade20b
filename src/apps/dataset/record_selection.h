// Stage "records" (apps/dataset/records.cc), the choices: which of one root's transitions become
// single-answer contrast and which make a state's multi-answer set. Pure functions of the
// transitions and a seed; records.cc turns the chosen ones into JSON.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "search/analytic/search.h"

namespace steptp::dataset {

// A step counts as improving by the tuner's own measurement where it has one, else by its label.
bool counts_as_improving(const search::Transition& t);

// Steps of each strategy among a root's transitions.
std::map<std::string, int> strategy_counts(const std::vector<search::Transition>& transitions);

// At most `per_root` non-improving steps beside a tuned path (path steps are never contrast):
// those whose strategy the root's transitions show least, whatever their state, in a seeded
// order among equals — the rewrites the search explored, not a tenth loop step.
std::set<size_t> contrast_steps(const std::vector<search::Transition>& transitions, int per_root, uint64_t seed);

// The answers of one state's multi-answer record, by index into `transitions`: distinct
// strategies, at most `trivial_max` trivially applicable ones (apps/dataset/shortcut.h), the first
// max_answers - 1 in the order of `by_cost`, and the last place for the strategy `counts` shows
// least (cheapest first among equals).
std::vector<size_t> multi_answer_set(const std::vector<search::Transition>& transitions,
                                     const std::vector<size_t>& by_cost, const std::map<std::string, int>& counts,
                                     int max_answers, int trivial_max);

}  // namespace steptp::dataset
