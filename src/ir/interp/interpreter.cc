// Interpreter: binds inputs to the compiled program's tensor slots, runs it, collects outputs.
#include "ir/interp/interpreter.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "ir/interp/bytecode.h"
#include "ir/interp/executor.h"
#include "ir/interp/scalar_ops.h"
#include "ir/leir/diagnostic.h"

namespace steptp::interp {

namespace {

std::string shape_text(const std::vector<int64_t>& shape) { return fmt::format("[{}]", fmt::join(shape, ",")); }

// Fills a read-only slot from the given values or, for a constant, from its signature value.
void bind_known(const CompiledProgram& cp, const TensorSlot& slot, const leir::TensorMap& inputs, TensorStore& store) {
  const leir::TensorDecl& d = *slot.decl;
  const std::vector<double>* values = nullptr;
  if (const leir::TensorValue* given = leir::find_value(inputs, slot.name, d.alias)) {
    const leir::TensorValue& v = *given;
    if (v.shape != slot.shape)
      fail_at(cp, d.loc, fmt::format("{} {} is given with shape {} but is declared {}{}", leir::to_string(d.role),
                                     slot.name, shape_text(v.shape), leir::to_string(slot.dtype),
                                     shape_text(slot.shape)));
    if (v.dtype != slot.dtype)
      fail_at(cp, d.loc, fmt::format("{} {} is given with dtype {} but is declared {}{}", leir::to_string(d.role),
                                     slot.name, leir::to_string(v.dtype), leir::to_string(slot.dtype),
                                     shape_text(slot.shape)));
    if (static_cast<int64_t>(v.data.size()) != slot.numel)
      fail_at(cp, d.loc, fmt::format("{} {} has {} values, its shape {} needs {}", leir::to_string(d.role), slot.name,
                                     v.data.size(), shape_text(slot.shape), slot.numel));
    values = &v.data;
  } else if (d.value) {  // a constant, or a param carrying its values (LEIR.md §1)
    if (static_cast<int64_t>(d.value->size()) != slot.numel)
      fail_at(cp, d.loc, fmt::format("{} {} carries {} values, its shape {} needs {}", leir::to_string(d.role),
                                     slot.name, d.value->size(), shape_text(slot.shape), slot.numel));
    values = &*d.value;
  } else {
    fail_at(cp, d.loc, fmt::format("missing {} {} ({}{}): every input and param must be given{}",
                                   leir::to_string(d.role), slot.name, leir::to_string(slot.dtype),
                                   shape_text(slot.shape),
                                   d.role == leir::Role::Constant ? " (this constant has no value in the signature)"
                                                                  : ""));
  }
  store.data.resize(values->size());
  for (size_t i = 0; i < values->size(); ++i) {
    auto s = store_as(slot.dtype, (*values)[i]);
    if (!s)
      fail_at(cp, d.loc, fmt::format("{} {}: value {} at flat index {} cannot be stored as {}", leir::to_string(d.role),
                                     slot.name, (*values)[i], i, leir::to_string(slot.dtype)));
    store.data[i] = *s;
  }
}

}  // namespace

Interpreter::Interpreter(const leir::Program& p) : impl_(compile_program(p)) {}
Interpreter::~Interpreter() = default;
Interpreter::Interpreter(Interpreter&&) noexcept = default;
Interpreter& Interpreter::operator=(Interpreter&&) noexcept = default;

leir::TensorMap Interpreter::run(const leir::TensorMap& inputs, const RunOptions& opts) const {
  const CompiledProgram& cp = *impl_;
  std::vector<TensorStore> stores(cp.slots.size());
  for (size_t i = 0; i < cp.slots.size(); ++i) {
    const TensorSlot& slot = cp.slots[i];
    if (slot.read_only) {
      bind_known(cp, slot, inputs, stores[i]);
    } else {
      stores[i].data.assign(static_cast<size_t>(slot.numel), 0.0);
      stores[i].set.assign(static_cast<size_t>(slot.numel), 0);
    }
  }
  impl_->last_statement_count = execute(cp, stores, opts.detect_races);

  leir::TensorMap out;
  for (size_t i = 0; i < cp.slots.size(); ++i) {
    const TensorSlot& slot = cp.slots[i];
    if (!slot.is_output && !(opts.keep_intermediates && !slot.known)) continue;
    TensorStore& st = stores[i];
    for (size_t k = 0; k < st.set.size(); ++k) {
      if (st.set[k]) continue;
      if (slot.is_output && !opts.allow_unset_outputs)
        fail_at(cp, slot.decl->loc,
                fmt::format("output {} element {} was never set: every output element must be written (LEIR.md §5)",
                            slot.name, index_text(slot, static_cast<int64_t>(k))));
      st.data[k] = std::numeric_limits<double>::quiet_NaN();
    }
    leir::TensorValue v;
    v.dtype = slot.dtype;
    v.shape = slot.shape;
    v.data = std::move(st.data);
    out.emplace(slot.name, std::move(v));
  }
  return out;
}

uint64_t Interpreter::last_statement_count() const { return impl_->last_statement_count; }

leir::TensorMap run_program(const leir::Program& p, const leir::TensorMap& inputs, const RunOptions& opts) {
  return Interpreter(p).run(inputs, opts);
}

}  // namespace steptp::interp
