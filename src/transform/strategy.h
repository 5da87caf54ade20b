// The strategy interface (STRATEGIES.md): a strategy is a pure function from a program (a
// ScheduleState: the program and its cached analyses, schedule_state.h) to candidate programs.
// It surveys sites (legal ones and refusals with reasons), gives each site's parameter space,
// applies one (site, params) choice or says why not. No I/O; no randomness except through the
// caller's seed (sampling lives in sampler.h, not in strategies).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "ir/leir/ast.h"

namespace steptp::strategies {

enum class Exactness : uint8_t { Exact, Reassoc, Algebraic };
std::string_view to_string(Exactness e);  // "exact", "reassoc", "algebraic"

// A parameter value: an integer (factor, axis, split point), a string (scope, form, tensor name,
// printed sub-expression) or an integer list (permutation, tile sizes).
using ParamValue = std::variant<int64_t, std::string, std::vector<int64_t>>;
using Params = std::map<std::string, ParamValue>;  // ordered: deterministic printing
nlohmann::json params_json(const Params& p);      // the parameters as a JSON object
std::string params_to_json(const Params& p);      // its compact text, keys sorted

// Where a strategy applies. `path` addresses the AST: indices into the top-level body, then into
// nested bodies; its meaning beyond that (loop index, statement, sub-expression) is the
// strategy's own, described by `detail` and `description`.
struct Site {
  std::vector<int> path;
  std::vector<int> detail;
  std::string description;  // human-readable: "nest 2, loops a,c", "tensor E", "stmt 3: exp(x)*exp(y)"
};

struct Candidate {
  std::string strategy;
  int site = 0;          // index into sites()
  Params params;
  Exactness exactness = Exactness::Exact;
  leir::Program program;
};

// Why a strategy does not apply at a site, or why one parameter choice there is illegal.
struct Refusal {
  std::string site;    // description of the site considered
  std::string reason;  // why the strategy does not apply there
};

// The outcome of applying one choice: a candidate, or the refusal that says why not. Reads like
// an optional candidate (`if (c) use(c->program)`), with the reason on the other side.
class Applied {
 public:
  Applied(Candidate c) : candidate_(std::move(c)) {}  // a candidate is an applied choice
  Applied(Refusal r) : refusal_(std::move(r)) {}      // so is a refusal
  explicit operator bool() const { return candidate_.has_value(); }
  bool has_value() const { return candidate_.has_value(); }
  Candidate& operator*() { return *candidate_; }
  const Candidate& operator*() const { return *candidate_; }
  Candidate* operator->() { return &*candidate_; }
  const Candidate* operator->() const { return &*candidate_; }
  const Refusal& refusal() const { return refusal_; }  // meaningful when !*this

 private:
  std::optional<Candidate> candidate_;
  Refusal refusal_;
};

// One pass of a strategy over a program: every legal site in a deterministic order and every
// site considered but refused, with the reason — one pass, so the two cannot disagree.
struct Survey {
  std::vector<Site> sites;
  std::vector<Refusal> refusals;
  // Records a considered site: legal when `refusal` is nullopt.
  void consider(Site site, std::optional<std::string> refusal);
};

class ScheduleState;

// The one strategy interface (TVM's schedule primitives over a ScheduleState are the model): a
// strategy reads the program and its cached analyses from the state, surveys it once (the state
// keeps the survey), gives each site's parameter space and applies one choice. Pure: no I/O, no
// randomness.
class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual std::string_view name() const = 0;         // exactly as STRATEGIES.md
  virtual std::string_view description() const = 0;  // one line
  virtual Exactness exactness() const = 0;           // the strongest class it may produce

  // The legal sites and the refusals (call through sites()/explain(), which the state caches).
  virtual Survey survey(const ScheduleState& st) const = 0;
  // The finite parameter space at a site (one empty Params when the strategy has no parameters).
  virtual std::vector<Params> param_space(const ScheduleState& st, const Site& s) const;
  // Applies one choice. Precondition: `s` is one of sites(st) and `params` from param_space;
  // a choice that turns out illegal comes back as a Refusal saying why.
  virtual Applied apply(const ScheduleState& st, const Site& s, const Params& params) const = 0;

  // The surveyed sites / refusals of the state (computed once per state).
  const std::vector<Site>& sites(const ScheduleState& st) const;
  const std::vector<Refusal>& explain(const ScheduleState& st) const;

  // One-off calls on a bare program build a state for the call (callers that enumerate several
  // strategies or apply several choices keep one ScheduleState instead).
  std::vector<Site> sites(const leir::Program& p) const;
  std::vector<Params> param_space(const leir::Program& p, const Site& s) const;
  Applied apply(const leir::Program& p, const Site& s, const Params& params) const;
  std::vector<Refusal> explain(const leir::Program& p) const;

 protected:
  // The candidate of a legal choice: this strategy's name and `s`'s index among sites(st).
  Candidate candidate(const ScheduleState& st, const Site& s, const Params& params, Exactness ex,
                      leir::Program result) const;
  // The refusal of a choice at `s`.
  static Refusal refuse(const Site& s, std::string reason) { return {s.description, std::move(reason)}; }
};

// The registry: all 43 strategies in the order of STRATEGIES.md.
inline constexpr int kStrategyCount = 43;
// The 43 names of STRATEGIES.md, in order.
const std::array<std::string_view, kStrategyCount>& strategy_names();
int strategy_index(std::string_view name);  // -1 if unknown
// The registered strategies (all 43; the strategies tests check it), in STRATEGIES.md order.
const std::vector<const Strategy*>& all_strategies();
const Strategy* find_strategy(std::string_view name);  // nullptr if unknown or not registered

// Registration from each strategy's own file: `static RegisterStrategy<MyStrategy> reg(index);`
// where index is its number in STRATEGIES.md (0..42).
void register_strategy(int index, std::unique_ptr<Strategy> s);
template <class S>
struct RegisterStrategy {
  explicit RegisterStrategy(int index) { register_strategy(index, std::make_unique<S>()); }
};

}  // namespace steptp::strategies
