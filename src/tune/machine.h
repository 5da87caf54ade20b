// The machine a measurement was taken on: CPU model, core count, cache sizes, the kernel
// compiler's identity and flags, and the thread count of the timed code. Its fingerprint keys
// every stored measurement (tune/database.h), so stores from different machines, compilers or
// thread counts never mix; its cache sizes and core count feed the cost model's features.
#pragma once

#include <cstdint>
#include <string>

namespace steptp::tune {

struct Machine {
  std::string cpu_model;  // /proc/cpuinfo "model name"
  int cores = 1;          // logical CPUs this process may use
  int64_t l1_bytes = 32 << 10, l2_bytes = 1 << 20, l3_bytes = 32 << 20;  // data caches (sysconf)
  std::string compiler;   // kernel compiler identity: version line + flags
  int threads = 1;        // OpenMP threads of the timed kernels
  int vector_bytes = 16;  // widest SIMD register the kernels are compiled for (-march=native)
};

// Logical CPUs this process may use (at least 1): the "all cores" of every thread count.
int core_count();
// This machine, with `threads` timed threads (0: all cores).
Machine this_machine(int threads = 0);
// "cpu=...;cores=N;compiler=...;threads=T" (the caches follow from the CPU model).
std::string fingerprint(const Machine& m);

}  // namespace steptp::tune
