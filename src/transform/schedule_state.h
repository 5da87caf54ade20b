// The schedule state (TVM's tir::ScheduleState is the model): a program together with the
// analyses strategies ask of it, each computed on first use and kept for the life of the state.
// Strategies never mutate a state: a rewrite produces a new program, hence a new state, which is
// how every cached analysis is invalidated by a rewrite. Surveys (a strategy's sites and
// refusals) are cached the same way, so enumerating sites, then parameter spaces, then applying
// choices analyses the program once per strategy instead of once per call.
//
// Thread-safe: analyses are computed outside the lock and the first one stored wins, so a state
// can be shared by threads enumerating different strategies.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <typeindex>
#include <utility>
#include <vector>

#include "ir/analysis/dependence.h"
#include "ir/analysis/structure.h"
#include "ir/leir/ast.h"
#include "ir/leir/tensors.h"
#include "transform/strategy.h"

namespace steptp::strategies {

class ScheduleState {
 public:
  explicit ScheduleState(leir::Program program);
  ScheduleState(const ScheduleState&) = delete;  // analyses point into program_
  ScheduleState& operator=(const ScheduleState&) = delete;

  const leir::Program& program() const { return program_; }

  // Cached analyses.
  const analysis::UseDef& use_def() const;                // top-level reads and writes
  const std::vector<analysis::NestRef>& nests() const;    // analysis::all_nests, pre-order
  const analysis::NestRef& nest_at(const analysis::Path& path) const;  // std::out_of_range if none
  const leir::TensorTable& tensors() const;               // leir::build_tensor_table (may throw)
  // analysis::nest_dependences of the nest at `path` (std::out_of_range if none).
  const std::vector<analysis::DepPair>& dependences(const analysis::Path& path) const;

  // `s`'s survey of this program, computed once.
  const Survey& survey(const Strategy& s) const;

  // A value derived from the program, computed once per (owner, type): the extension point for
  // a strategy family's own analyses (the algebraic family's statement views, sign facts and
  // attempted rewrites). `make` runs outside the lock and must not depend on anything but the
  // program and the owner.
  template <class T, class Make>
  const T& memo(const void* owner, Make&& make) const {
    Key key{owner, std::type_index(typeid(T))};
    if (const void* v = find(key)) return *static_cast<const T*>(v);
    return *static_cast<const T*>(insert(key, std::make_shared<const T>(make())));
  }

 private:
  using Key = std::pair<const void*, std::type_index>;
  const void* find(const Key& key) const;
  const void* insert(const Key& key, std::shared_ptr<const void> value) const;  // the first stored wins

  leir::Program program_;
  mutable std::mutex mutex_;
  mutable std::map<Key, std::shared_ptr<const void>> memo_;
};

}  // namespace steptp::strategies
