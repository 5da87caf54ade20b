#include "backend/cpu/compiler.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "backend/cpu/codegen.h"

extern char** environ;

namespace steptp::backend::cpu {
namespace fs = std::filesystem;

namespace {

uint64_t fnv1a(std::string_view s, uint64_t h) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs argv, stdout+stderr to `log`; returns the exit status (-1 when it could not start).
int run_process(const std::vector<std::string>& argv, const std::string& log) {
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
  if (rc != 0) return -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string default_cache_dir() {
  if (const char* env = std::getenv("STEPTP_CACHE_DIR"); env && *env) return env;
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : "/tmp") + "/.cache/steptp/kernels";
}

std::string compiler_version(const std::string& compiler, const std::string& dir) {
  static std::mutex mu;
  static std::map<std::string, std::string> memo;
  std::lock_guard lock(mu);
  auto it = memo.find(compiler);
  if (it != memo.end()) return it->second;
  std::string log = fmt::format("{}/version-{}.txt", dir, getpid());
  run_process({compiler, "--version"}, log);
  std::string v = read_file(log);
  fs::remove(log);
  return memo[compiler] = v;
}

std::string unique_tmp(const std::string& dir, std::string_view ext) {
  static std::atomic<uint64_t> counter{0};
  return fmt::format("{}/tmp-{}-{}{}", dir, getpid(), counter++, ext);
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
  uint64_t a = fnv1a(data, 0xcbf29ce484222325ULL);
  uint64_t b = fnv1a(data, 0x84222325cbf29ce4ULL ^ a);
  return fmt::format("{:016x}{:016x}", a, b);
}

KernelCompiler::KernelCompiler(CompilerOptions o) : o_(std::move(o)) {
  dir_ = o_.cache_dir.empty() ? default_cache_dir() : o_.cache_dir;
  std::error_code ec;
  fs::create_directories(dir_, ec);
  identity_ = compiler_version(o_.compiler, dir_);
  for (const auto& f : o_.flags) identity_ += f + "\n";
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

bool KernelCompiler::build(const std::vector<std::pair<std::string, std::string>>& keyed, std::string* error) {
  std::string tu(cpu_prelude());
  for (const auto& [key, code] : keyed) {
    std::string c = code;
    std::string sym = "steptp_k_" + key;
    for (size_t pos = c.find(kSymbolPlaceholder); pos != std::string::npos; pos = c.find(kSymbolPlaceholder, pos))
      c.replace(pos, kSymbolPlaceholder.size(), sym);
    tu += c;
  }
  std::string src = unique_tmp(dir_, ".cc");
  std::string so = unique_tmp(dir_, ".so");
  std::string log = unique_tmp(dir_, ".log");
  {
    std::ofstream out(src, std::ios::binary);
    out << tu;
  }
  std::vector<std::string> argv{o_.compiler};
  for (const auto& f : o_.flags) argv.push_back(f);
  argv.insert(argv.end(), {"-o", so, src});
  {
    std::lock_guard lock(mu_);
    ++stats_.invocations;
  }
  int rc = run_process(argv, log);
  std::error_code ec;
  if (rc != 0) {
    if (error) {
      *error = read_file(log);
      if (error->size() > 8000) error->resize(8000);
      if (rc < 0) *error = fmt::format("could not start compiler '{}'", o_.compiler);
    }
    fs::remove(src, ec), fs::remove(so, ec), fs::remove(log, ec);
    return false;
  }
  for (const auto& [key, code] : keyed) {
    std::string dst = fmt::format("{}/{}.so", dir_, key);
    if (link(so.c_str(), dst.c_str()) != 0 && errno != EEXIST) fs::copy_file(so, dst, fs::copy_options::skip_existing, ec);
  }
  fs::remove(src, ec), fs::remove(so, ec), fs::remove(log, ec);
  return true;
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
    std::vector<std::pair<std::string, std::string>> batch(missing.begin(), missing.end());
    std::string err;
    if (!build(batch, &err)) {
      if (batch.size() == 1) {
        errors[batch[0].first] = err;
      } else {
        for (const auto& kc : batch) {
          std::string e1;
          if (!build({kc}, &e1)) errors[kc.first] = e1;
        }
      }
    }
    std::lock_guard lock(mu_);
    stats_.compiled += static_cast<int>(batch.size() - errors.size());
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
