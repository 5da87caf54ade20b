// A `steptp serve` process (or another HTTP server) for tests: bound to 127.0.0.1 on a free port (--port 0, the URL read
// from its first output line), always stopped (SIGTERM, then SIGKILL) by the destructor.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

namespace steptp::serve::testing {

class ServerProcess {
 public:
  // `steptp serve` with extra arguments.
  explicit ServerProcess(std::vector<std::string> args) : ServerProcess(Command{serve_command(std::move(args))}) {}
  // Any server that prints its port (or a URL ending in ":PORT") as its first output line.
  struct Command {
    std::vector<std::string> argv;
  };
  explicit ServerProcess(Command command) {
    int out[2];
    if (pipe(out) != 0) throw std::runtime_error("pipe");
    pid_ = fork();
    if (pid_ == 0) {
      dup2(out[1], 1);
      close(out[0]);
      close(out[1]);
      std::vector<char*> a;
      for (auto& s : command.argv) a.push_back(s.data());
      a.push_back(nullptr);
      execv(a[0], a.data());
      _exit(127);
    }
    close(out[1]);
    FILE* f = fdopen(out[0], "r");
    char line[512] = {0};
    if (!fgets(line, sizeof line, f)) {
      fclose(f);
      stop();
      throw std::runtime_error(command.argv[0] + " did not start");
    }
    fclose(f);
    std::string l = line;
    auto at = l.rfind(':');
    port_ = std::stoi(l.substr(at + 1));
  }
  ~ServerProcess() { stop(); }

  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  std::unique_ptr<httplib::Client> client(int timeout_s = 120) const {
    auto c = std::make_unique<httplib::Client>("127.0.0.1", port_);
    c->set_read_timeout(timeout_s, 0);
    c->set_write_timeout(timeout_s, 0);
    return c;
  }

  struct Reply {
    int status = 0;
    nlohmann::json body;
    std::string retry_after;
  };
  Reply post(const std::string& path, const std::string& body) const {
    auto res = client()->Post(path.c_str(), body, "application/json");
    if (!res) return {};
    Reply r{res->status, nlohmann::json::parse(res->body, nullptr, false), res->get_header_value("Retry-After")};
    return r;
  }
  Reply post(const std::string& path, const nlohmann::json& body) const { return post(path, body.dump()); }

  // SIGTERM, then the exit status (or -1 if it had to be killed after `grace_s`).
  int terminate(double grace_s = 30) {
    if (pid_ <= 0) return -1;
    kill(pid_, SIGTERM);
    auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(grace_s);
    int st = 0;
    while (std::chrono::steady_clock::now() < until) {
      if (waitpid(pid_, &st, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    stop();
    return -1;
  }

 private:
  static std::vector<std::string> serve_command(std::vector<std::string> args) {
    std::vector<std::string> argv = {STEPTP_EXE, "serve", "--host", "127.0.0.1", "--port", "0"};
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  }
  void stop() {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    int st = 0;
    for (int i = 0; i < 500 && waitpid(pid_, &st, WNOHANG) == 0; ++i) usleep(20000);
    if (waitpid(pid_, &st, WNOHANG) == 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &st, 0);
    }
    pid_ = -1;
  }
  pid_t pid_ = -1;
  int port_ = 0;
};

}  // namespace steptp::serve::testing
