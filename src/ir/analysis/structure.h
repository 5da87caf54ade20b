// Loop-nest structure of a program: where every nest and statement is (as a path of body
// indices), which loops enclose it, and what each statement / top-level item reads and writes.
//
// Paths: {i} is top-level item i; {i, j} is item j of the body of nest {i}; and so on. All
// pointers point into the Program passed in and stay valid while it lives unchanged.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "ir/leir/ast.h"

namespace steptp::analysis {

using Path = std::vector<int>;

struct NestRef {
  Path path;
  const leir::Nest* nest = nullptr;
  std::vector<const leir::Loop*> outer;  // loops of enclosing nests, outermost first
};

struct StmtRef {
  Path path;
  const leir::Stmt* stmt = nullptr;
  std::vector<const leir::Loop*> loops;  // every enclosing loop, outermost first
};

// Every nest (pre-order: a nest before the nests inside it) / every statement in program order.
std::vector<NestRef> all_nests(const std::vector<leir::Item>& body);
std::vector<StmtRef> all_stmts(const std::vector<leir::Item>& body);
// Statements inside one nest (paths relative to the program, loops include `outer`).
std::vector<StmtRef> stmts_in(const NestRef& n);

// Every tensor access read by a statement: the accesses of rhs and the accesses nested in the
// subscripts of either side (gathers). The lhs element itself is not a read; an accumulation's
// self term is (it is an access of rhs).
std::vector<leir::ExprPtr> reads_of(const leir::Stmt& s);

struct ReadWrite {
  std::set<std::string> reads, writes;
};
ReadWrite read_write(const leir::Stmt& s);
ReadWrite read_write(const leir::Item& item);

// Use-def over the top-level items.
struct UseDef {
  std::vector<ReadWrite> items;  // per top-level item
  bool read_after(int item, const std::string& tensor) const;   // some later item reads it
  bool written_before(int item, const std::string& tensor) const;
  bool read_before(int item, const std::string& tensor) const;
  std::vector<int> readers(const std::string& tensor) const;
  std::vector<int> writers(const std::string& tensor) const;
};
UseDef use_def(const leir::Program& p);

// Every tensor name occurring in the program (known and body), and every loop variable.
std::set<std::string> tensor_names(const leir::Program& p);
std::set<std::string> loop_vars(const std::vector<leir::Item>& body);

// Path access and replacement (pure: returns a new body).
const leir::Item& item_at(const std::vector<leir::Item>& body, const Path& path);
std::vector<leir::Item> replace_item(const std::vector<leir::Item>& body, const Path& path,
                                     std::vector<leir::Item> replacement);  // 0..n items

}  // namespace steptp::analysis
