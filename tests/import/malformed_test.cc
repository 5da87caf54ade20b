// Malformed and unsupported models: each is an ImportError with a clear message (file, node, op,
// attribute), never a crash; `steptp import` exits 1 for them and 2 for usage errors. Models are
// built here with the ONNX protobuf API, so every defect is exactly the one named.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "front/onnx/onnx_import.h"
#include "ir/interp/interpreter.h"
#include "ir/leir/values.h"

namespace steptp::onnx_import {
namespace {

namespace fs = std::filesystem;

void add_value(onnx::ValueInfoProto* v, const std::string& name, std::vector<int64_t> dims,
               int type = onnx::TensorProto::FLOAT) {
  v->set_name(name);
  auto* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(type);
  for (int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
}

onnx::NodeProto* add_node(onnx::GraphProto* g, const std::string& op, std::vector<std::string> in,
                          std::vector<std::string> out, const std::string& name) {
  auto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (auto& s : in) n->add_input(s);
  for (auto& s : out) n->add_output(s);
  return n;
}

// y = relu(x @ w + b): x [2,3] input, w [3,4] and b [4] initializers, opset 17.
onnx::ModelProto small_model() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* op = m.add_opset_import();
  op->set_domain("");
  op->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("small");
  add_value(g->add_input(), "x", {2, 3});
  add_value(g->add_output(), "y", {2, 4});
  auto* w = g->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(3);
  w->add_dims(4);
  for (int i = 0; i < 12; ++i) w->add_float_data(0.25f * float(i - 6));
  auto* b = g->add_initializer();
  b->set_name("b");
  b->set_data_type(onnx::TensorProto::FLOAT);
  b->add_dims(4);
  for (int i = 0; i < 4; ++i) b->add_float_data(0.5f * float(i));
  add_node(g, "MatMul", {"x", "w"}, {"xw"}, "mm");
  add_node(g, "Add", {"xw", "b"}, {"z"}, "bias");
  add_node(g, "Relu", {"z"}, {"y"}, "act");
  return m;
}

std::string import_error(const onnx::ModelProto& m, const ImportOptions& opts = {}) {
  try {
    import_onnx(m.SerializeAsString(), "model.onnx", opts);
  } catch (const ImportError& e) {
    return e.what();
  }
  return "(imported)";
}

TEST(OnnxMalformed, TheSmallModelImportsAndRuns) {
  leir::Program p = import_onnx(small_model().SerializeAsString(), "small.onnx");
  ASSERT_EQ(p.known.size(), 4u);
  EXPECT_EQ(p.known[0].alias, "x");
  EXPECT_EQ(p.known[0].role, leir::Role::Input);
  EXPECT_EQ(p.known[1].role, leir::Role::Param);
  EXPECT_TRUE(p.known[1].value.has_value());
  EXPECT_EQ(p.known[3].alias, "y");
  // x = all ones: y[i][j] = relu(sum_k w[k][j] + b[j]), computed by hand.
  leir::TensorMap in = {{"x", {leir::DType::F32, {2, 3}, std::vector<double>(6, 1.0)}}};
  auto out = interp::Interpreter(p).run(leir::key_by_name(p, in));
  const auto& y = out.at(p.known[3].name).data;
  for (int j = 0; j < 4; ++j) {
    double s = 0.5 * j;
    for (int k = 0; k < 3; ++k) s += 0.25 * (k * 4 + j - 6);
    EXPECT_EQ(y[j], std::max(s, 0.0)) << j;
    EXPECT_EQ(y[4 + j], std::max(s, 0.0)) << j;
  }
}

TEST(OnnxMalformed, TruncatedProtobuf) {
  std::string bytes = small_model().SerializeAsString();
  for (size_t cut : {size_t(1), bytes.size() / 3, bytes.size() / 2, bytes.size() - 3}) {
    try {
      import_onnx(bytes.substr(0, cut), "cut.onnx");
      ADD_FAILURE() << "a model cut to " << cut << " bytes imported";
    } catch (const ImportError& e) {
      EXPECT_TRUE(std::string(e.what()).find("cut.onnx: error:") == 0) << e.what();
    }
  }
}

TEST(OnnxMalformed, MissingInitializer) {
  auto m = small_model();
  m.mutable_graph()->mutable_initializer()->RemoveLast();  // b
  std::string e = import_error(m);
  EXPECT_NE(e.find("node 'bias' (Add): input 'b' is produced by no node"), std::string::npos) << e;
}

TEST(OnnxMalformed, CyclicGraph) {
  auto m = small_model();
  m.mutable_graph()->mutable_node(0)->set_input(0, "y");  // mm reads y, which depends on mm
  std::string e = import_error(m);
  EXPECT_NE(e.find("the graph has a cycle"), std::string::npos) << e;
  EXPECT_NE(e.find("node 'mm' (MatMul)"), std::string::npos) << e;
}

TEST(OnnxMalformed, ShapeMismatch) {
  auto m = small_model();
  auto* x = m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
  x->mutable_dim(1)->set_dim_value(5);  // x [2,5] @ w [3,4]
  std::string e = import_error(m);
  EXPECT_NE(e.find("node 'mm' (MatMul): shape mismatch: inner dimensions 5 and 3 differ"), std::string::npos) << e;
  auto m2 = small_model();
  m2.mutable_graph()->mutable_output(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(1)->set_dim_value(7);
  e = import_error(m2);
  EXPECT_NE(e.find("shape mismatch: graph output 'y' is declared [2,7] but its producer computes [2,4]"), std::string::npos) << e;
  auto m3 = small_model();
  m3.mutable_graph()->mutable_initializer(1)->add_float_data(9.0f);  // 5 values for shape [4]
  e = import_error(m3);
  EXPECT_NE(e.find("tensor 'b' holds 5 values, its shape [4] needs 4"), std::string::npos) << e;
}

TEST(OnnxMalformed, UnsupportedOpAndAttribute) {
  auto m = small_model();
  m.mutable_graph()->mutable_node(2)->set_op_type("Hardmax");
  std::string e = import_error(m);
  EXPECT_NE(e.find("node 'act' (Hardmax): this op is not supported"), std::string::npos) << e;
  auto m2 = small_model();
  auto* a = m2.mutable_graph()->mutable_node(2)->add_attribute();
  a->set_name("frobnicate");
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(1);
  e = import_error(m2);
  EXPECT_NE(e.find("node 'act' (Relu): attribute 'frobnicate' is not supported"), std::string::npos) << e;
  auto m3 = small_model();
  m3.mutable_opset_import(0)->set_version(9);
  e = import_error(m3);
  EXPECT_NE(e.find("opset 9 is not supported"), std::string::npos) << e;
}

TEST(OnnxMalformed, SymbolicDimensionsNeedShapes) {
  auto m = small_model();
  m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_param("batch");
  m.mutable_graph()->mutable_output(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_param("batch");
  std::string e = import_error(m);
  EXPECT_NE(e.find("graph input 'x': dimension 0 is symbolic ('batch'): give --shape x=DIMS or --shape batch=N"),
            std::string::npos) << e;
  leir::Program p = import_onnx(m.SerializeAsString(), "m.onnx", {.float_type = {}, .shapes = {{"batch", {5}}}});
  EXPECT_EQ(p.known[0].shape, (std::vector<int64_t>{5, 3}));
  p = import_onnx(m.SerializeAsString(), "m.onnx", {.float_type = leir::DType::F64, .shapes = {{"x", {7, 3}}}});
  EXPECT_EQ(p.known[0].shape, (std::vector<int64_t>{7, 3}));
  EXPECT_EQ(p.known[0].dtype, leir::DType::F64);
  e = import_error(m, {.float_type = {}, .shapes = {{"x", {7, 4}}}});
  EXPECT_NE(e.find("--shape x: dimension 1 is 3 in the model, got 4"), std::string::npos) << e;
}

// The CLI: exit 1 with the message for a bad model, 2 for a usage error, 0 and a program that
// `run --inputs` accepts keyed by ONNX names.
TEST(OnnxMalformed, CommandLineExitCodes) {
  fs::path dir = fs::path(STEPTP_BINARY_DIR) / "tmp" / "onnx_cli";
  fs::create_directories(dir);
  std::string good = (dir / "good.onnx").string(), bad = (dir / "bad.onnx").string();
  std::ofstream(good, std::ios::binary) << small_model().SerializeAsString();
  std::ofstream(bad, std::ios::binary) << small_model().SerializeAsString().substr(0, 40);
  auto rc = [](const std::string& cmd) {
    int s = std::system((cmd + " >/dev/null 2>&1").c_str());
    return WIFEXITED(s) ? WEXITSTATUS(s) : -1;
  };
  std::string exe = STEPTP_EXE;
  EXPECT_EQ(rc(exe + " import " + bad), 1);
  EXPECT_EQ(rc(exe + " import " + good + " --shape x=2,zz"), 2);
  EXPECT_EQ(rc(exe + " import " + good + " --dtype f16"), 2);
  std::string prog = (dir / "good.json").string(), values = (dir / "x.json").string();
  ASSERT_EQ(rc(exe + " import " + good + " --out " + prog), 0);
  std::ofstream(values) << R"({"x": {"dtype": "f32", "shape": [2, 3], "data": [1, 1, 1, 1, 1, 1]}})";
  EXPECT_EQ(rc(exe + " run " + prog + " --inputs " + values), 0);
  EXPECT_EQ(rc(exe + " run " + good + " --inputs " + values), 0);  // .onnx read directly
  EXPECT_EQ(rc(exe + " check " + good), 0);
}

}  // namespace
}  // namespace steptp::onnx_import
