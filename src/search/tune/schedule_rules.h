// Schedule rules: the programs a compiler would try first, as chains of ordinary, replayable
// steps (MetaSchedule's schedule rules, but spelled in the 43 strategies so that every step of a
// chain is a dataset step like any other). The tuner measures the chains' end programs first.
//  * parallel: loop_parallelization at its first site, again and again (every outermost
//    independent loop parallel);
//  * vector: loop_vectorization alike (every innermost independent loop vectorized);
//  * parallel + vector;
//  * register tiling (MetaSchedule's multi-level tiling for CPUs), per top-level nest that is one
//    accumulation over spatial and reduction loops: give an input read with the output column in
//    an earlier dimension (x @ W^T) the transposed layout (layout_transformation), split the
//    unit-stride output loop into blocks of `cols` (whole vectors; a loop that does not divide
//    is the block's columns whole when rows x its vectors fit the accumulator budget) and the
//    innermost other output loop that divides into blocks of `rows`, move every reduction loop between the
//    block loops and the blocks (transpositions, one step each), unroll the rows, vectorize the
//    columns; and parallelize an outer loop of every nest of the program whose loops all run on
//    one core (a batch of one). A product of a transposed copy (parallel over its columns) is
//    made parallel over its column blocks instead of its rows, so each thread reads the part of
//    the copy it wrote. The CPU lowering keeps such a rows x cols block of the output in
//    registers over the reduction
//    (lower/cpu/codegen.cc, register_block): a GEMM then runs at the speed of a hand-written
//    micro-kernel. The block shapes, vector width and accumulator budget come from the machine
//    (search/tune/machine.h schedule_params): with AVX-512's 32 registers 8 rows x 2 vectors, 8 x 1 (on
//    the 2-core AVX-512 VM of docs/tune.md 4-6% faster than 8 x 2 on a 512^3 GEMM, interleaved;
//    MetaSchedule's best there has it too) and 4 x 1; with AVX2's 16, 8 x 1 and 4 x 1;
//  * register tiling (8 x 1) then parallel + vector over the heavy nests the tiling left alone
//    (a GEMM's epilogue, attention's softmax);
//  * every accumulation vectorized along its output's unit-stride loop with its reduction loops
//    moved outside that loop (no register block: the schedule for extents that divide into no
//    block, as bench draws often do), then parallel + vector over the other heavy nests.
//  * last, when the program has copy producers (a nest of one statement that copies an element,
//    possibly under a condition with a literal otherwise: a convolution's zero-padded input):
//    the copies inlined into their consumers (compute_inline; MetaSchedule's AutoInline of a
//    pad) alone, then before each register tiling.
// "parallel" over a nest whose loops already run on every core (a B loop) adds nothing: the
// chains that follow a tiling parallelize only nests with no parallel loop.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/leir/ast.h"
#include "search/tune/machine.h"
#include "transform/trace.h"

namespace steptp::tune {

struct RuleStep {
  strategies::TraceStep step;
  leir::Program program;  // after the step
};
using RuleChain = std::vector<RuleStep>;

// Which of the items (by their work, e.g. statement instances) are heavy: the heaviest until they
// hold 90 % of the total. The rules annotate only heavy nests; the task extraction
// (search/tune/task.h) tunes only heavy groups.
std::vector<char> heaviest(const std::vector<int64_t>& work);

// Whether top-level item `item` of `p` is a nest of one statement that copies an element (Plain),
// or copies it under a condition with a literal otherwise (Padded: a zero-padded copy
// E = if_then_else(inside, A[c-1], 0), or a max pool's -inf-padded one). Inlined into its
// consumers (MetaSchedule's AutoInline of a pad) such a copy costs a comparison per read and
// saves its own pass over memory and its intermediate.
enum class CopyProducer { None, Plain, Padded };
CopyProducer copy_producer(const leir::Program& p, size_t item);

// The chains from `root` (each at most `max_steps` long; empty chains are left out).
std::vector<RuleChain> schedule_rule_chains(const leir::Program& root, const Machine& m, int max_steps);

}  // namespace steptp::tune
