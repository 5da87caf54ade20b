// Random composite programs: 2-5 components (GEMM, matmul/BMM with a second input, conv 1-D/2-D/3-D
// and transposed, attention MHA/MQA/GQA, activations, scalar and per-channel ops, norms, pooling,
// reductions, softmax, residual and binary adds) sampled from the level-2 operator vocabulary
// (level2_chain.h) and wired through shape-compatible edges into one program with one signature,
// in the public translator's style. Each composite comes with its PyTorch reference (the
// components' references composed).
//
// Determinism: composite i depends only on (seed, i, size): the same seed gives byte-identical
// programs, and a longer sample extends a shorter one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "ir/leir/ast.h"
#include "front/workloads/workload.h"

namespace steptp::workloads {

struct Composite {
  leir::Program program;
  std::string torch_reference;          // `def reference(t, hp)`, hp unused (values are literals)
  std::vector<std::string> components;  // e.g. {"Conv2d", "GroupNorm", "Tanh", "ResidualAdd"}
};

std::vector<Composite> sample_composite_records(int count, uint64_t seed, SizeClass size);
std::vector<leir::Program> sample_composites(int count, uint64_t seed, SizeClass size);

// One JSONL record: the program's JSON (LEIR.md §1) plus "components" and "torch_reference".
nlohmann::json composite_to_json(const Composite& c);

}  // namespace steptp::workloads
