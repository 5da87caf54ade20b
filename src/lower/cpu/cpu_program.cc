#include "lower/cpu/cpu_program.h"

#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <stdexcept>

#include "base/error.h"
#include "ir/leir/diagnostic.h"

namespace steptp::backend::cpu {

using leir::DType;

namespace {

size_t align64(size_t n) { return (n + 63) / 64 * 64; }

void store_values(DType st, void* dst, const std::vector<double>& src) {
  size_t n = src.size();
  switch (st) {
    case DType::F64: std::memcpy(dst, src.data(), n * sizeof(double)); return;
    case DType::F32:
    case DType::F16:
    case DType::BF16:
      for (size_t i = 0; i < n; ++i) static_cast<float*>(dst)[i] = static_cast<float>(src[i]);
      return;
    case DType::I8: for (size_t i = 0; i < n; ++i) static_cast<int8_t*>(dst)[i] = static_cast<int8_t>(src[i]); return;
    case DType::I16: for (size_t i = 0; i < n; ++i) static_cast<int16_t*>(dst)[i] = static_cast<int16_t>(src[i]); return;
    case DType::I32: for (size_t i = 0; i < n; ++i) static_cast<int32_t*>(dst)[i] = static_cast<int32_t>(src[i]); return;
    case DType::I64: for (size_t i = 0; i < n; ++i) static_cast<int64_t*>(dst)[i] = static_cast<int64_t>(src[i]); return;
    case DType::U8: for (size_t i = 0; i < n; ++i) static_cast<uint8_t*>(dst)[i] = static_cast<uint8_t>(src[i]); return;
    case DType::Bool: for (size_t i = 0; i < n; ++i) static_cast<uint8_t*>(dst)[i] = src[i] != 0; return;
  }
}

std::vector<double> load_values(DType st, const void* src, int64_t n) {
  std::vector<double> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    switch (st) {
      case DType::F64: out[i] = static_cast<const double*>(src)[i]; break;
      case DType::F32:
      case DType::F16:
      case DType::BF16: out[i] = static_cast<const float*>(src)[i]; break;
      case DType::I8: out[i] = static_cast<const int8_t*>(src)[i]; break;
      case DType::I16: out[i] = static_cast<const int16_t*>(src)[i]; break;
      case DType::I32: out[i] = static_cast<const int32_t*>(src)[i]; break;
      case DType::I64: out[i] = static_cast<double>(static_cast<const int64_t*>(src)[i]); break;
      case DType::U8:
      case DType::Bool: out[i] = static_cast<const uint8_t*>(src)[i]; break;
    }
  }
  return out;
}

}  // namespace

namespace {

// Released mappings of this process, most recent last (KernelBuffers above).
class MappingPool {
 public:
  static constexpr size_t kMinBytes = size_t{1} << 20;  // smaller mappings are cheap to make
  static constexpr size_t kMaxEntries = 4;

  void* take(size_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    drop_inherited();
    for (size_t i = entries_.size(); i-- > 0;)
      if (entries_[i].bytes == bytes) {
        void* base = entries_[i].base;
        entries_.erase(entries_.begin() + long(i));
        return base;
      }
    return nullptr;
  }

  void lock() { mu_.lock(); }
  void unlock() { mu_.unlock(); }

  // Keeps the mapping (true) or leaves it to the caller to unmap (false).
  bool give(void* base, size_t bytes) {
    if (bytes < kMinBytes) return false;
    std::lock_guard<std::mutex> lock(mu_);
    drop_inherited();
    if (entries_.size() == kMaxEntries) {
      munmap(entries_.front().base, entries_.front().bytes);
      entries_.erase(entries_.begin());
    }
    entries_.push_back({base, bytes, getpid()});
    return true;
  }

 private:
  struct Entry {
    void* base;
    size_t bytes;
    pid_t owner;
  };
  // Entries copied into a forked child are the parent's pages: unmapped here, never reused.
  void drop_inherited() {
    const pid_t me = getpid();
    std::erase_if(entries_, [&](const Entry& e) {
      if (e.owner == me) return false;
      munmap(e.base, e.bytes);
      return true;
    });
  }
  std::mutex mu_;
  std::vector<Entry> entries_;
};

MappingPool& mapping_pool() {
  // Never destroyed: buffers may outlive statics. A fork while another thread holds the pool's
  // lock would leave the child a lock nobody releases (a measuring child binds buffers), so
  // forks wait for it: taken before, released after, on both sides.
  static MappingPool* pool = [] {
    auto* p = new MappingPool;
    pthread_atfork([] { mapping_pool().lock(); }, [] { mapping_pool().unlock(); }, [] { mapping_pool().unlock(); });
    return p;
  }();
  return *pool;
}

}  // namespace

KernelBuffers::KernelBuffers(const std::vector<KernelParam>& params, const std::vector<void*>& borrowed)
    : params_(params), given_(params.size(), 0) {
  std::vector<size_t> offsets;
  for (size_t i = 0; i < params.size(); ++i) {
    offsets.push_back(bytes_);
    if (i < borrowed.size() && borrowed[i]) continue;
    bytes_ += align64(static_cast<size_t>(std::max<int64_t>(params[i].numel, 1)) * leir::byte_size(params[i].storage));
  }
  bytes_ = std::max<size_t>(bytes_, 64);
  base_ = mapping_pool().take(bytes_);
  if (!base_) base_ = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (base_ == MAP_FAILED)
    throw base::Error(base::ErrorKind::Failed, fmt::format("cannot map {} bytes of kernel buffers", bytes_));
  for (size_t i = 0; i < params.size(); ++i)
    ptrs_.push_back(i < borrowed.size() && borrowed[i] ? borrowed[i] : static_cast<char*>(base_) + offsets[i]);
}

void* KernelBuffers::input_buffer(const KernelParam& p) const {
  for (size_t i = 0; i < params_.size(); ++i) {
    const KernelParam& q = params_[i];
    if (given_[i] && q.name == p.name && q.storage == p.storage && q.shape == p.shape) return ptrs_[i];
  }
  return nullptr;
}

KernelBuffers::~KernelBuffers() {
  if (base_ && base_ != MAP_FAILED && !mapping_pool().give(base_, bytes_)) munmap(base_, bytes_);
}

std::unique_ptr<KernelBuffers> CpuProgram::bind(const leir::TensorMap& inputs, const KernelBuffers* share) const {
  std::vector<void*> borrowed(source_.params.size(), nullptr);
  if (share)
    for (size_t i = 0; i < source_.params.size(); ++i) {
      const auto& kp = source_.params[i];
      if (!kp.output && leir::find_value(inputs, kp.name, program_.known[i].alias)) borrowed[i] = share->input_buffer(kp);
    }
  auto b = std::make_unique<KernelBuffers>(source_.params, borrowed);
  for (size_t i = 0; i < source_.params.size(); ++i) {
    if (borrowed[i]) {
      b->given_[i] = 1;
      continue;
    }
    const auto& kp = source_.params[i];
    const leir::TensorDecl& decl = program_.known[i];
    if (kp.output) {
      // NaN-filled, so an element the kernel never writes cannot pass as a computed value.
      const size_t n = static_cast<size_t>(kp.numel);
      if (kp.storage == DType::F64)
        std::fill_n(static_cast<double*>(b->data(i)), n, std::numeric_limits<double>::quiet_NaN());
      else if (leir::is_floating(kp.storage))
        std::fill_n(static_cast<float*>(b->data(i)), n, std::numeric_limits<float>::quiet_NaN());
      else  // zero, as a fresh mapping would be
        std::memset(b->data(i), 0, n * leir::byte_size(kp.storage));
      continue;
    }
    const leir::TensorValue* given = leir::find_value(inputs, kp.name, decl.alias);
    const std::vector<double>* data = nullptr;
    if (given) {
      if (given->shape != kp.shape)
        throw leir::LeirError(program_.file, decl.loc,
                              fmt::format("value of {} has the wrong shape ({} elements given, {} expected)", kp.name,
                                          given->numel(), kp.numel));
      data = &given->data;
    } else if (decl.value) {
      data = &*decl.value;
    } else {
      throw leir::LeirError(program_.file, decl.loc, fmt::format("no value given for {} {}", leir::to_string(decl.role), kp.name));
    }
    if (static_cast<int64_t>(data->size()) != kp.numel)
      throw leir::LeirError(program_.file, decl.loc,
                            fmt::format("value of {} has {} elements, expected {}", kp.name, data->size(), kp.numel));
    store_values(kp.storage, b->data(i), *data);
    b->given_[i] = given != nullptr;
  }
  return b;
}

int CpuProgram::call(void* const* args) const {
  // The argument arrays first: nothing after taking the workspace may throw (it would stay busy).
  // A piece takes at most every buffer.
  std::vector<void*> buffers(source_.buffers.size()), piece_args(source_.buffers.size());
  char* base = nullptr;
  bool own = false;  // a concurrent call holds the kept workspace: this one allocates its own
  const size_t bytes = static_cast<size_t>(source_.workspace_bytes);
  if (bytes > 0) {
    // Allocated at the first call (the size never changes), kept until the program goes.
    base = steptp_workspace_take(*workspace_, bytes, &own);
    if (!base) return 1;
  }
  for (const auto& [offset, n] : source_.cleared) std::memset(base + offset, 0, static_cast<size_t>(n));
  for (size_t k = 0; k < buffers.size(); ++k) {
    const CpuBuffer& b = source_.buffers[k];
    buffers[k] = b.param >= 0 ? args[b.param] : base + b.offset;
  }
  for (size_t i = 0; i < pieces_.size(); ++i) {
    const std::vector<int>& takes = source_.pieces[i].buffers;
    for (size_t k = 0; k < takes.size(); ++k) piece_args[k] = buffers[size_t(takes[k])];
    pieces_[i].fn(piece_args.data());
  }
  if (bytes > 0) steptp_workspace_give(*workspace_, base, own);
  return 0;
}

void CpuProgram::run(KernelBuffers& b) const {
  if (call(b.args()) != 0)
    throw base::Error(base::ErrorKind::Failed,
                      fmt::format("{}: out of memory allocating intermediates", program_.name));
}

leir::TensorMap CpuProgram::outputs(const KernelBuffers& b) const {
  leir::TensorMap out;
  for (size_t i = 0; i < source_.params.size(); ++i) {
    const auto& kp = source_.params[i];
    if (!kp.output) continue;
    leir::TensorValue v;
    v.dtype = kp.dtype;
    v.shape = kp.shape;
    v.data = load_values(kp.storage, b.data(i), kp.numel);
    out.emplace(kp.name, std::move(v));
  }
  return out;
}

leir::TensorMap CpuProgram::run(const leir::TensorMap& inputs) const {
  auto b = bind(inputs);
  run(*b);
  return outputs(*b);
}

struct CpuBuilder {
  static std::shared_ptr<CpuProgram> make(const leir::Program& p, CpuKernelSource src, std::vector<LoadedKernel> k) {
    auto cp = std::make_shared<CpuProgram>();
    cp->program_ = p;
    cp->source_ = std::move(src);
    cp->pieces_ = std::move(k);
    return cp;
  }
};

std::vector<CpuBuildResult> build_cpu_programs(const std::vector<leir::Program>& programs, const CpuCodegenOptions& o,
                                               KernelCompiler* compiler) {
  KernelCompiler& cc = compiler ? *compiler : default_compiler();
  std::vector<CpuBuildResult> results(programs.size());
  std::vector<CpuKernelSource> sources(programs.size());
  // Every piece of every program in one batch (the compiler compiles a piece shared by several
  // programs once, and finds the pieces of earlier builds in its cache).
  std::vector<std::string> codes;
  std::vector<size_t> first_piece(programs.size(), 0);
  for (size_t i = 0; i < programs.size(); ++i) {
    first_piece[i] = codes.size();
    try {
      sources[i] = generate_cpu_kernel(programs[i], o);
      for (const auto& piece : sources[i].pieces) codes.push_back(piece.code);
    } catch (const std::exception& e) {
      results[i].error = e.what();
    }
  }
  auto compiled = cc.compile(codes);
  for (size_t i = 0; i < programs.size(); ++i) {
    if (!results[i].error.empty()) continue;
    std::vector<LoadedKernel> pieces;
    for (size_t j = first_piece[i]; j < first_piece[i] + sources[i].pieces.size(); ++j) {
      if (!compiled[j].kernel) {
        results[i].error = "compiler error:\n" + compiled[j].error;
        break;
      }
      pieces.push_back(*compiled[j].kernel);
    }
    if (results[i].error.empty()) results[i].program = CpuBuilder::make(programs[i], std::move(sources[i]), std::move(pieces));
  }
  return results;
}

std::shared_ptr<const CpuProgram> build_cpu_program(const leir::Program& p, const CpuCodegenOptions& o,
                                                    KernelCompiler* compiler) {
  auto src = generate_cpu_kernel(p, o);  // lowering errors surface as LeirError
  auto r = build_cpu_programs({p}, o, compiler);
  if (!r[0].program) throw base::Error(base::ErrorKind::Failed, r[0].error);
  return r[0].program;
}

}  // namespace steptp::backend::cpu
