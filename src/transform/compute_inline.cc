// 2 compute_inline (STRATEGIES.md): substitute a producer's expression into every read of its
// tensor, subscripts included (a read X_{c+1} of a producer X_{a}=e becomes e[a:=c+1]), and drop
// the producer when nothing else needs it.
//
// Refused: accumulating producers (the value is a reduction, not an expression of the
// subscripts), producers written more than once, reads through gathers or of the producer's own
// tensor, operands overwritten between producer and a reader (the inlined expression would see
// new values), and integer/bool producers (the store truncates).
#include <fmt/format.h>

#include "ir/analysis/accumulation.h"
#include "ir/leir/ir_mutator.h"
#include "transform/dataflow_util.h"
#include "transform/schedule_state.h"

namespace steptp::strategies {
namespace {

using namespace dataflow;
using leir::ExprPtr;
using leir::Nest;
using leir::Program;
using leir::Stmt;

struct Producer {
  const Stmt* stmt = nullptr;
  std::map<std::string, ExprPtr> fixed;  // loops of extent 1 outside the subscripts: var -> start
  std::vector<int> readers;
};

// Tensors read through a gather: used as an index, or read with an index that reads a tensor.
std::set<std::string> gathered_tensors(const Program& p) {
  std::set<std::string> out;
  leir::for_each_stmt(p.body, [&](const Stmt& s, const auto&) {
    for (const auto* side : {&s.lhs, &s.rhs})
      leir::for_each_expr(*side, [&](const leir::Expr& e) {
        if (!e.is_access()) return;
        for (const auto& idx : e.args)
          leir::for_each_expr(idx, [&](const leir::Expr& x) {
            if (x.is_access()) {
              out.insert(x.tensor);  // used as an index
              out.insert(e.tensor);  // read through one
            }
          });
      });
  });
  return out;
}

struct Context {
  const analysis::UseDef& ud;
  std::set<std::string> gathered;
};

// The state's context, computed once for the survey and every apply.
const Context& context(const ScheduleState& st) {
  static const char owner = 0;
  return st.memo<Context>(&owner, [&] { return Context{st.use_def(), gathered_tensors(st.program())}; });
}

std::string analyze(const Program& p, const Context& ctx, int i, Producer& out) {
  const Nest* n = flat_nest(p, i);
  if (!n) return "not a nest of statements";
  if (n->body.size() != 1) return "the producer nest has several statements";
  const Stmt& s = n->body[0].stmt;
  const std::string& x = s.lhs->tensor;
  if (analysis::is_accumulation(s)) return fmt::format("{} is an accumulation (reduction), not an expression of its subscripts", x);
  if (leir::is_integer(s.lhs->dtype) || s.lhs->dtype == leir::DType::Bool)
    return fmt::format("{} is {}: the store truncates, inlining would change values", x, leir::to_string(s.lhs->dtype));
  if (reads_tensor(s.rhs, x)) return fmt::format("the producer reads {} itself", x);
  std::set<std::string> subscript_vars;
  for (const auto& idx : s.lhs->args) {
    if (!idx->is_var() || !subscript_vars.insert(idx->var_name()).second)
      return fmt::format("subscripts of {} are not distinct plain loop variables", x);
  }
  for (const auto& l : n->loops) {
    if (subscript_vars.count(l.var)) continue;
    if (l.extent != 1) return fmt::format("loop {} does not appear in the subscripts of {}", l.var, x);
    out.fixed[l.var] = leir::make_int(l.start);
  }
  const auto& ud = ctx.ud;
  for (int k = 0; k < static_cast<int>(ud.items.size()); ++k)
    if (k != i && ud.items[k].writes.count(x)) return fmt::format("{} is also written by item {}", x, k);
  if (ctx.gathered.count(x)) return fmt::format("{} is read through a gather", x);
  for (int k = 0; k < i; ++k)
    if (ud.items[k].reads.count(x)) return fmt::format("{} is read before it is produced (item {})", x, k);
  out.readers.clear();
  for (int k = i + 1; k < static_cast<int>(ud.items.size()); ++k)
    if (ud.items[k].reads.count(x)) out.readers.push_back(k);
  if (out.readers.empty()) return fmt::format("{} has no reader", x);
  auto operands = analysis::read_write(p.body[i]).reads;
  for (int k = i + 1; k <= out.readers.back(); ++k)
    for (const auto& t : operands)
      if (ud.items[k].writes.count(t))
        return fmt::format("operand {} is overwritten by item {} before a reader of {}", t, k, x);
  out.stmt = &s;
  return "";
}

class ComputeInline final : public Strategy {
 public:
  std::string_view name() const override { return "compute_inline"; }
  std::string_view description() const override {
    return "substitute a producer's expression into every read of its result and drop it if dead";
  }
  Exactness exactness() const override { return Exactness::Exact; }

  Applied apply(const ScheduleState& st, const Site& s, const Params& params) const override {
    const Program& p = st.program();
    int i = site_item(s);
    Producer prod;
    if (std::string why = analyze(p, context(st), i, prod); !why.empty()) return refuse(s, why);
    const Stmt& ps = *prod.stmt;
    const std::string& x = ps.lhs->tensor;
    auto inline_read = [&](const ExprPtr& read) {
      std::map<std::string, ExprPtr> by = prod.fixed;
      for (size_t d = 0; d < ps.lhs->args.size(); ++d) by[ps.lhs->args[d]->var_name()] = read->args[d];
      return substitute_vars(ps.rhs, by);
    };
    Program out = p;
    for (int k : prod.readers)
      out.body[k] = leir::map_exprs({p.body[k]}, [&](const ExprPtr& e) {
                      return map_reads(e, x, inline_read);
                    }).front();
    if (!is_known(p, x)) out.body.erase(out.body.begin() + i);
    // Rounding to a narrower float happened once per stored element; inlined, it never happens.
    Exactness ex = ps.lhs->dtype == leir::DType::F64 ? Exactness::Exact : Exactness::Reassoc;
    return candidate(st, s, params, ex, std::move(out));
  }

 protected:
  Survey survey(const ScheduleState& st) const override {
    const Program& p = st.program();
    Survey out;
    const Context& ctx = context(st);
    for (int i = 0; i < static_cast<int>(p.body.size()); ++i) {
      Considered c;
      c.site.path = {i};
      std::string tensor = p.body[i].is_stmt() ? p.body[i].stmt.lhs->tensor : "";
      if (const Nest* n = flat_nest(p, i); n && n->body.size() == 1) tensor = n->body[0].stmt.lhs->tensor;
      c.site.description = fmt::format("producer item {}{}", i, tensor.empty() ? "" : " (" + tensor + ")");
      Producer prod;
      c.refusal = analyze(p, ctx, i, prod);
      out.consider(std::move(c.site), as_refusal(std::move(c.refusal)));
    }
    return out;
  }
};

RegisterStrategy<ComputeInline> compute_inline_registrar(2);

}  // namespace
}  // namespace steptp::strategies
