#include "backend/sandbox/seccomp_filter.h"

#include <sched.h>
#include <seccomp.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include <fmt/format.h>

namespace steptp::backend::sandbox {
namespace {

const char* const kJobDenied[] = {
    "socket", "socketpair", "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd",
    "unshare", "setns", "mount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree", "fsopen",
    "fsmount", "fspick", "keyctl", "add_key", "request_key", "init_module", "finit_module", "delete_module",
    "kexec_load", "kexec_file_load", "bpf", "perf_event_open", "userfaultfd", "io_uring_setup",
    "io_uring_enter", "io_uring_register", "open_by_handle_at", "name_to_handle_at", "acct", "swapon", "swapoff",
    "reboot", "settimeofday", "clock_settime", "adjtimex", "clock_adjtime"};
const char* const kKernelRunDenied[] = {"execve", "execveat", "fork", "vfork"};

}  // namespace

std::string install_seccomp(SyscallProfile profile) {
  std::unique_ptr<void, void (*)(scmp_filter_ctx)> ctx(seccomp_init(SCMP_ACT_ALLOW), seccomp_release);
  if (!ctx) return "seccomp_init failed";
  auto deny = [&](const char* name, int err) -> std::string {
    int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR) return {};  // unknown to this libseccomp: nothing to deny
    int rc = seccomp_rule_add(ctx.get(), SCMP_ACT_ERRNO(err), nr, 0);
    return rc == 0 ? std::string() : fmt::format("seccomp rule for {}: {}", name, std::strerror(-rc));
  };
  std::string why;
  for (const char* name : kJobDenied)
    if (why.empty()) why = deny(name, EPERM);
  if (profile == SyscallProfile::KernelRun && why.empty()) {
    for (const char* name : kKernelRunDenied)
      if (why.empty()) why = deny(name, EPERM);
    if (why.empty()) why = deny("clone3", ENOSYS);
    // On x86-64 and aarch64 clone's first argument is its flags.
    int rc = seccomp_rule_add(ctx.get(), SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
                              SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0));
    if (why.empty() && rc != 0) why = fmt::format("seccomp rule for clone: {}", std::strerror(-rc));
  }
  if (!why.empty()) return why;
  if (int rc = seccomp_load(ctx.get()); rc != 0) return fmt::format("seccomp_load: {}", std::strerror(-rc));
  return {};
}

}  // namespace steptp::backend::sandbox
