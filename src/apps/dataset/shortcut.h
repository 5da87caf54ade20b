// The "shortcut" policy of the dataset filter (issue 6): a model must not learn that the cheapest
// always-valid rewrite is the answer. Trivially applicable strategies (valid on almost any nest:
// loop kinds, unrolling, splitting, reordering an expression, ...) are down-weighted, and a step
// that undoes the previous one (its inverse) is dropped. Single-answer records: see generate.cc;
// multi-answer records: at most GenerateOptions::multi_trivial_max trivial strategies per answer
// set (records.cc) and a per-strategy cap on multi-answer appearances (generate.cc).
#pragma once

#include <map>
#include <set>
#include <string>

namespace steptp::dataset {

const std::set<std::string>& trivial_strategies();
bool is_trivial_strategy(const std::string& name);
// Each strategy of an inverse pair maps to the other.
const std::map<std::string, std::string>& inverses();

}  // namespace steptp::dataset
