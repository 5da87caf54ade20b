// A LEIR program compiled for the CPU: bind inputs, run (in process or sandboxed), read outputs.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "lower/cpu/codegen.h"
#include "lower/cpu/compiler.h"
#include "lower/cpu/workspace.h"
#include "ir/leir/ast.h"
#include "ir/leir/values.h"

namespace steptp::backend::cpu {

// Dense buffers for every known tensor of one program, in one shared anonymous mapping (so a
// sandboxed child process writes its outputs straight into the parent's memory).
//
// Large mappings are reused: verifying and timing candidates binds buffers of the same size
// again and again, and at bench shapes a fresh mapping costs more (the kernel zeroes and faults
// in every page, then frees it) than the run it serves. A released mapping is kept for the next
// KernelBuffers of the same size *in the same process*: a forked child (a sandboxed run, a
// dataset worker) shares the parent's MAP_SHARED pages, so it never takes the parent's.
// A reused mapping holds old bytes; CpuProgram::bind writes every element it hands out.
//
// A parameter given a `borrowed` pointer (non-null) is not allocated here: it is another
// binding's buffer of the same tensor (CpuProgram::bind's `share`), which must outlive this one.
class KernelBuffers {
 public:
  KernelBuffers(const std::vector<KernelParam>& params, const std::vector<void*>& borrowed = {});
  ~KernelBuffers();
  KernelBuffers(const KernelBuffers&) = delete;
  KernelBuffers& operator=(const KernelBuffers&) = delete;

  void* const* args() const { return ptrs_.data(); }
  void* data(size_t i) const { return ptrs_[i]; }
  // The buffer of read-only tensor `p` (same name, storage and shape) bound from given inputs, or null.
  void* input_buffer(const KernelParam& p) const;

 private:
  void* base_ = nullptr;
  size_t bytes_ = 0;
  std::vector<void*> ptrs_;
  std::vector<KernelParam> params_;
  std::vector<char> given_;  // param i holds a value of the `inputs` it was bound from
  friend class CpuProgram;
};

class CpuProgram {
 public:
  const leir::Program& program() const { return program_; }
  const CpuKernelSource& source() const { return source_; }
  const std::vector<LoadedKernel>& pieces() const { return pieces_; }  // one per source().pieces

  // Buffers filled from `inputs` (inputs and params required; constants from the signature
  // unless given); float outputs start as NaN so elements the program never sets read as NaN,
  // as in the interpreter. Throws leir::LeirError naming the tensor on a missing or
  // mis-shaped value. With `share`, bound from the same `inputs` (by another program of the same
  // signature): each read-only tensor taken from `inputs` that `share` holds too is `share`'s
  // buffer, not a copy (kernels never write read-only tensors, LEIR.md). Programs timed against
  // each other then read one copy of their inputs, as a program timed alone does: an input that
  // fits the caches once (33.5 MB against this VM's 32 MB L3 + 2 MB L2) stays cached, where a copy
  // per program would stream every run from DRAM.
  std::unique_ptr<KernelBuffers> bind(const leir::TensorMap& inputs, const KernelBuffers* share = nullptr) const;
  // Runs the kernel in this process on bound buffers (throws base::Error (Failed) on failure).
  void run(KernelBuffers& b) const;
  // The driver on the known tensors' buffers (KernelBuffers::args order): takes the workspace,
  // zeroes the set flags, calls the pieces in order. 0, or 1 when the workspace could not be
  // allocated. Safe to call from several threads at once (a second caller allocates its own
  // workspace): the rule of the generated driver, from the same code (lower/cpu/workspace.h).
  int call(void* const* args) const;
  leir::TensorMap outputs(const KernelBuffers& b) const;
  // bind + run + outputs.
  leir::TensorMap run(const leir::TensorMap& inputs) const;

 private:
  friend struct CpuBuilder;
  leir::Program program_;
  CpuKernelSource source_;
  std::vector<LoadedKernel> pieces_;  // one per source_.pieces
  // The intermediates kept between calls, by the generated driver's own rule (lower/cpu/workspace.h).
  std::unique_ptr<steptp_workspace> workspace_ = std::make_unique<steptp_workspace>();
};

struct CpuBuildResult {
  std::shared_ptr<const CpuProgram> program;  // null on failure
  std::string error;                          // lowering or compiler error
};

// Lowers and compiles many programs with a single compiler invocation for all uncached kernels.
std::vector<CpuBuildResult> build_cpu_programs(const std::vector<leir::Program>& programs,
                                               const CpuCodegenOptions& o = {},
                                               KernelCompiler* compiler = nullptr);
// One program; throws leir::LeirError (lowering) or base::Error (Failed: compiler).
std::shared_ptr<const CpuProgram> build_cpu_program(const leir::Program& p, const CpuCodegenOptions& o = {},
                                                    KernelCompiler* compiler = nullptr);

}  // namespace steptp::backend::cpu
