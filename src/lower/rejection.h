// A program that a lowering target does not lower: a leir::LeirError (base::ErrorKind::Invalid)
// whose message opens with the target ("cpu backend: ", "cuda target rejects the program: ",
// "tir target: "), with the bare reason kept apart so that callers that group rejections (the
// token statistics) need not strip the target from the text.
#pragma once

#include <string>
#include <utility>

#include "ir/leir/diagnostic.h"

namespace steptp::backend {

class TargetRejection : public leir::LeirError {
 public:
  TargetRejection(const std::string& file, leir::SourceLoc loc, const std::string& target_prefix, std::string reason)
      : leir::LeirError(file, loc, target_prefix + reason), reason_(std::move(reason)) {}
  // The reason without the target's prefix.
  const std::string& reason() const { return reason_; }

 private:
  std::string reason_;
};

}  // namespace steptp::backend
