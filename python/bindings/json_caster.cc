#include "json_caster.h"

#include <nanobind/stl/string.h>

#include <string>

namespace steptp::python {

namespace nb = nanobind;

nb::object to_python(const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null: return nb::none();
    case nlohmann::json::value_t::boolean: return nb::bool_(j.get<bool>());
    case nlohmann::json::value_t::number_integer: return nb::int_(j.get<int64_t>());
    case nlohmann::json::value_t::number_unsigned: return nb::steal(PyLong_FromUnsignedLongLong(j.get<uint64_t>()));
    case nlohmann::json::value_t::number_float: return nb::float_(j.get<double>());
    case nlohmann::json::value_t::string: return nb::str(j.get_ref<const std::string&>().c_str(), j.get_ref<const std::string&>().size());
    case nlohmann::json::value_t::array: {
      nb::list l;
      for (const auto& v : j) l.append(to_python(v));
      return l;
    }
    case nlohmann::json::value_t::object: {
      nb::dict d;
      for (const auto& [k, v] : j.items()) d[nb::str(k.c_str(), k.size())] = to_python(v);
      return d;
    }
    default: return nb::none();  // binary and discarded values never occur in steptp's JSON
  }
}

nlohmann::json from_python(nb::handle h) {
  if (h.is_none()) return nullptr;
  if (nb::isinstance<nb::bool_>(h)) return nb::cast<bool>(h);
  if (nb::isinstance<nb::int_>(h)) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(h.ptr(), &overflow);
    if (overflow > 0) return nb::cast<uint64_t>(h);
    if (overflow < 0) throw nb::type_error("integer below -2**63 has no JSON form here");
    return int64_t(v);
  }
  if (nb::isinstance<nb::float_>(h)) return nb::cast<double>(h);
  if (nb::isinstance<nb::str>(h)) return nb::cast<std::string>(h);
  if (nb::isinstance<nb::dict>(h)) {
    nlohmann::json o = nlohmann::json::object();
    for (auto [k, v] : nb::borrow<nb::dict>(h)) {
      if (!nb::isinstance<nb::str>(k)) throw nb::type_error("JSON object keys must be str");
      o[nb::cast<std::string>(k)] = from_python(v);
    }
    return o;
  }
  if (nb::isinstance<nb::list>(h) || nb::isinstance<nb::tuple>(h)) {
    nlohmann::json a = nlohmann::json::array();
    for (nb::handle v : h) a.push_back(from_python(v));
    return a;
  }
  throw nb::type_error(("a " + std::string(nb::type_name(h.type()).c_str()) + " has no JSON form").c_str());
}

}  // namespace steptp::python
