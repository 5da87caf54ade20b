// Seeded input generation (LEIR.md §5): every random choice flows from the seed, with the same
// bytes on every machine (own PRNG + own distributions, never std::*_distribution).
#pragma once

#include <cstdint>

#include "ir/leir/ast.h"
#include "ir/leir/values.h"

namespace steptp::interp {

enum class InputProfile : uint8_t {
  Ordinary,   // floats ~ U(-1, 1) (or N(0,1)); ints within the valid index range of their uses
  ScaledUp,   // floats ×1e3
  ScaledDown, // floats ×1e-3
  Signs,      // mixed signs, exact zeros, ties, values near padding/mask boundaries
  // In-domain variants (ir/interp/domains.h): the float inputs that reach log, sqrt, fractional
  // powers or divisors draw from U(0.25, 2) (Domain) or U(0.25, 2)×1e-3 (DomainSmall): positive
  // and away from zero. Every other tensor draws exactly as in Ordinary / ScaledDown (same
  // bytes), so a program without restricted operations gets the same inputs from both.
  Domain,
  DomainSmall,
};

// Inputs and params of `p` (constants are taken from the signature by the interpreter).
// Integer tensors used as gather subscripts get values inside the range those subscripts allow;
// bool tensors get a seeded mix.
leir::TensorMap generate_inputs(const leir::Program& p, uint64_t seed, InputProfile profile = InputProfile::Ordinary);

// SplitMix64-based generator: portable and reproducible.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next();
  double uniform();                       // [0, 1)
  double uniform(double lo, double hi);   // [lo, hi)
  int64_t uniform_int(int64_t lo, int64_t hi);  // [lo, hi] inclusive
  double normal();                        // Box-Muller, deterministic
 private:
  uint64_t state_;
};

}  // namespace steptp::interp
