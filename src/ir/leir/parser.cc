#include "ir/leir/parser.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <unordered_map>

#include "ir/leir/identifiers.h"

namespace steptp::leir {

namespace {

enum class Tok : uint8_t {
  Ident, Number, Caret, LBrace, RBrace, Under, LBracket, RBracket, LParen, RParen, Semi, Comma,
  Assign, Plus, Minus, Star, Slash, SlashSlash, Percent, StarStar, Lt, Le, Gt, Ge, EqEq, Ne, Amp,
  Pipe, End,
};

struct Token {
  Tok kind = Tok::End;
  std::string_view text;
  SourceLoc loc;
};

std::string describe(const Token& t) {
  if (t.kind == Tok::End) return "end of input";
  return fmt::format("'{}'", t.text);
}

class Lexer {
 public:
  Lexer(std::string_view src, const std::string& file, SourceLoc origin)
      : src_(src), file_(file), line_(origin.line), col_(origin.col) {}

  std::vector<Token> run() {
    std::vector<Token> out;
    for (;;) {
      skip_space();
      Token t;
      t.loc = {line_, col_};
      if (pos_ >= src_.size()) {
        t.kind = Tok::End;
        out.push_back(t);
        return out;
      }
      size_t start = pos_;
      char c = src_[pos_];
      if (std::isalpha(static_cast<unsigned char>(c))) {
        // '_' continues an identifier (if_then_else) unless it opens a subscript "_{".
        while (pos_ < src_.size()) {
          char d = src_[pos_];
          if (std::isalnum(static_cast<unsigned char>(d))) {
            advance();
          } else if (d == '_' && !(pos_ + 1 < src_.size() && src_[pos_ + 1] == '{')) {
            advance();
          } else {
            break;
          }
        }
        t.kind = Tok::Ident;
      } else if (std::isdigit(static_cast<unsigned char>(c)) ||
                 (c == '.' && pos_ + 1 < src_.size() && std::isdigit(static_cast<unsigned char>(src_[pos_ + 1])))) {
        lex_number();
        t.kind = Tok::Number;
      } else {
        t.kind = lex_punct(c);
      }
      t.text = src_.substr(start, pos_ - start);
      out.push_back(t);
    }
  }

 private:
  void advance() {
    if (src_[pos_] == '\n') {
      ++line_;
      col_ = 1;
    } else {
      ++col_;
    }
    ++pos_;
  }
  void skip_space() {
    while (pos_ < src_.size() && std::isspace(static_cast<unsigned char>(src_[pos_]))) advance();
  }
  bool peek_is(char c, size_t ahead = 0) const {
    return pos_ + ahead < src_.size() && src_[pos_ + ahead] == c;
  }
  void lex_number() {
    auto digits = [&] {
      while (pos_ < src_.size() && std::isdigit(static_cast<unsigned char>(src_[pos_]))) advance();
    };
    digits();
    if (peek_is('.')) {
      advance();
      digits();
    }
    if (peek_is('e') || peek_is('E')) {
      size_t save_pos = pos_;
      uint32_t save_col = col_;
      advance();
      if (peek_is('+') || peek_is('-')) advance();
      if (pos_ < src_.size() && std::isdigit(static_cast<unsigned char>(src_[pos_]))) {
        digits();
      } else {
        pos_ = save_pos;
        col_ = save_col;
      }
    }
  }
  Tok lex_punct(char c) {
    SourceLoc loc{line_, col_};
    advance();
    switch (c) {
      case '^': return Tok::Caret;
      case '{': return Tok::LBrace;
      case '}': return Tok::RBrace;
      case '_': return Tok::Under;
      case '[': return Tok::LBracket;
      case ']': return Tok::RBracket;
      case '(': return Tok::LParen;
      case ')': return Tok::RParen;
      case ';': return Tok::Semi;
      case ',': return Tok::Comma;
      case '+': return Tok::Plus;
      case '-': return Tok::Minus;
      case '%': return Tok::Percent;
      case '&': return Tok::Amp;
      case '|': return Tok::Pipe;
      case '*':
        if (peek_is('*')) { advance(); return Tok::StarStar; }
        return Tok::Star;
      case '/':
        if (peek_is('/')) { advance(); return Tok::SlashSlash; }
        return Tok::Slash;
      case '<':
        if (peek_is('=')) { advance(); return Tok::Le; }
        return Tok::Lt;
      case '>':
        if (peek_is('=')) { advance(); return Tok::Ge; }
        return Tok::Gt;
      case '=':
        if (peek_is('=')) { advance(); return Tok::EqEq; }
        return Tok::Assign;
      case '!':
        if (peek_is('=')) { advance(); return Tok::Ne; }
        break;
      default: break;
    }
    throw LeirError(file_, loc, fmt::format("unexpected character '{}'", c));
  }

  std::string_view src_;
  const std::string& file_;
  size_t pos_ = 0;
  uint32_t line_;
  uint32_t col_;
};

bool is_loop_kind_name(std::string_view s) {
  return s.size() == 1 && parse_loop_kind(s[0]).has_value();
}

// Limits that keep every recursive consumer of the AST (this parser, the printer, mutators,
// destructors) far from stack exhaustion on hostile input; real programs stay far below them
// (the deepest public program nests expressions ~30 levels).
constexpr int kMaxNesting = 200;        // parentheses, unary minus, '**', nests, calls, gathers
constexpr uint32_t kMaxExprDepth = 1000;  // depth of one expression tree (long '+' chains)

class Parser {
 public:
  Parser(std::vector<Token> toks, const std::string& file) : toks_(std::move(toks)), file_(file) {}

  std::vector<Item> body() {
    std::vector<Item> items;
    if (at(Tok::End)) fail("a loop header (e.g. 'L^{8}_{a=0}') or a statement");
    while (!at(Tok::End)) items.push_back(item());
    return items;
  }

  ExprPtr whole_expr() {
    ExprPtr e = expr();
    if (!at(Tok::End)) fail("end of expression");
    return e;
  }

 private:
  const Token& cur() const { return toks_[pos_]; }
  const Token& peek(size_t k) const { return toks_[std::min(pos_ + k, toks_.size() - 1)]; }
  bool at(Tok k) const { return cur().kind == k; }
  Token take() { return toks_[pos_ < toks_.size() - 1 ? pos_++ : pos_]; }
  // Counts active recursive constructs; throws past kMaxNesting.
  struct NestingGuard {
    Parser& p;
    explicit NestingGuard(Parser& parser) : p(parser) {
      if (++p.nesting_ > kMaxNesting)
        throw LeirError(p.file_, p.cur().loc,
                        fmt::format("nesting deeper than {} levels (parentheses, nests, calls or subscripts); "
                                    "split the expression or the nest",
                                    kMaxNesting));
    }
    ~NestingGuard() { --p.nesting_; }
  };

  // Records the depth of a freshly built node (1 + deepest child) and rejects over-deep trees.
  ExprPtr track(ExprPtr e) {
    uint32_t d = 0;
    for (const auto& a : e->args) {
      auto it = depth_.find(a.get());
      d = std::max(d, it == depth_.end() ? 1u : it->second);
    }
    if (++d > kMaxExprDepth)
      throw LeirError(file_, e->loc,
                      fmt::format("expression nests deeper than {} operators; split it into several statements",
                                  kMaxExprDepth));
    depth_[e.get()] = d;
    return e;
  }

  [[noreturn]] void fail(const std::string& expected) const {
    throw LeirError(file_, cur().loc, fmt::format("expected {}, found {}", expected, describe(cur())));
  }
  Token expect(Tok k, const char* what) {
    if (!at(k)) fail(what);
    return take();
  }

  // A loop header starts with L/P/V/U/B followed by "^{" and a digit.
  bool at_loop_header() const {
    return at(Tok::Ident) && is_loop_kind_name(cur().text) && peek(1).kind == Tok::Caret &&
           peek(2).kind == Tok::LBrace && peek(3).kind == Tok::Number;
  }

  Item item() {
    if (at_loop_header()) return Item::of(nest());
    if (!at(Tok::Ident)) fail("a loop header or a statement");
    Stmt s = stmt();
    expect(Tok::Semi, "';' after the statement");
    return Item::of(std::move(s));
  }

  int64_t integer(const char* what, bool allow_negative) {
    bool neg = false;
    if (allow_negative && at(Tok::Minus)) {
      take();
      neg = true;
    }
    if (!at(Tok::Number)) fail(what);
    Token t = cur();
    for (char c : t.text)
      if (!std::isdigit(static_cast<unsigned char>(c))) fail(what);
    take();
    errno = 0;
    long long v = std::strtoll(std::string(t.text).c_str(), nullptr, 10);
    if (errno == ERANGE) throw LeirError(file_, t.loc, fmt::format("integer {} is out of range", t.text));
    return neg ? -v : v;
  }

  Loop loop() {
    Loop l;
    Token k = take();
    l.kind = *parse_loop_kind(k.text[0]);
    l.loc = k.loc;
    expect(Tok::Caret, "'^'");
    expect(Tok::LBrace, "'{'");
    SourceLoc ext_loc = cur().loc;
    l.extent = integer("a loop extent (positive integer)", false);
    if (l.extent <= 0) throw LeirError(file_, ext_loc, "loop extent must be positive");
    expect(Tok::RBrace, "'}' after the loop extent");
    expect(Tok::Under, "'_' before the loop variable");
    expect(Tok::LBrace, "'{'");
    Token v = expect(Tok::Ident, "a loop variable (lower-case name)");
    require_loop_var(v.text, "loop variable", file_, v.loc);
    l.var = std::string(v.text);
    expect(Tok::Assign, "'=' after the loop variable");
    SourceLoc start_loc = cur().loc;
    l.start = integer("a loop start (integer)", true);
    if (int64_t end = 0; __builtin_add_overflow(l.start, l.extent, &end))
      throw LeirError(file_, start_loc, fmt::format("loop {} runs past the largest 64-bit integer", l.var));
    expect(Tok::RBrace, "'}' after the loop start");
    return l;
  }

  // loops "[" items "]" then ";" or a continuation nest that runs inside these loops.
  Nest nest() {
    NestingGuard guard(*this);
    Nest n;
    n.loc = cur().loc;
    while (at_loop_header()) n.loops.push_back(loop());
    expect(Tok::LBracket, "'[' or another loop header");
    if (at(Tok::RBracket)) fail("a statement or a nest inside '[...]'");
    while (!at(Tok::RBracket)) {
      if (at(Tok::End)) fail("']' closing the nest");
      n.body.push_back(item());
    }
    take();
    if (at(Tok::Semi)) {
      take();
    } else if (at_loop_header()) {
      n.body.push_back(Item::of(nest()));
    } else {
      fail("';' after ']'");
    }
    return n;
  }

  Stmt stmt() {
    Stmt s;
    s.loc = cur().loc;
    s.lhs = access();
    expect(Tok::Assign, "'=' after the written element");
    s.rhs = expr();
    return s;
  }

  ExprPtr access() {
    Token name = expect(Tok::Ident, "a tensor name");
    require_tensor_name(name.text, "tensor name", file_, name.loc);
    expect(Tok::Caret, "'^{dtype,scope}' after the tensor name");
    expect(Tok::LBrace, "'{' opening the dtype and scope");
    Token dt = expect(Tok::Ident, "a dtype (f16 bf16 f32 f64 i8 i16 i32 i64 u8 bool)");
    auto dtype = parse_dtype(dt.text);
    if (!dtype)
      throw LeirError(file_, dt.loc,
                      fmt::format("unknown dtype '{}' (expected f16 bf16 f32 f64 i8 i16 i32 i64 u8 bool)", dt.text));
    expect(Tok::Comma, "',' between dtype and scope");
    Token sc = expect(Tok::Ident, "a scope (g, s or l)");
    auto scope = sc.text.size() == 1 ? parse_scope(sc.text[0]) : std::nullopt;
    if (!scope) throw LeirError(file_, sc.loc, fmt::format("unknown scope '{}' (expected g, s or l)", sc.text));
    expect(Tok::RBrace, "'}' after the scope");
    std::vector<ExprPtr> idx;
    if (at(Tok::Under)) {
      take();
      expect(Tok::LBrace, "'{' opening the subscripts");
      idx.push_back(expr());
      while (at(Tok::Comma)) {
        take();
        idx.push_back(expr());
      }
      expect(Tok::RBrace, "',' or '}' closing the subscripts");
    }
    return track(make_access(std::string(name.text), *dtype, *scope, std::move(idx), name.loc));
  }

  ExprPtr expr() {
    NestingGuard guard(*this);
    return or_expr();
  }

  ExprPtr or_expr() {
    ExprPtr l = and_expr();
    while (at(Tok::Pipe)) {
      SourceLoc loc = take().loc;
      l = track(make_binary(BinaryOp::Or, l, and_expr(), loc));
    }
    return l;
  }

  ExprPtr and_expr() {
    ExprPtr l = cmp_expr();
    while (at(Tok::Amp)) {
      SourceLoc loc = take().loc;
      l = track(make_binary(BinaryOp::And, l, cmp_expr(), loc));
    }
    return l;
  }

  static std::optional<CompareOp> cmp_op(Tok k) {
    switch (k) {
      case Tok::Lt: return CompareOp::Lt;
      case Tok::Le: return CompareOp::Le;
      case Tok::Gt: return CompareOp::Gt;
      case Tok::Ge: return CompareOp::Ge;
      case Tok::EqEq: return CompareOp::Eq;
      case Tok::Ne: return CompareOp::Ne;
      default: return std::nullopt;
    }
  }

  ExprPtr cmp_expr() {
    SourceLoc loc = cur().loc;
    ExprPtr first = add_expr();
    if (!cmp_op(cur().kind)) return first;
    std::vector<ExprPtr> operands{first};
    std::vector<CompareOp> ops;
    while (auto op = cmp_op(cur().kind)) {
      take();
      ops.push_back(*op);
      operands.push_back(add_expr());
    }
    return track(make_compare(std::move(operands), std::move(ops), loc));
  }

  ExprPtr add_expr() {
    ExprPtr l = mul_expr();
    while (at(Tok::Plus) || at(Tok::Minus)) {
      Token t = take();
      l = track(make_binary(t.kind == Tok::Plus ? BinaryOp::Add : BinaryOp::Sub, l, mul_expr(), t.loc));
    }
    return l;
  }

  ExprPtr mul_expr() {
    ExprPtr l = unary_expr();
    for (;;) {
      BinaryOp op;
      if (at(Tok::Star)) op = BinaryOp::Mul;
      else if (at(Tok::Slash)) op = BinaryOp::Div;
      else if (at(Tok::SlashSlash)) op = BinaryOp::FloorDiv;
      else if (at(Tok::Percent)) op = BinaryOp::Mod;
      else return l;
      SourceLoc loc = take().loc;
      l = track(make_binary(op, l, unary_expr(), loc));
    }
  }

  ExprPtr unary_expr() {
    NestingGuard guard(*this);
    if (at(Tok::Minus)) {
      SourceLoc loc = take().loc;
      return track(make_neg(unary_expr(), loc));
    }
    if (at(Tok::Plus)) fail("an operand (unary '+' is not LEIR)");
    return pow_expr();
  }

  // Python: power := primary ["**" u_expr]; right associative, binds tighter than unary minus
  // on its left.
  ExprPtr pow_expr() {
    ExprPtr base = primary();
    if (!at(Tok::StarStar)) return base;
    SourceLoc loc = take().loc;
    return track(make_binary(BinaryOp::Pow, base, unary_expr(), loc));
  }

  ExprPtr primary() {
    const Token& t = cur();
    switch (t.kind) {
      case Tok::Number: {
        Token n = take();
        std::string text(n.text);
        double v = std::strtod(text.c_str(), nullptr);
        return track(make_number(v, text, n.loc));
      }
      case Tok::LParen: {
        take();
        auto e = std::make_shared<Expr>(*expr());
        expect(Tok::RParen, "')'");
        if (e->parens < 255) ++e->parens;
        return track(e);
      }
      case Tok::Ident: {
        if (std::isupper(static_cast<unsigned char>(t.text[0]))) return access();
        if (t.text == "inf") {
          Token n = take();
          return track(make_number(std::numeric_limits<double>::infinity(), "inf", n.loc));
        }
        if (peek(1).kind == Tok::LParen) return call();
        Token v = take();
        require_loop_var(v.text, "loop variable", file_, v.loc);
        return track(make_var(std::string(v.text), v.loc));
      }
      default:
        fail("an operand (number, loop variable, tensor access, call or '(')");
    }
  }

  ExprPtr call() {
    Token name = take();
    auto f = parse_func(name.text);
    if (!f)
      throw LeirError(file_, name.loc,
                      fmt::format("unknown function '{}' (expected one of exp log sqrt abs erf max min "
                                  "if_then_else tanh sigmoid pow floor ceil sin cos log1p rsqrt)",
                                  name.text));
    expect(Tok::LParen, "'('");
    std::vector<ExprPtr> args;
    if (!at(Tok::RParen)) {
      args.push_back(expr());
      while (at(Tok::Comma)) {
        take();
        args.push_back(expr());
      }
    }
    expect(Tok::RParen, "',' or ')' closing the call");
    if (static_cast<int>(args.size()) != arity(*f))
      throw LeirError(file_, name.loc,
                      fmt::format("{} takes {} argument{}, got {}", name.text, arity(*f),
                                  arity(*f) == 1 ? "" : "s", args.size()));
    return track(make_call(*f, std::move(args), name.loc));
  }

  std::vector<Token> toks_;
  size_t pos_ = 0;
  const std::string& file_;
  int nesting_ = 0;
  std::unordered_map<const Expr*, uint32_t> depth_;  // depth of every node built so far
};

}  // namespace

std::vector<Item> parse_body(std::string_view text, const std::string& file, SourceLoc origin) {
  Parser p(Lexer(text, file, origin).run(), file);
  return p.body();
}

ExprPtr parse_expr(std::string_view text, const std::string& file, SourceLoc origin) {
  Parser p(Lexer(text, file, origin).run(), file);
  return p.whole_expr();
}

}  // namespace steptp::leir
