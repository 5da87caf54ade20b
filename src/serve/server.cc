// HTTP front of `steptp serve` (see server.h).
#include "serve/server.h"

#include <httplib.h>
#include <signal.h>

#include <chrono>
#include <future>
#include <random>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "serve/metrics.h"
#include "serve/pool.h"

namespace steptp::serve {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

const char* kJson = "application/json";

void send(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump(), kJson);
}

// 1-based line and column of byte `pos` in `text`.
std::pair<size_t, size_t> line_col(const std::string& text, size_t pos) {
  size_t line = 1, col = 1;
  for (size_t i = 0; i < pos && i < text.size(); ++i) {
    if (text[i] == '\n') ++line, col = 1;
    else ++col;
  }
  return {line, col};
}

uint64_t fresh_seed() {
  static thread_local std::random_device rd;
  return (uint64_t(rd()) << 32) ^ rd();
}

class Service {
 public:
  explicit Service(const ServeOptions& o) : o_(o), pool_(o.worker_argv, o.workers, o.queue) {}

  void install(httplib::Server& svr) {
    for (const char* ep : {"check", "verify", "apply", "lower", "measure", "score"})
      post(svr, fmt::format("/v1/{}", ep), [this, ep](const json& body, const json& rid) {
        return single(ep, body, rid);
      });
    post(svr, "/v1/score/batch", [this](const json& body, const json& rid) { return batch(body, rid); });
    svr.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
      send(res, 200, {{"status", "ok"}, {"workers", pool_.workers()}, {"queued", pool_.queued()},
                      {"running", pool_.running()}, {"network_isolated", pool_.network_isolated()},
                      {"sandbox", pool_.sandbox()}});
      metrics_.request("/health", 200, 0);
    });
    svr.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(metrics_.text(pool_.queued(), pool_.running(), pool_.restarts(), pool_.workers()) +
                          pool_.sandbox_metrics(),
                      "text/plain; version=0.0.4");
    });
    for (const char* p : {"/health", "/metrics"})
      svr.Post(p, [](const httplib::Request&, httplib::Response& res) {
        res.set_header("Allow", "GET");
        send(res, 405, {{"error", "method not allowed; use GET"}});
      });
    svr.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
      if (!res.body.empty()) return;
      std::string why = res.status == 404   ? fmt::format("no endpoint {} {}", req.method, req.path)
                        : res.status == 413 ? "request body too large"
                                            : fmt::format("HTTP {}", res.status);
      res.set_content(json{{"error", why}}.dump(), kJson);
    });
    svr.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
      std::string what = "internal error";
      try {
        if (ep) std::rethrow_exception(ep);
      } catch (const std::exception& e) {
        what = e.what();
      } catch (...) {
      }
      send(res, 500, {{"error", what}});
    });
  }

  void shutdown() { pool_.shutdown(); }

 private:
  struct Reply {
    int status;
    json body;
    bool retry_later = false;
  };
  using Handler = std::function<Reply(const json& body, const json& request_id)>;

  void post(httplib::Server& svr, const std::string& path, Handler h) {
    svr.Post(path, [this, path, h](const httplib::Request& req, httplib::Response& res) {
      auto t0 = Clock::now();
      Reply r = parse_and_run(req.body, h);
      if (r.retry_later) res.set_header("Retry-After", "1");
      send(res, r.status, r.body);
      metrics_.request(path, r.status, std::chrono::duration<double>(Clock::now() - t0).count());
    });
    svr.Get(path, [](const httplib::Request&, httplib::Response& res) {
      res.set_header("Allow", "POST");
      send(res, 405, {{"error", "method not allowed; use POST with a JSON body"}});
    });
  }

  Reply parse_and_run(const std::string& text, const Handler& h) {
    json body;
    try {
      body = json::parse(text);
    } catch (const json::parse_error& e) {
      auto [line, col] = line_col(text, e.byte > 0 ? e.byte - 1 : 0);
      return {400, {{"error", fmt::format("request body is not JSON: {}", e.what())}, {"line", line}, {"col", col}}};
    }
    if (!body.is_object()) return {400, {{"error", "the request body must be a JSON object"}}};
    json rid = nullptr;
    if (body.contains("request_id")) {
      rid = body["request_id"];
      body.erase("request_id");
      if (!rid.is_string() && !rid.is_number_integer())
        return {400, {{"error", "field 'request_id' must be a string or an integer"}}};
    }
    Reply r = h(body, rid);
    if (!rid.is_null() && r.body.is_object()) r.body["request_id"] = rid;
    return r;
  }

  static Reply busy() { return {429, {{"error", "queue full; retry after the Retry-After seconds"}}, true}; }

  json job(const std::string& ep, const json& request) {
    return {{"endpoint", ep}, {"request", request}, {"verify_seed", fresh_seed()}, {"input_seed", fresh_seed()}};
  }

  void count_answers(const json& body) {
    if (!body.contains("answers")) return;
    if (body["answers"].empty()) metrics_.failed_stage(body.value("failed_stage", "parsed"));
    for (const auto& a : body["answers"])
      metrics_.failed_stage(a["failed_stage"].is_string() ? a["failed_stage"].get<std::string>() : "passed");
  }

  Reply single(const std::string& ep, const json& body, const json&) {
    if (!pool_.admit(1)) return busy();
    json r = pool_.run(job(ep, body));
    Reply out{r.value("status", 500), r.value("body", json::object())};
    if (ep == "score" && out.status == 200) count_answers(out.body);
    return out;
  }

  Reply batch(const json& body, const json&) {
    for (const auto& [k, v] : body.items())
      if (k != "items") return {400, {{"error", fmt::format("unknown field '{}'", k)}}};
    if (!body.contains("items") || !body["items"].is_array())
      return {400, {{"error", "field 'items' must be a list of score requests"}}};
    const json& items = body["items"];
    if (items.empty() || int(items.size()) > o_.max_batch)
      return {400, {{"error", fmt::format("field 'items' must hold 1 to {} score requests", o_.max_batch)}}};
    if (!pool_.admit(int(items.size()))) return busy();
    std::vector<std::future<json>> futs;
    for (const auto& it : items)
      futs.push_back(std::async(std::launch::async, [this, it] { return pool_.run(job("score", it)); }));
    json results = json::array();
    for (auto& f : futs) {
      json r = f.get();
      json b = r.value("body", json::object());
      b["status"] = r.value("status", 500);
      if (b["status"] == 200) count_answers(b);
      results.push_back(std::move(b));
    }
    return {200, {{"results", results}}};
  }

  ServeOptions o_;
  WorkerPool pool_;
  Metrics metrics_;
};

}  // namespace

int run_server(const ServeOptions& o, const std::function<void(const std::string&)>& on_listening) {
  // Signals go to one thread (sigwait), set before any thread starts so all inherit the mask.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);  // a dead worker's pipe is an error result, not the end

  Service service(o);
  httplib::Server svr;
  const int threads = std::max(4, o.threads);
  svr.new_task_queue = [threads] { return new httplib::ThreadPool(size_t(threads)); };
  svr.set_payload_max_length(o.max_body_bytes);
  svr.set_read_timeout(10, 0);
  svr.set_write_timeout(10, 0);
  svr.set_keep_alive_timeout(2);
  svr.set_keep_alive_max_count(100000);
  svr.set_tcp_nodelay(true);  // replies are small: no Nagle wait for the client's delayed ACK
  service.install(svr);
  int port = o.port;
  if (port == 0) port = svr.bind_to_any_port(o.host);
  else if (!svr.bind_to_port(o.host, port)) port = -1;
  if (port <= 0) {
    service.shutdown();
    throw std::runtime_error(fmt::format("cannot listen on {}:{}", o.host, o.port));
  }
  std::thread stopper([&] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    svr.stop();
  });
  on_listening(fmt::format("http://{}:{}", o.host, port));
  svr.listen_after_bind();  // returns after stop(), once in-flight requests are answered
  stopper.join();
  service.shutdown();
  return 0;
}

}  // namespace steptp::serve
