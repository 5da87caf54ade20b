// Records, grounded CoT and chat messages.
#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include <fmt/format.h>

#include "analysis/dependence.h"
#include "analysis/structure.h"
#include "dataset/dataset.h"
#include "dataset/shortcut.h"
#include "leir/printer.h"
#include "leir/program_io.h"
#include "strategies/sampler.h"

namespace steptp::dataset {
namespace {

using nlohmann::json;

std::string num(const json& v) { return v.dump(); }

json params_json(const strategies::Params& p) { return json::parse(strategies::params_to_json(p)); }

std::string item_text(const leir::Item& it) {
  if (it.is_stmt()) return leir::print_stmt(it.stmt);
  return leir::print_body({it});
}

// Loop-level dependence facts of top-level nest `index` of `p`.
json loop_facts(const leir::Program& p, int index) {
  json loops = json::array();
  for (const auto& nr : analysis::all_nests(p.body)) {
    if (nr.path.size() != 1 || nr.path[0] != index) continue;
    for (int k = 0; k < int(nr.nest->loops.size()); ++k) {
      const auto& l = nr.nest->loops[size_t(k)];
      auto chk = analysis::check_loop(nr, k);
      std::string dep = chk.kind == analysis::LoopDep::Independent     ? "independent"
                        : chk.kind == analysis::LoopDep::ReductionOnly ? "reduction_only"
                                                                       : "carried";
      loops.push_back({{"var", l.var},
                       {"kind", std::string(1, leir::to_char(l.kind))},
                       {"extent", l.extent},
                       {"dependence", dep},
                       {"reason", chk.reason}});
    }
  }
  return loops;
}

json facts_json(const leir::Program& p, int site_item) {
  auto pf = search::program_facts(p);
  json nests = json::array();
  for (size_t i = 0; i < pf.nests.size(); ++i) {
    const auto& n = pf.nests[i];
    nests.push_back({{"index", i},
                     {"header", n.header},
                     {"iterations", n.iterations},
                     {"flops", n.flops},
                     {"bytes", n.bytes},
                     {"parallel_loops", n.parallel_loops},
                     {"vector_loops", n.vector_loops},
                     {"carried_loops", n.carried_loops},
                     {"reduction_loops", n.reduction_loops}});
  }
  json f = {{"items", p.body.size()}, {"statements", pf.statements}, {"flops", pf.flops}, {"bytes", pf.bytes},
            {"nests", nests}, {"site_item", site_item}};
  if (site_item >= 0 && site_item < int(p.body.size()) && p.body[size_t(site_item)].is_nest())
    f["site_loops"] = loop_facts(p, site_item);
  else
    f["site_loops"] = json::array();
  return f;
}

// Items that differ between parent and result (by printed text): before → after.
json transition_json(const leir::Program& a, const leir::Program& b) {
  std::vector<std::string> ta, tb;
  for (const auto& it : a.body) ta.push_back(item_text(it));
  for (const auto& it : b.body) tb.push_back(item_text(it));
  size_t pre = 0;
  while (pre < ta.size() && pre < tb.size() && ta[pre] == tb[pre]) ++pre;
  size_t suf = 0;
  while (suf < ta.size() - pre && suf < tb.size() - pre && ta[ta.size() - 1 - suf] == tb[tb.size() - 1 - suf]) ++suf;
  json before = json::array(), after = json::array();
  for (size_t i = pre; i < ta.size() - suf; ++i) before.push_back(ta[i]);
  for (size_t i = pre; i < tb.size() - suf; ++i) after.push_back(tb[i]);
  std::vector<std::string> da, db;
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

std::string rationale(const std::string& s) {
  auto has = [&](const char* k) { return s.find(k) != std::string::npos; };
  if (has("parallelization") || has("binding"))
    return "the loop's iterations are independent, so they can run on separate cores and divide the work";
  if (has("vectorization")) return "the innermost loop is independent and unit-stride, so SIMD lanes can process it";
  if (has("unrolling")) return "a short loop's control overhead is removed and its body exposes more instruction-level parallelism";
  if (has("expression_splitting")) return "a sub-expression is computed into its own tensor, which exposes it to caching, fusion or hoisting in later steps";
  if (has("exponential_split") || has("multiplicative_split") || has("additive_split"))
    return "the operation is split into parts whose cost or reuse differs, so each part can be computed where it is cheapest";
  if (has("tiling") || has("split")) return "splitting a loop creates blocks that keep reused data in cache and shapes the iteration space for later parallel or vector steps";
  if (has("reorder")) return "a different loop order changes which accesses are contiguous in the innermost loop";
  if (has("fusion") || has("concat") || has("inline")) return "producer and consumer share loops, so intermediate values stay in registers or cache instead of round-tripping through memory";
  if (has("fission") || has("decouple")) return "separating independent computations gives each its own nest that can be scheduled on its own";
  if (has("cache") || has("storage") || has("layout")) return "staging or re-laying out data changes the memory traffic of the hot accesses";
  if (has("dead_code") || has("common_subexpression") || has("precompute")) return "work that is redundant or repeated is removed from the loop body";
  if (has("softmax") || has("flashattention") || has("prefix")) return "the multi-pass reduction is restructured into fewer passes over the data";
  if (has("reduction")) return "the reduction is factored so its partial sums can proceed independently";
  return "the expression is rewritten into an algebraically equivalent form with a different operation count";
}

json answer_json(const search::Transition& t, const std::string& root_key, int seq) {
  int site_item = t.site.path.empty() ? -1 : t.site.path[0];
  double sp = search::round_ratio(t.cost_parent.value, t.cost_result.value);
  double sr = search::round_ratio(t.cost_root.value, t.cost_result.value);
  return {{"id", fmt::format("{}#{}", root_key, seq)},
          {"strategy", t.strategy},
          {"site", {{"index", t.site_index}, {"path", t.site.path}, {"detail", t.site.detail},
                    {"description", t.site.description}}},
          {"params", params_json(t.params)},
          {"exactness", std::string(strategies::to_string(t.exactness))},
          {"result_program", leir::program_to_text(t.result)},
          {"result_hash", search::hex64(t.result_hash)},
          {"verification", json::parse(verify::to_json(t.report))},
          {"cost", {{"measured", t.cost_result.measured},
                    {"unit", t.cost_result.measured ? "us" : "model"},
                    {"root", t.cost_root.value},
                    {"parent", t.cost_parent.value},
                    {"result", t.cost_result.value},
                    {"speedup_vs_parent", sp},
                    {"speedup_vs_root", sr}}},
          {"label", t.improving ? "improving" : "non_improving"},
          {"chosen", t.chosen},
          {"transition", transition_json(t.parent, t.result)},
          {"site_item", site_item}};
}

}  // namespace

std::vector<std::string> numbers_in(const std::string& s) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    bool prev_word = i > 0 && (std::isalnum(static_cast<unsigned char>(s[i - 1])) || s[i - 1] == '_' || s[i - 1] == '.');
    if (std::isdigit(c) && !prev_word) {
      size_t j = i;
      while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
      if (j + 1 < s.size() && s[j] == '.' && std::isdigit(static_cast<unsigned char>(s[j + 1]))) {
        ++j;
        while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
      }
      if (j < s.size() && (s[j] == 'e' || s[j] == 'E')) {
        size_t k = j + 1;
        if (k < s.size() && (s[k] == '+' || s[k] == '-')) ++k;
        if (k < s.size() && std::isdigit(static_cast<unsigned char>(s[k]))) {
          while (k < s.size() && std::isdigit(static_cast<unsigned char>(s[k]))) ++k;
          j = k;
        }
      }
      out.push_back(s.substr(i, j - i));
      i = j;
    } else {
      // skip a whole identifier so digits inside names are not numbers
      if (std::isalpha(c) || c == '_') {
        while (i < s.size() && (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '_')) ++i;
      } else {
        ++i;
      }
    }
  }
  return out;
}

json root_records(const Root& r, const GenerateOptions& o, search::SearchStats* stats) {
  search::SearchOptions so;
  so.seed = strategies::mix_seed(o.seed, search::program_hash(r.program));
  so.mode = o.mode;
  so.beam = o.beam;
  so.depth = o.depth;
  so.sites_per_strategy = o.sites_per_strategy;
  so.params_per_site = o.params_per_site;
  so.verify_trials = o.verify_trials;
  auto res = search::run_search(r.program, so);
  if (stats) *stats = res.stats;

  std::string root_text = leir::program_to_text(r.program);
  json root = {{"key", r.key}, {"family", r.family}, {"name", r.program.name},
               {"hash", search::hex64(search::program_hash(r.program))}};
  // Group transitions by parent state (in order of first appearance).
  std::vector<int> state_order;
  std::map<int, std::vector<size_t>> by_state;
  for (size_t i = 0; i < res.transitions.size(); ++i) {
    int s = res.transitions[i].state;
    if (!by_state.count(s)) state_order.push_back(s);
    by_state[s].push_back(i);
  }
  json records = json::array();
  int seq = 0;
  for (int s : state_order) {
    const auto& idx = by_state[s];
    const auto& first = res.transitions[idx[0]];
    json base = {{"root", root},
                 {"root_program", root_text},
                 {"parent_program", leir::program_to_text(first.parent)},
                 {"parent_hash", search::hex64(search::program_hash(first.parent))},
                 {"state", s},
                 {"depth", first.depth},
                 {"steps_so_far", json::array()},
                 {"target", "cpu"},
                 {"parent_speedup_vs_root", search::round_ratio(first.cost_root.value, first.cost_parent.value)}};
    for (const auto& st : first.steps_so_far)
      base["steps_so_far"].push_back({{"strategy", st.strategy}, {"params", params_json(st.params)}});
    // Single-answer records: every improving step, up to N non-improving ones per state.
    int non_impr = 0;
    std::vector<size_t> by_cost = idx;
    std::stable_sort(by_cost.begin(), by_cost.end(), [&](size_t a, size_t b) {
      return res.transitions[a].cost_result.value < res.transitions[b].cost_result.value;
    });
    std::map<int, json> facts_cache;
    auto facts_for = [&](int item) -> json& {
      auto it = facts_cache.find(item);
      if (it == facts_cache.end()) it = facts_cache.emplace(item, facts_json(first.parent, item)).first;
      return it->second;
    };
    // Visit the state's steps in a seeded order so no strategy is favoured by its catalogue
    // position; keep at most `per_strategy_per_state` steps of one strategy.
    std::map<std::string, int> per_strat;
    auto order = strategies::choose_indices(idx.size(), idx.size(), strategies::mix_seed(so.seed, uint64_t(s) + 77));
    std::vector<size_t> visit;
    for (size_t k : order) visit.push_back(idx[k]);
    std::stable_sort(visit.begin(), visit.end(), [&](size_t a, size_t b) {
      return res.transitions[a].improving > res.transitions[b].improving;  // improving first (stable within)
    });
    std::vector<size_t> kept;
    for (size_t i : visit) {
      const auto& t = res.transitions[i];
      if (per_strat[t.strategy] >= o.per_strategy_per_state) continue;
      if (!t.improving && non_impr >= o.non_improving_per_state) continue;
      if (!t.improving) ++non_impr;
      per_strat[t.strategy]++;
      kept.push_back(i);
    }
    std::sort(kept.begin(), kept.end());
    for (size_t i : kept) {
      const auto& t = res.transitions[i];
      json rec = base;
      rec["kind"] = "single";
      rec["answers"] = json::array({answer_json(t, r.key, seq++)});
      rec["facts"] = facts_for(rec["answers"][0]["site_item"].get<int>());
      records.push_back(std::move(rec));
    }
    // One multi-answer record per state: distinct strategies, best modelled cost first.
    // Shortcut policy (dataset/shortcut.h): at most multi_trivial_max trivially applicable
    // strategies per set; the next-cheapest non-trivial steps take the other places.
    std::set<std::string> used;
    json answers = json::array();
    int trivial = 0;
    for (size_t i : by_cost) {
      const auto& t = res.transitions[i];
      if (used.count(t.strategy)) continue;
      if (is_trivial_strategy(t.strategy) && trivial++ >= o.multi_trivial_max) continue;
      used.insert(t.strategy);
      answers.push_back(answer_json(t, r.key, seq++));
      if (int(answers.size()) >= o.multi_answer_max) break;
    }
    if (answers.size() >= 2) {
      json rec = base;
      rec["kind"] = "multi";
      rec["answers"] = answers;
      rec["facts"] = facts_for(answers[0]["site_item"].get<int>());
      records.push_back(std::move(rec));
    }
  }
  return records;
}

std::string make_cot(const json& rec) {
  std::string c;
  // (a) change from the root
  c += "a) Change from the root: ";
  if (rec["steps_so_far"].empty()) {
    c += "none yet; the current program is the root " + rec["root"]["name"].get<std::string>() + ".";
  } else {
    c += "applied so far";
    bool firstc = true;
    for (const auto& s : rec["steps_so_far"]) {
      c += firstc ? ": " : ", then ";
      firstc = false;
      c += s["strategy"].get<std::string>() + " " + s["params"].dump();
    }
    c += std::string(". ") + (rec.value("parent_speedup_measured", false) ? "Measured" : "Modelled") +
         " speedup of the current program over the root: " + num(rec["parent_speedup_vs_root"]) + ".";
  }
  c += "\n";
  // (b) facts
  const auto& f = rec["facts"];
  c += "b) Facts: " + num(f["items"]) + " top-level items, " + num(f["statements"]) + " statements, " +
       num(f["flops"]) + " flops and " + num(f["bytes"]) + " bytes of global memory traffic in total.\n";
  for (const auto& n : f["nests"]) {
    if (n["header"] == "stmt") continue;
    c += "  item " + num(n["index"]) + " " + n["header"].get<std::string>() + ": " + num(n["iterations"]) +
         " statement instances, " + num(n["flops"]) + " flops, " + num(n["bytes"]) + " bytes, " +
         num(n["parallel_loops"]) + " parallel and " + num(n["vector_loops"]) + " vector loops, " +
         num(n["carried_loops"]) + " loops carrying a dependence, " + num(n["reduction_loops"]) +
         " reduction-only loops.\n";
  }
  if (!f["site_loops"].empty()) {
    c += "  Dependences at the site (item " + num(f["site_item"]) + "):";
    for (const auto& l : f["site_loops"]) {
      c += " loop " + l["var"].get<std::string>() + " (extent " + num(l["extent"]) + ") " +
           l["dependence"].get<std::string>();
      if (!l["reason"].get<std::string>().empty()) c += " [" + l["reason"].get<std::string>() + "]";
      c += ";";
    }
    c += "\n";
  }
  // (c) decision
  bool multi = rec["answers"].size() > 1;
  c += multi ? "c) Decision: several distinct single steps are valid here.\n" : "c) Decision: ";
  for (const auto& a : rec["answers"]) {
    if (multi) c += "  - ";
    c += a["strategy"].get<std::string>() + " at site " + num(a["site"]["index"]) + " (" +
         a["site"]["description"].get<std::string>() + ") with params " + a["params"].dump() + ": " +
         rationale(a["strategy"].get<std::string>()) + "; the strategy is " + a["exactness"].get<std::string>() +
         ".\n";
  }
  // (d) exact transition
  c += "d) Transition:\n";
  for (const auto& a : rec["answers"]) {
    const auto& t = a["transition"];
    if (multi) c += "  " + a["strategy"].get<std::string>() + ":\n";
    c += "  before:\n";
    for (const auto& s : t["before"]) c += "    " + s.get<std::string>() + "\n";
    c += "  after:\n";
    for (const auto& s : t["after"]) c += "    " + s.get<std::string>() + "\n";
    for (const auto& s : t["tensors_added"]) c += "  new tensor: " + s.get<std::string>() + "\n";
    for (const auto& s : t["tensors_removed"]) c += "  removed tensor: " + s.get<std::string>() + "\n";
  }
  // (e) outcome
  c += "e) Outcome:";
  for (const auto& a : rec["answers"]) {
    const auto& v = a["verification"];
    const auto& k = a["cost"];
    c += std::string(multi ? "\n  - " + a["strategy"].get<std::string>() + ": " : " ") + "verified " +
         v["class"].get<std::string>() + " against the root over " + num(v["trials"]) + " trials; " +
         (k["measured"].get<bool>() ? "measured CPU time (ms, median)" : "modelled (not measured) cost") + " " +
         num(k["parent"]) + " -> " + num(k["result"]) + ", speedup " + num(k["speedup_vs_parent"]) + " over the parent and " +
         num(k["speedup_vs_root"]) + " over the root; " +
         (a["label"] == "improving" ? "an improving step." : "a non-improving but valid step.");
  }
  c += "\n";
  return c;
}

json make_chat(const json& rec) {
  std::string sys =
      "You are an expert optimizer of tensor programs written in LEIR, a loop-nest tensor IR. Given a program, "
      "propose a single semantics-preserving optimization step from the known strategy catalogue. Think step by "
      "step inside <think></think>, then give the answer as JSON inside <answer></answer>.";
  std::string user = "Program (LEIR):\n" + rec["parent_program"].get<std::string>() + "\n";
  user += "Target: CPU (C++ with OpenMP).\nSteps so far: ";
  if (rec["steps_so_far"].empty()) user += "none";
  else {
    bool first = true;
    for (const auto& s : rec["steps_so_far"]) {
      user += (first ? "" : ", ") + s["strategy"].get<std::string>() + " " + s["params"].dump();
      first = false;
    }
  }
  user += "\n";
  bool multi = rec["kind"] == "multi";
  user += multi ? "Task: give several distinct valid single optimization steps, as a JSON list of "
                  "{\"strategy\", \"params\", \"transformed_IR\"}."
                : "Task: give one valid optimization step as JSON {\"strategy\", \"params\", \"transformed_IR\"}.";
  json ans = json::array();
  for (const auto& a : rec["answers"])
    ans.push_back({{"strategy", a["strategy"]}, {"params", a["params"]}, {"transformed_IR", a["result_program"]}});
  std::string answer = multi ? ans.dump() : ans[0].dump();
  std::string asst = "<think>\n" + make_cot(rec) + "</think>\n<answer>" + answer + "</answer>";
  return {{"messages", json::array({{{"role", "system"}, {"content", sys}},
                                    {{"role", "user"}, {"content", user}},
                                    {{"role", "assistant"}, {"content", asst}}})}};
}

}  // namespace steptp::dataset
