#include "lower/tir/tvmscript.h"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <set>

#include "lower/accumulation.h"
#include "lower/index_expr.h"
#include "lower/rejection.h"
#include "ir/leir/diagnostic.h"
#include "ir/leir/identifiers.h"
#include "ir/leir/ir_mutator.h"
#include "ir/leir/printer.h"
#include "ir/leir/tensors.h"
#include "ir/leir/uniform_store.h"

namespace steptp::backend::tir {

using leir::BinaryOp;
using leir::DType;
using leir::Expr;
using leir::ExprKind;
using leir::ExprPtr;
using leir::LoopKind;

std::string_view to_string(TirDialect d) { return d == TirDialect::Current ? "sblock" : "block"; }

bool parse_dialect(std::string_view s, TirDialect* out) {
  if (s == "sblock" || s == "current" || s == "new") return *out = TirDialect::Current, true;
  if (s == "block" || s == "legacy" || s == "old") return *out = TirDialect::Legacy, true;
  return false;
}

namespace {

std::string_view tvm_dtype(DType d) {
  switch (d) {
    case DType::F16: return "float16";
    case DType::BF16: return "bfloat16";
    case DType::F32: return "float32";
    case DType::F64: return "float64";
    case DType::I8: return "int8";
    case DType::I16: return "int16";
    case DType::I32: return "int32";
    case DType::I64: return "int64";
    case DType::U8: return "uint8";
    case DType::Bool: return "bool";
  }
  return "float64";
}

const std::set<std::string>& python_reserved() {
  static const std::set<std::string> r{
      "and", "as", "assert", "async", "await", "break", "class", "continue", "def", "del", "elif", "else", "except",
      "finally", "for", "from", "global", "if", "import", "in", "is", "lambda", "nonlocal", "not", "or", "pass",
      "raise", "return", "try", "while", "with", "yield", "range", "main", "T", "I", "None", "True", "False"};
  return r;
}

std::string py_name(const std::string& n) { return python_reserved().count(n) ? n + "_" : n; }

std::string shape_tuple(const std::vector<int64_t>& shape) {
  if (shape.empty()) return "()";
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

std::string thread_tag(const std::string& var) {
  if (var.size() >= 2) {
    char a = var[0], b = var[1];
    if ((a == 't' || a == 'b') && (b == 'x' || b == 'y' || b == 'z'))
      return fmt::format("{}.{}", a == 't' ? "threadIdx" : "blockIdx", b);
  }
  return "";
}

struct Emitter {
  const leir::Program& p;
  TirOptions o;
  leir::TensorTable table;
  InitPlan plan;
  std::string out;
  int indent = 2;
  int block_counter = 0;
  std::vector<const leir::Loop*> loops;  // enclosing loops of the current point
  // Inside a block: loop var -> block var expression ("v_a" or "(v_a + 3)").
  std::map<std::string, std::string> block_vars;
  std::string ct = "float64";
  std::map<const leir::Stmt*, std::string> init_kind;  // "tinit", "subst", or absent
  std::set<const leir::Loop*> reducing_vector_loops;  // V loops with an accumulation across iterations

  Emitter(const leir::Program& prog, const TirOptions& opts)
      : p(prog), o(opts), table(leir::build_tensor_table(prog)), plan(plan_inits(prog, table)) {}

  [[noreturn]] void fail(leir::SourceLoc loc, RejectionCode code, const std::string& msg) const {
    throw TargetRejection(p.file, loc, "tir target: ", code, msg);
  }

  void line(const std::string& s) {
    out.append(static_cast<size_t>(indent) * 4, ' ');
    out += s;
    out += '\n';
  }

  std::string lit(double v, const std::string& dtype) const {
    if (std::isnan(v)) return fmt::format("T.{}(\"nan\")", dtype);
    if (std::isinf(v)) return fmt::format("T.{}(\"{}inf\")", dtype, v < 0 ? "-" : "");
    std::string s = fmt::format("{}", v);
    return fmt::format("T.{}({})", dtype, s);
  }

  // ---- subscripts ----
  std::string index(const ExprPtr& e) const {
    IndexSpelling s{
        [](int64_t v) { return std::to_string(v); },
        [this](const leir::Expr& v) {
          auto it = block_vars.find(v.var_name());
          if (it == block_vars.end())
            fail(v.loc, RejectionCode::UnboundIndexVariable,
                 fmt::format("index variable '{}' is not bound", v.var_name()));
          return it->second;
        },
        [this](const ExprPtr& a) { return fmt::format("T.Cast(\"int32\", {})", access(a)); },
        "T.floordiv", "T.floormod", false};
    return emit_index(e, s, [this](leir::SourceLoc loc, RejectionCode c, const std::string& m) { fail(loc, c, m); });
  }

  static std::string strip_parens(std::string s) {
    if (s.size() >= 2 && s.front() == '(' && s.back() == ')') {
      int depth = 0;
      for (size_t i = 0; i < s.size(); ++i) {
        depth += s[i] == '(' ? 1 : s[i] == ')' ? -1 : 0;
        if (depth == 0 && i + 1 < s.size()) return s;
      }
      return s.substr(1, s.size() - 2);
    }
    return s;
  }

  std::string access(const ExprPtr& e) const {
    std::string s = py_name(e->tensor) + "[";
    if (e->args.empty()) return s + "()]";
    for (size_t i = 0; i < e->args.size(); ++i) s += (i ? ", " : "") + strip_parens(index(e->args[i]));
    return s + "]";
  }

  // Region text for reads/writes: the point, or the whole buffer for data-dependent subscripts.
  std::string region(const ExprPtr& e) const {
    bool gather = false;
    for (const auto& ix : e->args) gather |= reads_tensor(ix);
    if (!gather) return access(e);
    const auto& shape = table.at(e->tensor).shape;
    std::string s = py_name(e->tensor) + "[";
    for (size_t i = 0; i < shape.size(); ++i) s += fmt::format("{}0:{}", i ? ", " : "", shape[i]);
    return s + "]";
  }

  // ---- values ----
  std::string cond(const ExprPtr& e) const {
    if (e->kind == ExprKind::Compare) {
      std::vector<std::string> parts;
      for (size_t i = 0; i < e->cmp_ops.size(); ++i)
        parts.push_back(value(e->args[i]) + " " + std::string(leir::to_string(e->cmp_ops[i])) + " " + value(e->args[i + 1]));
      std::string s = parts[0];
      for (size_t i = 1; i < parts.size(); ++i) s = "T.And(" + s + ", " + parts[i] + ")";
      return s;
    }
    if (e->kind == ExprKind::Binary && (e->bop == BinaryOp::And || e->bop == BinaryOp::Or))
      return fmt::format("T.{}({}, {})", e->bop == BinaryOp::And ? "And" : "Or", cond(e->args[0]), cond(e->args[1]));
    return value(e) + " != " + lit(0, ct);
  }

  std::string value(const ExprPtr& e) const {
    switch (e->kind) {
      case ExprKind::Number: return lit(e->value, ct);
      case ExprKind::IndexVar: return fmt::format("T.Cast(\"{}\", {})", ct, strip_parens(index(e)));
      case ExprKind::Access: {
        auto it = subst_.find(e.get());
        if (it != subst_.end()) return it->second;
        std::string a = access(e);
        if (tvm_dtype(table.at(e->tensor).dtype) == ct) return a;
        return fmt::format("T.Cast(\"{}\", {})", ct, a);
      }
      case ExprKind::Unary: return "-" + value(e->args[0]);
      case ExprKind::Compare: return fmt::format("T.Cast(\"{}\", {})", ct, cond(e));
      case ExprKind::Binary: {
        if (e->bop == BinaryOp::And || e->bop == BinaryOp::Or) return fmt::format("T.Cast(\"{}\", {})", ct, cond(e));
        std::string a = value(e->args[0]), b = value(e->args[1]);
        switch (e->bop) {
          case BinaryOp::Add: return "(" + a + " + " + b + ")";
          case BinaryOp::Sub: return "(" + a + " - " + b + ")";
          case BinaryOp::Mul: return "(" + a + " * " + b + ")";
          case BinaryOp::Div: return "(" + a + " / " + b + ")";
          case BinaryOp::FloorDiv: return "T.floor(" + a + " / " + b + ")";
          case BinaryOp::Mod: return "(" + a + " - T.floor(" + a + " / " + b + ") * " + b + ")";
          case BinaryOp::Pow: return "T.pow(" + a + ", " + b + ")";
          default: break;
        }
        break;
      }
      case ExprKind::Call: {
        using leir::Func;
        if (e->func == Func::IfThenElse)  // lazy, like LEIR: only the taken branch is evaluated
          return fmt::format("T.if_then_else({}, {}, {})", cond(e->args[0]), value(e->args[1]), value(e->args[2]));
        std::string args;
        for (size_t i = 0; i < e->args.size(); ++i) args += (i ? ", " : "") + value(e->args[i]);
        std::string_view f;
        switch (e->func) {
          case Func::Exp: f = "exp"; break;
          case Func::Log: f = "log"; break;
          case Func::Sqrt: f = "sqrt"; break;
          case Func::Abs: f = "fabs"; break;
          case Func::Erf: f = "erf"; break;
          case Func::Max: f = "max"; break;
          case Func::Min: f = "min"; break;
          case Func::Tanh: f = "tanh"; break;
          case Func::Sigmoid: f = "sigmoid"; break;
          case Func::Pow: f = "pow"; break;
          case Func::Floor: f = "floor"; break;
          case Func::Ceil: f = "ceil"; break;
          case Func::Sin: f = "sin"; break;
          case Func::Cos: f = "cos"; break;
          case Func::Log1p: f = "log1p"; break;
          case Func::Rsqrt: f = "rsqrt"; break;
          case Func::IfThenElse: break;
        }
        return fmt::format("T.{}({})", f, args);
      }
    }
    fail(e->loc, RejectionCode::UnloweredExpression, fmt::format("cannot lower expression '{}'", leir::print_expr(e)));
  }

  std::string compute_type(const leir::Stmt& s) const {
    int rank = -1;  // f16/bf16 0, f32 1, f64 2
    DType best = DType::F64;
    auto look = [&](const Expr& n) {
      if (!n.is_access()) return;
      DType d = table.at(n.tensor).dtype;
      int r = d == DType::F64 ? 2 : d == DType::F32 ? 1 : (d == DType::F16 || d == DType::BF16) ? 0 : -1;
      if (r > rank) rank = r, best = d;
    };
    leir::for_each_expr(s.lhs, look);
    leir::for_each_expr(s.rhs, look);
    return std::string(tvm_dtype(rank < 0 ? DType::F64 : best));
  }

  // An identity stored into a tensor of dtype d. A max/min identity (±inf) of an integer tensor
  // is the integer type's limit: TVM cannot cast an infinite float constant to an integer
  // ("Cannot convert infinity to BigInt"), and the limit is the identity of max/min there.
  std::string init_store(DType d, double v) const {
    if (std::isinf(v) && !leir::is_floating(d) && d != DType::Bool) {
      int bits = d == DType::I64 ? 64 : d == DType::I32 ? 32 : d == DType::I16 ? 16 : 8;
      bool is_unsigned = d == DType::U8;
      std::string limit = is_unsigned ? (v > 0 ? "255" : "0")
                          : v > 0     ? fmt::format("{}", (uint64_t{1} << (bits - 1)) - 1)
                                      : fmt::format("-{}", uint64_t{1} << (bits - 1));
      return fmt::format("T.{}({})", tvm_dtype(d), limit);
    }
    return store(d, lit(v, ct));
  }

  std::string store(DType d, const std::string& v) const {
    if (d == DType::Bool) return v + " != " + lit(0, ct);
    if (tvm_dtype(d) == ct) return v;
    return fmt::format("T.Cast(\"{}\", {})", tvm_dtype(d), v);
  }

  // ---- structure ----
  std::string loop_header(const std::vector<const leir::Loop*>& group) const {
    const leir::Loop& l = *group[0];
    if (group.size() > 1) {
      std::string vars, ext;
      for (size_t i = 0; i < group.size(); ++i) {
        vars += (i ? ", " : "") + py_name(group[i]->var);
        ext += (i ? ", " : "") + std::to_string(group[i]->extent);
      }
      return fmt::format("for {} in T.grid({}):", vars, ext);
    }
    std::string range = l.start == 0 ? std::to_string(l.extent) : fmt::format("{}, {}", l.start, l.start + l.extent);
    std::string v = py_name(l.var);
    LoopKind k = l.kind;
    if (k == LoopKind::Bound && o.cpu_compatible) k = LoopKind::Serial;
    // A V loop that accumulates across its iterations (LEIR.md §3, exception (1)) is a vector
    // reduction; T.vectorized over a reduction block is not one (TVM gets that from rfactor), so
    // it stays a serial loop here, which LEIR allows (any target order for such a reduction).
    if (k == LoopKind::Vectorized && reducing_vector_loops.count(&l)) k = LoopKind::Serial;
    switch (k) {
      case LoopKind::Serial: return fmt::format("for {} in range({}):", v, range);
      case LoopKind::Parallel: return fmt::format("for {} in T.parallel({}):", v, range);
      case LoopKind::Vectorized: return fmt::format("for {} in T.vectorized({}):", v, range);
      case LoopKind::Unrolled: return fmt::format("for {} in T.unroll({}):", v, range);
      case LoopKind::Bound: {
        std::string tag = thread_tag(l.var);
        if (tag.empty())
          fail(l.loc, RejectionCode::UnboundGpuAxis,
               fmt::format("B loop variable '{}' names no GPU axis (tx, ty, tz, bx, by, bz + suffix)", l.var));
        return fmt::format("for {} in T.thread_binding({}, thread=\"{}\"):", v, range, tag);
      }
    }
    return "";
  }

  // Opens loops[from..] grouping consecutive serial 0-based loops into T.grid; returns count.
  int open_loops(const std::vector<const leir::Loop*>& ls) {
    size_t i = 0;
    int opened = 0;
    while (i < ls.size()) {
      std::vector<const leir::Loop*> group{ls[i]};
      auto plain = [&](const leir::Loop* l) {
        return l->start == 0 && (l->kind == LoopKind::Serial || (l->kind == LoopKind::Bound && o.cpu_compatible));
      };
      if (plain(ls[i]))
        while (i + group.size() < ls.size() && plain(ls[i + group.size()])) group.push_back(ls[i + group.size()]);
      line(loop_header(group));
      ++indent;
      ++opened;
      for (auto* l : group) loops.push_back(l);
      i += group.size();
    }
    return opened;
  }

  void close_loops(int opened, size_t nloops) {
    indent -= opened;
    loops.resize(loops.size() - nloops);
  }

  // Block header and axes for the statement at the current loops. `spatial_only`: init blocks.
  void open_block(const std::string& name, const leir::Stmt& s, const std::vector<const leir::Loop*>& ls) {
    line(fmt::format("with T.{}(\"{}\"):", o.dialect == TirDialect::Current ? "sblock" : "block", name));
    ++indent;
    block_vars.clear();
    for (const auto* l : ls) {
      bool spatial = false;
      for (const auto& ix : s.lhs->args) spatial |= mentions_var(ix, l->var);
      std::string bv = "v_" + l->var;
      std::string binding = l->start == 0 ? py_name(l->var) : fmt::format("{} - {}", py_name(l->var), l->start);
      line(fmt::format("{} = T.axis.{}({}, {})", bv, spatial ? "spatial" : "reduce", l->extent, binding));
      block_vars[l->var] = l->start == 0 ? bv : fmt::format("({} + {})", bv, l->start);
    }
  }

  static bool simple_target(const leir::Stmt& s) {
    std::set<std::string> vars;
    for (const auto& ix : s.lhs->args) {
      const Expr* e = ix.get();
      if (e->is_number()) continue;
      if (e->kind == ExprKind::Binary && (e->bop == BinaryOp::Add || e->bop == BinaryOp::Sub) && e->args[1]->is_number())
        e = e->args[0].get();
      if (!e->is_var() || !vars.insert(e->var_name()).second) return false;
    }
    return true;
  }

  void plan_tir_inits() {
    std::map<std::pair<int, std::string>, int> writers;  // (item, tensor) -> statements writing it
    for (const auto& site : plan.stmts) ++writers[{site.item, site.stmt->lhs->tensor}];
    for (auto& list : plan.init_before) {
      std::vector<StmtSite> keep;
      for (const auto& site : list) {
        const leir::Stmt& s = *site.stmt;
        bool sole = writers[{site.item, s.lhs->tensor}] == 1;
        if (sole && simple_target(s)) {
          bool has_reduce = false;
          for (const auto* l : site.loops) {
            bool m = false;
            for (const auto& ix : s.lhs->args) m |= mentions_var(ix, l->var);
            has_reduce |= !m;
          }
          init_kind[&s] = has_reduce ? "tinit" : "subst";
        } else {
          keep.push_back(site);
        }
      }
      list = keep;
    }
  }

  void emit_stmt(const leir::Stmt& s) {
    const std::string name = fmt::format("{}_s{}", s.lhs->tensor, block_counter++);
    ct = compute_type(s);
    std::vector<const leir::Loop*> ls = loops;
    open_block(name, s, ls);
    auto acc = plan.accum.find(&s);
    // A uniform store (ir/leir/uniform_store.h) under a P/V/B loop: performed once, by the first
    // iteration (its axis is a reduce axis, as the target does not use the loop's variable).
    std::string once;
    for (const auto* l : ls) {
      bool m = false;
      for (const auto& ix : s.lhs->args) m |= mentions_var(ix, l->var);
      if (m || l->extent < 2 || !leir::requires_independence(l->kind) || acc != plan.accum.end()) continue;
      if (leir::is_uniform_store(s, l->var, written_in.at(l)))
        once += fmt::format("{}{} == {}", once.empty() ? "" : " and ", py_name(l->var), l->start);
    }
    if (!once.empty()) line(fmt::format("T.where({})", once));
    std::string kind = init_kind.count(&s) ? init_kind.at(&s) : "";
    subst_.clear();
    if (kind == "subst") {
      // The only write of an unset element: the self-read is the identity.
      leir::for_each_expr(s.rhs, [&](const Expr& n) {
        if (n.is_access() && leir::equal(*s.lhs, n)) subst_[&n] = lit(identity_value(acc->second), ct);
      });
    }
    std::vector<std::string> reads;
    std::set<std::string> seen;
    std::function<void(const ExprPtr&)> collect = [&](const ExprPtr& e) {
      if (e->is_access() && !subst_.count(e.get())) {
        std::string r = region(e);
        if (seen.insert(r).second) reads.push_back(r);
      }
      for (const auto& a : e->args) collect(a);
    };
    collect(s.rhs);
    for (const auto& ix : s.lhs->args) collect(ix);
    std::string rd;
    for (size_t i = 0; i < reads.size(); ++i) rd += (i ? ", " : "") + reads[i];
    line(fmt::format("T.reads({})", rd));
    line(fmt::format("T.writes({})", region(s.lhs)));
    DType d = table.at(s.lhs->tensor).dtype;
    if (kind == "tinit") {
      line("with T.init():");
      std::string saved = ct;
      ct = std::string(leir::is_floating(d) ? tvm_dtype(d) : "float64");
      line(fmt::format("    {} = {}", access(s.lhs), init_store(d, identity_value(acc->second))));
      ct = saved;
    }
    line(fmt::format("{} = {}", access(s.lhs), store(d, strip_parens(value(s.rhs)))));
    subst_.clear();
    --indent;
    block_vars.clear();
  }

  void emit_init_nest(const StmtSite& site) {
    const leir::Stmt& s = *site.stmt;
    const auto [used, gather] = init_loops(site);
    // Serial loops: the init writes each element once, whatever the original schedule.
    std::vector<leir::Loop> serial;
    for (const auto* l : used) serial.push_back({LoopKind::Serial, l->extent, l->var, l->start, l->loc});
    std::vector<const leir::Loop*> sp;
    for (const auto& l : serial) sp.push_back(&l);
    int opened = open_loops(sp);
    DType d = table.at(s.lhs->tensor).dtype;
    ct = std::string(leir::is_floating(d) ? tvm_dtype(d) : "float64");
    open_block(fmt::format("{}_init{}", s.lhs->tensor, block_counter++), s, sp);
    std::string rd;
    if (gather) {
      std::set<std::string> seen;
      for (const auto& ix : s.lhs->args)
        leir::for_each_expr(ix, [&](const Expr& n) {
          if (!n.is_access()) return;
          const auto& sh = table.at(n.tensor).shape;
          std::string r = py_name(n.tensor) + "[";
          for (size_t i = 0; i < sh.size(); ++i) r += fmt::format("{}0:{}", i ? ", " : "", sh[i]);
          r += "]";
          if (seen.insert(r).second) rd += (rd.empty() ? "" : ", ") + r;
        });
    }
    line(fmt::format("T.reads({})", rd));
    line(fmt::format("T.writes({})", region(s.lhs)));
    line(fmt::format("{} = {}", access(s.lhs), init_store(d, identity_value(plan.accum.at(&s)))));
    --indent;
    block_vars.clear();
    close_loops(opened, sp.size());
  }

  void emit_item(const leir::Item& it) {
    if (it.is_stmt()) {
      emit_stmt(it.stmt);
      return;
    }
    std::vector<const leir::Loop*> ls;
    for (const auto& l : it.nest.loops) {
      ls.push_back(&l);
      written_in[&l] = leir::tensors_written(it.nest.body);
      if (l.kind == LoopKind::Vectorized)
        leir::for_each_stmt(it.nest.body, [&](const leir::Stmt& st, const std::vector<const leir::Loop*>&) {
          bool m = false;
          for (const auto& ix : st.lhs->args) m |= mentions_var(ix, l.var);
          if (!m && plan.accum.count(&st)) reducing_vector_loops.insert(&l);
        });
    }
    int opened = open_loops(ls);
    for (const auto& inner : it.nest.body) emit_item(inner);
    close_loops(opened, ls.size());
  }

  std::string run() {
    if (!plan.tracked.empty()) {
      const std::string& x = *plan.tracked.begin();
      fail(table.at(x).first_use, RejectionCode::PartlySetAccumulation,
           fmt::format("accumulation into {} whose elements may be partly set before the nest needs per-element "
                       "tracking, which TIR blocks cannot express",
                       x));
    }
    plan_tir_inits();
    const bool cur = o.dialect == TirDialect::Current;
    std::string params;
    for (const auto& d : p.known)
      params += fmt::format("{}{}: T.Buffer({}, \"{}\")", params.empty() ? "" : ", ", py_name(d.name),
                            shape_tuple(d.shape), tvm_dtype(d.dtype));
    out += "# from tvm.script import ir as I\n# from tvm.script import tir as T\n\n";
    out += fmt::format("# LEIR program: {}\n", p.name);
    // Current TVM parses block-based (schedulable) functions only when marked s_tir.
    out += cur ? "@I.ir_module\nclass Module:\n    @T.prim_func(s_tir=True)\n" : "@I.ir_module\nclass Module:\n    @T.prim_func\n";
    out += fmt::format("    def main({}):\n", params);
    line(fmt::format("T.func_attr({{\"global_symbol\": \"main\", \"{}\": True}})", cur ? "tirx.noalias" : "tir.noalias"));
    for (const auto& name : table.order) {
      const auto& info = table.at(name);
      if (info.known) continue;
      std::string_view scope = o.cpu_compatible ? "global"
                               : info.scope == leir::Scope::Shared ? "shared"
                               : info.scope == leir::Scope::Local ? "local"
                                                                   : "global";
      line(fmt::format("{} = T.{}({}, \"{}\", scope=\"{}\")", py_name(name), cur ? "sblock_alloc_buffer" : "alloc_buffer",
                       shape_tuple(info.shape), tvm_dtype(info.dtype), scope));
    }
    for (size_t i = 0; i < p.body.size(); ++i) {
      for (const auto& site : plan.init_before[i]) emit_init_nest(site);
      emit_item(p.body[i]);
    }
    return out;
  }

  std::map<const Expr*, std::string> subst_;
  std::map<const leir::Loop*, std::set<std::string>> written_in;  // per loop: tensors its body writes
};

}  // namespace

std::string emit_tvmscript(const leir::Program& p, const TirOptions& o) {
  // Names become Python identifiers and the program name a comment: refuse anything else, whoever
  // built the program.
  leir::check_names(p);
  Emitter e(p, o);
  return e.run();
}

}  // namespace steptp::backend::tir
