// Tensor values as they travel in JSON (LEIR.md §1): {"A": {"dtype","shape","data"}, ...}.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "ir/leir/ast.h"
#include "ir/leir/types.h"

namespace steptp::leir {

struct TensorValue {
  DType dtype = DType::F64;
  std::vector<int64_t> shape;
  std::vector<double> data;  // flat, row-major; integers and bools stored exactly as doubles

  int64_t numel() const;
};

using TensorMap = std::map<std::string, TensorValue>;

// Throws LeirError (naming `file` and the tensor) on malformed values: wrong data length,
// non-numeric entries, unknown dtype.
TensorMap values_from_json(const nlohmann::json& j, const std::string& file = {});
nlohmann::json values_to_json(const TensorMap& values);
TensorMap read_values_file(const std::string& path);

// The value of a known tensor keyed by its name or, failing that, by its alias (LEIR.md §1:
// "values files may key tensors by either name"); nullptr when neither is present.
const TensorValue* find_value(const TensorMap& values, const std::string& name, const std::string& alias);
// Values files may key a known tensor by its name or by its alias (LEIR.md §1): returns `values`
// keyed by name. Throws LeirError when one tensor is given under both names.
TensorMap key_by_name(const Program& p, TensorMap values, const std::string& file = {});

}  // namespace steptp::leir
