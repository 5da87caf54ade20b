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
// therefore does not depend on it.
//
// Every compile works in a private temporary directory of the cache (mkdtemp: CACHE/tmp-XXXXXX,
// mode 0700, removed afterwards), and its results are renamed into place, so concurrent
// processes sharing a cache never see half-written files and no name another user could guess
// or plant (a symlink at a fixed temp name) is ever written. The cache should be private to its
// user all the same (a kernel placed in it runs): a cache dir the compiler creates gets mode 0700.
//
// Size cap: after each batch that compiled something, the least recently used files (by mtime:
// a kernel's file is touched whenever it is found in the cache or in memory, the prelude
// whenever a compile uses it) are removed until the files' sizes sum to at most the cap (hard
// links counted once; a chunk's kernels share one file, so they age together). Files used within
// `evict_grace_s` are never removed: that spares a file between its rename into place and its
// dlopen, and the prelude while compilers read it. Removing a file another process has loaded is
// harmless (the mapping lives on); a process whose disk hit vanishes before dlopen compiles the
// kernel again. Temporary directories older than a day (left by a killed process) go too.
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
  // Size cap of the cache dir in bytes (see above): -1: $STEPTP_CACHE_MAX_MB MiB, else 512 MiB;
  // 0: no cap.
  int64_t cache_max_bytes = -1;
  // Files used more recently than this are not evicted, whatever the cap.
  double evict_grace_s = 600;
};

using KernelFn = int (*)(void* const* args);

struct LoadedKernel {
  KernelFn fn = nullptr;
  std::string key;
  std::shared_ptr<void> library;  // keeps the shared object loaded
};

struct CompileResult {
  std::optional<LoadedKernel> kernel;
  // Compiler diagnostics when kernel is empty, without this machine's paths (they may reach a
  // service's client): the kernel's source is `<kernel>.cc`, the prelude `<prelude>.h`, the
  // cache dir `<cache>`, the home dir `~`.
  std::string error;
  bool cache_hit = false;
};

struct CompilerStats {
  int invocations = 0;  // compiler processes started for kernels (not counting the PCH)
  int batches = 0;      // compile() calls that had kernels to compile
  int pch_builds = 0;   // prelude precompilations (at most one per compiler, 0 when cached)
  int compiled = 0;     // kernels compiled
  int disk_hits = 0;    // kernels found in the disk cache
  int memory_hits = 0;  // kernels already loaded in this process
  int evicted = 0;      // file names removed from the cache to keep it under its cap
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
  int64_t cache_max_bytes() const { return max_bytes_; }
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
  std::string prelude_path() const;  // where that header lives in the cache
  int jobs() const;
  std::optional<LoadedKernel> load(const std::string& key, std::string* error);
  // Removes least recently used files until the cache fits its cap (see above).
  void evict();
  // `text` with this machine's paths replaced by neutral names (CompileResult::error); `job` is
  // the temporary directory of the compile that produced it, if any.
  std::string without_paths(std::string text, const std::string& job = "") const;

  CompilerOptions o_;
  std::vector<std::string> flags_;  // o_.flags plus those vector_math implies
  std::string dir_;
  int64_t max_bytes_ = 0;  // resolved cache_max_bytes (0: no cap)
  std::string identity_;  // compiler version + flags + glibc version + prelude: part of every key
  mutable std::mutex mu_;
  CompilerStats stats_;
  std::mutex pch_mu_;
  bool pch_tried_ = false;
  std::string pch_header_;
};

// Process-wide default compiler (cache dir from the environment). $STEPTP_ISA=avx2 builds its
// kernels for AVX2 on an AVX-512 machine (-mno-avx512f: 16 ymm registers, 8 f32 lanes; AVX2 code
// runs on AVX-512 CPUs), so that the tuner derives and times an AVX2 machine's schedules here
// (search/tune/machine.h reads the same variable); unset or "native": -march=native as it is.
KernelCompiler& default_compiler();
// Whether $STEPTP_ISA asks for AVX2 kernels. Throws base::Error (Failed) for a value other than
// "native" or "avx2", and for avx2 on a CPU without it.
bool avx2_kernels();

// 128-bit FNV-1a based content hash as 32 hex digits (stable across runs and machines).
std::string content_hash(std::string_view data);

}  // namespace steptp::backend::cpu
