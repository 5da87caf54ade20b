#include "ir/leir/diagnostic.h"

#include <fmt/format.h>

namespace steptp::leir {

std::string format_diagnostic(const std::string& file, SourceLoc loc, const std::string& message) {
  std::string where = file.empty() ? "<input>" : file;
  if (loc.line > 0) where += fmt::format(":{}:{}", loc.line, loc.col);
  return fmt::format("{}: error: {}", where, message);
}

LeirError::LeirError(std::string file, SourceLoc loc, std::string message)
    : base::Error(base::ErrorKind::Invalid, format_diagnostic(file, loc, message), file),
      file_(std::move(file)),
      loc_(loc),
      message_(std::move(message)) {}

}  // namespace steptp::leir
