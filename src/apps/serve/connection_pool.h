// The threads that serve HTTP connections (cpp-httplib's TaskQueue). cpp-httplib handles a
// connection on one thread from its first byte to its close, and a /v1 request holds that thread
// while its job waits for a worker. With a fixed pool, a burst of slow requests (or of idle,
// half-open connections) took every thread: later connections — /health included — waited in
// the pool's list and never reached the handler that answers 429. This pool keeps `core` threads
// and starts another whenever a connection arrives while all are busy, up to `max` threads, so
// every connection reaches a handler at once (and over-capacity requests get their 429 within
// milliseconds); only beyond `max` concurrent connections does one wait. Threads above `core`
// exit after an idle interval.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include <httplib.h>

namespace steptp::serve {

class ConnectionPool : public httplib::TaskQueue {
 public:
  ConnectionPool(size_t core, size_t max);
  ~ConnectionPool() override;

  void enqueue(std::function<void()> fn) override;
  void shutdown() override;  // runs what is queued, then joins every thread

  size_t threads() const;  // started and not yet exited
  size_t busy() const;     // serving a connection now

 private:
  void start_thread();  // with mu_ held
  void loop(bool core);

  const size_t core_, max_;
  mutable std::mutex mu_;
  std::condition_variable cv_, exited_;
  std::deque<std::function<void()>> jobs_;
  std::vector<std::thread> core_threads_;
  size_t threads_ = 0, idle_ = 0;
  bool stopping_ = false;
};

}  // namespace steptp::serve
