// Runs an untrusted compiled kernel in a child process with a time and memory limit: a crash,
// a timeout or an allocation failure is a result, never the end of the caller.
//
// The child is forked from a fresh helper thread (libgomp's thread pool belongs to the thread
// that created it, so the child — whose only thread is that helper — starts with no stale pool
// and can run OpenMP regions). Inputs and outputs live in a shared anonymous mapping
// (KernelBuffers), so nothing is serialized.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>

#include "lower/cpu/cpu_program.h"

namespace steptp::backend::cpu {

struct SandboxLimits {
  double time_limit_s = 10.0;
  int64_t memory_limit_bytes = int64_t{4} << 30;  // address space the child may add
  int threads = 0;                                // 0: OpenMP default
};

enum class RunStatus : uint8_t { Ok, Crashed, TimedOut, OutOfMemory, Failed };
std::string_view to_string(RunStatus s);

struct SandboxResult {
  RunStatus status = RunStatus::Failed;
  std::string message;    // what happened when status != Ok ("killed by SIGSEGV", ...)
  leir::TensorMap outputs;  // when Ok
  double wall_ms = 0;
};

// Forks a child from a fresh helper thread (see above) whose address space may grow by
// `extra_vm_bytes` and which writes no core file; the child runs `child`, which must end with
// _exit. With `new_pid_namespace` the child is the init of a new PID namespace where the kernel
// allows it (root): everything it starts dies with it and it sees no other process; it is then
// forked from the calling thread, which must not have run OpenMP regions. In a process
// that enabled sandbox::set_kernel_profile_for_children (a serve job) the child runs `child`
// under the kernel-run profile (lower/sandbox/profile.h). Returns the child's pid, or -1 with
// errno set.
pid_t fork_limited(int64_t extra_vm_bytes, const std::function<void()>& child, bool new_pid_namespace = false);

// How a child ended: its wait status, or killed by wait_child, or waitpid failed (errno kept).
struct ChildExit {
  int status = 0;
  bool killed = false;
  bool wait_failed = false;
};
// Waits for child `pid`, polling with back-off (50 µs .. 5 ms); between polls `expired()` decides
// whether to SIGKILL it (a deadline, or a watchdog that restarts on progress).
ChildExit wait_child(pid_t pid, const std::function<bool()>& expired);

// Binds inputs (errors in the inputs throw leir::LeirError, as in CpuProgram::bind).
SandboxResult run_sandboxed(const CpuProgram& prog, const leir::TensorMap& inputs, const SandboxLimits& limits = {});

}  // namespace steptp::backend::cpu
