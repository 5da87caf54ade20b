#include "strategies/equivalence.h"

#include <cmath>

#include "interp/inputs.h"
#include "interp/interpreter.h"
#include "leir/printer.h"

namespace steptp::strategies {

Equivalence check_equivalent(const leir::Program& a, const leir::Program& b, const EquivalenceOptions& o) {
  Equivalence r;
  r.exact = true;
  const interp::InputProfile profiles[] = {interp::InputProfile::Ordinary, interp::InputProfile::Signs,
                                           interp::InputProfile::ScaledUp, interp::InputProfile::ScaledDown};
  auto fmt = [](double v) { return leir::format_number(v, false); };
  try {
    interp::Interpreter ia(a), ib(b);
    for (int t = 0; t < o.trials; ++t) {
      uint64_t seed = o.seed + t;
      auto in = interp::generate_inputs(a, seed, profiles[t % 4]);
      auto ra = ia.run(in), rb = ib.run(in);
      for (const auto& d : a.known) {
        if (d.role != leir::Role::Output) continue;
        const auto& x = ra.at(d.name);
        auto it = rb.find(d.name);
        if (it == rb.end() || it->second.data.size() != x.data.size()) {
          r.message = "output " + d.name + " missing or mis-shaped";
          return r;
        }
        const auto& y = it->second;
        for (size_t k = 0; k < x.data.size(); ++k) {
          double u = x.data[k], v = y.data[k];
          bool same = (std::isnan(u) && std::isnan(v)) || u == v;
          if (same) continue;
          r.exact = false;
          bool finite = std::isfinite(u) && std::isfinite(v);
          if (!finite || std::abs(u - v) > o.atol + o.rtol * std::abs(u)) {
            r.message = "output " + d.name + "[" + std::to_string(k) + "]: " + fmt(u) + " (input) vs " + fmt(v) +
                        " (result), trial " + std::to_string(t) + ", seed " + std::to_string(seed);
            return r;
          }
        }
      }
    }
  } catch (const std::exception& e) {
    r.exact = false;
    r.message = e.what();
    return r;
  }
  r.ok = true;
  return r;
}

}  // namespace steptp::strategies
