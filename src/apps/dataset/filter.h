// Stage "filter" of `steptp generate` (docs/dataset.md, Pipeline 5): which raw records are
// exported. All choices are seeded; every drop is counted by reason (stats.json filter_drops).
//  - any answer that failed verification drops its record;
//  - single-answer records: duplicates by result hash, a step undoing the previous one (its
//    inverse strategy), trivially applicable strategies kept with probability trivial_keep
//    unless improving, then at most per_strategy_cap records per strategy (seeded order);
//  - multi-answer records: a strategy appears in at most multi_per_strategy_cap of them (an
//    over-cap answer goes; the record goes when its first answer is over cap or fewer than two
//    remain).
//  - coverage reserves (records.cc: one record per strategy a root's steps show and its records
//    do not) skip the down-weighting and the cap; one is kept, marked "coverage": true, for each
//    strategy no other kept record answers (the first in root order); the rest are dropped.
// Steps of a tuned root's best path (answers with "path") are kept whole: exempt from the
// trivial down-weighting and the per-strategy cap.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/dataset/dataset.h"

namespace steptp::dataset {

// One keep flag per record; multi-answer records may lose answers (edited in place).
std::vector<char> filter_records(std::vector<nlohmann::json>& recs, const GenerateOptions& o,
                                 std::map<std::string, int>& drops);

}  // namespace steptp::dataset
