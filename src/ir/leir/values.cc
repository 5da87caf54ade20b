#include "ir/leir/values.h"

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "ir/leir/diagnostic.h"

namespace steptp::leir {

int64_t TensorValue::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

namespace {

double element_from_json(const nlohmann::json& v, const std::string& file, const std::string& name, size_t i) {
  if (v.is_boolean()) return v.get<bool>() ? 1.0 : 0.0;
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    const auto& s = v.get_ref<const std::string&>();
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
  }
  throw LeirError(file, {}, fmt::format("tensor '{}': data[{}] is {}, expected a number, true/false, "
                                        "\"inf\", \"-inf\" or \"nan\"", name, i, v.dump()));
}

nlohmann::json element_to_json(double v, DType dtype) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (dtype == DType::Bool) return v != 0.0;
  if (is_integer(dtype)) return static_cast<int64_t>(v);
  return v;
}

}  // namespace

TensorMap values_from_json(const nlohmann::json& j, const std::string& file) {
  if (!j.is_object()) throw LeirError(file, {}, "tensor values must be a JSON object mapping names to tensors");
  TensorMap out;
  for (const auto& [name, t] : j.items()) {
    if (!t.is_object() || !t.contains("dtype") || !t.contains("shape") || !t.contains("data"))
      throw LeirError(file, {}, fmt::format("tensor '{}' must be an object with \"dtype\", \"shape\" and \"data\"", name));
    TensorValue v;
    auto dt = t["dtype"].is_string() ? parse_dtype(t["dtype"].get<std::string>()) : std::nullopt;
    if (!dt) throw LeirError(file, {}, fmt::format("tensor '{}': unknown dtype {}", name, t["dtype"].dump()));
    v.dtype = *dt;
    if (!t["shape"].is_array()) throw LeirError(file, {}, fmt::format("tensor '{}': shape must be an array", name));
    for (const auto& d : t["shape"]) {
      if (!d.is_number_integer() || d.get<int64_t>() < 0)
        throw LeirError(file, {}, fmt::format("tensor '{}': shape entries must be non-negative integers", name));
      v.shape.push_back(d.get<int64_t>());
    }
    const auto& data = t["data"];
    if (!data.is_array()) throw LeirError(file, {}, fmt::format("tensor '{}': data must be a flat array", name));
    if (static_cast<int64_t>(data.size()) != v.numel())
      throw LeirError(file, {}, fmt::format("tensor '{}': shape {} needs {} elements, data has {}", name,
                                            t["shape"].dump(), v.numel(), data.size()));
    v.data.reserve(data.size());
    for (size_t i = 0; i < data.size(); ++i) v.data.push_back(element_from_json(data[i], file, name, i));
    out.emplace(name, std::move(v));
  }
  return out;
}

nlohmann::json values_to_json(const TensorMap& values) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [name, v] : values) {
    nlohmann::json data = nlohmann::json::array();
    for (double x : v.data) data.push_back(element_to_json(x, v.dtype));
    j[name] = {{"dtype", std::string(to_string(v.dtype))}, {"shape", v.shape}, {"data", std::move(data)}};
  }
  return j;
}

TensorMap read_values_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw LeirError(path, {}, "cannot open the values file");
  std::stringstream ss;
  ss << in.rdbuf();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(ss.str());
  } catch (const nlohmann::json::parse_error& e) {
    throw LeirError(path, {}, fmt::format("invalid JSON: {}", e.what()));
  }
  return values_from_json(j, path);
}

const TensorValue* find_value(const TensorMap& values, const std::string& name, const std::string& alias) {
  if (auto it = values.find(name); it != values.end()) return &it->second;
  if (alias.empty()) return nullptr;
  auto it = values.find(alias);
  return it == values.end() ? nullptr : &it->second;
}

TensorMap key_by_name(const Program& p, TensorMap values, const std::string& file) {
  TensorMap out;
  for (auto& [key, v] : values) {
    const TensorDecl* by_alias = nullptr;
    for (const auto& d : p.known)
      if (d.alias == key && d.name != key) by_alias = &d;
    if (!by_alias) {
      out[key] = std::move(v);
      continue;
    }
    if (p.find_known(key))
      throw LeirError(file, {}, fmt::format("'{}' is ambiguous: the name of one tensor and the alias of {}", key,
                                            by_alias->name));
    if (values.count(by_alias->name))
      throw LeirError(file, {}, fmt::format("tensor {} is given twice: by its name and by its alias '{}'",
                                            by_alias->name, key));
    out[by_alias->name] = std::move(v);
  }
  return out;
}

}  // namespace steptp::leir
