#include "lower/sandbox/seccomp_filter.h"

#include <linux/filter.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

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

namespace {

// The profile's filter as a BPF program, built by libseccomp and exported (1-2 ms; loading the
// exported program costs microseconds). Empty with `why` on failure.
std::vector<sock_filter> build(SyscallProfile profile, std::string* why) {
  std::unique_ptr<void, void (*)(scmp_filter_ctx)> ctx(seccomp_init(SCMP_ACT_ALLOW), seccomp_release);
  if (!ctx) return *why = "seccomp_init failed", std::vector<sock_filter>{};
  auto deny = [&](const char* name, int err) -> std::string {
    int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR) return {};  // unknown to this libseccomp: nothing to deny
    int rc = seccomp_rule_add(ctx.get(), SCMP_ACT_ERRNO(err), nr, 0);
    return rc == 0 ? std::string() : fmt::format("seccomp rule for {}: {}", name, std::strerror(-rc));
  };
  for (const char* name : kJobDenied)
    if (why->empty()) *why = deny(name, EPERM);
  if (profile == SyscallProfile::KernelRun && why->empty()) {
    for (const char* name : kKernelRunDenied)
      if (why->empty()) *why = deny(name, EPERM);
    if (why->empty()) *why = deny("clone3", ENOSYS);
    // On x86-64 and aarch64 clone's first argument is its flags.
    int rc = seccomp_rule_add(ctx.get(), SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
                              SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0));
    if (why->empty() && rc != 0) *why = fmt::format("seccomp rule for clone: {}", std::strerror(-rc));
  }
  if (!why->empty()) return {};
  int fd = memfd_create("seccomp-bpf", MFD_CLOEXEC);
  if (fd < 0) return *why = fmt::format("memfd_create: {}", std::strerror(errno)), std::vector<sock_filter>{};
  std::vector<sock_filter> prog;
  if (int rc = seccomp_export_bpf(ctx.get(), fd); rc != 0) {
    *why = fmt::format("seccomp_export_bpf: {}", std::strerror(-rc));
  } else {
    prog.resize(size_t(lseek(fd, 0, SEEK_END)) / sizeof(sock_filter));
    if (pread(fd, prog.data(), prog.size() * sizeof(sock_filter), 0) != ssize_t(prog.size() * sizeof(sock_filter)))
      *why = "cannot read the exported seccomp filter", prog.clear();
  }
  close(fd);
  return prog;
}

struct Compiled {
  std::vector<sock_filter> prog;
  std::string why;
};
Compiled& compiled(SyscallProfile profile) {
  static std::mutex mu;
  static std::map<SyscallProfile, Compiled> cache;
  std::lock_guard lock(mu);
  auto [it, fresh] = cache.try_emplace(profile);
  if (fresh) it->second.prog = build(profile, &it->second.why);
  return it->second;
}

}  // namespace

void prepare_seccomp() {
  compiled(SyscallProfile::Job);
  compiled(SyscallProfile::KernelRun);
}

std::string install_seccomp(SyscallProfile profile) {
  const Compiled& c = compiled(profile);
  if (!c.why.empty()) return c.why;
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return fmt::format("PR_SET_NO_NEW_PRIVS: {}", std::strerror(errno));
  sock_fprog fprog{static_cast<unsigned short>(c.prog.size()), const_cast<sock_filter*>(c.prog.data())};
  if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog) != 0)
    return fmt::format("loading the seccomp filter: {}", std::strerror(errno));
  return {};
}

}  // namespace steptp::backend::sandbox
