// A pids cgroup per job against fork bombs: the job and everything it starts (compilers, the
// measuring child, OpenMP threads; the pids controller counts threads) may hold at most N tasks,
// whatever their uid (RLIMIT_NPROC counts per uid and does not bind root). cgroup v2 where the
// unified hierarchy at /sys/fs/cgroup has the pids controller, else v1 at /sys/fs/cgroup/pids.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

namespace steptp::backend::sandbox {

class PidsCgroup {
 public:
  // A fresh cgroup (unpredictable name) limited to `max_tasks`; nullptr with `why` when the
  // controller is absent or not writable. Those left by processes that have exited (a serve
  // worker stays in its cgroup until it exits) are removed first.
  static std::unique_ptr<PidsCgroup> create(int max_tasks, std::string* why);
  // Kills whatever is left in it, then removes it.
  ~PidsCgroup();
  PidsCgroup(const PidsCgroup&) = delete;
  PidsCgroup& operator=(const PidsCgroup&) = delete;

  // Moves the calling process into the cgroup (for a forked child, before it starts anything);
  // "" or why not.
  std::string join() const;
  const std::string& path() const { return path_; }

 private:
  explicit PidsCgroup(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

}  // namespace steptp::backend::sandbox
