// Integer arithmetic of subscript ranges (the validator's bounds checks and the tensor table's
// shape inference), checked against int64 overflow: a range that overflows has no static bound.
#pragma once

#include <cstdint>

namespace steptp::leir {

// Rounds toward negative infinity, as LEIR's `//` (LEIR.md §2); b != 0.
inline int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
inline int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }

// *o = a + b / a * b; false when it overflows int64.
inline bool add_ok(int64_t a, int64_t b, int64_t* o) { return !__builtin_add_overflow(a, b, o); }
inline bool mul_ok(int64_t a, int64_t b, int64_t* o) { return !__builtin_mul_overflow(a, b, o); }

}  // namespace steptp::leir
