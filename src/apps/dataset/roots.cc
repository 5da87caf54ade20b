// Stage "roots" of `steptp generate`: the programs trajectories start from.
#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include <fmt/format.h>

#include "apps/dataset/dataset.h"
#include "base/error.h"
#include "front/onnx/onnx_import.h"
#include "ir/leir/program_io.h"
#include "transform/sampler.h"
#include "front/tokenizer/bpe_tokenizer.h"
#include "front/workloads/composite.h"

namespace fs = std::filesystem;

namespace steptp::dataset {

leir::Program emit_root_program(const Root& r, workloads::SizeClass size, int bench_doublings) {
  leir::Program p = workloads::emit(*r.workload, r.emit_seed, size, bench_doublings);
  return size == workloads::SizeClass::Bench ? workloads::to_f32(p) : p;
}

std::vector<Root> collect_roots(const GenerateOptions& o, nlohmann::json* skipped) {
  std::vector<Root> roots;
  const auto& ws = workloads::all_workloads();
  size_t n = o.programs < 0 ? ws.size() : std::min(ws.size(), size_t(o.programs));
  // Spread over the suite: a seeded choice of workloads, kept in suite order.
  auto idx = strategies::choose_indices(ws.size(), n, base::mix_seed(o.seed, 0x5417e));
  std::sort(idx.begin(), idx.end());
  for (size_t i : idx) {
    const auto& w = ws[i];
    Root r{"w/" + w.name, w.family, {}, &w, base::mix_seed(o.seed, i)};
    try {
      r.program = emit_root_program(r, o.size);
    } catch (const base::Error& e) {
      // A workload without shapes of this class (bench: nll_loss, cross_entropy_loss, whose work
      // cannot reach the bench window: workloads' BadRequest) is left out and listed, not fatal.
      if (e.kind() != base::ErrorKind::BadRequest || o.size != workloads::SizeClass::Bench) throw;
      if (skipped) skipped->push_back({{"key", r.key}, {"reason", e.what()}});
      continue;
    }
    roots.push_back(std::move(r));
  }
  if (o.composites > 0) {
    auto cs = workloads::sample_composites(o.composites, base::mix_seed(o.seed, 0xc0),  o.size);
    for (size_t i = 0; i < cs.size(); ++i)
      roots.push_back({fmt::format("c/{}", i), "composite",
                       o.size == workloads::SizeClass::Bench ? workloads::to_f32(cs[i]) : cs[i]});
  }
  if (o.examples) {
    fs::path ex = fs::path(tokenizer::default_qwen3_path()).parent_path().parent_path().parent_path() / "examples";
    std::vector<fs::path> files;
    std::error_code ec;
    if (fs::is_directory(ex, ec))
      for (const auto& e : fs::directory_iterator(ex))
        if (e.path().extension() == ".json") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const auto& f : files)
      for (auto& p : leir::read_programs(f.string())) roots.push_back({"e/" + f.stem().string(), "example", p});
  }
  if (!o.input.empty()) {
    auto ps = onnx_import::read_programs_any(o.input);
    for (size_t i = 0; i < ps.size(); ++i) roots.push_back({fmt::format("u/{}", i), "user", ps[i]});
  }
  return roots;
}

}  // namespace steptp::dataset
