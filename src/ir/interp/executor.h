// Runs a compiled program over tensor storage (internal to src/ir/interp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/interp/bytecode.h"

namespace steptp::interp {

// Storage of one tensor slot: values and, for tensors that start unset, the per-element set flags.
struct TensorStore {
  std::vector<double> data;
  std::vector<uint8_t> set;  // empty for read-only tensors (always set)
};

// Executes every item of `cp` in program order over `tensors` (one per slot, sized by the caller,
// read-only ones filled). Throws RuntimeError on an out-of-range subscript, a read of an unset
// element, an unstorable value and, when `detect_races`, a cross-iteration conflict on a P/V/B
// loop. Returns the number of statement executions.
uint64_t execute(const CompiledProgram& cp, std::vector<TensorStore>& tensors, bool detect_races);

// Throws RuntimeError "file:line:col: msg" at `loc` of the program's source (out of line: the
// executor's hot loop only calls it).
[[noreturn, gnu::noinline]] void fail_at(const CompiledProgram& cp, leir::SourceLoc loc, const std::string& msg);

// "[i,j,...]": the multi-index of flat `offset` in `slot` (for errors).
std::string index_text(const TensorSlot& slot, int64_t offset);

}  // namespace steptp::interp
