#include "search/tune/schedule_rules.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <optional>
#include <string>

#include "ir/analysis/accumulation.h"
#include "ir/analysis/affine.h"
#include "lower/cpu/codegen.h"
#include "ir/leir/ir_mutator.h"
#include "ir/leir/tensors.h"
#include "transform/schedule_state.h"
#include "front/workloads/bench_size.h"

namespace steptp::tune {
// The items that carry the program's work: the heaviest ones (by statement instances) until they
// hold kWorkShare of it. Parallelizing or vectorizing a nest outside them (a bias add beside a
// GEMM, a small reduction) cannot change the program's time measurably, and each such step would
// be one more trajectory step that teaches nothing.
std::vector<char> heaviest(const std::vector<int64_t>& work) {
  constexpr double kWorkShare = 0.9;
  std::vector<std::pair<int64_t, size_t>> order;
  int64_t total = 0;
  for (size_t i = 0; i < work.size(); ++i) {
    order.push_back({work[i], i});
    total += work[i];
  }
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<char> heavy(work.size(), 0);
  int64_t covered = 0;
  for (const auto& [n, i] : order) {
    if (covered >= kWorkShare * double(total)) break;
    heavy[i] = 1;
    covered += n;
  }
  return heavy;
}

CopyProducer copy_producer(const leir::Program& p, size_t item) {
  if (!p.body[item].is_nest()) return CopyProducer::None;
  const leir::Nest& n = p.body[item].nest;
  if (n.body.size() != 1 || !n.body[0].is_stmt()) return CopyProducer::None;
  const leir::ExprPtr& e = n.body[0].stmt.rhs;
  if (e->is_access()) return CopyProducer::Plain;
  // The literal may be negated: a max pool pads with -inf, which parses as -(inf).
  auto literal = [](const leir::ExprPtr& x) {
    return x->is_number() || (x->kind == leir::ExprKind::Unary && x->args[0]->is_number());
  };
  const bool padded = e->kind == leir::ExprKind::Call && e->func == leir::Func::IfThenElse && e->args.size() == 3 &&
                      e->args[1]->is_access() && literal(e->args[2]);
  return padded ? CopyProducer::Padded : CopyProducer::None;
}

namespace {

using strategies::Params;
using strategies::Site;

// A chain under construction: each step applies a registered strategy at the first site `at`
// accepts, with `params` (which must be in the site's parameter space) or the space's first
// choice, and continues from its result.
class ChainBuilder {
 public:
  ChainBuilder(const leir::Program& root, int max_steps) : cur_(root), max_steps_(max_steps) {}

  bool step(std::string_view name, const std::function<bool(const Site&)>& at, const std::optional<Params>& params = {}) {
    const auto* s = strategies::find_strategy(name);
    if (!s || int(chain_.size()) >= max_steps_) return false;
    try {
      return apply(*s, at, params);
    } catch (const std::exception&) {
      return false;  // a strategy that cannot analyse this program ends the chain here
    }
  }
  const leir::Program& program() const { return cur_; }
  size_t size() const { return chain_.size(); }
  int steps_left() const { return max_steps_ - int(chain_.size()); }
  RuleChain take() { return std::move(chain_); }

 private:
  bool apply(const strategies::Strategy& s, const std::function<bool(const Site&)>& at, const std::optional<Params>& params) {
    const strategies::ScheduleState st(cur_);
    const auto& sites = s.sites(st);
    for (size_t i = 0; i < sites.size(); ++i) {
      if (!at(sites[i])) continue;
      auto space = s.param_space(st, sites[i]);
      if (params && std::find(space.begin(), space.end(), *params) == space.end()) return false;
      Params chosen = params ? *params : space.empty() ? Params{} : space[0];
      auto c = s.apply(st, sites[i], chosen);
      if (!c) return false;
      chain_.push_back(
          {strategies::TraceStep{std::string(s.name()), strategies::address_of(sites, i), sites[i].description, chosen},
           c->program});
      cur_ = std::move(c->program);
      return true;
    }
    return false;
  }

  leir::Program cur_;
  int max_steps_;
  RuleChain chain_;
};

// Items marked in `skip` take no part (neither heavy nor counted in the total).
std::vector<char> heavy_items(const leir::Program& p, const std::vector<char>& skip = {}) {
  std::vector<int64_t> work(p.body.size(), 0);
  for (size_t i = 0; i < p.body.size(); ++i)
    if (i >= skip.size() || !skip[i]) work[i] = workloads::statement_instances(p.body[i]);
  auto heavy = heaviest(work);
  for (size_t i = 0; i < heavy.size(); ++i)
    if (i < skip.size() && skip[i]) heavy[i] = 0;
  return heavy;
}

// Any site inside one of the heavy items of `p` (a site's path starts with its top-level item).
std::function<bool(const Site&)> heavy_site(const leir::Program& p, const std::vector<char>& skip = {}) {
  return [heavy = heavy_items(p, skip)](const Site& s) {
    return !s.path.empty() && s.path[0] >= 0 && size_t(s.path[0]) < heavy.size() && heavy[size_t(s.path[0])];
  };
}

// A site of top-level nest `item` (nest strategies' sites have path {item}).
std::function<bool(const Site&)> nest_site(size_t item) {
  return [item](const Site& s) { return s.path == std::vector<int>{int(item)}; };
}

// The site of loop `var` of top-level nest `item` (loop strategies' sites: path {item}, detail
// {loop index}).
std::function<bool(const Site&)> loop_site(const leir::Program& p, size_t item, const std::string& var) {
  int k = -1;
  const auto& loops = p.body[item].nest.loops;
  for (size_t i = 0; i < loops.size(); ++i)
    if (loops[i].var == var) k = int(i);
  return [in_nest = nest_site(item), k](const Site& s) { return in_nest(s) && !s.detail.empty() && s.detail[0] == k; };
}

// The loops a split left: `inner` ("" on failure; the loop itself when it already had the
// extent) and `outer` ("" when no split was made).
struct SplitLoops {
  std::string outer, inner;
};

// Splits loop `var` of nest `item` so that its inner loop has extent `inner` (the split loop's
// variables are fresh, except a bound loop's axis on the outer loop).
SplitLoops split_inner(ChainBuilder& b, size_t item, const std::string& var, int64_t inner) {
  const auto& before = b.program().body[item].nest.loops;
  size_t k = 0;
  while (k < before.size() && before[k].var != var) ++k;
  if (k == before.size() || before[k].extent % inner != 0) return {};
  if (before[k].extent == inner) return {"", var};
  if (!b.step("loop_split", loop_site(b.program(), item, var), Params{{"factor", before[k].extent / inner}})) return {};
  const auto& after = b.program().body[item].nest.loops;
  return {after[k].var, after[k + 1].var};
}

// Brings the loops of nest `item` into the order `target` (variables), one transposition per step.
bool reorder_to(ChainBuilder& b, size_t item, const std::vector<std::string>& target) {
  for (size_t pos = 0; pos < target.size(); ++pos) {
    const auto& loops = b.program().body[item].nest.loops;
    if (loops.size() != target.size()) return false;
    if (loops[pos].var == target[pos]) continue;
    size_t q = pos + 1;
    while (q < loops.size() && loops[q].var != target[pos]) ++q;
    if (q == loops.size()) return false;
    std::vector<int64_t> order(loops.size());
    for (size_t k = 0; k < order.size(); ++k) order[k] = int64_t(k);
    std::swap(order[pos], order[q]);
    if (!b.step("loop_reorder", nest_site(item), Params{{"order", order}})) return false;
  }
  return true;
}

// Parallelizes the outermost loop that may be of top-level nest `item` when none of its loops
// runs on more than one core (a bound loop of extent 1, a batch of one, counts as serial).
void parallelize_if_serial(ChainBuilder& b, size_t item) {
  if (!b.program().body[item].is_nest()) return;
  const auto& loops = b.program().body[item].nest.loops;
  bool parallel = std::any_of(loops.begin(), loops.end(), [](const leir::Loop& l) {
    return (l.kind == leir::LoopKind::Parallel || l.kind == leir::LoopKind::Bound) && l.extent > 1;
  });
  if (!parallel) b.step("loop_parallelization", nest_site(item));
}

// The loops of an accumulation nest that a register block is made of: `col` walks the output's
// last dimension with unit stride (and no other), `row` is the innermost other output loop that
// divides into `rows`, `reductions` the loops the output does not use (in nest order).
struct TileShape {
  std::string col, row;
  int64_t col_extent = 0;
  std::vector<std::string> reductions;
};

// rows == 0: only `col` and `reductions` are wanted (`row` stays empty).
std::optional<TileShape> tile_shape(const leir::Program& p, size_t item, int64_t rows) {
  if (!p.body[item].is_nest()) return std::nullopt;
  const leir::Nest& n = p.body[item].nest;
  if (n.body.size() != 1 || !n.body[0].is_stmt()) return std::nullopt;
  const leir::Stmt& s = n.body[0].stmt;
  if (!analysis::is_accumulation(s) || s.lhs->args.empty()) return std::nullopt;
  std::vector<analysis::Affine> subs;
  for (const auto& ix : s.lhs->args) {
    auto a = analysis::to_affine(ix);
    if (!a) return std::nullopt;
    subs.push_back(*a);
  }
  auto uses = [&](const std::string& v) {
    return std::any_of(subs.begin(), subs.end(), [&](const analysis::Affine& a) { return a.uses(v); });
  };
  TileShape t;
  for (const auto& l : n.loops) {
    bool only_last = subs.back().coeff_of(l.var) == 1;
    for (size_t d = 0; d + 1 < subs.size(); ++d) only_last &= !subs[d].uses(l.var);
    if (only_last && l.kind == leir::LoopKind::Serial) t.col = l.var, t.col_extent = l.extent;
    if (!uses(l.var)) t.reductions.push_back(l.var);
  }
  if (t.col.empty() || t.reductions.empty()) return std::nullopt;
  if (rows == 0) return t;  // no block rows wanted
  for (const auto& l : n.loops)
    if (uses(l.var) && l.var != t.col && l.kind != leir::LoopKind::Vectorized && l.extent % rows == 0) t.row = l.var;
  if (t.row.empty()) return std::nullopt;
  return t;
}

// The copy that layout_transformation made of a weight (dimensions swapped) at top-level item
// `copy`, in the source's loop order: its outer loop parallel, its inner loop (the source's unit
// stride) vectorized, then both tiled a vector wide (the copy's element type in `vector_bytes`),
// so each vector's scattered stores land in a tile of the copy that stays in L1. Untiled, each
// vector store scatters over rows a whole source row apart: on the panel's Gemm_ReLU_Divide
// weight (256 x 512 f32, 2 threads, AVX-512) 0.092 ms against 0.031 tiled, a third of the
// program's time (docs/tune.md, "Transposed weights"). Each of the three steps is faster than
// its parent. Taken only when all three fit in the chain, so a chain never ends halfway.
// `copy` is a plain copy (copy_producer).
void tile_transposed_copy(ChainBuilder& b, size_t copy, int vector_bytes) {
  constexpr int kSteps = 3;
  if (b.steps_left() < kSteps) return;
  const leir::Nest& n = b.program().body[copy].nest;
  if (n.loops.size() != 2) return;
  const leir::Stmt& s = n.body[0].stmt;
  if (s.lhs->args.empty() || s.rhs->args.empty()) return;
  const leir::ExprPtr &to_last = s.lhs->args.back(), &from_last = s.rhs->args.back();
  if (!to_last->is_var() || !from_last->is_var()) return;
  const int64_t lanes = vector_bytes / leir::byte_size(backend::cpu::cpu_storage_dtype(s.lhs->dtype, false));
  // Source order: the copy's unit-stride loop outside, the source's inside.
  if (n.loops[0].var != to_last->var_name() || n.loops[1].var != from_last->var_name()) return;
  for (const leir::Loop& l : n.loops)
    if (l.extent <= lanes || l.extent % lanes != 0 || l.kind != leir::LoopKind::Serial) return;
  const std::string outer = n.loops[0].var, inner = n.loops[1].var;
  if (!b.step("loop_parallelization", loop_site(b.program(), copy, outer))) return;
  if (!b.step("loop_vectorization", loop_site(b.program(), copy, inner))) return;
  b.step("loop_tiling", loop_site(b.program(), copy, outer), Params{{"tiles", std::vector<int64_t>{lanes, lanes}}});
}

// An input the statement of nest `item` reads with the columns in a dimension before its last
// (a weight W[out,in] read as W[c,d]: x @ W^T) would make every vector of the block a gather:
// give it the layout with those two dimensions swapped (layout_transformation: one copy nest
// before its first reader, so `item` moves down by one), the copy tiled (tile_transposed_copy).
// Returns whether it did.
bool transpose_strided_input(ChainBuilder& b, size_t& item, const std::string& col, int vector_bytes) {
  const leir::Program& p = b.program();
  std::optional<std::pair<int, std::vector<int64_t>>> step;  // known index, the two dimensions
  leir::for_each_expr(p.body[item].nest.body[0].stmt.rhs, [&](const leir::Expr& e) {
    if (step || !e.is_access() || e.args.size() < 2) return;
    for (int i = 0; i < int(p.known.size()); ++i) {
      if (p.known[i].name != e.tensor || !leir::is_read_only(p.known[i].role)) continue;
      const int last = int(e.args.size()) - 1;
      auto at_last = analysis::to_affine(e.args[last]);
      if (!at_last || at_last->uses(col)) return;
      for (int k = 0; k < last; ++k)
        if (auto a = analysis::to_affine(e.args[k]); a && a->coeff_of(col) == 1)
          step = std::make_pair(i, std::vector<int64_t>{k, last});
    }
  });
  if (!step) return false;
  const std::string weight = p.known[size_t(step->first)].name;
  auto at = [k = step->first](const Site& s) { return s.detail == std::vector<int>{k}; };
  if (!b.step("layout_transformation", at, Params{{"layout", std::string("transpose")}, {"dims", step->second}}))
    return false;
  ++item;
  // The copy: the last nest before `item` that copies the weight.
  for (size_t k = item; k-- > 0;)
    if (copy_producer(b.program(), k) == CopyProducer::Plain &&
        b.program().body[k].nest.body[0].stmt.rhs->tensor == weight) {
      tile_transposed_copy(b, k, vector_bytes);
      break;
    }
  return true;
}

// Register tiling of top-level nest `item` (see the header); false when the nest does not have
// the shape or a step is refused (the steps taken so far stay in the chain).
bool register_tile(ChainBuilder& b, size_t& item, const Machine& m, int64_t rows, int64_t vectors) {
  auto shape = tile_shape(b.program(), item, rows);
  if (!shape) return false;
  const bool transposed = transpose_strided_input(b, item, shape->col, m.vector_bytes);
  if (transposed && !(shape = tile_shape(b.program(), item, rows))) return false;
  const auto [col, row, col_extent, reductions] = *shape;
  // Lanes of the element type the CPU lowering stores (f16/bf16 as float).
  const leir::Stmt& s = b.program().body[item].nest.body[0].stmt;
  const leir::DType declared = leir::build_tensor_table(b.program()).at(s.lhs->tensor).dtype;
  const int64_t lanes = m.vector_bytes / leir::byte_size(backend::cpu::cpu_storage_dtype(declared, false));
  // Columns that do not split into whole blocks (a 62-wide convolution output) form the block
  // whole, masked tail included, when rows x its vectors stay within the accumulator budget.
  const bool whole = col_extent % (lanes * vectors) != 0 &&
                     rows * ((col_extent + lanes - 1) / lanes) <= schedule_params(m).accumulators;
  // The loop over column blocks (none when the block is the columns whole) and the block's columns.
  const SplitLoops cols = whole ? SplitLoops{"", col} : split_inner(b, item, col, lanes * vectors);
  const std::string &col_out = cols.outer, &col_in = cols.inner;
  if (col_in.empty()) return false;
  const std::string row_in = split_inner(b, item, row, rows).inner;
  if (row_in.empty()) return false;
  std::vector<std::string> target;
  for (const auto& l : b.program().body[item].nest.loops)
    if (l.var != col_in && l.var != row_in && std::find(reductions.begin(), reductions.end(), l.var) == reductions.end())
      target.push_back(l.var);
  // x @ W^T: every thread reads all of the transposed copy, which the copy's threads wrote by
  // columns. Parallel over the rows, half the copy moves between the cores on every call; over the
  // column blocks, each thread reads the columns it wrote. On the panel's Gemm_ReLU_Divide
  // (2 threads, AVX-512 EPYC VM) 0.182 against 0.198 ms while the two vCPUs share an L3, and
  // 0.247 against 0.288 ms while they do not (the host moves them; docs/tune.md, "The product
  // parallel over the copy's columns"). Only for an output of rows and column blocks alone.
  const bool by_columns = transposed && !col_out.empty() && target.size() == 2;
  if (by_columns) std::stable_partition(target.begin(), target.end(), [&](const std::string& v) { return v == col_out; });
  target.insert(target.end(), reductions.begin(), reductions.end());
  target.push_back(row_in);
  target.push_back(col_in);
  if (!reorder_to(b, item, target)) return false;
  if (by_columns && !b.step("loop_parallelization", loop_site(b.program(), item, col_out))) return false;
  if (rows > 1 && !b.step("loop_unrolling", loop_site(b.program(), item, row_in))) return false;
  if (!b.step("loop_vectorization", loop_site(b.program(), item, col_in))) return false;
  parallelize_if_serial(b, item);
  return true;
}

// Register tiling (above) of every heavy top-level accumulation; whether one was tiled. A light
// one (a softmax's row max and sum of exponentials beside a batched product) gains nothing
// measurable from a block, and its steps would spend the chain's budget before the annotations
// that pay there: on the panel's BMM_Scale_Softmax the blocked reductions used all 16 steps, and
// its softmax passes, a third of the program's work in exp calls, stayed scalar (0.43 ms against
// 0.21 with them vectorized, docs/tune.md "Light accumulations").
bool tile_heavy_accumulations(ChainBuilder& b, const Machine& m, int64_t rows, int64_t vectors) {
  bool tiled = false;
  for (size_t item = 0; item < b.program().body.size(); ++item)
    if (heavy_items(b.program())[item]) tiled |= register_tile(b, item, m, rows, vectors);
  return tiled;
}

// The accumulation of top-level nest `item` vectorized along the output's unit-stride loop with
// every reduction loop moved outside it (x @ W^T's W transposed first, as for a register block):
// each vector then accumulates contiguous outputs with no gather and no horizontal sum. This is
// the schedule for extents that do not divide into register blocks — bench draws such as a
// 1905 x 26 @ 26 x 2426 matmul (1905 and 2426 divide by neither 4 nor 16) — which the tiling
// chains leave to the search; the vector loop keeps its remainder.
bool vectorize_accumulation(ChainBuilder& b, size_t& item, const Machine& m) {
  auto shape = tile_shape(b.program(), item, 0);
  if (!shape) return false;
  if (transpose_strided_input(b, item, shape->col, m.vector_bytes) && !(shape = tile_shape(b.program(), item, 0)))
    return false;
  std::vector<std::string> target;
  for (const auto& l : b.program().body[item].nest.loops)
    if (l.var != shape->col &&
        std::find(shape->reductions.begin(), shape->reductions.end(), l.var) == shape->reductions.end())
      target.push_back(l.var);
  target.insert(target.end(), shape->reductions.begin(), shape->reductions.end());
  target.push_back(shape->col);
  if (!reorder_to(b, item, target)) return false;
  if (!b.step("loop_vectorization", loop_site(b.program(), item, shape->col))) return false;
  parallelize_if_serial(b, item);
  return true;
}

// The heavy top-level items not marked in `done`: each parallel when none of its loops is
// (a B loop already runs on every core, and a P loop inside it would only nest teams), then
// every innermost independent loop vectorized. Whether a step was taken.
bool annotate_heavy_rest(ChainBuilder& b, const std::vector<char>& done) {
  const size_t before = b.size();
  const auto heavy = heavy_items(b.program(), done);
  for (size_t item = 0; item < heavy.size(); ++item)
    if (heavy[item]) parallelize_if_serial(b, item);
  const auto at = heavy_site(b.program(), done);
  while (b.step("loop_vectorization", at)) {
  }
  return b.size() > before;
}

// Inlines every copy producer that compute_inline accepts; whether one was.
bool inline_copies(ChainBuilder& b) {
  bool any = false;
  for (size_t item = 0; item < b.program().body.size();) {
    // An inlined producer is dropped, so the next item takes its index.
    if (copy_producer(b.program(), item) != CopyProducer::None && b.step("compute_inline", nest_site(item))) any = true;
    else ++item;
  }
  return any;
}

}  // namespace

std::vector<RuleChain> schedule_rule_chains(const leir::Program& root, const Machine& m, int max_steps) {
  std::vector<RuleChain> out;
  auto keep = [&](ChainBuilder& b) {
    RuleChain c = b.take();
    if (!c.empty()) out.push_back(std::move(c));
  };
  const std::vector<std::vector<std::string_view>> annotations = {
      {"loop_parallelization"}, {"loop_vectorization"}, {"loop_parallelization", "loop_vectorization"}};
  for (const auto& names : annotations) {
    ChainBuilder b(root, max_steps);
    // Annotating loops adds or removes no top-level item, so the heavy items stay those of the root.
    const auto at = heavy_site(root);
    for (std::string_view name : names)
      while (b.step(name, at)) {
      }
    keep(b);
  }
  for (auto [rows, vectors] : schedule_params(m).block_shapes) {
    ChainBuilder b(root, max_steps);
    const bool tiled = tile_heavy_accumulations(b, m, rows, vectors);
    // The other nests of a program of a batch of one would stay on one core.
    const auto heavy = heavy_items(b.program());
    for (size_t item = 0; tiled && item < b.program().body.size(); ++item)
      if (heavy[item]) parallelize_if_serial(b, item);
    if (tiled) keep(b);
  }
  // Register tiles and annotations together (the block the measurements favour, docs/tune.md):
  // a program of several heavy nests (a GEMM and its epilogue, attention's two products and its
  // softmax) needs both, which the search would otherwise reach only step by step.
  {
    ChainBuilder b(root, max_steps);
    if (tile_heavy_accumulations(b, m, kBlockRows, 1)) {
      // The nests left without a register block (rows unrolled, columns vectorized innermost),
      // the heaviest of them first: what the tiling left to do.
      std::vector<char> blocked;
      for (const auto& item : b.program().body) {
        const auto& loops = item.nest.loops;
        const bool unrolled =
            std::any_of(loops.begin(), loops.end(), [](const leir::Loop& l) { return l.kind == leir::LoopKind::Unrolled; });
        blocked.push_back(item.is_nest() && unrolled && loops.back().kind == leir::LoopKind::Vectorized);
      }
      if (annotate_heavy_rest(b, blocked)) keep(b);  // else it is the 8 x 1 chain above
    }
  }
  // Accumulations vectorized along their unit-stride output loop (no register block), then the
  // other heavy nests annotated.
  {
    ChainBuilder b(root, max_steps);
    bool any = false;
    for (size_t item = 0; item < b.program().body.size(); ++item) any |= vectorize_accumulation(b, item, m);
    if (any) {
      std::vector<char> vectorized;
      for (const auto& item : b.program().body)
        vectorized.push_back(item.is_nest() && item.nest.loops.back().kind == leir::LoopKind::Vectorized);
      annotate_heavy_rest(b, vectorized);
      keep(b);
    }
  }
  // The copy producers (a convolution's padded input) inlined: the consumer reads the source
  // through the producer's condition and no copy is made; the CPU lowering splits its rows and
  // columns around that condition (lower/cpu/partition.h). Alone first (a depthwise convolution
  // keeps the root's loops, whose 3x3 window GCC unrolls and vectorizes along the row), then
  // before each register tiling. Last, so the chains above keep their order (and programs without
  // such a producer get no more chains). Not before the vectorized accumulations: for a max pool
  // (its -inf pad inlined, window loops outside the vectorized row) that ran 1.50-1.58 ms against
  // 1.10-1.21 with the copy kept, one thread (docs/tune.md, "Limits").
  {
    ChainBuilder b(root, max_steps);
    if (inline_copies(b)) keep(b);
  }
  for (auto [rows, vectors] : schedule_params(m).block_shapes) {
    ChainBuilder b(root, max_steps);
    if (!inline_copies(b)) break;
    if (tile_heavy_accumulations(b, m, rows, vectors)) keep(b);
  }
  return out;
}

}  // namespace steptp::tune
