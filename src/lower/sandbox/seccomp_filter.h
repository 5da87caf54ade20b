// The system calls a sandboxed process may not make (a seccomp filter built with Debian's
// libseccomp; filters stack, so the kernel-run filter adds to the job's).
//
// Job (the serve job child and the compilers it runs): no sockets of any family (nothing in a job
// talks to anything; AF_UNIX is denied too, since a pathname socket such as a container runtime's
// could reach a host daemon), no ptrace or cross-process memory access, no new namespaces,
// mounts or chroot, no kernel keyrings, modules, kexec, BPF, perf events, userfaultfd or io_uring
// (whose submissions bypass seccomp). Each fails with EPERM.
// Kernel run (a compiled kernel and the child that times it): also no execve/execveat, no fork,
// vfork, or clone without CLONE_THREAD (EPERM): threads only, as OpenMP needs; clone3 fails with
// ENOSYS because its flags are behind a pointer a filter cannot read, and glibc then falls back
// to clone.
// System calls of another architecture (x32, i386 int 0x80) kill the process.
#pragma once

#include <string>

namespace steptp::backend::sandbox {

enum class SyscallProfile { Job, KernelRun };

// Installs the profile's filter on this thread (and what it forks), setting no_new_privs; "" or
// why not. The filter is built once per process (libseccomp takes 1-2 ms to build one).
std::string install_seccomp(SyscallProfile profile);
// Builds both filters now, so that children forked later (serve jobs and their kernel runs) only
// load them.
void prepare_seccomp();

}  // namespace steptp::backend::sandbox
