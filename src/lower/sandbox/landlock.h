// Landlock (the unprivileged Linux security module for file-system and network access control),
// through its raw system calls: the calling thread, and whatever it forks and executes later, can
// reach only the paths of its rules, with the rights given there; TCP bind/connect, abstract
// unix sockets and signals to processes outside the domain are denied where the kernel's ABI
// has them (4: TCP, 6: scopes). Rulesets stack: a later, stricter one narrows an earlier one.
#pragma once

#include <string>
#include <vector>

namespace steptp::backend::sandbox {

// The kernel's Landlock ABI version; 0 when Landlock is absent or disabled (`why` says which).
int landlock_abi(std::string* why = nullptr);

enum class Access {
  Read,       // read files, list directories
  ReadExec,   // Read, and execute (the toolchain)
  ReadWrite,  // read and write existing files (devices, lock files); no creating or removing
  Full,       // everything beneath: create, remove, rename (the job's directory)
};

struct PathRule {
  std::string path;  // a missing path is skipped (e.g. /lib32 on a machine without it)
  Access access;
};

// Restricts this thread to `rules` (no rules: no file system at all). Returns "" when applied,
// otherwise why not (the thread is then unchanged). Needs no_new_privs or CAP_SYS_ADMIN.
std::string restrict_paths(const std::vector<PathRule>& rules);

}  // namespace steptp::backend::sandbox
