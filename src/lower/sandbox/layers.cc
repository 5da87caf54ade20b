#include "lower/sandbox/layers.h"

#include <fmt/format.h>

namespace steptp::backend::sandbox {

const std::vector<std::string>& layer_names() {
  static const std::vector<std::string> names = {
      "user",     "capabilities", "no_new_privs",   "pid_ns",      "mount_ns", "net_ns",
      "landlock", "seccomp",      "seccomp_kernel", "pids_cgroup", "job_dir"};
  return names;
}

void LayerReport::set(const std::string& layer, bool applied, std::string reason) {
  layers_[layer] = {applied, std::move(reason)};
}

bool LayerReport::applied(const std::string& layer) const {
  auto it = layers_.find(layer);
  return it != layers_.end() && it->second.first;
}

std::string LayerReport::reason(const std::string& layer) const {
  auto it = layers_.find(layer);
  return it == layers_.end() ? "not attempted" : it->second.second;
}

std::vector<std::pair<std::string, std::string>> LayerReport::missing() const {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& name : layer_names()) {
    auto it = layers_.find(name);
    if (it == layers_.end()) out.emplace_back(name, "not attempted");
    else if (!it->second.first) out.emplace_back(name, it->second.second);
  }
  return out;
}

std::string LayerReport::describe_missing() const {
  std::string out;
  for (const auto& [name, why] : missing()) out += fmt::format("{}{} ({})", out.empty() ? "" : ", ", name, why);
  return out;
}

void LayerReport::meet(const LayerReport& other) {
  for (const auto& name : layer_names()) {
    auto mine = layers_.find(name);
    auto theirs = other.layers_.find(name);
    if (theirs == other.layers_.end()) layers_[name] = {false, "not attempted"};
    else if (mine == layers_.end() || (mine->second.first && !theirs->second.first)) layers_[name] = theirs->second;
  }
}

nlohmann::json LayerReport::to_json() const {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [name, v] : layers_) j[name] = {{"applied", v.first}, {"reason", v.second}};
  return j;
}

LayerReport LayerReport::from_json(const nlohmann::json& j) {
  LayerReport r;
  if (!j.is_object()) return r;
  for (const auto& [name, v] : j.items())
    if (v.is_object()) r.set(name, v.value("applied", false), v.value("reason", ""));
  return r;
}

std::string LayerReport::describe() const {
  std::string out;
  for (const auto& name : layer_names()) {
    auto it = layers_.find(name);
    if (!out.empty()) out += ", ";
    if (it == layers_.end()) out += name + ": off (not attempted)";
    else if (it->second.first) out += name + ": on";
    else out += fmt::format("{}: off ({})", name, it->second.second);
  }
  return out;
}

}  // namespace steptp::backend::sandbox
