// Connection threads of the HTTP server (see connection_pool.h).
#include "apps/serve/connection_pool.h"

#include <chrono>

namespace steptp::serve {

namespace {
// How long a thread above the core count waits for another connection before it exits.
constexpr auto kExtraIdle = std::chrono::seconds(10);
}  // namespace

ConnectionPool::ConnectionPool(size_t core, size_t max) : core_(std::max<size_t>(1, core)), max_(std::max(core, max)) {
  std::lock_guard lk(mu_);
  for (size_t i = 0; i < core_; ++i) {
    ++threads_;
    core_threads_.emplace_back([this] { loop(true); });
  }
}

ConnectionPool::~ConnectionPool() { shutdown(); }

void ConnectionPool::start_thread() {
  ++threads_;
  // Extra threads are detached: each removes itself from the count as its last act under the
  // lock, and shutdown() waits for the count to reach the core threads it joins.
  std::thread([this] { loop(false); }).detach();
}

void ConnectionPool::enqueue(std::function<void()> fn) {
  std::lock_guard lk(mu_);
  jobs_.push_back(std::move(fn));
  if (idle_ < jobs_.size() && threads_ < max_ && !stopping_) start_thread();
  cv_.notify_one();
}

void ConnectionPool::loop(bool core) {
  std::unique_lock lk(mu_);
  while (true) {
    ++idle_;
    bool got = core ? (cv_.wait(lk, [&] { return stopping_ || !jobs_.empty(); }), true)
                    : cv_.wait_for(lk, kExtraIdle, [&] { return stopping_ || !jobs_.empty(); });
    --idle_;
    if (jobs_.empty() && (stopping_ || !got)) break;
    auto fn = std::move(jobs_.front());
    jobs_.pop_front();
    lk.unlock();
    fn();
    lk.lock();
  }
  --threads_;
  exited_.notify_all();
}

void ConnectionPool::shutdown() {
  std::unique_lock lk(mu_);
  if (stopping_ && core_threads_.empty()) return;
  stopping_ = true;
  cv_.notify_all();
  std::vector<std::thread> core = std::move(core_threads_);
  core_threads_.clear();
  lk.unlock();
  for (auto& t : core) t.join();
  lk.lock();
  exited_.wait(lk, [&] { return threads_ == 0; });
}

size_t ConnectionPool::threads() const {
  std::lock_guard lk(mu_);
  return threads_;
}

size_t ConnectionPool::busy() const {
  std::lock_guard lk(mu_);
  return threads_ - idle_;
}

}  // namespace steptp::serve
