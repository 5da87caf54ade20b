// Runs a shell command line from a test and captures its standard output (the caller redirects
// stderr as it needs, e.g. "2>&1"): the tests that drive the steptp executable or mpirun.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace steptp::testing {

struct ShellResult {
  int code = -1;  // exit status; -1 when the command did not exit normally
  std::string out;
};

inline ShellResult run_shell(const std::string& cmd) {
  ShellResult r;
  FILE* f = popen(cmd.c_str(), "r");
  if (!f) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) r.out.append(buf, n);
  int st = pclose(f);
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

}  // namespace steptp::testing
