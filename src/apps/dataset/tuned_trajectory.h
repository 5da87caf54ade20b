// Dataset v2 (issue 15), stage "tune": a root's transitions from its measured search.
//
// `generate --trajectories tune` tunes every root with `steptp tune` (search/tune/tuner.h: measurement
// in the loop, learned cost model) and takes its records from the measured search tree instead
// of the analytic beam search:
// - the path from the root to the best-found program, every step of it (path_step 1..L),
//   including steps that are not faster on their own: measurement later labels those "enabling"
//   when the rest of the path reaches a speedup from them (apps/dataset/measurement.h);
// - at each state of that path, the other measured candidates that extend it by one step
//   (improving or not), for contrast and for the multi-answer records;
// - the measured steps from every other state the tuner measured (a trial whose trace less its
//   last step is a measured trial too): transitions between measured programs off the path,
//   states numbered after the path's. They cost the records one comparison each (parent ->
//   result) and no trial, as the tuner verified and timed both programs already.
// Each result is verified against the root again here (search/tune/verification.h: the interpreter up
// to 2^21 statement instances, compiled f64 builds beyond), so a record never rests on a verdict
// it does not carry. Costs are the analytic model's (pre-labels for the filters, and what the
// CoT quotes as "the cost model"), with the tuner's learned-model prediction beside them where
// the tuner measured the result; the exported costs and labels come from the interleaved
// re-measurement of every kept record.
#pragma once

#include <cstdint>
#include <vector>

#include "search/analytic/search.h"
#include "search/tune/database.h"
#include "search/tune/tuner.h"

namespace steptp::dataset {

// Deterministic given the tuning result. `improve_threshold`: the speedup over the parent from
// which a step counts as improving (the model's pre-label, and the tuner's measurement of an
// alternative). `store` (optional): the tuner's measurement store, whose verdicts (same root,
// same `verify_seed`) are reused and where new ones are kept. Throws strategies::ReplayError if the
// best trace does not replay (a tuner bug, never bad input).
std::vector<search::Transition> tuned_transitions(const tune::TuneResult& r, uint64_t verify_seed,
                                                  double improve_threshold, tune::ObservationStore* store = nullptr,
                                                  search::SearchStats* stats = nullptr);

}  // namespace steptp::dataset
