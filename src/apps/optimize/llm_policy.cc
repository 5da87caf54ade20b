// The LLM policy: the prompt of apps/dataset/prompt.h (the one `generate` trains on) sent to an
// OpenAI-compatible server; `n` proposals take ceil(n / choices per request) requests, at most
// `concurrency` in flight. Every reply (or failure) is kept in the run directory's store keyed
// by its request, whose seed derives from the state and the draw: a rerun replays the same
// answers without a server, and a resumed run asks only what the killed one had not.
#include <algorithm>
#include <thread>

#include "ir/leir/program_io.h"
#include "apps/optimize/policy.h"
#include "search/analytic/search.h"
#include "transform/sampler.h"
#include "search/tune/database.h"

namespace steptp::optimize {
namespace {

using nlohmann::json;

class LlmPolicy : public Policy {
 public:
  LlmPolicy(LlmOptions o, tune::ObservationStore& answers) : o_(std::move(o)), answers_(answers) {}
  std::string name() const override { return "llm"; }

  std::vector<Proposal> propose(const State& s, int n, uint64_t draw, Spend& spend) override {
    json rec = {{"parent_program", s.text},           {"steps_so_far", s.steps_so_far},
                {"kind", "single"},                   {"feedback", s.feedback},
                {"machine", o_.machine},              {"parent_speedup_vs_root", search::round_ratio(s.speedup_vs_root, 1.0)},
                {"parent_speedup_measured", o_.speedups_measured}};
    const json messages = dataset::prompt_messages(rec, o_.format);
    const int per = std::max(1, o_.chat.n);
    const int requests = (n + per - 1) / per;
    // Requests in order; each reserves a call and its token allowance before it is sent.
    std::vector<json> sent;
    std::vector<std::string> keys;
    int64_t reserved_calls = 0, reserved_tokens = 0;
    for (int i = 0; i < requests; ++i) {
      if (!spend.can_call() || (spend.budget().calls && spend.calls + reserved_calls >= spend.budget().calls)) break;
      int64_t allow = spend.budget().tokens ? spend.token_allowance(o_.chat.max_tokens) - reserved_tokens
                                            : int64_t(o_.chat.max_tokens);
      if (allow <= 0) break;
      uint64_t seed = base::mix_seed(base::mix_seed(s.key, draw), uint64_t(i));
      sent.push_back(chat_request(o_.chat, messages, int(allow), seed));
      keys.push_back(tune::observation_key({"chat", sent.back().dump()}));
      reserved_calls++;
      reserved_tokens += allow;
    }
    std::vector<json> replies(sent.size());
    std::vector<size_t> todo;
    for (size_t i = 0; i < sent.size(); ++i) {
      if (auto got = answers_.get(keys[i])) replies[i] = *got, replies[i]["replayed"] = true;
      else todo.push_back(i);
    }
    const double deadline = spend.time_left_s();
    for (size_t from = 0; from < todo.size(); from += size_t(std::max(1, o_.concurrency))) {
      size_t to = std::min(todo.size(), from + size_t(std::max(1, o_.concurrency)));
      std::vector<ChatReply> got(to - from);
      std::vector<std::thread> threads;
      for (size_t k = from; k < to; ++k)
        threads.emplace_back([&, k] { got[k - from] = chat_complete(o_.chat, sent[todo[k]], deadline); });
      for (auto& t : threads) t.join();
      std::vector<std::pair<std::string, json>> entries;
      for (size_t k = from; k < to; ++k) {
        const ChatReply& r = got[k - from];
        json v = {{"choices", r.choices}, {"prompt_tokens", r.prompt_tokens}, {"completion_tokens", r.completion_tokens},
                  {"latency_s", r.latency_s}, {"attempts", r.attempts}, {"error", r.error}};
        entries.push_back({keys[todo[k]], v});
        replies[todo[k]] = v;
      }
      answers_.put_all(entries);
    }
    std::vector<Proposal> out;
    for (size_t i = 0; i < sent.size(); ++i) {
      const json& r = replies[i];
      spend.calls++;
      spend.tokens += r["completion_tokens"].get<int64_t>();
      spend.prompt_tokens += r["prompt_tokens"].get<int64_t>();
      Proposal first;
      first.call = true;
      first.prompt_tokens = r["prompt_tokens"].get<int64_t>();
      first.completion_tokens = r["completion_tokens"].get<int64_t>();
      first.latency_s = r["latency_s"].get<double>();
      first.replayed = r.value("replayed", false);
      first.request = sent[i];
      std::string error = r["error"].get<std::string>();
      if (!error.empty() || r["choices"].empty()) {
        first.error = error.empty() ? "the reply has no choices" : error;
        out.push_back(first);
        continue;
      }
      for (size_t c = 0; c < r["choices"].size() && int(out.size()) < n; ++c) {
        Proposal p = c == 0 ? first : proposal("");
        p.replayed = first.replayed;
        p.answer = r["choices"][c].get<std::string>();
        out.push_back(std::move(p));
      }
    }
    return out;
  }

 private:
  LlmOptions o_;
  tune::ObservationStore& answers_;
};

}  // namespace

std::unique_ptr<Policy> make_llm_policy(LlmOptions o, tune::ObservationStore& answers) {
  return std::make_unique<LlmPolicy>(std::move(o), answers);
}

}  // namespace steptp::optimize
