// The workload registry, hyper-parameter sampling and emission.
#include <fmt/format.h>

#include <algorithm>
#include <mutex>
#include <stdexcept>

#include "base/error.h"
#include "base/hash.h"
#include "ir/leir/ir_mutator.h"
#include "front/workloads/bench_size.h"
#include "front/workloads/workload.h"

namespace steptp::workloads {
namespace {

struct Registry {
  std::mutex mu;
  std::vector<Workload> items;
  bool sorted = true;
};

Registry& registry() {
  static Registry r;
  return r;
}


constexpr int kMaxSampleTries = 10000;

}  // namespace

std::string_view to_string(SizeClass s) {
  switch (s) {
    case SizeClass::Tiny: return "tiny";
    case SizeClass::Small: return "small";
    case SizeClass::Default: return "default";
    case SizeClass::Bench: return "bench";
  }
  return "?";
}

std::optional<SizeClass> parse_size_class(std::string_view s) {
  if (s == "tiny") return SizeClass::Tiny;
  if (s == "small") return SizeClass::Small;
  if (s == "default") return SizeClass::Default;
  if (s == "bench") return SizeClass::Bench;
  return std::nullopt;
}

RegisterWorkload::RegisterWorkload(Workload w) {
  auto& r = registry();
  std::lock_guard lock(r.mu);
  r.items.push_back(std::move(w));
  r.sorted = false;
}

const std::vector<Workload>& all_workloads() {
  auto& r = registry();
  std::lock_guard lock(r.mu);
  if (!r.sorted) {
    std::sort(r.items.begin(), r.items.end(), [](const Workload& a, const Workload& b) {
      return a.level != b.level ? a.level < b.level : a.name < b.name;
    });
    for (size_t i = 1; i < r.items.size(); ++i)
      if (r.items[i].name == r.items[i - 1].name)
        throw std::logic_error("workload registered twice: " + r.items[i].name);
    r.sorted = true;
  }
  return r.items;
}

const Workload* find_workload(std::string_view name) {
  for (const auto& w : all_workloads())
    if (w.name == name) return &w;
  return nullptr;
}

std::string check_hyper(const Workload& w, const HyperValues& hv) {
  for (const auto& p : w.params) {
    auto it = hv.find(p.name);
    if (it == hv.end()) return fmt::format("hyper-parameter '{}' has no value", p.name);
    if (it->second < p.lo || it->second > p.hi)
      return fmt::format("hyper-parameter '{}' = {} is outside its range [{}, {}]", p.name,
                         it->second, p.lo, p.hi);
  }
  for (const auto& [name, value] : hv) {
    bool known = std::any_of(w.params.begin(), w.params.end(),
                             [&](const HyperParam& p) { return p.name == name; });
    if (!known) return fmt::format("workload {} has no hyper-parameter '{}'", w.name, name);
  }
  for (const auto& c : w.constraints)
    if (!c.holds(hv)) return fmt::format("constraint violated: {}", c.text);
  return {};
}

HyperValues sample_hyper(const Workload& w, uint64_t seed, SizeClass size, const HyperValues& fixed,
                         int bench_doublings) {
  const BenchWindow window = bench_window(bench_doublings);
  for (const auto& [name, value] : fixed) {
    auto it = std::find_if(w.params.begin(), w.params.end(),
                           [&](const HyperParam& p) { return p.name == name; });
    if (it == w.params.end())
      throw base::Error(base::ErrorKind::BadRequest,
                        fmt::format("workload {} has no hyper-parameter '{}'", w.name, name));
    if (value < it->lo || value > it->hi)
      throw base::Error(base::ErrorKind::BadRequest,
                        fmt::format("{}: hyper-parameter '{}' = {} is outside its range [{}, {}]", w.name, name, value,
                                    it->lo, it->hi));
  }
  // The workload's name mixed into its seed: one seed gives unrelated draws per workload.
  interp::Rng rng(seed * 0x9E3779B97F4A7C15ull ^ base::fnv1a(w.name, base::kProgramHashBasis));
  std::string last_error;
  const int tries = size == SizeClass::Bench ? kBenchMaxDraws : kMaxSampleTries;
  for (int attempt = 0; attempt < tries; ++attempt) {
    HyperValues hv;
    if (size == SizeClass::Bench) {
      hv = draw_bench_hyper(w, rng, window);
    } else if (w.sample) {
      hv = w.sample(size, rng);
    } else {
      for (const auto& p : w.params) {
        auto [lo, hi] = p.by_size[static_cast<size_t>(size)];
        hv[p.name] = rng.uniform_int(lo, hi);
      }
    }
    for (const auto& [name, value] : fixed) hv[name] = value;
    last_error = check_hyper(w, hv);
    if (last_error.empty() && size == SizeClass::Bench) last_error = bench_window_miss(w.build(hv), window);
    if (last_error.empty()) return hv;
  }
  throw base::Error(base::ErrorKind::BadRequest, fmt::format("{}: no {} hyper-parameters satisfy the constraints ({})",
                                                             w.name, to_string(size), last_error));
}

leir::Program emit(const Workload& w, const HyperValues& hv) {
  std::string err = check_hyper(w, hv);
  if (!err.empty()) throw base::Error(base::ErrorKind::BadRequest, w.name + ": " + err);
  leir::Program p = w.build(hv);
  p.name = w.name;
  return p;
}

leir::Program emit(const Workload& w, uint64_t seed, SizeClass size, int bench_doublings) {
  return emit(w, sample_hyper(w, seed, size, {}, bench_doublings));
}

namespace {
// Re-annotates every float64 access as float32 (values and structure untouched).
class F32Mutator : public leir::ExprMutator {
 protected:
  leir::ExprPtr visit_access(const leir::ExprPtr& e) override {
    leir::ExprPtr m = mutate_children(e);
    if (m->dtype != leir::DType::F64) return m;
    auto copy = std::make_shared<leir::Expr>(*m);
    copy->dtype = leir::DType::F32;
    return copy;
  }
};
}  // namespace

leir::Program to_f32(const leir::Program& p) {
  leir::Program out = p;
  for (auto& d : out.known)
    if (d.dtype == leir::DType::F64) d.dtype = leir::DType::F32;
  F32Mutator m;
  out.body = leir::map_exprs(p.body, [&](const leir::ExprPtr& e) { return m.mutate(e); });
  return out;
}

}  // namespace steptp::workloads
