#include "apps/dataset/export.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <fmt/format.h>

#include "base/atomic_file.h"
#include "base/hash.h"
#include "apps/dataset/label_stats.h"
#include "apps/dataset/method_files.h"
#include "apps/dataset/public_format.h"
#include "apps/dataset/reasoning.h"
#include "apps/dataset/record_stats.h"
#include "apps/dataset/split.h"
#include "apps/dataset/token_stats.h"
#include "ir/leir/canonical.h"
#include "ir/leir/program_io.h"
#include "search/analytic/search.h"
#include "transform/sampler.h"
#include "front/tokenizer/bpe_tokenizer.h"

namespace fs = std::filesystem;

namespace steptp::dataset {

using nlohmann::json;

namespace {

// File hashes keep the basis they have always had (they are in manifests).
uint64_t fnv(const std::string& s) { return base::fnv1a(s, base::kProgramHashBasis); }

}  // namespace

json options_json(const GenerateOptions& o) {
  return {{"seed", o.seed},
          {"target", o.target},
          {"size", std::string(workloads::to_string(o.size))},
          {"programs", o.programs},
          {"composites", o.composites},
          {"input", o.input},
          {"examples", o.examples},
          {"trajectories", o.trajectories == Trajectories::Tune ? "tune" : "search"},
          {"tune_trials", o.tune_trials},
          {"search", o.mode == search::Mode::Greedy ? "greedy" : "beam"},
          {"beam", o.beam},
          {"depth", o.depth},
          {"sites_per_strategy", o.sites_per_strategy},
          {"params_per_site", o.params_per_site},
          {"verify_trials", o.verify_trials},
          {"per_strategy_cap", o.per_strategy_cap},
          {"non_improving_per_state", o.non_improving_per_state},
          {"non_improving_per_root", o.non_improving_per_root},
          {"per_strategy_per_state", o.per_strategy_per_state},
          {"trivial_keep", o.trivial_keep},
          {"multi_answer_max", o.multi_answer_max},
          {"multi_trivial_max", o.multi_trivial_max},
          {"multi_per_strategy_cap", o.multi_per_strategy_cap},
          {"eval_fraction", o.eval_fraction},
          {"cost", o.measured ? "measured" : "model"},
          {"measure_min_time", o.measure_min_time},
          {"measure_threads", o.measure_threads},
          {"min_root_ms", o.min_root_ms},
          {"max_root_ms", o.max_root_ms},
          {"min_headroom", o.min_headroom},
          {"improve_threshold", o.improve_threshold}};
}

void export_dataset(std::vector<json>& recs, const std::vector<char>& keep, const ExportInputs& in,
                    GenerateSummary& sum) {
  const GenerateOptions& o = in.o;
  const auto& roots = in.roots;
  const auto& families = in.families;
  const auto& drops = in.drops;
  const auto& meas = in.measurement;
  const fs::path out(o.out_dir);
  std::error_code ec;
  tokenizer::BpeTokenizer tok = tokenizer::BpeTokenizer::load(tokenizer::default_qwen3_path());
  const bool steptp_layout = o.format != "public", public_layout = o.format != "steptp";

  // ---- chat records; a record above the token cap is dropped (ids stay consecutive) ----
  std::vector<size_t> exported;  // indices into recs, in order
  std::vector<json> chats;       // make_chat of each exported record
  int over_cap = 0;
  for (size_t i = 0; i < recs.size(); ++i) {
    if (!keep[i]) continue;
    json& r = recs[i];
    r["id"] = fmt::format("{:06d}", exported.size());
    json chat = make_chat(r, o.answer_format);
    const size_t ntok = chat_tokens(chat["messages"], tok);
    if (ntok > kMaxRecordTokens) {
      over_cap++;
      continue;
    }
    r["tokens"] = ntok;
    exported.push_back(i);
    chats.push_back(std::move(chat));
  }

  // ---- split: whole roots (apps/dataset/split.h), balanced by the records' token counts ----
  std::vector<SplitRoot> split_in;
  std::map<std::string, size_t> split_at;
  for (size_t i : exported) {
    const json& r = recs[i];
    auto [it, fresh] = split_at.emplace(r["root"]["key"].get<std::string>(), split_in.size());
    if (fresh) split_in.push_back({it->first, r["root"]["family"].get<std::string>(), {}});
    split_in[it->second].tokens.push_back(r["tokens"].get<double>());
  }
  const EvalSplit split_of = split_roots(split_in, o.eval_fraction, o.seed);

  std::string train, eval, steps, public_train, public_eval;
  std::map<std::string, int> multi_appearances;
  int multi_slots = 0;
  std::map<std::string, std::string> programs_by_hash;  // distinct programs of the kept records
  std::map<std::string, std::map<std::string, int>> per_strategy;
  std::map<std::string, int> classes, exactness, labels;
  std::vector<double> sp_parent, sp_root;
  std::vector<double> tok_train, tok_eval, tok_public_train, tok_public_eval;
  int64_t tok_cot = 0;
  std::set<std::string> covered;
  RecordStats record_stats;
  LabelStats label_stats;
  EvalCoverage eval_coverage;
  MethodFiles method_files(o.answer_format, tok);
  for (size_t k = 0; k < exported.size(); ++k) {
    json& r = recs[exported[k]];
    const json& chat = chats[k];
    std::string split = split_of.roots.count(r["root"]["key"].get<std::string>()) ? "eval" : "train";
    r["split"] = split;
    r["cot"] = make_cot(r);
    std::string chat_line = chat.dump() + "\n";
    const size_t ntok = r["tokens"].get<size_t>();
    tok_cot += int64_t(tok.count(r["cot"].get<std::string>()));
    if (split == "eval") { eval += chat_line; tok_eval.push_back(double(ntok)); sum.eval++; }
    else { train += chat_line; tok_train.push_back(double(ntok)); sum.train++; }
    if (public_layout) {
      json pub = make_public_chat(r);
      (split == "eval" ? tok_public_eval : tok_public_train).push_back(double(chat_tokens(pub["messages"], tok)));
      (split == "eval" ? public_eval : public_train) += pub.dump() + "\n";
    }
    method_files.add(r, chat);
    if (r["kind"] == "multi") {
      for (const auto& a : r["answers"]) multi_appearances[a["strategy"].get<std::string>()]++;
      multi_slots += int(r["answers"].size());
    }
    if (o.token_sample != 0) {
      programs_by_hash.emplace(r["root"]["hash"].get<std::string>(), r["root_program"].get<std::string>());
      programs_by_hash.emplace(r["parent_hash"].get<std::string>(), r["parent_program"].get<std::string>());
      for (const auto& a : r["answers"])
        programs_by_hash.emplace(a["result_hash"].get<std::string>(), a["result_program"].get<std::string>());
    }
    steps += r.dump() + "\n";
    record_stats.add(r);
    label_stats.add(r);
    eval_coverage.add(r);
    sum.steps++;
    (r["kind"] == "multi" ? sum.multi : sum.single)++;
    for (const auto& a : r["answers"]) {
      std::string s = a["strategy"];
      per_strategy[s][split]++;
      covered.insert(s);
      classes[a["verification"]["class"].get<std::string>()]++;
      exactness[a["exactness"].get<std::string>()]++;
      labels[a["label"].get<std::string>()]++;
      if (r["kind"] == "single") {
        sp_parent.push_back(a["cost"]["speedup_vs_parent"].get<double>());
        sp_root.push_back(a["cost"]["speedup_vs_root"].get<double>());
      }
    }
  }
  sum.strategies_covered = int(covered.size());
  json ps = json::object();
  for (auto& [s, m] : per_strategy) ps[s] = m;
  json uncovered = json::array();
  for (auto nm : strategies::strategy_names())
    if (!covered.count(std::string(nm))) uncovered.push_back(std::string(nm));
  json stats = {{"records", sum.steps},
                {"train", sum.train},
                {"eval", sum.eval},
                {"single", sum.single},
                {"multi", sum.multi},
                {"strategies_covered", sum.strategies_covered},
                {"strategies_total", strategies::kStrategyCount},
                {"strategies_uncovered", uncovered},
                {"per_strategy", ps},
                {"verification_classes", classes},
                {"exactness", exactness},
                {"labels", labels},
                {"speedup_measured", o.measured},
                {"measurement", meas.to_json()},
                {"speedup_vs_parent", quantiles(sp_parent)},
                {"speedup_vs_root", quantiles(sp_root)},
                {"filter_drops", drops},
                {"split", split_of.to_json()},
                {"tokens", {{"tokenizer", "qwen3"},
                            {"train", quantiles(tok_train)},
                            {"eval", quantiles(tok_eval)},
                            {"cot_total", tok_cot}}},
                {"inconclusive_roots", in.inconclusive_roots},
                {"roots_without_shapes", in.skipped_roots},
                {"roots", in.root_stats}};
  stats.update(record_stats.to_json());
  stats["label_statistics"] = label_stats.to_json();
  stats["eval_coverage"] = eval_coverage.to_json();
  if (over_cap) stats["filter_drops"]["over_token_cap"] = over_cap;
  MethodFiles::Output method = method_files.finish();
  stats.update(method.stats);
  stats["token_cap"]["records_dropped"] = over_cap;
  // How often the CoT's expectation (apps/dataset/reasoning.h) agrees with the measured label.
  stats["expectation_agreement"] = expectation_agreement(recs, keep);
  if (public_layout)
    stats["tokens"]["public"] = {{"train", quantiles(tok_public_train)}, {"eval", quantiles(tok_public_eval)}};
  {
    json share = json::object();
    for (const auto& [s, n] : multi_appearances)
      share[s] = {{"records", n}, {"share_of_answers", multi_slots ? std::round(1e4 * n / multi_slots) / 1e4 : 0.0}};
    stats["multi_answer"] = {{"answers", multi_slots},
                             {"per_strategy_cap", o.multi_per_strategy_cap},
                             {"trivial_max_per_set", o.multi_trivial_max},
                             {"per_strategy", share}};
  }
  if (o.token_sample != 0) {
    // A seeded sample of the distinct programs (in hash order) so the comparison stays cheap.
    std::vector<const std::string*> texts;
    for (const auto& [h, t] : programs_by_hash) texts.push_back(&t);
    size_t n = o.token_sample < 0 ? texts.size() : std::min(texts.size(), size_t(o.token_sample));
    auto pick = strategies::choose_indices(texts.size(), n, base::mix_seed(o.seed, 0x70c5));
    std::sort(pick.begin(), pick.end());
    std::vector<leir::Program> progs;
    for (size_t i : pick) progs.push_back(leir::program_from_text(*texts[i]));
    json cmp = compare_tokens(progs, tok);
    cmp["distinct_programs"] = texts.size();
    stats["token_comparison"] = cmp;
  }
  std::string stats_text = stats.dump(1) + "\n";
  std::set<std::string> train_f, eval_f;  // families with a train (eval) root
  for (const auto& r : split_in) (split_of.roots.count(r.key) ? eval_f : train_f).insert(r.family);
  json split_json = split_of.to_json();
  split_json["train_families"] = train_f;
  split_json["eval_families"] = eval_f;
  split_json["families"] = families;
  json inputs = json::array();
  for (const auto& r : roots)
    inputs.push_back({{"key", r.key}, {"family", r.family}, {"name", r.program.name},
                      {"hash", base::hex64(leir::program_hash(r.program))}});
  json manifest = {{"tool", kGenerateVersion},
                   {"strategies_registered", strategies::all_strategies().size()},
                   {"workloads_registered", workloads::all_workloads().size()},
                   {"cost", measurement_json(o)},
                   {"options", options_json(o)},
                   {"seed", o.seed},
                   {"inputs", inputs},
                   {"split", split_json},
                   {"counts", {{"roots", sum.roots}, {"records", sum.steps}, {"train", sum.train}, {"eval", sum.eval},
                               {"single", sum.single}, {"multi", sum.multi}}},
                   {"files", {{"steps.jsonl", base::hex64(fnv(steps))},
                              {"stats.json", base::hex64(fnv(stats_text))}}}};
  manifest["options"]["format"] = o.format;
  manifest["options"]["answer_format"] = to_string(o.answer_format);
  manifest["options"]["token_sample"] = o.token_sample;
  // Each layout's files exist only when it was asked for (no stale files of an earlier run).
  std::vector<std::pair<std::string, const std::string*>> layout_files = {
      {"train.jsonl", steptp_layout ? &train : nullptr}, {"eval.jsonl", steptp_layout ? &eval : nullptr},
      {"public_train.jsonl", public_layout ? &public_train : nullptr},
      {"public_eval.jsonl", public_layout ? &public_eval : nullptr}};
  // The files by training method and LLaMA-Factory's index of them come in this project's chat
  // form, so with that layout.
  const std::string dataset_info = method.dataset_info.dump(1) + "\n";
  for (const auto& [name, data] : method.files) layout_files.push_back({name, steptp_layout ? &data : nullptr});
  layout_files.push_back({"dataset_info.json", steptp_layout ? &dataset_info : nullptr});
  for (const auto& [name, data] : layout_files) {
    if (data) {
      manifest["files"][name] = base::hex64(fnv(*data));
      base::write_file_atomically(out / name, *data);
    } else {
      fs::remove(out / name, ec);
    }
  }
  base::write_file_atomically(out / "steps.jsonl", steps);
  base::write_file_atomically(out / "stats.json", stats_text);
  base::write_file_atomically(out / "manifest.json", manifest.dump(1) + "\n");
  sum.stats = stats;
}

}  // namespace steptp::dataset
