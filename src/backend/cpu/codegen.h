// LEIR -> C++ (OpenMP) source for the CPU backend (LEIR.md §3, §6 "CPU").
//
// One program becomes one `extern "C" int SYMBOL(void* const* args)` function; args are the known
// tensors in declaration order, each a dense row-major buffer of its storage type (see
// cpu_storage_dtype). Intermediates live inside the function (stack for small `l`/`s` buffers,
// heap otherwise). The function returns 0, or 1 when an intermediate could not be allocated.
//
// Schedule mapping: the outermost run of consecutive P/B loops of a nest (not already inside a
// parallel region) becomes `#pragma omp parallel for collapse(n)`; accumulations whose target
// does not depend on those loops become OpenMP array-section reductions (the parallel reduction
// of LEIR.md §3), or keep the loop serial where that cannot be expressed; a uniform store
// (leir/uniform_store.h) also keeps it serial, where repeating the store is idempotent. An innermost V loop
// without cross-iteration accumulation gets `#pragma omp simd`, a U loop `#pragma GCC unroll`.
// Accumulation identities follow backend/accumulation.h.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "leir/ast.h"

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

struct CpuKernelSource {
  std::string code;                 // one function definition; needs cpu_prelude() before it
  std::vector<KernelParam> params;  // known tensors in declaration order
};

// Throws leir::LeirError for an invalid program or a construct the backend cannot lower.
CpuKernelSource generate_cpu_kernel(const leir::Program& p, const CpuCodegenOptions& o = {});

// Helpers every kernel uses (Python-style // and %, NaN-propagating max/min, ...).
std::string_view cpu_prelude();

// Storage type of a tensor: f16/bf16 are stored as f32 (values rounded to the narrow type on
// every store); with all_f64 every floating type is stored as f64; bool as one byte.
leir::DType cpu_storage_dtype(leir::DType declared, bool all_f64);
std::string_view cpu_ctype(leir::DType storage);  // "double", "float", "int64_t", "uint8_t", ...

}  // namespace steptp::backend::cpu
