#include "lower/cuda/cuda_codegen.h"

#include <fmt/format.h>

#include <cmath>
#include <array>
#include <functional>
#include <map>
#include <set>

#include "lower/accumulation.h"
#include "lower/c_expr.h"
#include "lower/cpu/codegen.h"
#include "lower/rejection.h"
#include "ir/leir/diagnostic.h"
#include "ir/leir/identifiers.h"
#include "ir/leir/ir_mutator.h"
#include "ir/leir/printer.h"
#include "ir/leir/tensors.h"
#include "ir/leir/uniform_store.h"

namespace steptp::backend::cuda {

using leir::BinaryOp;
using leir::DType;
using leir::Expr;
using leir::ExprKind;
using leir::ExprPtr;
using leir::LoopKind;

std::string_view cuda_prelude() {
  return R"(// steptp CUDA prelude
#include <cstdint>
#include <math.h>
#include <cuda_runtime.h>
__device__ inline int64_t steptp_fdiv_i(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
__device__ inline int64_t steptp_mod_i(int64_t a, int64_t b) {
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}
template <class T> __device__ inline T steptp_floordiv(T a, T b) { return floor(a / b); }
template <class T> __device__ inline T steptp_mod(T a, T b) {
  T r = fmod(a, b);
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}
template <class T> __device__ inline T steptp_max(T a, T b) { return (a > b || a != a) ? a : b; }
template <class T> __device__ inline T steptp_min(T a, T b) { return (a < b || a != a) ? a : b; }
template <class T> __device__ inline T steptp_sigmoid(T x) { return T(1) / (T(1) + exp(-x)); }
template <class T> __device__ inline T steptp_rsqrt(T x) { return T(1) / sqrt(x); }
// Compare-and-swap reductions for operators without a native atomic.
template <class F> __device__ inline void steptp_atomic_cas(double* p, F f) {
  unsigned long long* a = reinterpret_cast<unsigned long long*>(p);
  unsigned long long old = *a, assumed;
  do {
    assumed = old;
    old = atomicCAS(a, assumed, __double_as_longlong(f(__longlong_as_double(assumed))));
  } while (assumed != old);
}
template <class F> __device__ inline void steptp_atomic_cas(float* p, F f) {
  unsigned int* a = reinterpret_cast<unsigned int*>(p);
  unsigned int old = *a, assumed;
  do {
    assumed = old;
    old = atomicCAS(a, assumed, __float_as_uint(f(__uint_as_float(assumed))));
  } while (assumed != old);
}
template <class T> __device__ inline void steptp_atomic_max(T* p, T v) { steptp_atomic_cas(p, [v](T x) { return steptp_max(x, v); }); }
template <class T> __device__ inline void steptp_atomic_min(T* p, T v) { steptp_atomic_cas(p, [v](T x) { return steptp_min(x, v); }); }
template <class T> __device__ inline void steptp_atomic_mul(T* p, T v) { steptp_atomic_cas(p, [v](T x) { return x * v; }); }
__device__ inline void steptp_atomic_add(double* p, double v) { atomicAdd(p, v); }
__device__ inline void steptp_atomic_add(float* p, float v) { atomicAdd(p, v); }
__device__ inline void steptp_atomic_add(int32_t* p, int32_t v) { atomicAdd(reinterpret_cast<int*>(p), v); }
__device__ inline void steptp_atomic_add(int64_t* p, int64_t v) {
  atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
}
)";
}

namespace {

constexpr const char* kAxisName[6] = {"threadIdx.x", "threadIdx.y", "threadIdx.z", "blockIdx.x", "blockIdx.y", "blockIdx.z"};

int axis_of(const std::string& var) {
  if (var.size() < 2) return -1;
  int base = var[0] == 't' ? 0 : var[0] == 'b' ? 3 : -1;
  int off = var[1] == 'x' ? 0 : var[1] == 'y' ? 1 : var[1] == 'z' ? 2 : -1;
  return base < 0 || off < 0 ? -1 : base + off;
}

std::string fmt_lit(double v, const std::string& ct) {
  bool f = ct == "float";
  if (std::isnan(v)) return f ? "nanf(\"\")" : "nan(\"\")";
  if (std::isinf(v)) return std::string(v < 0 ? "(-" : "(") + (f ? "HUGE_VALF" : "HUGE_VAL") + ")";
  std::string s = f ? fmt::format("{}", static_cast<float>(v)) : fmt::format("{}", v);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  if (f) s += "f";
  return v < 0 ? "(" + s + ")" : s;
}

const CSpelling kCudaSpelling = {
    fmt_lit,
    {{leir::Func::Exp, "exp"},      {leir::Func::Log, "log"},          {leir::Func::Sqrt, "sqrt"},
     {leir::Func::Abs, "fabs"},     {leir::Func::Erf, "erf"},          {leir::Func::Max, "steptp_max"},
     {leir::Func::Min, "steptp_min"}, {leir::Func::Tanh, "tanh"},      {leir::Func::Sigmoid, "steptp_sigmoid"},
     {leir::Func::Pow, "pow"},      {leir::Func::Floor, "floor"},      {leir::Func::Ceil, "ceil"},
     {leir::Func::Sin, "sin"},      {leir::Func::Cos, "cos"},          {leir::Func::Log1p, "log1p"},
     {leir::Func::Rsqrt, "steptp_rsqrt"}},
    "pow",
    ""};  // select: a GPU predicates either spelling

class Emitter : public CExprEmitter {
 public:
  Emitter(const leir::Program& p, const std::string& entry, const CudaTarget& t)
      : CExprEmitter(p, kCudaSpelling), p_(p), entry_(entry), t_(t), plan_(plan_inits(p, table_)) {}

  CudaSource run() {
    check_program();
    // Parameters: known tensors, then device-allocated (global) intermediates.
    for (const auto& name : table_.order) {
      const auto& info = table_.at(name);
      if (!info.known && info.scope != leir::Scope::Global) continue;
      params_.push_back(name);
    }
    std::string decl, call;
    for (size_t i = 0; i < params_.size(); ++i) {
      decl += fmt::format("{}{}* __restrict__ t_{}", i ? ", " : "", ctype(params_[i]), params_[i]);
      call += fmt::format("{}t_{}", i ? ", " : "", params_[i]);
    }
    std::string host;
    int kernels = 0;
    for (size_t item = 0; item < p_.body.size(); ++item) {
      for (const auto& site : plan_.init_before[item]) {
        if (table_.at(site.stmt->lhs->tensor).scope != leir::Scope::Global) continue;  // in-kernel (emit_kernel)
        std::string name = fmt::format("{}_init{}", entry_, kernels++);
        int64_t total = emit_init_kernel(name, decl, site);
        host += fmt::format("  {}<<<{}, 256>>>({});\n", name, (total + 255) / 256, call);
      }
      std::string name = fmt::format("{}_k{}", entry_, kernels++);
      auto dims = emit_kernel(name, decl, static_cast<int>(item));
      host += fmt::format("  {}<<<dim3({}, {}, {}), dim3({}, {}, {})>>>({});\n", name, dims[3], dims[4], dims[5], dims[0],
                          dims[1], dims[2], call);
    }
    out_ += fmt::format("extern \"C\" int {}(void* const* args) {{\n", entry_);
    std::string frees;
    for (size_t i = 0; i < params_.size(); ++i) {
      const auto& info = table_.at(params_[i]);
      if (info.known) {
        out_ += fmt::format("  {0}* t_{1} = static_cast<{0}*>(args[{2}]);\n", ctype(params_[i]), params_[i], i);
      } else {
        out_ += fmt::format("  {0}* t_{1} = nullptr;\n  if (cudaMalloc(&t_{1}, {2}) != cudaSuccess) return 1;\n", ctype(params_[i]),
                            params_[i], std::max<int64_t>(info.numel(), 1) * leir::byte_size(storage(params_[i])));
        frees += fmt::format("  cudaFree(t_{});\n", params_[i]);
      }
    }
    out_ += host;
    out_ += "  cudaError_t err = cudaDeviceSynchronize();\n" + frees + "  return err == cudaSuccess ? 0 : 2;\n}\n";
    return {out_, entry_, kernels};
  }

 private:
  [[noreturn]] void fail(const leir::SourceLoc& loc, RejectionCode code, const std::string& msg) const override {
    throw TargetRejection(p_.file, loc, "cuda target rejects the program: ", code, msg);
  }
  DType storage(const std::string& t) const { return cpu::cpu_storage_dtype(table_.at(t).dtype, false); }
  std::string ctype(const std::string& t) const { return std::string(cpu::cpu_ctype(storage(t))); }

  void line(const std::string& s) {
    out_.append(static_cast<size_t>(indent_) * 2, ' ');
    out_ += s;
    out_ += '\n';
  }

  // ---- legality ----
  void check_program() {
    if (!plan_.tracked.empty()) {
      const auto& x = *plan_.tracked.begin();
      fail(table_.at(x).first_use, RejectionCode::PartlySetAccumulation,
           fmt::format("accumulation into {}, whose elements may be partly set before the nest, needs per-element "
                       "tracking",
                       x));
    }
    for (const auto& name : table_.order) {
      const auto& info = table_.at(name);
      if (info.dtype == DType::F16 || info.dtype == DType::BF16 || info.dtype == DType::I8 || info.dtype == DType::I16)
        fail(info.first_use, RejectionCode::UnsupportedDtype,
             fmt::format("tensor {} has dtype {}, which this CUDA backend does not lower", name,
                         leir::to_string(info.dtype)));
    }
    // s/l buffers live in one kernel.
    std::map<std::string, std::set<size_t>> used_in;
    for (size_t i = 0; i < p_.body.size(); ++i) {
      std::function<void(const leir::Item&)> visit = [&](const leir::Item& it) {
        if (it.is_stmt()) {
          auto note = [&](const Expr& n) {
            if (n.is_access()) used_in[n.tensor].insert(i);
          };
          leir::for_each_expr(it.stmt.lhs, note);
          leir::for_each_expr(it.stmt.rhs, note);
          return;
        }
        for (const auto& b : it.nest.body) visit(b);
      };
      visit(p_.body[i]);
    }
    for (const auto& [name, items] : used_in) {
      const auto& info = table_.at(name);
      if (info.known || info.scope == leir::Scope::Global || items.size() < 2) continue;
      fail(info.first_use,
           info.scope == leir::Scope::Shared ? RejectionCode::SharedBufferAcrossKernels
                                             : RejectionCode::LocalBufferAcrossKernels,
           fmt::format("{} buffer {} is used by {} kernels (top-level nests {} and {}); {} memory does "
                       "not outlive a kernel",
                       info.scope == leir::Scope::Shared ? "shared" : "local", name, items.size(), *items.begin() + 1,
                       *std::next(items.begin()) + 1, info.scope == leir::Scope::Shared ? "shared" : "local"));
    }
    item_uses_ = used_in;
  }

  // Launch extents of one item: threads x,y,z then blocks x,y,z. Checks axis use along paths.
  std::array<int64_t, 6> launch_dims(const leir::Item& item) {
    std::array<int64_t, 6> dims{1, 1, 1, 1, 1, 1};
    std::function<void(const leir::Item&, std::array<const leir::Loop*, 6>)> walk = [&](const leir::Item& it,
                                                                                         std::array<const leir::Loop*, 6> bound) {
      if (it.is_stmt()) return;
      for (const auto& l : it.nest.loops) {
        if (l.kind != LoopKind::Bound) continue;
        int a = axis_of(l.var);
        if (a < 0)
          fail(l.loc, RejectionCode::UnboundGpuAxis,
               fmt::format("B loop variable '{}' names no GPU axis (tx, ty, tz, bx, by, bz + suffix)", l.var));
        if (bound[a])
          fail(l.loc, RejectionCode::AxisBoundTwice,
               fmt::format("{} is bound twice on one path (loops '{}' and '{}'); hardware axes must be distinct",
                           kAxisName[a], bound[a]->var, l.var));
        bound[a] = &l;
        dims[a] = std::max(dims[a], l.extent);
      }
      for (const auto& b : it.nest.body) walk(b, bound);
    };
    walk(item, {});
    int64_t threads = dims[0] * dims[1] * dims[2];
    if (threads > t_.max_threads_per_block)
      fail(item.is_nest() ? item.nest.loc : item.stmt.loc, RejectionCode::ThreadsPerBlock,
           fmt::format("{} threads per block ({} x {} x {}) exceed the limit of {}", threads, dims[0], dims[1], dims[2],
                       t_.max_threads_per_block));
    for (int a = 0; a < 3; ++a) {
      if (dims[a] > t_.max_block_dim[a])
        fail(item.nest.loc, RejectionCode::BlockExtentLimit,
             fmt::format("{} extent {} exceeds the limit {}", kAxisName[a], dims[a], t_.max_block_dim[a]));
      if (dims[3 + a] > t_.max_grid_dim[a])
        fail(item.nest.loc, RejectionCode::GridExtentLimit,
             fmt::format("{} extent {} exceeds the limit {}", kAxisName[3 + a], dims[3 + a], t_.max_grid_dim[a]));
    }
    return dims;
  }

  std::string store(const std::string& t, const std::string& v) const {
    DType st = storage(t);
    if (st == DType::Bool) return "static_cast<uint8_t>(" + v + " != 0)";
    if (leir::is_integer(st) && st != DType::I64) return fmt::format("static_cast<{}>(static_cast<int64_t>({}))", ctype(t), v);
    return fmt::format("static_cast<{}>({})", ctype(t), v);
  }

  // ---- kernels ----
  int64_t emit_init_kernel(const std::string& name, const std::string& decl, const StmtSite& site) {
    const leir::Stmt& s = *site.stmt;
    const std::vector<const leir::Loop*> used = init_loops(site).loops;
    int64_t total = 1;
    for (const auto* l : used) total *= l->extent;
    out_ += fmt::format("__global__ void {}({}) {{\n", name, decl);
    indent_ = 1;
    line("int64_t i_ = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;");
    line(fmt::format("if (i_ >= {}LL) return;", total));
    for (size_t k = used.size(); k-- > 0;) {
      line(fmt::format("const int64_t v_{} = {} + i_ % {};", used[k]->var, used[k]->start, used[k]->extent));
      line(fmt::format("i_ /= {};", used[k]->extent));
    }
    DType st = storage(s.lhs->tensor);
    AccumOp op = plan_.accum.at(&s);
    std::string ident;
    if (leir::is_floating(st)) {
      ident = fmt_lit(identity_value(op), std::string(cpu::cpu_ctype(st)));
    } else if (op == AccumOp::Max || op == AccumOp::Min) {
      fail(s.loc, RejectionCode::IntegerMinMaxReduction,
           fmt::format("max/min reduction into integer tensor {}", s.lhs->tensor));
    } else {
      ident = op == AccumOp::Mul ? "1" : "0";
    }
    line(fmt::format("t_{}[{}] = {};", s.lhs->tensor, flat(s.lhs), ident));
    out_ += "}\n";
    return total;
  }

  void emit_inline_init(const StmtSite& site) {
    const leir::Stmt& s = *site.stmt;
    int opened = 0;
    for (const auto* l : site.loops) {
      bool m = false;
      for (const auto& ix : s.lhs->args) m |= mentions_var(ix, l->var) || reads_tensor(ix);
      if (!m) continue;
      line(fmt::format("for (int64_t v_{0} = {1}; v_{0} < {2}; ++v_{0}) {{", l->var, l->start, l->start + l->extent));
      ++indent_, ++opened;
    }
    DType st = storage(s.lhs->tensor);
    AccumOp op = plan_.accum.at(&s);
    if (!leir::is_floating(st) && (op == AccumOp::Max || op == AccumOp::Min))
      fail(s.loc, RejectionCode::IntegerMinMaxReduction,
           fmt::format("max/min reduction into integer tensor {}", s.lhs->tensor));
    std::string ident = leir::is_floating(st) ? fmt_lit(identity_value(op), std::string(cpu::cpu_ctype(st)))
                                              : (op == AccumOp::Mul ? "1" : "0");
    line(fmt::format("t_{}[{}] = {};", s.lhs->tensor, flat(s.lhs), ident));
    for (int i = 0; i < opened; ++i) --indent_, line("}");
  }

  std::array<int64_t, 6> emit_kernel(const std::string& name, const std::string& decl, int item) {
    const leir::Item& it = p_.body[item];
    auto dims = launch_dims(it);
    launched_ = dims;
    int64_t shared_bytes = 0;
    out_ += fmt::format("__global__ void {}({}) {{\n", name, decl);
    indent_ = 1;
    for (const auto& [tensor, items] : item_uses_) {
      const auto& info = table_.at(tensor);
      if (info.known || info.scope == leir::Scope::Global || !items.count(item)) continue;
      int64_t bytes = std::max<int64_t>(info.numel(), 1) * leir::byte_size(storage(tensor));
      if (info.scope == leir::Scope::Shared) {
        shared_bytes += bytes;
        line(fmt::format("__shared__ {} t_{}[{}];", ctype(tensor), tensor, std::max<int64_t>(info.numel(), 1)));
      } else {
        line(fmt::format("{} t_{}[{}];  // per-thread (registers / local memory)", ctype(tensor), tensor,
                         std::max<int64_t>(info.numel(), 1)));
      }
    }
    if (shared_bytes > t_.max_shared_bytes)
      fail(
          it.is_nest() ? it.nest.loc : it.stmt.loc, RejectionCode::SharedMemoryLimit,
          fmt::format("{} bytes of shared memory per block exceed the limit of {}", shared_bytes, t_.max_shared_bytes));
    // Identity of shared/local accumulation targets: inside the kernel, since that memory only
    // exists there. Local buffers: every thread initialises its own copy; shared: one thread,
    // then a barrier.
    for (const auto& site : plan_.init_before[item]) {
      const auto& info = table_.at(site.stmt->lhs->tensor);
      if (info.scope == leir::Scope::Global) continue;
      bool sh = info.scope == leir::Scope::Shared;
      if (sh) line("if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) {"), ++indent_;
      emit_inline_init(site);
      if (sh) --indent_, line("}"), line("__syncthreads();");
    }
    bound_.clear();
    emit_item(it, true);
    out_ += "}\n";
    return dims;
  }

  void emit_items(const std::vector<leir::Item>& body, bool uniform) {
    bool threads = launched_[0] * launched_[1] * launched_[2] > 1;
    for (size_t i = 0; i < body.size(); ++i) {
      if (i > 0 && uniform && threads) line("__syncthreads();");
      emit_item(body[i], uniform);
    }
  }

  void emit_item(const leir::Item& it, bool uniform) {
    if (it.is_stmt()) return emit_stmt(it.stmt);
    int opened = 0;
    std::vector<int> axes;
    for (const auto& l : it.nest.loops) {
      if (l.kind == LoopKind::Bound) {
        written_in_[&l] = leir::tensors_written(it.nest.body);
        int a = axis_of(l.var);
        line("{");
        ++indent_;
        line(fmt::format("const int64_t v_{} = static_cast<int64_t>({}) + {};", l.var, kAxisName[a], l.start));
        line(fmt::format("if ({} < {}) {{", kAxisName[a], l.extent));
        ++indent_;
        opened += 2;
        bound_.push_back({a, &l});
        axes.push_back(a);
        uniform = false;
        continue;
      }
      if (l.kind == LoopKind::Unrolled) line(fmt::format("#pragma unroll {}", std::min<int64_t>(l.extent, 64)));
      line(fmt::format("for (int64_t v_{0} = {1}; v_{0} < {2}; ++v_{0}) {{", l.var, l.start, l.start + l.extent));
      ++indent_;
      ++opened;
      loops_.push_back(&l);
    }
    emit_items(it.nest.body, uniform);
    for (int i = 0; i < opened; ++i) {
      --indent_;
      line("}");
    }
    for (const auto& l : it.nest.loops) {
      if (l.kind == LoopKind::Bound) bound_.pop_back();
      else loops_.pop_back();
    }
  }

  void emit_stmt(const leir::Stmt& s) {
    ct_ = compute_type(s);
    // Launched axes this statement is not inside: only index 0 executes it.
    std::string guard;
    for (int a = 0; a < 6; ++a) {
      if (launched_[a] <= 1) continue;
      bool inside = false;
      for (const auto& b : bound_) inside |= b.first == a;
      if (!inside) guard += fmt::format("{}{} == 0", guard.empty() ? "" : " && ", kAxisName[a]);
    }
    // A parallel reduction: the target does not depend on some enclosing B loop. A uniform store
    // (ir/leir/uniform_store.h) there is performed once, by that loop's first index.
    bool across = false;
    const std::string& x = s.lhs->tensor;
    auto acc = plan_.accum.find(&s);
    for (const auto& b : bound_) {
      if (b.second->extent == 1) continue;  // a single iteration cannot conflict
      bool m = false;
      for (const auto& ix : s.lhs->args) m |= mentions_var(ix, b.second->var);
      if (m) continue;
      if (acc == plan_.accum.end() && leir::is_uniform_store(s, b.second->var, written_in_.at(b.second)))
        guard += fmt::format("{}v_{} == {}", guard.empty() ? "" : " && ", b.second->var, b.second->start);
      else
        across = true;
    }
    std::string stmt;
    if (across) {
      if (acc == plan_.accum.end())
        fail(s.loc, RejectionCode::NonUniformWrite,
             fmt::format("write to {} does not depend on an enclosing B loop and is neither an accumulation "
                         "nor a uniform store",
                         x));
      DType st = storage(x);
      AccumOp op = acc->second;
      bool fl = st == DType::F32 || st == DType::F64;
      bool ok = (op == AccumOp::Add && (fl || st == DType::I32 || st == DType::I64)) || (op != AccumOp::Add && fl);
      if (!ok)
        fail(s.loc, RejectionCode::NoAtomicForm,
             fmt::format("parallel reduction into {} ({}) has no atomic form", x, leir::to_string(table_.at(x).dtype)));
      std::string_view f = op == AccumOp::Add ? "steptp_atomic_add" : op == AccumOp::Max ? "steptp_atomic_max"
                           : op == AccumOp::Min ? "steptp_atomic_min" : "steptp_atomic_mul";
      std::string rest = value(accumulation_rest(s, op));
      stmt = fmt::format("{}(&t_{}[{}], {});", f, x, flat(s.lhs), store(x, rest));
    } else {
      stmt = fmt::format("t_{}[{}] = {};", x, flat(s.lhs), store(x, value(s.rhs)));
    }
    if (guard.empty()) line(stmt);
    else line(fmt::format("if ({}) {}", guard, stmt));
  }

  const leir::Program& p_;
  std::string entry_;
  CudaTarget t_;
  InitPlan plan_;
  std::vector<std::string> params_;
  std::map<std::string, std::set<size_t>> item_uses_;
  std::array<int64_t, 6> launched_{};
  std::vector<std::pair<int, const leir::Loop*>> bound_;
  std::map<const leir::Loop*, std::set<std::string>> written_in_;  // per B loop: tensors its body writes
  std::vector<const leir::Loop*> loops_;
  std::string out_;
  int indent_ = 0;
};

}  // namespace

CudaSource generate_cuda(const leir::Program& p, const std::string& entry, const CudaTarget& target) {
  // Names become CUDA C identifiers: refuse anything else, whoever built the program.
  leir::check_names(p);
  if (!leir::is_c_identifier(entry))
    throw leir::LeirError(p.file, {},
                          fmt::format("CUDA entry point {} is not a C identifier", leir::quote_text(entry)));
  return Emitter(p, entry, target).run();
}

}  // namespace steptp::backend::cuda
