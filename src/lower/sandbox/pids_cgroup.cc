#include "lower/sandbox/pids_cgroup.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include <fmt/format.h>

namespace steptp::backend::sandbox {
namespace {

namespace fs = std::filesystem;

bool write_text(const std::string& path, const std::string& text, std::string* why) {
  std::ofstream out(path);
  out << text << std::flush;
  if (out) return true;
  if (why) *why = fmt::format("cannot write {}: {}", path, std::strerror(errno));
  return false;
}

bool has_word(const std::string& path, const std::string& word) {
  std::ifstream in(path);
  std::string w;
  while (in >> w)
    if (w == word) return true;
  return false;
}

// The directory under which job cgroups are made, created on first use; "" with `why`.
std::string parent_dir(std::string* why) {
  std::error_code ec;
  if (has_word("/sys/fs/cgroup/cgroup.controllers", "pids")) {
    // v2: a cgroup holding only other cgroups, with pids delegated to its children ("no
    // internal processes": the jobs live in leaves below it).
    const std::string dir = "/sys/fs/cgroup/steptp-sandbox";
    fs::create_directory(dir, ec);
    if (ec) return *why = fmt::format("cannot create {}: {}", dir, ec.message()), "";
    if (!write_text("/sys/fs/cgroup/cgroup.subtree_control", "+pids", why) ||
        !write_text(dir + "/cgroup.subtree_control", "+pids", why))
      return "";
    return dir;
  }
  if (fs::exists("/sys/fs/cgroup/pids/cgroup.procs")) {
    const std::string dir = "/sys/fs/cgroup/pids/steptp-sandbox";
    fs::create_directory(dir, ec);
    if (ec) return *why = fmt::format("cannot create {}: {}", dir, ec.message()), "";
    return dir;
  }
  *why = "no pids cgroup controller (neither cgroup v2 with pids nor /sys/fs/cgroup/pids)";
  return "";
}

}  // namespace

std::unique_ptr<PidsCgroup> PidsCgroup::create(int max_tasks, std::string* why) {
  std::string parent = parent_dir(why);
  if (parent.empty()) return nullptr;
  // Named after the creating process: those of processes that no longer exist are left over.
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(parent, ec)) {
    pid_t owner = pid_t(std::atol(e.path().filename().c_str()));
    if (owner > 0 && kill(owner, 0) != 0 && errno == ESRCH) rmdir(e.path().c_str());  // EBUSY while in use
  }
  std::string tmpl = fmt::format("{}/{}-XXXXXX", parent, getpid());
  if (!mkdtemp(tmpl.data())) {
    *why = fmt::format("cannot create a cgroup under {}: {}", parent, std::strerror(errno));
    return nullptr;
  }
  std::unique_ptr<PidsCgroup> cg(new PidsCgroup(tmpl));
  if (!write_text(tmpl + "/pids.max", std::to_string(max_tasks), why)) return nullptr;
  return cg;
}

std::string PidsCgroup::join() const {
  std::string why;
  write_text(path_ + "/cgroup.procs", "0", &why);  // 0: the writing process
  return why;
}

PidsCgroup::~PidsCgroup() {
  // A job's processes die with it (its PID namespace, its process group); what a killed job
  // left is killed here. rmdir succeeds once the last task has exited.
  for (int attempt = 0; attempt < 200; ++attempt) {
    if (rmdir(path_.c_str()) == 0 || errno == ENOENT) return;
    std::ifstream procs(path_ + "/cgroup.procs");
    for (pid_t pid; procs >> pid;) kill(pid, SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace steptp::backend::sandbox
