#include "lower/cpu/compiler.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <gnu/libc-version.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string_view>
#include <thread>

#include "base/error.h"
#include "base/hash.h"
#include "lower/cpu/codegen.h"

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

bool write_file(const std::string& path, std::string_view data) {
  std::ofstream out(path, std::ios::binary);
  out << data;
  return bool(out.flush());
}

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  if (from.empty()) return;
  for (size_t pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size()))
    s.replace(pos, from.size(), to);
}

// Marks a cached file used now (its mtime orders the cache's eviction); a file evicted meanwhile
// is no error.
void touch(const std::string& path) { utimensat(AT_FDCWD, path.c_str(), nullptr, 0); }

// A private working directory of one compile in the cache dir: mkdtemp's unpredictable name,
// mode 0700, so nothing in it can be planted or guessed by others; removed with its contents
// when it goes out of scope.
class JobDir {
 public:
  explicit JobDir(const std::string& parent) {
    std::string name = parent + "/tmp-XXXXXX";
    if (mkdtemp(name.data())) path_ = name;
    else error_ = fmt::format("cannot create a temporary directory in the kernel cache: {}", std::strerror(errno));
  }
  ~JobDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  JobDir(const JobDir&) = delete;
  JobDir& operator=(const JobDir&) = delete;

  bool ok() const { return !path_.empty(); }
  const std::string& error() const { return error_; }
  const std::string& path() const { return path_; }
  std::string file(std::string_view name) const { return path_ + "/" + std::string(name); }

 private:
  std::string path_, error_;
};

// Places `file` (inside `job`) at `dst` atomically, replacing whatever is there: a hard link (a
// copy where the file system has none) under a name in `job`, renamed onto `dst`. Replacing, not
// keeping an older copy: the new file was just written, so eviction's grace protects it until
// this process has loaded it. Returns 0 or the errno of the failure.
int publish(const std::string& file, const std::string& dst, const JobDir& job) {
  const std::string staged = job.file("publish");
  std::error_code ec;
  if (link(file.c_str(), staged.c_str()) != 0 && !fs::copy_file(file, staged, ec)) return ec ? ec.value() : EEXIST;
  if (rename(staged.c_str(), dst.c_str()) == 0) return 0;
  const int err = errno;
  unlink(staged.c_str());
  return err;
}

// Starts argv with stdout+stderr to `log` (a new file: O_EXCL, no symlink followed); returns the
// pid, or -1 when it could not start.
pid_t spawn_process(const std::vector<std::string>& argv, const std::string& log) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0600);
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

std::string default_cache_dir() {
  if (const char* env = std::getenv("STEPTP_CACHE_DIR"); env && *env) return env;
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : "/tmp") + "/.cache/steptp/kernels";
}

int64_t default_cache_max_bytes() {
  constexpr int64_t kDefaultMiB = 512;
  const char* env = std::getenv("STEPTP_CACHE_MAX_MB");
  if (!env || !*env) return kDefaultMiB << 20;
  char* end = nullptr;
  const long long mib = std::strtoll(env, &end, 10);
  if (*end != '\0' || mib < 0)
    throw base::Error(base::ErrorKind::Failed,
                      fmt::format("STEPTP_CACHE_MAX_MB must be a whole number of MiB (0: no cap), not '{}'", env));
  return int64_t(mib) << 20;
}

// Creates the cache dir; a dir it creates is private (mode 0700): a kernel placed there runs.
void make_cache_dir(const std::string& dir) {
  std::error_code ec;
  if (fs::create_directories(dir, ec)) fs::permissions(dir, fs::perms::owner_all, ec);
}

std::string compiler_version(const std::string& compiler, const std::string& dir) {
  static std::mutex mu;
  static std::map<std::string, std::string> memo;
  std::lock_guard lock(mu);
  auto it = memo.find(compiler);
  if (it != memo.end()) return it->second;
  JobDir job(dir);
  if (!job.ok()) return "";
  const std::string log = job.file("version.txt");
  run_process({compiler, "--version"}, log);
  return memo[compiler] = read_file(log);
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
  max_bytes_ = o_.cache_max_bytes < 0 ? default_cache_max_bytes() : o_.cache_max_bytes;
  make_cache_dir(dir_);
  flags_ = o_.flags;
  if (o_.vector_math) flags_.insert(flags_.end(), {"-fno-math-errno", "-DSTEPTP_VECTOR_MATH"});
  identity_ = compiler_version(o_.compiler, dir_);
  for (const auto& f : flags_) identity_ += f + "\n";
  identity_ += fmt::format("glibc {}\n", gnu_get_libc_version());
  identity_ += cpu_prelude();
  identity_ += fmt::format("lowering revision {}\n", kCpuLoweringRevision);
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
    if (error) *error = without_paths(dlerror());
    return std::nullopt;
  }
  std::string sym = "steptp_k_" + key;
  void* fn = dlsym(h, sym.c_str());
  if (!fn) {
    if (error) *error = fmt::format("symbol {} missing from the kernel's shared object", sym);
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
  // Memoized, unless the header or its PCH vanished since (cache cleaned or evicted while this
  // process runs); touched on each use, so eviction keeps it while compiles use it.
  if (pch_tried_ && (pch_header_.empty() || (fs::exists(pch_header_, ec) && fs::exists(pch_header_ + ".gch", ec)))) {
    if (!pch_header_.empty()) touch(pch_header_), touch(pch_header_ + ".gch");
    return pch_header_;
  }
  pch_tried_ = true;
  pch_header_.clear();
  // Only GCC reads X.h.gch for `-include X.h` (and validates it, falling back to X.h).
  if (!o_.precompiled_prelude || identity_.find("Free Software Foundation") == std::string::npos) return "";
  const std::string header = prelude_path(), gch = header + ".gch";
  if (fs::exists(header, ec) && fs::exists(gch, ec)) {
    touch(header), touch(gch);
    return pch_header_ = header;
  }
  JobDir job(dir_);
  if (!job.ok()) return "";
  const std::string tmp_h = job.file("prelude.h");
  if (!write_file(tmp_h, cpu_prelude())) return "";
  if (!fs::exists(header, ec) && publish(tmp_h, header, job) != 0) return "";
  if (!fs::exists(gch, ec)) {
    // Compiled from the private copy, then renamed into place: a concurrent process either sees
    // no .gch (and builds its own or uses the text) or a complete one.
    std::vector<std::string> argv{o_.compiler};
    for (const auto& f : flags_)
      if (f != "-shared") argv.push_back(f);
    argv.insert(argv.end(), {"-x", "c++-header", "-o", job.file("prelude.h.gch"), tmp_h});
    int rc = run_process(argv, job.file("pch.log"));
    {
      std::lock_guard l2(mu_);
      ++stats_.pch_builds;
    }
    if (rc != 0 || publish(job.file("prelude.h.gch"), gch, job) != 0) return "";
  }
  return pch_header_ = header;
}

std::string KernelCompiler::prelude_path() const { return fmt::format("{}/prelude-{}.h", dir_, content_hash(identity_)); }

std::string KernelCompiler::without_paths(std::string text, const std::string& job) const {
  if (!job.empty()) {
    replace_all(text, job + "/kernel.cc", "<kernel>.cc");
    replace_all(text, job + "/kernel.so", "<kernel>.so");
    replace_all(text, job, "<tmp>");
  }
  replace_all(text, prelude_path(), "<prelude>.h");
  replace_all(text, dir_, "<cache>");
  if (const char* home = std::getenv("HOME"); home && std::string_view(home).size() > 1) replace_all(text, home, "~");
  return text;
}

void KernelCompiler::evict() {
  if (max_bytes_ <= 0) return;
  struct File {
    timespec used{};
    int64_t bytes = 0;
    std::vector<std::string> names;  // hard links of one file (a chunk's kernels)
  };
  std::map<std::pair<dev_t, ino_t>, File> files;
  int64_t total = 0;
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir_, ec)) {
    const std::string path = e.path().string();
    struct stat st {};
    if (lstat(path.c_str(), &st) != 0) continue;  // removed meanwhile
    if (S_ISDIR(st.st_mode)) {
      // A compile's directory older than a day was left by a killed process.
      if (e.path().filename().string().rfind("tmp-", 0) == 0 && st.st_mtim.tv_sec < now.tv_sec - 86400)
        fs::remove_all(path, ec);
      continue;
    }
    if (!S_ISREG(st.st_mode)) continue;
    File& f = files[{st.st_dev, st.st_ino}];
    if (f.names.empty()) {
      f.used = st.st_mtim;
      f.bytes = st.st_size;
      total += st.st_size;
    }
    f.names.push_back(path);
  }
  if (total <= max_bytes_) return;
  std::vector<const File*> order;
  for (const auto& [id, f] : files) order.push_back(&f);
  auto seconds = [](const timespec& t) { return double(t.tv_sec) + 1e-9 * double(t.tv_nsec); };
  std::sort(order.begin(), order.end(), [&](const File* a, const File* b) { return seconds(a->used) < seconds(b->used); });
  const double newest_evictable = seconds(now) - o_.evict_grace_s;
  int removed = 0;
  for (const File* f : order) {
    if (total <= max_bytes_ || seconds(f->used) > newest_evictable) break;
    for (const auto& name : f->names) removed += unlink(name.c_str()) == 0;
    total -= f->bytes;
  }
  std::lock_guard lock(mu_);
  stats_.evicted += removed;
}

std::vector<std::string> KernelCompiler::build(const std::vector<Keyed>& chunks) {
  struct Job {
    std::unique_ptr<JobDir> dir;  // kernel.cc, kernel.so, compile.log
    std::string error;            // why the compiler did not start
    pid_t pid = -1;
  };
  const std::string header = prelude_header();
  std::vector<std::string> errors(chunks.size());
  std::vector<Job> procs(chunks.size());
  auto finish = [&](size_t i) {
    Job& j = procs[i];
    if (!j.error.empty()) {
      errors[i] = j.error;
    } else if (int rc = wait_process(j.pid); rc != 0) {
      errors[i] = rc < 0 ? fmt::format("could not start compiler '{}'", o_.compiler)
                         : without_paths(read_file(j.dir->file("compile.log")), j.dir->path());
      if (errors[i].empty()) errors[i] = fmt::format("compiler exited with status {}", rc);
      if (errors[i].size() > 8000) errors[i].resize(8000);
    } else {
      for (const auto& [key, code] : chunks[i])
        if (int err = publish(j.dir->file("kernel.so"), fmt::format("{}/{}.so", dir_, key), *j.dir))
          errors[i] = fmt::format("cannot store the kernel in the cache: {}", std::strerror(err));
    }
    j.dir.reset();
  };
  const size_t width = static_cast<size_t>(jobs());
  for (size_t i = 0; i < chunks.size(); ++i) {
    if (i >= width) finish(i - width);  // keep at most `width` compilers running
    Job& j = procs[i];
    j.dir = std::make_unique<JobDir>(dir_);
    if (!j.dir->ok()) {
      j.error = j.dir->error();
      continue;
    }
    std::string tu = header.empty() ? std::string(cpu_prelude()) : std::string();
    for (const auto& [key, code] : chunks[i]) {
      std::string c = code;
      replace_all(c, kSymbolPlaceholder, "steptp_k_" + key);
      tu += c;
    }
    const std::string src = j.dir->file("kernel.cc");
    if (!write_file(src, tu)) {
      j.error = "cannot write the kernel's source in the kernel cache";
      continue;
    }
    std::vector<std::string> argv{o_.compiler};
    for (const auto& f : flags_) argv.push_back(f);
    if (!header.empty()) argv.insert(argv.end(), {"-include", header});
    argv.insert(argv.end(), {"-o", j.dir->file("kernel.so"), src});
    {
      std::lock_guard lock(mu_);
      ++stats_.invocations;
    }
    j.pid = spawn_process(argv, j.dir->file("compile.log"));
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
        touch(fmt::format("{}/{}.so", dir_, keys[i]));
        std::lock_guard l2(mu_);
        ++stats_.memory_hits;
        continue;
      }
    }
    // Touched first, so eviction (which spares recently used files) does not take it before the
    // dlopen; if it does all the same, the kernel is compiled again.
    if (const std::string so = fmt::format("{}/{}.so", dir_, keys[i]); fs::exists(so)) {
      touch(so);
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
    make_cache_dir(dir_);  // it may have been removed since the constructor ran
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
  {
    std::lock_guard lock(g_loaded_mu);
    for (const auto& r : results)
      if (r.kernel) loaded().emplace(r.kernel->key, *r.kernel);
  }
  if (!missing.empty()) evict();  // the cache grew
  return results;
}

bool avx2_kernels() {
  const char* env = std::getenv("STEPTP_ISA");
  const std::string_view isa = env ? env : "";
  if (isa.empty() || isa == "native") return false;
  if (isa != "avx2")
    throw base::Error(base::ErrorKind::Failed, fmt::format("STEPTP_ISA={}: expected native or avx2", isa));
  if (!__builtin_cpu_supports("avx2"))
    throw base::Error(base::ErrorKind::Failed, "STEPTP_ISA=avx2: this CPU has no AVX2");
  return true;
}

namespace {

CompilerOptions default_compiler_options() {
  CompilerOptions o;
  if (avx2_kernels()) o.flags.push_back("-mno-avx512f");  // also turns off every AVX-512 extension
  return o;
}

}  // namespace

KernelCompiler& default_compiler() {
  static KernelCompiler c(default_compiler_options());
  return c;
}

}  // namespace steptp::backend::cpu
