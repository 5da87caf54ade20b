#include "backend/cpu/codegen.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "backend/accumulation.h"
#include "backend/index_expr.h"
#include "leir/diagnostic.h"
#include "leir/ir_mutator.h"
#include "leir/printer.h"
#include "leir/tensors.h"

namespace steptp::backend::cpu {

using leir::BinaryOp;
using leir::DType;
using leir::Expr;
using leir::ExprKind;
using leir::ExprPtr;
using leir::LeirError;
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
  return R"(// steptp CPU kernel prelude
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
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
// max/min that propagate NaN from either side (std::fmax would drop it).
template <class T> inline T steptp_max(T a, T b) { return (a > b || a != a) ? a : b; }
template <class T> inline T steptp_min(T a, T b) { return (a < b || a != a) ? a : b; }
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
template <class T> inline T* steptp_alloc(int64_t n) {
  size_t bytes = (static_cast<size_t>(n) * sizeof(T) + 63) / 64 * 64;
  return static_cast<T*>(std::aligned_alloc(64, bytes ? bytes : 64));
}
}  // namespace
#pragma omp declare reduction(steptp_max : double : omp_out = steptp_max(omp_out, omp_in)) initializer(omp_priv = -std::numeric_limits<double>::infinity())
#pragma omp declare reduction(steptp_min : double : omp_out = steptp_min(omp_out, omp_in)) initializer(omp_priv = std::numeric_limits<double>::infinity())
#pragma omp declare reduction(steptp_max : float : omp_out = steptp_max(omp_out, omp_in)) initializer(omp_priv = -std::numeric_limits<float>::infinity())
#pragma omp declare reduction(steptp_min : float : omp_out = steptp_min(omp_out, omp_in)) initializer(omp_priv = std::numeric_limits<float>::infinity())
)";
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

class Emitter {
 public:
  Emitter(const leir::Program& p, const CpuCodegenOptions& o)
      : p_(p), o_(o), table_(leir::build_tensor_table(p)), plan_(plan_inits(p, table_)) {}

  CpuKernelSource run() {
    CpuKernelSource src;
    out_ += fmt::format("// program: {}\n", p_.name);
    out_ += fmt::format("extern \"C\" int {}(void* const* args) {{\n", kSymbolPlaceholder);
    indent_ = 1;
    int arg = 0;
    for (const auto& d : p_.known) {
      DType st = cpu_storage_dtype(d.dtype, o_.all_f64);
      line(fmt::format("{0}* __restrict t_{1} = static_cast<{0}*>(args[{2}]);", cpu_ctype(st), d.name, arg++));
      src.params.push_back({d.name, d.dtype, st, d.shape, d.numel(), d.role == leir::Role::Output});
    }
    std::vector<std::string> frees;
    for (const auto& name : table_.order) {
      const auto& info = table_.at(name);
      if (info.known) continue;
      DType st = cpu_storage_dtype(info.dtype, o_.all_f64);
      int64_t bytes = info.numel() * leir::byte_size(st);
      if (info.scope != leir::Scope::Global && bytes <= o_.stack_limit_bytes) {
        line(fmt::format("alignas(64) {} t_{}[{}];  // {} scope", cpu_ctype(st), name, std::max<int64_t>(info.numel(), 1),
                         info.scope == leir::Scope::Shared ? "shared" : "local"));
        stack_.insert(name);
      } else {
        line(fmt::format("{0}* __restrict t_{1} = steptp_alloc<{0}>({2});", cpu_ctype(st), name, info.numel()));
        frees.push_back("t_" + name);
      }
    }
    for (const auto& name : plan_.tracked) {
      // Per-element "set" flags for accumulations whose identity cannot be placed statically.
      line(fmt::format("uint8_t* m_{0} = steptp_alloc<uint8_t>({1});", name, table_.at(name).numel()));
      frees.push_back("m_" + name);
    }
    if (!frees.empty()) {
      std::string cond;
      for (const auto& f : frees) cond += (cond.empty() ? "!" : " || !") + f;
      line(fmt::format("if ({}) {{", cond));
      for (const auto& f : frees) line("  std::free(" + f + ");");
      line("  return 1;");
      line("}");
    }
    for (const auto& name : plan_.tracked)
      line(fmt::format("std::memset(m_{}, 0, {});", name, table_.at(name).numel()));

    for (size_t i = 0; i < p_.body.size(); ++i) {
      for (const auto& site : plan_.init_before[i]) emit_init(site);
      emit_item(p_.body[i]);
    }
    for (const auto& f : frees) line("std::free(" + f + ");");
    line("return 0;");
    out_ += "}\n";
    src.code = std::move(out_);
    return src;
  }

 private:
  void line(const std::string& s) {
    out_.append(static_cast<size_t>(indent_) * 2, ' ');
    out_ += s;
    out_ += '\n';
  }

  [[noreturn]] void fail(const leir::SourceLoc& loc, const std::string& msg) const {
    throw LeirError(p_.file, loc, "cpu backend: " + msg);
  }

  DType storage(const std::string& tensor) const {
    return cpu_storage_dtype(table_.at(tensor).dtype, o_.all_f64);
  }

  // ---- subscripts (int64) ----
  std::string index(const ExprPtr& e) const {
    static const IndexSpelling kC = {
        [](int64_t v) { return fmt::format("{}LL", v); },
        [](const leir::Expr& v) { return "v_" + v.var_name(); },
        nullptr, "steptp_fdiv_i", "steptp_mod_i", true};
    IndexSpelling s = kC;
    s.gather = [this](const ExprPtr& a) { return fmt::format("static_cast<int64_t>(t_{}[{}])", a->tensor, flat(a)); };
    return emit_index(e, s, [this](leir::SourceLoc loc, const std::string& m) { fail(loc, m); });
  }

  std::string flat(const ExprPtr& access) const {
    const auto& info = table_.at(access->tensor);
    if (access->args.size() != info.shape.size())
      fail(access->loc, fmt::format("{} has rank {}, accessed with {} subscripts", access->tensor, info.shape.size(),
                                    access->args.size()));
    if (info.shape.empty()) return "0";
    std::string s;
    int64_t stride = 1;
    std::vector<std::string> parts(info.shape.size());
    for (size_t d = info.shape.size(); d-- > 0;) {
      std::string ix = index(access->args[d]);
      parts[d] = stride == 1 ? ix : fmt::format("{} * {}LL", ix, stride);
      stride *= info.shape[d];
    }
    for (size_t d = 0; d < parts.size(); ++d) s += (d ? " + " : "") + parts[d];
    return s;
  }

  // ---- values (compute type ct_) ----
  std::string lit(double v) const { return ct_ == "double" ? fmt_double(v) : fmt_float(v); }

  std::string cond(const ExprPtr& e) const {
    if (e->kind == ExprKind::Compare) {
      std::string s;
      for (size_t i = 0; i < e->cmp_ops.size(); ++i) {
        if (i) s += " && ";
        s += "(" + value(e->args[i]) + " " + std::string(leir::to_string(e->cmp_ops[i])) + " " + value(e->args[i + 1]) + ")";
      }
      return "(" + s + ")";
    }
    if (e->kind == ExprKind::Binary && (e->bop == BinaryOp::And || e->bop == BinaryOp::Or))
      return "(" + cond(e->args[0]) + (e->bop == BinaryOp::And ? " && " : " || ") + cond(e->args[1]) + ")";
    if (e->is_access() && !leir::is_floating(storage(e->tensor)) && !plan_.tracked.count(e->tensor))
      return fmt::format("(t_{}[{}] != 0)", e->tensor, flat(e));  // masks: test the stored integer
    return "(" + value(e) + " != " + lit(0) + ")";
  }

  std::string value(const ExprPtr& e) const {
    switch (e->kind) {
      case ExprKind::Number: return lit(e->value);
      case ExprKind::IndexVar: return fmt::format("static_cast<{}>(v_{})", ct_, e->var_name());
      case ExprKind::Access:
        if (self_ && plan_.tracked.count(e->tensor) && leir::equal(e, self_->lhs))
          return fmt::format("(m_{0}[i_] ? static_cast<{1}>(t_{0}[i_]) : {2})", e->tensor, ct_, lit(self_identity_));
        return fmt::format("static_cast<{}>(t_{}[{}])", ct_, e->tensor, flat(e));
      case ExprKind::Unary: return "(-" + value(e->args[0]) + ")";
      case ExprKind::Compare: return "(" + cond(e) + " ? " + lit(1) + " : " + lit(0) + ")";
      case ExprKind::Binary: {
        if (e->bop == BinaryOp::And || e->bop == BinaryOp::Or) return "(" + cond(e) + " ? " + lit(1) + " : " + lit(0) + ")";
        std::string a = value(e->args[0]), b = value(e->args[1]);
        switch (e->bop) {
          case BinaryOp::Add: return "(" + a + " + " + b + ")";
          case BinaryOp::Sub: return "(" + a + " - " + b + ")";
          case BinaryOp::Mul: return "(" + a + " * " + b + ")";
          case BinaryOp::Div: return "(" + a + " / " + b + ")";
          case BinaryOp::FloorDiv: return "steptp_floordiv(" + a + ", " + b + ")";
          case BinaryOp::Mod: return "steptp_mod(" + a + ", " + b + ")";
          case BinaryOp::Pow: return "std::pow(" + a + ", " + b + ")";
          default: break;
        }
        break;
      }
      case ExprKind::Call: {
        using leir::Func;
        if (e->func == Func::IfThenElse)  // lazy: only the taken branch runs (prefix scans need it)
          return "(" + cond(e->args[0]) + " ? " + value(e->args[1]) + " : " + value(e->args[2]) + ")";
        std::vector<std::string> a;
        for (const auto& x : e->args) a.push_back(value(x));
        auto call = [&](std::string_view f) {
          std::string s = std::string(f) + "(";
          for (size_t i = 0; i < a.size(); ++i) s += (i ? ", " : "") + a[i];
          return s + ")";
        };
        switch (e->func) {
          case Func::Exp: return call("std::exp");
          case Func::Log: return call("std::log");
          case Func::Sqrt: return call("std::sqrt");
          case Func::Abs: return call("std::abs");
          case Func::Erf: return call("std::erf");
          case Func::Max: return call("steptp_max");
          case Func::Min: return call("steptp_min");
          case Func::Tanh: return call("std::tanh");
          case Func::Sigmoid: return call("steptp_sigmoid");
          case Func::Pow: return call("std::pow");
          case Func::Floor: return call("std::floor");
          case Func::Ceil: return call("std::ceil");
          case Func::Sin: return call("std::sin");
          case Func::Cos: return call("std::cos");
          case Func::Log1p: return call("std::log1p");
          case Func::Rsqrt: return call("steptp_rsqrt");
          case Func::IfThenElse: break;
        }
        break;
      }
    }
    fail(e->loc, fmt::format("cannot lower expression '{}'", leir::print_expr(e)));
  }

  // Compute type of a statement: double when anything is f64 (or in the all-f64 build) or when
  // nothing is floating (integer programs follow the real-valued semantics); float otherwise.
  std::string compute_type(const leir::Stmt& s) const {
    if (o_.all_f64) return "double";
    bool any_f64 = false, any_float = false;
    auto look = [&](const Expr& n) {
      if (!n.is_access()) return;
      DType d = table_.at(n.tensor).dtype;
      any_f64 |= d == DType::F64;
      any_float |= leir::is_floating(d);
    };
    leir::for_each_expr(s.lhs, look);
    leir::for_each_expr(s.rhs, look);
    return (any_f64 || !any_float) ? "double" : "float";
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
    ct_ = compute_type(s);
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
    line(fmt::format("t_{}[{}] = {};", x, flat(s.lhs), store(declared, value(s.rhs))));
  }

  // Identity over exactly the region `site` writes: the loops its target subscripts use.
  void emit_init(const StmtSite& site) {
    const leir::Stmt& s = *site.stmt;
    AccumOp op = plan_.accum.at(&s);
    bool gather = false;
    for (const auto& ix : s.lhs->args) gather |= reads_tensor(ix);
    int opened = 0;
    for (const auto* l : site.loops) {
      bool used = gather;
      for (const auto& ix : s.lhs->args) used |= mentions_var(ix, l->var);
      if (!used) continue;
      line(fmt::format("for (int64_t v_{0} = {1}; v_{0} < {2}; ++v_{0}) {{", l->var, l->start, l->start + l->extent));
      ++indent_;
      ++opened;
    }
    DType st = storage(s.lhs->tensor);
    std::string ident;
    if (leir::is_floating(st) || st == DType::F64) {
      ct_ = std::string(cpu_ctype(st));
      ident = lit(identity_value(op));
    } else if (op == AccumOp::Max) {
      ident = fmt::format("std::numeric_limits<{}>::lowest()", cpu_ctype(st));
    } else if (op == AccumOp::Min) {
      ident = fmt::format("std::numeric_limits<{}>::max()", cpu_ctype(st));
    } else {
      ident = op == AccumOp::Mul ? "1" : "0";
    }
    line(fmt::format("t_{}[{}] = {};  // accumulation identity", s.lhs->tensor, flat(s.lhs), ident));
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

  void emit_nest(const leir::Nest& n) {
    std::vector<const leir::Stmt*> stmts;
    collect(n.body, stmts);
    bool body_has_nest = std::any_of(n.body.begin(), n.body.end(), [](const leir::Item& i) { return i.is_nest(); });
    bool entered_parallel = false;
    int opened = 0;
    size_t j = 0;
    while (j < n.loops.size()) {
      const leir::Loop& l = n.loops[j];
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
      if (o_.openmp && l.kind == LoopKind::Vectorized && j + 1 == n.loops.size() && !body_has_nest &&
          std::all_of(stmts.begin(), stmts.end(), [&](const leir::Stmt* s) {
            bool m = false;
            for (const auto& ix : s->lhs->args) m |= mentions_var(ix, l.var);
            return m && !plan_.tracked.count(s->lhs->tensor);
          })) {
        line("#pragma omp simd");
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
    }
    if (entered_parallel) in_parallel_ = false;
  }

  void open_loop(const leir::Loop& l) {
    line(fmt::format("for (int64_t v_{0} = {1}; v_{0} < {2}; ++v_{0}) {{", l.var, l.start, l.start + l.extent));
    ++indent_;
  }

  const leir::Program& p_;
  CpuCodegenOptions o_;
  leir::TensorTable table_;
  InitPlan plan_;
  std::set<std::string> stack_;
  std::string out_;
  int indent_ = 0;
  bool in_parallel_ = false;
  std::string ct_ = "double";
  const leir::Stmt* self_ = nullptr;
  double self_identity_ = 0;
};

}  // namespace

CpuKernelSource generate_cpu_kernel(const leir::Program& p, const CpuCodegenOptions& o) {
  return Emitter(p, o).run();
}

}  // namespace steptp::backend::cpu
