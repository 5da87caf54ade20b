// A client of the OpenAI Chat Completions protocol (POST {base}/chat/completions), which vLLM,
// SGLang, llama.cpp's server and Ollama all speak; HTTP through libcurl.
//
// Failures are values, never exceptions: a timeout, a refused connection, an HTTP error status
// or a body that is not a completion comes back as `error`. HTTP 429 and 5xx (and timeouts and
// connection failures) are retried with exponential backoff (base `backoff_s`, doubling, at most
// `retries` retries); other 4xx are not (the request itself is wrong). A reply body above
// kMaxReplyBytes is cut off and reported (a runaway server cannot exhaust memory).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace steptp::optimize {

struct ChatOptions {
  std::string base_url = "http://127.0.0.1:8000/v1";
  std::string model = "default";
  std::string api_key;  // sent as "Authorization: Bearer KEY" when not empty
  double temperature = 0.7, top_p = 0.95;
  int n = 1;               // choices per request
  int max_tokens = 4096;   // completion tokens per choice
  double timeout_s = 120;  // per attempt
  int retries = 3;
  double backoff_s = 0.5;
};

inline constexpr size_t kMaxReplyBytes = size_t{8} << 20;

struct ChatReply {
  std::vector<std::string> choices;  // message contents, in choice order
  int64_t prompt_tokens = 0, completion_tokens = 0;  // the server's usage report
  double latency_s = 0;  // all attempts and waits together
  int attempts = 0;
  std::string error;  // empty on success
};

// The request body (what is sent and what the run directory records).
nlohmann::json chat_request(const ChatOptions& o, const nlohmann::json& messages, int max_tokens, uint64_t seed);

// One request with retries. `deadline_s` (> 0) caps the time of all attempts together.
ChatReply chat_complete(const ChatOptions& o, const nlohmann::json& request, double deadline_s);

}  // namespace steptp::optimize
