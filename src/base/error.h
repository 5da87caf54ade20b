// The one error family: an error that a user's input causes carries a kind, and the kind alone
// decides serve's HTTP status and the CLI's exit code, in kErrorKinds below. Front ends catch
// base::Error (or an exception derived from it: leir::LeirError, import::ImportError,
// interp::RuntimeError, strategies::ReplayError, serve's LimitExceeded) and look the kind up instead of
// choosing a status per call site.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace steptp::base {

enum class ErrorKind : uint8_t {
  BadRequest,  // the request does not follow the API: a missing, unknown or mistyped field, a value
               // out of range or not among the choices (a site or parameters a program lacks)
  Invalid,     // input that follows the API but is not valid: a program that does not parse or
               // validate, values that do not fit, a model that does not import, a failed run
  TooLarge,    // over a configured limit
  Failed,      // the work could not be done (not attributed to a field): a compile error, a
               // processing failure; also any exception outside the family
};

struct ErrorKindInfo {
  ErrorKind kind;
  std::string_view name;
  int http_status;  // serve's reply
  int exit_code;    // the CLI's: 2 for a usage error, as CLI11's for a command line that does not parse
};

// The table (docs/serve.md "Error classes" lists the same statuses).
inline constexpr ErrorKindInfo kErrorKinds[] = {
    {ErrorKind::BadRequest, "bad_request", 400, 2},
    {ErrorKind::Invalid, "invalid", 422, 1},
    {ErrorKind::TooLarge, "too_large", 413, 1},
    {ErrorKind::Failed, "failed", 422, 1},
};

constexpr const ErrorKindInfo& info(ErrorKind k) {
  for (const auto& i : kErrorKinds)
    if (i.kind == k) return i;
  return kErrorKinds[3];
}
constexpr int http_status(ErrorKind k) { return info(k).http_status; }
constexpr int exit_code(ErrorKind k) { return info(k).exit_code; }

class Error : public std::runtime_error {
 public:
  // `field`: the request field or option the error is about, empty when none.
  Error(ErrorKind kind, const std::string& what, std::string field = "")
      : std::runtime_error(what), kind_(kind), field_(std::move(field)) {}
  ErrorKind kind() const { return kind_; }
  const std::string& field() const { return field_; }

 private:
  ErrorKind kind_;
  std::string field_;
};

// The kind of any exception: its own for the family, Failed for anything else.
inline ErrorKind kind_of(const std::exception& e) {
  const auto* b = dynamic_cast<const Error*>(&e);
  return b ? b->kind() : ErrorKind::Failed;
}

}  // namespace steptp::base
