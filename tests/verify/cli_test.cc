// The steptp binary's contract for check / verify / print: exit codes and stderr format.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include "file_text.h"

namespace {

struct Result {
  int rc;
  std::string out, err;
};

// One folder per test process: ctest runs the tests of this file in parallel.
std::string tmp_dir() { return std::string(STEPTP_BINARY_DIR) + "/cli_test_tmp/" + std::to_string(::getpid()); }

Result run(const std::string& args) {
  std::string dir = tmp_dir();
  std::filesystem::create_directories(dir);
  std::string cmd = std::string(STEPTP_EXE) + " " + args + " >" + dir + "/out 2>" + dir + "/err";
  int status = std::system(cmd.c_str());
  return {WEXITSTATUS(status), slurp(dir + "/out"), slurp(dir + "/err")};
}

std::string write(const std::string& name, const std::string& text) {
  std::string dir = tmp_dir();
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/" + name) << text;
  return dir + "/" + name;
}

const std::string kShared = STEPTP_SHARED_DIR;

}  // namespace

TEST(Cli, CheckValidExamples) {
  auto r = run("check " + kShared + "/examples/softmax.json " + kShared + "/examples/matmul.json");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out,
            "softmax: nests=3 statements=3 intermediates=D:f64[4],E:f64[4] flops=896\n"
            "matmul: nests=1 statements=1 intermediates=none flops=3072\n");
}

TEST(Cli, CheckInvalidReportsFileLineCol) {
  auto f = write("oob.leir", "input A: f64[4]\noutput C: f64[4]\nL^{4}_{a=0}[\n  C^{f64,g}_{a}=A^{f64,g}_{a+1};\n];\n");
  auto r = run("check " + f);
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err.rfind(f + ":4:17: error: access A^{f64,g}_{a+1} is out of bounds", 0), 0u) << r.err;
  auto bad = write("syntax.leir", "input A: f64[4]\noutput C: f64[4]\nL^{4}_{a=0}[C^{f64,g}_{a}=A^{f64,g}_{a}$;];\n");
  auto r2 = run("check " + bad);
  EXPECT_EQ(r2.rc, 1);
  EXPECT_EQ(r2.err, bad + ":3:40: error: unexpected character '$'\n");
  auto r3 = run("check --json " + f);
  EXPECT_EQ(r3.rc, 1);
  EXPECT_NE(r3.out.find("\"valid\":false"), std::string::npos) << r3.out;
}

TEST(Cli, PrintInvalidExitsOne) {
  auto bad = write("syntax2.leir", "input A: f64[4]\noutput C: f64[4]\nL^{4}_{a=0}[C^{f64,g}_{a}=A^{f64,g}_{a}\n];\n");
  auto r = run("print " + bad);
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.err, bad + ":4:1: error: expected ';' after the statement, found ']'\n");
}

TEST(Cli, VerifyExitCodesAndJson) {
  auto sm = kShared + "/examples/softmax.json";
  auto r = run("verify " + sm + " " + sm + " --json --trials 2");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out,
            "{\"equivalent\":true,\"class\":\"exact\",\"trials\":2,\"evidential\":2,\"finite_share\":1.0,"
            "\"worst\":null}\n");
  auto wrong = write("wrong.leir", "input A: f64[4,32]\noutput C: f64[4,32]\nB^{4}_{tx=0}L^{32}_{a=0}[C^{f64,g}_{tx,a}=A^{f64,g}_{tx,a};];\n");
  auto r2 = run("verify " + sm + " " + wrong + " --json");
  EXPECT_EQ(r2.rc, 1) << r2.err;
  EXPECT_NE(r2.out.find("\"equivalent\":false,\"class\":\"failed\",\"trials\":1,\"evidential\":1,\"finite_share\":1.0,"
                        "\"worst\":{\"tensor\":\"C\""),
            std::string::npos)
      << r2.out;
  auto bad = write("syntax3.leir", "input A: f64[4,32]\noutput C: f64[4,32]\nL^{4}_{a=0}[C^{f64,g}=;];\n");
  auto r3 = run("verify " + sm + " " + bad);
  EXPECT_EQ(r3.rc, 2);
  EXPECT_EQ(r3.err.rfind(bad + ":3:", 0), 0u) << r3.err;
}

TEST(Cli, VerifyInconclusiveExitsThree) {
  // Outputs NaN on every input set (log of a negative number): agreement is no evidence.
  auto nan = write("nan.leir", "input A: f64[4]\noutput C: f64[4]\nL^{4}_{a=0}[C^{f64,g}_{a}=log(-1-A^{f64,g}_{a}*A^{f64,g}_{a});];\n");
  auto r = run("verify " + nan + " " + nan + " --json");
  EXPECT_EQ(r.rc, 3) << r.err;
  EXPECT_EQ(r.out, "{\"equivalent\":false,\"class\":\"inconclusive\",\"trials\":4,\"evidential\":0,\"finite_share\":0.0,"
                   "\"worst\":null}\n");
  EXPECT_NE(r.err.find("inconclusive: no trial gave evidence"), std::string::npos) << r.err;
  auto t = run("verify " + nan + " " + nan);
  EXPECT_EQ(t.rc, 3);
  EXPECT_EQ(t.out.rfind("inconclusive (inconclusive, 4 trials, 0 evidential, finite share 0)", 0), 0u) << t.out;
  // In-domain data given with --inputs is evidence: `--trials 1` style single run.
  auto pos = write("pos.leir", "input A: f64[4]\noutput C: f64[4]\nL^{4}_{a=0}[C^{f64,g}_{a}=log(A^{f64,g}_{a});];\n");
  auto vals = write("pos.json", R"({"A": {"dtype": "f64", "shape": [4], "data": [1, 2, 3, 4]}})");
  auto g = run("verify " + pos + " " + pos + " --inputs " + vals + " --json");
  EXPECT_EQ(g.rc, 0) << g.err;
  EXPECT_NE(g.out.find("\"evidential\":1,\"finite_share\":1.0"), std::string::npos) << g.out;
  auto neg = write("neg.json", R"({"A": {"dtype": "f64", "shape": [4], "data": [-1, -2, -3, 4]}})");
  EXPECT_EQ(run("verify " + pos + " " + pos + " --inputs " + neg + " --json").rc, 3);
}
