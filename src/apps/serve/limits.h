// Size limits checked before any work: a request that exceeds one is answered with a 4xx naming
// the limit, instead of reaching the interpreter, the compiler or a kernel run where it would end
// as a time-out or an out-of-memory kill (an infrastructure failure, and for /v1/score a wrong
// score). Every count is overflow-checked (a shape [2^32, 2^32] has more elements than int64
// holds and is "too large", never a wrapped small number).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/error.h"
#include "ir/leir/ast.h"

namespace steptp::serve {

struct RequestLimits {
  int64_t max_body_bytes = int64_t{4} << 20;     // HTTP request body, chunked or not (413)
  int max_json_depth = 64;                       // nesting of arrays/objects in a body (400)
  int64_t max_program_bytes = int64_t{1} << 20;  // one program's text or JSON form
  int64_t max_statements = 10000;                // statements in a program's text
  int64_t max_nest_iterations = int64_t{1} << 34;  // product of a nest's extents, nested nests included
  int64_t max_tensor_elements = int64_t{1} << 28;  // any one tensor (signature or intermediate)
  int64_t max_total_bytes = int64_t{2} << 30;      // all tensors of a program together

  // The worker's command-line form of the program limits (the server checks body and depth).
  std::vector<std::string> to_args() const;
};

// A request over one of the limits: `limit` is its option name without dashes ("max_statements").
// base::ErrorKind::TooLarge (413).
struct LimitExceeded : base::Error {
  LimitExceeded(std::string limit, std::string field, double value, double max);
  std::string limit, field;
  double value, max;
};

// Throws LimitExceeded when `p` (from request field `field`) is over a program limit.
void check_program_limits(const leir::Program& p, const RequestLimits& limits, const std::string& field);
// Throws LimitExceeded when a program's source text (or JSON form) is over max_program_bytes.
void check_program_size(size_t bytes, const RequestLimits& limits, const std::string& field);

}  // namespace steptp::serve
