#include "strategies/schedule_state.h"

#include <stdexcept>

#include "strategies/site_address.h"

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

const std::vector<analysis::StmtRef>& ScheduleState::stmts() const {
  return memo<std::vector<analysis::StmtRef>>(nullptr, [&] { return analysis::all_stmts(program_.body); });
}

const leir::TensorTable& ScheduleState::tensors() const {
  return memo<leir::TensorTable>(nullptr, [&] { return leir::build_tensor_table(program_); });
}

const std::vector<analysis::DepPair>& ScheduleState::dependences(const analysis::Path& path) const {
  {
    std::lock_guard lock(mutex_);
    if (auto it = dependences_.find(path); it != dependences_.end()) return *it->second;
  }
  auto deps = std::make_shared<const std::vector<analysis::DepPair>>(analysis::nest_dependences(nest_at(path)));
  std::lock_guard lock(mutex_);
  return *dependences_.emplace(path, std::move(deps)).first->second;
}

const Survey& ScheduleState::survey(const Strategy& s) const {
  return memo<Survey>(&s, [&] { return s.survey(*this); });
}

}  // namespace steptp::strategies
