#include "apps/dataset/workers.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <iostream>
#include <stdexcept>

#include "base/error.h"

namespace steptp::dataset {

std::vector<int> run_workers(int jobs, const std::function<int(int)>& worker) {
  if (jobs <= 1) return {worker(0)};
  std::cout.flush();
  std::cerr.flush();
  std::vector<pid_t> pids;
  const pid_t parent = getpid();
  for (int k = 0; k < jobs; ++k) {
    pid_t pid = fork();
    if (pid < 0) throw base::Error(base::ErrorKind::Failed, "fork failed");
    if (pid == 0) {
      // A worker dies with its parent (a killed run, an MPI rank ended by mpirun): no orphan
      // goes on writing the checkpoint while a rerun resumes from it.
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(1);
      int rc = 1;
      try {
        rc = worker(k);
      } catch (...) {
        rc = 1;
      }
      std::cerr.flush();
      _exit(rc);
    }
    pids.push_back(pid);
  }
  std::vector<int> codes;
  for (pid_t p : pids) {
    int status = 0;
    waitpid(p, &status, 0);
    codes.push_back(WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  }
  return codes;
}

}  // namespace steptp::dataset
