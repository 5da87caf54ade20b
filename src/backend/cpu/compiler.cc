#include "backend/cpu/compiler.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <gnu/libc-version.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <thread>

#include "base/hash.h"
#include "backend/cpu/codegen.h"

extern char** environ;

namespace steptp::backend::cpu {
namespace fs = std::filesystem;

namespace {


std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Starts argv with stdout+stderr to `log`; returns the pid, or -1 when it could not start.
pid_t spawn_process(const std::vector<std::string>& argv, const std::string& log) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid;
  int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  return rc == 0 ? pid : -1;
}

// Waits for one child started by spawn_process (by pid: other children of the process, e.g.
// sandboxes, are left alone); returns its exit status, -1 when it never started.
int wait_process(pid_t pid) {
  if (pid < 0) return -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int run_process(const std::vector<std::string>& argv, const std::string& log) {
  return wait_process(spawn_process(argv, log));
}

void write_file_atomically(const std::string& path, const std::string& tmp, std::string_view data) {
  {
    std::ofstream out(tmp, std::ios::binary);
    out << data;
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) fs::remove(tmp, ec);
}

std::string default_cache_dir() {
  if (const char* env = std::getenv("STEPTP_CACHE_DIR"); env && *env) return env;
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : "/tmp") + "/.cache/steptp/kernels";
}

std::string unique_tmp(const std::string& dir, std::string_view ext) {
  static std::atomic<uint64_t> counter{0};
  // Sandboxed serve jobs share one cache and each is pid 1 of its own PID namespace: the pid
  // alone does not tell their files apart, a per-process random tag does.
  static const uint64_t tag = (uint64_t(std::random_device{}()) << 32) ^ std::random_device{}();
  return fmt::format("{}/tmp-{}-{:016x}-{}{}", dir, getpid(), tag, counter++, ext);
}

std::string compiler_version(const std::string& compiler, const std::string& dir) {
  static std::mutex mu;
  static std::map<std::string, std::string> memo;
  std::lock_guard lock(mu);
  auto it = memo.find(compiler);
  if (it != memo.end()) return it->second;
  std::string log = unique_tmp(dir, ".version.txt");
  run_process({compiler, "--version"}, log);
  std::string v = read_file(log);
  fs::remove(log);
  return memo[compiler] = v;
}

// Loaded kernels of this process, by key: a kernel is dlopen'ed once. Deliberately leaked: no
// dlclose during static destruction, while OpenMP worker threads may still be winding down.
std::mutex g_loaded_mu;
std::map<std::string, LoadedKernel>& loaded() {
  static auto* m = new std::map<std::string, LoadedKernel>;
  return *m;
}

}  // namespace

std::string content_hash(std::string_view data) {
  uint64_t a = base::fnv1a(data);
  uint64_t b = base::fnv1a(data, 0x84222325cbf29ce4ULL ^ a);
  return fmt::format("{:016x}{:016x}", a, b);
}

KernelCompiler::KernelCompiler(CompilerOptions o) : o_(std::move(o)) {
  dir_ = o_.cache_dir.empty() ? default_cache_dir() : o_.cache_dir;
  std::error_code ec;
  fs::create_directories(dir_, ec);
  flags_ = o_.flags;
  if (o_.vector_math) flags_.insert(flags_.end(), {"-fno-math-errno", "-DSTEPTP_VECTOR_MATH"});
  identity_ = compiler_version(o_.compiler, dir_);
  for (const auto& f : flags_) identity_ += f + "\n";
  identity_ += fmt::format("glibc {}\n", gnu_get_libc_version());
  identity_ += cpu_prelude();
}

std::string KernelCompiler::key_of(const std::string& code) const { return content_hash(identity_ + code); }

CompilerStats KernelCompiler::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

std::optional<LoadedKernel> KernelCompiler::load(const std::string& key, std::string* error) {
  std::string path = fmt::format("{}/{}.so", dir_, key);
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    if (error) *error = dlerror();
    return std::nullopt;
  }
  std::string sym = "steptp_k_" + key;
  void* fn = dlsym(h, sym.c_str());
  if (!fn) {
    if (error) *error = fmt::format("symbol {} missing from {}", sym, path);
    dlclose(h);
    return std::nullopt;
  }
  LoadedKernel k;
  k.fn = reinterpret_cast<KernelFn>(fn);
  k.key = key;
  k.library = std::shared_ptr<void>(h, [](void* p) { dlclose(p); });
  return k;
}

int KernelCompiler::jobs() const {
  if (o_.jobs > 0) return o_.jobs;
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

std::string KernelCompiler::prelude_header() {
  std::lock_guard lock(pch_mu_);
  std::error_code ec;
  // Memoized, unless the header vanished since (cache cleaned while this process runs).
  if (pch_tried_ && (pch_header_.empty() || fs::exists(pch_header_, ec))) return pch_header_;
  pch_tried_ = true;
  pch_header_.clear();
  // Only GCC reads X.h.gch for `-include X.h` (and validates it, falling back to X.h).
  if (!o_.precompiled_prelude || identity_.find("Free Software Foundation") == std::string::npos) return "";
  std::string header = fmt::format("{}/prelude-{}.h", dir_, content_hash(identity_));
  std::string gch = header + ".gch";
  if (!fs::exists(header, ec)) write_file_atomically(header, unique_tmp(dir_, ".h"), cpu_prelude());
  if (!fs::exists(gch, ec)) {
    // Compiled from a private copy, then renamed into place: a concurrent process either sees
    // no .gch (and builds its own or uses the text) or a complete one.
    std::string tmp_h = unique_tmp(dir_, ".h");
    std::string tmp_gch = tmp_h + ".gch";
    std::string log = unique_tmp(dir_, ".log");
    write_file_atomically(tmp_h, unique_tmp(dir_, ".tmp"), cpu_prelude());
    std::vector<std::string> argv{o_.compiler};
    for (const auto& f : flags_)
      if (f != "-shared") argv.push_back(f);
    argv.insert(argv.end(), {"-x", "c++-header", "-o", tmp_gch, tmp_h});
    int rc = run_process(argv, log);
    {
      std::lock_guard l2(mu_);
      ++stats_.pch_builds;
    }
    if (rc == 0) fs::rename(tmp_gch, gch, ec);
    fs::remove(tmp_h, ec), fs::remove(tmp_gch, ec), fs::remove(log, ec);
    if (rc != 0 || !fs::exists(gch, ec)) return "";
  }
  return pch_header_ = header;
}

std::vector<std::string> KernelCompiler::build(const std::vector<Keyed>& chunks) {
  struct Job {
    std::string src, so, log;
    pid_t pid = -1;
  };
  const std::string header = prelude_header();
  std::vector<std::string> errors(chunks.size());
  std::vector<Job> procs(chunks.size());
  auto finish = [&](size_t i) {
    Job& j = procs[i];
    int rc = wait_process(j.pid);
    std::error_code ec;
    if (rc != 0) {
      errors[i] = rc < 0 ? fmt::format("could not start compiler '{}'", o_.compiler) : read_file(j.log);
      if (errors[i].empty()) errors[i] = fmt::format("compiler exited with status {}", rc);
      if (errors[i].size() > 8000) errors[i].resize(8000);
    } else {
      for (const auto& [key, code] : chunks[i]) {
        std::string dst = fmt::format("{}/{}.so", dir_, key);
        if (link(j.so.c_str(), dst.c_str()) != 0 && errno != EEXIST)
          fs::copy_file(j.so, dst, fs::copy_options::skip_existing, ec);
      }
    }
    fs::remove(j.src, ec), fs::remove(j.so, ec), fs::remove(j.log, ec);
  };
  const size_t width = static_cast<size_t>(jobs());
  for (size_t i = 0; i < chunks.size(); ++i) {
    if (i >= width) finish(i - width);  // keep at most `width` compilers running
    std::string tu = header.empty() ? std::string(cpu_prelude()) : std::string();
    for (const auto& [key, code] : chunks[i]) {
      std::string c = code;
      std::string sym = "steptp_k_" + key;
      for (size_t pos = c.find(kSymbolPlaceholder); pos != std::string::npos; pos = c.find(kSymbolPlaceholder, pos))
        c.replace(pos, kSymbolPlaceholder.size(), sym);
      tu += c;
    }
    Job& j = procs[i];
    j.src = unique_tmp(dir_, ".cc");
    j.so = unique_tmp(dir_, ".so");
    j.log = unique_tmp(dir_, ".log");
    {
      std::ofstream out(j.src, std::ios::binary);
      out << tu;
    }
    std::vector<std::string> argv{o_.compiler};
    for (const auto& f : flags_) argv.push_back(f);
    if (!header.empty()) argv.insert(argv.end(), {"-include", header});
    argv.insert(argv.end(), {"-o", j.so, j.src});
    {
      std::lock_guard lock(mu_);
      ++stats_.invocations;
    }
    j.pid = spawn_process(argv, j.log);
  }
  for (size_t i = chunks.size() > width ? chunks.size() - width : 0; i < chunks.size(); ++i) finish(i);
  return errors;
}

std::vector<CompileResult> KernelCompiler::compile(const std::vector<std::string>& codes) {
  std::vector<CompileResult> results(codes.size());
  std::vector<std::string> keys(codes.size());
  std::map<std::string, std::string> missing;  // key -> code (dedups identical kernels)
  for (size_t i = 0; i < codes.size(); ++i) {
    keys[i] = key_of(codes[i]);
    {
      std::lock_guard lock(g_loaded_mu);
      auto it = loaded().find(keys[i]);
      if (it != loaded().end()) {
        results[i].kernel = it->second;
        results[i].cache_hit = true;
        std::lock_guard l2(mu_);
        ++stats_.memory_hits;
        continue;
      }
    }
    if (fs::exists(fmt::format("{}/{}.so", dir_, keys[i]))) {
      if (auto k = load(keys[i], nullptr)) {
        results[i].kernel = std::move(k);
        results[i].cache_hit = true;
        std::lock_guard lock(mu_);
        ++stats_.disk_hits;
        continue;
      }
    }
    missing.emplace(keys[i], codes[i]);
  }
  std::map<std::string, std::string> errors;
  if (!missing.empty()) {
    std::error_code ec;
    fs::create_directories(dir_, ec);  // it may have been removed since the constructor ran
    // Chunks balanced by code size: largest kernel first into the currently smallest chunk
    // (ties by key, so the split is deterministic).
    std::vector<std::pair<std::string, std::string>> order(missing.begin(), missing.end());
    std::stable_sort(order.begin(), order.end(),
                     [](const auto& a, const auto& b) { return a.second.size() > b.second.size(); });
    std::vector<Keyed> chunks(std::min(order.size(), static_cast<size_t>(jobs())));
    std::vector<size_t> chunk_bytes(chunks.size(), 0);
    for (auto& kc : order) {
      size_t c = std::min_element(chunk_bytes.begin(), chunk_bytes.end()) - chunk_bytes.begin();
      chunk_bytes[c] += kc.second.size();
      chunks[c].push_back(std::move(kc));
    }
    auto chunk_errors = build(chunks);
    // A failed chunk of several kernels: compile each alone to find whose error it is.
    std::vector<Keyed> singles;
    for (size_t c = 0; c < chunks.size(); ++c) {
      if (chunk_errors[c].empty()) continue;
      if (chunks[c].size() == 1) errors[chunks[c][0].first] = chunk_errors[c];
      else
        for (const auto& kc : chunks[c]) singles.push_back({kc});
    }
    auto single_errors = build(singles);
    for (size_t s = 0; s < singles.size(); ++s)
      if (!single_errors[s].empty()) errors[singles[s][0].first] = single_errors[s];
    std::lock_guard lock(mu_);
    ++stats_.batches;
    stats_.compiled += static_cast<int>(missing.size() - errors.size());
  }
  for (size_t i = 0; i < codes.size(); ++i) {
    if (results[i].kernel) continue;
    auto e = errors.find(keys[i]);
    if (e != errors.end()) {
      results[i].error = e->second;
      continue;
    }
    std::string err;
    results[i].kernel = load(keys[i], &err);
    if (!results[i].kernel) results[i].error = err;
  }
  std::lock_guard lock(g_loaded_mu);
  for (const auto& r : results)
    if (r.kernel) loaded().emplace(r.kernel->key, *r.kernel);
  return results;
}

KernelCompiler& default_compiler() {
  static KernelCompiler c;
  return c;
}

}  // namespace steptp::backend::cpu
