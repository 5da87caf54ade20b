#include "search/tune/task.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "base/hash.h"
#include "front/workloads/bench_size.h"
#include "ir/analysis/names.h"
#include "ir/analysis/structure.h"
#include "ir/leir/canonical.h"
#include "ir/leir/tensors.h"
#include "ir/leir/validate.h"
#include "search/tune/schedule_rules.h"
#include "transform/schedule_state.h"
#include "transform/strategy.h"

namespace steptp::tune {
namespace {

using leir::Expr;
using leir::ExprPtr;
using leir::Item;

// Tensors in order of first appearance (left side before right side, pre-order), each once.
void collect_tensors(const ExprPtr& e, std::vector<std::string>& order, std::set<std::string>& seen) {
  if (e->is_access() && seen.insert(e->tensor).second) order.push_back(e->tensor);
  for (const auto& a : e->args) collect_tensors(a, order, seen);
}
void collect_tensors(const std::vector<Item>& body, std::vector<std::string>& order, std::set<std::string>& seen) {
  for (const auto& it : body) {
    if (it.is_stmt()) {
      collect_tensors(it.stmt.lhs, order, seen);
      collect_tensors(it.stmt.rhs, order, seen);
    } else {
      collect_tensors(it.nest.body, order, seen);
    }
  }
}
size_t count_loops(const std::vector<Item>& body) {
  size_t n = 0;
  for (const auto& it : body)
    if (it.is_nest()) n += it.nest.loops.size() + count_loops(it.nest.body);
  return n;
}

// Renames tensors by a map and loop variables in order of binding (scoped: an inner binding of
// the same name shadows the outer one while it is bound).
class TaskRenamer {
 public:
  // `restarts`: the top-level positions at which loop names start again from the first one.
  TaskRenamer(const std::map<std::string, std::string>& tensors, std::vector<std::string> vars,
              std::set<size_t> restarts)
      : tensors_(tensors), vars_(std::move(vars)), restarts_(std::move(restarts)) {}

  std::vector<Item> body(const std::vector<Item>& items) {
    std::vector<Item> out;
    const bool top = scope_.empty();
    for (size_t k = 0; k < items.size(); ++k) {
      const Item& it = items[k];
      if (top && restarts_.count(k)) next_ = 0;
      if (it.is_stmt()) {
        leir::Stmt s = it.stmt;
        s.lhs = expr(s.lhs);
        s.rhs = expr(s.rhs);
        out.push_back(Item::of(std::move(s)));
        continue;
      }
      leir::Nest n = it.nest;
      const size_t bound = scope_.size();
      for (auto& l : n.loops) {
        scope_.push_back({l.var, vars_[next_++]});
        l.var = scope_.back().second;
      }
      n.body = body(n.body);
      scope_.resize(bound);
      out.push_back(Item::of(std::move(n)));
    }
    return out;
  }

 private:
  ExprPtr expr(const ExprPtr& e) {
    auto c = std::make_shared<Expr>(*e);
    for (auto& a : c->args) a = expr(a);
    if (c->is_access()) c->tensor = tensors_.at(c->tensor);
    if (c->is_var())
      for (auto it = scope_.rbegin(); it != scope_.rend(); ++it)
        if (it->first == c->text) {
          c->text = it->second;
          break;
        }
    return c;
  }

  const std::map<std::string, std::string>& tensors_;
  std::vector<std::string> vars_;
  std::set<size_t> restarts_;
  size_t next_ = 0;
  std::vector<std::pair<std::string, std::string>> scope_;
};

}  // namespace

std::string Task::hash_hex() const { return base::hex64(hash); }

namespace {

// item_groups with the program's use-def chains already computed.
std::vector<TaskUse> item_groups_of(const leir::Program& p, const analysis::UseDef& ud) {
  // Each tensor's writers span one range; overlapping ranges merge.
  std::vector<int> reach(p.body.size());
  for (size_t i = 0; i < reach.size(); ++i) reach[i] = int(i);
  std::set<std::string> written;
  for (const auto& rw : ud.items) written.insert(rw.writes.begin(), rw.writes.end());
  for (const auto& t : written) {
    const auto w = ud.writers(t);
    const int lo = *std::min_element(w.begin(), w.end()), hi = *std::max_element(w.begin(), w.end());
    reach[size_t(lo)] = std::max(reach[size_t(lo)], hi);
  }
  // A padded copy (zeros, or a max pool's -inf) of an intermediate goes with the items that read
  // it (TVM fuses a pad into the convolution's function): inlining it into the convolution
  // (compute_inline, the schedule rules' last chains, which the CPU lowering's loop partitioning
  // makes pay) is then a step inside one task; a task boundary between them would keep the copy
  // for good. A plain copy (a transpose, attention's head split) stays apart: inlined into a
  // product it makes the product's reads strided, and attention's two products stay one task
  // with two uses.
  for (size_t i = 0; i < p.body.size(); ++i) {
    if (copy_producer(p, i) != CopyProducer::Padded) continue;
    const std::string& t = p.body[i].nest.body[0].stmt.lhs->tensor;
    if (std::any_of(p.known.begin(), p.known.end(), [&](const leir::TensorDecl& d) { return d.name == t; })) continue;
    for (int r : ud.readers(t)) reach[i] = std::max(reach[i], r);
  }
  std::vector<TaskUse> groups;
  for (int i = 0; i < int(p.body.size());) {
    int end = reach[size_t(i)];
    for (int k = i; k <= end; ++k) end = std::max(end, reach[size_t(k)]);
    groups.push_back({i, end - i + 1});
    i = end + 1;
  }
  return groups;
}

}  // namespace

std::vector<TaskUse> item_groups(const leir::Program& p) { return item_groups_of(p, analysis::use_def(p)); }

namespace {

// Whether the group `g` of the state's program joins the group `next` that follows it: every item
// outside `g` that reads what `g` writes lies in `next` (at least one does), and a strategy that
// joins a producer to its consumer has a legal site there — operator_fusion on the last item of
// `g` and the first of `next`, or compute_inline on an item of `g` whose result `next` reads. The
// strategies' own surveys decide, so a fusion group forms exactly where the task's search can
// propose the join.
bool joins_next(const strategies::ScheduleState& st, TaskUse g, TaskUse next) {
  const analysis::UseDef& ud = st.use_def();
  const auto in = [](TaskUse u, int i) { return i >= u.first && i < u.first + u.count; };
  // Whether `next` reads what item i writes.
  const auto feeds_next = [&](int i) {
    for (const auto& t : ud.items[size_t(i)].writes)
      for (int r : ud.readers(t))
        if (in(next, r)) return true;
    return false;
  };
  bool consumed = false;
  for (int i = g.first; i < g.first + g.count; ++i)
    for (const auto& t : ud.items[size_t(i)].writes)
      for (int r : ud.readers(t)) {
        if (in(g, r)) continue;
        if (!in(next, r)) return false;
        consumed = true;
      }
  if (!consumed) return false;
  const strategies::Strategy* fusion = strategies::find_strategy("operator_fusion");
  const strategies::Strategy* inl = strategies::find_strategy("compute_inline");
  const int last = g.first + g.count - 1;
  try {
    for (const auto& s : fusion->sites(st))
      if (s.path == std::vector<int>{last, next.first}) return true;
    for (const auto& s : inl->sites(st))
      if (s.path.size() == 1 && in(g, s.path[0]) && feeds_next(s.path[0])) return true;
  } catch (const std::exception&) {
    // A strategy that cannot analyse this program proposes no join, as in the search.
  }
  return false;
}

// fusion_groups from the program's schedule state and item groups. Fusion groups are formed at
// extraction rather than by a final whole-program round after composition: the joined task is
// then searched as one program, so the fused nest is vectorized, parallelized and timed by the
// same search that proposes the join (a round after composition would time the join of two nests
// each scheduled for being alone), its hash still deduplicates it, and composition replays its
// steps as any other task's.
std::vector<TaskUse> fusion_groups_of(const strategies::ScheduleState& st, std::vector<TaskUse> groups) {
  if (groups.size() < 2) return groups;
  std::vector<TaskUse> out = {groups[0]};
  for (size_t k = 1; k < groups.size(); ++k) {
    if (joins_next(st, out.back(), groups[k])) out.back().count += groups[k].count;
    else out.push_back(groups[k]);
  }
  return out;
}

// group_program with the program's use-def chains and item groups already computed.
std::optional<leir::Program> group_program_of(const leir::Program& p, int first, int count, const analysis::UseDef& ud,
                                              const std::vector<TaskUse>& item_groups) {
  const leir::TensorTable table = leir::build_tensor_table(p);
  const std::vector<Item> items(p.body.begin() + first, p.body.begin() + first + count);
  std::vector<std::string> order;
  std::set<std::string> seen;
  collect_tensors(items, order, seen);
  std::set<std::string> writes;
  for (int i = first; i < first + count; ++i) {
    const auto& w = ud.items[size_t(i)].writes;
    writes.insert(w.begin(), w.end());
  }
  // Names A, C, D, ... in order of first appearance, as NameAllocator hands them out.
  analysis::NameAllocator names{leir::Program{}};
  std::map<std::string, std::string> rename;
  leir::Program g;
  for (const auto& t : order) {
    rename[t] = names.fresh_tensor();
    const leir::TensorInfo& info = table.at(t);
    const bool read_outside = [&] {
      for (int i = 0; i < int(p.body.size()); ++i)
        if ((i < first || i >= first + count) && ud.items[size_t(i)].reads.count(t)) return true;
      return false;
    }();
    const bool exchanged = !writes.count(t) || info.known || read_outside;
    if (!exchanged) continue;  // an intermediate of the group alone
    if (info.scope != leir::Scope::Global) return std::nullopt;
    leir::TensorDecl d;
    d.name = rename[t];
    d.dtype = info.dtype;
    d.shape = info.shape;
    if (writes.count(t)) {
      d.role = leir::Role::Output;
    } else if (info.known) {
      d.role = info.role;
      d.value = info.decl->value;
    } else {
      d.role = leir::Role::Input;
    }
    g.known.push_back(std::move(d));
  }
  // Loop names start again at each write-closed group (item_groups) of the items: the nests of a
  // fusion group with the same loops keep the same headers, which operator_fusion compares, and a
  // task of one group is named (and hashed) as before fusion groups.
  std::set<size_t> restarts;
  for (const TaskUse& u : item_groups)
    if (u.first >= first && u.first < first + count) restarts.insert(size_t(u.first - first));
  g.body = TaskRenamer(rename, analysis::standalone_vars(count_loops(items)), std::move(restarts)).body(items);
  try {
    leir::validate(g);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  g.name = "task_" + base::hex64(leir::program_hash(g));
  return g;
}

}  // namespace

std::vector<TaskUse> fusion_groups(const leir::Program& p) {
  const strategies::ScheduleState st(p);
  return fusion_groups_of(st, item_groups_of(p, st.use_def()));
}

std::optional<leir::Program> group_program(const leir::Program& p, int first, int count) {
  const auto ud = analysis::use_def(p);
  return group_program_of(p, first, count, ud, item_groups_of(p, ud));
}

std::vector<Task> extract_tasks(const leir::Program& p) {
  // The use-def chains and item groups of the whole program, computed once for every group.
  const strategies::ScheduleState st(p);
  const std::vector<TaskUse> items = item_groups_of(p, st.use_def());
  const auto groups = fusion_groups_of(st, items);
  std::vector<int64_t> work;
  for (const auto& gr : groups) {
    int64_t w = 0;
    for (int i = gr.first; i < gr.first + gr.count; ++i) w += workloads::statement_instances(p.body[size_t(i)]);
    work.push_back(w);
  }
  // The heavy groups, and any other that holds at least 1 % of the work: a second use of a heavy
  // task (attention's two batched products) or a nest the 90 % cut leaves just outside.
  constexpr double kMinTaskShare = 0.01;
  auto heavy = heaviest(work);
  int64_t total = 0;
  for (int64_t w : work) total += w;
  for (size_t k = 0; k < work.size(); ++k)
    if (double(work[k]) >= kMinTaskShare * double(total)) heavy[k] = 1;
  std::vector<Task> tasks;
  std::map<uint64_t, size_t> by_hash;
  for (size_t k = 0; k < groups.size(); ++k) {
    if (!heavy[k]) continue;
    auto g = group_program_of(p, groups[k].first, groups[k].count, st.use_def(), items);
    if (!g) continue;
    const uint64_t h = leir::program_hash(*g);
    auto [it, fresh] = by_hash.insert({h, tasks.size()});
    if (fresh) tasks.push_back(Task{std::move(*g), h, work[k], {}});
    tasks[it->second].uses.push_back(groups[k]);
  }
  return tasks;
}

namespace {

// A task's step at the use of the task at `first` in `p`: the site of the same strategy (a
// whole-program site for a whole-program step, else one whose first path index is the step's
// moved by `first`) whose result, with the same parameters, holds the same items at the use as
// the step's result on the task (`task` is the task's program as the steps before this one left
// it). Whole-program sites count tensors by position in the signature or among intermediates,
// which differ between task and program, so the site is found by its effect.
strategies::TraceStep match_step_by_effect(const leir::Program& p, int first, const leir::Program& task,
                                           const strategies::TraceStep& step) {
  const leir::Program after = strategies::apply_step(task, step);
  const auto target = group_program(after, 0, int(after.body.size()));
  const strategies::Strategy* s = strategies::find_strategy(step.strategy);
  if (target && s) {
    const strategies::ScheduleState st(p);
    const auto& sites = s->sites(st);
    for (size_t i = 0; i < sites.size(); ++i) {
      if (step.site.path.empty() ? !sites[i].path.empty()
                                 : sites[i].path.empty() || sites[i].path[0] != first + step.site.path[0])
        continue;
      strategies::TraceStep cand{step.strategy, strategies::address_of(sites, i), sites[i].description, step.params};
      try {
        const leir::Program q = strategies::apply_step(p, cand);
        if (first + int(after.body.size()) > int(q.body.size())) continue;
        const auto here = group_program(q, first, int(after.body.size()));
        if (here && leir::program_hash(*here) == leir::program_hash(*target)) return cand;
      } catch (const strategies::ReplayError&) {
      }
    }
  }
  throw strategies::ReplayError(
      fmt::format("{} ({}): no site has the same effect at this use", step.strategy,
                  step.site_description));
}

// `trace` (the task's steps) replayed at the use of the task at `first` in `p`: the re-addressed
// steps and the program they reach.
std::pair<strategies::Trace, leir::Program> replay_at_use(const leir::Program& p, int first, const leir::Program& task,
                                                          const strategies::Trace& trace) {
  strategies::Trace steps;
  leir::Program cur = p, task_state = task;
  for (const auto& step : trace) {
    strategies::TraceStep at = step;
    std::optional<leir::Program> next;
    if (!step.site.path.empty()) {
      at.site.path[0] += first;
      // A path whose later indices are top-level items too (operator_fusion's two nests) does
      // not move with the first one: then the step is found by its effect at the use, as a
      // whole-program step always is.
      try {
        next = strategies::apply_step(cur, at);
      } catch (const strategies::ReplayError&) {
      }
    }
    if (!next) {
      at = match_step_by_effect(cur, first, task_state, step);
      next = strategies::apply_step(cur, at);
    }
    cur = std::move(*next);
    task_state = strategies::apply_step(task_state, step);
    steps.push_back(std::move(at));
  }
  return {std::move(steps), std::move(cur)};
}

}  // namespace

Composition compose(const leir::Program& root, const std::vector<Task>& tasks,
                    const std::vector<std::vector<strategies::Trace>>& candidates) {
  std::vector<std::pair<TaskUse, size_t>> uses;
  for (size_t k = 0; k < tasks.size(); ++k)
    if (!candidates[k].empty())
      for (const auto& u : tasks[k].uses) uses.push_back({u, k});
  std::stable_sort(uses.begin(), uses.end(),
                   [](const auto& a, const auto& b) { return a.first.first > b.first.first; });
  Composition c{root, {}, {}};
  for (const auto& [use, k] : uses) {
    std::string why;
    for (const auto& trace : candidates[k]) {
      try {
        auto [steps, program] = replay_at_use(c.program, use.first, tasks[k].program, trace);
        c.program = std::move(program);
        c.trace.insert(c.trace.end(), steps.begin(), steps.end());
        why.clear();
        break;
      } catch (const strategies::ReplayError& e) {
        if (why.empty()) why = e.what();  // the best candidate's reason
      }
    }
    if (!why.empty())
      c.skipped.push_back(fmt::format("task {} at item {}: {}", tasks[k].hash_hex(), use.first, why));
  }
  return c;
}

}  // namespace steptp::tune
