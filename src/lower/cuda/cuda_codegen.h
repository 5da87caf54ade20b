// LEIR -> CUDA C (LEIR.md §6 "CUDA C") and the per-target legality checker.
//
// Each top-level item becomes one __global__ kernel. B loops map to hardware indices by their
// variable's prefix (tx/ty/tz -> threadIdx.x/y/z, bx/by/bz -> blockIdx.x/y/z); the launch extent
// of an axis is the largest B loop bound to it in the kernel, and each B loop guards
// `index < extent`. Statements outside the B loops of some launched axis run on index 0 of that
// axis only. A uniform store (ir/leir/uniform_store.h) under a B loop runs on that loop's first index
// only. Accumulations whose target does not depend on an enclosing B loop are parallel
// reductions: atomicAdd (f32/f64/i32/i64) or a compare-and-swap loop (max/min/mul on f32/f64).
// `s` intermediates are __shared__ arrays, `l` intermediates per-thread arrays, `g` intermediates
// device allocations. Identity passes (lower/accumulation.h) run as separate kernels before
// the item. Sibling items in uniform (unguarded) code are separated by __syncthreads().
//
// Rejections (each a LeirError naming the construct): more than 1024 threads per block or an
// axis beyond its hardware limit, more shared memory per block than the target allows, an `s` or
// `l` buffer used by more than one kernel, the same hardware axis bound twice on one path, a B
// variable naming no axis, a parallel reduction of an unsupported operator/dtype, accumulation
// onto partly set tensors (needs per-element tracking), f16/bf16/int8 tensors.
#pragma once

#include <cstdint>
#include <string>

#include "ir/leir/ast.h"

namespace steptp::backend::cuda {

struct CudaTarget {
  int max_threads_per_block = 1024;
  int64_t max_shared_bytes = 48 * 1024;  // static __shared__ per block
  int max_block_dim[3] = {1024, 1024, 64};
  int64_t max_grid_dim[3] = {2147483647LL, 65535, 65535};
};

struct CudaSource {
  std::string code;         // kernels + `extern "C" int <entry>(void* const* device_args)`
  std::string entry;        // host launcher name
  int kernels = 0;
};

// `entry`: name of the host launcher (also used to prefix kernels, so several programs can share
// one translation unit). Throws leir::LeirError with the legality reason on rejection.
CudaSource generate_cuda(const leir::Program& p, const std::string& entry = "steptp_launch",
                         const CudaTarget& target = {});

// Definitions every CUDA translation unit needs once (atomic helpers, Python-style // and %).
std::string_view cuda_prelude();

}  // namespace steptp::backend::cuda
