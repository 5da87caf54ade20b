// Worker processes of the server (see pool.h).
#include "apps/serve/pool.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <stdexcept>

#include <fmt/format.h>

#include "apps/serve/frames.h"
#include "base/error.h"

extern char** environ;

namespace steptp::serve {

using nlohmann::json;

WorkerPool::WorkerPool(std::vector<std::string> argv, int workers, int queue_capacity, int machine_inflight)
    : argv_(std::move(argv)),
      capacity_(queue_capacity),
      machine_capacity_(machine_inflight),
      slots_(size_t(std::max(1, workers))) {
  for (auto& s : slots_) spawn(s);
  std::string line = sandboxed_ ? layers_.describe() : "off (--no-sandbox)";
  fprintf(stderr, "steptp serve: sandbox: %s\n", line.c_str());
}

WorkerPool::~WorkerPool() { shutdown(0); }

void WorkerPool::spawn(Slot& s) {
  int in[2], out[2];  // in: server -> worker stdin; out: worker stdout -> server
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0)
    throw base::Error(base::ErrorKind::Failed, "cannot create worker pipes");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  std::vector<char*> args;
  for (auto& a : argv_) args.push_back(a.data());
  args.push_back(nullptr);
  // The server blocks SIGTERM/SIGINT for its signal thread; the worker starts with none blocked.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, argv_[0].c_str(), &fa, &attr, args.data(), environ);
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&fa);
  close(in[0]);
  close(out[1]);
  if (rc != 0) {
    close(in[1]);
    close(out[0]);
    throw base::Error(base::ErrorKind::Failed, "cannot start a worker process: " + argv_[0]);
  }
  s.pid = pid;
  s.to = in[1];
  s.from = out[0];
  auto hello = read_frame(s.from, now_ms() + 60000);
  if (!hello || hello->type != 'H') {
    stop(s);
    throw base::Error(base::ErrorKind::Failed, "a worker process did not start");
  }
  json h = json::parse(hello->payload, nullptr, false);
  if (h.is_object() && h.contains("error") && h["error"].is_string()) {
    stop(s);
    throw base::Error(base::ErrorKind::Failed, h["error"].get<std::string>());
  }
  if (!h.is_object() || !h.value("network_isolated", false)) isolated_ = false;
  if (h.is_object() && h.contains("sandbox")) layers_.meet(backend::sandbox::LayerReport::from_json(h["sandbox"]));
  else sandboxed_ = false;
}

void WorkerPool::stop(Slot& s) {
  if (s.to >= 0) close(s.to);
  if (s.from >= 0) close(s.from);
  s.to = s.from = -1;
  if (s.pid > 0) {
    int st = 0;
    // Closing its input ends the worker; a stuck one is killed.
    for (int i = 0; i < 200 && waitpid(s.pid, &st, WNOHANG) == 0; ++i) usleep(10000);
    if (waitpid(s.pid, &st, WNOHANG) == 0) {
      kill(s.pid, SIGKILL);
      waitpid(s.pid, &st, 0);
    }
  }
  s.pid = -1;
}

bool WorkerPool::admit(int n, JobClass c) {
  std::lock_guard lk(mu_);
  if (stopping_ || queued_ + n > capacity_) return false;
  if (c == JobClass::Machine) {
    if (machine_inflight_ + n > machine_capacity_) return false;
    machine_inflight_ += n;
  }
  queued_ += n;
  return true;
}

json WorkerPool::run(const json& job, JobClass c, const std::function<bool()>& abandoned) {
  Slot* slot = nullptr;
  auto free_slot = [&]() -> Slot* {
    for (auto& s : slots_)
      if (!s.busy && s.pid > 0) return &s;
    return nullptr;
  };
  {
    std::unique_lock lk(mu_);
    auto leave = [&](int status, const char* why) {
      --queued_;
      if (c == JobClass::Machine) --machine_inflight_;
      cv_.notify_all();
      return json{{"status", status}, {"body", {{"error", why}}}};
    };
    while (!(slot = free_slot())) {
      if (stopping_) return leave(503, "the service is shutting down; retry elsewhere or later");
      cv_.wait_for(lk, std::chrono::milliseconds(20));
      if (abandoned && !free_slot() && abandoned()) {
        ++cancelled_;
        return leave(499, "the client closed the connection before a worker was free");
      }
    }
    slot->busy = true;
    slot->started_ms = now_ms();
    --queued_;
    ++running_;
  }
  json reply;
  bool ok = write_frame(slot->to, 'J', job.dump());
  std::optional<Frame> f;
  if (ok) f = read_frame(slot->from);
  if (f && f->type == 'R') reply = json::parse(f->payload, nullptr, false);
  if (reply.is_discarded() || reply.is_null()) {
    // The worker itself died (or was stopped by shutdown): the job fails, the worker is replaced
    // unless the service is stopping.
    std::lock_guard lk(mu_);
    reply = {{"status", 503}, {"body", {{"error", stopping_ ? "the service stopped before the job finished"
                                                                : "worker process failed; retry"}}}};
    stop(*slot);
    if (!stopping_) {
      ++restarts_;
      try {
        spawn(*slot);
      } catch (const std::exception&) {
      }
    }
  }
  {
    std::lock_guard lk(mu_);
    slot->busy = false;
    --running_;
    if (c == JobClass::Machine) --machine_inflight_;
  }
  cv_.notify_all();  // a waiting job or shutdown()
  return reply;
}

int WorkerPool::queued() const {
  std::lock_guard lk(mu_);
  return queued_;
}
int WorkerPool::running() const {
  std::lock_guard lk(mu_);
  return running_;
}
int WorkerPool::restarts() const {
  std::lock_guard lk(mu_);
  return restarts_;
}
int WorkerPool::cancelled() const {
  std::lock_guard lk(mu_);
  return cancelled_;
}
double WorkerPool::oldest_running_s() const {
  std::lock_guard lk(mu_);
  int64_t now = now_ms(), oldest = 0;
  for (const auto& s : slots_)
    if (s.busy) oldest = std::max(oldest, now - s.started_ms);
  return double(oldest) / 1000.0;
}
bool WorkerPool::stopping() const {
  std::lock_guard lk(mu_);
  return stopping_;
}
bool WorkerPool::network_isolated() const {
  std::lock_guard lk(mu_);
  return isolated_;
}

json WorkerPool::sandbox() const {
  std::lock_guard lk(mu_);
  json layers = json::object(), missing = json::object();
  for (const auto& name : backend::sandbox::layer_names()) layers[name] = sandboxed_ && layers_.applied(name);
  if (sandboxed_)
    for (const auto& [name, why] : layers_.missing()) missing[name] = why;
  return {{"enabled", sandboxed_}, {"layers", layers}, {"missing", missing}};
}

std::string WorkerPool::sandbox_metrics() const {
  json s = sandbox();
  std::string out =
      "# HELP steptp_sandbox_enabled Whether jobs run in the sandbox (0: --no-sandbox).\n"
      "# TYPE steptp_sandbox_enabled gauge\n";
  out += fmt::format("steptp_sandbox_enabled {}\n", s["enabled"].get<bool>() ? 1 : 0);
  out += "# HELP steptp_sandbox_layer Whether each sandbox layer applies on every worker (1) or not (0).\n"
         "# TYPE steptp_sandbox_layer gauge\n";
  for (const auto& [name, on] : s["layers"].items())
    out += fmt::format("steptp_sandbox_layer{{layer=\"{}\"}} {}\n", name, on.get<bool>() ? 1 : 0);
  return out;
}

void WorkerPool::shutdown(double grace_s) {
  std::unique_lock lk(mu_);
  if (stopped_) return;
  stopping_ = true;
  cv_.notify_all();  // queued jobs leave with 503
  cv_.wait_for(lk, std::chrono::duration<double>(std::max(0.0, grace_s)), [&] { return running_ == 0 && queued_ == 0; });
  // Past the grace, busy workers are killed under their jobs: the job's read of the reply
  // fails, run() answers 503 and stops the slot itself (closing a pipe another thread is
  // reading would let its descriptor number be reused under that read). Idle workers end when
  // their input closes.
  for (auto& s : slots_)
    if (s.busy && s.pid > 0) kill(s.pid, SIGKILL);
  cv_.wait(lk, [&] { return running_ == 0 && queued_ == 0; });
  for (auto& s : slots_) stop(s);
  stopped_ = true;
}

}  // namespace steptp::serve
