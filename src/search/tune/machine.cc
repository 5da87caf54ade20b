#include "search/tune/machine.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <string_view>
#include <thread>

#include <fmt/format.h>

#include "lower/cpu/compiler.h"

namespace steptp::tune {
namespace {

// The value of field `name` of the first CPU in /proc/cpuinfo ("" when absent).
std::string cpuinfo_field(std::string_view name) {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string_view key(line.data(), colon);
    while (!key.empty() && (key.back() == ' ' || key.back() == '\t')) key.remove_suffix(1);
    if (key != name) continue;
    auto value = line.find_first_not_of(" \t", colon + 1);
    return value == std::string::npos ? "" : line.substr(value);
  }
  return "";
}

int cpuinfo_int(std::string_view name) {
  const std::string v = cpuinfo_field(name);
  int n = -1;
  std::from_chars(v.data(), v.data() + v.size(), n);
  return n;
}

int64_t cache_bytes(int name, int64_t fallback) {
  long v = sysconf(name);
  return v > 0 ? v : fallback;
}

}  // namespace

int core_count() { return int(std::max(1u, std::thread::hardware_concurrency())); }

Machine this_machine(int threads) {
  Machine m;
  m.cpu_model = cpuinfo_field("model name");
  if (m.cpu_model.empty()) m.cpu_model = "unknown";
  m.cores = core_count();
  m.l1_bytes = cache_bytes(_SC_LEVEL1_DCACHE_SIZE, m.l1_bytes);
  m.l2_bytes = cache_bytes(_SC_LEVEL2_CACHE_SIZE, m.l2_bytes);
  m.l3_bytes = cache_bytes(_SC_LEVEL3_CACHE_SIZE, m.l3_bytes);
  const std::string& id = backend::cpu::default_compiler().identity();
  // The version line names the compiler; the hash covers flags and prelude too.
  m.compiler = fmt::format("{} #{}", id.substr(0, id.find('\n')), backend::cpu::content_hash(id).substr(0, 12));
  m.threads = threads > 0 ? threads : m.cores;
  // $STEPTP_ISA=avx2: the kernels are AVX2 code (lower/cpu/compiler.h), and so is this machine.
  const bool avx512 = __builtin_cpu_supports("avx512f") && !backend::cpu::avx2_kernels();
  m.vector_bytes = avx512 ? 64 : __builtin_cpu_supports("avx2") ? 32 : 16;
  m.vector_registers = avx512 ? 32 : 16;
  m.datapath_bytes =
      datapath_bytes(cpuinfo_field("vendor_id"), cpuinfo_int("cpu family"), cpuinfo_int("model"), m.vector_bytes);
  return m;
}

int datapath_bytes(const std::string& vendor, int family, int model, int vector_bytes) {
  if (vendor != "AuthenticAMD") return vector_bytes;
  if (family == 0x17 && model < 0x30) return std::min(vector_bytes, 16);
  if (family < 0x1A) return std::min(vector_bytes, 32);
  return vector_bytes;
}

ScheduleParams schedule_params(const Machine& m) {
  ScheduleParams p;
  p.accumulators = std::max(1, m.vector_registers / 2);
  for (auto shape : {std::pair<int64_t, int64_t>{kBlockRows, std::max<int64_t>(1, p.accumulators / kBlockRows)},
                     {kBlockRows, 1}, {kBlockRows / 2, 1}})
    if (shape.first * shape.second <= p.accumulators &&
        std::find(p.block_shapes.begin(), p.block_shapes.end(), shape) == p.block_shapes.end())
      p.block_shapes.push_back(shape);
  p.f32_throughput_lanes = std::max(1, std::min(m.vector_bytes, m.datapath_bytes) / 4);
  return p;
}

analysis::CostMachine cost_machine(const Machine& m) {
  return {.cores = m.cores, .l1_bytes = m.l1_bytes, .l2_bytes = m.l2_bytes, .l3_bytes = m.l3_bytes,
          .f32_lanes = schedule_params(m).f32_throughput_lanes};
}

std::string fingerprint(const Machine& m) {
  return fmt::format("cpu={};cores={};compiler={};threads={}", m.cpu_model, m.cores, m.compiler, m.threads);
}

std::string machine_kind(const std::string& cpu, int cores, int threads, int vector_bytes,
                         const std::string& compiler) {
  return fmt::format("cpu={};cores={};threads={};vector_bytes={};compiler={}", cpu, cores, threads, vector_bytes,
                     compiler);
}

std::string machine_kind(const Machine& m) {
  // m.compiler is "<version line> #<hash of the whole identity>" (this_machine).
  return machine_kind(m.cpu_model, m.cores, m.threads, m.vector_bytes, m.compiler.substr(0, m.compiler.rfind(" #")));
}

}  // namespace steptp::tune
