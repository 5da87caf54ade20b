// The strategy interface (STRATEGIES.md): a strategy is a pure function from a program to
// candidate programs. It enumerates sites, gives each site's parameter space, applies one
// (site, params) choice, and explains refusals. No I/O; no randomness except through the
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

#include "leir/ast.h"

namespace steptp::strategies {

enum class Exactness : uint8_t { Exact, Reassoc, Algebraic };
std::string_view to_string(Exactness e);  // "exact", "reassoc", "algebraic"

// A parameter value: an integer (factor, axis, split point), a string (scope, form, tensor name,
// printed sub-expression) or an integer list (permutation, tile sizes).
using ParamValue = std::variant<int64_t, std::string, std::vector<int64_t>>;
using Params = std::map<std::string, ParamValue>;  // ordered: deterministic printing
std::string params_to_json(const Params& p);      // compact JSON object text, keys sorted

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

struct Refusal {
  std::string site;    // description of the site considered
  std::string reason;  // why the strategy does not apply there
};

class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual std::string_view name() const = 0;         // exactly as STRATEGIES.md
  virtual std::string_view description() const = 0;  // one line
  virtual Exactness exactness() const = 0;           // the strongest class it may produce

  // Every site where the strategy applies legally, in a deterministic order.
  virtual std::vector<Site> sites(const leir::Program& p) const = 0;
  // The finite parameter space at a site (an empty Params when the strategy has no parameters).
  virtual std::vector<Params> param_space(const leir::Program& p, const Site& s) const = 0;
  // Applies one choice. Precondition: `s` came from sites(p) and `params` from param_space.
  // Returns nullopt if this particular parameter choice turns out illegal.
  virtual std::optional<Candidate> apply(const leir::Program& p, const Site& s, const Params& params) const = 0;
  // Every site considered, with the reason for each refusal (sites that apply are not listed).
  virtual std::vector<Refusal> explain(const leir::Program& p) const = 0;
};

// Convenience base: one pass over the program yields both the legal sites and the refusals, so
// sites() and explain() cannot disagree.
struct Survey {
  std::vector<Site> sites;
  std::vector<Refusal> refusals;
};
class SurveyStrategy : public Strategy {
 public:
  virtual Survey survey(const leir::Program& p) const = 0;
  std::vector<Site> sites(const leir::Program& p) const override { return survey(p).sites; }
  std::vector<Refusal> explain(const leir::Program& p) const override { return survey(p).refusals; }
};

// The registry: all 43 strategies in the order of STRATEGIES.md.
inline constexpr int kStrategyCount = 43;
// The 43 names of STRATEGIES.md, in order (whether or not each is registered yet).
const std::array<std::string_view, kStrategyCount>& strategy_names();
int strategy_index(std::string_view name);  // -1 if unknown
// The registered strategies, in STRATEGIES.md order (a strategy not yet linked in is absent).
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
