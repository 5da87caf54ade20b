// nlohmann::json <-> Python (dict, list, str, int, float, bool, None), so bound functions take and
// return JSON values as plain Python objects. Converting needs the GIL: functions that release it
// convert their arguments before and their result after the released section.
#pragma once

#include <nanobind/nanobind.h>

#include <nlohmann/json.hpp>

namespace steptp::python {

nanobind::object to_python(const nlohmann::json& j);
// Throws nanobind::type_error naming the Python type that has no JSON form.
nlohmann::json from_python(nanobind::handle h);

}  // namespace steptp::python

namespace nanobind::detail {

template <>
struct type_caster<nlohmann::json> {
  NB_TYPE_CASTER(nlohmann::json, const_name("typing.Any"))

  bool from_python(handle src, uint8_t, cleanup_list*) noexcept {
    try {
      value = steptp::python::from_python(src);
      return true;
    } catch (...) {
      PyErr_Clear();
      return false;
    }
  }
  static handle from_cpp(const nlohmann::json& j, rv_policy, cleanup_list*) noexcept {
    try {
      return steptp::python::to_python(j).release();
    } catch (...) {
      return handle();
    }
  }
};

}  // namespace nanobind::detail
