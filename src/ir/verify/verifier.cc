#include "ir/verify/verifier.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "ir/interp/inputs.h"
#include "ir/interp/interpreter.h"
#include "ir/leir/diagnostic.h"

namespace steptp::verify {

using leir::DType;

std::string_view to_string(Verdict v) {
  switch (v) {
    case Verdict::Exact: return "exact";
    case Verdict::Reassoc: return "reassoc";
    case Verdict::Failed: return "failed";
    case Verdict::Inconclusive: return "inconclusive";
  }
  return "failed";
}

// Why these values. Equivalent rewrites change results only by rounding: a reassociated sum of n
// terms differs from the serial one by at most ~n*eps*sum|x_i| and in practice by ~sqrt(n)*eps
// times the sum's scale; an element that cancels to ~0 can therefore differ by that much in
// absolute terms, which the tensor-scaled atol absorbs. Real bugs (off-by-one subscript, dropped
// or swapped term, wrong init, max<->min) move elements by a sizeable fraction of the tensor's
// scale.
//  * f64 (eps 1.1e-16): 1e-9 leaves 10^7 eps of room, more than any reassociation of the sums
//    workloads contain (n <= ~10^5) and algebraic rewrites such as (a-b)^2 -> a^2-2ab+b^2, and is
//    still 10^6 times tighter than the public verifier's rel<=5e-3.
//  * f32 storage (eps 6e-8): every store rounds, so an accumulation into an f32 tensor carries
//    ~n*6e-8 relative error; 1e-4 allows n ~ 10^3 of worst-case growth.
//  * f16 (eps 9.8e-4) 1e-2, bf16 (eps 7.8e-3) 6e-2: a few dozen roundings.
//  * integers and bool: exact; a different index or truth value is a different result.
Tolerance tolerance_for(DType t) {
  switch (t) {
    case DType::F64: return {1e-9, 1e-9};
    case DType::F32: return {1e-4, 1e-4};
    case DType::F16: return {1e-2, 1e-2};
    case DType::BF16: return {6e-2, 6e-2};
    default: return {0, 0};
  }
}

uint64_t trial_seed(uint64_t seed, int trial) {
  // SplitMix64 step over (seed, trial): distinct, well-mixed seeds per trial.
  uint64_t z = seed + 0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(trial + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::string signature_difference(const leir::Program& a, const leir::Program& b) {
  auto shape = [](const std::vector<int64_t>& s) { return fmt::format("[{}]", fmt::join(s, ",")); };
  for (const auto& da : a.known) {
    const leir::TensorDecl* db = b.find_known(da.name);
    if (!db) return fmt::format("{} {} is declared by A but not by B", leir::to_string(da.role), da.name);
    if (db->role != da.role || db->dtype != da.dtype || db->shape != da.shape)
      return fmt::format("{} is {} {}{} in A but {} {}{} in B", da.name, leir::to_string(da.role),
                         leir::to_string(da.dtype), shape(da.shape), leir::to_string(db->role),
                         leir::to_string(db->dtype), shape(db->shape));
    if (da.value != db->value) return fmt::format("constant {} has different values in A and B", da.name);
  }
  for (const auto& db : b.known)
    if (!a.find_known(db.name)) return fmt::format("{} {} is declared by B but not by A", leir::to_string(db.role), db.name);
  return {};
}

namespace {

bool bit_identical(double x, double y) {
  if (std::isnan(x) && std::isnan(y)) return true;
  return std::memcmp(&x, &y, sizeof x) == 0;
}

std::vector<int64_t> unravel(int64_t flat, const std::vector<int64_t>& shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = shape[d] ? flat % shape[d] : 0;
    flat = shape[d] ? flat / shape[d] : 0;
  }
  return idx;
}

constexpr double kInf = std::numeric_limits<double>::infinity();

// Accumulates the comparison over trials.
class Comparison {
 public:
  explicit Comparison(const VerifyOptions& o) : opts_(o) {}

  // Compares one output tensor of one trial.
  void compare(const std::string& name, const leir::TensorValue& a, const leir::TensorValue& b, DType dtype,
               int trial, uint64_t seed) {
    Tolerance tol = tolerance_for(dtype);
    if (opts_.rtol >= 0) tol.rtol = opts_.rtol;
    if (opts_.atol_scale >= 0) tol.atol_scale = opts_.atol_scale;
    double scale = 0;
    for (double v : a.data)
      if (std::isfinite(v)) scale = std::max(scale, std::abs(v));
    const double atol = tol.atol_scale * scale;
    const size_t n = std::min(a.data.size(), b.data.size());
    for (size_t i = 0; i < n; ++i) {
      double x = a.data[i], y = b.data[i];
      if (bit_identical(x, y)) continue;
      exact_ = false;
      double abs_err, ratio;
      if (std::isnan(x) || std::isnan(y) || std::isinf(x) || std::isinf(y)) {
        abs_err = kInf;  // NaN vs number, or an infinity vs anything else
        ratio = kInf;
      } else {
        abs_err = std::abs(x - y);
        double bound = atol + tol.rtol * std::abs(x);
        ratio = abs_err <= bound ? (bound > 0 ? abs_err / bound : 0) : (bound > 0 ? abs_err / bound : kInf);
        if (abs_err > bound) ratio = std::max(ratio, 1.0 + 1e-300);  // strictly past the tolerance
      }
      bool fails = ratio > 1.0;
      if (fails) failed_ = true;
      if (!worst_ || ratio > worst_ratio_) {
        worst_ratio_ = ratio;
        double rel = x == 0 ? (abs_err == 0 ? 0 : kInf) : abs_err / std::abs(x);
        if (std::isinf(abs_err)) rel = kInf;
        worst_ = Worst{name, unravel(static_cast<int64_t>(i), a.shape), x, y, abs_err, rel, trial, seed};
      }
    }
  }

  void fail() { failed_ = true; }
  bool failed() const { return failed_; }
  bool exact() const { return exact_; }
  const std::optional<Worst>& worst() const { return worst_; }

 private:
  const VerifyOptions& opts_;
  bool exact_ = true;
  bool failed_ = false;
  std::optional<Worst> worst_;
  double worst_ratio_ = -1;
};

std::string runtime_message(const std::exception& e) {
  if (auto* le = dynamic_cast<const leir::LeirError*>(&e)) return le->what();
  return e.what();
}

// Share of finite elements over all outputs of the reference's run (1 when it has none).
double finite_share(const leir::Program& a, const leir::TensorMap& out) {
  size_t finite = 0, total = 0;
  for (const auto& d : a.known) {
    if (d.role != leir::Role::Output) continue;
    auto it = out.find(d.name);
    if (it == out.end()) continue;
    for (double v : it->second.data) finite += std::isfinite(v) ? 1 : 0;
    total += it->second.data.size();
  }
  return total ? static_cast<double>(finite) / static_cast<double>(total) : 1.0;
}

// Compares every output of A in one trial.
void compare_trial(const leir::Program& a, const leir::TensorMap& out_a, const leir::TensorMap& out_b, int t,
                   uint64_t seed, Comparison& cmp, VerifyReport& r) {
  const double share = finite_share(a, out_a);
  r.finite_share = std::max(r.finite_share, share);
  if (share >= kEvidenceShare) ++r.evidential;
  for (const auto& d : a.known) {
    if (d.role != leir::Role::Output) continue;
    auto xa = out_a.find(d.name);
    auto xb = out_b.find(d.name);
    if (xa == out_a.end() || xb == out_b.end() || xa->second.data.size() != xb->second.data.size()) {
      r.error = fmt::format("trial {}: output {} is missing or mis-shaped", t, d.name);
      cmp.fail();
      return;
    }
    cmp.compare(d.name, xa->second, xb->second, d.dtype, t, seed);
  }
}

// The verdict after the last trial: failed, inconclusive without evidence (LEIR.md §5), else
// exact or reassociated.
void conclude(const Comparison& cmp, VerifyReport& r) {
  r.worst = cmp.worst();
  if (cmp.failed()) return;
  if (r.evidential == 0) {
    r.verdict = Verdict::Inconclusive;
    r.error = fmt::format(
        "inconclusive: no trial gave evidence (at most {:.1f}% of the reference's output elements were finite on any "
        "of the {} input sets; at least {:.0f}% are needed)",
        100 * r.finite_share, r.trials, 100 * kEvidenceShare);
    return;
  }
  r.equivalent = true;
  r.verdict = cmp.exact() ? Verdict::Exact : Verdict::Reassoc;
}

// Runs both programs on the input sets produced by `inputs_for(trial)`.
template <typename InputsFor>
VerifyReport run_trials(const leir::Program& a, const leir::Program& b, int trials, const VerifyOptions& opts,
                        InputsFor&& inputs_for) {
  VerifyReport r;
  if (auto diff = signature_difference(a, b); !diff.empty()) {
    r.error = "different signatures: " + diff;
    return r;
  }
  std::optional<interp::Interpreter> ia, ib;
  try {
    ia.emplace(a);
  } catch (const std::exception& e) {
    r.error = "program A is invalid: " + runtime_message(e);
    r.invalid_reference = true;
    return r;
  }
  try {
    ib.emplace(b);
  } catch (const std::exception& e) {
    r.error = "program B is invalid: " + runtime_message(e);
    return r;
  }
  interp::RunOptions ro;
  ro.detect_races = opts.detect_races;
  Comparison cmp(opts);
  for (int t = 0; t < trials; ++t) {
    uint64_t seed = 0;
    leir::TensorMap inputs;
    try {
      inputs = inputs_for(t, &seed);
    } catch (const std::exception& e) {
      r.error = fmt::format("trial {}: cannot make inputs: {}", t, runtime_message(e));
      r.invalid_reference = true;
      return r;
    }
    leir::TensorMap out_a, out_b;
    try {
      out_a = ia->run(inputs, ro);
    } catch (const std::exception& e) {
      r.error = fmt::format("trial {} (seed {}): program A failed: {}", t, seed, runtime_message(e));
      r.invalid_reference = true;
      return r;
    }
    try {
      out_b = ib->run(inputs, ro);
    } catch (const std::exception& e) {
      r.error = fmt::format("trial {} (seed {}): program B failed: {}", t, seed, runtime_message(e));
      r.worst = cmp.worst();
      return r;
    }
    compare_trial(a, out_a, out_b, t, seed, cmp, r);
    r.trials = t + 1;
    if (cmp.failed()) break;  // the worst element so far already proves inequivalence
  }
  conclude(cmp, r);
  return r;
}

// In-domain draws first (a single trial is then evidence wherever inputs can make it so), raw
// signed draws for the rest (they still check that NaN/inf positions agree, and overflow).
// For a program without restricted operations Domain/DomainSmall are exactly Ordinary/ScaledDown.
constexpr interp::InputProfile kProfiles[] = {interp::InputProfile::Domain, interp::InputProfile::ScaledUp,
                                              interp::InputProfile::DomainSmall, interp::InputProfile::Signs};

}  // namespace

VerifyReport verify(const leir::Program& a, const leir::Program& b, const VerifyOptions& opts) {
  return run_trials(a, b, std::max(1, opts.trials), opts, [&](int t, uint64_t* seed) {
    *seed = trial_seed(opts.seed, t);
    return interp::generate_inputs(a, *seed, kProfiles[t % 4]);
  });
}

VerifyReport verify(const leir::Program& a, const leir::Program& b, const std::vector<leir::TensorMap>& input_sets,
                    const VerifyOptions& opts) {
  return run_trials(a, b, static_cast<int>(input_sets.size()), opts, [&](int t, uint64_t* seed) {
    *seed = opts.seed;
    return input_sets[t];
  });
}

VerifyReport compare_outputs(const leir::Program& a, const std::vector<OutputPair>& outputs,
                             const std::vector<uint64_t>& seeds, const VerifyOptions& opts) {
  VerifyReport r;
  Comparison cmp(opts);
  for (size_t t = 0; t < outputs.size(); ++t) {
    compare_trial(a, *outputs[t].first, *outputs[t].second, int(t), t < seeds.size() ? seeds[t] : 0, cmp, r);
    r.trials = int(t) + 1;
    if (cmp.failed()) break;
  }
  conclude(cmp, r);
  return r;
}

namespace {
nlohmann::ordered_json number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

double from_number(const nlohmann::json& v) {
  if (v.is_number()) return v.get<double>();
  const std::string t = v.get<std::string>();
  if (t == "nan") return std::nan("");
  if (t == "inf" || t == "-inf") return t == "inf" ? INFINITY : -INFINITY;
  throw base::Error(base::ErrorKind::Invalid, "verification report: not a number: " + t);
}
}  // namespace

std::string to_json(const VerifyReport& r) {
  nlohmann::ordered_json j;
  j["equivalent"] = r.equivalent;
  j["class"] = std::string(to_string(r.verdict));
  j["trials"] = r.trials;
  j["evidential"] = r.evidential;
  j["finite_share"] = r.finite_share;
  if (r.worst) {
    const Worst& w = *r.worst;
    j["worst"] = {{"tensor", w.tensor}, {"index", w.index},          {"a", number(w.a)},   {"b", number(w.b)},
                  {"abs_err", number(w.abs_err)}, {"rel_err", number(w.rel_err)}, {"trial", w.trial}, {"seed", w.seed}};
  } else {
    j["worst"] = nullptr;
  }
  return j.dump();
}

VerifyReport report_from_json(const std::string& text) {
  VerifyReport r;
  try {
    const auto j = nlohmann::json::parse(text);
    r.equivalent = j.at("equivalent").get<bool>();
    const std::string cls = j.at("class").get<std::string>();
    bool known = false;
    for (Verdict v : {Verdict::Exact, Verdict::Reassoc, Verdict::Failed, Verdict::Inconclusive})
      if (to_string(v) == cls) r.verdict = v, known = true;
    if (!known) throw base::Error(base::ErrorKind::Invalid, "unknown class " + cls);
    r.trials = j.at("trials").get<int>();
    r.evidential = j.at("evidential").get<int>();
    r.finite_share = from_number(j.at("finite_share"));
    if (const auto& w = j.at("worst"); !w.is_null())
      r.worst = Worst{w.at("tensor").get<std::string>(), w.at("index").get<std::vector<int64_t>>(),
                      from_number(w.at("a")),           from_number(w.at("b")),
                      from_number(w.at("abs_err")),     from_number(w.at("rel_err")),
                      w.at("trial").get<int>(),         w.at("seed").get<uint64_t>()};
  } catch (const nlohmann::json::exception& e) {
    throw base::Error(base::ErrorKind::Invalid, std::string("verification report: ") + e.what());
  }
  return r;
}

}  // namespace steptp::verify
