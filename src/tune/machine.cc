#include "tune/machine.h"

#include <unistd.h>

#include <fstream>
#include <thread>

#include <fmt/format.h>

#include "backend/cpu/compiler.h"

namespace steptp::tune {
namespace {

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(" \t", colon + 1));
    }
  return "unknown";
}

int64_t cache_bytes(int name, int64_t fallback) {
  long v = sysconf(name);
  return v > 0 ? v : fallback;
}

}  // namespace

int core_count() { return int(std::max(1u, std::thread::hardware_concurrency())); }

Machine this_machine(int threads) {
  Machine m;
  m.cpu_model = cpu_model();
  m.cores = core_count();
  m.l1_bytes = cache_bytes(_SC_LEVEL1_DCACHE_SIZE, m.l1_bytes);
  m.l2_bytes = cache_bytes(_SC_LEVEL2_CACHE_SIZE, m.l2_bytes);
  m.l3_bytes = cache_bytes(_SC_LEVEL3_CACHE_SIZE, m.l3_bytes);
  const std::string& id = backend::cpu::default_compiler().identity();
  // The version line names the compiler; the hash covers flags and prelude too.
  m.compiler = fmt::format("{} #{}", id.substr(0, id.find('\n')), backend::cpu::content_hash(id).substr(0, 12));
  m.threads = threads > 0 ? threads : m.cores;
  m.vector_bytes = __builtin_cpu_supports("avx512f") ? 64 : __builtin_cpu_supports("avx2") ? 32 : 16;
  return m;
}

std::string fingerprint(const Machine& m) {
  return fmt::format("cpu={};cores={};compiler={};threads={}", m.cpu_model, m.cores, m.compiler, m.threads);
}

}  // namespace steptp::tune
