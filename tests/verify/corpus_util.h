// Test helpers: the programs of ../shared (examples, public translator sample, public strategy
// pairs with the signature of their workload).
#pragma once

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ir/leir/program_io.h"
#include "ir/leir/values.h"

namespace steptp::testing {

inline std::filesystem::path shared_dir() { return STEPTP_SHARED_DIR; }

inline std::vector<nlohmann::json> read_jsonl(const std::filesystem::path& p) {
  std::vector<nlohmann::json> out;
  std::ifstream in(p);
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) out.push_back(nlohmann::json::parse(line));
  return out;
}

struct NamedProgram {
  std::string tag;
  leir::Program program;
};

inline std::vector<NamedProgram> example_programs() {
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(shared_dir() / "examples")) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::vector<NamedProgram> out;
  for (const auto& f : files) out.push_back({f.stem().string(), leir::read_programs(f.string()).at(0)});
  return out;
}

struct CorpusWorkload {
  leir::Program program;
  leir::TensorMap inputs;          // stored inputs (inputs and params)
  leir::TensorMap pytorch_output;  // what PyTorch computed from them
  nlohmann::json record;
};

inline const std::map<std::string, CorpusWorkload>& corpus_workloads() {
  static const std::map<std::string, CorpusWorkload> all = [] {
    std::map<std::string, CorpusWorkload> m;
    auto file = (shared_dir() / "corpus" / "public_translator_sample.jsonl").string();
    for (const auto& j : read_jsonl(file)) {
      CorpusWorkload w;
      w.program = leir::program_from_json(j, file);
      w.inputs = leir::values_from_json(j["inputs"], file);
      w.pytorch_output = leir::values_from_json(j["pytorch_output"], file);
      w.record = j;
      m.emplace(w.program.name, std::move(w));
    }
    return m;
  }();
  return all;
}

struct CorpusPair {
  std::string tag;  // "workload/strategy#k"
  std::string workload;
  std::string strategy;
  leir::Program before;
  leir::Program after;
  bool equivalent_on_stored_inputs = false;
};

inline std::vector<CorpusPair> corpus_pairs() {
  std::vector<CorpusPair> out;
  auto file = (shared_dir() / "corpus" / "public_strategy_pairs_sample.jsonl").string();
  int k = 0;
  for (const auto& j : read_jsonl(file)) {
    CorpusPair p;
    p.workload = j["workload"].get<std::string>();
    p.strategy = j["strategy"].get<std::string>();
    p.tag = p.workload + "/" + p.strategy + "#" + std::to_string(k++);
    const auto& w = corpus_workloads().at(p.workload);
    auto make = [&](const char* key) {
      // Named after the workload: the tag's '/' and '#' are no program name (ir/leir/identifiers.h).
      nlohmann::json rec = {{"name", p.workload}, {"known", w.record["known"]}, {"leir", j[key]}};
      return leir::program_from_json(rec, file);
    };
    p.before = make("before_leir");
    p.after = make("after_leir");
    p.equivalent_on_stored_inputs = j["equivalent_on_stored_inputs"].get<bool>();
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace steptp::testing
