// Element-wise ops with numpy broadcasting: activations, arithmetic, comparisons and logic,
// Where, Clip, Cast. Each is one nest over the output: `$y[tx,a]=f($x[tx,0],...)`.
#include <fmt/args.h>
#include <fmt/format.h>

#include "front/onnx/importer.h"

namespace steptp::onnx_import {
namespace {

// y = formula over the inputs ({0}, {1}, ... are the broadcast reads), in dtype `dt`
// (default: the first input's).
void elementwise(Importer& im, const Node& n, const std::string& formula, std::optional<leir::DType> dt = {},
                 int first = 0, int count = -1) {
  std::vector<ValuePtr> ins;
  std::vector<Shape> shapes;
  int end = count < 0 ? n.proto().input_size() : first + count;
  for (int k = first; k < end; ++k) {
    ins.push_back(im.input(n, k));
    shapes.push_back(ins.back()->shape);
  }
  Shape shape = broadcast(n, shapes);
  ValuePtr y = im.result(n, 0, dt.value_or(ins[0]->dtype), shape);
  fmt::dynamic_format_arg_store<fmt::format_context> args;
  for (const auto& v : ins) args.push_back(im.at_broadcast(v, shape.size()));
  im.fill(y, fmt::vformat(formula, args));
}

Lowering unary(std::string formula) {
  return [formula](Importer& im, const Node& n) { elementwise(im, n, formula); };
}

// Unary ops whose formula takes float attributes: {a} alpha, {b} beta / gamma ...
Lowering with_alpha(std::string formula, std::string attr, double fallback) {
  return [=](Importer& im, const Node& n) {
    std::string f = formula;
    for (size_t p; (p = f.find("{a}")) != std::string::npos;) f.replace(p, 3, lit(n.f(attr, fallback)));
    elementwise(im, n, f);
  };
}

Lowering binary(std::string formula, std::optional<leir::DType> dt = {}) {
  return [=](Importer& im, const Node& n) {
    if (n.proto().input_size() != 2) n.fail("expects two inputs");
    elementwise(im, n, formula, dt);
  };
}

// Variadic Max/Min/Sum/Mean: fold the inputs pairwise.
Lowering variadic(std::string op, bool mean = false) {
  return [=](Importer& im, const Node& n) {
    int count = n.proto().input_size();
    if (count < 1) n.fail("expects at least one input");
    std::string f = "{0}";
    for (int k = 1; k < count; ++k) f = op == "+" ? f + "+{" + std::to_string(k) + "}" : fmt::format("{}({},{{{}}})", op, f, k);
    if (mean) f = fmt::format("({})/{}", f, count);
    elementwise(im, n, f);
  };
}

}  // namespace

void add_elementwise_ops(OpTable& t) {
  using leir::DType;
  t["Relu"] = unary("max({0},0.0)");
  t["Sigmoid"] = unary("sigmoid({0})");
  t["Tanh"] = unary("tanh({0})");
  t["Exp"] = unary("exp({0})");
  t["Log"] = unary("log({0})");
  t["Sqrt"] = unary("sqrt({0})");
  t["Abs"] = unary("abs({0})");
  t["Neg"] = unary("-{0}");
  t["Reciprocal"] = unary("1.0/{0}");
  t["Erf"] = unary("erf({0})");
  t["Floor"] = unary("floor({0})");
  t["Ceil"] = unary("ceil({0})");
  t["Sin"] = unary("sin({0})");
  t["Cos"] = unary("cos({0})");
  t["Softplus"] = unary("log1p(exp({0}))");
  t["Softsign"] = unary("{0}/(1.0+abs({0}))");
  t["Sign"] = unary("({0}>0)-({0}<0)");
  t["Mish"] = unary("{0}*tanh(log1p(exp({0})))");
  t["Identity"] = [](Importer& im, const Node& n) {
    ValuePtr x = im.input(n, 0);
    im.view(n, 0, x, x->shape, [](const Index& i) { return i; });
  };
  // Round half to even: floor(x+0.5), one less where that rounded a tie up to an odd number.
  t["Round"] = unary("if_then_else(({0}+0.5==floor({0}+0.5))&(floor({0}+0.5)%2==1),floor({0}+0.5)-1,floor({0}+0.5))");
  t["Elu"] = with_alpha("if_then_else({0}<0,{a}*(exp({0})-1.0),{0})", "alpha", 1.0);
  t["Celu"] = with_alpha("max({0},0.0)+min(0.0,{a}*(exp({0}/{a})-1.0))", "alpha", 1.0);
  t["LeakyRelu"] = with_alpha("if_then_else({0}<0,{a}*{0},{0})", "alpha", 0.01);
  t["ThresholdedRelu"] = with_alpha("if_then_else({0}>{a},{0},0.0)", "alpha", 1.0);
  t["Selu"] = [](Importer& im, const Node& n) {
    double a = n.f("alpha", 1.67326319217681884765625), g = n.f("gamma", 1.05070102214813232421875);
    elementwise(im, n, fmt::format("{1}*if_then_else({{0}}<0,{0}*(exp({{0}})-1.0),{{0}})", lit(a), lit(g)));
  };
  t["HardSigmoid"] = [](Importer& im, const Node& n) {
    double a = n.f("alpha", 0.2), b = n.f("beta", 0.5);
    elementwise(im, n, fmt::format("max(0.0,min(1.0,{}*{{0}}+{}))", lit(a), lit(b)));
  };
  t["HardSwish"] = unary("{0}*max(0.0,min(1.0,{0}/6.0+0.5))");
  t["PRelu"] = binary("if_then_else({0}<0,{1}*{0},{0})");
  t["Add"] = binary("{0}+{1}");
  t["Sub"] = binary("{0}-{1}");
  t["Mul"] = binary("{0}*{1}");
  t["Div"] = binary("{0}/{1}");
  t["Pow"] = [](Importer& im, const Node& n) {
    if (n.proto().input_size() != 2) n.fail("expects two inputs");
    elementwise(im, n, "{0}**{1}", im.input(n, 0)->dtype);
  };
  t["Mod"] = [](Importer& im, const Node& n) {
    // fmod=1: C fmod (sign of the dividend), else the sign of the divisor (LEIR's %).
    if (n.i("fmod", 0)) elementwise(im, n, "{0}-{1}*if_then_else({0}/{1}<0,ceil({0}/{1}),floor({0}/{1}))");
    else elementwise(im, n, "{0}%{1}");
  };
  t["Max"] = variadic("max");
  t["Min"] = variadic("min");
  t["Sum"] = variadic("+");
  t["Mean"] = variadic("+", true);
  t["Equal"] = binary("{0}=={1}", DType::Bool);
  t["Less"] = binary("{0}<{1}", DType::Bool);
  t["LessOrEqual"] = binary("{0}<={1}", DType::Bool);
  t["Greater"] = binary("{0}>{1}", DType::Bool);
  t["GreaterOrEqual"] = binary("{0}>={1}", DType::Bool);
  t["And"] = binary("({0}!=0)&({1}!=0)", DType::Bool);
  t["Or"] = binary("({0}!=0)|({1}!=0)", DType::Bool);
  t["Xor"] = binary("({0}!=0)!=({1}!=0)", DType::Bool);
  t["Not"] = [](Importer& im, const Node& n) { elementwise(im, n, "{0}==0", DType::Bool); };
  t["IsNaN"] = [](Importer& im, const Node& n) { elementwise(im, n, "{0}!={0}", DType::Bool); };
  t["IsInf"] = [](Importer& im, const Node& n) {
    bool pos = n.i("detect_positive", 1), neg = n.i("detect_negative", 1);
    elementwise(im, n, pos && neg ? "abs({0})==inf" : pos ? "{0}==inf" : neg ? "{0}==-inf" : "{0}!={0}&{0}=={0}",
                DType::Bool);
  };
  t["Where"] = [](Importer& im, const Node& n) {
    if (n.proto().input_size() != 3) n.fail("expects three inputs");
    elementwise(im, n, "if_then_else({0}!=0,{1},{2})", im.input(n, 1)->dtype);
  };
  t["Clip"] = [](Importer& im, const Node& n) {
    // Bounds are optional inputs (opset >= 11): absent means unbounded.
    std::string f = "{0}";
    int k = 1;
    if (n.has_input(1)) f = fmt::format("max({},{{{}}})", f, k++);
    if (n.has_input(2)) f = fmt::format("min({},{{{}}})", f, k);
    std::vector<int> present = {0};
    for (int i = 1; i < 3; ++i)
      if (n.has_input(i)) present.push_back(i);
    // Inputs are read in order; absent ones are skipped by building the reads directly.
    ValuePtr x = im.input(n, 0);
    ValuePtr y = im.result(n, 0, x->dtype, x->shape);
    fmt::dynamic_format_arg_store<fmt::format_context> args;
    for (int i : present) args.push_back(im.at_broadcast(im.input(n, i), x->shape.size()));
    im.fill(y, fmt::vformat(f, args));
  };
  t["Cast"] = [](Importer& im, const Node& n) {
    ValuePtr x = im.input(n, 0);
    n.i("saturate", 1);
    ValuePtr y = im.result(n, 0, dtype_of(static_cast<int32_t>(n.i("to", 1)), im.float_type(), n.where()), x->shape);
    im.fill(y, im.at_broadcast(x, x->shape.size()));
  };
  t["CastLike"] = [](Importer& im, const Node& n) {
    ValuePtr x = im.input(n, 0);
    ValuePtr y = im.result(n, 0, im.input(n, 1)->dtype, x->shape);
    im.fill(y, im.at_broadcast(x, x->shape.size()));
  };
  t["Dropout"] = [](Importer& im, const Node& n) {
    // Inference: the identity (training_mode, input 2, must be absent or false; ratio is unused).
    if (n.has_input(2)) {
      auto training = im.scalar(n, 2);
      if (training && *training != 0) n.unsupported("training_mode", "true");
    }
    n.i("seed", 0);
    if (n.output_used(1)) n.fail("the mask output is not supported");
    ValuePtr x = im.input(n, 0);
    im.view(n, 0, x, x->shape, [](const Index& i) { return i; });
  };
}

}  // namespace steptp::onnx_import
