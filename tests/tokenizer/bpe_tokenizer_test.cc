// BpeTokenizer vs Hugging Face `tokenizers`: a seeded corpus (gen_corpus.py) is tokenized by
// hf_oracle.py in the project venv (.venv, made by the setup script) and by the C++ class;
// every id sequence and decoded string must be identical.
#include "front/tokenizer/bpe_tokenizer.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <thread>

namespace steptp::tokenizer {
namespace {

namespace fs = std::filesystem;

std::string qwen3_path() { return std::string(STEPTP_SHARED_DIR) + "/tokenizers/qwen3/tokenizer.json"; }

const BpeTokenizer& tok() {
  static const BpeTokenizer t = BpeTokenizer::load(qwen3_path());
  return t;
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::vector<nlohmann::json> read_jsonl(const fs::path& p) {
  std::ifstream in(p);
  std::vector<nlohmann::json> out;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) out.push_back(nlohmann::json::parse(line));
  }
  return out;
}

std::string show(const std::string& s) { return nlohmann::json(s).dump(); }  // escaped, one line

TEST(BpeTokenizer, KnownIds) {
  // Ids taken from HF tokenizers 0.23 on the same tokenizer.json.
  using V = std::vector<int32_t>;
  EXPECT_EQ(tok().encode("Hello, world!"), (V{9707, 11, 1879, 0}));
  EXPECT_EQ(tok().encode("<|im_start|>user\n"), (V{151644, 872, 198}));
  EXPECT_EQ(tok().encode("x<think>y</think>"), (V{87, 151667, 88, 151668}));
  EXPECT_EQ(tok().encode("e\u0301"), (V{963}));  // NFC -> U+00E9
  EXPECT_EQ(tok().encode("\u00e9"), (V{963}));
  EXPECT_EQ(tok().encode("a \xC2\x85\xC2\x85" "b"), (V{64, 2139, 227, 126, 227, 65}));  // U+0085 is \s
  EXPECT_EQ(tok().encode("  \t\n\n  x  "), (V{256, 15799, 220, 856, 256}));
  EXPECT_EQ(tok().encode("it'\u017fx OK'S"), (V{275, 6, 144815, 87, 10402, 13272}));
  EXPECT_TRUE(tok().encode("").empty());
  EXPECT_EQ(tok().count("Hello, world!"), 4u);
  EXPECT_EQ(tok().token_to_id("<|im_end|>"), 151645);
  EXPECT_EQ(tok().token_to_id("\xC4\xA0world"), 1879);  // "Ġworld"
  EXPECT_FALSE(tok().token_to_id("no such token at all").has_value());
  EXPECT_EQ(tok().vocab_size(), 151669u);
}

TEST(BpeTokenizer, DecodeRoundTripAndLossy) {
  const std::string s = "<|im_start|>assistant\n<think>\n名前 😀 déjà vu</think>\tx  \n";
  EXPECT_EQ(tok().decode(tok().encode(s)), s);
  // Half of a multi-byte char decodes to U+FFFD, unknown ids are skipped (HF behaviour).
  const auto ids = tok().encode("名");
  ASSERT_FALSE(ids.empty());
  const auto byte_e5 = tok().token_to_id("\xC3\xA5");  // byte 0xE5 as a byte-level symbol "å"
  ASSERT_TRUE(byte_e5.has_value());
  EXPECT_EQ(tok().decode({9707, *byte_e5, 99999999, -1}), "Hello\xEF\xBF\xBD");
  // Ill-formed UTF-8 input is read as U+FFFD.
  EXPECT_EQ(tok().encode("a\xFF" "b"), tok().encode("a\xEF\xBF\xBD" "b"));
}

TEST(BpeTokenizer, LoadErrorsAreClear) {
  try {
    BpeTokenizer::load("/nonexistent/tokenizer.json");
    FAIL() << "expected std::runtime_error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/tokenizer.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("cannot open"), std::string::npos) << e.what();
  }
  const fs::path bad = fs::path(STEPTP_BINARY_DIR) / "tokenizer_bad.json";
  std::ofstream(bad) << "{\"model\": {\"type\": \"Unigram\"";
  EXPECT_THROW(BpeTokenizer::load(bad.string()), std::runtime_error);
  std::ofstream(bad, std::ios::trunc) << R"({"normalizer": {"type": "NFKC"}, "model": {}})";
  try {
    BpeTokenizer::load(bad.string());
    FAIL() << "expected std::runtime_error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("unsupported normalizer"), std::string::npos) << e.what();
  }
}

TEST(BpeTokenizer, DefaultPath) {
  const char* old = getenv("STEPTP_SHARED");
  const std::string saved = old ? old : "";
  setenv("STEPTP_SHARED", STEPTP_SHARED_DIR, 1);
  EXPECT_TRUE(fs::equivalent(default_qwen3_path(), qwen3_path()));
  unsetenv("STEPTP_SHARED");
  // Found from the test executable's ancestors (build dir inside the checkout).
  EXPECT_TRUE(fs::is_regular_file(default_qwen3_path())) << default_qwen3_path();
  if (old) setenv("STEPTP_SHARED", saved.c_str(), 1);
}

TEST(BpeTokenizer, LoadTime) {
  const auto t0 = std::chrono::steady_clock::now();
  const auto t = BpeTokenizer::load(qwen3_path());
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("load: %.3f s\n", s);
  EXPECT_EQ(t.encode("Hello, world!").size(), 4u);
  // Target is < 1 s; the bound leaves room for a loaded 2-core CI machine.
  EXPECT_LT(s, 5.0);
}

TEST(BpeTokenizer, ThreadSafeEncode) {
  const std::string s = "The tile loop's stride isn't 32; we'll re-check it. 名前 \u00e9\n";
  const auto expect = tok().encode(s);
  std::vector<std::thread> ts;
  std::vector<int> ok(4, 0);
  for (int k = 0; k < 4; ++k) {
    ts.emplace_back([&, k] {
      bool all = true;
      for (int i = 0; i < 200; ++i) all = all && tok().encode(s + std::to_string(i % 7)).size() >= expect.size();
      ok[k] = all && tok().encode(s) == expect;
    });
  }
  for (auto& t : ts) t.join();
  for (int v : ok) EXPECT_TRUE(v);
}

TEST(BpeTokenizer, MatchesHuggingFaceOnCorpus) {
  const fs::path src = STEPTP_SOURCE_DIR;
  const fs::path py = src / ".venv" / "bin" / "python3";
  if (!fs::exists(py)) {
    GTEST_SKIP() << "no " << py << ": create it with `/usr/bin/python3 -m venv --system-site-packages .venv && "
                 << ".venv/bin/pip install tokenizers` (the project's setup script does this)";
  }
  const fs::path work = fs::path(STEPTP_BINARY_DIR) / "tokenizer_oracle";
  fs::create_directories(work);
  const fs::path corpus = work / "corpus.jsonl", oracle = work / "hf_ids.jsonl";
  fs::remove(oracle);
  const std::string gen = shell_quote(py.string()) + " " + shell_quote((src / "tests/tokenizer/gen_corpus.py").string()) +
                          " " + shell_quote(STEPTP_SHARED_DIR) + " " + shell_quote(corpus.string());
  ASSERT_EQ(std::system(gen.c_str()), 0) << gen;
  const std::string run = shell_quote(py.string()) + " " + shell_quote((src / "tests/tokenizer/hf_oracle.py").string()) +
                          " " + shell_quote(qwen3_path()) + " " + shell_quote(corpus.string()) + " " +
                          shell_quote(oracle.string());
  ASSERT_EQ(std::system(run.c_str()), 0) << run << "\n(is `tokenizers` installed in the venv?)";

  const auto inputs = read_jsonl(corpus);
  const auto expected = read_jsonl(oracle);
  ASSERT_EQ(inputs.size(), expected.size());
  ASSERT_GE(inputs.size(), 1000u);
  size_t bad = 0, tokens = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string text = inputs[i]["text"].get<std::string>();
    const auto want = expected[i]["ids"].get<std::vector<int32_t>>();
    const auto got = tok().encode(text);
    tokens += got.size();
    const bool same = got == want && tok().count(text) == want.size() &&
                      tok().decode(got) == expected[i]["decoded"].get<std::string>();
    if (!same && ++bad <= 10) {
      ADD_FAILURE() << "string " << i << " (" << inputs[i]["kind"].get<std::string>() << "): " << show(text)
                    << "\n  hf:  " << nlohmann::json(want).dump() << "\n  c++: " << nlohmann::json(got).dump();
    }
  }
  std::printf("compared %zu strings (%zu tokens): %zu differ\n", inputs.size(), tokens, bad);
  EXPECT_EQ(bad, 0u);
}

}  // namespace
}  // namespace steptp::tokenizer
