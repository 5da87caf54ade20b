// Sandboxed, interleaved, machine-locked timing.
#include "search/tune/runner.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "lower/cpu/compiler.h"
#include "lower/cpu/cpu_program.h"
#include "lower/cpu/sandbox.h"
#include "lower/measure/memory_traffic.h"
#include "ir/interp/inputs.h"
#include "search/tune/machine.h"
#include "search/tune/timing_lock.h"

namespace steptp::tune {
namespace {

using Clock = std::chrono::steady_clock;
double secs(Clock::time_point a) { return std::chrono::duration<double>(Clock::now() - a).count(); }

// ---- sandboxed timing ----
// One comparison's result, written by the measuring child into shared memory.
struct Slot {
  int32_t status;   // 0 pending, 1 ok, 2 failed
  int32_t failure;  // MeasureFailure, when failed
  int32_t repeats_a, repeats_b;
  double a[4], b[4];  // median, min, max, cv
  char message[160];
};
struct Shared {
  std::atomic<int32_t> current;  // index of the comparison the child is working on
  Slot slots[1];
};

void set_failed(Slot& s, MeasureFailure f, const std::string& m) {
  std::snprintf(s.message, sizeof s.message, "%s", m.c_str());
  s.failure = int32_t(f);
  s.status = 2;
}

void put_stats(double* d, const backend::TimingStats& t) {
  d[0] = t.median_ms;
  d[1] = t.min_ms;
  d[2] = t.max_ms;
  d[3] = t.cv;
}
backend::TimingStats get_stats(const double* d, int repeats) {
  backend::TimingStats t;
  t.median_ms = d[0];
  t.min_ms = d[1];
  t.max_ms = d[2];
  t.cv = d[3];
  t.repeats = repeats;
  return t;
}

// The inputs of every program some pair uses, generated before the timed section (at bench shapes
// drawing them costs as much as a comparison, and nothing else may run while one is timed). Both
// programs of a pair run on the reference's (A's) inputs when B declares the same inputs (every
// verified candidate does): the comparison then differs in the program only.
// Pairs with a program that did not build are never run: no inputs are drawn for them.
std::vector<std::shared_ptr<const leir::TensorMap>> pair_inputs(
    const std::vector<leir::Program>& programs, const std::vector<std::pair<int, int>>& pairs,
    const std::vector<std::shared_ptr<const backend::cpu::CpuProgram>>& built, uint64_t input_seed) {
  auto signature = [](const leir::Program& p) {
    std::string sig;
    for (const auto& d : p.known)
      if ((d.role == leir::Role::Input || d.role == leir::Role::Param) && !d.value)
        sig += fmt::format("{}:{}:{};", d.name, leir::to_string(d.dtype), fmt::join(d.shape, ","));
    return sig;
  };
  std::vector<std::shared_ptr<const leir::TensorMap>> inputs(programs.size());
  std::map<std::string, std::shared_ptr<const leir::TensorMap>> by_signature;
  auto fill = [&](int i) {
    if (inputs[size_t(i)]) return;
    auto [it, fresh] = by_signature.emplace(signature(programs[size_t(i)]), nullptr);
    if (fresh)
      it->second = std::make_shared<const leir::TensorMap>(interp::generate_inputs(programs[size_t(i)], input_seed));
    inputs[size_t(i)] = it->second;
  };
  for (auto [a, b] : pairs)
    if (built[size_t(a)] && built[size_t(b)]) fill(a), fill(b);
  return inputs;
}

// The pairs timed in one session (backend::compare_group): those with the same reference (A),
// in order of its first appearance, at most kGroupSize to a session, so drift within a round
// stays short and a crash costs one session.
constexpr size_t kGroupSize = 8;
std::vector<std::vector<size_t>> pair_groups(const std::vector<std::pair<int, int>>& pairs) {
  std::vector<std::vector<size_t>> groups;
  std::map<int, size_t> open;  // reference -> its group still filling
  for (size_t k = 0; k < pairs.size(); ++k) {
    auto it = open.find(pairs[k].first);
    if (it == open.end() || groups[it->second].size() >= kGroupSize) {
      groups.emplace_back();
      it = open.insert_or_assign(pairs[k].first, groups.size() - 1).first;
    }
    groups[it->second].push_back(k);
  }
  return groups;
}

// Body of the measuring child: groups [start, n) in order, `current` naming the one it times.
[[noreturn]] void child_main(Shared* sh, size_t start, const std::vector<std::vector<size_t>>& groups,
                             const std::vector<std::pair<int, int>>& pairs,
                             const std::vector<std::shared_ptr<const backend::cpu::CpuProgram>>& progs,
                             const std::vector<std::string>& build_errors, const backend::MeasureOptions& mo,
                             const std::vector<std::shared_ptr<const leir::TensorMap>>& inputs,
                             const std::vector<std::unique_ptr<backend::cpu::KernelBuffers>>& prebound) {
  std::map<int, std::unique_ptr<backend::cpu::KernelBuffers>> bound;
  // The first binding made from each inputs map: the programs bound later from the same map read
  // its input buffers (CpuProgram::bind's `share`), so a session holds one copy of its inputs, as
  // a program timed alone (MetaSchedule's runner, PyTorch) does. Never freed before _exit.
  std::map<const leir::TensorMap*, const backend::cpu::KernelBuffers*> first_bound;
  auto buffers = [&](int i) -> backend::cpu::KernelBuffers& {
    if (prebound[size_t(i)]) return *prebound[size_t(i)];
    auto it = bound.find(i);
    if (it == bound.end()) {
      const leir::TensorMap* in = inputs[size_t(i)].get();
      auto first = first_bound.find(in);
      const backend::cpu::KernelBuffers* share = first == first_bound.end() ? nullptr : first->second;
      it = bound.emplace(i, progs[size_t(i)]->bind(*in, share)).first;
      first_bound.emplace(in, it->second.get());
    }
    return *it->second;
  };
  auto fail = [&](size_t k, const std::string& why) { set_failed(sh->slots[k], MeasureFailure::Run, "run: " + why); };
  auto put = [&](size_t k, const backend::Comparison& c) {
    Slot& s = sh->slots[k];
    put_stats(s.a, c.a);
    put_stats(s.b, c.b);
    s.repeats_a = c.a.repeats;
    s.repeats_b = c.b.repeats;
    s.status = 1;
  };
  for (size_t g = start; g < groups.size(); ++g) {
    sh->current.store(int32_t(g));
    std::vector<size_t> runnable;
    for (size_t k : groups[g]) {
      auto [ia, ib] = pairs[k];
      if (progs[size_t(ia)] && progs[size_t(ib)]) {
        runnable.push_back(k);
        continue;
      }
      set_failed(sh->slots[k], MeasureFailure::Compile,
                 "compile: " + build_errors[size_t(progs[size_t(ia)] ? ib : ia)]);
    }
    if (runnable.empty()) continue;
    const int ia = pairs[runnable[0]].first;
    backend::cpu::KernelBuffers* ba = nullptr;
    try {
      ba = &buffers(ia);
    } catch (const std::exception& e) {
      for (size_t k : runnable) fail(k, e.what());  // the reference's failure is every pair's
      continue;
    }
    // The others bound one by one, so a program that cannot be bound fails its own pair only.
    std::vector<size_t> ready;
    std::vector<std::function<void()>> others;
    for (size_t k : runnable) try {
        const auto* pb = progs[size_t(pairs[k].second)].get();
        auto* bb = &buffers(pairs[k].second);
        others.push_back([pb, bb] { pb->run(*bb); });
        ready.push_back(k);
      } catch (const std::exception& e) {
        fail(k, e.what());
      }
    if (ready.empty()) continue;
    const auto& pa = *progs[size_t(ia)];
    auto run_a = [&] { pa.run(*ba); };
    try {
      auto cs = backend::compare_group(run_a, others, mo);
      for (size_t m = 0; m < ready.size(); ++m) put(ready[m], cs[m]);
    } catch (const std::exception&) {
      // A run that throws spoils its session: each pair alone, so only its own fails.
      for (size_t m = 0; m < ready.size(); ++m) try {
          put(ready[m], backend::compare_interleaved(run_a, others[m], mo));
        } catch (const std::exception& e) {
          fail(ready[m], e.what());
        }
    }
  }
  _exit(0);
}

}  // namespace

// ---- timing ----
std::vector<PairResult> measure_pairs(const std::vector<leir::Program>& programs,
                                      const std::vector<std::pair<int, int>>& pairs,
                                      const backend::MeasureOptions& mo, uint64_t input_seed, double pair_timeout_s,
                                      PairMeasureStats* stats, std::vector<leir::TensorMap>* outputs) {
  std::vector<PairResult> out(pairs.size());
  PairMeasureStats local;
  PairMeasureStats& st = stats ? *stats : local;
  if (pairs.empty()) return out;
  // Only the programs some pair uses, one batched compile.
  std::vector<char> used(programs.size(), 0);
  for (auto [a, b] : pairs) used[size_t(a)] = used[size_t(b)] = 1;
  std::vector<leir::Program> todo;
  std::vector<size_t> which;
  for (size_t i = 0; i < programs.size(); ++i)
    if (used[i]) todo.push_back(programs[i]), which.push_back(i);
  auto tc = Clock::now();
  std::vector<backend::cpu::CpuBuildResult> built;
  try {
    CpuWorkLock compiling(CpuWorkLock::Mode::Shared);
    built = backend::cpu::build_cpu_programs(todo);
  } catch (const std::exception& e) {
    built.assign(todo.size(), {nullptr, e.what()});
  }
  st.compile_s += secs(tc);
  std::vector<std::shared_ptr<const backend::cpu::CpuProgram>> progs(programs.size());
  std::vector<std::string> errors(programs.size());
  for (size_t k = 0; k < which.size(); ++k) {
    progs[which[k]] = built[k].program;
    errors[which[k]] = built[k].error.substr(0, 120);
    (built[k].program ? st.compiled : st.compile_failed)++;
  }

  const auto inputs = pair_inputs(programs, pairs, progs, input_seed);
  // Buffers the parent reads the outputs from: bound here, in shared memory, before the child
  // starts (a binding error is left to the child, which reports it as the pair's failure).
  // Programs of the same inputs share their input buffers, as in the child (child_main).
  std::vector<std::unique_ptr<backend::cpu::KernelBuffers>> prebound(programs.size());
  std::map<const leir::TensorMap*, const backend::cpu::KernelBuffers*> first_prebound;
  if (outputs)
    for (size_t i = 0; i < programs.size(); ++i)
      if (inputs[i]) try {
          auto first = first_prebound.find(inputs[i].get());
          prebound[i] = progs[i]->bind(*inputs[i], first == first_prebound.end() ? nullptr : first->second);
          first_prebound.emplace(inputs[i].get(), prebound[i].get());
        } catch (const std::exception&) {
        }
  auto tm = Clock::now();
  size_t bytes = sizeof(Shared) + sizeof(Slot) * pairs.size();
  void* mem = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) throw base::Error(base::ErrorKind::Failed, "cannot map measurement results");
  std::memset(mem, 0, bytes);
  Shared* sh = static_cast<Shared*>(mem);
  TimedSection timed(mo.threads);
  std::vector<std::vector<size_t>> groups = pair_groups(pairs);
  auto pending = [&](size_t g) {
    return std::any_of(groups[g].begin(), groups[g].end(), [&](size_t k) { return sh->slots[k].status == 0; });
  };
  size_t start = 0;
  while (start < groups.size()) {
    sh->current.store(int32_t(start));
    pid_t pid = backend::cpu::fork_limited(
        int64_t{4} << 30, [&] { child_main(sh, start, groups, pairs, progs, errors, mo, inputs, prebound); });
    if (pid < 0) {
      for (size_t g = start; g < groups.size(); ++g)
        for (size_t k : groups[g]) set_failed(sh->slots[k], MeasureFailure::Infrastructure, "fork failed");
      break;
    }
    // Watchdog per session (pair_timeout_s per pair in it): the child advances `current` as it
    // goes; one stuck session is killed, not the whole batch.
    int32_t seen = -1;
    auto since = Clock::now();
    backend::cpu::ChildExit e = backend::cpu::wait_child(pid, [&] {
      int32_t cur = sh->current.load();
      if (cur != seen) seen = cur, since = Clock::now();
      return secs(since) > pair_timeout_s * double(groups[size_t(cur)].size());
    });
    const int status = e.status;
    const bool timed_out = e.killed;
    size_t cur = size_t(sh->current.load());
    if (cur < groups.size() && pending(cur)) {
      std::vector<size_t> left;
      for (size_t k : groups[cur])
        if (sh->slots[k].status == 0) left.push_back(k);
      if (left.size() > 1) {
        // Which program of the session died is unknown: its pairs are timed again one by one.
        groups[cur].assign(1, left[0]);
        for (size_t m = 1; m < left.size(); ++m) groups.insert(groups.begin() + long(cur + m), {left[m]});
      } else {
        // The child died on this comparison: it fails, the rest continue in a new child.
        std::string why = timed_out ? fmt::format("timed out after {:.3g} s", pair_timeout_s)
                          : WIFSIGNALED(status) ? fmt::format("crashed ({})", strsignal(WTERMSIG(status)))
                                                : fmt::format("measuring child exited with status {}",
                                                              WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        set_failed(sh->slots[left[0]], timed_out ? MeasureFailure::Timeout : MeasureFailure::Crash, why);
        st.crashed++;
      }
    }
    start = groups.size();
    for (size_t g = 0; g < groups.size(); ++g)
      if (pending(g)) {
        start = g;
        break;
      }
  }
  for (size_t k = 0; k < pairs.size(); ++k) {
    const Slot& s = sh->slots[k];
    PairResult& r = out[k];
    r.ok = s.status == 1;
    if (!r.ok) {
      // Still pending: the measuring child ended without reaching it.
      r.failure = s.status == 2 ? MeasureFailure(s.failure) : MeasureFailure::Crash;
      r.error = s.message[0] ? s.message : "not measured";
      continue;
    }
    r.cmp.a = get_stats(s.a, s.repeats_a);
    r.cmp.b = get_stats(s.b, s.repeats_b);
    r.cmp.speedup = r.cmp.b.median_ms > 0 ? r.cmp.a.median_ms / r.cmp.b.median_ms : 1;
  }
  munmap(mem, bytes);
  if (outputs) {
    outputs->assign(programs.size(), {});
    for (size_t i = 0; i < programs.size(); ++i)
      if (prebound[i]) (*outputs)[i] = progs[i]->outputs(*prebound[i]);
  }
  st.measure_s += secs(tm);
  return out;
}

namespace {
constexpr std::pair<MeasureFailure, std::string_view> kMeasureFailureNames[] = {
    {MeasureFailure::None, "none"},       {MeasureFailure::Compile, "compile"},
    {MeasureFailure::Run, "run"},         {MeasureFailure::Crash, "crash"},
    {MeasureFailure::Timeout, "timeout"}, {MeasureFailure::Infrastructure, "infrastructure"},
};
}  // namespace

std::string_view to_string(MeasureFailure f) {
  for (const auto& [k, name] : kMeasureFailureNames)
    if (k == f) return name;
  return "none";
}

std::optional<MeasureFailure> measure_failure_from(std::string_view s) {
  for (const auto& [k, name] : kMeasureFailureNames)
    if (name == s) return k;
  return std::nullopt;
}

bool clears_noise(const backend::Comparison& c) {
  if (c.a.repeats < 1 || c.b.repeats < 1) return false;
  double se = std::sqrt(c.a.cv * c.a.cv / c.a.repeats + c.b.cv * c.b.cv / c.b.repeats);
  return c.speedup > 1 + std::max(0.02, 2 * se);
}

CpuRunner::CpuRunner(backend::MeasureOptions mo, uint64_t input_seed) : mo_(mo), input_seed_(input_seed) {
  Machine m = this_machine(mo_.threads);
  mo_.threads = m.threads;
  identity_ = fingerprint(m) + ";" +
              nlohmann::json{{"min_time_s", mo_.min_time_s}, {"min_repeats", mo_.min_repeats}, {"max_time_s", mo_.max_time_s},
                             {"warmup", mo_.warmup}, {"stable_rel", mo_.stable_rel}, {"flush", mo_.flush_cache},
                             {"input_seed", input_seed_}, {"inputs", "shared"}}
                  .dump();
}

std::string CpuRunner::identity() const { return identity_; }

std::vector<PairResult> CpuRunner::run(const std::vector<leir::Program>& programs,
                                       const std::vector<std::pair<int, int>>& pairs) {
  return measure_pairs(programs, pairs, mo_, input_seed_, 10.0 + 4 * mo_.max_time_s, &stats_);
}

std::optional<double> CpuRunner::copy_ms(int64_t read_bytes, int64_t write_bytes) {
  TimedSection timed(mo_.threads);
  return backend::measure_memory_traffic(read_bytes, write_bytes, mo_).median_ms;
}

}  // namespace steptp::tune
