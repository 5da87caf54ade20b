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

// The class of the error's kind (steptp/errors.py BY_KIND), with the field it is about.
void raise(const base::Error& e) {
  const std::string_view kind = base::info(e.kind()).name;
  nb::object type = nb::module_::import_("steptp.errors").attr("BY_KIND")[nb::str(kind.data(), kind.size())];
  nb::object err = type(e.what(), e.field());
  PyErr_SetObject(type.ptr(), err.ptr());
}

}  // namespace

void bind_errors(nb::module_& m) {
  m.def(
      "error_kinds",
      [] {
        nb::dict kinds;
        for (const auto& k : base::kErrorKinds) {
          nb::dict info;
          info["http_status"] = k.http_status;
          info["exit_code"] = k.exit_code;
          kinds[nb::str(k.name.data(), k.name.size())] = info;
        }
        return kinds;
      },
      "The error kinds of src/base/error.h: {name: {'http_status', 'exit_code'}}.");
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
      raise(e);
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
