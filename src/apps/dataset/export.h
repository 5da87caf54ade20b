// Stage "export" of `steptp generate`: the kept records become the dataset's files —
// train/eval.jsonl and the files by training method (apps/dataset/method_files.h) with their
// dataset_info.json (and/or the public layout), steps.jsonl, stats.json, manifest.json — each
// written atomically, in record order, so the bytes depend only on the records and options.
// Records above kMaxRecordTokens (apps/dataset/token_stats.h) are dropped and counted; the split
// (apps/dataset/split.h) is made here, where the records' token counts are known.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/dataset/dataset.h"
#include "apps/dataset/measurement.h"

namespace steptp::dataset {

inline constexpr const char* kGenerateVersion = "steptp-generate 0.1.0";

// The options as manifest.json records them.
nlohmann::json options_json(const GenerateOptions& o);

struct ExportInputs {
  const GenerateOptions& o;
  const std::vector<Root>& roots;
  const std::vector<std::string>& families;  // sorted, distinct
  const std::map<std::string, int>& drops;   // filter drops by reason
  const MeasureSummary& measurement;
  const nlohmann::json& root_stats;          // per root: key, family, cost estimate, search stats, error
  const nlohmann::json& inconclusive_roots;
  const nlohmann::json& skipped_roots;  // workloads without shapes of the size class (collect_roots)
};

// Writes the files into o.out_dir from the kept records (`keep[i]`; exported records gain split,
// id, cot and tokens) and fills the counts and stats of `sum`. Throws base::Error (Failed) on I/O errors.
void export_dataset(std::vector<nlohmann::json>& recs, const std::vector<char>& keep, const ExportInputs& in,
                    GenerateSummary& sum);

}  // namespace steptp::dataset
