// A program that a lowering target does not lower: a leir::LeirError (base::ErrorKind::Invalid)
// whose message opens with the target ("cpu backend: ", "cuda target rejects the program: ",
// "tir target: "). It carries the reason twice: typed (RejectionCode, what callers that group
// rejections key by, e.g. the token statistics) and as the human message without the target's
// prefix (reason()), which names the program's tensors, loops and numbers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>
#include <utility>

#include "ir/leir/diagnostic.h"

namespace steptp::backend {

enum class RejectionCode : uint8_t {
  UnboundIndexVariable,        // a subscript names a variable no enclosing loop binds
  UnloweredExpression,         // an expression the target has no spelling for
  NonIntegerSubscriptLiteral,  // a literal subscript that is not an integer
  NonIntegerSubscript,         // a subscript outside + - * // % over loops, literals and gathers
  RankMismatch,                // an access with another number of subscripts than its tensor's rank
  PartlySetAccumulation,       // an accumulation into a tensor partly set before its nest
  UnboundGpuAxis,              // a B loop whose variable names no GPU axis
  AxisBoundTwice,              // one GPU axis bound by two loops on one path
  ThreadsPerBlock,             // more threads per block than the device allows
  BlockExtentLimit,            // a tx/ty/tz extent over the device's limit
  GridExtentLimit,             // a bx/by/bz extent over the device's limit
  SharedMemoryLimit,           // more shared memory per block than the device allows
  LocalBufferAcrossKernels,    // an l-scope buffer used by two kernels (it does not outlive one)
  SharedBufferAcrossKernels,   // an s-scope buffer used by two kernels
  UnsupportedDtype,            // a dtype the target does not lower
  IntegerMinMaxReduction,      // a max/min reduction into an integer tensor
  NonUniformWrite,             // a write in a kernel that is neither per-thread, an accumulation nor uniform
  NoAtomicForm,                // a parallel reduction whose dtype and operation have no atomic
};

struct RejectionInfo {
  RejectionCode code;
  // The reason class: the reason with its tensors as X, numbers as N and other names as _, so
  // like rejections count together (the token statistics' "excluded" reasons).
  std::string_view group;
};
inline constexpr RejectionInfo kRejections[] = {
    {RejectionCode::UnboundIndexVariable, "index variable _ is not bound"},
    {RejectionCode::UnloweredExpression, "cannot lower expression _"},
    {RejectionCode::NonIntegerSubscriptLiteral, "subscript literal _ is not an integer"},
    {RejectionCode::NonIntegerSubscript, "_ is not an integer subscript expression"},
    {RejectionCode::RankMismatch, "X has rank N, accessed with N subscripts"},
    {RejectionCode::PartlySetAccumulation,
     "accumulation into X, whose elements may be partly set before the nest, needs per-element tracking"},
    {RejectionCode::UnboundGpuAxis, "B loop variable _ names no GPU axis"},
    {RejectionCode::AxisBoundTwice, "_ is bound twice on one path"},
    {RejectionCode::ThreadsPerBlock, "N threads per block"},
    {RejectionCode::BlockExtentLimit, "tx/ty/tz extent N exceeds the limit N"},
    {RejectionCode::GridExtentLimit, "bx/by/bz extent N exceeds the limit N"},
    {RejectionCode::SharedMemoryLimit, "N bytes of shared memory per block exceed the limit of N"},
    {RejectionCode::LocalBufferAcrossKernels, "local buffer X is used by N kernels"},
    {RejectionCode::SharedBufferAcrossKernels, "shared buffer X is used by N kernels"},
    {RejectionCode::UnsupportedDtype, "tensor X has a dtype this target does not lower"},
    {RejectionCode::IntegerMinMaxReduction, "max/min reduction into integer tensor X"},
    {RejectionCode::NonUniformWrite,
     "write to X does not depend on an enclosing B loop and is neither an accumulation nor a uniform store"},
    {RejectionCode::NoAtomicForm, "parallel reduction into X"},
};
// One row per code, in the enum's order, so a code is its row's index.
constexpr bool rejections_in_code_order() {
  for (size_t i = 0; i < std::size(kRejections); ++i)
    if (size_t(kRejections[i].code) != i) return false;
  return true;
}
static_assert(std::size(kRejections) == size_t(RejectionCode::NoAtomicForm) + 1 && rejections_in_code_order(),
              "kRejections needs one row per RejectionCode, in order");
constexpr std::string_view rejection_group(RejectionCode c) { return kRejections[size_t(c)].group; }

class TargetRejection : public leir::LeirError {
 public:
  TargetRejection(const std::string& file, leir::SourceLoc loc, const std::string& target_prefix, RejectionCode code,
                  std::string reason)
      : leir::LeirError(file, loc, target_prefix + reason), code_(code), reason_(std::move(reason)) {}
  RejectionCode code() const { return code_; }
  // The human reason without the target's prefix.
  const std::string& reason() const { return reason_; }

 private:
  RejectionCode code_;
  std::string reason_;
};

}  // namespace steptp::backend
