// The two sandbox profiles, assembled from the layers (layers.h):
//
// Job profile: the serve job child, which parses, verifies, runs the compiler and times kernels.
// Applied in the child itself, first thing, while it is still root: its own mount namespace
// (with a /proc of its PID namespace when it has one), Landlock limited to the
// toolchain and its own paths (JobProfile), no_new_privs, an unprivileged uid and gid with every
// capability gone (bounding set included), the job seccomp filter, the job directory as cwd and
// TMPDIR. The PID namespace, pids cgroup and network namespace are made by its parent
// (fork_limited, PidsCgroup, the worker) and only reported here.
//
// Kernel-run profile: a child that runs a compiled kernel (run_sandboxed, tune's measuring
// child). On top of the job profile it inherits: a Landlock domain with no file-system access
// at all, and the kernel-run seccomp filter (no exec, no process creation, threads only).
// Enabled per process by set_kernel_profile_for_children, which the job child calls; the
// tuner and `generate` keep their plain forked children.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "lower/sandbox/landlock.h"
#include "lower/sandbox/layers.h"

namespace steptp::backend::sandbox {

struct JobProfile {
  uid_t uid = 65534;  // nobody
  gid_t gid = 65534;  // nogroup
  std::string job_dir;                // the job's private directory: cwd, TMPDIR, fully writable
  std::vector<PathRule> extra_paths;  // what else the job needs (kernel cache, timing locks, peaks)
  bool in_new_pid_namespace = false;  // the caller made one for this process (reported as pid_ns)
};

// The toolchain and system files every job needs, read-only: /usr, /lib*, the dynamic loader's
// cache, /proc, CPU topology in /sys, /dev/null and the random devices.
std::vector<PathRule> system_paths();

// Applies the job profile to the calling (single-threaded) process; never throws. The report
// holds every layer this profile applies (pid_ns as the caller says); the caller adds net_ns,
// pids_cgroup and seccomp_kernel.
LayerReport apply_job_profile(const JobProfile& p);

// Applies the kernel-run profile to the calling (single-threaded) process: its report holds
// "seccomp_kernel" (and is not applied unless the Landlock domain applied too, where the
// kernel has Landlock).
LayerReport apply_kernel_profile();
// In a child that fork_limited started under the kernel-run profile: that profile's report
// (empty otherwise).
const LayerReport& kernel_profile_report();

// Whether fork_limited children of this process get the kernel-run profile (default: no).
void set_kernel_profile_for_children(bool on);
bool kernel_profile_for_children();

// A fresh private directory under `parent` with an unpredictable name (mkdtemp), 0700, owned by
// uid:gid when this process may chown (root). Throws base::Error (Failed).
std::string make_job_dir(const std::string& parent, uid_t uid, gid_t gid);

}  // namespace steptp::backend::sandbox
