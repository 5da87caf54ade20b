// libFuzzer target for the LEIR front end: parse_body, parse_expr, the .leir text form and the
// JSON program form, with the printer fixed-point property checked on everything that parses.
//
// Build and run (clang with libFuzzer; from the repository root):
//   CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DSTEPTP_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo
//   ninja -C build-fuzz parser_fuzz
//   mkdir -p build-fuzz/corpus && build-fuzz/fuzz/parser_fuzz build-fuzz/corpus fuzz/seeds \
//       -dict=fuzz/leir.dict -max_len=4096 -max_total_time=600 -timeout=10
// Instrumented with -fsanitize=fuzzer,address,undefined. A crash means: a sanitizer report, an
// exception other than LeirError escaping the front end, or a printer that is not a fixed point
// (print(parse(print(parse(x)))) != print(parse(x))).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "ir/leir/diagnostic.h"
#include "ir/leir/parser.h"
#include "ir/leir/printer.h"
#include "ir/leir/program_io.h"
#include "ir/leir/validate.h"

using namespace steptp::leir;

namespace {

[[noreturn]] void die(const char* what, const std::string& a, const std::string& b) {
  std::fprintf(stderr, "parser_fuzz: %s\n--- first ---\n%s\n--- second ---\n%s\n", what, a.c_str(), b.c_str());
  std::abort();
}

// print is canonical: printing the parse of a printed body reproduces it byte for byte, and the
// pretty form parses back to the same canonical text.
void check_fixed_point(const std::vector<Item>& body) {
  const std::string once = print_body(body);
  std::vector<Item> again;
  try {
    again = parse_body(once);
  } catch (const LeirError& e) {
    die("printed body does not parse", once, e.what());
  }
  const std::string twice = print_body(again);
  if (twice != once) die("print(parse(print(x))) != print(x)", once, twice);
  const std::string pretty = print_body_pretty(body);
  try {
    const std::string from_pretty = print_body(parse_body(pretty));
    if (from_pretty != once) die("pretty form does not print back to the canonical form", once, from_pretty);
  } catch (const LeirError& e) {
    die("pretty-printed body does not parse", pretty, e.what());
  }
}

void check_program(const Program& p) {
  check_fixed_point(p.body);
  // The validator must answer with a report (never crash or throw) on anything that parses.
  (void)validate_all(p);
  // Every accepted program has a text form that reads back with the same name, names, aliases
  // (JSON string literals there) and body.
  const std::string text = program_to_text(p);
  try {
    Program back = program_from_text(text, "roundtrip.leir");
    if (print_body(back.body) != print_body(p.body)) die("program text form does not round-trip", text, print_body(back.body));
    if (!p.name.empty() && back.name != p.name) die("program name does not round-trip", p.name, back.name);
    if (back.known.size() != p.known.size()) die("the signature does not round-trip", text, program_to_text(back));
    for (size_t i = 0; i < p.known.size(); ++i)
      if (back.known[i].name != p.known[i].name || back.known[i].alias != p.known[i].alias)
        die("a known tensor's name or alias does not round-trip", signature_line(p.known[i]),
            signature_line(back.known[i]));
  } catch (const LeirError& e) {
    die("program_to_text output does not read back", text, e.what());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  try {
    check_fixed_point(parse_body(input, "fuzz"));
  } catch (const LeirError&) {
  }
  try {
    const std::string once = print_expr(parse_expr(input, "fuzz"));
    const std::string twice = print_expr(parse_expr(once, "fuzz"));
    if (once != twice) die("print_expr is not a fixed point", once, twice);
  } catch (const LeirError&) {
  }
  try {
    check_program(program_from_text(input, "fuzz.leir"));
  } catch (const LeirError&) {
  }
  // JSON form: anything nlohmann accepts must yield a program or a LeirError, nothing else.
  auto j = nlohmann::json::parse(input, nullptr, /*allow_exceptions=*/false);
  if (!j.is_discarded()) {
    try {
      check_program(program_from_json(j, "fuzz.json", 1, input));
    } catch (const LeirError&) {
    }
  }
  return 0;
}
