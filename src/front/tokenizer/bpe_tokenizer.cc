// Byte-level BPE matching Hugging Face `tokenizers` (see bpe_tokenizer.h).
//
// Pipeline, in HF's order:
//   1. split out added tokens (leftmost-longest) on the raw text,
//   2. NFC-normalize each remaining segment (ICU),
//   3. pre-tokenize with the json's Split regex (PCRE2, UTF + UCP),
//   4. map bytes to GPT-2 byte-level symbols and apply BPE merges by rank.
#include "front/tokenizer/bpe_tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <unicode/bytestream.h>
#include <unicode/normalizer2.h>
#include <unicode/utf8.h>
#include <unistd.h>

#include <array>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <queue>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/error.h"

namespace steptp::tokenizer {
namespace {

using json = nlohmann::json;

// Words longer than this are not cached: long whitespace or symbol runs are
// rare and would only bloat the cache.
constexpr size_t kMaxCachedWordBytes = 256;
// The cache is dropped wholesale when it grows past this many words.
constexpr size_t kMaxCacheEntries = 1u << 20;

// Replaces ill-formed UTF-8 by U+FFFD (maximal-subpart substitution, the
// same policy as Rust's String::from_utf8_lossy used by HF's decoder).
std::string to_valid_utf8(std::string_view s) {
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  const int64_t n = static_cast<int64_t>(s.size());
  bool valid = true;
  for (int64_t i = 0; i < n && valid;) {
    UChar32 c;
    U8_NEXT(p, i, n, c);
    valid = c >= 0;
  }
  if (valid) return std::string(s);
  std::string out;
  out.reserve(s.size() + 8);
  for (int64_t i = 0; i < n;) {
    const int64_t start = i;
    UChar32 c;
    U8_NEXT(p, i, n, c);
    if (c < 0) {
      out += "\xEF\xBF\xBD";
    } else {
      out.append(s.data() + start, static_cast<size_t>(i - start));
    }
  }
  return out;
}

// GPT-2's byte -> printable code point table used by the ByteLevel
// pre-tokenizer/decoder: printable Latin-1 bytes map to themselves, the
// others to 256, 257, ... in byte order.
std::array<UChar32, 256> byte_to_codepoint() {
  std::array<UChar32, 256> table{};
  UChar32 next = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174);
    table[b] = printable ? b : next++;
  }
  return table;
}

std::string codepoint_utf8(UChar32 c) {
  char buf[4];
  int32_t len = 0;
  U8_APPEND_UNSAFE(reinterpret_cast<uint8_t*>(buf), len, c);  // c < 512: always valid
  return std::string(buf, static_cast<size_t>(len));
}

// HF compiles the Split pattern with Oniguruma, whose Unicode `\s` is
// [\t-\r\x{85}\p{Z}] = the White_Space property. PCRE2's UCP `\s` also
// matches U+180E (MONGOLIAN VOWEL SEPARATOR, format char since Unicode 6.3),
// which the corpus test caught; so rewrite `\s`/`\S` (also inside classes)
// to \p{White_Space} / \P{White_Space}.
std::string translate_pattern(const std::string& pat) {
  std::string out;
  out.reserve(pat.size() + 32);
  for (size_t i = 0; i < pat.size(); ++i) {
    if (pat[i] == '\\' && i + 1 < pat.size()) {
      const char e = pat[i + 1];
      if (e == 's') {
        out += "\\p{White_Space}";
      } else if (e == 'S') {
        out += "\\P{White_Space}";
      } else {
        out += pat[i];
        out += e;
      }
      ++i;
      continue;
    }
    out += pat[i];
  }
  return out;
}

std::string pcre2_message(int code) {
  PCRE2_UCHAR buf[256];
  pcre2_get_error_message(code, buf, sizeof(buf));
  return reinterpret_cast<const char*>(buf);
}

uint64_t pair_key(int32_t a, int32_t b) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
}

bool empty_or_null(const json& j, const char* key) {
  return !j.contains(key) || j[key].is_null() || (j[key].is_string() && j[key].get<std::string>().empty());
}

bool false_or_null(const json& j, const char* key) {
  return !j.contains(key) || j[key].is_null() || (j[key].is_boolean() && !j[key].get<bool>());
}

}  // namespace

struct BpeTokenizer::Impl {
  std::string path;
  bool nfc = false;
  bool ignore_merges = false;

  std::unordered_map<std::string, int32_t> vocab;     // byte-level spelling -> id
  std::vector<std::string> id_to_token;                // decoded bytes per id
  std::vector<uint8_t> id_known;                       // 1 if id_to_token[id] is set
  std::array<int32_t, 256> byte_id{};                  // id of each single byte
  std::array<std::string, 256> byte_sym;               // byte-level symbol of each byte
  std::unordered_map<uint64_t, std::pair<int32_t, int32_t>> merges;  // (a,b) -> (rank, new id)

  struct Added {
    std::string content;
    int32_t id;
  };
  std::vector<Added> added;                             // sorted by length, longest first
  std::array<bool, 256> added_first{};                  // first bytes of added tokens

  pcre2_code* re = nullptr;

  mutable std::mutex cache_mu;
  mutable std::unordered_map<std::string, std::vector<int32_t>> cache;

  ~Impl() {
    if (re) pcre2_code_free(re);
  }

  [[noreturn]] void fail(const std::string& why) const {
    throw base::Error(base::ErrorKind::Invalid, fmt::format("tokenizer {}: {}", path, why));
  }

  void parse(const json& j);
  void parse_model(const json& m);
  void parse_pre_tokenizer(const json& p);

  std::string normalize(std::string_view seg) const;
  template <class Emit>
  void pre_tokenize(const std::string& text, Emit&& emit) const;
  void bpe(std::string_view word, std::vector<int32_t>& out) const;
  std::vector<int32_t> bpe_cached(std::string_view word) const;
  template <class Emit>
  void encode(std::string_view utf8, Emit&& emit) const;
};

void BpeTokenizer::Impl::parse(const json& j) {
  // Normalizer: the Qwen files use NFC; none is also fine.
  const json& norm = j.value("normalizer", json());
  if (norm.is_null()) {
    nfc = false;
  } else if (norm.value("type", "") == "NFC") {
    nfc = true;
  } else {
    fail(fmt::format("unsupported normalizer {}", norm.dump()));
  }
  parse_pre_tokenizer(j.value("pre_tokenizer", json()));

  const json& dec = j.value("decoder", json());
  if (!dec.is_null() && dec.value("type", "") != "ByteLevel") {
    fail(fmt::format("unsupported decoder {}", dec.dump()));
  }
  if (!j.contains("model")) fail("no \"model\" section");
  parse_model(j["model"]);

  // Added tokens override / extend the model vocab.
  for (const json& a : j.value("added_tokens", json::array())) {
    const std::string content = a.at("content").get<std::string>();
    const int32_t id = a.at("id").get<int32_t>();
    if (a.value("lstrip", false) || a.value("rstrip", false) || a.value("single_word", false) ||
        a.value("normalized", false)) {
      // HF matches normalized tokens on normalized text and strips spaces
      // around lstrip/rstrip ones; the Qwen files use none of that.
      fail(fmt::format("added token {} uses lstrip/rstrip/single_word/normalized (unsupported)", content));
    }
    if (content.empty()) fail("empty added token");
    added.push_back({content, id});
    if (static_cast<size_t>(id) >= id_to_token.size()) {
      id_to_token.resize(static_cast<size_t>(id) + 1);
      id_known.resize(static_cast<size_t>(id) + 1, 0);
    }
    id_to_token[static_cast<size_t>(id)] = content;  // decoded as its raw text
    id_known[static_cast<size_t>(id)] = 1;
    added_first[static_cast<uint8_t>(content[0])] = true;
  }
  std::stable_sort(added.begin(), added.end(),
                   [](const Added& a, const Added& b) { return a.content.size() > b.content.size(); });
}

void BpeTokenizer::Impl::parse_pre_tokenizer(const json& p) {
  // Expected: Sequence[Split(regex, Isolated), ByteLevel(use_regex=false)].
  if (p.value("type", "") != "Sequence") fail(fmt::format("unsupported pre_tokenizer {}", p.dump()));
  const json& seq = p.at("pretokenizers");
  if (seq.size() != 2) fail("pre_tokenizer Sequence must be [Split, ByteLevel]");
  const json& split = seq[0];
  const json& bl = seq[1];
  if (split.value("type", "") != "Split" || split.value("behavior", "") != "Isolated" ||
      split.value("invert", false) || !split.contains("pattern") || !split["pattern"].contains("Regex")) {
    fail(fmt::format("unsupported Split pre-tokenizer {}", split.dump()));
  }
  if (bl.value("type", "") != "ByteLevel" || bl.value("add_prefix_space", false) || bl.value("use_regex", true)) {
    fail(fmt::format("unsupported ByteLevel pre-tokenizer {}", bl.dump()));
  }
  const std::string pat = translate_pattern(split["pattern"]["Regex"].get<std::string>());
  int err = 0;
  PCRE2_SIZE err_off = 0;
  re = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pat.data()), pat.size(), PCRE2_UTF | PCRE2_UCP, &err, &err_off,
                     nullptr);
  if (!re) fail(fmt::format("cannot compile split regex at offset {}: {}", err_off, pcre2_message(err)));
  // JIT is an optimisation only; the interpreter gives the same matches.
  pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);
}

void BpeTokenizer::Impl::parse_model(const json& m) {
  if (m.value("type", "") != "BPE") fail(fmt::format("unsupported model type {}", m.value("type", "?")));
  if (!empty_or_null(m, "continuing_subword_prefix") || !empty_or_null(m, "end_of_word_suffix") ||
      !false_or_null(m, "byte_fallback") || !(m.contains("dropout") ? m["dropout"].is_null() : true)) {
    fail("BPE options continuing_subword_prefix/end_of_word_suffix/byte_fallback/dropout are unsupported");
  }
  ignore_merges = m.value("ignore_merges", false);

  const auto b2c = byte_to_codepoint();
  std::unordered_map<UChar32, uint8_t> c2b;
  for (int b = 0; b < 256; ++b) {
    byte_sym[b] = codepoint_utf8(b2c[b]);
    c2b[b2c[b]] = static_cast<uint8_t>(b);
  }

  const json& v = m.at("vocab");
  vocab.reserve(v.size() * 2);
  int32_t max_id = -1;
  for (auto it = v.begin(); it != v.end(); ++it) max_id = std::max(max_id, it.value().get<int32_t>());
  id_to_token.assign(static_cast<size_t>(max_id + 1), std::string());
  id_known.assign(static_cast<size_t>(max_id + 1), 0);
  for (auto it = v.begin(); it != v.end(); ++it) {
    const int32_t id = it.value().get<int32_t>();
    if (id < 0) fail("negative id in vocab");
    const std::string& tok = it.key();
    // Decoded bytes: every char back through the byte table; a token with a
    // char outside it decodes to its raw UTF-8 (HF ByteLevel decoder rule).
    std::string bytes;
    bool all_mapped = true;
    const auto* p = reinterpret_cast<const uint8_t*>(tok.data());
    const int64_t n = static_cast<int64_t>(tok.size());
    for (int64_t i = 0; i < n;) {
      UChar32 c;
      U8_NEXT(p, i, n, c);
      auto f = c2b.find(c);
      if (f == c2b.end()) {
        all_mapped = false;
        break;
      }
      bytes += static_cast<char>(f->second);
    }
    id_to_token[static_cast<size_t>(id)] = all_mapped ? bytes : tok;
    id_known[static_cast<size_t>(id)] = 1;
    vocab.emplace(tok, id);
  }
  for (int b = 0; b < 256; ++b) {
    auto f = vocab.find(byte_sym[b]);
    if (f == vocab.end()) fail(fmt::format("byte-level symbol for byte {} missing from vocab", b));
    byte_id[b] = f->second;
  }

  const json& ms = m.at("merges");
  merges.reserve(ms.size() * 2);
  auto id_of = [&](const std::string& t) {
    auto f = vocab.find(t);
    if (f == vocab.end()) fail(fmt::format("merge token \"{}\" not in vocab", t));
    return f->second;
  };
  int32_t rank = 0;
  for (const json& e : ms) {
    std::string a, b;
    if (e.is_array() && e.size() == 2) {  // newer format: ["a", "b"]
      a = e[0].get<std::string>();
      b = e[1].get<std::string>();
    } else if (e.is_string()) {  // older format: "a b"
      const std::string s = e.get<std::string>();
      const size_t sp = s.find(' ');
      if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos) fail("bad merge " + s);
      a = s.substr(0, sp);
      b = s.substr(sp + 1);
    } else {
      fail("bad merge entry " + e.dump());
    }
    // Later duplicates win, as with HF's HashMap collect.
    merges[pair_key(id_of(a), id_of(b))] = {rank++, id_of(a + b)};
  }
}

std::string BpeTokenizer::Impl::normalize(std::string_view seg) const {
  if (!nfc) return std::string(seg);
  UErrorCode st = U_ZERO_ERROR;
  const icu::Normalizer2* n2 = icu::Normalizer2::getNFCInstance(st);
  if (U_FAILURE(st)) throw base::Error(base::ErrorKind::Failed, std::string("ICU NFC unavailable: ") + u_errorName(st));
  const icu::StringPiece sp(seg.data(), static_cast<int32_t>(seg.size()));
  if (n2->isNormalizedUTF8(sp, st) && U_SUCCESS(st)) return std::string(seg);
  st = U_ZERO_ERROR;
  std::string out;
  icu::StringByteSink<std::string> sink(&out, static_cast<int32_t>(seg.size()));
  n2->normalizeUTF8(0, sp, sink, nullptr, st);
  if (U_FAILURE(st)) throw base::Error(base::ErrorKind::Failed, std::string("ICU NFC failed: ") + u_errorName(st));
  return out;
}

template <class Emit>
void BpeTokenizer::Impl::pre_tokenize(const std::string& text, Emit&& emit) const {
  pcre2_match_data* md = pcre2_match_data_create_from_pattern(re, nullptr);
  if (!md) throw std::bad_alloc();
  struct Free {
    pcre2_match_data* m;
    ~Free() { pcre2_match_data_free(m); }
  } guard{md};
  const auto* subj = reinterpret_cast<PCRE2_SPTR>(text.data());
  const size_t n = text.size();
  size_t off = 0, last = 0;
  while (off < n) {
    // Text is valid UTF-8 (to_valid_utf8 + ICU output), so skip the check.
    const int rc = pcre2_match(re, subj, n, off, PCRE2_NO_UTF_CHECK, md, nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) throw base::Error(base::ErrorKind::Failed, "pcre2_match failed: " + pcre2_message(rc));
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    const size_t s = ov[0], e = ov[1];
    if (s > last) emit(std::string_view(text).substr(last, s - last));  // Isolated: gaps are pieces too
    if (e == s) {  // empty match (not produced by the Qwen pattern): step one char
      off = s + 1;
      while (off < n && (static_cast<uint8_t>(text[off]) & 0xC0) == 0x80) ++off;
      last = s;
      continue;
    }
    emit(std::string_view(text).substr(s, e - s));
    last = off = e;
  }
  if (last < n) emit(std::string_view(text).substr(last));
}

// One word through BPE, mirroring HF's Word::merge_all: a min-heap of
// (rank, position) over adjacent pairs; stale entries are skipped.
void BpeTokenizer::Impl::bpe(std::string_view word, std::vector<int32_t>& out) const {
  if (ignore_merges) {
    std::string sym;
    for (char c : word) sym += byte_sym[static_cast<uint8_t>(c)];
    if (auto f = vocab.find(sym); f != vocab.end()) {
      out.push_back(f->second);
      return;
    }
  }
  struct Sym {
    int32_t id;
    int32_t prev, next;
    bool alive;
  };
  const int32_t n = static_cast<int32_t>(word.size());
  std::vector<Sym> syms(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) {
    syms[i] = {byte_id[static_cast<uint8_t>(word[i])], i - 1, i + 1 < n ? i + 1 : -1, true};
  }
  struct Merge {
    int32_t rank, pos, new_id;
    bool operator>(const Merge& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::priority_queue<Merge, std::vector<Merge>, std::greater<Merge>> q;
  auto lookup = [&](int32_t a, int32_t b) -> const std::pair<int32_t, int32_t>* {
    auto f = merges.find(pair_key(a, b));
    return f == merges.end() ? nullptr : &f->second;
  };
  for (int32_t i = 0; i + 1 < n; ++i) {
    if (auto* m = lookup(syms[i].id, syms[i + 1].id)) q.push({m->first, i, m->second});
  }
  while (!q.empty()) {
    const Merge top = q.top();
    q.pop();
    Sym& left = syms[top.pos];
    if (!left.alive || left.next < 0) continue;
    const int32_t rpos = left.next;
    Sym& right = syms[rpos];
    const auto* m = lookup(left.id, right.id);
    if (!m || m->second != top.new_id) continue;
    left.id = top.new_id;
    left.next = right.next;
    right.alive = false;
    if (right.next >= 0) syms[right.next].prev = top.pos;
    if (left.prev >= 0) {
      if (auto* pm = lookup(syms[left.prev].id, left.id)) q.push({pm->first, left.prev, pm->second});
    }
    if (left.next >= 0) {
      if (auto* nm = lookup(left.id, syms[left.next].id)) q.push({nm->first, top.pos, nm->second});
    }
  }
  for (int32_t i = 0; i >= 0 && i < n; i = syms[i].next) out.push_back(syms[i].id);
}

std::vector<int32_t> BpeTokenizer::Impl::bpe_cached(std::string_view word) const {
  const bool cacheable = word.size() <= kMaxCachedWordBytes;
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mu);
    if (auto f = cache.find(std::string(word)); f != cache.end()) return f->second;
  }
  std::vector<int32_t> ids;
  bpe(word, ids);
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mu);
    if (cache.size() >= kMaxCacheEntries) cache.clear();
    cache.emplace(std::string(word), ids);
  }
  return ids;
}

template <class Emit>
void BpeTokenizer::Impl::encode(std::string_view input, Emit&& emit) const {
  const std::string text = to_valid_utf8(input);
  auto plain = [&](std::string_view seg) {
    if (seg.empty()) return;
    pre_tokenize(normalize(seg), [&](std::string_view word) { emit(bpe_cached(word)); });
  };
  // Added tokens are all normalized=false, so HF finds them in the raw text
  // first (leftmost match, longest token at that position), then normalizes
  // and pre-tokenizes only the text between them.
  size_t seg_start = 0;
  for (size_t i = 0; i < text.size();) {
    if (added_first[static_cast<uint8_t>(text[i])]) {
      const Added* hit = nullptr;
      for (const Added& a : added) {  // longest first
        if (text.compare(i, a.content.size(), a.content) == 0) {
          hit = &a;
          break;
        }
      }
      if (hit) {
        plain(std::string_view(text).substr(seg_start, i - seg_start));
        emit(std::vector<int32_t>{hit->id});
        i += hit->content.size();
        seg_start = i;
        continue;
      }
    }
    ++i;
  }
  plain(std::string_view(text).substr(seg_start));
}

BpeTokenizer::BpeTokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
BpeTokenizer::BpeTokenizer(BpeTokenizer&&) noexcept = default;
BpeTokenizer& BpeTokenizer::operator=(BpeTokenizer&&) noexcept = default;
BpeTokenizer::~BpeTokenizer() = default;

BpeTokenizer BpeTokenizer::load(const std::string& path) {
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  std::ifstream in(path, std::ios::binary);
  if (!in) impl->fail("cannot open file (set STEPTP_SHARED to the shared/ folder?)");
  std::ostringstream buf;
  buf << in.rdbuf();
  json j;
  try {
    j = json::parse(buf.str());
    impl->parse(j);
  } catch (const json::exception& e) {
    impl->fail(std::string("malformed tokenizer.json: ") + e.what());
  }
  return BpeTokenizer(std::move(impl));
}

std::vector<int32_t> BpeTokenizer::encode(std::string_view utf8) const {
  std::vector<int32_t> out;
  out.reserve(utf8.size() / 3 + 4);
  impl_->encode(utf8, [&](const std::vector<int32_t>& ids) { out.insert(out.end(), ids.begin(), ids.end()); });
  return out;
}

size_t BpeTokenizer::count(std::string_view utf8) const {
  size_t n = 0;
  impl_->encode(utf8, [&](const std::vector<int32_t>& ids) { n += ids.size(); });
  return n;
}

std::string BpeTokenizer::decode(const std::vector<int32_t>& ids) const {
  std::string bytes;
  for (int32_t id : ids) {
    if (id >= 0 && static_cast<size_t>(id) < impl_->id_known.size() && impl_->id_known[static_cast<size_t>(id)]) {
      bytes += impl_->id_to_token[static_cast<size_t>(id)];
    }
  }
  return to_valid_utf8(bytes);
}

size_t BpeTokenizer::vocab_size() const { return impl_->id_to_token.size(); }

std::optional<int32_t> BpeTokenizer::token_to_id(std::string_view token) const {
  for (const auto& a : impl_->added) {
    if (a.content == token) return a.id;
  }
  if (auto f = impl_->vocab.find(std::string(token)); f != impl_->vocab.end()) return f->second;
  return std::nullopt;
}

std::string default_qwen3_path() {
  namespace fs = std::filesystem;
  const fs::path rel = fs::path("tokenizers") / "qwen3" / "tokenizer.json";
  std::error_code ec;
  std::vector<fs::path> candidates;
  if (const char* env = std::getenv("STEPTP_SHARED"); env && *env) candidates.push_back(fs::path(env) / rel);
  candidates.push_back(fs::path("..") / "shared" / rel);
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    for (fs::path d = exe.parent_path(); !d.empty(); d = d.parent_path()) {
      candidates.push_back(d / "shared" / rel);
      if (d == d.root_path()) break;
    }
  }
  for (const auto& c : candidates) {
    if (fs::is_regular_file(c, ec)) return c.lexically_normal().string();
  }
  return candidates.front().string();
}

}  // namespace steptp::tokenizer
