// The endpoints' request semantics (see jobs.h).
#include "apps/serve/jobs.h"

#include <signal.h>

#include <cstring>
#include <set>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

#include "apps/api/api.h"
#include "base/error.h"
#include "base/hash.h"
#include "ir/leir/canonical.h"
#include "ir/leir/diagnostic.h"
#include "ir/leir/printer.h"
#include "ir/leir/program_io.h"
#include "apps/reward/reward.h"
#include "apps/reward/timing.h"
#include "transform/strategy.h"
#include "search/tune/timing_lock.h"

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
  const std::string name = p.name;
  api::CheckRequest q;
  q.program = std::move(p);
  q.identity = true;
  const api::CheckResult r = api::check(std::move(q));
  json errors = json::array();
  for (const auto& e : r.report.errors) errors.push_back({{"line", e.loc.line}, {"col", e.loc.col}, {"message", e.message}});
  json body = {{"valid", r.report.ok()}, {"name", name}, {"errors", errors}};
  if (r.report.ok()) {
    body["nests"] = r.report.summary.nests;
    body["statements"] = r.report.summary.statements;
    body["flops"] = r.report.summary.flops;
    body["hash"] = r.hash;
    body["canonical"] = r.canonical;
  }
  return {200, body};
}

JobReply verify_ep(const json& req, const JobConfig& c, uint64_t fresh_seed) {
  allow_only(req, {"a", "b", "trials", "seed"});
  leir::Program a = program_field(c, req, "a"), b = program_field(c, req, "b");
  api::VerifyRequest v;
  v.a = std::move(a);
  v.b = std::move(b);
  v.options.trials = int(int_field(req, "trials", 3, 1, 64));
  v.options.seed = req.contains("seed") ? uint64_t(int_field(req, "seed", 0, 0, INT64_MAX)) : fresh_seed;
  json body = api::verify_json(api::verify(v));
  body["seed"] = v.options.seed;
  return {200, body};
}

JobReply apply_ep(const json& req, const JobConfig& c) {
  allow_only(req, {"program", "strategy", "site", "params", "samples", "seed"});
  leir::Program p = program_field(c, req, "program");
  std::string name = string_field(req, "strategy");
  const auto* s = strategies::find_strategy(name);
  if (!s) throw bad_request(fmt::format("unknown strategy '{}'", name));
  if (req.contains("params") && !req["params"].is_object()) throw bad_request("field 'params' must be an object");
  // Results unverified (/v1/verify checks one), every site sampled unless one is named.
  api::ApplyRequest a;
  a.program = std::move(p);
  a.strategy = s;
  a.all = true;
  a.verify = false;
  if (req.contains("params")) {
    a.site = int(int_field(req, "site", 0, 0, 1000000));
    a.params = req["params"];
  } else {
    a.seed = uint64_t(int_field(req, "seed", 0, 0, INT64_MAX));
    a.samples = int(int_field(req, "samples", 1, 1, 16));
    if (req.contains("site")) a.site = int(int_field(req, "site", 0, 0, 1000000));
  }
  const bool sampled = !a.params;
  const api::ApplyResult r = api::apply(std::move(a));
  json results = json::array();
  for (size_t i = 0; i < r.results.size() && i < 64; ++i) {
    const auto& c = r.results[i].candidate;
    results.push_back({{"strategy", c.strategy}, {"site", c.site}, {"params", r.results[i].params},
                       {"program", leir::program_to_text(c.program)}, {"hash", base::hex64(leir::program_hash(c.program))}});
  }
  if (!sampled) return {200, {{"results", results}}};
  return {200, {{"results", results}, {"sites", r.site_count}}};
}

JobReply lower_ep(const json& req, const JobConfig& c) {
  allow_only(req, {"program", "target"});
  leir::Program p = program_field(c, req, "program");
  std::string target = req.contains("target") ? string_field(req, "target") : "cpu";
  const auto t = api::lower_target(target);
  if (!t) throw bad_request("field 'target' must be one of cpu, cuda, tir");
  api::LowerRequest l;
  l.program = std::move(p);
  l.target = *t;
  std::string src;
  try {
    src = api::lower(l);
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
  api::MeasureRequest m;
  m.program = program_field(c, req, "program");
  if (req.contains("against")) m.baseline = program_field(c, req, "against");
  int threads = int(int_field(req, "threads", c.measure_threads, 1, std::max(1u, std::thread::hardware_concurrency())));
  double min_time = number_field(req, "min_time", c.measure_min_time, 0.001, 2.0);
  m.settings = measure_settings(c, input_seed, threads, min_time);
  api::MeasureResult r;
  try {
    r = api::measure(m, [&](const std::function<void()>& timed) { with_machine(c, notify, timed); });
  } catch (const tune::LockTimeout& e) {
    // Not the program's fault: an infrastructure failure, for the client to retry later.
    return {503, {{"error", fmt::format("the machine is busy ({}); retry later", e.what())}, {"failure", "machine busy"}, {"failure_kind", "machine_busy"}}};
  }
  if (!r.signature_difference.empty())
    return {base::http_status(base::ErrorKind::Invalid),
            {{"error", "signatures differ: " + r.signature_difference}, {"field", "against"}}};
  const reward::MeasuredPair& pair = r.pair;
  if (!pair.ok)
    return {base::http_status(base::ErrorKind::Failed), {{"error", pair.error}, {"compiled", pair.compiled}}};
  json body = {{"program", reward::to_json(pair.cmp.b)}, {"threads", threads}, {"input_seed", input_seed}};
  if (m.baseline) {
    body["against"] = reward::to_json(pair.cmp.a);
    body["speedup"] = pair.cmp.speedup;
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
  api::ScoreRequest s;
  s.answer = answer;
  s.context = reward::parse_context(required(req, "reward_context"));
  check_program_limits(s.context.root, c.limits, "reward_context.root_program");
  check_program_limits(s.context.parent, c.limits, "reward_context.parent_program");
  s.verify_trials = int(int_field(req, "verify_trials", 3, 1, 16));
  s.verify_seed = verify_seed;
  s.measure = bool_field(req, "measure", true);
  s.settings = measure_settings(c, input_seed, c.measure_threads, c.measure_min_time);
  s.peaks_path = c.peaks_path;
  api::ScoreHooks h;
  json last_progress;
  h.admissible = [&](const leir::Program& cand) -> std::string {
    try {
      check_program_limits(cand, c.limits, "answer");
      return "";
    } catch (const LimitExceeded& e) {
      return e.what();
    }
  };
  h.on_progress = [&](const json& p) {
    last_progress = p;
    notify(Notice::Progress, p);
  };
  h.hold = [&](const std::function<void()>& timed) { with_machine(c, notify, timed); };
  h.before_kernel_run = [&](leir::Program& timed) {
    // The machine is held: from here a death of the job is the answer's kernel run (died_reply).
    json running = last_progress;
    running["partial"]["kernel_run"] = true;
    notify(Notice::Progress, running);
    if (!fault.empty() && fault != "wrong_output") inject(fault);
    if (fault == "wrong_output") {  // the first statement stores one more than the program says
      std::vector<leir::Item>* items = &timed.body;
      while (!items->empty() && items->front().is_nest()) items = &items->front().nest.body;
      if (!items->empty()) {
        leir::Stmt& st = items->front().stmt;
        st.rhs = leir::make_binary(leir::BinaryOp::Add, st.rhs, leir::make_number(1));
      }
    }
  };
  return {200, api::score(s, h)};
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
