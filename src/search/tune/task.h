// Tuning tasks (MetaSchedule's ExtractedTask): a program split into groups of top-level items that
// can be tuned alone, each a stand-alone program with the rest of the program unchanged.
//
// A group is a run of consecutive top-level items closed under "writes the same tensor" (a nest
// that zeroes an accumulator goes with the nest that accumulates into it), so every tensor a group
// writes is written only there; a zero-padded copy of an intermediate goes with the items that
// read it (a convolution and its padded input are one task, so inlining the pad is a step inside
// it). A group whose results only the next group reads joins it where operator_fusion or
// compute_inline can join the two (a fusion group: a producer and its elementwise consumer are one
// task, whose search can fuse them). The heavy groups (the heaviest by statement instances until
// they hold 90 % of the work, as the schedule rules pick heavy nests) and any group with at least
// 1 % of the work are the tasks; the light ones stay as written. A group becomes a program of its
// own: what it reads from outside is an input (its declared role kept for constants and params),
// what it writes that is declared or read outside is an output, the rest stays intermediate.
// Tensors are renamed in order of first appearance (A, C, D, ...) and loop variables in order of
// binding (a, c, d, ...; each write-closed group of a fusion group starts again at a, so its
// nests with the same loops keep the same headers), declarations in that order, so
// the task's text — and its hash, leir::program_hash of that text — depends on the group's
// structure, shapes and dtypes only, not on the names or the position it has in a program: the
// same nest twice in a program is one task with two uses, and the same nest in another program
// or run is the same task, whose measurements the store already holds (they are keyed by the
// runner's machine fingerprint and the task's text).
//
// Composition: a task's steps address sites by their path from the task's top-level body, so a
// step re-addressed to a use adds the use's first item to the path's first index and replays on
// the whole program (transform/trace.h). A step addressed to the whole task program (an input's
// layout, an intermediate's storage: its site counts tensors, which differ between task and
// program) becomes the program's site of the same strategy whose result holds, at the use, what
// the step made of the task (compared by the canonical hash). Uses are composed last first, so a
// step that adds or removes top-level items (fission, a cache nest) never moves a use still to
// compose.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/leir/ast.h"
#include "transform/trace.h"

namespace steptp::tune {

struct TaskUse {
  int first = 0, count = 0;  // top-level items [first, first + count) of the program
};

struct Task {
  leir::Program program;  // the group as a stand-alone program, canonically named
  uint64_t hash = 0;      // leir::program_hash(program)
  int64_t work = 0;       // statement instances of one use
  std::vector<TaskUse> uses;  // in program order

  std::string hash_hex() const;  // 16 hex digits
};

// The items [first, first + count) of `p` as a stand-alone program (canonical names, named
// "task_<hash>"); nullopt when they cannot stand alone (a tensor they exchange with the rest of
// the program is not in global scope, or the result does not validate).
std::optional<leir::Program> group_program(const leir::Program& p, int first, int count);

// The groups of `p` (every top-level item in exactly one), in program order.
std::vector<TaskUse> item_groups(const leir::Program& p);

// The groups of `p` joined into fusion groups: a group whose results only the next group reads
// joins it where operator_fusion or compute_inline has a legal site across the two (their own
// surveys), so one task holds a producer and its consumer and its search can fuse them.
std::vector<TaskUse> fusion_groups(const leir::Program& p);

// The tasks of `p`: its heavy fusion groups (and those with 1 % of the work) that stand alone, one task
// per distinct hash, in order of first use.
std::vector<Task> extract_tasks(const leir::Program& p);

struct Composition {
  leir::Program program;
  strategies::Trace trace;  // from the root to `program`: the composed steps, last use first
  std::vector<std::string> skipped;  // uses whose steps did not replay, with the reason
};

// Each task's candidates (`candidates[k]` for `tasks[k]`, best first; none: leave it as written)
// replayed onto each of its uses in `root`, last use first: a use takes the first candidate whose
// steps all replay there (a step the task program allows may have no site in the program: an
// input of the task is an intermediate there), and keeps its items when none does.
Composition compose(const leir::Program& root, const std::vector<Task>& tasks,
                    const std::vector<std::vector<strategies::Trace>>& candidates);

}  // namespace steptp::tune
