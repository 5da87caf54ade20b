// steptp._core: the module definition and the mapping of C++ errors to the package's exception
// classes (steptp/errors.py), which carry file, line and col.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include "base/error.h"
#include "bindings.h"
#include "ir/interp/interpreter.h"
#include "apps/reward/reward.h"

namespace steptp::python {

leir::Program valid(const leir::Program& p, const std::string& what) { return reward::require_valid(p, what); }

namespace {

void raise(const char* cls, const leir::LeirError& e) {
  nb::object type = nb::module_::import_("steptp.errors").attr(cls);
  nb::object err = type(e.what(), e.file(), e.loc().line, e.loc().col, e.message());
  PyErr_SetObject(type.ptr(), err.ptr());
}

void raise(const char* cls, const std::exception& e) {
  nb::object type = nb::module_::import_("steptp.errors").attr(cls);
  PyErr_SetString(type.ptr(), e.what());
}

}  // namespace

void bind_errors(nb::module_& m) {
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const ParseFailure& f) {
      raise("ParseError", f.error);
    } catch (const LowerFailure& f) {
      raise("LowerError", f.error);
    } catch (const leir::LeirError& e) {
      raise("InvalidProgramError", e);
    } catch (const interp::RuntimeError& e) {
      raise("RunError", e);
    } catch (const base::Error& e) {
      // A request that does not follow the API is a ValueError, as Python's own argument checks
      // (and the std::invalid_argument these were before); the other kinds stay RuntimeError.
      PyErr_SetString(e.kind() == base::ErrorKind::BadRequest ? PyExc_ValueError : PyExc_RuntimeError, e.what());
    }
  });
}

}  // namespace steptp::python

NB_MODULE(_core, m) {
  m.doc() = "steptp's C++ core (wrapped by the steptp package; see docs/python.md)";
  using namespace steptp::python;
  bind_errors(m);
  bind_program(m);
  bind_run(m);
  bind_commands(m);
  bind_measured(m);
  bind_reward(m);
}
