// Roots with room to optimize (apps/dataset/root_headroom.h): the bytes every equivalent program must
// move, and the screen that leaves out roots whose naive time is already near a copy of them.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/dataset/dataset.h"
#include "dataset/dataset_test_util.h"
#include "apps/dataset/root_headroom.h"
#include "apps/dataset/root_sizing.h"
#include "ir/leir/program_io.h"
#include "search/tune/database.h"
#include "search/tune/roofline.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace steptp::dataset {
namespace {

TEST(RootHeadroom, TrafficIsInputsAndParamsReadAndOutputsWritten) {
  // f32 input 3x5 (60 B), f64 param 4 (32 B), i32 constant 7 (not counted: a program may
  // compute it), bool output 9 (9 B), f32 output 2x3 (24 B); the intermediate E is not counted.
  auto p = leir::program_from_text(
      "input A: f32[3,5]\nparam W: f64[4]\nconstant K: i32[7]\noutput M: bool[9]\n"
      "output D: f32[2,3]\n"
      "L^{2}_{a=0}L^{3}_{c=0}[E^{f32,g}_{a,c}=A^{f32,g}_{a,c}*W^{f64,g}_{c}+K^{i32,g}_{c};"
      "D^{f32,g}_{a,c}=E^{f32,g}_{a,c};];L^{9}_{a=0}[M^{bool,g}_{a}=A^{f32,g}_{0,0}>0;];",
      "traffic.leir");
  const auto t = tune::program_traffic(p);  // what the headroom screen times a copy of
  EXPECT_EQ(t.read_bytes, 60 + 32);
  EXPECT_EQ(t.write_bytes, 9 + 24);

  RootSizing s;
  EXPECT_EQ(headroom(s), 0);  // unknown
  s.naive_ms_one_thread = 12;
  s.traffic_ms = 0.5;
  EXPECT_DOUBLE_EQ(headroom(s), 24);
}

// An elementwise activation over ~50 MB (GCC vectorizes it, the B loop runs in parallel) sits
// within a few times of a copy of its bytes; a matmul's naive loops are hundreds of times above
// theirs. At --min-headroom 8 the first is left out with both times, the second kept; the copy
// times are stored, so a rerun decides the same without measuring.
TEST(RootHeadroom, AMemoryBoundRootIsLeftOutAndAComputeBoundOneKept) {
  const fs::path dir = testing::tmpdir("root_headroom_test", "screen");
  fs::create_directories(dir);
  const std::string store = (dir / "m.sqlite").string();
  auto o = testing::bench_sizing_options(1e-6);
  // One timed thread: beside the other tests of a parallel ctest, a two-thread copy waits for
  // its second thread (CI measured a 2.7 MB copy at 8 ms); one thread shares a core at worst.
  o.measure_threads = 1;
  std::vector<Root> roots{testing::bench_root("relu6", 3), testing::bench_root("batched_matmul", 3)};
  auto sizing = size_roots_by_measurement(roots, o, store, nullptr);
  ASSERT_EQ(roots.size(), 2u);
  json skipped = json::array();

  o.min_headroom = 0;  // off: nothing measured, nothing left out
  screen_roots_by_headroom(roots, sizing, o, store, &skipped);
  EXPECT_EQ(roots.size(), 2u);
  EXPECT_EQ(sizing[0].traffic_ms, 0);

  o.min_headroom = 8;
  screen_roots_by_headroom(roots, sizing, o, store, &skipped);
  ASSERT_EQ(roots.size(), 1u) << skipped.dump();
  EXPECT_EQ(roots[0].key, "w/batched_matmul");
  EXPECT_GT(headroom(sizing[0]), 8);
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_EQ(skipped[0]["key"], "w/relu6");
  const auto reason = skipped[0]["reason"].get<std::string>();
  EXPECT_NE(reason.find("below --min-headroom 8"), std::string::npos) << reason;

  tune::ObservationStore facts(store);
  const auto stored = facts.size();
  std::vector<Root> again{testing::bench_root("relu6", 3), testing::bench_root("batched_matmul", 3)};
  auto resized = size_roots_by_measurement(again, o, store, nullptr);
  json skipped_again = json::array();
  screen_roots_by_headroom(again, resized, o, store, &skipped_again);
  EXPECT_EQ(facts.size(), stored);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(resized[0].traffic_ms, sizing[0].traffic_ms);
  EXPECT_EQ(skipped_again, skipped);

  // A root that was not sized (no naive time) is kept as it is, nothing measured for it.
  std::vector<Root> unsized{testing::bench_root("relu6", 3)};
  std::vector<RootSizing> none(1);
  screen_roots_by_headroom(unsized, none, o, store, nullptr);
  EXPECT_EQ(unsized.size(), 1u);
  EXPECT_EQ(none[0].traffic_ms, 0);
  fs::remove_all(dir.parent_path());
}

}  // namespace
}  // namespace steptp::dataset
