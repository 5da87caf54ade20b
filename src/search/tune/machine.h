// The machine a measurement was taken on: CPU model, core count, cache sizes, the kernel
// compiler's identity and flags, and the thread count of the timed code. Its fingerprint keys
// every stored measurement (search/tune/database.h), so stores from different machines, compilers or
// thread counts never mix; its cache sizes and core count feed the cost model's features.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ir/analysis/cost.h"

namespace steptp::tune {

struct Machine {
  std::string cpu_model;  // /proc/cpuinfo "model name"
  int cores = 1;          // logical CPUs this process may use
  int64_t l1_bytes = 32 << 10, l2_bytes = 1 << 20, l3_bytes = 32 << 20;  // data caches (sysconf)
  std::string compiler;   // kernel compiler identity: version line + flags
  int threads = 1;        // OpenMP threads of the timed kernels
  int vector_bytes = 16;  // widest SIMD register the kernels are compiled for (-march=native)
  int vector_registers = 16;  // SIMD registers of that width (x86-64: 32 zmm with AVX-512, else 16)
  // Width of the floating-point execution units: a wider register is executed in pieces of this
  // size (AMD Zen 4 runs each 512-bit operation as two 256-bit halves), so it bounds the lanes a
  // vector operation computes per cycle.
  int datapath_bytes = 16;
};

// How the schedule rules and the cost model's analytic prior size their work to the machine
// (docs/tune.md, "Portable schedules"). A pure function of the Machine, so a schedule can be
// derived for another machine's fingerprint.
struct ScheduleParams {
  // Vector registers a register block may keep accumulators in: half the register file (the rest
  // holds the loaded row vectors, the broadcast operands and addresses).
  int64_t accumulators = 0;
  // Register-block shapes (rows, vectors per row), the rule's order: the widest block of
  // kBlockRows rows within `accumulators`, then kBlockRows x 1 and kBlockRows/2 x 1 (no duplicate).
  std::vector<std::pair<int64_t, int64_t>> block_shapes;
  // f32 lanes one vector operation computes per cycle (the analytic cost's vector width).
  int64_t f32_throughput_lanes = 0;
};
// Rows of a register block: independent accumulation chains, one per row vector, enough to cover
// the FMA latency at the FMA issue rate (4 cycles x 2 pipes on Zen 3/4 and Skylake).
inline constexpr int64_t kBlockRows = 8;
ScheduleParams schedule_params(const Machine& m);
// What the analytic cost (ir/analysis/cost.h) sees of `m`: its cores, caches and f32 throughput lanes.
analysis::CostMachine cost_machine(const Machine& m);
// The datapath width of a CPU with `vector_bytes` registers, by vendor and family (/proc/cpuinfo):
// AMD before Zen 5 (family 0x1A) splits 512-bit operations into 256-bit halves, Zen 1 (family
// 0x17, model < 0x30) 256-bit ones into 128-bit halves; every other CPU runs its registers whole.
int datapath_bytes(const std::string& vendor, int family, int model, int vector_bytes);

// Logical CPUs this process may use (at least 1): the "all cores" of every thread count.
int core_count();
// This machine, with `threads` timed threads (0: all cores).
Machine this_machine(int threads = 0);
// "cpu=...;cores=N;compiler=...;threads=T" (the caches follow from the CPU model).
std::string fingerprint(const Machine& m);
// The kind of machine a cost model is trained for (search/tune/cost_model.h PretrainedModel):
// "cpu=...;cores=N;threads=T;vector_bytes=V;compiler=<version line>" — the fingerprint without
// the hash of the compiler's flags and prelude (a prelude change does not change which programs
// are fast) but with the vector width the kernels are compiled for (STEPTP_ISA=avx2 is another
// kind). Records of `steptp generate` carry the same fields (machine_kind_of_record).
std::string machine_kind(const Machine& m);
std::string machine_kind(const std::string& cpu, int cores, int threads, int vector_bytes,
                         const std::string& compiler);

}  // namespace steptp::tune
