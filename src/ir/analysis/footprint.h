// Footprints: the box of elements that accesses of one tensor touch, and which elements earlier
// statements are sure to have written.
//
// A copy that stages a tensor (tensor split/concat) must read only elements the program defines.
// Copying a whole tensor is safe for inputs; an intermediate may be written only in part (a cache
// of a slice, a padded border), so the copy covers the read box instead, and only where earlier
// statements wrote every element of it (statements are unconditional: a write always happens).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/analysis/affine.h"
#include "ir/leir/ast.h"

namespace steptp::analysis {

using Box = std::vector<Interval>;  // per dimension, inclusive

struct Footprint {
  Box box;
  bool dense = false;  // every element of `box` is touched
};

// Ranges of the variables of `loops` (start .. start+extent-1).
std::map<std::string, Interval> loop_ranges(const std::vector<leir::Loop>& loops);
std::map<std::string, Interval> loop_ranges(const std::vector<const leir::Loop*>& loops);

// Footprint of `accesses` (all of one tensor, same rank) when each loop variable ranges over
// `ranges`. nullopt when a subscript is not affine or uses a variable without a range.
// Dense: every access is dense on its own (its dimensions use disjoint variables, each an affine
// form that hits every integer of its range) and the accesses' boxes agree in all dimensions but
// at most one, where they overlap or touch.
std::optional<Footprint> read_footprint(const std::vector<leir::ExprPtr>& accesses,
                                        const std::map<std::string, Interval>& ranges);

// Footprints of the writes of `tensor` by statements in top-level items [0, before).
std::vector<Footprint> write_footprints(const std::vector<leir::Item>& body, int before, const std::string& tensor);

// Whether the dense footprints among `writes` set every element of `box`: one of them contains
// it, or together they fill a box that does.
bool covered(const Box& box, const std::vector<Footprint>& writes);

Box intersect(const Box& a, const Box& b);
bool contains(const Box& outer, const Box& inner);

}  // namespace steptp::analysis
