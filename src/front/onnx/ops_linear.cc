// Contractions: MatMul (numpy batching, 1-D operands), Gemm, Einsum; and Trilu (triangular
// masks of matrices). Each is one accumulation
// nest, output loops outside and contracted loops inside, as the public matmul:
// B^{M}_{tx=0}L^{N}_{a=0}L^{K}_{c=0}[D=D+A*C;].
#include <fmt/format.h>

#include "front/onnx/importer.h"

namespace steptp::onnx_import {
namespace {

void matmul(Importer& im, const Node& n) {
  ValuePtr a = im.input(n, 0), b = im.input(n, 1);
  if (a->shape.empty() || b->shape.empty()) n.fail("MatMul operands must have rank >= 1");
  Shape as = a->shape, bs = b->shape;
  bool a_vec = as.size() == 1, b_vec = bs.size() == 1;
  if (a_vec) as.insert(as.begin(), 1);
  if (b_vec) bs.push_back(1);
  int64_t m = as[as.size() - 2], k = as.back(), k2 = bs[bs.size() - 2], nn = bs.back();
  if (k != k2) n.fail(fmt::format("shape mismatch: inner dimensions {} and {} differ", k, k2));
  Shape batch = broadcast(n, {Shape(as.begin(), as.end() - 2), Shape(bs.begin(), bs.end() - 2)});
  Shape out = batch;
  if (!a_vec) out.push_back(m);
  if (!b_vec) out.push_back(nn);
  ValuePtr y = im.result(n, 0, a->dtype, out);
  // Loops: batch..., [m], [n], k.
  size_t r = out.size();
  Index o = vars(r);
  leir::ExprPtr kv = var(r), mv = a_vec ? nullptr : o[batch.size()], nv = b_vec ? nullptr : o[r - 1];
  auto operand = [&](const ValuePtr& v, bool vec, leir::ExprPtr row, leir::ExprPtr col, size_t vec_dim) {
    Index idx;
    size_t vb = v->shape.size() - (vec ? 1 : 2);
    for (size_t d = 0; d < vb; ++d)
      idx.push_back(v->shape[d] == 1 ? iconst(0) : o[batch.size() - vb + d]);
    if (vec) idx.push_back(vec_dim == 0 ? col : row);
    else {
      idx.push_back(row);
      idx.push_back(col);
    }
    return im.at(v, idx);
  };
  Shape loops = out;
  loops.push_back(k);
  std::string acc = im.at(y, o);
  im.nest(loops, fmt::format("{0}={0}+{1}*{2}", acc, operand(a, a_vec, mv, kv, 0), operand(b, b_vec, kv, nv, 1)));
}

void gemm(Importer& im, const Node& n) {
  ValuePtr a = im.input(n, 0), b = im.input(n, 1);
  if (a->shape.size() != 2 || b->shape.size() != 2) n.fail("Gemm operands must be matrices");
  bool ta = n.i("transA", 0), tb = n.i("transB", 0);
  double alpha = n.f("alpha", 1.0), beta = n.f("beta", 1.0);
  int64_t m = ta ? a->shape[1] : a->shape[0], k = ta ? a->shape[0] : a->shape[1];
  int64_t k2 = tb ? b->shape[1] : b->shape[0], nn = tb ? b->shape[0] : b->shape[1];
  if (k != k2) n.fail(fmt::format("shape mismatch: inner dimensions {} and {} differ", k, k2));
  ValuePtr y = im.result(n, 0, a->dtype, {m, nn});
  auto i = var(0), j = var(1), kk = var(2);
  std::string prod = im.at(a, ta ? Index{kk, i} : Index{i, kk}) + "*" + im.at(b, tb ? Index{j, kk} : Index{kk, j});
  std::string acc = im.at(y, {i, j});
  im.nest({m, nn, k}, fmt::format("{0}={0}+{1}", acc, alpha == 1.0 ? prod : lit(alpha) + "*" + prod));
  if (n.has_input(2)) {
    ValuePtr c = im.input(n, 2);
    broadcast(n, {{m, nn}, c->shape});
    std::string bias = im.at_broadcast(c, 2);
    im.nest({m, nn}, fmt::format("{0}={0}+{1}", acc, beta == 1.0 ? bias : lit(beta) + "*" + bias));
  }
}

void einsum(Importer& im, const Node& n) {
  std::string eq = n.s("equation", "");
  eq.erase(std::remove(eq.begin(), eq.end(), ' '), eq.end());
  if (eq.find("...") != std::string::npos) n.unsupported("equation", "'" + eq + "' (ellipsis)");
  size_t arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow), rhs;
  std::vector<std::string> terms;
  for (size_t p = 0;;) {
    size_t c = lhs.find(',', p);
    terms.push_back(lhs.substr(p, c == std::string::npos ? std::string::npos : c - p));
    if (c == std::string::npos) break;
    p = c + 1;
  }
  if (static_cast<int>(terms.size()) != n.proto().input_size())
    n.fail(fmt::format("equation '{}' names {} operands, the node has {}", eq, terms.size(), n.proto().input_size()));
  std::map<char, int64_t> extent;
  std::map<char, int> count;
  for (size_t t = 0; t < terms.size(); ++t) {
    ValuePtr v = im.input(n, static_cast<int>(t));
    if (terms[t].size() != v->shape.size())
      n.fail(fmt::format("shape mismatch: operand {} has rank {}, the equation '{}' gives it {}", t, v->shape.size(), eq,
                         terms[t].size()));
    for (size_t d = 0; d < terms[t].size(); ++d) {
      char c = terms[t][d];
      if (!std::isalpha(static_cast<unsigned char>(c))) n.unsupported("equation", "'" + eq + "'");
      ++count[c];
      auto [it, fresh] = extent.emplace(c, v->shape[d]);
      if (!fresh && it->second != v->shape[d]) {
        if (it->second == 1) it->second = v->shape[d];
        else if (v->shape[d] != 1)
          n.fail(fmt::format("shape mismatch: label '{}' has sizes {} and {}", c, it->second, v->shape[d]));
      }
    }
  }
  if (arrow != std::string::npos) rhs = eq.substr(arrow + 2);
  else
    for (auto [c, k] : count)
      if (k == 1) rhs += c;  // implicit output: labels used once, alphabetical
  Shape out, loops;
  std::map<char, leir::ExprPtr> loop_var;
  for (char c : rhs) {
    if (!extent.count(c)) n.fail(fmt::format("output label '{}' of '{}' appears in no operand", c, eq));
    loop_var[c] = var(out.size());
    out.push_back(extent[c]);
  }
  loops = out;
  for (auto [c, e] : extent)
    if (!loop_var.count(c)) {
      loop_var[c] = var(loops.size());
      loops.push_back(e);
    }
  ValuePtr y = im.result(n, 0, im.input(n, 0)->dtype, out);
  std::string prod;
  for (size_t t = 0; t < terms.size(); ++t) {
    ValuePtr v = im.input(n, static_cast<int>(t));
    Index idx;
    for (size_t d = 0; d < terms[t].size(); ++d) idx.push_back(v->shape[d] == 1 ? iconst(0) : loop_var[terms[t][d]]);
    prod += (t ? "*" : "") + im.at(v, idx);
  }
  std::string acc = im.at(y, vars(out.size()));
  im.nest(loops, fmt::format("{0}={0}+{1}", acc, prod));
}

// Trilu: keeps x[..., i, j] where j - i >= k (upper) or j - i <= k (lower), zero elsewhere.
void trilu(Importer& im, const Node& n) {
  ValuePtr x = im.input(n, 0);
  size_t r = x->shape.size();
  if (r < 2) n.fail("input rank must be at least 2");
  int64_t k = n.has_input(1) ? im.ints(n, 1).at(0) : 0;
  bool upper = n.i("upper", 1);
  ValuePtr y = im.result(n, 0, x->dtype, x->shape);
  Index o = vars(r);
  auto diff = isub(o[r - 1], o[r - 2]);
  im.fill(y, fmt::format("if_then_else({}{}{},{},0.0)", text(diff), upper ? ">=" : "<=", k, im.at(x, o)));
}

}  // namespace

void add_linear_ops(OpTable& t) {
  t["Trilu"] = trilu;
  t["MatMul"] = matmul;
  t["Gemm"] = gemm;
  t["Einsum"] = einsum;
}

}  // namespace steptp::onnx_import
