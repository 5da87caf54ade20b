// Compiles generated kernels with the system C++ compiler and loads them (dlopen), through a
// content-addressed disk cache.
//
// Key = hash(compiler identity, flags, glibc version (its libmvec runs the vector math), prelude,
// kernel code). A kernel's object lives at
// CACHE/<key>.so; the symbol is steptp_k_<key>. Kernels missing from the cache are compiled in
// batches: they are split into at most `jobs` chunks, each chunk one translation unit, one
// compiler process and one shared object, hard-linked under each of its keys (so later runs find
// each kernel alone); the chunks' processes run in parallel. With GCC the prelude is also
// precompiled once per cache dir and identity (CACHE/prelude-<hash>.h.gch, used through
// -include): parsing the standard headers the prelude includes is most of the cost of a small
// translation unit. GCC checks a PCH against the options and falls back to the textual header
// beside it when the PCH does not fit, so the PCH never changes what a kernel means; the key
// therefore does not depend on it. Writes go through temporary names and rename/link, so
// concurrent processes sharing a cache never see half-written files.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace steptp::backend::cpu {

struct CompilerOptions {
  std::string compiler = "c++";
  // -fno-tree-loop-if-convert: GCC 12.2 miscompiles if-converted loops that select between
  // floats under a byte-sized mask (found by the interpreter differential test on the f32 build
  // of MHA_max: `if_then_else(mask, -inf, x)` stored 0); loops without conditions still vectorize.
  std::vector<std::string> flags = {"-O3", "-march=native", "-fno-tree-loop-if-convert", "-fopenmp", "-shared", "-fPIC",
                                    "-std=c++17"};
  // Vectorized math functions (glibc libmvec, declared by the prelude under STEPTP_VECTOR_MATH):
  // adds -DSTEPTP_VECTOR_MATH and -fno-math-errno, which only stops exp/log/sqrt/... from
  // setting errno (so GCC may treat them as pure and vectorize them); IEEE results, NaN and inf
  // are unchanged. false: the scalar lowering (every call one libm call), for comparisons.
  bool vector_math = true;
  // Empty: $STEPTP_CACHE_DIR, else ~/.cache/steptp/kernels.
  std::string cache_dir;
  // Compiler processes run at once for one batch (and chunks a batch is split into);
  // 0: std::thread::hardware_concurrency().
  int jobs = 0;
  // Precompile the prelude (GCC only; other compilers get the prelude as text).
  bool precompiled_prelude = true;
};

using KernelFn = int (*)(void* const* args);

struct LoadedKernel {
  KernelFn fn = nullptr;
  std::string key;
  std::shared_ptr<void> library;  // keeps the shared object loaded
};

struct CompileResult {
  std::optional<LoadedKernel> kernel;
  std::string error;      // compiler diagnostics when kernel is empty
  bool cache_hit = false;
};

struct CompilerStats {
  int invocations = 0;  // compiler processes started for kernels (not counting the PCH)
  int batches = 0;      // compile() calls that had kernels to compile
  int pch_builds = 0;   // prelude precompilations (at most one per compiler, 0 when cached)
  int compiled = 0;     // kernels compiled
  int disk_hits = 0;    // kernels found in the disk cache
  int memory_hits = 0;  // kernels already loaded in this process
};

class KernelCompiler {
 public:
  explicit KernelCompiler(CompilerOptions o = {});

  // `codes` are kernel definitions naming their function kSymbolPlaceholder (codegen.h).
  // Compiles the missing ones in at most `jobs` parallel compiler processes (retrying the kernels
  // of a failed chunk one by one, so each error is attributed to its kernel).
  std::vector<CompileResult> compile(const std::vector<std::string>& codes);
  CompileResult compile_one(const std::string& code) { return compile({code}).front(); }

  const std::string& cache_dir() const { return dir_; }
  CompilerStats stats() const;
  std::string key_of(const std::string& code) const;
  // Compiler version, flags and prelude: what makes the same code compile to the same kernel.
  const std::string& identity() const { return identity_; }

 private:
  using Keyed = std::vector<std::pair<std::string, std::string>>;  // (key, code)
  // Compiles each chunk into its own shared object, up to jobs() processes at once; returns, per
  // chunk, "" on success or the diagnostics.
  std::vector<std::string> build(const std::vector<Keyed>& chunks);
  // Path of the header to -include (its .gch beside it), or "" to put the prelude in the TU.
  std::string prelude_header();
  int jobs() const;
  std::optional<LoadedKernel> load(const std::string& key, std::string* error);

  CompilerOptions o_;
  std::vector<std::string> flags_;  // o_.flags plus those vector_math implies
  std::string dir_;
  std::string identity_;  // compiler version + flags + glibc version + prelude: part of every key
  mutable std::mutex mu_;
  CompilerStats stats_;
  std::mutex pch_mu_;
  bool pch_tried_ = false;
  std::string pch_header_;
};

// Process-wide default compiler (cache dir from the environment).
KernelCompiler& default_compiler();

// 128-bit FNV-1a based content hash as 32 hex digits (stable across runs and machines).
std::string content_hash(std::string_view data);

}  // namespace steptp::backend::cpu
