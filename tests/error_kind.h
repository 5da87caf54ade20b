// The kind of the base::Error a call throws (base/error.h), for tests that check an error's kind
// (and so its HTTP status and exit code), not only that something was thrown.
#pragma once

#include <optional>

#include "base/error.h"

namespace steptp::testing {

// nullopt when `f` returns; an exception outside the family propagates (and fails the test).
template <class F>
std::optional<base::ErrorKind> thrown_kind(F&& f) {
  try {
    f();
  } catch (const base::Error& e) {
    return e.kind();
  }
  return std::nullopt;
}

}  // namespace steptp::testing
