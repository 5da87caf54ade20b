// set_storage_scope (STRATEGIES.md 20): an intermediate moves to another scope (g, s, l) at
// every occurrence. Scope never changes values (LEIR.md §3); whether a target can honour it
// (shared buffers across kernels, sizes) is the target's decision, recorded by the pipeline.
// Known tensors always stay in `g`.
#include "ir/analysis/rewrite.h"
#include "ir/leir/tensors.h"
#include "transform/loop_sites.h"
#include "transform/schedule_state.h"

namespace steptp::strategies {
namespace {

using leir::Program;
using leir::Scope;

std::vector<std::string> intermediates(const leir::TensorTable& t) {
  std::vector<std::string> out;
  for (const auto& name : t.order)
    if (!t.at(name).known) out.push_back(name);
  return out;
}

class SetStorageScope final : public Strategy {
 public:
  std::string_view name() const override { return "set_storage_scope"; }
  std::string_view description() const override { return "move an intermediate to scope l or s (or back to g) everywhere"; }
  Exactness exactness() const override { return Exactness::Exact; }

  Survey survey(const ScheduleState& st) const override {
    const Program& p = st.program();
    Survey sv;
    auto names = intermediates(st.tensors());
    for (int i = 0; i < static_cast<int>(names.size()); ++i) sv.sites.push_back({{}, {i}, "tensor " + names[i]});
    for (const auto& d : p.known) sv.refusals.push_back({"tensor " + d.name, "known tensors live in g"});
    return sv;
  }

  std::vector<Params> param_space(const ScheduleState& st, const Site& s) const override {
    const auto& table = st.tensors();
    auto names = intermediates(table);
    std::vector<Params> out;
    if (s.detail.at(0) >= static_cast<int>(names.size())) return out;
    Scope cur = table.at(names[s.detail[0]]).scope;
    for (Scope sc : {Scope::Local, Scope::Shared, Scope::Global})
      if (sc != cur) out.push_back({{"scope", std::string(1, leir::to_char(sc))}});
    return out;
  }

  Applied apply(const ScheduleState& st, const Site& s, const Params& params) const override {
    const Program& p = st.program();
    const auto& table = st.tensors();
    auto names = intermediates(table);
    if (s.detail.at(0) >= static_cast<int>(names.size())) return refuse(s, "no such intermediate");
    const std::string& t = names[s.detail[0]];
    const auto& text = std::get<std::string>(params.at("scope"));
    auto sc = leir::parse_scope(text.empty() ? '?' : text[0]);
    if (!sc) return refuse(s, "scope must be g, s or l");
    if (*sc == table.at(t).scope) return refuse(s, t + " is already in that scope");
    Program out = p;
    out.body = analysis::rewrite_accesses(p.body, t, [&](const leir::ExprPtr& a) { return analysis::renamed(a, t, *sc); });
    return candidate(st, s, params, Exactness::Exact, std::move(out));
  }
};

RegisterStrategy<SetStorageScope> set_storage_scope_registrar(20);

}  // namespace
}  // namespace steptp::strategies
