#include "transform/schedule_state.h"

#include <stdexcept>

#include "transform/site_address.h"

namespace steptp::strategies {

ScheduleState::ScheduleState(leir::Program program) : program_(std::move(program)) {}

const void* ScheduleState::find(const Key& key) const {
  std::lock_guard lock(mutex_);
  auto it = memo_.find(key);
  return it == memo_.end() ? nullptr : it->second.get();
}

const void* ScheduleState::insert(const Key& key, std::shared_ptr<const void> value) const {
  std::lock_guard lock(mutex_);
  return memo_.emplace(key, std::move(value)).first->second.get();
}

const analysis::UseDef& ScheduleState::use_def() const {
  return memo<analysis::UseDef>(nullptr, [&] { return analysis::use_def(program_); });
}

const std::vector<analysis::NestRef>& ScheduleState::nests() const {
  return memo<std::vector<analysis::NestRef>>(nullptr, [&] { return analysis::all_nests(program_.body); });
}

const analysis::NestRef& ScheduleState::nest_at(const analysis::Path& path) const {
  using Index = std::map<analysis::Path, size_t>;
  const auto& all = nests();
  const auto& index = memo<Index>(nullptr, [&] {
    Index by_path;
    for (size_t i = 0; i < all.size(); ++i) by_path.emplace(all[i].path, i);
    return by_path;
  });
  auto it = index.find(path);
  if (it == index.end()) throw std::out_of_range("no nest at path " + to_handle({path, {}, 0}));
  return all[it->second];
}

const leir::TensorTable& ScheduleState::tensors() const {
  return memo<leir::TensorTable>(nullptr, [&] { return leir::build_tensor_table(program_); });
}

const std::vector<analysis::DepPair>& ScheduleState::dependences(const analysis::Path& path) const {
  // Keyed by the nest's entry in nests(), which lives as long as the state.
  const analysis::NestRef& nest = nest_at(path);
  return memo<std::vector<analysis::DepPair>>(&nest, [&] { return analysis::nest_dependences(nest); });
}

const Survey& ScheduleState::survey(const Strategy& s) const {
  return memo<Survey>(&s, [&] { return s.survey(*this); });
}

}  // namespace steptp::strategies
