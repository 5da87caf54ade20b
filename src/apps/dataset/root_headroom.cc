#include "apps/dataset/root_headroom.h"

#include <optional>

#include <fmt/format.h>

#include "lower/measure/memory_traffic.h"
#include "search/tune/database.h"
#include "search/tune/machine.h"
#include "search/tune/roofline.h"
#include "search/tune/timing_lock.h"

namespace steptp::dataset {
namespace {

using nlohmann::json;

backend::MeasureOptions traffic_options(int threads) {
  backend::MeasureOptions mo;
  mo.threads = threads;
  mo.warmup = 2;
  mo.min_repeats = 5;
  mo.min_time_s = 0.02;
  mo.max_time_s = 0.5;
  return mo;
}

}  // namespace

double headroom(const RootSizing& s) {
  return s.naive_ms_one_thread > 0 && s.traffic_ms > 0 ? s.naive_ms_one_thread / s.traffic_ms : 0;
}

void screen_roots_by_headroom(std::vector<Root>& roots, std::vector<RootSizing>& sizing, const GenerateOptions& o,
                              const std::string& store_path, json* skipped) {
  if (!(o.min_headroom > 0) || !o.measured || o.size != workloads::SizeClass::Bench) return;
  tune::ObservationStore store(store_path);
  const auto mo = traffic_options(o.measure_threads);
  const std::string machine = tune::fingerprint(tune::this_machine(o.measure_threads));
  const std::string config = fmt::format("memory-traffic warmup={} repeats={} min={} max={}", mo.warmup,
                                         mo.min_repeats, mo.min_time_s, mo.max_time_s);
  std::optional<tune::TimedSection> timed;  // taken at the first copy timed, for the rest of the stage
  std::vector<char> left_out(roots.size(), 0);
  for (size_t i = 0; i < roots.size(); ++i) {
    if (!(sizing[i].naive_ms_one_thread > 0)) continue;  // not sized (a failed build is reported later): kept
    // Bytes any equivalent program moves at least (search/tune/roofline.h: inputs and parameters read,
    // outputs written; constants not counted, since a program may compute them instead).
    const auto traffic = tune::program_traffic(roots[i].program);
    const std::string key = tune::observation_key(
        {machine, fmt::format("read={} write={}", traffic.read_bytes, traffic.write_bytes), config});
    auto found = store.get(key);
    if (!found) {
      if (!timed) timed.emplace(o.measure_threads);
      const auto t = backend::measure_memory_traffic(traffic.read_bytes, traffic.write_bytes, mo);
      store.put_all({{key, json{{"median_ms", t.median_ms}}}});
      found = store.get(key);  // another worker's entry wins
    }
    sizing[i].traffic_ms = (*found)["median_ms"].get<double>();
    const double h = headroom(sizing[i]);
    if (!(h > 0 && h < o.min_headroom)) continue;
    left_out[i] = 1;
    if (skipped)
      skipped->push_back({{"key", roots[i].key},
                          {"reason", fmt::format("headroom {:.3g} below --min-headroom {}: naive program {:.3g} ms on "
                                                 "one core, a copy of its {:.3g} MB of inputs and outputs {:.3g} ms on "
                                                 "{} cores",
                                                 h, o.min_headroom, sizing[i].naive_ms_one_thread,
                                                 double(traffic.read_bytes + traffic.write_bytes) / 1e6,
                                                 sizing[i].traffic_ms, o.measure_threads)}});
  }
  remove_left_out(roots, sizing, left_out);
}

}  // namespace steptp::dataset
