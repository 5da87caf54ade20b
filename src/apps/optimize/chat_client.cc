#include "apps/optimize/chat_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <thread>

#include <fmt/format.h>

namespace steptp::optimize {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct Body {
  std::string text;
  bool truncated = false;
};

size_t on_data(char* ptr, size_t size, size_t nmemb, void* user) {
  auto* b = static_cast<Body*>(user);
  size_t n = size * nmemb;
  if (b->text.size() + n > kMaxReplyBytes) {
    b->truncated = true;
    return 0;  // aborts the transfer
  }
  b->text.append(ptr, n);
  return n;
}

struct Attempt {
  long status = 0;
  std::string body, error;
  bool retryable = false;
};

Attempt post(const std::string& url, const std::string& api_key, const std::string& payload, double timeout_s) {
  Attempt a;
  CURL* c = curl_easy_init();
  if (!c) {
    a.error = "curl_easy_init failed";
    return a;
  }
  Body body;
  curl_slist* headers = curl_slist_append(nullptr, "Content-Type: application/json");
  if (!api_key.empty()) headers = curl_slist_append(headers, ("Authorization: Bearer " + api_key).c_str());
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, payload.c_str());
  curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, long(payload.size()));
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, long(std::max(1.0, timeout_s * 1e3)));
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, long(std::max(1.0, std::min(timeout_s, 10.0) * 1e3)));
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);  // threads: no SIGALRM for timeouts
  CURLcode rc = curl_easy_perform(c);
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &a.status);
  curl_slist_free_all(headers);
  curl_easy_cleanup(c);
  if (body.truncated) {
    a.error = fmt::format("reply larger than {} bytes", kMaxReplyBytes);
    return a;
  }
  if (rc != CURLE_OK) {
    a.error = fmt::format("HTTP request failed: {}", curl_easy_strerror(rc));
    a.retryable = rc == CURLE_OPERATION_TIMEDOUT || rc == CURLE_COULDNT_CONNECT || rc == CURLE_RECV_ERROR ||
                  rc == CURLE_GOT_NOTHING || rc == CURLE_SEND_ERROR;
    return a;
  }
  a.body = std::move(body.text);
  if (a.status != 200) {
    a.error = fmt::format("HTTP {}: {}", a.status, a.body.substr(0, 200));
    a.retryable = a.status == 429 || a.status >= 500;
  }
  return a;
}

}  // namespace

json chat_request(const ChatOptions& o, const json& messages, int max_tokens, uint64_t seed) {
  return {{"model", o.model},       {"messages", messages}, {"temperature", o.temperature}, {"top_p", o.top_p},
          {"n", o.n},               {"max_tokens", max_tokens}, {"seed", seed & 0x7fffffff}, {"stream", false}};
}

ChatReply chat_complete(const ChatOptions& o, const json& request, double deadline_s) {
  global_init();
  ChatReply r;
  const auto t0 = Clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - t0).count(); };
  std::string url = o.base_url;
  while (!url.empty() && url.back() == '/') url.pop_back();
  url += "/chat/completions";
  const std::string payload = request.dump();
  for (int attempt = 0;; ++attempt) {
    double timeout = o.timeout_s;
    if (deadline_s > 0) timeout = std::min(timeout, deadline_s - elapsed());
    if (timeout <= 0) {
      r.error = r.error.empty() ? "no time left for the request" : r.error;
      break;
    }
    r.attempts++;
    Attempt a = post(url, o.api_key, payload, timeout);
    if (a.error.empty()) {
      json j = json::parse(a.body, nullptr, false);
      if (j.is_discarded() || !j.is_object() || !j.contains("choices") || !j["choices"].is_array()) {
        r.error = "reply is not a chat completion: " + a.body.substr(0, 200);
        break;
      }
      for (const auto& ch : j["choices"]) {
        const json* content = ch.is_object() && ch.contains("message") && ch["message"].is_object() &&
                                      ch["message"].contains("content") && ch["message"]["content"].is_string()
                                  ? &ch["message"]["content"]
                                  : nullptr;
        r.choices.push_back(content ? content->get<std::string>() : std::string());
      }
      if (j.contains("usage") && j["usage"].is_object()) {
        const json& u = j["usage"];
        if (u.contains("prompt_tokens") && u["prompt_tokens"].is_number_integer())
          r.prompt_tokens = u["prompt_tokens"].get<int64_t>();
        if (u.contains("completion_tokens") && u["completion_tokens"].is_number_integer())
          r.completion_tokens = u["completion_tokens"].get<int64_t>();
      }
      r.error.clear();
      break;
    }
    r.error = a.error;
    if (!a.retryable || attempt >= o.retries) break;
    double wait = o.backoff_s * double(1 << std::min(attempt, 10));
    if (deadline_s > 0 && elapsed() + wait >= deadline_s) break;
    std::this_thread::sleep_for(std::chrono::duration<double>(wait));
  }
  r.latency_s = elapsed();
  return r;
}

}  // namespace steptp::optimize
