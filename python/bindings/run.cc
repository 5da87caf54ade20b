// run(): a program in the reference interpreter or compiled for the CPU, on float64 NumPy arrays
// (steptp/arrays.py converts from and to each tensor's own dtype).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstring>
#include <map>
#include <optional>

#include "apps/api/api.h"
#include "base/error.h"
#include "bindings.h"

namespace steptp::python {

namespace {

using F64In = nb::ndarray<const double, nb::c_contig, nb::device::cpu>;
using F64Out = nb::ndarray<nb::numpy, double>;

leir::TensorMap to_values(const leir::Program& p, const std::map<std::string, F64In>& arrays) {
  leir::TensorMap values;
  for (const auto& [name, a] : arrays) {
    const auto* d = p.find_known(name);
    if (!d)
      throw base::Error(base::ErrorKind::BadRequest, fmt::format("'{}' is not a tensor of program '{}'", name, p.name));
    std::vector<int64_t> shape(a.shape_ptr(), a.shape_ptr() + a.ndim());
    if (shape != d->shape)
      throw base::Error(base::ErrorKind::BadRequest, fmt::format("'{}' has shape [{}], the program declares [{}]", name,
                                                                 fmt::join(shape, ","), fmt::join(d->shape, ",")));
    leir::TensorValue v{d->dtype, d->shape, std::vector<double>(a.data(), a.data() + a.size())};
    values.emplace(name, std::move(v));
  }
  return values;
}

nb::dict to_arrays(leir::TensorMap outputs) {
  nb::dict out;
  for (auto& [name, v] : outputs) {
    auto* data = new std::vector<double>(std::move(v.data));
    nb::capsule owner(data, [](void* q) noexcept { delete static_cast<std::vector<double>*>(q); });
    std::vector<size_t> shape(v.shape.begin(), v.shape.end());
    out[name.c_str()] = F64Out(data->data(), shape.size(), shape.data(), owner);
  }
  return out;
}

}  // namespace

void bind_run(nb::module_& m) {
  m.def(
      "run",
      [](const leir::Program& program, std::optional<std::map<std::string, F64In>> inputs, uint64_t seed,
         const std::string& target) {
        api::RunRequest r;
        r.target = api::run_target(target);
        leir::TensorMap outputs;
        {
          nb::gil_scoped_release unlocked;
          r.program = valid(program);
          if (inputs) r.inputs = to_values(r.program, *inputs);
          r.seed = seed;
          outputs = api::run(r);
        }
        return to_arrays(std::move(outputs));
      },
      nb::arg("program"), nb::arg("inputs").none(), nb::arg("seed") = 0, nb::arg("target") = "interp",
      "Every output as a float64 array, keyed by name; `inputs` (name -> C-contiguous float64 array of "
      "the declared shape) or, when None, inputs generated from `seed`.");
}

}  // namespace steptp::python
