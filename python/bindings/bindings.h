// The extension module steptp._core (python/steptp wraps it): one bind_* function per concern,
// each in its own file, called by module.cc. Long calls release the GIL; results are plain
// Python objects (JSON values become dicts/lists, tensors NumPy arrays).
#pragma once

#include <nanobind/nanobind.h>

#include <string>

#include "ir/leir/ast.h"
#include "ir/leir/diagnostic.h"

namespace steptp::python {

namespace nb = nanobind;

// C++ failures that map to the package's own exception classes (steptp/errors.py); any other
// leir::LeirError becomes steptp.InvalidProgramError, interp::RuntimeError steptp.RunError, any
// other base::Error the class of its kind (errors.BY_KIND: RequestError, ... FailedError).
struct ParseFailure {
  leir::LeirError error;
};
struct LowerFailure {
  leir::LeirError error;
};

// `p` when it validates; else throws leir::LeirError naming `what` (the argument) as the file.
leir::Program valid(const leir::Program& p, const std::string& what = "program");

void bind_errors(nb::module_& m);
void bind_program(nb::module_& m);
void bind_run(nb::module_& m);
void bind_commands(nb::module_& m);
void bind_measured(nb::module_& m);
void bind_reward(nb::module_& m);

}  // namespace steptp::python
