// HTTP front of `steptp serve` (see server.h).
#include "apps/serve/server.h"

#include <arpa/inet.h>
#include <sys/socket.h>
#include <httplib.h>
#include <signal.h>

#include <chrono>
#include <future>
#include <random>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "apps/serve/client_connection.h"
#include "apps/serve/connection_pool.h"
#include "apps/serve/metrics.h"
#include "apps/serve/pool.h"
#include "base/error.h"

namespace steptp::serve {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// Statuses of the request's own errors: their kinds' (base/error.h), as the jobs' are.
constexpr int kBadRequest = base::http_status(base::ErrorKind::BadRequest);
constexpr int kTooLarge = base::http_status(base::ErrorKind::TooLarge);

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
  Service(const ServeOptions& o, const ConnectionPool* connections)
      : o_(o),
        pool_(o.worker_argv, o.workers, o.queue, o.machine_inflight > 0 ? o.machine_inflight : 2 * o.workers + 2),
        connections_(connections) {}

  void install(httplib::Server& svr) {
    for (const char* ep : {"check", "verify", "apply", "lower", "measure", "score"})
      post(svr, fmt::format("/v1/{}", ep), [this, ep](const json& body, const Abandoned& abandoned) {
        return single(ep, body, abandoned);
      });
    post(svr, "/v1/score/batch", [this](const json& body, const Abandoned& abandoned) { return batch(body, abandoned); });
    svr.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
      // A job older than every deadline a worker enforces means a worker no longer answers.
      double oldest = pool_.oldest_running_s();
      bool wedged = o_.wedged_after_s > 0 && oldest > o_.wedged_after_s;
      std::string status = pool_.stopping() ? "stopping" : wedged ? "wedged" : "ok";
      int code = status == "ok" ? 200 : 503;
      send(res, code, {{"status", status}, {"workers", pool_.workers()}, {"queued", pool_.queued()},
                       {"running", pool_.running()}, {"oldest_job_s", oldest},
                       {"network_isolated", pool_.network_isolated()}, {"sandbox", pool_.sandbox()}});
      metrics_.request("/health", code, 0);
    });
    svr.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      Gauges g;
      g.queued = pool_.queued();
      g.running = pool_.running();
      g.restarts = pool_.restarts();
      g.workers = pool_.workers();
      g.cancelled = pool_.cancelled();
      g.oldest_job_s = pool_.oldest_running_s();
      g.connection_threads = connections_->threads();
      g.connections_busy = connections_->busy();
      res.set_content(metrics_.text(g) + pool_.sandbox_metrics(), "text/plain; version=0.0.4");
    });
    for (const char* p : {"/health", "/metrics"})
      svr.Post(p, [](const httplib::Request&, httplib::Response& res) {
        res.set_header("Allow", "GET");
        send(res, 405, {{"error", "method not allowed; use GET"}});
      });
    svr.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      if (o_.api_key.empty() || req.path == "/health" || authorized(req)) return httplib::Server::HandlerResponse::Unhandled;
      res.set_header("WWW-Authenticate", "Bearer");
      send(res, 401, {{"error", "missing or wrong API key; send 'Authorization: Bearer KEY'"}});
      metrics_.request(req.path, 401, 0);
      return httplib::Server::HandlerResponse::Handled;
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

  // Stops admitting: queued jobs are answered 503, running ones get the grace (then 503).
  void shutdown(double grace_s) { pool_.shutdown(grace_s); }

 private:
  struct Reply {
    int status = 500;
    json body;
    bool retry_later = false;
  };
  struct TooDeep {};
  using Abandoned = std::function<bool()>;
  using Handler = std::function<Reply(const json& body, const Abandoned& abandoned)>;

  // Reads the body itself so that a chunked body is held to the same limit as one with a
  // Content-Length (cpp-httplib applies its payload limit to the latter only).
  void post(httplib::Server& svr, const std::string& path, Handler h) {
    svr.Post(path, [this, path, h](const httplib::Request& req, httplib::Response& res,
                                   const httplib::ContentReader& read) {
      auto t0 = Clock::now();
      std::string body;
      bool too_large = false;
      bool complete = read([&](const char* data, size_t n) {
        if (int64_t(body.size() + n) > o_.limits.max_body_bytes) return !(too_large = true);
        body.append(data, n);
        return true;
      });
      Reply r;
      if (too_large || (!complete && res.status == 413)) {
        res.set_header("Connection", "close");  // the rest of the body is never read
        r = {kTooLarge,
             {{"error", fmt::format("request body over the limit max_body_bytes ({} bytes)", o_.limits.max_body_bytes)},
              {"limit", "max_body_bytes"},
              {"max", o_.limits.max_body_bytes}}};
      } else if (!complete) {
        res.set_header("Connection", "close");
        r = {kBadRequest,
             {{"error", "the request body could not be read (malformed chunked encoding or a client time-out)"}}};
      } else {
        ClientConnection client(req.remote_addr, req.remote_port, req.local_port);
        r = parse_and_run(body, h, [&client] { return client.gone(); });
      }
      if (r.retry_later) res.set_header("Retry-After", "1");
      send(res, r.status, r.body);
      metrics_.request(path, r.status, std::chrono::duration<double>(Clock::now() - t0).count());
    });
    svr.Get(path, [](const httplib::Request&, httplib::Response& res) {
      res.set_header("Allow", "POST");
      send(res, 405, {{"error", "method not allowed; use POST with a JSON body"}});
    });
  }

  bool authorized(const httplib::Request& req) const {
    const std::string want = "Bearer " + o_.api_key;
    const std::string got = req.get_header_value("Authorization");
    // Compared in time independent of where they differ.
    unsigned diff = unsigned(got.size() ^ want.size());
    for (size_t i = 0; i < want.size(); ++i) diff |= unsigned(uint8_t(want[i] ^ (i < got.size() ? got[i] : 0)));
    return diff == 0;
  }

  Reply parse_and_run(const std::string& text, const Handler& h, const Abandoned& abandoned) {
    json body;
    const int max_depth = o_.limits.max_json_depth;
    try {
      // The depth is checked while parsing, so a 100,000-deep body is refused at its 65th
      // bracket and never becomes a value that later recursion (printing, the job's copy) walks.
      body = json::parse(text, [max_depth](int depth, json::parse_event_t, json&) {
        if (depth > max_depth) throw TooDeep{};
        return true;
      });
    } catch (const TooDeep&) {
      return {kBadRequest,
              {{"error", fmt::format("request body nested deeper than the limit max_json_depth ({})", max_depth)},
               {"limit", "max_json_depth"},
               {"max", max_depth}}};
    } catch (const json::parse_error& e) {
      auto [line, col] = line_col(text, e.byte > 0 ? e.byte - 1 : 0);
      return {kBadRequest,
              {{"error", fmt::format("request body is not JSON: {}", e.what())}, {"line", line}, {"col", col}}};
    }
    if (!body.is_object()) return {kBadRequest, {{"error", "the request body must be a JSON object"}}};
    json rid = nullptr;
    if (body.contains("request_id")) {
      rid = body["request_id"];
      body.erase("request_id");
      if (!rid.is_string() && !rid.is_number_integer())
        return {kBadRequest, {{"error", "field 'request_id' must be a string or an integer"}}};
    }
    Reply r = h(body, abandoned);
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

  // Measuring jobs: /v1/measure, and /v1/score unless it says "measure": false.
  static JobClass job_class(const std::string& ep, const json& request) {
    if (ep == "measure") return JobClass::Machine;
    bool no_measure = request.is_object() && request.contains("measure") && request["measure"].is_boolean() &&
                      !request["measure"].get<bool>();
    if (ep == "score" && !no_measure) return JobClass::Machine;
    return JobClass::Quick;
  }

  // A reply from the pool, with the service's failures counted by kind.
  Reply finish(const std::string& ep, const json& r) {
    Reply out{r.value("status", 500), r.value("body", json::object())};
    if (out.status == 499) return out;
    if (out.body.is_object() && out.body.contains("failure_kind") && out.body["failure_kind"].is_string())
      metrics_.job_failure(out.body["failure_kind"].get<std::string>());
    else if (out.status == 503)
      metrics_.job_failure(pool_.stopping() ? "shutdown" : "worker_died");
    if (out.status == 503) out.retry_later = true;
    if (ep == "score" && out.status == 200) count_answers(out.body);
    return out;
  }

  Reply single(const std::string& ep, const json& body, const Abandoned& abandoned) {
    JobClass c = job_class(ep, body);
    if (!pool_.admit(1, c)) return busy();
    return finish(ep, pool_.run(job(ep, body), c, abandoned));
  }

  Reply batch(const json& body, const Abandoned& abandoned) {
    for (const auto& [k, v] : body.items())
      if (k != "items") return {kBadRequest, {{"error", fmt::format("unknown field '{}'", k)}}};
    if (!body.contains("items") || !body["items"].is_array())
      return {kBadRequest, {{"error", "field 'items' must be a list of score requests"}}};
    const json& items = body["items"];
    if (items.empty() || int(items.size()) > o_.max_batch)
      return {kBadRequest, {{"error", fmt::format("field 'items' must hold 1 to {} score requests", o_.max_batch)}}};
    // A batch is admitted whole: as measuring jobs when any item measures.
    JobClass c = JobClass::Quick;
    for (const auto& it : items)
      if (job_class("score", it) == JobClass::Machine) c = JobClass::Machine;
    if (!pool_.admit(int(items.size()), c)) return busy();
    std::vector<std::future<Reply>> futs;
    for (const auto& it : items)
      futs.push_back(std::async(std::launch::async, [this, it, c, &abandoned] {
        return finish("score", pool_.run(job("score", it), c, abandoned));
      }));
    json results = json::array();
    for (auto& f : futs) {
      Reply r = f.get();
      json b = r.body;
      b["status"] = r.status;
      results.push_back(std::move(b));
    }
    return {200, {{"results", results}}};
  }

  ServeOptions o_;
  WorkerPool pool_;
  const ConnectionPool* connections_;
  Metrics metrics_;
};

// cpp-httplib listens with a backlog of 5 (CPPHTTPLIB_LISTEN_BACKLOG, fixed when Debian built the
// library): a burst of connections overflowed it and clients waited a SYN retransmission (1 s
// and more) before their 429. Listening again on the bound socket only raises the backlog.
class Listener : public httplib::Server {
 public:
  void raise_backlog(int backlog) { ::listen(svr_sock_, backlog); }
};

}  // namespace

bool is_loopback(const std::string& host) {
  if (host == "localhost") return true;
  in_addr v4{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  return inet_pton(AF_INET6, host.c_str(), &v6) == 1 && IN6_IS_ADDR_LOOPBACK(&v6);
}

int run_server(const ServeOptions& o, const std::function<void(const std::string&)>& on_listening) {
  if (!is_loopback(o.host) && o.api_key.empty() && !o.insecure)
    throw base::Error(
        base::ErrorKind::BadRequest,
        fmt::format("refusing to serve on the non-loopback address {} without an API key: give --api-key (or "
                    "$STEPTP_API_KEY), or --insecure to serve it unauthenticated",
                    o.host));
  // Signals go to one thread (sigwait), set before any thread starts so all inherit the mask.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);  // a dead worker's pipe is an error result, not the end

  Listener svr;
  // The server takes ownership of its task queue when it starts listening (listen_after_bind,
  // called once below); the service reads the thread counts for /metrics, so the pool is made here.
  auto* connections = new ConnectionPool(size_t(std::max(4, o.threads)), size_t(std::max(o.threads, o.max_connections)));
  svr.new_task_queue = [connections]() -> httplib::TaskQueue* { return connections; };
  Service service(o, connections);
  svr.set_payload_max_length(size_t(o.limits.max_body_bytes));
  // A client that sends nothing for read_timeout_s is dropped (headers and body alike), so idle
  // or half-open connections give their thread back.
  svr.set_read_timeout(o.read_timeout_s, 0);
  svr.set_write_timeout(10, 0);
  svr.set_keep_alive_timeout(2);
  svr.set_keep_alive_max_count(100000);
  svr.set_tcp_nodelay(true);  // replies are small: no Nagle wait for the client's delayed ACK
  service.install(svr);
  int port = o.port;
  if (port == 0) port = svr.bind_to_any_port(o.host);
  else if (!svr.bind_to_port(o.host, port)) port = -1;
  if (port > 0) svr.raise_backlog(SOMAXCONN);
  if (port <= 0) {
    service.shutdown(0);
    delete connections;  // never handed over: the server did not listen
    throw base::Error(base::ErrorKind::Failed, fmt::format("cannot listen on {}:{}", o.host, o.port));
  }
  std::thread stopper([&] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    // Stop accepting first, while the pool answers queued jobs 503 and gives running ones their
    // grace: listen_after_bind returns once every connection's handler has replied.
    std::thread drain([&] { service.shutdown(o.shutdown_grace_s); });
    svr.stop();
    drain.join();
  });
  on_listening(fmt::format("http://{}:{}", o.host, port));
  svr.listen_after_bind();
  stopper.join();
  service.shutdown(0);
  return 0;
}

}  // namespace steptp::serve
