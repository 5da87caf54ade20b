// libFuzzer target for the JSON program form -> every code generator (CPU C++, CUDA C, TVMScript):
// no input text reaches generated source except as a checked identifier (issue #33).
//
// The input plants text into one string field of a valid program: byte 0 picks the program, byte 1
// the field (program name, a known tensor's name, its alias, role or dtype, a loop variable), byte 2
// whether the text replaces the field or is put before or after it; the rest is the text, always
// preceded by a marker ("Qz7", "qz7" for loop variables) that no generator writes of its own.
// The JSON is read with program_from_json and, when accepted, lowered by every generator.
// A crash means: an exception other than LeirError; an accepted program whose planted field (for a
// loop variable: every loop of the parsed body) is not valid for its kind (ir/leir/identifiers.h); the marker in generated source from a field that is
// never emitted (alias, role, dtype), or from a name that is not a valid identifier; or a program
// whose text form (program_to_text) does not read back to the same names and aliases.
//
// Build and run (clang with libFuzzer; from the repository root):
//   CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DSTEPTP_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo
//   ninja -C build-fuzz emitter_fuzz
//   mkdir -p build-fuzz/emitter-corpus && build-fuzz/fuzz/emitter_fuzz build-fuzz/emitter-corpus \
//       -max_len=256 -max_total_time=600 -timeout=10
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "lower/cpu/codegen.h"
#include "lower/cuda/cuda_codegen.h"
#include "lower/tir/tvmscript.h"
#include "ir/leir/diagnostic.h"
#include "ir/leir/identifiers.h"
#include "ir/leir/program_io.h"

using namespace steptp;

namespace {

// Small programs every generator lowers, with a param alias, B loops, reductions and intermediates.
const char* const kPrograms[] = {
    R"({"name":"matmul","known":[{"name":"A","role":"input","dtype":"f64","shape":[4,3]},
        {"name":"W","role":"param","dtype":"f64","shape":[3,2],"alias":"gemm.weight"},
        {"name":"D","role":"output","dtype":"f64","shape":[4,2]}],
        "leir":"B^{4}_{tx=0}L^{2}_{a=0}L^{3}_{c=0}[D^{f64,g}_{tx,a}=D^{f64,g}_{tx,a}+A^{f64,g}_{tx,c}*W^{f64,g}_{c,a};];"})",
    R"({"name":"softmax","known":[{"name":"A","role":"input","dtype":"f32","shape":[2,8]},
        {"name":"F","role":"constant","dtype":"f32","shape":[],"value":[2.0],"alias":"scale"},
        {"name":"C","role":"output","dtype":"f32","shape":[2,8]}],
        "leir":"L^{2}_{a=0}[L^{8}_{c=0}[M^{f32,l}_{a}=max(M^{f32,l}_{a},A^{f32,g}_{a,c});];L^{8}_{c=0}[S^{f32,l}_{a}=S^{f32,l}_{a}+exp(A^{f32,g}_{a,c}-M^{f32,l}_{a});];L^{8}_{c=0}[C^{f32,g}_{a,c}=F^{f32,g}*exp(A^{f32,g}_{a,c}-M^{f32,l}_{a})/S^{f32,l}_{a};];];"})",
    R"({"name":"gather-1.v2","known":[{"name":"A","role":"input","dtype":"f64","shape":[5]},
        {"name":"I","role":"input","dtype":"i64","shape":[3],"alias":"/idx:0"},
        {"name":"O","role":"output","dtype":"f64","shape":[3]}],
        "leir":"B^{3}_{tx=0}[O^{f64,g}_{tx}=A^{f64,g}_{I^{i64,g}_{tx}};];"})",
};

enum class Field { Name, TensorName, Alias, Role, Dtype, LoopVar, kCount };

[[noreturn]] void die(const char* what, const std::string& detail) {
  std::fprintf(stderr, "emitter_fuzz: %s\n%s\n", what, detail.c_str());
  std::abort();
}

// `text` replacing `old` as a whole identifier token of a LEIR body (names are [A-Za-z0-9] runs).
std::string replace_token(const std::string& body, const std::string& old, const std::string& text) {
  auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  std::string out;
  size_t i = 0;
  while (i < body.size()) {
    if (!ident(body[i])) {
      out += body[i++];
      continue;
    }
    size_t j = i;
    while (j < body.size() && ident(body[j])) ++j;
    std::string tok = body.substr(i, j - i);
    out += tok == old ? text : tok;
    i = j;
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  const size_t n_programs = sizeof kPrograms / sizeof kPrograms[0];
  nlohmann::json j = nlohmann::json::parse(kPrograms[data[0] % n_programs]);
  const auto field = static_cast<Field>(data[1] % static_cast<int>(Field::kCount));
  const int mode = data[2] % 3;  // 0 replace, 1 before, 2 after
  const std::string marker = field == Field::LoopVar ? "qz7" : "Qz7";
  const std::string payload = marker + std::string(reinterpret_cast<const char*>(data) + 3, size - 3);
  auto plant = [&](const std::string& old) { return mode == 0 ? payload : mode == 1 ? payload + old : old + payload; };

  // The planted field's new value and which known tensor holds it.
  std::string value;
  const size_t k = data[0] / n_programs % j["known"].size();
  auto& decl = j["known"][k];
  std::string leir = j["leir"];
  switch (field) {
    case Field::Name:
      j["name"] = value = plant(j["name"]);
      break;
    case Field::TensorName: {
      const std::string old = decl["name"];
      decl["name"] = value = plant(old);
      j["leir"] = replace_token(leir, old, value);
      break;
    }
    case Field::Alias:
      decl["alias"] = value = plant(decl.value("alias", ""));
      break;
    case Field::Role:
      decl["role"] = value = plant(decl["role"]);
      break;
    case Field::Dtype:
      decl["dtype"] = value = plant(decl["dtype"]);
      break;
    case Field::LoopVar: {
      const std::string old = leir.find("tx=0") != std::string::npos ? "tx" : "a";
      value = plant(old);
      j["leir"] = replace_token(leir, old, value);
      break;
    }
    case Field::kCount:
      return 0;
  }

  // As a client sends it (bytes that are not UTF-8 become U+FFFD, as any JSON encoder must).
  const std::string raw = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  leir::Program p;
  try {
    p = leir::program_from_json(nlohmann::json::parse(raw), "fuzz.json", 1, raw);
  } catch (const leir::LeirError&) {
    return 0;
  }
  const std::string planted = field == Field::Name ? p.name : field == Field::Alias ? p.known[k].alias : value;
  switch (field) {
    case Field::Name:
      if (!leir::is_program_name(planted)) die("accepted an invalid program name", planted);
      break;
    case Field::TensorName:
      if (!leir::is_tensor_name(p.known[k].name)) die("accepted an invalid tensor name", p.known[k].name);
      break;
    case Field::LoopVar: {
      // Planted into the body, where blanks separate tokens: what the parser made of it counts.
      auto walk = [&](const std::vector<leir::Item>& items, auto&& self) -> void {
        for (const auto& it : items) {
          if (!it.is_nest()) continue;
          for (const auto& l : it.nest.loops)
            if (!leir::is_loop_var(l.var)) die("accepted an invalid loop variable", l.var);
          self(it.nest.body, self);
        }
      };
      walk(p.body, walk);
      break;
    }
    case Field::Alias:
      if (leir::alias_problem(planted)) die("accepted an invalid alias", planted);
      break;
    default:
      break;  // role and dtype are parsed into enums: the marker must not survive
  }
  const bool emitted_field = field == Field::Name || field == Field::TensorName || field == Field::LoopVar;

  auto check = [&](const char* target, const std::function<std::string()>& emit) {
    std::string src;
    try {
      src = emit();
    } catch (const leir::LeirError&) {
      return;  // a construct this target does not lower
    }
    if (!emitted_field && src.find(marker) != std::string::npos)
      die(target, "source contains text from a field no generator prints:\n" + src);
  };
  check("cpu", [&] { return backend::cpu::generate_cpu_kernel(p).code; });
  check("cpu f64", [&] { return backend::cpu::generate_cpu_kernel(p, {.all_f64 = true}).code; });
  check("cuda", [&] { return backend::cuda::generate_cuda(p).code; });
  check("tir", [&] { return backend::tir::emit_tvmscript(p); });

  // The text form carries every accepted name and alias.
  const std::string text = leir::program_to_text(p);
  leir::Program back;
  try {
    back = leir::program_from_text(text, "roundtrip.leir");
  } catch (const leir::LeirError& e) {
    die("program_to_text output does not read back", text + "\n" + e.what());
  }
  if (back.name != p.name) die("the text form changes the program name", text);
  for (size_t i = 0; i < p.known.size(); ++i)
    if (back.known[i].name != p.known[i].name || back.known[i].alias != p.known[i].alias)
      die("the text form changes a known tensor's name or alias", text);
  return 0;
}
