// Request size limits (see limits.h).
#include "apps/serve/limits.h"

#include <optional>

#include <fmt/format.h>

#include "ir/leir/tensors.h"
#include "ir/leir/types.h"

namespace steptp::serve {
namespace {

// a * b, or `cap + 1` when it exceeds `cap` (or overflows): counts only need to be compared.
int64_t capped_mul(int64_t a, int64_t b, int64_t cap) {
  int64_t r = 0;
  if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &r) || r > cap) return cap + 1;
  return r;
}

struct Walk {
  const RequestLimits& lim;
  const std::string& field;
  int64_t statements = 0;

  void items(const std::vector<leir::Item>& body, int64_t outer) {
    for (const auto& it : body) {
      if (it.is_stmt()) {
        if (++statements > lim.max_statements)
          throw LimitExceeded("max_statements", field, double(statements), double(lim.max_statements));
        continue;
      }
      int64_t n = outer;
      for (const auto& l : it.nest.loops) n = capped_mul(n, l.extent, lim.max_nest_iterations);
      if (n > lim.max_nest_iterations)
        throw LimitExceeded("max_nest_iterations", field, static_cast<double>(n), double(lim.max_nest_iterations));
      items(it.nest.body, n);
    }
  }
};

}  // namespace

LimitExceeded::LimitExceeded(std::string limit_, std::string field_, double value_, double max_)
    : base::Error(base::ErrorKind::TooLarge,
                  fmt::format("{}: over the service's limit {} (at least {:.0f}; at most {:.0f} allowed)", field_,
                              limit_, value_, max_),
                  field_),
      limit(std::move(limit_)),
      field(std::move(field_)),
      value(value_),
      max(max_) {}

std::vector<std::string> RequestLimits::to_args() const {
  return {"--max-program-bytes", std::to_string(max_program_bytes),
          "--max-statements", std::to_string(max_statements),
          "--max-nest-iterations", std::to_string(max_nest_iterations),
          "--max-tensor-elements", std::to_string(max_tensor_elements),
          "--max-total-bytes", std::to_string(max_total_bytes)};
}

void check_program_size(size_t bytes, const RequestLimits& lim, const std::string& field) {
  if (int64_t(bytes) > lim.max_program_bytes)
    throw LimitExceeded("max_program_bytes", field, double(bytes), double(lim.max_program_bytes));
}

void check_program_limits(const leir::Program& p, const RequestLimits& lim, const std::string& field) {
  Walk{lim, field}.items(p.body, 1);
  // Signature tensors first (their shapes are declared); intermediates once the table can be
  // built — an invalid program is then left to validation, which reports it with line:col.
  int64_t total = 0;
  const int64_t cap = lim.max_total_bytes;
  auto add = [&](const std::vector<int64_t>& shape, leir::DType dt) {
    // A count past int64 is over any limit (the readers reject such a shape already).
    const std::optional<int64_t> counted = leir::checked_numel(shape);
    const int64_t n = counted ? *counted : lim.max_tensor_elements + 1;
    if (n > lim.max_tensor_elements)
      throw LimitExceeded("max_tensor_elements", field, double(n), double(lim.max_tensor_elements));
    total = std::min(cap + 1, total + capped_mul(n, leir::byte_size(dt), cap));
    if (total > cap) throw LimitExceeded("max_total_bytes", field, double(total), double(cap));
  };
  for (const auto& t : p.known) add(t.shape, t.dtype);
  leir::TensorTable table;
  try {
    table = leir::build_tensor_table(p);
  } catch (const std::exception&) {
    return;
  }
  for (const auto& [name, t] : table.tensors)
    if (!t.known) add(t.shape, t.dtype);
}

}  // namespace steptp::serve
