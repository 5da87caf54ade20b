// LEIR vs lowered-code token counts (see token_stats.h).
#include "apps/dataset/token_stats.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "base/error.h"
#include "lower/cpu/codegen.h"
#include "lower/cuda/cuda_codegen.h"
#include "lower/rejection.h"
#include "lower/tir/tvmscript.h"
#include "ir/leir/diagnostic.h"
#include "ir/leir/printer.h"
#include "ir/leir/program_io.h"
#include "front/tokenizer/bpe_tokenizer.h"

namespace steptp::dataset {
namespace {

using nlohmann::json;

// Ratios are written rounded to 4 decimals so stats.json stays readable and byte-stable.
double round4(double x) { return std::round(x * 1e4) / 1e4; }

}  // namespace

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

size_t chat_tokens(const json& messages, const tokenizer::BpeTokenizer& tok) {
  size_t n = 0;
  for (const auto& m : messages) n += kChatFramingTokens + tok.count(m["content"].get<std::string>());
  return n;
}

const std::vector<std::string>& token_columns() {
  static const std::vector<std::string> c = {"leir", "leir_decl", "tvmscript", "cpp", "cuda"};
  return c;
}
const std::vector<std::string>& token_targets() {
  static const std::vector<std::string> t = {"tvmscript", "cpp", "cuda"};
  return t;
}

bool ProgramTexts::all_accepted() const {
  return std::all_of(reject.begin(), reject.end(), [](const std::string& r) { return r.empty(); });
}

std::string reason_class(const std::exception& e) {
  if (const auto* r = dynamic_cast<const backend::TargetRejection*>(&e))
    return std::string(backend::rejection_group(r->code()));
  return fmt::format("{} error, not a target's rejection", base::info(base::kind_of(e)).name);
}

ProgramTexts lower_all(const leir::Program& p) {
  ProgramTexts t;
  const auto& cols = token_columns();
  t.text.resize(cols.size());
  t.reject.resize(cols.size());
  std::string body = leir::print_body(p.body);
  t.text[0] = body;
  std::string decl;
  for (const auto& d : p.known) decl += leir::signature_line(d) + "\n";
  t.text[1] = decl + body;
  auto attempt = [&](size_t col, auto&& fn) {
    try {
      t.text[col] = fn();
    } catch (const std::exception& e) {
      t.reject[col] = reason_class(e);
    }
    if (t.reject[col].empty() && t.text[col].empty()) t.reject[col] = "empty output";
  };
  attempt(2, [&] { return backend::tir::emit_tvmscript(p); });
  attempt(3, [&] { return backend::cpu::generate_cpu_kernel(p).code; });
  attempt(4, [&] { return backend::cuda::generate_cuda(p).code; });
  return t;
}

json compare_tokens(const std::vector<leir::Program>& programs, const tokenizer::BpeTokenizer& tok,
                    bool per_program) {
  const auto& cols = token_columns();
  const auto& targets = token_targets();
  std::map<std::string, std::map<std::string, int>> reasons;
  std::map<std::string, int> excluded_count;
  std::vector<std::vector<double>> counts(cols.size());
  std::vector<std::vector<double>> ratios(cols.size() * 2);  // [col*2] vs leir, [col*2+1] vs leir_decl
  json per = json::array();
  int compared = 0;
  for (const auto& p : programs) {
    ProgramTexts t = lower_all(p);
    for (size_t c = 2; c < cols.size(); ++c)
      if (!t.reject[c].empty()) {
        excluded_count[cols[c]]++;
        reasons[cols[c]][t.reject[c]]++;
      }
    if (!t.all_accepted()) continue;
    ++compared;
    std::vector<double> n(cols.size());
    for (size_t c = 0; c < cols.size(); ++c) n[c] = double(tok.count(t.text[c]));
    json row = {{"name", p.name}};
    for (size_t c = 0; c < cols.size(); ++c) {
      counts[c].push_back(n[c]);
      row[cols[c]] = int64_t(n[c]);
      if (n[0] > 0) ratios[c * 2].push_back(n[c] / n[0]);
      if (n[1] > 0) ratios[c * 2 + 1].push_back(n[c] / n[1]);
    }
    if (per_program) per.push_back(row);
  }
  json excluded = json::object();
  for (const auto& tg : targets)
    excluded[tg] = {{"count", excluded_count[tg]}, {"reasons", reasons[tg]}};
  json totals = json::object(), med = json::object(), rt = json::object(), mr = json::object();
  std::vector<double> total(cols.size(), 0);
  for (size_t c = 0; c < cols.size(); ++c) {
    for (double x : counts[c]) total[c] += x;
    totals[cols[c]] = int64_t(total[c]);
    med[cols[c]] = median(counts[c]);
  }
  for (size_t c = 1; c < cols.size(); ++c) {
    for (int base = 0; base < 2; ++base) {
      if (c == 1 && base == 1) continue;
      std::string key = cols[c] + "/" + cols[size_t(base)];
      rt[key] = total[size_t(base)] > 0 ? round4(total[c] / total[size_t(base)]) : 0.0;
      mr[key] = round4(median(ratios[c * 2 + size_t(base)]));
    }
  }
  json out = {{"tokenizer", "qwen3"},
              {"tvmscript_dialect", "sblock"},
              {"programs", programs.size()},
              {"compared", compared},
              {"excluded", excluded},
              {"totals", totals},
              {"median", med},
              {"ratio_of_totals", rt},
              {"median_ratio", mr},
              {"prelude_tokens", {{"cpp", tok.count(backend::cpu::cpu_prelude())},
                                  {"cuda", tok.count(backend::cuda::cuda_prelude())}}}};
  if (per_program) out["per_program"] = per;
  return out;
}

}  // namespace steptp::dataset
