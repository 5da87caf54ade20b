// Errors with a source position: "FILE:LINE:COL: error: MESSAGE" (LEIR.md §2).
#pragma once

#include <stdexcept>
#include <string>

#include "base/error.h"
#include "ir/leir/types.h"

namespace steptp::leir {

// A program that does not parse or validate (base::ErrorKind::Invalid).
class LeirError : public base::Error {
 public:
  LeirError(std::string file, SourceLoc loc, std::string message);

  const std::string& file() const { return file_; }
  SourceLoc loc() const { return loc_; }
  // The bare message, without the position prefix.
  const std::string& message() const { return message_; }

 private:
  std::string file_;
  SourceLoc loc_;
  std::string message_;
};

// "file:line:col: error: message" (position parts omitted when unknown).
std::string format_diagnostic(const std::string& file, SourceLoc loc, const std::string& message);

}  // namespace steptp::leir
