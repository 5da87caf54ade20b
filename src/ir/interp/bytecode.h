// The compiled form the interpreter runs (internal to src/ir/interp).
//
// Each statement is a short register-machine program over `double` registers; tensors are slots
// with flat row-major storage and precomputed strides; loop variables live in an int64 register
// array indexed by the loop's depth in its nest chain. An access whose subscripts are all affine
// becomes `base + Σ coef·var` over the flat storage; when interval analysis over the loop bounds
// proves every subscript in range the bounds checks are dropped. Nothing in the hot loop looks up
// a name or makes a virtual call; dispatch is direct-threaded (computed goto).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/interp/affine.h"
#include "ir/leir/ast.h"
#include "ir/leir/tensors.h"

namespace steptp::interp {

enum class Op : uint8_t {
  Target,     // compute the offset of the written element (access a) for LoadSelf and the store
  Const,      // r[dst] = imm
  Var,        // r[dst] = vars[a]
  LoadFast,   // r[dst] = element at the running offset of fast access a in slot b (read-only tensor)
  LoadFastRW, // same for a tensor that may be unset: checks the set flag (and races)
  Load,       // r[dst] = element of checked access a (subscripts evaluated and bounds-checked)
  LoadSelf,   // r[dst] = the element being written if set, else imm (the accumulation identity)
  Neg,        // r[dst] = -r[a]
  Add, Sub, Mul, Div, FloorDiv, Mod, Pow,  // r[dst] = r[a] op r[b]
  And, Or,                                 // logical, 1/0
  Lt, Le, Gt, Ge, Eq, Ne,                  // 1/0
  Max, Min,                                // NaN-propagating
  Exp, Log, Sqrt, Abs, Erf, Tanh, Sigmoid, Floor, Ceil, Sin, Cos, Log1p, Rsqrt,  // r[dst] = f(r[a])
  JumpIfZero, // if r[a] == 0: pc = b
  Jump,       // pc = b
  End,        // end of the statement's code: store the result
  kCount
};

struct Instr {
  Op op = Op::Const;
  int32_t dst = 0;
  int32_t a = 0;
  int32_t b = 0;
  double imm = 0.0;
};

// One subscript of a checked access: affine (lin) or computed into a register by earlier code.
struct DimCode {
  bool affine = true;
  Linear lin;
  int reg = -1;           // when !affine
  bool needs_check = true;
};

constexpr int kMaxFastTerms = 8;

struct AccessCode {
  int slot = 0;
  const leir::Expr* expr = nullptr;  // for diagnostics
  // Fast path: offset = base + Σ coef[k]·vars[var[k]], no bounds check needed. The executor keeps
  // it as a running offset updated by the enclosing loops (LoopCode::steps).
  bool fast = false;
  int nterms = 0;
  int64_t base = 0;
  int32_t term_var[kMaxFastTerms] = {};
  int64_t term_coef[kMaxFastTerms] = {};
  // Checked path: per-dimension subscripts.
  std::vector<DimCode> dims;
  bool may_be_unset = true;  // false for read-only tensors (set from the start)
  // Whether dynamic race detection must watch this access: false when, for every enclosing
  // independent loop, the compiler proved that different iterations touch disjoint elements of
  // the tensor (see Compiler::prove_disjoint), so the common case pays nothing for detection.
  bool race_checked = false;
  // Written access of a uniform store (ir/leir/uniform_store.h): bit j set when the statement is
  // uniform with respect to the j-th enclosing independent loop, whose iterations may then all
  // write the element (the same value) without a race.
  uint64_t uniform_in = 0;
};

struct StmtCode {
  int lhs = 0;  // access index of the written element
  int slot = 0;  // its tensor slot
  bool lhs_fast = false;
  bool convert = false;  // the tensor's dtype is not f64: round on store
  int first_instr = 0;
  int end_instr = 0;
  int result_reg = 0;
  bool accumulation = false;
  const leir::Stmt* stmt = nullptr;
};

struct TensorSlot {
  std::string name;
  leir::DType dtype = leir::DType::F64;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  int64_t numel = 1;
  bool known = false;
  bool read_only = false;
  bool is_output = false;
  const leir::TensorDecl* decl = nullptr;
};

// Strength reduction: the running offset of fast access `access` moves by `coef` per iteration.
struct OffsetStep {
  int32_t access = 0;
  int64_t coef = 0;
};

struct LoopCode {
  int var = 0;  // register
  std::vector<OffsetStep> steps;  // fast accesses inside this loop whose offset depends on var
  int64_t start = 0;
  int64_t extent = 0;
  bool independent = false;  // P, V or B: race-checked
  const leir::Loop* loop = nullptr;
};

struct BlockItem {
  bool is_stmt = true;
  int index = 0;  // into stmts or nests
};

struct NestCode {
  std::vector<LoopCode> loops;
  std::vector<BlockItem> body;
};

struct CompiledProgram {  // NOLINT: declared in interpreter.h
  const leir::Program* program = nullptr;  // owned copy lives in `owned`
  leir::Program owned;
  leir::TensorTable table;
  std::vector<TensorSlot> slots;
  std::vector<Instr> code;
  std::vector<AccessCode> accesses;
  std::vector<StmtCode> stmts;
  std::vector<NestCode> nests;
  std::vector<BlockItem> top;
  int num_regs = 1;
  int num_vars = 0;           // deepest loop chain
  int max_independent_depth = 0;
  std::atomic<uint64_t> last_statement_count{0};
};

// Compiles `p` (copied into the result); throws leir::LeirError on an invalid program.
std::unique_ptr<CompiledProgram> compile_program(const leir::Program& p);

}  // namespace steptp::interp
