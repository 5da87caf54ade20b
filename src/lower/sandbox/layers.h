// The sandbox's layers and what each came to in a process: applied, or unavailable and why.
// Where the kernel refuses a layer (containers often refuse namespaces) the sandbox degrades layer
// by layer instead of refusing the job; this report is what `steptp serve` logs at start, shows
// in /health and /metrics, and checks for --require-sandbox.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace steptp::backend::sandbox {

// Every layer, in the order they are reported (docs/serve.md "Isolation" says what each protects
// against).
const std::vector<std::string>& layer_names();

class LayerReport {
 public:
  void set(const std::string& layer, bool applied, std::string reason = {});
  bool applied(const std::string& layer) const;
  std::string reason(const std::string& layer) const;  // why not applied ("not attempted" if never set)
  // Layers of layer_names() not applied, each with its reason ("not attempted" when never set).
  std::vector<std::pair<std::string, std::string>> missing() const;
  bool complete() const { return missing().empty(); }
  // The missing layers as "pid_ns (why), pids_cgroup (why)"; "" when complete.
  std::string describe_missing() const;
  // A layer stays applied only where both reports applied it (the pool's view over its workers).
  void meet(const LayerReport& other);
  // {"layer": {"applied": bool, "reason": "..."}}, and back.
  nlohmann::json to_json() const;
  static LayerReport from_json(const nlohmann::json& j);
  // One line: "user: on, ..., pid_ns: off (why)".
  std::string describe() const;

 private:
  std::map<std::string, std::pair<bool, std::string>> layers_;
};

}  // namespace steptp::backend::sandbox
