#include "lower/cpu/codegen.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "ir/analysis/affine.h"
#include "lower/accumulation.h"
#include "lower/c_expr.h"
#include "lower/cpu/partition.h"
// Generated from lower/cpu/workspace.h by src/CMakeLists.txt: kCpuWorkspaceRule.
#include "cpu_workspace_rule.h"
#include "lower/rejection.h"
#include "ir/leir/diagnostic.h"
#include "ir/leir/identifiers.h"
#include "ir/leir/ir_mutator.h"
#include "ir/leir/printer.h"
#include "ir/leir/tensors.h"

namespace steptp::backend::cpu {

using leir::BinaryOp;
using leir::DType;
using leir::Expr;
using leir::ExprKind;
using leir::ExprPtr;
using leir::Func;
using leir::LoopKind;

DType cpu_storage_dtype(DType d, bool all_f64) {
  if (leir::is_floating(d)) return all_f64 ? DType::F64 : (d == DType::F64 ? DType::F64 : DType::F32);
  return d;
}

std::string_view cpu_ctype(DType d) {
  switch (d) {
    case DType::F64: return "double";
    case DType::F32:
    case DType::F16:
    case DType::BF16: return "float";
    case DType::I8: return "int8_t";
    case DType::I16: return "int16_t";
    case DType::I32: return "int32_t";
    case DType::I64: return "int64_t";
    case DType::U8:
    case DType::Bool: return "uint8_t";
  }
  return "double";
}

std::string_view cpu_prelude() {
  // The first line names the lowering's generation: the prelude's hash keys the kernel cache and
  // the machine fingerprint of stored measurements, so a lowering that changes what runs (the
  // pieces, CpuProgram::call as driver) must not find the facts of the previous one. The workspace
  // rule is CpuProgram::call's own (lower/cpu/workspace.h, embedded as kCpuWorkspaceRule).
  static const std::string prelude = R"(// steptp CPU kernel prelude (lowering: one function per top-level nest, driven by CpuProgram::call)
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#if defined(STEPTP_VECTOR_MATH) && defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    defined(__GLIBC__) && __GLIBC_PREREQ(2, 35)
// glibc's libmvec has SIMD variants of these (_ZGVdN8v_expf, _ZGVdN4vv_pow, ...; b/c/d/e = SSE4,
// AVX, AVX2, AVX-512), but <math.h> declares them only under -ffast-math, which would also drop
// the NaN/inf semantics kernels rely on. Declared here, GCC calls them in every loop it vectorizes
// (with -fno-math-errno, see CompilerOptions::vector_math); other loops keep the scalar calls.
// Special inputs (NaN, inf, denormals, overflow) take libmvec's scalar path, so they give what
// the scalar functions give. Accuracy: docs/vector-math.md.
extern "C" {
#define STEPTP_SIMD __attribute__((__simd__("notinbranch")))
STEPTP_SIMD double exp(double) noexcept;
STEPTP_SIMD float expf(float) noexcept;
STEPTP_SIMD double log(double) noexcept;
STEPTP_SIMD float logf(float) noexcept;
STEPTP_SIMD double log1p(double) noexcept;
STEPTP_SIMD float log1pf(float) noexcept;
STEPTP_SIMD double erf(double) noexcept;
STEPTP_SIMD float erff(float) noexcept;
STEPTP_SIMD double tanh(double) noexcept;
STEPTP_SIMD float tanhf(float) noexcept;
STEPTP_SIMD double sin(double) noexcept;
STEPTP_SIMD float sinf(float) noexcept;
STEPTP_SIMD double cos(double) noexcept;
STEPTP_SIMD float cosf(float) noexcept;
STEPTP_SIMD double pow(double, double) noexcept;
STEPTP_SIMD float powf(float, float) noexcept;
#undef STEPTP_SIMD
}
#endif
namespace {
inline int64_t steptp_fdiv_i(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
inline int64_t steptp_mod_i(int64_t a, int64_t b) {
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}
template <class T> inline T steptp_floordiv(T a, T b) { return std::floor(a / b); }
template <class T> inline T steptp_mod(T a, T b) {
  T r = std::fmod(a, b);
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}
// Order-preserving integer keys of floats (x < y ⇔ key(x) < key(y) for non-NaN x, y; -0 < +0),
// an involution on the bits: a max/min reduction over keys vectorizes as integer max/min,
// which the float comparison would only do with if-conversion (off, see CompilerOptions).
inline int32_t steptp_key(float x) { int32_t b; std::memcpy(&b, &x, 4); return b ^ ((b >> 31) & 0x7fffffff); }
inline int64_t steptp_key(double x) { int64_t b; std::memcpy(&b, &x, 8); return b ^ ((b >> 63) & 0x7fffffffffffffffLL); }
inline float steptp_unkey(int32_t k) { k ^= (k >> 31) & 0x7fffffff; float x; std::memcpy(&x, &k, 4); return x; }
inline double steptp_unkey(int64_t k) { k ^= (k >> 63) & 0x7fffffffffffffffLL; double x; std::memcpy(&x, &k, 8); return x; }
// The bits of a quiet NaN when x is NaN, else 0 (OR-ed into any value, they make it NaN).
inline int32_t steptp_nan_bits(float x) {
  int32_t b; std::memcpy(&b, &x, 4); return -static_cast<int32_t>((b & 0x7fffffff) > 0x7f800000) & 0x7fc00000;
}
inline int64_t steptp_nan_bits(double x) {
  int64_t b; std::memcpy(&b, &x, 8);
  return -static_cast<int64_t>((b & 0x7fffffffffffffffLL) > 0x7ff0000000000000LL) & 0x7ff8000000000000LL;
}
// max/min that propagate NaN from either side (std::fmax would drop it); -0 < +0. Branch-free
// (integer max/min of the keys, NaN bits OR-ed in), so that loops of clamps (relu6, hardtanh,
// ...) vectorize without if-conversion.
template <class T> inline T steptp_extremum(T a, T b, bool larger) {
  auto ka = steptp_key(a), kb = steptp_key(b);
  auto k = (ka > kb) == larger ? ka : kb;
  decltype(k) bits;
  T r = steptp_unkey(k);
  std::memcpy(&bits, &r, sizeof bits);
  bits |= steptp_nan_bits(a) | steptp_nan_bits(b);
  std::memcpy(&r, &bits, sizeof r);
  return r;
}
template <class T> inline T steptp_max(T a, T b) { return steptp_extremum(a, b, true); }
template <class T> inline T steptp_min(T a, T b) { return steptp_extremum(a, b, false); }
// if_then_else when both branches are safe to evaluate (c_expr.h): both are computed and the
// bits blended under an integer mask — no branch, so the loop vectorizes without if-conversion.
template <class T> inline T steptp_select(bool c, T a, T b) {
  using I = decltype(steptp_key(a));
  I m = -static_cast<I>(c), x, y;
  std::memcpy(&x, &a, sizeof x);
  std::memcpy(&y, &b, sizeof y);
  I r = (m & x) | (~m & y);
  T out;
  std::memcpy(&out, &r, sizeof out);
  return out;
}
// The same on int64, for integer-valued statements (c_expr.h integer_valued: argmax's index
// min): plain comparisons, which GCC turns into vector min/max and blends.
inline int64_t steptp_max(int64_t a, int64_t b) { return a > b ? a : b; }
inline int64_t steptp_min(int64_t a, int64_t b) { return a < b ? a : b; }
inline int64_t steptp_select(bool c, int64_t a, int64_t b) {
  int64_t m = -static_cast<int64_t>(c);
  return (m & a) | (~m & b);
}
template <class T> inline T steptp_sigmoid(T x) { return T(1) / (T(1) + std::exp(-x)); }
template <class T> inline T steptp_rsqrt(T x) { return T(1) / std::sqrt(x); }
inline float steptp_round_f16(double x) { return static_cast<float>(static_cast<_Float16>(x)); }
inline float steptp_round_bf16(double xd) {
  float x = static_cast<float>(xd);
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if ((u & 0x7f800000u) == 0x7f800000u) return x;  // inf, nan
  u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;  // round to nearest even
  std::memcpy(&x, &u, 4);
  return x;
}
)" + std::string(kCpuWorkspaceRule) + R"(}  // namespace
#pragma omp declare reduction(steptp_max : double : omp_out = steptp_max(omp_out, omp_in)) initializer(omp_priv = -std::numeric_limits<double>::infinity())
#pragma omp declare reduction(steptp_min : double : omp_out = steptp_min(omp_out, omp_in)) initializer(omp_priv = std::numeric_limits<double>::infinity())
#pragma omp declare reduction(steptp_max : float : omp_out = steptp_max(omp_out, omp_in)) initializer(omp_priv = -std::numeric_limits<float>::infinity())
#pragma omp declare reduction(steptp_min : float : omp_out = steptp_min(omp_out, omp_in)) initializer(omp_priv = std::numeric_limits<float>::infinity())
)";
  return prelude;
}

namespace {

std::string fmt_double(double v) {
  if (std::isnan(v)) return "std::numeric_limits<double>::quiet_NaN()";
  if (std::isinf(v)) return v > 0 ? "std::numeric_limits<double>::infinity()" : "(-std::numeric_limits<double>::infinity())";
  std::string s = fmt::format("{}", v);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return v < 0 ? "(" + s + ")" : s;
}

std::string fmt_float(double d) {
  float v = static_cast<float>(d);
  if (std::isnan(v)) return "std::numeric_limits<float>::quiet_NaN()";
  if (std::isinf(v)) return v > 0 ? "std::numeric_limits<float>::infinity()" : "(-std::numeric_limits<float>::infinity())";
  std::string s = fmt::format("{}", v);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  s += "f";
  return v < 0 ? "(" + s + ")" : s;
}

std::string cpu_literal(double v, const std::string& ct) {
  if (ct == "int64_t") {  // an integer-valued statement: integral literals, ±inf as an identity
    if (std::isinf(v)) return v > 0 ? "std::numeric_limits<int64_t>::max()" : "std::numeric_limits<int64_t>::lowest()";
    return fmt::format("int64_t({})", static_cast<int64_t>(v));
  }
  return ct == "double" ? fmt_double(v) : fmt_float(v);
}

const CSpelling kCpuSpelling = {
    cpu_literal,
    {{Func::Exp, "std::exp"},     {Func::Log, "std::log"},     {Func::Sqrt, "std::sqrt"},
     {Func::Abs, "std::abs"},     {Func::Erf, "std::erf"},     {Func::Max, "steptp_max"},
     {Func::Min, "steptp_min"},   {Func::Tanh, "std::tanh"},   {Func::Sigmoid, "steptp_sigmoid"},
     {Func::Pow, "std::pow"},     {Func::Floor, "std::floor"}, {Func::Ceil, "std::ceil"},
     {Func::Sin, "std::sin"},     {Func::Cos, "std::cos"},     {Func::Log1p, "std::log1p"},
     {Func::Rsqrt, "steptp_rsqrt"}},
    "std::pow",
    "steptp_select"};

class Emitter : public CExprEmitter {
 public:
  Emitter(const leir::Program& p, const CpuCodegenOptions& o)
      : CExprEmitter(p, kCpuSpelling), p_(p), o_(o), plan_(plan_inits(p, table_)) {}

  CpuKernelSource run() {
    CpuKernelSource src;
    std::map<std::string, int> param_of;
    for (const auto& d : p_.known) {
      param_of[d.name] = int(src.params.size());
      src.params.push_back({d.name, d.dtype, cpu_storage_dtype(d.dtype, o_.all_f64), d.shape, d.numel(),
                            d.role == leir::Role::Output});
    }
    // The tensors each piece touches, and how many pieces touch each intermediate.
    const size_t n = p_.body.size();
    std::vector<std::set<std::string>> uses(n);
    std::map<std::string, int> pieces_using;
    for (size_t i = 0; i < n; ++i) {
      for (const auto& site : plan_.init_before[i]) add_tensors(*site.stmt, uses[i]);
      std::vector<const leir::Stmt*> stmts;
      if (p_.body[i].is_stmt()) stmts.push_back(&p_.body[i].stmt);
      else collect(p_.body[i].nest.body, stmts);
      for (const auto* st : stmts) add_tensors(*st, uses[i]);
      for (const auto& x : uses[i]) ++pieces_using[x];
    }
    // Intermediates: a small local/shared one that one piece uses lives on that piece's stack;
    // any other is a 64-byte-aligned slice of the kernel's workspace, as are the per-element
    // "set" flags of accumulations whose identity cannot be placed statically (zeroed per call).
    std::map<std::string, int> buffer_of;  // C name -> index in src.buffers
    auto slice = [&](const std::string& cname, int64_t bytes) {
      buffer_of[cname] = int(src.buffers.size());
      src.buffers.push_back({cname, -1, src.workspace_bytes});
      src.workspace_bytes += (std::max<int64_t>(bytes, 1) + 63) / 64 * 64;
    };
    for (const auto& name : table_.order) {
      const auto& info = table_.at(name);
      if (info.known) {
        buffer_of["t_" + name] = int(src.buffers.size());
        src.buffers.push_back({"t_" + name, param_of.at(name), 0});
        continue;
      }
      const int64_t bytes = info.numel() * leir::byte_size(storage(name));
      if (info.scope != leir::Scope::Global && bytes <= o_.stack_limit_bytes && pieces_using[name] <= 1)
        stack_.insert(name);
      else
        slice("t_" + name, bytes);
    }
    for (const auto& name : plan_.tracked) {
      src.cleared.push_back({src.workspace_bytes, table_.at(name).numel()});
      slice("m_" + name, table_.at(name).numel());
    }
    for (size_t i = 0; i < n; ++i) {
      CpuPiece piece;
      std::vector<std::string> locals;
      for (const auto& x : uses[i]) {
        if (stack_.count(x)) locals.push_back(x);
        else piece.buffers.push_back(buffer_of.at("t_" + x));
        if (plan_.tracked.count(x)) piece.buffers.push_back(buffer_of.at("m_" + x));  // flags: always the workspace's
      }
      out_.clear();
      out_ += fmt::format("extern \"C\" int {}(void* const* args) {{\n", kSymbolPlaceholder);
      indent_ = 1;
      for (size_t k = 0; k < piece.buffers.size(); ++k) {
        const std::string& cname = src.buffers[size_t(piece.buffers[k])].name;
        const std::string ct(cname[0] == 'm' ? "uint8_t" : cpu_ctype(storage(cname.substr(2))));
        line(fmt::format("{0}* __restrict {1} = static_cast<{0}*>(args[{2}]);", ct, cname, k));
      }
      for (const auto& x : locals) {
        const auto& info = table_.at(x);
        line(fmt::format("alignas(64) {} t_{}[{}];  // {} scope", cpu_ctype(storage(x)), x,
                         std::max<int64_t>(info.numel(), 1), info.scope == leir::Scope::Shared ? "shared" : "local"));
      }
      for (const auto& site : plan_.init_before[i]) {
        if (const leir::Loop* at = init_in_nest(site)) init_at_[at].push_back(site.stmt);
        else if (init_in_block(site)) init_in_block_.insert(site.stmt);
        else emit_init(site);
      }
      emit_item(p_.body[i]);
      line("return 0;");
      out_ += "}\n";
      piece.code = std::move(out_);
      src.pieces.push_back(std::move(piece));
    }
    src.code = readable(src);
    return src;
  }

 private:
  // Every tensor a statement reads or writes (subscripts included).
  static void add_tensors(const leir::Stmt& s, std::set<std::string>& out) {
    auto add = [&](const Expr& e) {
      if (e.is_access()) out.insert(e.tensor);
    };
    leir::for_each_expr(s.lhs, add);
    leir::for_each_expr(s.rhs, add);
  }

  // The whole kernel as one translation unit, for reading (`steptp lower`): the pieces as static
  // functions and a driver that does what CpuProgram::run does around them.
  std::string readable(const CpuKernelSource& src) const {
    std::string out = fmt::format("// program: {}\n", p_.name);
    const std::string header = fmt::format("extern \"C\" int {}(", kSymbolPlaceholder);
    for (size_t i = 0; i < src.pieces.size(); ++i) {
      std::string code = src.pieces[i].code;
      code.replace(0, header.size(), fmt::format("static int steptp_piece_{}(", i));
      out += code;
    }
    out += header + "void* const* args) {\n";
    const bool ws = src.workspace_bytes > 0;
    if (ws) {
      out += "  static steptp_workspace ws;\n  bool ws_own = false;\n";
      out += fmt::format("  char* ws_base = steptp_workspace_take(ws, {}, &ws_own);\n", src.workspace_bytes);
      out += "  if (!ws_base) return 1;\n";
    }
    for (const auto& [offset, bytes] : src.cleared) out += fmt::format("  std::memset(ws_base + {}, 0, {});\n", offset, bytes);
    for (size_t i = 0; i < src.pieces.size(); ++i) {
      std::string a;
      for (int b : src.pieces[i].buffers) {
        const CpuBuffer& buf = src.buffers[size_t(b)];
        a += a.empty() ? "" : ", ";
        a += buf.param >= 0 ? fmt::format("args[{}] /* {} */", buf.param, buf.name)
                            : fmt::format("ws_base + {} /* {} */", buf.offset, buf.name);
      }
      out += a.empty() ? fmt::format("  steptp_piece_{}(nullptr);\n", i)
                       : fmt::format("  {{ void* const a[] = {{{}}}; steptp_piece_{}(a); }}\n", a, i);
    }
    if (ws) out += "  steptp_workspace_give(ws, ws_base, ws_own);\n";
    out += "  return 0;\n}\n";
    return out;
  }

  void line(const std::string& s) {
    out_.append(static_cast<size_t>(indent_) * 2, ' ');
    out_ += s;
    out_ += '\n';
  }

  [[noreturn]] void fail(const leir::SourceLoc& loc, RejectionCode code, const std::string& msg) const override {
    throw TargetRejection(p_.file, loc, "cpu backend: ", code, msg);
  }

  DType storage(const std::string& tensor) const {
    return cpu_storage_dtype(table_.at(tensor).dtype, o_.all_f64);
  }

  // Tracked accumulators read their running value or, before the first write, the identity.
  std::optional<std::string> access_value(const ExprPtr& e) const override {
    if (block_ && leir::equal(e, block_->stmt->lhs))
      return fmt::format("static_cast<{}>(b_{}[{}])", ct_, e->tensor, block_->slot);
    if (self_ && plan_.tracked.count(e->tensor) && leir::equal(e, self_->lhs))
      return fmt::format("(m_{0}[i_] ? static_cast<{1}>(t_{0}[i_]) : {2})", e->tensor, ct_, lit(self_identity_));
    if (hoisted_.count(e->tensor)) return fmt::format("static_cast<{}>(a_{})", ct_, e->tensor);
    return std::nullopt;
  }
  // Masks: test the stored integer.
  std::optional<std::string> access_condition(const ExprPtr& e) const override {
    if (!leir::is_floating(storage(e->tensor)) && !plan_.tracked.count(e->tensor))
      return fmt::format("(t_{}[{}] != 0)", e->tensor, flat(e));
    return std::nullopt;
  }

  std::string store(DType declared, const std::string& v) const {
    DType st = cpu_storage_dtype(declared, o_.all_f64);
    if (!o_.all_f64 && declared == DType::F16) return "steptp_round_f16(" + v + ")";
    if (!o_.all_f64 && declared == DType::BF16) return "steptp_round_bf16(" + v + ")";
    if (st == DType::Bool) return "static_cast<uint8_t>(" + v + " != 0)";
    if (leir::is_integer(st) && st != DType::I64)
      return fmt::format("static_cast<{}>(static_cast<int64_t>({}))", cpu_ctype(st), v);
    return fmt::format("static_cast<{}>({})", cpu_ctype(st), v);
  }

  void emit_stmt(const leir::Stmt& s) {
    // The all-f64 verification build keeps every statement in double.
    ct_ = !o_.all_f64 && integer_valued(s) ? "int64_t" : compute_type(s, o_.all_f64);
    const std::string& x = s.lhs->tensor;
    DType declared = table_.at(x).dtype;
    if (plan_.tracked.count(x)) {
      auto it = plan_.accum.find(&s);
      self_ = it != plan_.accum.end() ? &s : nullptr;
      if (self_) self_identity_ = identity_value(it->second);
      line("{");
      line(fmt::format("  const int64_t i_ = {};", flat(s.lhs)));
      line(fmt::format("  t_{}[i_] = {};", x, store(declared, value(s.rhs))));
      line(fmt::format("  m_{}[i_] = 1;", x));
      line("}");
      self_ = nullptr;
      return;
    }
    if (vector_extrema_.count(x)) {
      // max/min of a vector reduction: over order keys (see steptp_key), with a NaN flag in place
      // of steptp_max's NaN test (a branch, which would keep the loop scalar).
      AccumOp op = plan_.accum.at(&s);
      std::string_view t = cpu_ctype(storage(x));
      line(fmt::format("{{ const {} r_ = {};", t, store(declared, value(accumulation_rest(s, op)))));
      line(fmt::format("  k_{0} = std::{1}(k_{0}, steptp_key(r_));", x, op == AccumOp::Max ? "max" : "min"));
      line(fmt::format("  n_{} |= r_ != r_; }}", x));
    } else if (hoisted_.count(x)) line(fmt::format("a_{} = {};", x, store(declared, value(s.rhs))));
    else if (block_ && block_->stmt == &s) line(fmt::format("b_{}[{}] = {};", x, block_->slot, store(declared, value(s.rhs))));
    else line(fmt::format("t_{}[{}] = {};", x, flat(s.lhs), store(declared, value(s.rhs))));
  }

  // Whether `s`'s target tensor is touched by nothing in `stmts` but `s`'s own write and its reads
  // of exactly the element it writes: then that element may live in a local over the loops.
  static bool alone_with_its_target(const leir::Stmt& s, const std::vector<const leir::Stmt*>& stmts) {
    const std::string& x = s.lhs->tensor;
    bool alone = true;
    for (const auto* o : stmts) {
      leir::for_each_expr(o->rhs, [&](const Expr& e) {
        if (e.is_access() && e.tensor == x && !(o == &s && leir::equal(e, *s.lhs))) alone = false;
      });
      if (o != &s) leir::for_each_expr(o->lhs, [&](const Expr& e) { alone &= !(e.is_access() && e.tensor == x); });
    }
    return alone;
  }

  // Accumulations of the innermost loop `l` into one element that stays fixed over it (`S=S+e`,
  // `M=max(M,e)` over the reduced axis), when nothing else in the body touches that tensor: they
  // accumulate in a local variable, loaded before the loop and stored after it. Same operations
  // in the same order, so the same bits; but GCC vectorizes a loop that sums into a local (an
  // in-order reduction, with the vector math of the prelude for `e`) and never one that stores
  // to memory on every iteration.
  std::vector<const leir::Stmt*> hoistable(const leir::Loop& l, const std::vector<const leir::Stmt*>& stmts) const {
    std::vector<const leir::Stmt*> out;
    for (const auto* s : stmts) {
      const std::string& x = s->lhs->tensor;
      if (!plan_.accum.count(s) || plan_.tracked.count(x) || !leir::is_floating(storage(x))) continue;
      bool fixed = true;
      for (const auto& ix : s->lhs->args) fixed &= !mentions_var(ix, l.var) && !reads_tensor(ix);
      if (fixed && alone_with_its_target(*s, stmts)) out.push_back(s);
    }
    return out;
  }

  // Register blocking: a nest `... g1 ... gr [h1 ... hk] [X_idx = X_idx op e]` whose one statement
  // accumulates into a block of X that the loops h1..hk span and that the serial loops g1..gr
  // before them do not move keeps the block in a local array over g1..gr: loaded before g1,
  // updated in place, stored after it (a convolution's block stays put over all three reduction
  // loops, channel and kernel window, not only the innermost). Same operations on each element
  // in the same order, so the same bits; but GCC keeps a small local array in registers across
  // g1..gr, where the tensor itself is stored back
  // on every iteration (a tiled GEMM's 4x16 block of D: one store per FMA). This is what
  // MetaSchedule's cache_write + reverse_compute_at spell out; here the lowering does it for every
  // nest of that shape, so the tiling, reorder and unroll steps that form the block are what
  // counts.
  struct RegisterBlock {
    const leir::Stmt* stmt = nullptr;
    size_t loop = 0;                          // index of g1 in the nest's loops
    size_t first = 0;                         // index of h1
    int64_t size = 0;                         // elements of the block
    std::string slot;                         // the block element of an iteration of h1..hk
  };
  static constexpr int64_t kMaxRegisterBlock = 512;

  std::optional<RegisterBlock> register_block(const leir::Nest& n, const std::vector<const leir::Stmt*>& stmts) const {
    if (stmts.size() != 1 || n.loops.size() < 2) return std::nullopt;
    for (const auto& it : n.body)
      if (it.is_nest()) return std::nullopt;
    const leir::Stmt* s = stmts[0];
    const std::string& x = s->lhs->tensor;
    if (!plan_.accum.count(s) || plan_.tracked.count(x) || storage(x) == DType::Bool) return std::nullopt;
    if (!alone_with_its_target(*s, stmts)) return std::nullopt;
    std::vector<analysis::Affine> subs;
    for (const auto& ix : s->lhs->args) {
      auto a = analysis::to_affine(ix);
      if (!a || reads_tensor(ix)) return std::nullopt;
      subs.push_back(*a);
    }
    auto used = [&](const leir::Loop& l) {
      return std::any_of(subs.begin(), subs.end(), [&](const analysis::Affine& a) { return a.uses(l.var); });
    };
    size_t m = n.loops.size();
    while (m > 0 && used(n.loops[m - 1])) --m;
    if (m == 0 || m == n.loops.size()) return std::nullopt;
    auto stays = [&](const leir::Loop& g) {
      return (g.kind == LoopKind::Serial || g.kind == LoopKind::Unrolled) && !used(g);
    };
    size_t g1 = m;
    while (g1 > 0 && stays(n.loops[g1 - 1])) --g1;
    if (g1 == m) return std::nullopt;
    RegisterBlock b{s, g1, m, 1, ""};
    for (size_t k = m; k < n.loops.size(); ++k) {
      const leir::Loop& h = n.loops[k];
      if (h.kind == LoopKind::Parallel || h.kind == LoopKind::Bound) return std::nullopt;
      b.size *= h.extent;
      if (b.size > kMaxRegisterBlock) return std::nullopt;
      std::string v = h.start == 0 ? "v_" + h.var : fmt::format("(v_{} - {})", h.var, h.start);
      b.slot = b.slot.empty() ? v : fmt::format("({}) * {} + {}", b.slot, h.extent, v);
    }
    // Distinct iterations of h1..hk must write distinct elements (else one element would live in
    // two slots): the subscripts' parts in h1..hk take distinct values over the block.
    std::set<std::vector<int64_t>> seen;
    std::vector<int64_t> at(n.loops.size() - m, 0);
    for (int64_t e = 0; e < b.size; ++e) {
      std::vector<int64_t> key;
      for (const auto& a : subs) {
        int64_t v = 0;
        for (size_t k = m; k < n.loops.size(); ++k) v += a.coeff_of(n.loops[k].var) * (n.loops[k].start + at[k - m]);
        key.push_back(v);
      }
      if (!seen.insert(std::move(key)).second) return std::nullopt;
      for (size_t k = at.size(); k-- > 0;) {
        if (++at[k] < n.loops[m + k].extent) break;
        at[k] = 0;
      }
    }
    return b;
  }

  // Loads (`load`) or stores the block over the loops h1..hk of `n`.
  void emit_block_copy(const leir::Nest& n, const RegisterBlock& b, bool load) {
    const std::string& x = b.stmt->lhs->tensor;
    for (size_t k = b.first; k < n.loops.size(); ++k) open_loop(n.loops[k]);
    if (load && init_in_block_.count(b.stmt))
      line(fmt::format("b_{}[{}] = {};  // identity, starts the register block", x, b.slot, identity_literal(*b.stmt)));
    else if (load) line(fmt::format("b_{}[{}] = t_{}[{}];", x, b.slot, x, flat(b.stmt->lhs)));
    else line(fmt::format("t_{}[{}] = b_{}[{}];", x, flat(b.stmt->lhs), x, b.slot));
    for (size_t k = b.first; k < n.loops.size(); ++k) --indent_, line("}");
  }

  // The identity of accumulation `s`'s operator in its tensor's storage type, as C.
  std::string identity_literal(const leir::Stmt& s) {
    const AccumOp op = plan_.accum.at(&s);
    const DType st = storage(s.lhs->tensor);
    if (leir::is_floating(st) || st == DType::F64) {
      ct_ = std::string(cpu_ctype(st));
      return lit(identity_value(op));
    }
    if (op == AccumOp::Max) return fmt::format("std::numeric_limits<{}>::lowest()", cpu_ctype(st));
    if (op == AccumOp::Min) return fmt::format("std::numeric_limits<{}>::max()", cpu_ctype(st));
    return op == AccumOp::Mul ? "1" : "0";
  }

  // The target's subscripts of `s` as affine forms (nullopt: one is not affine).
  static std::optional<std::vector<analysis::Affine>> affine_subscripts(const leir::Stmt& s) {
    std::vector<analysis::Affine> subs;
    for (const auto& ix : s.lhs->args) {
      auto a = analysis::to_affine(ix);
      if (!a) return std::nullopt;
      subs.push_back(*a);
    }
    return subs;
  }

  // How many of `subs` use loop variable `var` (0: the loop does not move the element).
  static long subscripts_using(const std::vector<analysis::Affine>& subs, const std::string& var) {
    return std::count_if(subs.begin(), subs.end(), [&](const analysis::Affine& a) { return a.uses(var); });
  }

  // Whether each subscript uses at most one of `loops`: distinct iterations of them then write
  // distinct elements (the rule both the identity in the nest and a parallel identity pass rest on).
  static bool each_in_at_most_one(const std::vector<analysis::Affine>& subs,
                                  const std::vector<const leir::Loop*>& loops) {
    return std::all_of(subs.begin(), subs.end(), [&](const analysis::Affine& a) {
      return std::count_if(loops.begin(), loops.end(), [&](const leir::Loop* l) { return a.uses(l->var); }) <= 1;
    });
  }

  // The first of the trailing reduction loops of `site` when its identity may be stored in the
  // nest, just before those loops, instead of by a pass before the item: every loop before them
  // moves the written element, injectively (each subscript affine in at most one loop), none of
  // them is parallel, and nothing else in the item touches the tensor but copies of the statement
  // over disjoint ranges (loop partitioning's pieces). Then every element is accumulated in one
  // stretch of those loops, which starts from the identity as it would after the pass: the same
  // operations in the same order, so the same bits, with one pass over the tensor fewer (a
  // convolution's output is written once instead of zeroed, read back and written). nullptr: the
  // pass stays.
  const leir::Loop* init_in_nest(const StmtSite& site) const {
    const leir::Stmt& s = *site.stmt;
    const std::string& x = s.lhs->tensor;
    const auto affine = affine_subscripts(s);
    if (!affine) return nullptr;
    const std::vector<analysis::Affine>& subs = *affine;
    auto moves = [&](const leir::Loop* l) { return subscripts_using(subs, l->var) > 0; };
    const auto& loops = site.loops;
    size_t r = loops.size();
    while (r > 0 && !moves(loops[r - 1])) --r;
    if (r == loops.size()) return nullptr;
    for (size_t k = 0; k < loops.size(); ++k) {
      if (k < r && !moves(loops[k])) return nullptr;
      if (k >= r && (loops[k]->kind == LoopKind::Parallel || loops[k]->kind == LoopKind::Bound)) return nullptr;
    }
    if (!each_in_at_most_one(subs, loops)) return nullptr;
    if (!alone_with_its_target(s, {&s})) return nullptr;
    // Two copies write disjoint elements when some subscript is a*v + b in a loop v whose ranges
    // in the two do not meet (the same subscripts: the same a and b).
    auto disjoint = [&](const StmtSite& o) {
      if (o.loops.size() != loops.size()) return false;
      for (size_t k = 0; k < r; ++k) {
        const leir::Loop &l = *loops[k], &m = *o.loops[k];
        if (l.var != m.var) return false;
        if (l.start + l.extent <= m.start || m.start + m.extent <= l.start) return true;
      }
      return false;
    };
    for (const auto& o : plan_.stmts) {
      if (o.item != site.item || o.stmt == &s || !touches_tensor(*o.stmt, x)) continue;
      if (!plan_.accum.count(o.stmt) || !leir::equal(o.stmt->lhs, s.lhs) || !alone_with_its_target(*o.stmt, {o.stmt}) ||
          !disjoint(o))
        return nullptr;
    }
    return loops[r];
  }

  // Whether `s` reads or writes tensor `x`.
  static bool touches_tensor(const leir::Stmt& s, const std::string& x) {
    bool touches = false;
    for (const auto& side : {s.lhs, s.rhs})
      leir::for_each_expr(side, [&](const Expr& e) { touches |= e.is_access() && e.tensor == x; });
    return touches;
  }

  // The nest whose body holds `s` directly, inside `items` (nullptr: none does).
  static const leir::Nest* leaf_nest_of(const std::vector<leir::Item>& items, const leir::Stmt* s) {
    for (const auto& it : items) {
      if (!it.is_nest()) continue;
      for (const auto& inner : it.nest.body)
        if (inner.is_stmt() && &inner.stmt == s) return &it.nest;
      if (const leir::Nest* n = leaf_nest_of(it.nest.body, s)) return n;
    }
    return nullptr;
  }

  // Whether distinct iterations of `loops` write distinct elements through `subs`: each loop moves
  // exactly one subscript, and within a subscript the loops are digits of a mixed radix (each
  // coefficient exceeds the span of the smaller ones: 4*tx + a with a < 4). Sufficient, not
  // necessary.
  static bool mixed_radix_injective(const std::vector<analysis::Affine>& subs,
                                    const std::vector<const leir::Loop*>& loops) {
    for (const auto* l : loops)
      if (l->extent > 1 && subscripts_using(subs, l->var) != 1)
        return false;
    for (const auto& a : subs) {
      std::vector<std::pair<int64_t, int64_t>> digits;  // |coefficient|, extent
      for (const auto* l : loops)
        if (l->extent > 1 && a.uses(l->var)) digits.push_back({std::abs(a.coeff_of(l->var)), l->extent});
      std::sort(digits.begin(), digits.end());
      int64_t span = 0;  // largest distance the smaller digits reach
      for (const auto& [c, e] : digits) {
        if (c <= span) return false;
        span += c * (e - 1);
      }
    }
    return true;
  }

  // Whether the identity of `site` may start its register block instead of a pass before the
  // item: the statement's leaf nest keeps a block (register_block), every loop outside the
  // block's reduction loops moves the written element and, with the block's own loops, does so
  // injectively, and nothing else in the item touches the tensor. Then each element is
  // accumulated in exactly one block, over one stretch of its reduction loops, which starts from
  // the identity as it would after the pass: the same operations in the same order, so the same
  // bits, and no pass (a serial one, whose subscripts like 4*tx + a mix two loops) before the
  // parallel nest, whose other core would read the zeros back from the first core's cache.
  bool init_in_block(const StmtSite& site) const {
    if (!o_.register_blocks) return false;
    const leir::Stmt& s = *site.stmt;
    const leir::Nest* leaf = leaf_nest_of(p_.body, &s);
    if (!leaf) return false;
    std::vector<const leir::Stmt*> stmts;  // as emit_nest asks register_block
    collect(leaf->body, stmts);
    const auto block = register_block(*leaf, stmts);
    const auto subs = affine_subscripts(s);
    if (!block || block->stmt != &s || !subs) return false;
    // The leaf's loops are the last of the statement's enclosing loops; those from the block's
    // first reduction loop g1 up to its first block loop h1 do not move the element.
    const size_t outer = site.loops.size() - leaf->loops.size() + block->loop;
    const size_t first = site.loops.size() - leaf->loops.size() + block->first;
    std::vector<const leir::Loop*> moving(site.loops.begin(), site.loops.begin() + long(outer));
    moving.insert(moving.end(), site.loops.begin() + long(first), site.loops.end());
    // Each of them (but loops of one iteration, which repeat nothing) moves exactly one subscript.
    if (!mixed_radix_injective(*subs, moving)) return false;
    for (const auto& o : plan_.stmts)
      if (o.item == site.item && o.stmt != &s && touches_tensor(*o.stmt, s.lhs->tensor)) return false;
    return true;
  }

  // Whether the identity pass of `site` (over `init.loops`) may run on every core: the item it
  // comes before runs in parallel (a P or B loop of extent > 1 encloses the statement; a serial
  // program keeps one core), the region is large enough to pay for a parallel region, and
  // distinct iterations write distinct elements (each subscript affine in at most one of the
  // loops: no two threads store to one element).
  bool parallel_init(const StmtSite& site, const InitLoops& init) const {
    constexpr int64_t kMinParallelInit = int64_t(1) << 15;  // elements
    if (!o_.openmp || in_parallel_ || init.gather || init.loops.empty()) return false;
    const bool parallel_item = std::any_of(site.loops.begin(), site.loops.end(), [](const leir::Loop* l) {
      return (l->kind == LoopKind::Parallel || l->kind == LoopKind::Bound) && l->extent > 1;
    });
    int64_t elements = 1;
    for (const auto* l : init.loops) elements *= l->extent;
    if (!parallel_item || elements < kMinParallelInit) return false;
    const auto subs = affine_subscripts(*site.stmt);
    return subs && each_in_at_most_one(*subs, init.loops);
  }

  // Identity over exactly the region `site` writes: the loops its target subscripts use; on every
  // core where parallel_init allows (a serial pass over a convolution's output would hold up the
  // parallel nest after it).
  void emit_init(const StmtSite& site) {
    const leir::Stmt& s = *site.stmt;
    int opened = 0;
    const InitLoops init = init_loops(site);
    if (parallel_init(site, init))
      line(init.loops.size() > 1 ? "#pragma omp parallel for collapse(2)" : "#pragma omp parallel for");
    for (const auto* l : init.loops) {
      line(fmt::format("for (int64_t v_{0} = {1}; v_{0} < {2}; ++v_{0}) {{", l->var, l->start, l->start + l->extent));
      ++indent_;
      ++opened;
    }
    line(fmt::format("t_{}[{}] = {};  // accumulation identity", s.lhs->tensor, flat(s.lhs), identity_literal(s)));
    for (int i = 0; i < opened; ++i) {
      --indent_;
      line("}");
    }
  }

  void emit_item(const leir::Item& it) {
    if (it.is_stmt()) emit_stmt(it.stmt);
    else emit_nest(it.nest);
  }

  // Statements of a nest body (recursively), with the loops inside the nest that enclose them.
  static void collect(const std::vector<leir::Item>& body, std::vector<const leir::Stmt*>& out) {
    for (const auto& it : body) {
      if (it.is_stmt()) out.push_back(&it.stmt);
      else collect(it.nest.body, out);
    }
  }

  // OpenMP clause for a parallel run of loops, or nullopt when the run must stay serial.
  std::optional<std::string> parallel_clause(const std::vector<const leir::Loop*>& run,
                                             const std::vector<const leir::Stmt*>& stmts) const {
    std::map<std::string, AccumOp> reductions;
    for (const auto* s : stmts) {
      bool covers = true;
      for (const auto* l : run) {
        // One iteration races with nothing (and init_in_block takes such a loop to move nothing:
        // a reduction clause here would fold private copies into an output never set to the identity).
        if (l->extent <= 1) continue;
        bool m = false;
        for (const auto& ix : s->lhs->args) m |= mentions_var(ix, l->var);
        covers &= m;
      }
      if (covers) continue;
      auto it = plan_.accum.find(s);
      if (it == plan_.accum.end()) return std::nullopt;  // not independent: keep it serial
      const std::string& x = s->lhs->tensor;
      if (plan_.tracked.count(x)) return std::nullopt;
      auto [r, fresh] = reductions.emplace(x, it->second);
      if (!fresh && r->second != it->second) return std::nullopt;
    }
    std::string clause;
    for (const auto& [x, op] : reductions) {
      DType st = storage(x);
      if ((op == AccumOp::Max || op == AccumOp::Min) && !(st == DType::F64 || st == DType::F32)) return std::nullopt;
      if (table_.at(x).numel() > (1 << 16)) return std::nullopt;  // private copies per thread
      std::string_view o = op == AccumOp::Add ? "+" : op == AccumOp::Mul ? "*" : op == AccumOp::Max ? "steptp_max" : "steptp_min";
      clause += fmt::format(" reduction({}:t_{}[0:{}])", o, x, std::max<int64_t>(table_.at(x).numel(), 1));
    }
    return clause;
  }

  // `#pragma omp simd` clauses for the innermost `V` loop `l`, or nullopt when it must stay a plain
  // loop. Its statements either write elements indexed by `l` (independent iterations, LEIR.md
  // §3) or accumulate into a local kept over `l` (hoistable): a V loop may combine such an
  // accumulation across its iterations as a vector reduction, whose rounding may differ from the
  // serial order (LEIR.md §3, exception (1)); for max/min it does not (the order of a NaN-free
  // max is immaterial, and NaN is carried by a flag). Sets vector_extrema_ for emit_stmt.
  std::optional<std::string> simd_clause(const leir::Loop& l, const std::vector<const leir::Stmt*>& stmts) {
    std::string clause;
    std::set<std::string> extrema;
    for (const auto* s : stmts) {
      const std::string& x = s->lhs->tensor;
      if (plan_.tracked.count(x)) return std::nullopt;
      auto h = hoisted_.find(x);
      if (h == hoisted_.end() || h->second != s) {
        bool m = false;
        for (const auto& ix : s->lhs->args) m |= mentions_var(ix, l.var);
        if (!m) return std::nullopt;
        continue;
      }
      DType declared = table_.at(x).dtype;
      if (declared != DType::F32 && declared != DType::F64) return std::nullopt;  // f16/bf16 round per step
      switch (plan_.accum.at(s)) {
        case AccumOp::Add: clause += fmt::format(" reduction(+:a_{})", x); break;
        case AccumOp::Mul: clause += fmt::format(" reduction(*:a_{})", x); break;
        case AccumOp::Max: clause += fmt::format(" reduction(max:k_{0}) reduction(|:n_{0})", x), extrema.insert(x); break;
        case AccumOp::Min: clause += fmt::format(" reduction(min:k_{0}) reduction(|:n_{0})", x), extrema.insert(x); break;
      }
    }
    vector_extrema_ = std::move(extrema);
    return clause;
  }

  void emit_nest(const leir::Nest& n) {
    std::vector<const leir::Stmt*> stmts;
    collect(n.body, stmts);
    bool body_has_nest = std::any_of(n.body.begin(), n.body.end(), [](const leir::Item& i) { return i.is_nest(); });
    bool entered_parallel = false;
    int opened = 0;
    size_t j = 0;
    std::optional<RegisterBlock> block = block_ || !o_.register_blocks ? std::nullopt : register_block(n, stmts);
    while (j < n.loops.size()) {
      const leir::Loop& l = n.loops[j];
      if (auto at = init_at_.find(&l); at != init_at_.end())
        for (const auto* s : at->second)
          line(fmt::format("t_{}[{}] = {};  // identity, before the reduction", s->lhs->tensor, flat(s->lhs),
                           identity_literal(*s)));
      if (block && j == block->loop) {
        line("{"), ++indent_;
        line(fmt::format("{} b_{}[{}];  // register block", cpu_ctype(storage(block->stmt->lhs->tensor)),
                         block->stmt->lhs->tensor, block->size));
        emit_block_copy(n, *block, /*load=*/true);
        block_ = block;
      }
      auto is_par = [](LoopKind k) { return k == LoopKind::Parallel || k == LoopKind::Bound; };
      size_t run_end = j;
      if (o_.openmp && !in_parallel_ && is_par(l.kind)) {
        while (run_end < n.loops.size() && is_par(n.loops[run_end].kind)) ++run_end;
        std::vector<const leir::Loop*> run;
        for (size_t k = j; k < run_end; ++k) run.push_back(&n.loops[k]);
        if (auto clause = parallel_clause(run, stmts)) {
          std::string collapse = run.size() > 1 ? fmt::format(" collapse({})", run.size()) : "";
          line(fmt::format("#pragma omp parallel for{}{}", collapse, *clause));
          for (size_t k = j; k < run_end; ++k) open_loop(n.loops[k]), ++opened;
          in_parallel_ = true;
          entered_parallel = true;
          j = run_end;
          continue;
        }
      }
      if (j + 1 == n.loops.size() && !body_has_nest) {
        auto hoist = hoistable(l, stmts);
        if (!hoist.empty()) line("{"), ++indent_;
        for (const auto* s : hoist) {
          const std::string& x = s->lhs->tensor;
          line(fmt::format("{} a_{} = t_{}[{}];", cpu_ctype(storage(x)), x, x, flat(s->lhs)));
          hoisted_.emplace(x, s);
        }
      }
      std::optional<std::string> simd;
      if (o_.openmp && l.kind == LoopKind::Vectorized && j + 1 == n.loops.size() && !body_has_nest)
        simd = simd_clause(l, stmts);
      if (simd) {
        for (const auto& x : vector_extrema_) line(fmt::format("auto k_{0} = steptp_key(a_{0}); int n_{0} = a_{0} != a_{0};", x));
        line("#pragma omp simd" + *simd);
      } else if (l.kind == LoopKind::Unrolled) {
        line(fmt::format("#pragma GCC unroll {}", std::min<int64_t>(l.extent, 64)));
      }
      open_loop(l);
      ++opened;
      ++j;
    }
    for (const auto& it : n.body) emit_item(it);
    for (int i = 0; i < opened; ++i) {
      --indent_;
      line("}");
      if (block && static_cast<size_t>(opened - 1 - i) == block->loop) {
        block_.reset();
        emit_block_copy(n, *block, /*load=*/false);
        --indent_;
        line("}");
      }
      if (i == 0 && !hoisted_.empty()) {
        for (const auto& x : vector_extrema_)
          line(fmt::format("a_{0} = n_{0} ? std::numeric_limits<{1}>::quiet_NaN() : steptp_unkey(k_{0});", x,
                           cpu_ctype(storage(x))));
        for (const auto& [x, st] : hoisted_) line(fmt::format("t_{}[{}] = a_{};", x, flat(st->lhs), x));
        hoisted_.clear();
        vector_extrema_.clear();
        --indent_;
        line("}");
      }
    }
    if (entered_parallel) in_parallel_ = false;
  }

  void open_loop(const leir::Loop& l) {
    line(fmt::format("for (int64_t v_{0} = {1}; v_{0} < {2}; ++v_{0}) {{", l.var, l.start, l.start + l.extent));
    ++indent_;
  }

  const leir::Program& p_;
  CpuCodegenOptions o_;
  InitPlan plan_;
  std::set<std::string> stack_;
  std::string out_;
  int indent_ = 0;
  bool in_parallel_ = false;
  std::map<std::string, const leir::Stmt*> hoisted_;  // tensor -> its accumulation kept in a_<tensor>
  std::set<std::string> vector_extrema_;  // hoisted max/min reduced by the current simd loop
  const leir::Stmt* self_ = nullptr;
  double self_identity_ = 0;
  std::optional<RegisterBlock> block_;  // the register block of the nest being emitted
  // Accumulations whose identity is stored before this loop of theirs (init_in_nest).
  std::map<const leir::Loop*, std::vector<const leir::Stmt*>> init_at_;
  // Accumulations whose register block starts from the identity (init_in_block).
  std::set<const leir::Stmt*> init_in_block_;
};

}  // namespace

CpuKernelSource generate_cpu_kernel(const leir::Program& p, const CpuCodegenOptions& o) {
  // Names become C++ identifiers and the program name a comment: refuse anything else, whoever
  // built the program.
  leir::check_names(p);
  if (!o.partition_loops) return Emitter(p, o).run();
  const leir::Program split = partition_loops(p);
  return Emitter(split, o).run();
}

}  // namespace steptp::backend::cpu
