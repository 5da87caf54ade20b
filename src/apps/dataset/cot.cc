// The chain of thought (`<think>`) and the chat messages of a record (docs/dataset.md, "Chain of
// thought").
//
// The CoT argues only from what the prompt states (apps/dataset/prompt.h: program, target, machine,
// steps so far, the current speedup, the analysis facts) and from the step's effect facts, which
// follow from the program and the answer (apps/dataset/reasoning.h step_effect): what the nest at the
// site does, what bounds it, what the step changes, and the expectation the reasoning rules give
// (apps/dataset/reasoning.h expect). It never states the step's measured outcome, its verification,
// its label, its place on a trajectory or a cost model's estimate (tests check every number and
// a list of such phrases), so a model learns to reason to a step, not to quote a measurement.
#include <cctype>
#include <map>
#include <optional>
#include <string>

#include "apps/dataset/dataset.h"
#include "apps/dataset/reasoning.h"
#include "ir/leir/program_io.h"

namespace steptp::dataset {
namespace {

using nlohmann::json;

std::string num(const json& v) { return v.dump(); }

// What each strategy does, in one clause (STRATEGIES.md).
std::string purpose(const std::string& s) {
  static const std::map<std::string, std::string> m = {
      {"operator_fusion", "merges two nests with the same loops into one, so the intermediate passes from producer to consumer inside one iteration"},
      {"operator_fission", "splits a multi-statement nest into one nest per statement, so each can get its own loop order and schedule"},
      {"compute_inline", "substitutes the producer's expression into every read and drops the producer, so the intermediate is never stored"},
      {"expression_splitting", "computes a sub-expression into its own tensor over only the loops it uses, hoisting loop-invariant work"},
      {"tensor_concat_to_fuse_operators", "runs two nests with the same operation skeleton as one computation over concatenated buffers"},
      {"tensor_split_to_decouple_operators", "splits one nest into two halves along an axis, each schedulable on its own"},
      {"common_subexpression_elimination", "computes a repeated sub-expression once and reuses it"},
      {"dead_code_elimination", "removes computation that never reaches an output"},
      {"expression_reorder", "swaps two adjacent independent nests, changing which computations are neighbours for later fusion"},
      {"loop_reorder", "permutes the loops of a nest, changing which loop is innermost and so which accesses are contiguous"},
      {"loop_tiling", "tiles two adjacent loops, so data reused across iterations stays in cache"},
      {"loop_split", "splits a loop into an outer and an inner loop, shaping it for later vectorization, unrolling or parallelization"},
      {"loop_fusion", "merges two perfectly nested loops into one longer loop"},
      {"loop_unrolling", "unrolls a short loop, removing its loop control and exposing instruction-level parallelism"},
      {"loop_parallelization", "runs an independent loop's iterations in parallel on the CPU cores (OpenMP)"},
      {"loop_vectorization", "runs an independent loop's iterations in SIMD lanes"},
      {"loop_binding", "binds an independent loop to a hardware axis (threads on the CPU, a grid or block index in CUDA)"},
      {"reduction_factorization", "splits a reduction into partial reductions over sub-ranges and a combine, so the partials are independent"},
      {"cache_read_write", "stages a tensor through a local or shared copy that the nest reads or writes instead"},
      {"layout_transformation", "copies an input into a new layout (transposed, merged or split dimensions) and reads that"},
      {"set_storage_scope", "moves an intermediate to local or shared storage"},
      {"set_storage_layout", "gives an intermediate a new layout at every occurrence"},
      {"precompute_indices", "replaces a compound subscript by an index table computed once and read indirectly"},
      {"factorization", "factors an expression (a*b+a*c -> a*(b+c)), trading multiplications for one"},
      {"expand_factorization", "multiplies out a product of sums, exposing its terms to later rewrites"},
      {"cancellation", "cancels common factors of a rational expression"},
      {"expand_cancellation", "distributes a division over a sum"},
      {"apart", "decomposes a fraction into partial fractions"},
      {"together", "puts a sum of fractions over one common denominator (one division)"},
      {"powsimp", "combines powers and exponentials (exp(a)*exp(b) -> exp(a+b)), saving transcendental calls"},
      {"expand_powsimp", "splits a power or exponential into factors"},
      {"expand_log", "turns the logarithm of a product into a sum of logarithms"},
      {"logsimp", "turns a sum of logarithms into the logarithm of a product, saving log calls"},
      {"collect", "collects the terms that share a factor"},
      {"expand_collect", "multiplies collected terms back out"},
      {"partially_equivalent_then_correct", "convolves the concatenated inputs of two identical padded convolutions once and recomputes only the seam"},
      {"normal_loop_max_to_prefix_max", "turns a max-reduction into a running-max array whose last element is the result"},
      {"exponential_split", "rewrites exp(u) as a product with exp of a small constant, an identity that prepares rescaling rewrites"},
      {"multiplicative_split", "inserts x/z*z, an identity that exposes a factor to later algebraic rewrites"},
      {"additive_split", "inserts x+z-z, an identity that exposes a term to later algebraic rewrites"},
      {"normal_loop_summation_on_exp_to_prefix_summation_on_exp", "fuses the max and sum-of-exp passes into one pass that keeps a running max and a rescaled sum per row"},
      {"online_softmax", "computes the softmax statistics in one pass per row (running max, rescaled sum) and normalizes the row right after it"},
      {"flashattention_wo_tiling", "fuses the softmax with the following P@V product into one online pass that rescales the output row in place"}};
  auto it = m.find(s);
  return it == m.end() ? "rewrites the program" : it->second;
}

// The loops whose kind changes, new loops, and a changed item count: facts the rules do not vote on.
std::string loop_changes(const json& e) {
  std::string out;
  for (const auto& l : e["loops"]) {
    std::string before = l["before"], after = l["after"];
    out += std::string(out.empty() ? "" : "; ") + "loop " + l["var"].get<std::string>() + " (extent " + num(l["extent"]) +
           ", " + l["dependence"].get<std::string>() + ") " +
           (before == "new" ? "is new, " + loop_kind_name(after) : "becomes " + loop_kind_name(after));
  }
  if (e["items"][0] != e["items"][1])
    out += std::string(out.empty() ? "" : "; ") + "top-level items " + num(e["items"][0]) + " -> " + num(e["items"][1]);
  return out;
}

std::string listed(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : "; ") + x;
  return s;
}

// What the reasoning rules conclude for an answer, with their grounds.
std::string expectation_text(const json& rec, const json& a) {
  const Expectation x = expect(rec, a);
  std::string s;
  if (auto c = loop_changes(a["effect"]); !c.empty()) s += "Effect: " + c + ".\n";
  if (!x.gains.empty()) s += "For: " + listed(x.gains) + ".\n";
  if (!x.costs.empty()) s += "Against: " + listed(x.costs) + ".\n";
  if (!x.notes.empty()) s += "Neutral: " + listed(x.notes) + ".\n";
  s += "Expectation: ";
  if (x.verdict == "faster") s += "faster than the current program";
  else if (x.verdict == "slower") s += "slower than the current program";
  else if (x.gains.empty()) s += "about the same speed; no rule argues for it, its value lies in what it makes possible";
  else s += "about the same speed; the reasons for and against balance";
  return s + ".\n";
}

// The nest at the site: what it computes, its work and traffic, and which of them bounds it
// (documented rule: fewer flops than four-byte words moved means traffic bounds it).
std::string site_text(const json& analysis, int item) {
  for (const auto& n : analysis["nests"]) {
    if (n["item"].get<int>() != item) continue;
    std::string s = "The site is item " + num(n["item"]) + " (" + n["header"].get<std::string>() + "), which writes " +
                    n["writes"].get<std::string>();
    if (!n["reads"].get<std::string>().empty()) s += " from " + n["reads"].get<std::string>();
    const int64_t flops = n["flops"], bytes = n["bytes"];
    s += ": " + num(n["iterations"]) + " iterations, " + num(n["flops"]) + " flops over " + num(n["bytes"]) + " bytes, " +
         num(n["contiguous_accesses"]) + " of " + num(n["accesses"]) + " accesses contiguous. ";
    s += flops * 4 < bytes ? "It does fewer flops than it moves four-byte words, so memory traffic bounds it."
                           : "It does at least one flop per four-byte word it moves, so arithmetic bounds it.";
    return s + "\n";
  }
  return "";
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



size_t occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + what.size())) ++n;
  return n;
}

// What a GPU-flavoured choice means when the target is the CPU (the CPU lowering,
// lower/cpu/codegen.cc): said whenever a step adds a bound loop or an s/l buffer, so no CPU
// record teaches a GPU-only reason.
std::string cpu_meaning(const json& rec, const json& a) {
  if (rec.value("target", "cpu") != "cpu") return "";
  const std::string& before = rec["parent_program"].get_ref<const std::string&>();
  const std::string& after = a["result_program"].get_ref<const std::string&>();
  std::string out;
  if (occurrences(after, "B^{") > occurrences(before, "B^{"))
    out += " On the CPU a bound loop (B) runs as an OpenMP parallel loop, exactly like P; the hardware axis it names"
           " matters only to the CUDA lowering.";
  auto scoped = [](const std::string& t) { return occurrences(t, ",s}") + occurrences(t, ",l}"); };
  if (scoped(after) > scoped(before))
    out += " On the CPU shared (s) and local (l) buffers are plain arrays of the kernel (on the stack when small,"
           " else on the heap): there is no shared memory or register file to place them in, so any gain comes from a"
           " smaller working set that stays in cache.";
  return out;
}

std::string make_cot(const json& rec) {
  std::string c;
  // The state, as the prompt gives it.
  if (rec["steps_so_far"].empty()) {
    c += "The current program is the root; no step has been applied yet.\n";
  } else {
    const json& last = rec["steps_so_far"].back();
    c += "The current program comes from the root by the steps so far (last " + last["strategy"].get<std::string>() +
         " " + last["params"].dump() + "); ";
    c += rec.value("parent_speedup_measured", false)
             ? "it runs " + num(rec["parent_speedup_vs_root"]) + " times as fast as the root.\n"
             : "its speed relative to the root is not known.\n";
  }
  if (rec.contains("machine") && rec["machine"].is_object()) {
    const json& m = rec["machine"];
    c += "The kernels run on " + num(m["threads"]) + (m["threads"] == 1 ? " thread" : " threads") + " with " +
         num(m["f32_lanes"]) + " f32 lanes per vector, compiled with " + m["flags"].get<std::string>() + ".\n";
  }
  const json analysis = analysis_json(leir::program_from_text(rec["parent_program"].get<std::string>()));
  const bool multi = rec["answers"].size() > 1;
  if (multi) c += "Several distinct single steps apply here; each, applied on its own:\n";
  int shown_site = -2;
  for (const auto& a : rec["answers"]) {
    const int item = a.value("site_item", -1);
    std::string b;
    if (item != shown_site) b += site_text(analysis, item);
    shown_site = item;
    b += "Step: " + a["strategy"].get<std::string>() + " with params " + a["params"].dump() + ": it " +
         purpose(a["strategy"].get<std::string>()) + "; the strategy is " + a["exactness"].get<std::string>() + ".\n";
    b += expectation_text(rec, a);
    std::string meaning = cpu_meaning(rec, a);
    if (!meaning.empty()) b += meaning.substr(1) + "\n";
    const auto& t = a["transition"];
    b += "Changed items before:\n";
    for (const auto& x : t["before"]) b += "  " + x.get<std::string>() + "\n";
    b += "after:\n";
    for (const auto& x : t["after"]) b += "  " + x.get<std::string>() + "\n";
    for (const auto& x : t["tensors_added"]) b += "New tensor: " + x.get<std::string>() + "\n";
    for (const auto& x : t["tensors_removed"]) b += "Removed tensor: " + x.get<std::string>() + "\n";
    if (multi) {
      c += "- " + a["strategy"].get<std::string>() + ":\n";
      for (size_t p = 0, q; p < b.size(); p = q + 1) {
        q = b.find('\n', p);
        c += "  " + b.substr(p, q - p + 1);
      }
    } else {
      c += b;
    }
  }
  return c;
}

json make_chat(const json& rec, AnswerFormat f) {
  bool multi = rec["kind"] == "multi";
  // Answer keys in decision order, the strategy first (prompt.h action_answer).
  nlohmann::ordered_json ans = nlohmann::ordered_json::array();
  std::optional<leir::Program> parent;
  if (f != AnswerFormat::IR) parent = leir::program_from_text(rec["parent_program"].get<std::string>());
  for (const auto& a : rec["answers"])
    ans.push_back(f == AnswerFormat::Action   ? action_answer(*parent, a)
                  : f == AnswerFormat::Choice ? choice_answer(*parent, a)
                                              : nlohmann::ordered_json{{"strategy", a["strategy"]},
                                                                       {"params", a["params"]},
                                                                       {"transformed_IR", a["result_program"]}});
  std::string answer = multi ? ans.dump() : ans[0].dump();
  std::string asst = "<think>\n" + make_cot(rec) + "</think>\n<answer>" + answer + "</answer>";
  json messages = prompt_messages(rec, f);
  messages.push_back({{"role", "assistant"}, {"content", asst}});
  return {{"messages", messages}, {"reward_context", reward_context(rec)}};
}

json reward_context(const json& rec) {
  return {{"root_program", rec.at("root_program")}, {"parent_program", rec.at("parent_program")},
          {"root_hash", rec.at("root").value("hash", "")}, {"parent_hash", rec.value("parent_hash", "")},
          {"kind", rec.value("kind", "single")},          {"target", rec.value("target", "cpu")},
          {"record_id", rec.value("id", "")}};
}

}  // namespace steptp::dataset
