// The commands of api.h, once for the CLI, serve's jobs and the Python bindings.
#include "apps/api/api.h"

#include <fmt/format.h>

#include "base/error.h"
#include "base/hash.h"
#include "ir/interp/interpreter.h"
#include "ir/leir/canonical.h"
#include "ir/leir/printer.h"
#include "ir/leir/program_io.h"
#include "lower/cpu/codegen.h"
#include "lower/cpu/cpu_program.h"
#include "lower/cuda/cuda_codegen.h"
#include "search/tune/timing_lock.h"
#include "transform/sampler.h"
#include "transform/schedule_state.h"

namespace steptp::api {

CheckResult check(CheckRequest request) {
  CheckResult r;
  r.report = leir::validate_all(request.program);
  if (request.identity && r.report.ok()) {
    r.hash = base::hex64(leir::program_hash(request.program));
    r.canonical = leir::program_to_text(request.program);
  }
  return r;
}

verify::VerifyReport verify(const VerifyRequest& request) {
  if (!request.inputs) return verify::verify(request.a, request.b, request.options);
  return verify::verify(request.a, request.b, std::vector<leir::TensorMap>{*request.inputs}, request.options);
}

nlohmann::json verify_json(const verify::VerifyReport& report) {
  auto j = nlohmann::json::parse(verify::to_json(report));
  if (!report.error.empty()) j["error"] = report.error;
  return j;
}

ApplyResult apply(ApplyRequest request) {
  const strategies::Strategy& s = *request.strategy;
  const leir::Program& p = request.program;
  const strategies::ScheduleState st(p);
  ApplyResult out;
  if (request.explain) {
    out.sites = s.sites(st);
    out.refusals = s.explain(st);
  }
  std::vector<strategies::Candidate> candidates;
  if (request.params) {
    const int site = request.site.value_or(0);
    leir::Program applied = reward::apply_action(p, std::string(s.name()), site, *request.params);
    candidates.push_back({std::string(s.name()), site, {}, s.exactness(), std::move(applied)});
  } else if (request.all || request.site) {
    strategies::SampleOptions so;
    so.seed = request.seed;
    so.per_site = request.samples;
    so.only_site = request.site;
    candidates = strategies::sample_candidates(s, st, so);
    out.site_count = s.sites(st).size();
  } else if (auto c = strategies::sample_one(s, p, request.seed)) {
    candidates.push_back(std::move(*c));
  }
  for (auto& c : candidates) {
    Applied a;
    a.params = request.params ? *request.params : strategies::params_json(c.params);
    a.candidate = std::move(c);
    if (!request.verify) {
      out.results.push_back(std::move(a));
      continue;
    }
    verify::VerifyOptions vo;
    vo.seed = request.seed;
    a.verdict = verify::verify(p, a.candidate.program, vo);
    (a.verdict->equivalent ? out.results : out.dropped).push_back(std::move(a));
  }
  return out;
}

template <class Json>
Json applied_json(const Applied& a) {
  Json j = {{"strategy", a.candidate.strategy},
            {"site", a.candidate.site},
            {"params", a.params},
            {"class", std::string(strategies::to_string(a.candidate.exactness))}};
  if (a.verdict) j["verdict"] = Json::parse(verify::to_json(*a.verdict));
  return j;
}
template nlohmann::json applied_json<nlohmann::json>(const Applied&);
template nlohmann::ordered_json applied_json<nlohmann::ordered_json>(const Applied&);

std::optional<LowerTarget> lower_target(std::string_view name) {
  if (name == "cpu") return LowerTarget::Cpu;
  if (name == "cuda") return LowerTarget::Cuda;
  if (name == "tir") return LowerTarget::Tir;
  return std::nullopt;
}

std::string lower(const LowerRequest& request) {
  switch (request.target) {
    case LowerTarget::Cpu:
      return std::string(backend::cpu::cpu_prelude()) +
             backend::cpu::generate_cpu_kernel(request.program, {.all_f64 = request.f64}).code;
    case LowerTarget::Cuda:
      return std::string(backend::cuda::cuda_prelude()) + backend::cuda::generate_cuda(request.program).code;
    case LowerTarget::Tir:
      return backend::tir::emit_tvmscript(request.program, request.tir);
  }
  return {};
}

RunTarget run_target(const std::string& name) {
  if (name == "interp") return RunTarget::Interp;
  if (name == "cpu") return RunTarget::Cpu;
  throw base::Error(base::ErrorKind::BadRequest, fmt::format("unknown target '{}' (available: interp, cpu)", name));
}

leir::TensorMap run(const RunRequest& request) {
  const leir::Program& p = request.program;
  const leir::TensorMap generated =
      request.inputs ? leir::TensorMap{} : interp::generate_inputs(p, request.seed, request.profile);
  const leir::TensorMap& inputs = request.inputs ? *request.inputs : generated;
  if (request.target == RunTarget::Cpu) return backend::cpu::build_cpu_program(p)->run(inputs);
  interp::RunOptions opts;
  opts.keep_intermediates = request.intermediates;
  opts.allow_unset_outputs = request.allow_unset;
  return interp::Interpreter(p).run(inputs, opts);
}

BenchResult bench(BenchRequest request) {
  auto& programs = request.programs;
  std::vector<backend::cpu::CpuBuildResult> built;
  if (request.vs_scalar_math) {
    backend::cpu::CompilerOptions scalar_math;
    scalar_math.vector_math = false;
    backend::cpu::KernelCompiler scalar(scalar_math);
    built = backend::cpu::build_cpu_programs(programs, {}, &scalar);
    built.push_back(backend::cpu::build_cpu_programs(programs).front());
    programs.push_back(programs[0]);
    programs[0].name += " (scalar math)";
  } else {
    built = backend::cpu::build_cpu_programs(programs);
  }
  for (size_t i = 0; i < built.size(); ++i)
    if (!built[i].program)
      throw base::Error(base::ErrorKind::Failed, fmt::format("{}: {}", programs[i].name, built[i].error));
  BenchResult r;
  for (const auto& p : programs) r.names.push_back(p.name);
  auto inputs = interp::generate_inputs(programs[0], request.seed);
  auto ba = built[0].program->bind(inputs);
  const auto& pa = *built[0].program;
  if (built.size() == 1) {
    r.stats = backend::measure([&] { pa.run(*ba); }, request.options);
    return r;
  }
  auto bb = built[1].program->bind(inputs, ba.get());  // one copy of the inputs, as a program timed alone
  const auto& pb = *built[1].program;
  r.comparison = backend::compare_interleaved([&] { pa.run(*ba); }, [&] { pb.run(*bb); }, request.options);
  return r;
}

MeasureResult measure(const MeasureRequest& request, const HoldMachine& hold) {
  const leir::Program& baseline = request.baseline ? *request.baseline : request.program;
  MeasureResult r;
  if (request.baseline) {
    r.signature_difference = verify::signature_difference(baseline, request.program);
    if (!r.signature_difference.empty()) return r;
  }
  const auto timed = [&] { r.pair = reward::measure_pair(baseline, request.program, request.settings); };
  if (hold) hold(timed);
  else timed();
  return r;
}

nlohmann::json score(const ScoreRequest& request, const ScoreHooks& hooks) {
  reward::ScoreOptions o;
  o.verify_trials = request.verify_trials;
  o.verify_seed = request.verify_seed;
  o.measure = request.measure;
  o.admissible = hooks.admissible;
  o.on_progress = hooks.on_progress;
  o.measurer = [&](const reward::Context& cx, const leir::Program& candidate) {
    reward::MeasuredStep m;
    const auto timed = [&] {
      std::optional<leir::Program> altered;
      if (hooks.before_kernel_run) hooks.before_kernel_run(altered.emplace(candidate));
      m = reward::measure_step(cx.root, cx.parent, altered ? *altered : candidate, request.settings);
      if (!request.peaks_path.empty())
        m.peaks = reward::cached_peaks(request.peaks_path, request.settings.options.threads);
    };
    if (hooks.hold) {
      hooks.hold(timed);
    } else {
      tune::TimingLock machine;  // cached_peaks may measure the machine
      timed();
    }
    return m;
  };
  nlohmann::json body = reward::score(request.context, request.answer, o);
  body["verify_seed"] = request.verify_seed;
  body["input_seed"] = request.settings.input_seed;
  return body;
}

}  // namespace steptp::api
