// The CPU kernels' workspace rule, written once: CpuProgram::call (lower/cpu/cpu_program.cc) takes
// and gives the workspace of a compiled program with these functions, and the kernel prelude
// (codegen.h cpu_prelude, whose driver `steptp lower` prints) carries the lines between the two
// markers below as its text: src/CMakeLists.txt embeds them (kCpuWorkspaceRule). Editing them
// changes the prelude, hence the kernel cache's key and the machine fingerprint of stored
// measurements.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdlib>

namespace steptp::backend::cpu {

// steptp prelude text begins
// A kernel's global intermediates live in one workspace kept between its calls (as TVM's
// workspace pool or a framework's caching allocator keeps them): a kernel inside a model does
// not page its temporaries in afresh on every call, so a timed kernel must not either (a 10 MB
// intermediate allocated per call ran mul_add 4x slow). A second thread that calls the kernel
// while the workspace is in use gets its own allocation. Freed when the kernel is unloaded.
struct steptp_workspace {
  std::atomic<bool> busy{false};
  void* data = nullptr;
  size_t bytes = 0;
  ~steptp_workspace() { std::free(data); }
};
inline char* steptp_workspace_take(steptp_workspace& w, size_t bytes, bool* own) {
  *own = w.busy.exchange(true, std::memory_order_acquire);
  if (*own) return static_cast<char*>(std::aligned_alloc(64, bytes));
  if (w.bytes < bytes) {
    std::free(w.data);
    w.data = std::aligned_alloc(64, bytes);
    w.bytes = w.data ? bytes : 0;
  }
  if (!w.data) w.busy.store(false, std::memory_order_release);
  return static_cast<char*>(w.data);
}
inline void steptp_workspace_give(steptp_workspace& w, char* p, bool own) {
  if (own) std::free(p);
  else w.busy.store(false, std::memory_order_release);
}
// steptp prelude text ends

}  // namespace steptp::backend::cpu
