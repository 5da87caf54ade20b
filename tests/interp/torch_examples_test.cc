// (b) Every program of ../shared/examples, run on seeded inputs of every profile, agrees with
// PyTorch (tests/interp/torch_examples.py, run by /usr/bin/python3 with Debian's torch) to a
// relative error of 1e-12 in float64 (f32 programs: the same f32 values).
#include <gtest/gtest.h>
#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "compare_util.h"
#include "ir/interp/inputs.h"
#include "ir/interp/interpreter.h"
#include "ir/leir/program_io.h"

namespace fs = std::filesystem;

namespace steptp::interp_test {
namespace {

const std::vector<std::pair<std::string, interp::InputProfile>> kProfiles = {
    {"ordinary", interp::InputProfile::Ordinary},
    {"scaled-up", interp::InputProfile::ScaledUp},
    {"scaled-down", interp::InputProfile::ScaledDown},
    {"signs", interp::InputProfile::Signs},
};

TEST(Examples, EveryExampleMatchesPyTorchOnSeededInputs) {
  nlohmann::json request = nlohmann::json::object();
  std::map<std::string, leir::TensorMap> ours;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(fs::path(STEPTP_SHARED_DIR) / "examples"))
    if (e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 10u);
  uint64_t seed = 20260;
  for (const auto& f : files) {
    auto p = leir::read_programs(f.string()).at(0);
    for (const auto& [tag, profile] : kProfiles) {
      std::string key = p.name + "#" + tag;
      leir::TensorMap inputs = interp::generate_inputs(p, ++seed, profile);
      ASSERT_NO_THROW(ours[key] = interp::run_program(p, inputs)) << key;
      for (const auto& d : p.known)  // the oracle also needs the signature's constants
        if (d.role == leir::Role::Constant && d.value) inputs[d.name] = leir::TensorValue{d.dtype, d.shape, *d.value};
      request[key] = leir::values_to_json(inputs);
    }
  }
  const fs::path dir = fs::path(STEPTP_BINARY_DIR) / "tests_tmp";
  fs::create_directories(dir);
  const fs::path in = dir / fmt::format("torch_examples_in_{}.json", getpid());
  const fs::path out = dir / fmt::format("torch_examples_out_{}.json", getpid());
  std::ofstream(in) << request.dump();
  const std::string cmd = fmt::format("/usr/bin/python3 {}/tests/interp/torch_examples.py {} {}", STEPTP_SOURCE_DIR,
                                      in.string(), out.string());
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream res(out);
  auto torch = nlohmann::json::parse(res);
  fs::remove(in);
  fs::remove(out);

  double worst = 0;
  int compared = 0;
  for (const auto& [key, outputs] : ours) {
    SCOPED_TRACE(key);
    leir::TensorMap want = leir::values_from_json(torch.at(key));
    ASSERT_EQ(want.size(), outputs.size());
    for (const auto& [name, w] : want) {
      Mismatch m = compare_values(outputs.at(name), w);
      EXPECT_TRUE(m.ok) << name << ": " << m.detail;
      worst = std::max(worst, m.worst_rel);
      ++compared;
    }
  }
  EXPECT_EQ(compared, static_cast<int>(files.size() * kProfiles.size()));
  RecordProperty("worst_relative_error", fmt::format("{:g}", worst));
}

}  // namespace
}  // namespace steptp::interp_test
