// steptp tokens FILE... [--json] [--tokenizer PATH]: Qwen3 token count of each file and the total.
// Files are read as raw bytes (ill-formed UTF-8 counts as U+FFFD, as HF would see it).
// Exit codes: 0 success, 1 a file or the tokenizer cannot be read.
#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/command.h"
#include "tokenizer/bpe_tokenizer.h"

namespace steptp::cli {
namespace {

RegisterCommand reg{{"tokens", "count Qwen3 tokens of each file (and the total)", [](CLI::App& sub) {
  auto files = std::make_shared<std::vector<std::string>>();
  auto json = std::make_shared<bool>(false);
  auto tok_path = std::make_shared<std::string>();
  sub.add_option("FILE", *files, "text files to tokenize")->required();
  sub.add_flag("--json", *json, "print {\"files\":[{\"path\",\"tokens\",\"bytes\"}],\"total\":N}");
  sub.add_option("--tokenizer", *tok_path,
                 "tokenizer.json (default: shared/tokenizers/qwen3/tokenizer.json, found via "
                 "$STEPTP_SHARED, ../shared, or beside the executable's ancestors)");
  return [=]() -> int {
    const std::string path = tok_path->empty() ? tokenizer::default_qwen3_path() : *tok_path;
    const auto tok = tokenizer::BpeTokenizer::load(path);
    nlohmann::json out_files = nlohmann::json::array();
    size_t total = 0;
    for (const auto& f : *files) {
      std::ifstream in(f, std::ios::binary);
      if (!in) throw std::runtime_error(fmt::format("cannot open {}", f));
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
