// The scalar semantics of LEIR (LEIR.md §3), shared by the interpreter and input generation:
// Python floor division and modulo, NaN-propagating max/min, and what storing a float64 into a
// tensor of each dtype means.
//
// Decisions where LEIR.md is silent (the reference is Python/PyTorch float64 semantics):
//  * `a // 0` and `a % 0` follow PyTorch on floats (IEEE: ±inf or nan for //, nan for %), not
//    Python's ZeroDivisionError.
//  * `**` and pow() are C pow(): a negative base with a non-integer exponent gives NaN (as
//    torch.pow does; Python would return a complex number), 0**-1 is +inf.
//  * max/min propagate NaN (torch.maximum/minimum), unlike C fmax/fmin.
//  * Conditions (if_then_else, &, |) treat any non-zero value, NaN included, as true.
//  * Storing rounds to the tensor's dtype: f32 to the nearest float, f16 and bf16 to the nearest
//    representable value (ties to even, overflow to ±inf), integers truncate toward zero and wrap
//    modulo 2^bits like a C cast from int64 (i64 holds integers exactly up to 2^53), bool stores
//    v != 0. So an f32 program means f32 storage with float64 arithmetic between stores.
//    Storing NaN or ±inf into an integer tensor has no meaning and is a run-time error.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>

#include "ir/leir/types.h"

namespace steptp::interp {

// Python's float floor division (CPython float_floor_div), e.g. 1 // 0.1 == 9.0, -7 // 2 == -4.
inline double py_floordiv(double a, double b) {
  if (b == 0.0) return a / b;
  double mod = std::fmod(a, b);
  double div = (a - mod) / b;
  if (mod != 0.0 && ((b < 0) != (mod < 0))) div -= 1.0;
  if (div == 0.0) return std::copysign(0.0, a / b);
  double fl = std::floor(div);
  if (div - fl > 0.5) fl += 1.0;
  return fl;
}

// Python's float modulo: the result has the sign of the divisor, e.g. -7 % 3 == 2, 7 % -3 == -2.
inline double py_mod(double a, double b) {
  if (b == 0.0) return std::numeric_limits<double>::quiet_NaN();
  double mod = std::fmod(a, b);
  if (mod != 0.0) {
    if ((b < 0) != (mod < 0)) mod += b;
  } else {
    mod = std::copysign(0.0, b);
  }
  return mod;
}

inline double nan_max(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<double>::quiet_NaN();
  return a < b ? b : a;
}

inline double nan_min(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<double>::quiet_NaN();
  return b < a ? b : a;
}

// Rounds a finite double to a binary format with `precision` significand bits (implicit bit
// included), minimum normal exponent `emin` and maximum exponent `emax`: nearest, ties to even,
// gradual underflow, overflow to ±inf.
inline double round_to_format(double v, int precision, int emin, int emax) {
  if (!std::isfinite(v) || v == 0.0) return v;
  int e = 0;
  std::frexp(v, &e);  // v = m * 2^e, 0.5 <= |m| < 1: the unit exponent is e - 1
  int unit = std::max(e - 1, emin);
  double quantum = std::ldexp(1.0, unit - (precision - 1));
  double r = std::nearbyint(v / quantum) * quantum;  // division by a power of two is exact
  double max_finite = std::ldexp(2.0 - std::ldexp(1.0, 1 - precision), emax);
  if (std::fabs(r) > max_finite) return std::copysign(std::numeric_limits<double>::infinity(), v);
  return r;
}

// The value an element of `dtype` holds after storing `v`; nullopt when `v` cannot be stored
// (NaN or ±inf into an integer tensor, or an integer beyond the range of i64).
inline std::optional<double> store_as(leir::DType dtype, double v) {
  using leir::DType;
  switch (dtype) {
    case DType::F64: return v;
    case DType::F32: return static_cast<double>(static_cast<float>(v));
    case DType::F16: return round_to_format(v, 11, -14, 15);
    case DType::BF16: return round_to_format(v, 8, -126, 127);
    case DType::Bool: return v != 0.0 ? 1.0 : 0.0;
    default: break;
  }
  double t = std::trunc(v);
  if (!(std::fabs(t) < 9223372036854775808.0)) return std::nullopt;  // NaN, inf, out of i64
  auto i = static_cast<int64_t>(t);
  switch (dtype) {
    case DType::I8: return static_cast<double>(static_cast<int8_t>(i));
    case DType::I16: return static_cast<double>(static_cast<int16_t>(i));
    case DType::I32: return static_cast<double>(static_cast<int32_t>(i));
    case DType::U8: return static_cast<double>(static_cast<uint8_t>(i));
    default: return static_cast<double>(i);
  }
}

}  // namespace steptp::interp
