// libFuzzer target for the ONNX loader: arbitrary bytes as a serialized ModelProto through
// import_onnx (protobuf parsing, graph checks, shape resolution, lowering, constant folding).
//
// Build and run (clang with libFuzzer; from the repository root):
//   CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DSTEPTP_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo
//   ninja -C build-fuzz onnx_import_fuzz
//   mkdir -p build-fuzz/onnx-corpus && build-fuzz/fuzz/onnx_import_fuzz build-fuzz/onnx-corpus fuzz/onnx-seeds \
//       -max_len=65536 -max_total_time=600 -timeout=10 -rss_limit_mb=4096
// A crash means a sanitizer report or an exception other than the documented ones escaping
// import_onnx: ImportError (the model's fault), LeirError and interp::RuntimeError (a folded
// constant computation that fails on the model's data, e.g. an index out of range).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "front/onnx/onnx_import.h"
#include "ir/interp/interpreter.h"
#include "ir/leir/diagnostic.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    steptp::onnx_import::import_onnx(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.onnx");
  } catch (const steptp::onnx_import::ImportError&) {
  } catch (const steptp::leir::LeirError&) {
  } catch (const steptp::interp::RuntimeError&) {
  }
  return 0;
}
