// The roofline statement of a tuned program (issue 39): how far its time is from the least time
// this machine needs to move the bytes every equivalent program moves — its inputs and parameters
// read once, its outputs written once (constants not counted: a program may compute them) — so
// that a memory-bound workload "near 1x" reads as "at the limit" or as a measured gap.
//
// The reference is a copy of exactly those bytes (lower/measure/memory_traffic.h: memcpy and
// memset on the timed threads, caches warm as the kernels are timed), the measurement the dataset
// screens roots by; a copy at the program's own sizes includes the caches' help as the kernel gets
// it, where one machine-wide figure (apps/reward/timing.h's best triad, from L1 to DRAM) would set
// in-cache and DRAM-sized programs against the same number.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "ir/leir/ast.h"

namespace steptp::tune {

struct ProgramTraffic {
  int64_t read_bytes = 0, write_bytes = 0;
  // Arithmetic operations executed (ir/analysis/program_facts.h: a transcendental call counts 4).
  int64_t ops = 0;
};
ProgramTraffic program_traffic(const leir::Program& p);

struct Roofline {
  ProgramTraffic traffic;
  double copy_ms = 0;  // the copy of the traffic, median (0: not measured)
  double root_ms = 0, best_ms = 0;
  int threads = 1;
};

// {"read_bytes", "write_bytes", "ops", "copy_ms", "threads", "copy_gb_per_s", "best_gb_per_s",
//  "best_copy_share" (copy_ms / best_ms: the share of the copy's bandwidth the best program
//  reaches), "root_copy_share", "best_gops_per_s"}.
nlohmann::json roofline_json(const Roofline& r);
// One line for the table output: "roofline: best moves 134 MB in 12.3 ms (10.9 GB/s), 87% of a
// copy of the same bytes (10.7 ms, 12.5 GB/s on 2 threads); root 41%; 1.09 Gop/s".
std::string roofline_line(const Roofline& r);

}  // namespace steptp::tune
