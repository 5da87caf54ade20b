// Hashing and seed mixing shared by every module (header-only: no module depends on another
// for them). Both are part of the output format: program hashes name records and kernels, and
// seeds decide every random draw, so their values must never change.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace steptp::base {

inline constexpr uint64_t kFnvOffsetBasis = 0xcbf29ce484222325ULL;
// The basis that program hashes, workload seeds and the algebraic probes have always used (the
// FNV basis short of its last digit). Kept: changing it would rename every record's program
// hash and redraw every workload.
inline constexpr uint64_t kProgramHashBasis = 1469598103934665603ULL;

// 64-bit FNV-1a of `s`, continuing from `h` (the offset basis for a fresh hash).
inline uint64_t fnv1a(std::string_view s, uint64_t h = kFnvOffsetBasis) {
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

// A 64-bit hash as 16 lowercase hex digits (how program hashes are written in records and names).
inline std::string hex64(uint64_t h) { return fmt::format("{:016x}", h); }

// Mixes a seed with a stream number (SplitMix64 finalizer): independent draws per stream.
inline uint64_t mix_seed(uint64_t seed, uint64_t stream) {
  uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (stream + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace steptp::base
