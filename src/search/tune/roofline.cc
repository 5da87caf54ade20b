#include "search/tune/roofline.h"

#include <cmath>

#include <fmt/format.h>

#include "ir/leir/types.h"
#include "ir/analysis/program_facts.h"

namespace steptp::tune {

ProgramTraffic program_traffic(const leir::Program& p) {
  ProgramTraffic t;
  for (const auto& d : p.known) {
    const int64_t bytes = d.numel() * leir::byte_size(d.dtype);
    if (d.role == leir::Role::Output) t.write_bytes += bytes;
    else if (d.role != leir::Role::Constant) t.read_bytes += bytes;
  }
  t.ops = analysis::program_facts(p).flops;
  return t;
}

namespace {

double bytes_of(const Roofline& r) { return double(r.traffic.read_bytes + r.traffic.write_bytes); }
double gb_per_s(double bytes, double ms) { return ms > 0 ? bytes / (ms * 1e-3) / 1e9 : 0; }
double r4(double x) { return std::round(x * 1e4) / 1e4; }

}  // namespace

nlohmann::json roofline_json(const Roofline& r) {
  return {{"read_bytes", r.traffic.read_bytes},
          {"write_bytes", r.traffic.write_bytes},
          {"ops", r.traffic.ops},
          {"copy_ms", r.copy_ms},
          {"threads", r.threads},
          {"copy_gb_per_s", r4(gb_per_s(bytes_of(r), r.copy_ms))},
          {"best_gb_per_s", r4(gb_per_s(bytes_of(r), r.best_ms))},
          {"best_copy_share", r.best_ms > 0 ? r4(r.copy_ms / r.best_ms) : 0.0},
          {"root_copy_share", r.root_ms > 0 ? r4(r.copy_ms / r.root_ms) : 0.0},
          {"best_gops_per_s", r.best_ms > 0 ? r4(double(r.traffic.ops) / (r.best_ms * 1e-3) / 1e9) : 0.0}};
}

std::string roofline_line(const Roofline& r) {
  const double mb = bytes_of(r) / 1e6;
  return fmt::format(
      "roofline: best moves {:.3g} MB in {:.4g} ms ({:.3g} GB/s), {:.0f}% of a copy of the same bytes ({:.4g} ms, "
      "{:.3g} GB/s on {} threads); root {:.0f}%; {:.3g} Gop/s",
      mb, r.best_ms, gb_per_s(bytes_of(r), r.best_ms), 100 * r.copy_ms / r.best_ms, r.copy_ms,
      gb_per_s(bytes_of(r), r.copy_ms), r.threads, 100 * r.copy_ms / r.root_ms,
      double(r.traffic.ops) / (r.best_ms * 1e-3) / 1e9);
}

}  // namespace steptp::tune
