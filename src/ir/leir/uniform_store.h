// Uniform stores (LEIR.md §3): a statement inside an independent (P/V/B) loop whose subscripts
// and value do not depend on the loop's variable and that reads nothing written inside the loop
// stores the same value from every iteration. It is valid and means one store; the validator, the
// interpreter's race checks and every target use this one definition.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "ir/leir/ast.h"

namespace steptp::leir {

// Tensors written by any statement of `body`, at any depth.
std::set<std::string> tensors_written(const std::vector<Item>& body);

// Whether `s`, inside a loop over `var` whose body writes the tensors `written_inside`
// (tensors_written of that body), is a uniform store with respect to that loop. Accumulations
// never are (they read the element they write).
bool is_uniform_store(const Stmt& s, const std::string& var, const std::set<std::string>& written_inside);

}  // namespace steptp::leir
