// steptp workloads list|emit: the built-in workload suite (issue 3).
//   list [--json]                      name, level, family, hyper-parameters with ranges
//   emit NAME [--seed S] [--size tiny|small|default|bench] [--format json|leir] [--set k=v]... [--f32]
//        [--with-reference]   one JSON object {"workload","hyper","torch_reference","program",
//                             "inputs"}: what a PyTorch baseline needs (bench/baselines/torch_eager.py);
//                             "inputs" holds the seeded integer/bool inputs only (index ranges
//                             the program allows), floats are left to the caller
//   sample --count N --seed S [--size ...] --out FILE.jsonl   random composites (composite.h)
// Unknown names, bad sizes, out-of-range or constraint-violating values: an error, exit 1.
#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "base/error.h"
#include "driver/cli/command.h"
#include "ir/interp/inputs.h"
#include "ir/leir/program_io.h"
#include "ir/leir/values.h"
#include "front/workloads/composite.h"
#include "front/workloads/workload.h"

namespace steptp::cli {
namespace {

using workloads::SizeClass;

SizeClass size_or_throw(const std::string& s) {
  auto size = workloads::parse_size_class(s);
  if (!size)
    throw base::Error(base::ErrorKind::BadRequest,
                      "unknown size class '" + s + "' (expected tiny, small, default or bench)");
  return *size;
}

const workloads::Workload& workload_or_throw(const std::string& name) {
  const auto* w = workloads::find_workload(name);
  if (!w)
    throw base::Error(base::ErrorKind::BadRequest, "unknown workload '" + name + "' (see `steptp workloads list`)");
  return *w;
}

nlohmann::json workload_json(const workloads::Workload& w) {
  nlohmann::json j = {{"name", w.name}, {"level", w.level}, {"family", w.family}};
  j["params"] = nlohmann::json::array();
  for (const auto& p : w.params) {
    nlohmann::json pj = {{"name", p.name}, {"lo", p.lo}, {"hi", p.hi}};
    for (SizeClass s : {SizeClass::Tiny, SizeClass::Small, SizeClass::Default}) {
      auto [lo, hi] = p.by_size[static_cast<size_t>(s)];
      pj[std::string(workloads::to_string(s))] = {lo, hi};
    }
    j["params"].push_back(pj);
  }
  j["constraints"] = nlohmann::json::array();
  for (const auto& c : w.constraints) j["constraints"].push_back(c.text);
  return j;
}

std::string params_text(const workloads::Workload& w) {
  std::string out;
  for (const auto& p : w.params) {
    if (!out.empty()) out += ' ';
    const auto& s = p.by_size;
    out += fmt::format("{}∈[{},{}](tiny {}-{}, small {}-{}, default {}-{})", p.name, p.lo, p.hi,
                       s[0].first, s[0].second, s[1].first, s[1].second, s[2].first, s[2].second);
  }
  for (const auto& c : w.constraints) out += "; " + c.text;
  return out;
}

workloads::HyperValues parse_sets(const std::vector<std::string>& sets) {
  workloads::HyperValues hv;
  for (const auto& s : sets) {
    auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0)
      throw base::Error(base::ErrorKind::BadRequest, "--set expects NAME=INTEGER, got '" + s + "'");
    try {
      size_t used = 0;
      int64_t v = std::stoll(s.substr(eq + 1), &used);
      if (used != s.size() - eq - 1) throw base::Error(base::ErrorKind::BadRequest, "trailing text");
      hv[s.substr(0, eq)] = v;
    } catch (const std::exception&) {
      throw base::Error(base::ErrorKind::BadRequest, "--set expects NAME=INTEGER, got '" + s + "'");
    }
  }
  return hv;
}

// Everything a PyTorch baseline needs to run the workload's reference at these values. Float
// inputs are left out (the caller draws them at the shapes in "program"); integer and bool inputs
// are included because their valid range depends on how the program indexes with them.
nlohmann::json reference_json(const workloads::Workload& w, const workloads::HyperValues& hv, const leir::Program& p,
                              uint64_t seed) {
  leir::TensorMap discrete;
  for (auto& [name, v] : interp::generate_inputs(p, seed))
    if (!leir::is_floating(v.dtype)) discrete.emplace(name, std::move(v));
  return {{"workload", w.name},
          {"hyper", hv},
          {"torch_reference", w.torch_reference},
          {"program", leir::program_to_json(p)},
          {"inputs", leir::values_to_json(discrete)}};
}

RegisterCommand workloads_cmd{{"workloads", "the built-in workload suite: list, emit, sample", [](CLI::App& sub) {
  sub.require_subcommand(1);
  auto* list = sub.add_subcommand("list", "every workload: name, level, family, hyper-parameters");
  auto json = std::make_shared<bool>(false);
  list->add_flag("--json", *json, "one JSON array");

  auto* emit = sub.add_subcommand("emit", "one program of a workload on stdout");
  auto name = std::make_shared<std::string>();
  auto seed = std::make_shared<uint64_t>(0);
  auto size = std::make_shared<std::string>("default");
  auto format = std::make_shared<std::string>("json");
  auto sets = std::make_shared<std::vector<std::string>>();
  auto f32 = std::make_shared<bool>(false);
  emit->add_option("NAME", *name, "workload name (see `workloads list`)")->required();
  emit->add_option("--seed", *seed, "seed of the hyper-parameter draw (default 0)");
  emit->add_option("--size", *size, "size class: tiny, small, default or bench (measurement shapes: naive program ~1-50 ms on one core; default: default)");
  emit->add_option("--format", *format, "json (LEIR.md §1 object, default) or leir (text form)");
  emit->add_option("--set", *sets, "fix a hyper-parameter: NAME=INTEGER (repeatable)");
  emit->add_flag("--f32", *f32, "float32 variant (every f64 tensor becomes f32)");
  auto with_reference = std::make_shared<bool>(false);
  emit->add_flag("--with-reference", *with_reference,
                 "JSON object with the hyper-parameters, the PyTorch reference source, the program and its "
                 "seeded integer/bool inputs");

  auto* sample = sub.add_subcommand("sample", "random composite programs (2-5 components) as JSONL");
  auto count = std::make_shared<int>(0);
  auto sample_seed = std::make_shared<uint64_t>(0);
  auto sample_size = std::make_shared<std::string>("tiny");
  auto out = std::make_shared<std::string>();
  sample->add_option("--count", *count, "number of programs")->required()->check(CLI::NonNegativeNumber);
  sample->add_option("--seed", *sample_seed, "seed (same seed: byte-identical file)")->required();
  sample->add_option("--size", *sample_size, "size class: tiny (default), small or default");
  sample->add_option("--out", *out, "output JSONL file")->required();

  return [=]() -> int {
    if (sample->parsed()) {
      SizeClass s = size_or_throw(*sample_size);
      auto records = workloads::sample_composite_records(*count, *sample_seed, s);
      std::ofstream f(*out, std::ios::binary);
      if (!f) throw base::Error(base::ErrorKind::Failed, "cannot write '" + *out + "'");
      for (const auto& r : records) f << workloads::composite_to_json(r).dump() << "\n";
      if (!f.flush()) throw base::Error(base::ErrorKind::Failed, "cannot write '" + *out + "'");
      return 0;
    }
    if (list->parsed()) {
      if (*json) {
        nlohmann::json arr = nlohmann::json::array();
        for (const auto& w : workloads::all_workloads()) arr.push_back(workload_json(w));
        std::cout << arr.dump(1) << "\n";
      } else {
        for (const auto& w : workloads::all_workloads())
          std::cout << fmt::format("{:<48} L{} {:<11} {}\n", w.name, w.level, w.family, params_text(w));
      }
      return 0;
    }
    if (emit->parsed()) {
      if (*format != "json" && *format != "leir")
        throw base::Error(base::ErrorKind::BadRequest, "unknown format '" + *format + "' (expected json or leir)");
      const auto& w = workload_or_throw(*name);
      SizeClass s = size_or_throw(*size);
      auto hv = workloads::sample_hyper(w, *seed, s, parse_sets(*sets));
      leir::Program p = workloads::emit(w, hv);
      if (*f32) p = workloads::to_f32(p);
      if (*with_reference) {
        if (*format != "json") throw base::Error(base::ErrorKind::BadRequest, "--with-reference needs --format json");
        std::cout << reference_json(w, hv, p, *seed).dump() << "\n";
        return 0;
      }
      if (*format == "json") std::cout << leir::program_to_json(p).dump() << "\n";
      else std::cout << leir::program_to_text(p, false);
      return 0;
    }
    return 2;
  };
}}};

}  // namespace
}  // namespace steptp::cli
