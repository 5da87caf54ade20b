// The built-in workload suite (issue: workloads). A workload is a named builder of LEIR programs
// in the public translator's style, with named hyper-parameters, constraints and three size
// classes, plus the PyTorch code that computes the same thing (the oracle for tests).
#pragma once

#include <cstdint>
#include <functional>
#include <array>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "interp/inputs.h"
#include "leir/ast.h"

namespace steptp::workloads {

enum class SizeClass : uint8_t { Tiny, Small, Default };
std::string_view to_string(SizeClass s);
std::optional<SizeClass> parse_size_class(std::string_view s);

struct HyperParam {
  std::string name;
  int64_t lo = 1, hi = 1;  // full allowed range
  // Range used when sampling per size class: {tiny, small, default}.
  std::array<std::pair<int64_t, int64_t>, 3> by_size;
};

using HyperValues = std::map<std::string, int64_t>;

struct Workload {
  std::string name;
  int level = 1;
  std::string family;  // "matmul", "activation", "norm", "pool", "reduce", "conv", "scan", "loss", ...
  std::vector<HyperParam> params;
  // Draws constraint-respecting values for a size class (all randomness from `rng`).
  std::function<HyperValues(SizeClass, interp::Rng&)> sample;
  // Emits the program (public style: first output dim as B^{N}_{tx=0}, names A,C,D,..).
  std::function<leir::Program(const HyperValues&)> build;
  // Python source of `def reference(**tensors)` returning {output_name: tensor} with PyTorch,
  // given the program's inputs/params/constants as float64 torch tensors (ints as int64).
  std::string torch_reference;
};

const std::vector<Workload>& all_workloads();
const Workload* find_workload(std::string_view name);

// Convenience: sample + build with a seed. Same (name, seed, size) ⇒ byte-identical program.
leir::Program emit(const Workload& w, uint64_t seed, SizeClass size);

}  // namespace steptp::workloads
