// The built-in workload suite (issue: workloads). A workload is a named builder of LEIR programs
// in the public translator's style, with named hyper-parameters, constraints and three size
// classes, plus the PyTorch code that computes the same thing (the oracle for tests).
//
// Workloads register themselves: a level file defines its workloads and a file-scope
// `RegisterWorkload` (see level1_matmul.cc); the library is linked whole-archive so those
// initializers are never dropped. all_workloads() is sorted by (level, name), so the suite's
// order never depends on static-initialization order.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/interp/inputs.h"
#include "ir/leir/ast.h"

namespace steptp::workloads {

// Tiny/Small/Default draw each hyper-parameter from its per-class range (HyperParam::by_size).
// Bench (measurement-realistic shapes, see bench_size.h) draws from the wider range
// [default lo, hi] until the naive program's estimated work falls in the bench window.
enum class SizeClass : uint8_t { Tiny, Small, Default, Bench };
std::string_view to_string(SizeClass s);
std::optional<SizeClass> parse_size_class(std::string_view s);

struct HyperParam {
  std::string name;
  int64_t lo = 1, hi = 1;  // full allowed range
  // Range used when sampling per size class: {tiny, small, default}, each inside [lo, hi].
  std::array<std::pair<int64_t, int64_t>, 3> by_size;
};

using HyperValues = std::map<std::string, int64_t>;

// A relation the hyper-parameters must satisfy (divisibility, window fits the input, ...).
struct Constraint {
  std::string text;  // human-readable, shown by `workloads list` ("k <= h + 2*pad")
  std::function<bool(const HyperValues&)> holds;
};

struct Workload {
  std::string name;
  int level = 1;
  std::string family;  // "matmul", "activation", "norm", "pool", "reduce", "conv", "scan", "loss", ...
  std::vector<HyperParam> params;
  std::vector<Constraint> constraints;
  // Optional custom sampler for a size class (all randomness from `rng`). When empty, each
  // parameter is drawn uniformly from its size-class range and the draw is rejected until every
  // constraint holds.
  std::function<HyperValues(SizeClass, interp::Rng&)> sample;
  // Emits the program (public style: first output dim as B^{N}_{tx=0}, names A,C,D,..).
  std::function<leir::Program(const HyperValues&)> build;
  // Python source defining `def reference(t, hp)`: `t` maps every input/param/constant name to a
  // torch tensor (float64; int64 for integer tensors; bool for bool tensors), `hp` maps the
  // hyper-parameter names to ints; returns {output_name: tensor}. Written with real PyTorch ops
  // (torch, F = torch.nn.functional are in scope), independently of the LEIR loops.
  std::string torch_reference;
};

// Registration from a level file: `RegisterWorkload reg{make_my_workload()};` at file scope.
struct RegisterWorkload {
  explicit RegisterWorkload(Workload w);
};

const std::vector<Workload>& all_workloads();
const Workload* find_workload(std::string_view name);

// Hyper-parameter values for a size class: `fixed` values are kept, the others drawn from `seed`
// until every range and constraint holds. Throws base::Error (BadRequest) naming the parameter or
// constraint when `fixed` is out of range or the constraints cannot be met.
// `bench_doublings` (bench class only) moves the work window up by that many factors of two.
HyperValues sample_hyper(const Workload& w, uint64_t seed, SizeClass size,
                         const HyperValues& fixed = {}, int bench_doublings = 0);
// Checks ranges and constraints; returns an empty string when valid, else what is violated.
std::string check_hyper(const Workload& w, const HyperValues& hv);

// Builds with explicit values (validated; throws base::Error, BadRequest). Program name = w.name.
leir::Program emit(const Workload& w, const HyperValues& hv);
// Convenience: sample + build with a seed. Same (name, seed, size) ⇒ byte-identical program.
leir::Program emit(const Workload& w, uint64_t seed, SizeClass size, int bench_doublings = 0);

// Float64 → float32 variant of a program (every f64 declaration and annotation becomes f32).
leir::Program to_f32(const leir::Program& p);

}  // namespace steptp::workloads
