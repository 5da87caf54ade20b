// Canonical printer: the public translator's compact style, byte for byte (LEIR.md §1-2).
#pragma once

#include <string>
#include <vector>

#include "ir/leir/ast.h"

namespace steptp::leir {

std::string print_body(const std::vector<Item>& body);
// One nest per line, nested nests indented; parses back to the same program.
std::string print_body_pretty(const std::vector<Item>& body);
std::string print_expr(const ExprPtr& e);
std::string print_stmt(const Stmt& s);    // "X^{f64,g}_{i}=...;"
std::string print_loop(const Loop& l);    // "L^{16}_{a=0}"
std::string print_nest_header(const Nest& n);
// Python-repr style spelling of a synthesized number ("0.5", "1e-05", "2.0"; integers as "2").
std::string format_number(double v, bool integer);

}  // namespace steptp::leir
