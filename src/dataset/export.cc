#include "dataset/export.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <fmt/format.h>

#include "base/atomic_file.h"
#include "base/hash.h"
#include "dataset/public_format.h"
#include "dataset/record_stats.h"
#include "dataset/token_stats.h"
#include "leir/program_io.h"
#include "search/search.h"
#include "strategies/sampler.h"
#include "tokenizer/bpe_tokenizer.h"

namespace fs = std::filesystem;

namespace steptp::dataset {

using nlohmann::json;

namespace {

// File hashes keep the basis they have always had (they are in manifests).
uint64_t fnv(const std::string& s) { return base::fnv1a(s, base::kProgramHashBasis); }


json quantiles(std::vector<double> v) {
  if (v.empty()) return json::object();
  std::sort(v.begin(), v.end());
  auto q = [&](double p) { return v[size_t(std::floor(p * double(v.size() - 1)))]; };
  return {{"min", v.front()}, {"p25", q(0.25)}, {"median", q(0.5)}, {"p75", q(0.75)}, {"max", v.back()},
          {"count", v.size()}};
}

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
          {"min_headroom", o.min_headroom},
          {"improve_threshold", o.improve_threshold}};
}

void export_dataset(std::vector<json>& recs, const std::vector<char>& keep, const ExportInputs& in,
                    GenerateSummary& sum) {
  const GenerateOptions& o = in.o;
  const auto& roots = in.roots;
  const auto& families = in.families;
  const auto& eval_fams = in.eval_families;
  const auto& drops = in.drops;
  const auto& meas = in.measurement;
  const fs::path out(o.out_dir);
  std::error_code ec;
  tokenizer::BpeTokenizer tok = tokenizer::BpeTokenizer::load(tokenizer::default_qwen3_path());
  const bool steptp_layout = o.format != "public", public_layout = o.format != "steptp";
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
  int n = 0;
  for (size_t i = 0; i < recs.size(); ++i) {
    if (!keep[i]) continue;
    json& r = recs[i];
    std::string split = eval_fams.count(r["root"]["family"].get<std::string>()) ? "eval" : "train";
    r["split"] = split;
    r["id"] = fmt::format("{:06d}", n++);
    json chat = make_chat(r, o.answer_format);
    r["cot"] = make_cot(r);
    std::string chat_line = chat.dump() + "\n";
    size_t ntok = 0;
    for (const auto& m : chat["messages"]) ntok += tok.count(m["content"].get<std::string>());
    tok_cot += int64_t(tok.count(r["cot"].get<std::string>()));
    r["tokens"] = ntok;
    if (split == "eval") { eval += chat_line; tok_eval.push_back(double(ntok)); sum.eval++; }
    else { train += chat_line; tok_train.push_back(double(ntok)); sum.train++; }
    if (public_layout) {
      json pub = make_public_chat(r);
      size_t ptok = 0;
      for (const auto& m : pub["messages"]) ptok += tok.count(m["content"].get<std::string>());
      (split == "eval" ? tok_public_eval : tok_public_train).push_back(double(ptok));
      (split == "eval" ? public_eval : public_train) += pub.dump() + "\n";
    }
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
                {"tokens", {{"tokenizer", "qwen3"},
                            {"train", quantiles(tok_train)},
                            {"eval", quantiles(tok_eval)},
                            {"cot_total", tok_cot}}},
                {"inconclusive_roots", in.inconclusive_roots},
                {"roots_without_shapes", in.skipped_roots},
                {"roots", in.root_stats}};
  stats.update(record_stats.to_json());
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
  json eval_f = json::array(), train_f = json::array();
  for (const auto& f : families) (eval_fams.count(f) ? eval_f : train_f).push_back(f);
  json inputs = json::array();
  for (const auto& r : roots)
    inputs.push_back({{"key", r.key}, {"family", r.family}, {"name", r.program.name},
                      {"hash", search::hex64(search::program_hash(r.program))}});
  json manifest = {{"tool", kGenerateVersion},
                   {"strategies_registered", strategies::all_strategies().size()},
                   {"workloads_registered", workloads::all_workloads().size()},
                   {"cost", measurement_json(o)},
                   {"options", options_json(o)},
                   {"seed", o.seed},
                   {"inputs", inputs},
                   {"split", {{"by", "workload family"}, {"train_families", train_f}, {"eval_families", eval_f}}},
                   {"counts", {{"roots", sum.roots}, {"records", sum.steps}, {"train", sum.train}, {"eval", sum.eval},
                               {"single", sum.single}, {"multi", sum.multi}}},
                   {"files", {{"steps.jsonl", search::hex64(fnv(steps))},
                              {"stats.json", search::hex64(fnv(stats_text))}}}};
  manifest["options"]["format"] = o.format;
  manifest["options"]["answer_format"] = o.answer_format == AnswerFormat::IR ? "ir" : "action";
  manifest["options"]["token_sample"] = o.token_sample;
  // Each layout's files exist only when it was asked for (no stale files of an earlier run).
  std::vector<std::pair<std::string, const std::string*>> layout_files = {
      {"train.jsonl", steptp_layout ? &train : nullptr}, {"eval.jsonl", steptp_layout ? &eval : nullptr},
      {"public_train.jsonl", public_layout ? &public_train : nullptr},
      {"public_eval.jsonl", public_layout ? &public_eval : nullptr}};
  for (const auto& [name, data] : layout_files) {
    if (data) {
      manifest["files"][name] = search::hex64(fnv(*data));
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
