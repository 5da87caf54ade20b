// Parser for LEIR bodies and expressions (LEIR.md §2). Accepts the public compact style,
// arbitrary whitespace/newlines, nested nests and the continuation form `H1[s1;]H2[s2;];`.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ir/leir/ast.h"
#include "ir/leir/diagnostic.h"

namespace steptp::leir {

// Throws LeirError naming `file`, the line and column, and what was expected. `origin` is the
// source position of text[0] (so a body embedded in a larger file reports true positions).
std::vector<Item> parse_body(std::string_view text, const std::string& file = {},
                             SourceLoc origin = {1, 1});
ExprPtr parse_expr(std::string_view text, const std::string& file = {}, SourceLoc origin = {1, 1});

}  // namespace steptp::leir
