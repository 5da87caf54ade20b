// Comparisons and verification verdicts as observations of the store (search/tune/database.h):
// each is looked up first and only the missing ones are measured (one batch) and recorded, so
// every consumer — the tuner, `steptp optimize` — replays a run from its store without timing
// anything again.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "ir/leir/ast.h"
#include "search/tune/database.h"
#include "search/tune/runner.h"
#include "search/tune/verification.h"

namespace steptp::tune {

// A program as the store keys it: the program and its canonical text.
struct Subject {
  const leir::Program* program;
  const std::string* text;
};

// The store key of timing the program `b_text` against `a_text` (compact texts,
// leir::program_to_text(p, false)) with `runner` in `session`. Every consumer keys a comparison
// this way, so one comparison is one fact: `generate --trajectories tune` times its records with
// the tuner's runner, and the tuner's comparisons of candidates against the root serve them.
std::string comparison_key(const Runner& runner, const std::string& a_text, const std::string& b_text,
                           const std::string& session = "time");

// Interleaved comparisons through the store (runner.h's timing policy for the missing ones).
class Comparer {
 public:
  Comparer(ObservationStore& store, Runner& runner) : store_(store), runner_(runner) {}

  // Times b against a for each pair (a = reference, b = candidate). `session` separates
  // independent timings of the same pair (a confirmation is a new session).
  std::vector<PairResult> compare(const std::vector<std::pair<Subject, Subject>>& pairs,
                                  const std::string& session = "time");
  // Whether that comparison is a stored fact already (costs no measurement).
  bool stored(const Subject& a, const Subject& b, const std::string& session = "time");

  int reused = 0, measured_now = 0;

 private:
  std::string key(const Subject& a, const Subject& b, const std::string& session) const;

  ObservationStore& store_;
  Runner& runner_;
};

// Verdicts of `verifier` (rooted at the program whose text is `root_text`) on the candidates:
// {"equivalent": bool, "verdict": "exact"|"reassoc"|"failed"|"inconclusive", "error", "report":
// verify::to_json of the whole report} (stores written before "report" existed lack it).
std::vector<nlohmann::json> stored_verdicts(ObservationStore& store, RootVerifier& verifier,
                                            const std::string& root_text, const std::vector<Subject>& candidates,
                                            uint64_t seed);
// The same verdicts as whole verifications (the stored reports read back; a verdict stored
// before reports were kept is verified again), for callers that record the report.
std::vector<Verification> stored_verifications(ObservationStore& store, RootVerifier& verifier,
                                               const std::string& root_text, const std::vector<Subject>& candidates,
                                               uint64_t seed);

}  // namespace steptp::tune
