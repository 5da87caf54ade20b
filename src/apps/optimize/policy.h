// Who proposes the next step. Every policy answers in the format a model is trained on
// (apps/reward/answer.h: `<answer>{JSON}</answer>`), so the LLM and the baselines pass through the
// same parser and the same funnel and their metrics compare like for like:
//   llm     any OpenAI-compatible Chat Completions server, prompted as `generate` trains it
//           (llm_policy.cc);
//   random  a seeded uniform draw from the action menu (random_policy.cc);
//   model   the tuner's cost model ranking the menu's actions (model_policy.cc), retrained on
//           every measurement of the run.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/dataset/prompt.h"
#include "ir/leir/ast.h"
#include "apps/optimize/budget.h"
#include "apps/optimize/chat_client.h"

namespace steptp::tune {
class ObservationStore;
}

namespace steptp::optimize {

// A search state as a policy sees it.
struct State {
  const leir::Program* program = nullptr;
  std::string text;                          // canonical LEIR text
  nlohmann::json steps_so_far = nlohmann::json::array();  // [{"strategy","params"}] from the root
  std::string feedback;                      // multi-turn: what became of the previous proposal here
  double speedup_vs_root = 1;                // the state's speedup over the root (the runner's)
  uint64_t key = 0;                          // the state's canonical hash
};

struct Proposal {
  std::string answer;           // the assistant text ("" when the call failed)
  std::string error;            // transport failure (timeout, HTTP status, ...): a counted failure
  bool call = false;            // an LLM request was spent on it (first choice of a request)
  int64_t prompt_tokens = 0, completion_tokens = 0;
  double latency_s = 0;
  bool replayed = false;        // taken from the run directory, not from the server
  nlohmann::json request;       // what was sent (llm)
};
inline Proposal proposal(std::string answer) {
  Proposal p;
  p.answer = std::move(answer);
  return p;
}

class Policy {
 public:
  virtual ~Policy() = default;
  virtual std::string name() const = 0;
  // Up to `n` proposals for the state (fewer when the budget or the menu runs out); `draw`
  // numbers the repeated asks of one state, so each draws afresh and deterministically.
  virtual std::vector<Proposal> propose(const State& s, int n, uint64_t draw, Spend& spend) = 0;
  // A measured candidate (log2 speedup over the root), for policies that learn.
  virtual void observe(const leir::Program& p, double log2_speedup) {}
};

std::unique_ptr<Policy> make_random_policy(uint64_t seed);
std::unique_ptr<Policy> make_model_policy(uint64_t seed, int threads);
struct LlmOptions {
  ChatOptions chat;
  dataset::AnswerFormat format = dataset::AnswerFormat::Action;
  int concurrency = 4;  // requests in flight at once
  // What the prompt states about the machine (apps/dataset/reasoning.h machine_json; null: nothing),
  // and whether the states' speedups are measured (else the prompt says "not measured").
  nlohmann::json machine;
  bool speedups_measured = true;
};
// Answers are kept in `answers` (the run directory's store), keyed by request: a rerun or a
// resumed run replays them instead of asking again.
std::unique_ptr<Policy> make_llm_policy(LlmOptions o, tune::ObservationStore& answers);

// The answer text of an action (what the baselines "say").
std::string action_answer_text(const std::string& strategy, const std::string& handle, const std::string& params_json);

}  // namespace steptp::optimize
