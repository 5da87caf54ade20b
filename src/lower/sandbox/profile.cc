#include "lower/sandbox/profile.h"

#include <grp.h>
#include <linux/capability.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

#include "base/error.h"
#include "lower/sandbox/seccomp_filter.h"

namespace steptp::backend::sandbox {
namespace {

std::atomic<bool> g_kernel_profile{false};
LayerReport g_kernel_report;  // set in the (single-threaded) kernel-run child only

std::string errno_text(const char* what) { return fmt::format("{}: {}", what, std::strerror(errno)); }

// A private mount namespace (nothing mounted here reaches the host) with a /proc of this
// process's new PID namespace: without it /proc would list the host's processes.
std::string enter_mount_namespace(bool pid_ns) {
  if (unshare(CLONE_NEWNS) != 0) return errno_text("unshare(CLONE_NEWNS)");
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return errno_text("making mounts private");
  if (pid_ns && mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0)
    return errno_text("mounting /proc of the PID namespace");
  return {};
}

// Effective and permitted capability sets of this process, 64 bits (two 32-bit words).
bool has_capabilities() {
  __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2]{};
  if (syscall(SYS_capget, &hdr, data) != 0) return true;
  return (data[0].effective | data[1].effective | data[0].permitted | data[1].permitted) != 0;
}

// Drops the capability bounding set (so nothing executed later regains one), the supplementary
// groups, then switches gid and uid; setresuid from root to another uid clears the permitted,
// effective and ambient sets.
void drop_identity(const JobProfile& p, LayerReport& r) {
  if (geteuid() != 0) {
    r.set("user", true, fmt::format("already unprivileged (uid {})", geteuid()));
  } else {
    for (int cap = 0; prctl(PR_CAPBSET_READ, cap, 0, 0, 0) >= 0; ++cap) prctl(PR_CAPBSET_DROP, cap, 0, 0, 0);
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
    if (setgroups(0, nullptr) != 0) r.set("user", false, errno_text("setgroups"));
    else if (setresgid(p.gid, p.gid, p.gid) != 0) r.set("user", false, errno_text("setresgid"));
    else if (setresuid(p.uid, p.uid, p.uid) != 0) r.set("user", false, errno_text("setresuid"));
    else if (p.uid == 0) r.set("user", false, "the sandbox uid is root");
    else r.set("user", true);
  }
  if (has_capabilities()) r.set("capabilities", false, "capabilities remain (the uid switch failed)");
  else r.set("capabilities", true);
}

}  // namespace

std::vector<PathRule> system_paths() {
  std::vector<PathRule> rules;
  for (const char* dir : {"/usr", "/lib", "/lib64", "/lib32", "/libx32", "/bin", "/sbin"})
    rules.push_back({dir, Access::ReadExec});
  for (const char* path : {"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/proc",
                           "/sys/devices/system/cpu", "/dev/urandom", "/dev/random"})
    rules.push_back({path, Access::Read});
  rules.push_back({"/dev/null", Access::ReadWrite});
  return rules;
}

LayerReport apply_job_profile(const JobProfile& p) {
  LayerReport r;
  const bool pid_ns = p.in_new_pid_namespace;
  r.set("pid_ns", pid_ns, pid_ns ? "" : "the kernel refused a new PID namespace (unshare(CLONE_NEWPID))");
  std::string why = enter_mount_namespace(pid_ns);
  r.set("mount_ns", why.empty(), why);

  if (!p.job_dir.empty() && chdir(p.job_dir.c_str()) == 0) {
    setenv("TMPDIR", p.job_dir.c_str(), 1);  // the compiler's temporary files
    setenv("HOME", p.job_dir.c_str(), 1);
    r.set("job_dir", true);
  } else {
    r.set("job_dir", false, p.job_dir.empty() ? "no job directory" : errno_text("chdir to the job directory"));
  }

  bool nnp = prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0;
  r.set("no_new_privs", nnp, nnp ? "" : errno_text("PR_SET_NO_NEW_PRIVS"));

  // Landlock before the uid switch: the rules' paths are opened with the server's rights.
  std::vector<PathRule> rules = system_paths();
  if (!p.job_dir.empty()) rules.push_back({p.job_dir, Access::Full});
  rules.insert(rules.end(), p.extra_paths.begin(), p.extra_paths.end());
  why = restrict_paths(rules);
  r.set("landlock", why.empty(), why);

  drop_identity(p, r);
  why = install_seccomp(SyscallProfile::Job);
  r.set("seccomp", why.empty(), why);
  return r;
}

LayerReport apply_kernel_profile() {
  LayerReport r;
  prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
  // No rules: no file system at all (the kernel is loaded and its buffers are mapped already).
  std::string why = landlock_abi() > 0 ? restrict_paths({}) : "";
  if (why.empty()) why = install_seccomp(SyscallProfile::KernelRun);
  r.set("seccomp_kernel", why.empty(), why);
  g_kernel_report = r;
  return r;
}

const LayerReport& kernel_profile_report() { return g_kernel_report; }

void set_kernel_profile_for_children(bool on) { g_kernel_profile = on; }
bool kernel_profile_for_children() { return g_kernel_profile; }

std::string make_job_dir(const std::string& parent, uid_t uid, gid_t gid) {
  std::string tmpl = parent + "/job-XXXXXX";
  if (!mkdtemp(tmpl.data())) throw base::Error(base::ErrorKind::Failed, errno_text("cannot create a job directory"));
  if (geteuid() == 0 && chown(tmpl.c_str(), uid, gid) != 0) {
    std::string err = errno_text("cannot hand the job directory to the sandbox user");
    rmdir(tmpl.c_str());
    throw base::Error(base::ErrorKind::Failed, err);
  }
  return tmpl;
}

}  // namespace steptp::backend::sandbox
