// steptp tokens FILE... [--json] [--tokenizer PATH]: Qwen3 token count of each file and the total.
// Files are read as raw bytes (ill-formed UTF-8 counts as U+FFFD, as HF would see it).
// steptp tokens --compare PROGRAM_FILE... [--json]: tokens of each program's LEIR vs its
// TVMScript, C++ and CUDA C lowerings (apps/dataset/token_stats.h; the same numbers stats.json has).
// Exit codes: 0 success, 1 a file or the tokenizer cannot be read.
#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/error.h"
#include "driver/cli/command.h"
#include "front/onnx/onnx_import.h"
#include "apps/dataset/token_stats.h"
#include "ir/leir/program_io.h"
#include "front/tokenizer/bpe_tokenizer.h"

namespace steptp::cli {
namespace {

RegisterCommand tokens_cmd{{"tokens", "count Qwen3 tokens of each file (and the total)", [](CLI::App& sub) {
  auto files = std::make_shared<std::vector<std::string>>();
  auto json = std::make_shared<bool>(false);
  auto tok_path = std::make_shared<std::string>();
  auto compare = std::make_shared<bool>(false);
  sub.add_option("FILE", *files, "text files to tokenize")->required();
  sub.add_flag("--json", *json, "print {\"files\":[{\"path\",\"tokens\",\"bytes\"}],\"total\":N}");
  sub.add_flag("--compare", *compare,
               "FILEs are LEIR programs (.json/.jsonl/.leir): compare LEIR vs TVMScript/C++/CUDA token counts");
  sub.add_option("--tokenizer", *tok_path,
                 "tokenizer.json (default: shared/tokenizers/qwen3/tokenizer.json, found via "
                 "$STEPTP_SHARED, ../shared, or beside the executable's ancestors)");
  return [=]() -> int {
    const std::string path = tok_path->empty() ? tokenizer::default_qwen3_path() : *tok_path;
    const auto tok = tokenizer::BpeTokenizer::load(path);
    if (*compare) {
      std::vector<leir::Program> programs;
      for (const auto& f : *files)
        for (auto& p : onnx_import::read_programs_any(f)) programs.push_back(std::move(p));
      const auto cmp = dataset::compare_tokens(programs, tok, /*per_program=*/true);
      if (*json) {
        std::cout << cmp.dump() << "\n";
        return 0;
      }
      std::cout << fmt::format("{:<32}", "program");
      for (const auto& c : dataset::token_columns()) std::cout << fmt::format(" {:>10}", c);
      std::cout << "\n";
      for (const auto& r : cmp["per_program"]) {
        std::cout << fmt::format("{:<32}", r["name"].get<std::string>());
        for (const auto& c : dataset::token_columns()) std::cout << fmt::format(" {:>10}", r[c].get<int64_t>());
        std::cout << "\n";
      }
      std::cout << fmt::format("{:<32}", "total");
      for (const auto& c : dataset::token_columns()) std::cout << fmt::format(" {:>10}", cmp["totals"][c].get<int64_t>());
      std::cout << "\n";
      for (const auto& [k, v] : cmp["ratio_of_totals"].items())
        std::cout << fmt::format("ratio {:<22} {:.4f} (median per program {:.4f})\n", k, v.get<double>(),
                                 cmp["median_ratio"][k].get<double>());
      for (const auto& t : dataset::token_targets())
        for (const auto& [reason, n] : cmp["excluded"][t]["reasons"].items())
          std::cout << fmt::format("excluded by {}: {} x {}\n", t, n.get<int>(), reason);
      return 0;
    }
    nlohmann::json out_files = nlohmann::json::array();
    size_t total = 0;
    for (const auto& f : *files) {
      std::ifstream in(f, std::ios::binary);
      if (!in) throw base::Error(base::ErrorKind::Failed, fmt::format("cannot open {}", f));
      std::ostringstream buf;
      buf << in.rdbuf();
      const std::string text = buf.str();
      const size_t n = tok.count(text);
      total += n;
      if (*json) {
        out_files.push_back({{"path", f}, {"tokens", n}, {"bytes", text.size()}});
      } else {
        std::cout << fmt::format("{:>10}  {}\n", n, f);
      }
    }
    if (*json) {
      std::cout << nlohmann::json{{"files", out_files}, {"total", total}}.dump() << "\n";
    } else {
      std::cout << fmt::format("{:>10}  total\n", total);
    }
    return 0;
  };
}}};

}  // namespace
}  // namespace steptp::cli
