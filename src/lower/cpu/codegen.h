// LEIR -> C++ (OpenMP) source for the CPU backend (LEIR.md §3, §6 "CPU").
//
// One program becomes one *piece* per top-level item of its body (a nest or a statement, with the
// accumulation identities placed before it): an `extern "C" int SYMBOL(void* const* args)`
// function over the buffers that item touches, compiled and cached on its own. Candidates of one
// root differ in a nest or two, so a candidate compiles only the pieces it changed and finds the
// rest in the kernel cache (a 30-nest attention program compiled whole cost ~0.7 s per candidate
// at -O3, most of a tuning run's time). CpuProgram::run is the driver: it takes the workspace,
// zeroes the set flags and calls the pieces in order. `code` spells the same driver out as one
// function (`extern "C" int SYMBOL(void* const* args)`, args = the known tensors in declaration
// order, each a dense row-major buffer of its storage type, see cpu_storage_dtype; returns 0, or
// 1 when the workspace could not be allocated) after the pieces: what `steptp lower` prints.
// Intermediates: a small `l`/`s` buffer used by one piece lives on its stack, every other one in
// the workspace.
//
// Schedule mapping: the outermost run of consecutive P/B loops of a nest (not already inside a
// parallel region) becomes `#pragma omp parallel for collapse(n)`; accumulations whose target
// does not depend on those loops become OpenMP array-section reductions (the parallel reduction
// of LEIR.md §3), or keep the loop serial where that cannot be expressed; a uniform store
// (ir/leir/uniform_store.h) also keeps it serial, where repeating the store is idempotent. An innermost V loop
// without cross-iteration accumulation gets `#pragma omp simd`, a U loop `#pragma GCC unroll`.
// Accumulation identities follow backend/accumulation.h.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ir/leir/ast.h"

namespace steptp::backend::cpu {

struct CpuCodegenOptions {
  // Verification build: every floating tensor is stored and computed as double.
  bool all_f64 = false;
  bool openmp = true;
  // `l`/`s` intermediates up to this size live on the stack.
  int64_t stack_limit_bytes = 64 * 1024;
  // Keep a nest's accumulated block in a local array over its reduction loop (bit-identical
  // results; see register_block in codegen.cc). false: store every update (for comparisons).
  bool register_blocks = true;
  // Split serial loops around the affine bounds checks of their if_then_else reads (a padded
  // input inlined into a convolution) so that the interior reads without them (partition.h).
  // false: lower every condition where it is written (for comparisons).
  bool partition_loops = true;
};

struct KernelParam {
  std::string name;
  leir::DType dtype = leir::DType::F64;    // declared
  leir::DType storage = leir::DType::F64;  // buffer element type the kernel expects
  std::vector<int64_t> shape;
  int64_t numel = 1;
  bool output = false;
};

// The kernel's function name inside `code`; the compiler replaces it by a content-hash symbol.
inline constexpr std::string_view kSymbolPlaceholder = "STEPTP_KERNEL_SYMBOL";

// A buffer a piece takes: a known tensor (args[param]) or a slice of the workspace.
struct CpuBuffer {
  std::string name;    // its C name: t_<tensor>, or m_<tensor> for a tensor's set flags
  int param = -1;      // index of the known tensor, or -1
  int64_t offset = 0;  // workspace offset (64-byte aligned) when param < 0
};

struct CpuPiece {
  std::string code;          // one function definition (kSymbolPlaceholder); needs cpu_prelude()
  std::vector<int> buffers;  // its args, as indices into CpuKernelSource::buffers
};

struct CpuKernelSource {
  std::string code;                 // the whole kernel for reading; needs cpu_prelude() before it
  std::vector<KernelParam> params;  // known tensors in declaration order
  std::vector<CpuPiece> pieces;     // what runs, in order
  std::vector<CpuBuffer> buffers;
  int64_t workspace_bytes = 0;
  std::vector<std::pair<int64_t, int64_t>> cleared;  // (offset, bytes) zeroed before the pieces run
};

// Throws leir::LeirError for an invalid program or a construct the backend cannot lower.
CpuKernelSource generate_cpu_kernel(const leir::Program& p, const CpuCodegenOptions& o = {});

// Helpers every kernel uses (Python-style // and %, NaN-propagating max/min, ...).
std::string_view cpu_prelude();

// The revision of the CPU lowering, part of the kernel compiler's identity: bumped whenever a
// program lowers to different code (2: loop partitioning; 3: an accumulation's identity stored in
// its nest; 4: a register block starting from the identity, integer-valued statements in int64),
// so the machine fingerprint of the measurement stores no longer matches timings of kernels the
// old lowering produced.
inline constexpr int kCpuLoweringRevision = 4;

// Storage type of a tensor: f16/bf16 are stored as f32 (values rounded to the narrow type on
// every store); with all_f64 every floating type is stored as f64; bool as one byte.
leir::DType cpu_storage_dtype(leir::DType declared, bool all_f64);
std::string_view cpu_ctype(leir::DType storage);  // "double", "float", "int64_t", "uint8_t", ...

}  // namespace steptp::backend::cpu
