#include "apps/dataset/reasoning.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "ir/analysis/dependence.h"
#include "ir/analysis/structure.h"
#include "lower/cpu/compiler.h"
#include "ir/leir/printer.h"
#include "ir/leir/program_io.h"

namespace steptp::dataset {
using nlohmann::json;

const char* dependence_name(analysis::LoopDep dep) {
  return dep == analysis::LoopDep::Independent     ? "independent"
         : dep == analysis::LoopDep::ReductionOnly ? "reduction_only"
                                                   : "carried";
}

namespace {

std::string loop_dependence(const analysis::NestRef& nr, int k) {
  return dependence_name(analysis::check_loop(nr, k).kind);
}

// Loops of top-level items [from, to) with their dependence facts.
struct LoopFact {
  std::string var;
  int64_t extent;
  char kind;
  std::string dependence;
};

std::vector<LoopFact> loops_of(const leir::Program& p, size_t from, size_t to) {
  std::vector<LoopFact> out;
  for (const auto& nr : analysis::all_nests(p.body)) {
    if (size_t(nr.path[0]) < from || size_t(nr.path[0]) >= to) continue;
    for (int k = 0; k < int(nr.nest->loops.size()); ++k) {
      const auto& l = nr.nest->loops[size_t(k)];
      out.push_back({l.var, l.extent, leir::to_char(l.kind), loop_dependence(nr, k)});
    }
  }
  return out;
}

// The innermost loop of extent > 1 of every nest of items [from, to) that holds statements
// itself: the loop the compiler vectorizes, if any.
json inner_loops(const leir::Program& p, size_t from, size_t to) {
  json out = json::array();
  for (const auto& nr : analysis::all_nests(p.body)) {
    if (size_t(nr.path[0]) < from || size_t(nr.path[0]) >= to) continue;
    if (std::none_of(nr.nest->body.begin(), nr.nest->body.end(), [](const leir::Item& i) { return i.is_stmt(); }))
      continue;
    for (int k = int(nr.nest->loops.size()) - 1; k >= 0; --k) {
      const auto& l = nr.nest->loops[size_t(k)];
      if (l.extent <= 1) continue;
      out.push_back({{"var", l.var}, {"extent", l.extent}, {"kind", std::string(1, leir::to_char(l.kind))},
                     {"dependence", loop_dependence(nr, k)}});
      break;
    }
  }
  return out;
}

std::string item_text(const leir::Item& it) {
  if (it.is_stmt()) return leir::print_stmt(it.stmt);
  return leir::print_body({it});
}

double share(int64_t part, int64_t whole) {
  return whole > 0 ? std::round(1000.0 * double(part) / double(whole)) / 1000.0 : 1.0;
}

std::string joined(const std::set<std::string>& s) {
  std::string out;
  for (const auto& x : s) out += (out.empty() ? "" : ", ") + x;
  return out;
}

// The top-level items that differ between parent and result (by printed text): parent items
// [first, end_a) became result items [first, end_b).
struct Changed {
  std::vector<std::string> ta, tb;
  size_t first = 0, end_a = 0, end_b = 0;
};

Changed changed_items(const leir::Program& a, const leir::Program& b) {
  Changed c;
  for (const auto& it : a.body) c.ta.push_back(item_text(it));
  for (const auto& it : b.body) c.tb.push_back(item_text(it));
  const auto &ta = c.ta, &tb = c.tb;
  size_t pre = 0;
  while (pre < ta.size() && pre < tb.size() && ta[pre] == tb[pre]) ++pre;
  size_t suf = 0;
  while (suf < ta.size() - pre && suf < tb.size() - pre && ta[ta.size() - 1 - suf] == tb[tb.size() - 1 - suf]) ++suf;
  c.first = pre;
  c.end_a = ta.size() - suf;
  c.end_b = tb.size() - suf;
  return c;
}

}  // namespace

std::string loop_kind_name(const std::string& k) {
  if (k == "P") return "parallel";
  if (k == "B") return "bound to a hardware axis";
  if (k == "V") return "vectorized";
  if (k == "U") return "unrolled";
  if (k == "L") return "serial";
  if (k == "removed") return "removed";
  return "new";
}

json machine_json(const tune::Machine& m) {
  // The compiler identity is its `--version` output, the flags one a line, then glibc and the
  // prelude (lower/cpu/compiler.h); the prompt names the version line and the flags that shape
  // the code (not -shared/-fPIC, which only package it).
  const std::string& id = backend::cpu::default_compiler().identity();
  std::string flags;
  std::istringstream lines(id);
  for (std::string f; std::getline(lines, f) && f.rfind("glibc ", 0) != 0;)
    if (f.rfind('-', 0) == 0 && f != "-shared" && f != "-fPIC") flags += (flags.empty() ? "" : " ") + f;
  const char* isa = m.vector_bytes >= 64 ? "AVX-512" : m.vector_bytes >= 32 ? "AVX2" : "SSE";
  return {{"cpu", m.cpu_model},          {"cores", m.cores},           {"threads", m.threads},
          {"vector_isa", isa},           {"vector_bytes", m.vector_bytes}, {"f32_lanes", m.vector_bytes / 4},
          {"l1_bytes", m.l1_bytes},      {"l2_bytes", m.l2_bytes},     {"l3_bytes", m.l3_bytes},
          {"compiler", id.substr(0, id.find('\n'))}, {"flags", flags}};
}

json analysis_json(const leir::Program& p) {
  const auto pf = analysis::program_facts(p);
  const auto all = analysis::all_nests(p.body);
  json nests = json::array();
  for (size_t i = 0; i < p.body.size(); ++i) {
    if (!p.body[i].is_nest()) continue;
    const auto& n = pf.nests[i];
    const auto rw = analysis::read_write(p.body[i]);
    std::set<std::string> reads;
    for (const auto& r : rw.reads)
      if (!rw.writes.count(r)) reads.insert(r);
    json loops = json::array();
    for (const auto& nr : all) {
      if (size_t(nr.path[0]) != i) continue;
      for (int k = 0; k < int(nr.nest->loops.size()); ++k) {
        const auto& l = nr.nest->loops[size_t(k)];
        loops.push_back({{"var", l.var}, {"extent", l.extent}, {"kind", std::string(1, leir::to_char(l.kind))},
                         {"dependence", loop_dependence(nr, k)}});
      }
    }
    nests.push_back({{"item", i},
                     {"header", n.header},
                     {"writes", joined(rw.writes)},
                     {"reads", joined(reads)},
                     {"iterations", n.iterations},
                     {"flops", n.flops},
                     {"bytes", n.bytes},
                     {"accesses", n.accesses},
                     {"contiguous_accesses", n.contiguous_accesses},
                     {"loops", loops}});
  }
  return {{"items", p.body.size()}, {"statements", pf.statements}, {"flops", pf.flops}, {"bytes", pf.bytes},
          {"nests", nests}};
}

json step_effect(const leir::Program& a, const leir::Program& b) { return step_effect(a, analysis::program_facts(a), b); }

json step_effect(const leir::Program& a, const analysis::ProgramFacts& fa, const leir::Program& b) {
  auto fb = analysis::program_facts(b);
  Changed c = changed_items(a, b);
  auto la = loops_of(a, c.first, c.end_a), lb = loops_of(b, c.first, c.end_b);
  // Loops of the changed items that gain a parallel/bound/vector/unroll kind, lose one, or are
  // new (split, tiling). A loop renamed on the way (loop_binding: c -> bx) pairs with a vanished
  // loop of the same extent. Extent-1 loops carry no work and are left out.
  auto has_var = [](const std::vector<LoopFact>& ls, const std::string& v) {
    return std::any_of(ls.begin(), ls.end(), [&](const LoopFact& x) { return x.var == v; });
  };
  auto has_kind = [](const std::vector<LoopFact>& ls, const std::string& v, char k) {
    return std::any_of(ls.begin(), ls.end(), [&](const LoopFact& x) { return x.var == v && x.kind == k; });
  };
  auto special = [](char k) { return k != 'L'; };
  std::map<std::string, std::string> renamed;  // result var -> parent var
  {
    std::vector<const LoopFact*> vanished;
    for (const auto& l : la)
      if (!has_var(lb, l.var)) vanished.push_back(&l);
    for (const auto& l : lb) {
      if (has_var(la, l.var) || renamed.count(l.var)) continue;
      auto v = std::find_if(vanished.begin(), vanished.end(), [&](const LoopFact* x) { return x->extent == l.extent; });
      if (v == vanished.end()) continue;
      renamed[l.var] = (*v)->var;
      vanished.erase(v);
    }
  }
  auto parent_var = [&](const std::string& v) { return renamed.count(v) ? renamed.at(v) : v; };
  json loops = json::array();
  std::set<std::string> seen;
  auto add = [&](const std::string& var, int64_t extent, const std::string& before, const std::string& after,
                 const std::string& dep) {
    if (seen.insert(var + ":" + before + ":" + after).second)
      loops.push_back({{"var", var}, {"extent", extent}, {"before", before}, {"after", after}, {"dependence", dep}});
  };
  for (const auto& l : lb) {
    if (l.extent <= 1) continue;
    std::string pv = parent_var(l.var);
    std::string name = pv == l.var ? l.var : pv + " (now " + l.var + ")";
    auto from = std::find_if(la.begin(), la.end(), [&](const LoopFact& x) { return x.var == pv; });
    if (from == la.end()) add(name, l.extent, "new", std::string(1, l.kind), l.dependence);
    else if (special(l.kind) && !has_kind(la, pv, l.kind))
      add(name, l.extent, std::string(1, from->kind), std::string(1, l.kind), from->dependence);
  }
  for (const auto& l : la) {
    if (l.extent <= 1 || !special(l.kind)) continue;
    std::string rv = l.var;
    for (const auto& [r, p] : renamed)
      if (p == l.var) rv = r;
    if (has_kind(lb, rv, l.kind)) continue;
    auto to = std::find_if(lb.begin(), lb.end(), [&](const LoopFact& x) { return x.var == rv; });
    add(l.var, l.extent, std::string(1, l.kind), to == lb.end() ? "removed" : std::string(1, to->kind), l.dependence);
  }
  // Contiguity over the changed items only: a reorder of one nest among many moves this share
  // even when the program-wide share hardly moves.
  auto changed_share = [](const analysis::ProgramFacts& f, size_t from, size_t to) {
    int64_t acc = 0, contiguous = 0;
    for (size_t i = from; i < to && i < f.nests.size(); ++i) acc += f.nests[i].accesses, contiguous += f.nests[i].contiguous_accesses;
    return share(contiguous, acc);
  };
  // Top-level items of the changed range that run some loop of extent > 1 in parallel (P or B):
  // a further parallel loop inside one of them adds no threads (the CPU lowering parallelizes the
  // outermost run of P/B loops only).
  auto parallel_items = [](const leir::Program& p, size_t from, size_t to) {
    std::set<int> items;
    for (const auto& nr : analysis::all_nests(p.body)) {
      if (size_t(nr.path[0]) < from || size_t(nr.path[0]) >= to) continue;
      for (const auto& l : nr.nest->loops)
        if (l.extent > 1 && (l.kind == leir::LoopKind::Parallel || l.kind == leir::LoopKind::Bound)) items.insert(nr.path[0]);
    }
    return items.size();
  };
  return {{"flops", {fa.flops, fb.flops}},
          {"bytes", {fa.bytes, fb.bytes}},
          {"local_accesses", {fa.local_accesses, fb.local_accesses}},
          {"items", {a.body.size(), b.body.size()}},
          {"contiguous_share", {share(fa.contiguous_accesses, fa.accesses), share(fb.contiguous_accesses, fb.accesses)}},
          {"changed_contiguous_share", {changed_share(fa, c.first, c.end_a), changed_share(fb, c.first, c.end_b)}},
          {"inner_loops", {inner_loops(a, c.first, c.end_a), inner_loops(b, c.first, c.end_b)}},
          {"parallel_items", {parallel_items(a, c.first, c.end_a), parallel_items(b, c.first, c.end_b)}},
          {"loops", loops}};
}

json step_transition(const leir::Program& a, const leir::Program& b) {
  Changed c = changed_items(a, b);
  size_t pre = c.first;
  json before = json::array(), after = json::array();
  for (size_t i = pre; i < c.end_a; ++i) before.push_back(c.ta[i]);
  for (size_t i = pre; i < c.end_b; ++i) after.push_back(c.tb[i]);
  std::set<std::string> sa, sb;
  for (const auto& d : a.known) sa.insert(leir::signature_line(d));
  for (const auto& d : b.known) sb.insert(leir::signature_line(d));
  json added = json::array(), removed = json::array();
  for (const auto& s : sb)
    if (!sa.count(s)) added.push_back(s);
  for (const auto& s : sa)
    if (!sb.count(s)) removed.push_back(s);
  return {{"first_item", pre}, {"before", before}, {"after", after}, {"tensors_added", added},
          {"tensors_removed", removed}};
}

namespace {

std::string num(const json& v) { return v.dump(); }

// Innermost loops that stay scalar: neither independent (which the compiler vectorizes) nor
// explicitly vectorized (V, `omp simd`) — reasoning rule "inner loop". Counting the scalar ones
// means splitting one vector-friendly nest into two changes nothing.
int scalar_inner(const json& inner) {
  int n = 0;
  for (const auto& l : inner) n += l["dependence"] != "independent" && l["kind"] != "V";
  return n;
}

std::string inner_text(const json& inner) {
  std::string s;
  for (const auto& l : inner)
    s += (s.empty() ? "" : ", ") + l["var"].get<std::string>() + " (" + l["dependence"].get<std::string>() +
         (l["kind"] == "V" ? ", vectorized" : "") + ")";
  return s.empty() ? "none" : s;
}

}  // namespace

Expectation expect(const json& rec, const json& a) {
  Expectation x;
  const json& e = a["effect"];
  int votes = 0;
  auto vote = [&](int w, std::string why) {
    votes += w;
    (w > 0 ? x.gains : x.costs).push_back(std::move(why));
  };
  auto moved = [](const json& v, double rel) {
    double b = v[0].get<double>(), r = v[1].get<double>();
    if (r < b && r <= b * (1 - rel)) return -1;
    return r > b && r >= b * (1 + rel) ? 1 : 0;
  };
  if (int m = moved(e["flops"], 0.05))
    vote(-2 * m, fmt::format("{} arithmetic (flops {} -> {})", m < 0 ? "less" : "more", num(e["flops"][0]), num(e["flops"][1])));
  if (int m = moved(e["bytes"], 0.05)) {
    const std::string what = fmt::format("{} global memory traffic (bytes {} -> {})", m < 0 ? "less" : "more",
                                         num(e["bytes"][0]), num(e["bytes"][1]));
    // With the same top-level items no intermediate is stored or dropped: the accesses saved or
    // added are repeated reads of one element within a statement, which the compiler loads once.
    if (e["items"][0] != e["items"][1]) vote(-m, what);
    else x.notes.push_back(what + ", but only in repeated reads within the same items, which the compiler loads once");
  }
  if (e.contains("changed_contiguous_share")) {
    const json& s = e["changed_contiguous_share"];
    double d = s[1].get<double>() - s[0].get<double>();
    if (std::abs(d) >= 0.05)
      vote(d > 0 ? 1 : -1, fmt::format("{} of the changed accesses are contiguous in their innermost loop ({} -> {})",
                                       d > 0 ? "more" : "fewer", num(s[0]), num(s[1])));
  }
  if (e.contains("inner_loops")) {
    const json& in = e["inner_loops"];
    int before = scalar_inner(in[0]), after = scalar_inner(in[1]);
    if (after != before)
      vote(after < before ? 1 : -1,
           fmt::format("{} innermost loops stay scalar (innermost {} -> {})", after < before ? "fewer" : "more",
                       inner_text(in[0]), inner_text(in[1])));
  }
  // The timed thread count (0: not stated, e.g. a GPU record).
  const int threads = rec.contains("machine") && rec["machine"].is_object() ? rec["machine"]["threads"].get<int>() : 0;
  auto par = [](const json& k) { return k == "P" || k == "B"; };
  std::string gained, lost;  // the loops that become / stop being parallel
  for (const auto& l : e["loops"]) {
    const bool now = par(l["after"]), was = par(l["before"]);
    if (now == was) continue;
    std::string& to = now ? gained : lost;
    to += fmt::format("{}loop {} (extent {})", to.empty() ? "" : ", ", l["var"].get<std::string>(), num(l["extent"]));
  }
  if (!gained.empty() || !lost.empty()) {
    const std::string what = !gained.empty() ? gained + " becomes parallel" : lost + " stops being parallel";
    const int d = e.contains("parallel_items") ? e["parallel_items"][1].get<int>() - e["parallel_items"][0].get<int>()
                                               : (gained.empty() ? -1 : 1);
    const std::string on = threads > 1 ? fmt::format(" on {} threads", threads) : std::string();
    if (threads == 1) x.notes.push_back(what + ", but the kernels run on 1 thread, so it changes nothing");
    else if (d > 0) vote(2, what + " in a nest that ran serially" + on);
    else if (d < 0) vote(-2, what + " and its nest now runs serially");
    else x.notes.push_back(what + " inside a nest that already runs a parallel loop, so it adds no threads");
  }
  // On the GPU a shared/local buffer is faster storage: the staging rule is the CPU's.
  if (int m = moved(e["local_accesses"], 0.0); m > 0 && rec.value("target", "cpu") == "cpu")
    vote(-1, fmt::format("more local/shared buffer accesses ({} -> {}), plain copies on the CPU",
                         num(e["local_accesses"][0]), num(e["local_accesses"][1])));
  x.verdict = votes > 0 ? "faster" : votes < 0 ? "slower" : "same";
  return x;
}

json expectation_agreement(const std::vector<json>& recs, const std::vector<char>& keep) {
  struct Count {
    int answers = 0, agree = 0;
    json to_json() const {
      return {{"answers", answers}, {"agree", agree},
              {"share", answers ? std::round(1e4 * agree / answers) / 1e4 : 0.0}};
    }
  };
  Count all, noise;
  std::map<std::string, Count> per;
  std::map<std::string, std::map<std::string, int>> confusion;
  for (size_t i = 0; i < recs.size(); ++i) {
    if (!keep[i]) continue;
    for (const auto& a : recs[i]["answers"]) {
      if (!a.contains("expectation")) continue;
      const std::string ex = a["expectation"], label = a["label"];
      const bool agree = (ex == "faster") == (label == "improving");
      for (Count* c : {&all, &per[a["strategy"].get<std::string>()]}) c->answers++, c->agree += agree;
      confusion[ex][label]++;
      // The measured verdict on the step alone, where the labels give one (cost.noise_verdict:
      // "faster" | "within_noise" | "slower"): "same" agrees with "within_noise".
      if (a["cost"].contains("noise_verdict")) {
        const std::string v = a["cost"]["noise_verdict"];
        noise.answers++;
        noise.agree += v == ex || (v == "within_noise" && ex == "same");
      }
    }
  }
  json ps = json::object();
  for (const auto& [s, c] : per) ps[s] = c.to_json();
  return {{"rule", "expectation faster agrees with label improving; same or slower with non_improving or enabling"},
          {"overall", all.to_json()},
          {"per_strategy", ps},
          {"confusion", confusion},
          {"vs_noise_verdict", noise.to_json()}};
}

}  // namespace steptp::dataset
