#include "ir/analysis/names.h"

#include "ir/analysis/structure.h"

namespace steptp::analysis {

namespace {
const char* kVarLetters = "acdfghijkmnopqrsuvwxyz";
const char* kTensorLetters = "ACDEFGHIJKMNOQRSWXYZ";

std::string nth_name(const char* alphabet, size_t n) {
  size_t k = std::char_traits<char>::length(alphabet);
  if (n < k) return std::string(1, alphabet[n]);
  n -= k;
  return std::string(1, alphabet[(n / k) % k]) + alphabet[n % k] + (n >= k * k ? std::to_string(n / (k * k)) : "");
}
}  // namespace

bool is_axis_name(const std::string& v) {
  if (v.size() < 2) return false;
  return (v[0] == 't' || v[0] == 'b') && (v[1] == 'x' || v[1] == 'y' || v[1] == 'z');
}

NameAllocator::NameAllocator(const leir::Program& p) {
  taken_ = tensor_names(p);
  for (const auto& v : loop_vars(p.body)) taken_.insert(v);
  taken_.insert("inf");
}

std::string NameAllocator::fresh_tensor() {
  for (size_t n = 0;; ++n) {
    std::string s = nth_name(kTensorLetters, n);
    if (!taken_.count(s)) {
      taken_.insert(s);
      return s;
    }
  }
}

std::string NameAllocator::fresh_var() {
  for (size_t n = 0;; ++n) {
    std::string s = nth_name(kVarLetters, n);
    if (!taken_.count(s) && !is_axis_name(s)) {
      taken_.insert(s);
      return s;
    }
  }
}

std::string NameAllocator::fresh_axis_var(const std::string& axis) {
  if (!taken_.count(axis)) {
    taken_.insert(axis);
    return axis;
  }
  for (size_t n = 0;; ++n) {
    std::string s = axis + nth_name(kVarLetters, n);
    if (!taken_.count(s)) {
      taken_.insert(s);
      return s;
    }
  }
}

std::vector<std::string> standalone_vars(size_t n) {
  std::vector<std::string> out;
  for (size_t i = 0; i < n; ++i) out.push_back(nth_name(kVarLetters, i));
  return out;
}

}  // namespace steptp::analysis
