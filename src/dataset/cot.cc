// The grounded chain-of-thought (sections a-e) and the chat messages of a record.
//
// Every number the CoT writes is a field of the record (tests check it): the decision (c) is
// argued from the step's "effect" facts (flops, bytes, nests, contiguous accesses and the loops
// whose kind changed, with their dependence) and the analytic cost model's estimate; the outcome
// (e) compares the measured speedup with that expectation, so a model learns when a rewrite pays
// off on the CPU, not just what changed.
#include <cctype>
#include <map>
#include <optional>
#include <string>

#include "dataset/dataset.h"
#include "leir/program_io.h"

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

const char* kind_name(const std::string& k) {
  if (k == "P") return "parallel";
  if (k == "B") return "bound to a hardware axis";
  if (k == "V") return "vectorized";
  if (k == "U") return "unrolled";
  if (k == "L") return "serial";
  if (k == "removed") return "removed";
  return "new";
}

// The facts that argue for or against the step: what it changes in work, traffic, access
// pattern and loop kinds.
std::string grounds(const json& e) {
  std::string out;
  auto pair = [&](const char* what, const char* key, const char* unit) {
    const auto& v = e[key];
    if (v[0] == v[1]) return;
    out += std::string(out.empty() ? "" : "; ") + what + " " + num(v[0]) + " -> " + num(v[1]) + unit;
  };
  for (const auto& l : e["loops"]) {
    std::string before = l["before"], after = l["after"];
    out += std::string(out.empty() ? "" : "; ") + "loop " + l["var"].get<std::string>() + " (extent " + num(l["extent"]) +
           ", " + l["dependence"].get<std::string>() + ") " +
           (before == "new" ? std::string("is new, ") + kind_name(after) : std::string("becomes ") + kind_name(after));
  }
  pair("flops", "flops", "");
  pair("global memory traffic", "bytes", " bytes");
  pair("local/shared buffer accesses", "local_accesses", "");
  pair("top-level items", "items", "");
  pair("share of accesses contiguous in their innermost loop", "contiguous_share", "");
  return out.empty() ? "the modelled work, traffic and access pattern do not change." : out + ".";
}

enum class Expect { Faster, Slower, Neutral };

// The analytic cost model's estimate (flops, bytes, local accesses, parallel and vector loops):
// kept under cost.model once the step is measured.
const json& model_cost(const json& a) { return a["cost"]["measured"].get<bool>() ? a["cost"]["model"] : a["cost"]; }

Expect expectation(const json& a) {
  double s = model_cost(a)["speedup_vs_parent"].get<double>();
  return s > 1 ? Expect::Faster : s < 1 ? Expect::Slower : Expect::Neutral;
}

std::string expectation_text(const json& a) {
  std::string est = "The cost model estimates a speedup of " + num(model_cost(a)["speedup_vs_parent"]) + " over the parent: ";
  switch (expectation(a)) {
    case Expect::Faster: return est + "expected faster";
    case Expect::Slower: return est + "expected slower on its own (it pays off only through later steps, if at all)";
    case Expect::Neutral: return est + "expected about the same; its value is in the steps it enables";
  }
  return est;
}

// What the tuner's learned cost model predicted for the result (tuned records).
std::string learned_text(const json& a) {
  if (!a.contains("learned_model")) return "";
  return " The tuner's learned model (trained on this root's measured candidates) predicted " +
         num(a["learned_model"]["predicted_speedup_vs_root"]) + " over the root.";
}

// Whether the measured ratio over the parent clears the noise of both timings (the timing
// policy's rule), with the spread it was judged against.
std::string noise_text(const json& k) {
  if (!k.contains("clears_noise")) return "";
  const json& p = k["vs_parent"];
  return std::string(k["clears_noise"].get<bool>() ? " (clears" : " (within") + " the noise: CV " + num(p["parent"]["cv"]) +
         " and " + num(p["result"]["cv"]) + " over " + num(p["parent"]["repeats"]) + " and " +
         num(p["result"]["repeats"]) + " runs)";
}

// The label in words; an enabling step names what it enabled (answer.path, record fields).
std::string label_text(const json& a) {
  if (a["label"] == "improving") return "an improving step";
  if (a["label"] != "enabling") return "a non-improving but valid step";
  const json& p = a["path"];
  return "an enabling step: not faster on its own, it is step " + num(p["step"]) + " of " + num(p["of"]) +
         " of the best-found trajectory, whose later steps make the program " + num(p["enabled_speedup"]) +
         " times faster than this result";
}

std::string verdict(Expect x, bool improving) {
  if (x == Expect::Neutral) return "";
  bool expected_better = x == Expect::Faster;
  return expected_better == improving ? ", as expected" : ", contrary to the expectation";
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
// backend/cpu/codegen.cc): said whenever a step adds a bound loop or an s/l buffer, so no CPU
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
         a["site"]["description"].get<std::string>() + ") with params " + a["params"].dump() + ": it " +
         purpose(a["strategy"].get<std::string>()) + "; the strategy is " + a["exactness"].get<std::string>() +
         ".\n" + std::string(multi ? "    " : "   ") + "Why: " + grounds(a["effect"]) + " " +
         expectation_text(a) + "." + learned_text(a) + cpu_meaning(rec, a) + "\n";
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
         num(k["speedup_vs_root"]) + " over the root" + noise_text(k) + "; " +
         label_text(a) + verdict(expectation(a), a["label"] == "improving") + ".";
  }
  c += "\n";
  return c;
}

json make_chat(const json& rec, AnswerFormat f) {
  bool multi = rec["kind"] == "multi";
  json ans = json::array();
  std::optional<leir::Program> parent;
  if (f == AnswerFormat::Action) parent = leir::program_from_text(rec["parent_program"].get<std::string>());
  for (const auto& a : rec["answers"])
    ans.push_back(f == AnswerFormat::Action
                      ? action_answer(*parent, a)
                      : json{{"strategy", a["strategy"]}, {"params", a["params"]}, {"transformed_IR", a["result_program"]}});
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
