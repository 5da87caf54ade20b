// The machine's time to move a program's unavoidable bytes: read `read_bytes` once and write
// `write_bytes` once, streaming, on MeasureOptions::threads OpenMP threads — glibc's memcpy and
// memset over one slice per thread, so the figure is what this machine's memory system gives,
// not what some kernel's code makes of it. At the sizes of a program's tensors it includes the
// caches' help exactly as a timed kernel gets it (buffers are allocated and touched once, and
// every timed run reuses them: caches warm, as measure() times kernels).
#pragma once

#include <cstdint>

#include "lower/measure/measure.h"

namespace steptp::backend {

TimingStats measure_memory_traffic(int64_t read_bytes, int64_t write_bytes, const MeasureOptions& o);

}  // namespace steptp::backend
