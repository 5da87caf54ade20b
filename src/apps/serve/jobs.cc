// The endpoints' request semantics (see jobs.h).
#include "apps/serve/jobs.h"

#include <signal.h>

#include <cstring>
#include <set>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

#include "lower/cpu/codegen.h"
#include "lower/cuda/cuda_codegen.h"
#include "lower/tir/tvmscript.h"
#include "base/error.h"
#include "base/hash.h"
#include "ir/leir/canonical.h"
#include "ir/leir/diagnostic.h"
#include "ir/leir/printer.h"
#include "ir/leir/program_io.h"
#include "ir/leir/validate.h"
#include "apps/reward/reward.h"
#include "apps/reward/timing.h"
#include "transform/sampler.h"
#include "transform/strategy.h"
#include "search/tune/timing_lock.h"
#include "ir/verify/verifier.h"

namespace steptp::serve {
namespace {

using nlohmann::json;

// A request that does not follow the API (base/error.h: 400).
base::Error bad_request(const std::string& what) { return base::Error(base::ErrorKind::BadRequest, what); }

void allow_only(const json& req, std::initializer_list<const char*> keys) {
  std::set<std::string> ok(keys.begin(), keys.end());
  for (const auto& [k, v] : req.items())
    if (!ok.count(k)) throw bad_request(fmt::format("unknown field '{}'", k));
}

const json& required(const json& req, const char* key) {
  if (!req.contains(key)) throw bad_request(fmt::format("missing field '{}'", key));
  return req[key];
}

int64_t int_field(const json& req, const char* key, int64_t def, int64_t lo, int64_t hi) {
  if (!req.contains(key)) return def;
  const json& v = req[key];
  if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > hi)
    throw bad_request(fmt::format("field '{}' must be an integer in [{}, {}]", key, lo, hi));
  return v.get<int64_t>();
}

double number_field(const json& req, const char* key, double def, double lo, double hi) {
  if (!req.contains(key)) return def;
  const json& v = req[key];
  if (!v.is_number() || v.get<double>() < lo || v.get<double>() > hi)
    throw bad_request(fmt::format("field '{}' must be a number in [{}, {}]", key, lo, hi));
  return v.get<double>();
}

bool bool_field(const json& req, const char* key, bool def) {
  if (!req.contains(key)) return def;
  if (!req[key].is_boolean()) throw bad_request(fmt::format("field '{}' must be true or false", key));
  return req[key].get<bool>();
}

std::string string_field(const json& req, const char* key) {
  const json& v = required(req, key);
  if (!v.is_string()) throw bad_request(fmt::format("field '{}' must be a string", key));
  return v.get<std::string>();
}

// A program given as LEIR text or as the JSON form (LEIR.md §1); parse and validation errors
// throw LeirError with the field as file name and line:col inside it.
leir::Program program_field(const JobConfig& c, const json& req, const char* key, bool validate = true) {
  const json& v = required(req, key);
  leir::Program p;
  if (v.is_string()) {
    check_program_size(v.get_ref<const std::string&>().size(), c.limits, key);
    p = leir::program_from_text(v.get<std::string>(), key);
  } else if (v.is_object()) {
    check_program_size(v.dump().size(), c.limits, key);
    p = leir::program_from_json(v, key);
  } else {
    throw bad_request(fmt::format("field '{}' must be a LEIR program (text or JSON object)", key));
  }
  check_program_limits(p, c.limits, key);
  return validate ? reward::require_valid(std::move(p), key) : p;
}

// ---- endpoints ----

JobReply check(const json& req, const JobConfig& c) {
  allow_only(req, {"program"});
  leir::Program p = program_field(c, req, "program", false);
  auto rep = leir::validate_all(p);
  json errors = json::array();
  for (const auto& e : rep.errors) errors.push_back({{"line", e.loc.line}, {"col", e.loc.col}, {"message", e.message}});
  json body = {{"valid", rep.ok()}, {"name", p.name}, {"errors", errors}};
  if (rep.ok()) {
    body["nests"] = rep.summary.nests;
    body["statements"] = rep.summary.statements;
    body["flops"] = rep.summary.flops;
    body["hash"] = base::hex64(leir::program_hash(p));
    body["canonical"] = leir::program_to_text(p);
  }
  return {200, body};
}

JobReply verify_ep(const json& req, const JobConfig& c, uint64_t fresh_seed) {
  allow_only(req, {"a", "b", "trials", "seed"});
  leir::Program a = program_field(c, req, "a"), b = program_field(c, req, "b");
  verify::VerifyOptions vo;
  vo.trials = int(int_field(req, "trials", 3, 1, 64));
  vo.seed = req.contains("seed") ? uint64_t(int_field(req, "seed", 0, 0, INT64_MAX)) : fresh_seed;
  auto r = verify::verify(a, b, vo);
  json body = json::parse(verify::to_json(r));
  body["seed"] = vo.seed;
  if (!r.error.empty()) body["error"] = r.error;
  return {200, body};
}

JobReply apply_ep(const json& req, const JobConfig& c) {
  allow_only(req, {"program", "strategy", "site", "params", "samples", "seed"});
  leir::Program p = program_field(c, req, "program");
  std::string name = string_field(req, "strategy");
  const auto* s = strategies::find_strategy(name);
  if (!s) throw bad_request(fmt::format("unknown strategy '{}'", name));
  if (req.contains("params") && !req["params"].is_object()) throw bad_request("field 'params' must be an object");
  json results = json::array();
  auto add = [&](const std::string& strat, int site, const json& params, const leir::Program& prog) {
    results.push_back({{"strategy", strat}, {"site", site}, {"params", params},
                       {"program", leir::program_to_text(prog)}, {"hash", base::hex64(leir::program_hash(prog))}});
  };
  if (req.contains("params")) {
    int site = int(int_field(req, "site", 0, 0, 1000000));
    add(name, site, req["params"], reward::apply_action(p, name, site, req["params"]));
    return {200, {{"results", results}}};
  }
  strategies::SampleOptions so;
  so.seed = uint64_t(int_field(req, "seed", 0, 0, INT64_MAX));
  so.per_site = int(int_field(req, "samples", 1, 1, 16));
  if (req.contains("site")) so.only_site = int(int_field(req, "site", 0, 0, 1000000));
  auto cands = strategies::sample_candidates(*s, p, so);
  for (size_t i = 0; i < cands.size() && i < 64; ++i)
    add(cands[i].strategy, cands[i].site, json::parse(strategies::params_to_json(cands[i].params)), cands[i].program);
  return {200, {{"results", results}, {"sites", s->sites(p).size()}}};
}

JobReply lower_ep(const json& req, const JobConfig& c) {
  allow_only(req, {"program", "target"});
  leir::Program p = program_field(c, req, "program");
  std::string target = req.contains("target") ? string_field(req, "target") : "cpu";
  std::string src;
  try {
    if (target == "cpu") src = std::string(backend::cpu::cpu_prelude()) + backend::cpu::generate_cpu_kernel(p).code;
    else if (target == "cuda") src = std::string(backend::cuda::cuda_prelude()) + backend::cuda::generate_cuda(p).code;
    else if (target == "tir") src = backend::tir::emit_tvmscript(p);
    else throw bad_request("field 'target' must be one of cpu, cuda, tir");
  } catch (const leir::LeirError& e) {
    return {base::http_status(e.kind()), {{"error", e.message()}, {"field", "program"}, {"target", target}}};
  }
  return {200, {{"target", target}, {"source", src}}};
}

// Runs `f` holding the machine-wide measurement lock, telling the supervisor while it waits (the
// worker's watchdog does not count the wait against the job's time limit, so the wait bounds
// itself: tune::LockTimeout after c.lock_wait_s).
template <class F>
auto with_machine(const JobConfig& c, const Notify& notify, F&& f) {
  notify(Notice::WaitingForMachine, json::object());
  tune::TimingLock lock(tune::deadline_after(c.lock_wait_s));
  notify(Notice::HoldingMachine, json::object());
  return f();
}

reward::MeasureSettings measure_settings(const JobConfig& c, uint64_t input_seed, int threads, double min_time) {
  reward::MeasureSettings s;
  s.options.threads = threads;
  s.options.min_time_s = min_time;
  s.input_seed = input_seed;
  s.pair_timeout_s = c.pair_timeout_s;
  return s;
}

JobReply measure_ep(const json& req, const JobConfig& c, uint64_t input_seed, const Notify& notify) {
  allow_only(req, {"program", "against", "threads", "min_time"});
  leir::Program p = program_field(c, req, "program");
  leir::Program base = req.contains("against") ? program_field(c, req, "against") : p;
  if (req.contains("against")) {
    std::string diff = verify::signature_difference(base, p);
    if (!diff.empty())
      return {base::http_status(base::ErrorKind::Invalid),
              {{"error", "signatures differ: " + diff}, {"field", "against"}}};
  }
  int threads = int(int_field(req, "threads", c.measure_threads, 1, std::max(1u, std::thread::hardware_concurrency())));
  double min_time = number_field(req, "min_time", c.measure_min_time, 0.001, 2.0);
  reward::MeasuredPair m;
  try {
    m = with_machine(c, notify, [&] {
      return reward::measure_pair(base, p, measure_settings(c, input_seed, threads, min_time));
    });
  } catch (const tune::LockTimeout& e) {
    // Not the program's fault: an infrastructure failure, for the client to retry later.
    return {503, {{"error", fmt::format("the machine is busy ({}); retry later", e.what())}, {"failure", "machine busy"}, {"failure_kind", "machine_busy"}}};
  }
  if (!m.ok) return {base::http_status(base::ErrorKind::Failed), {{"error", m.error}, {"compiled", m.compiled}}};
  json body = {{"program", reward::to_json(m.cmp.b)}, {"threads", threads}, {"input_seed", input_seed}};
  if (req.contains("against")) {
    body["against"] = reward::to_json(m.cmp.a);
    body["speedup"] = m.cmp.speedup;
  }
  return {200, body};
}

// Test-only faults (serve --fault-injection): the "kernel run" of a score crashes, hangs or
// allocates without limit; "wrong_output" (not here: score_one) times a kernel that does not
// compute the verified program, as a code generation bug would.
[[noreturn]] void inject(const std::string& fault) {
  if (fault == "crash") raise(SIGSEGV);
  if (fault == "hang")
    for (volatile uint64_t i = 0;;) i = i + 1;  // a volatile store per turn: the loop is not optimized away
  std::vector<std::unique_ptr<char[]>> hog;
  while (true) {
    hog.emplace_back(new char[64 << 20]);
    std::memset(hog.back().get(), 1, 64 << 20);
  }
}

JobReply score_one(const json& req, const JobConfig& c, uint64_t verify_seed, uint64_t input_seed,
                   const Notify& notify) {
  allow_only(req, {"answer", "reward_context", "measure", "verify_trials", "fault"});
  std::string answer = string_field(req, "answer");
  std::string fault;
  if (req.contains("fault")) {
    if (!c.fault_injection) throw bad_request("unknown field 'fault' (fault injection is off)");
    fault = string_field(req, "fault");
    if (fault != "crash" && fault != "hang" && fault != "oom" && fault != "wrong_output")
      throw bad_request("field 'fault' must be crash, hang, oom or wrong_output");
  }
  reward::Context ctx;
  ctx = reward::parse_context(required(req, "reward_context"));
  check_program_limits(ctx.root, c.limits, "reward_context.root_program");
  check_program_limits(ctx.parent, c.limits, "reward_context.parent_program");
  reward::ScoreOptions o;
  o.verify_trials = int(int_field(req, "verify_trials", 3, 1, 16));
  o.verify_seed = verify_seed;
  o.measure = bool_field(req, "measure", true);
  json last_progress;
  o.admissible = [&](const leir::Program& cand) -> std::string {
    try {
      check_program_limits(cand, c.limits, "answer");
      return "";
    } catch (const LimitExceeded& e) {
      return e.what();
    }
  };
  o.on_progress = [&](const json& p) {
    last_progress = p;
    notify(Notice::Progress, p);
  };
  o.measurer = [&](const reward::Context& cx, const leir::Program& cand) {
    return with_machine(c, notify, [&] {
      // The machine is held: from here a death of the job is the answer's kernel run (died_reply).
      json running = last_progress;
      running["partial"]["kernel_run"] = true;
      notify(Notice::Progress, running);
      if (!fault.empty() && fault != "wrong_output") inject(fault);
      leir::Program timed = cand;
      if (fault == "wrong_output") {  // the first statement stores one more than the program says
        std::vector<leir::Item>* items = &timed.body;
        while (!items->empty() && items->front().is_nest()) items = &items->front().nest.body;
        if (!items->empty()) {
          leir::Stmt& s = items->front().stmt;
          s.rhs = leir::make_binary(leir::BinaryOp::Add, s.rhs, leir::make_number(1));
        }
      }
      auto m = reward::measure_step(cx.root, cx.parent, timed,
                                    measure_settings(c, input_seed, c.measure_threads, c.measure_min_time));
      if (!c.peaks_path.empty()) m.peaks = reward::cached_peaks(c.peaks_path, c.measure_threads);
      return m;
    });
  };
  json body = reward::score(ctx, answer, o);
  body["verify_seed"] = verify_seed;
  body["input_seed"] = input_seed;
  return {200, body};
}

}  // namespace

JobReply run_job(const json& job, const JobConfig& config, const Notify& notify) {
  const std::string ep = job.value("endpoint", "");
  const json& req = job["request"];
  uint64_t vseed = job.value("verify_seed", uint64_t{0}), iseed = job.value("input_seed", uint64_t{0});
  try {
    if (!req.is_object()) throw bad_request("the request body must be a JSON object");
    if (ep == "check") return check(req, config);
    if (ep == "verify") return verify_ep(req, config, vseed);
    if (ep == "apply") return apply_ep(req, config);
    if (ep == "lower") return lower_ep(req, config);
    if (ep == "measure") return measure_ep(req, config, iseed, notify);
    if (ep == "score") return score_one(req, config, vseed, iseed, notify);
    return {404, {{"error", "unknown endpoint " + ep}}};
  } catch (const LimitExceeded& e) {
    return {base::http_status(e.kind()), {{"error", e.what()}, {"limit", e.limit}, {"field", e.field}, {"max", e.max}}};
  } catch (const leir::LeirError& e) {
    return {base::http_status(e.kind()), {{"error", e.what()}, {"field", e.file()}, {"line", e.loc().line},
                                          {"col", e.loc().col}, {"message", e.message()}}};
  } catch (const std::bad_alloc&) {
    throw;  // the sandbox reports it with the job's last progress (worker.cc)
  } catch (const std::exception& e) {
    // The status is the error's kind's (base/error.h), never chosen here.
    json body{{"error", e.what()}};
    if (const auto* b = dynamic_cast<const base::Error*>(&e); b && !b->field().empty()) body["field"] = b->field();
    return {base::http_status(base::kind_of(e)), body};
  }
}

JobReply died_reply(const json& job, const std::optional<json>& last, const std::string& reason) {
  if (job.value("endpoint", "") != "score")
    return {base::http_status(base::ErrorKind::Failed),
            {{"error", "processing failed: " + reason}, {"failure", reason}}};
  // Whose fault: a job that died while the answer's kernel ran (the machine held, the last
  // progress says kernel_run) — a crash, a hang past --measure-timeout, memory exhausted — is the
  // answer's: a scored failure at "compiles". Anything else (the job's deadline while verifying,
  // the service out of memory, a death before any progress) is the service's: no score.
  const bool kernel_run = last && last->contains("partial") && (*last)["partial"].value("kernel_run", false);
  json body;
  if (!kernel_run) {
    body = last ? reward::no_score((*last)["done"], (*last).value("of", size_t{1}), reason)
                : reward::no_score(json::array(), 1, reason);
  } else {
    // A scored failure: the answers finished before, the one that died, the rest unscored (0).
    const json& p = *last;
    json answers = p["done"];
    answers.push_back(reward::failed_outcome(p["partial"], reason));
    double total = 0;
    for (const auto& a : answers) total += a["reward"].get<double>();
    size_t n = p.value("of", size_t{1});
    body = {{"parsed", true}, {"list", n > 1}, {"answers", answers}, {"reward", total / double(n)}};
    body["unscored"] = n - answers.size();
  }
  body["verify_seed"] = job.value("verify_seed", uint64_t{0});
  body["input_seed"] = job.value("input_seed", uint64_t{0});
  return {200, body};
}

}  // namespace steptp::serve
