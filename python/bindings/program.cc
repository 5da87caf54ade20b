// steptp.Program: a LEIR program (leir::Program) read from text, JSON or a file, printed in the
// canonical forms.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "base/hash.h"
#include "bindings.h"
#include "front/onnx/onnx_import.h"
#include "json_caster.h"
#include "ir/leir/canonical.h"
#include "ir/leir/identifiers.h"
#include "ir/leir/printer.h"
#include "ir/leir/program_io.h"

namespace steptp::python {

namespace {

template <class F>
auto parsing(F&& f) {
  try {
    return f();
  } catch (const leir::LeirError& e) {
    throw ParseFailure{e};
  }
}

nlohmann::json signature(const leir::Program& p) {
  auto sig = nlohmann::json::array();
  for (const auto& d : p.known)
    sig.push_back({{"name", d.name}, {"role", std::string(leir::to_string(d.role))},
                   {"dtype", std::string(leir::to_string(d.dtype))}, {"shape", d.shape}, {"alias", d.alias}});
  return sig;
}

}  // namespace

void bind_program(nb::module_& m) {
  nb::class_<leir::Program>(m, "Program", "A LEIR program: signature (`known`) and body.")
      .def_static(
          "parse",
          [](const std::string& text, const std::string& name) {
            const std::string label = name.empty() ? "<string>" : name;
            leir::Program p = parsing([&] { return leir::program_from_text(text, label); });
            if (name.empty() && p.name == leir::program_name_from_path(label)) p.name.clear();
            return p;
          },
          nb::arg("text"), nb::arg("name") = "", nb::call_guard<nb::gil_scoped_release>(),
          "Parse the LEIR text form (signature lines + body, README 'Usage'). `name` labels errors and "
          "names the program when the text has no `name` line. Raises steptp.ParseError (line, col).")
      .def_static(
          "from_json", [](const nlohmann::json& j) { return parsing([&] { return leir::program_from_json(j, "<json>"); }); },
          nb::arg("obj"), nb::call_guard<nb::gil_scoped_release>(), "The JSON form of LEIR.md §1 ({'name', 'known', 'leir'}) as a dict.")
      .def_static(
          "load", [](const std::string& path) { return parsing([&] { return onnx_import::read_programs_any(path); }); },
          nb::arg("path"), nb::call_guard<nb::gil_scoped_release>(),
          "Every program of a .json, .jsonl, .leir or .onnx file (as the CLI reads them).")
      .def_prop_rw(
          "name", [](const leir::Program& p) { return p.name; },
          [](leir::Program& p, const std::string& n) {
            parsing([&] { leir::require_program_name(n, "program name", "<python>", {}); });
            p.name = n;
          },
          "The program's name: empty, or [A-Za-z0-9_.-] not starting with '.' or '-', at most 128 characters "
          "(raises steptp.ParseError otherwise).")
      .def("print", [](const leir::Program& p, bool pretty) { return pretty ? leir::print_body_pretty(p.body) : leir::print_body(p.body); },
           nb::arg("pretty") = false, "The canonical body (`steptp print`): compact, or one nest per line.")
      .def("text", [](const leir::Program& p) { return leir::program_to_text(p); },
           "The whole program in the text form (signature + body), as Program.parse reads it.")
      .def("to_json", [](const leir::Program& p) { return leir::program_to_json(p); },
           "The JSON form of LEIR.md §1 as a dict.")
      .def_prop_ro("signature", &signature,
                   "The known tensors: [{'name', 'role', 'dtype', 'shape', 'alias'}] in declaration order.")
      .def_prop_ro("hash", [](const leir::Program& p) { return base::hex64(leir::program_hash(p)); },
                   "Canonical hash (hex) of the program, as `steptp serve` reports it.")
      .def(
          "__eq__", [](const leir::Program& a, const leir::Program& b) { return leir::program_hash(a) == leir::program_hash(b); },
          nb::is_operator())
      .def("__hash__", [](const leir::Program& p) { return int64_t(leir::program_hash(p) >> 1); })
      .def("__str__", [](const leir::Program& p) { return leir::program_to_text(p); })
      .def("__repr__", [](const leir::Program& p) { return "<steptp.Program '" + p.name + "'>"; })
      .def("__getstate__", [](const leir::Program& p) { return leir::program_to_json(p).dump(); })
      .def("__setstate__", [](leir::Program& p, const std::string& s) {
        new (&p) leir::Program(leir::program_from_json(nlohmann::json::parse(s)));
      });
}

}  // namespace steptp::python
