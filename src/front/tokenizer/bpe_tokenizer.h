// Byte-level BPE tokenizer that reproduces Hugging Face `tokenizers` exactly
// for Qwen2/Qwen3-style tokenizer.json files (NFC normalizer, regex Split +
// ByteLevel pre-tokenizer, BPE model, ByteLevel decoder, added tokens).
//
// The header stays light: JSON, PCRE2 and ICU are implementation details.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace steptp::tokenizer {

class BpeTokenizer {
 public:
  // Parses a Hugging Face tokenizer.json. Throws base::Error (Invalid) with the
  // path and the reason when the file is missing, malformed, or uses a
  // normalizer / pre-tokenizer / model this class does not implement.
  static BpeTokenizer load(const std::string& tokenizer_json_path);

  BpeTokenizer(BpeTokenizer&&) noexcept;
  BpeTokenizer& operator=(BpeTokenizer&&) noexcept;
  ~BpeTokenizer();

  // Same ids as HF `Tokenizer.encode(text, add_special_tokens=False).ids`.
  // Added tokens (e.g. <|im_start|>, <think>) occurring in the text are
  // recognised. Ill-formed UTF-8 is first replaced by U+FFFD (like Rust's
  // String::from_utf8_lossy). Thread-safe: the per-word cache is locked.
  std::vector<int32_t> encode(std::string_view utf8) const;

  // Same text as HF `Tokenizer.decode(ids, skip_special_tokens=False)`:
  // special tokens are kept; like HF, ids outside the vocabulary are skipped
  // and ill-formed UTF-8 (e.g. a cut multi-byte char) becomes U+FFFD.
  std::string decode(const std::vector<int32_t>& ids) const;

  // encode(utf8).size() without building the id vector.
  size_t count(std::string_view utf8) const;

  // Model vocab plus added tokens (largest id + 1).
  size_t vocab_size() const;
  // Id of a vocab token (byte-level spelling) or of an added token.
  std::optional<int32_t> token_to_id(std::string_view token) const;

 private:
  struct Impl;
  explicit BpeTokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Path of the Qwen3 tokenizer.json in the project's shared/ data folder
// (shared/tokenizers/qwen3/tokenizer.json). The shared/ folder is looked up,
// first hit wins:
//   1. $STEPTP_SHARED (the shared/ folder itself), if the variable is set;
//   2. ../shared relative to the current working directory (the repo root);
//   3. <dir>/shared for each ancestor <dir> of the running executable's
//      folder (e.g. build/src/steptp -> build/src, build, repo, repo/..),
//      which finds ../shared beside the checkout from any build folder.
// If none exists, returns candidate 1 (or 2 when $STEPTP_SHARED is unset),
// so that load() reports a clear "cannot open" error for that path.
std::string default_qwen3_path();

}  // namespace steptp::tokenizer
