#!/usr/bin/python3
"""The panel benchmark of `steptp tune` (issue 13; docs/benchmarks.md has the protocol and tables).

One run on one machine: emits a panel of workloads (f32, fixed hyper-parameters), tunes each with
`steptp tune --trials N`, tunes a subset with TVM MetaSchedule (bench/baselines/metaschedule.py),
then times every contender in interleaved rounds -- per round and workload: naive and best-found
(each `steptp bench` alone), PyTorch eager (bench/baselines/torch_eager.py),
MetaSchedule's best, and for the 512^3 GEMM OpenBLAS sgemm (build/bench/steptp_sgemm), the order
reversed every other round -- and reports each contender's median over the rounds:
  1. best-found vs naive per workload and the geomean;
  2. vs PyTorch eager: fast_0 (share of workloads where ours is correct and at least as fast),
     fast_1 (... strictly faster), geomean of torch time / ours;
  3. vs MetaSchedule: both best times, the trials each needed to reach the other's best, each
     side's tuning wall time;
  4. GEMM 512^3 best-found vs OpenBLAS sgemm (sgemm time / ours);
  5. the tuner's cost-model ranking quality (Kendall tau, top-k recall) vs the analytic model.
Prints a table, writes OUT/panel.json. The full panel is heavy (about 1-2 h on 2 cores);
--quick runs two small workloads with a few trials (the default test suite does).

Timing lock: the run holds /tmp/steptp-timing.lock ($STEPTP_TIMING_LOCK) from start to end, so no
other measurement on this machine overlaps it; its children get a private lock file. Do not wrap
it in `flock` on the same file (use --no-lock there).
"""
import argparse
import fcntl
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SKIP = 77  # ctest's SKIP_RETURN_CODE: a required tool is missing

# (label, workload, hyper-parameters, in the MetaSchedule subset, MetaSchedule trials factor)
# Shapes: naive programs of roughly 1-50 ms on one core (issue 13's "bench" size), every family of
# both levels. The two GEMMs get 4x the trials on both sides (256 at the default 64). The
# MetaSchedule subset (the first 12) holds level-2 chains MetaSchedule can schedule: the gemm chains
# update their matmul result in place (bias add; its tiling rules need one writer per buffer), and
# chains joining two independent nests (conv2d_conv2d_padding, conv1d_conv1d) fail its
# reverse-compute-at rule at design-space generation.
PANEL = [
    ("gemm_512", "square_matmul", {"n": 512}, True),
    ("gemm_1024", "square_matmul", {"n": 1024}, True),
    ("batched_matmul", "batched_matmul", {"batch": 8, "m": 128, "k": 128, "n": 128}, True),
    ("conv2d", "conv2d", {"batch": 1, "in_channels": 16, "out_channels": 32, "size": 64, "kernel": 3}, True),
    ("depthwise_conv2d", "depthwise_conv2d",
     {"batch": 4, "channels": 32, "size": 128, "kernel": 3, "stride": 1, "padding": 1}, True),
    ("softmax", "softmax", {"batch": 64, "dim": 4096}, True),
    ("layer_norm", "layer_norm", {"batch": 16, "features": 64, "dim": 256}, True),
    ("sum_reduction", "sum_reduction", {"batch": 128, "dim1": 256, "dim2": 256, "dim": 1}, True),
    ("Conv2d_ReLU_BiasAdd", "Conv2d_ReLU_BiasAdd",
     {"batch": 4, "in_channels": 8, "out_channels": 16, "height": 64, "width": 64, "kernel": 3}, True),
    ("BMM_Scale_Softmax", "BMM_Scale_Softmax", {"batch": 8, "rows": 128, "inner": 128, "cols": 128}, True),
    ("Matmul3D_Tanh_Sum", "Matmul3D_Tanh_Sum", {"batch": 8, "rows": 128, "inner": 128, "cols": 128}, True),
    ("BMM_LayerNorm_GELU", "BMM_LayerNorm_GELU", {"batch": 8, "rows": 128, "inner": 128, "cols": 128}, True),
    ("gelu", "gelu", {"batch": 16, "dim": 16384}, False),
    ("relu", "relu", {"batch": 256, "dim": 16384}, False),
    ("mse_loss", "mse_loss", {"batch": 128, "dim": 4096}, False),
    ("cross_entropy_loss", "cross_entropy_loss", {"batch": 4096, "classes": 128}, False),
    ("matmul_transposed_b", "matmul_transposed_b", {"m": 256, "k": 256, "n": 256}, False),
    ("matrix_vector_multiplication", "matrix_vector_multiplication", {"m": 1024, "k": 16384}, False),
    ("rms_norm", "rms_norm", {"batch": 16, "features": 64, "h": 64, "w": 64}, False),
    ("adam_step", "adam_step", {"rows": 1024, "cols": 1024, "step": 10}, False),
    ("lerp", "lerp", {"rows": 1024, "cols": 1024}, False),
    ("max_pool_2d", "max_pool_2d",
     {"batch": 4, "channels": 32, "h": 128, "w": 128, "kernel": 3, "stride": 2, "padding": 1, "dilation": 1}, False),
    ("argmax", "argmax", {"batch": 16, "dim1": 256, "dim2": 256, "dim": 1}, False),
    ("gru_cell", "gru_cell", {"batch": 32, "input_size": 256, "hidden": 256}, False),
    ("cumsum", "cumsum", {"batch": 128, "length": 4000}, False),
    ("log_softmax", "log_softmax", {"batch": 16, "dim": 16384}, False),
    ("conv1d", "conv1d", {"batch": 16, "in_channels": 16, "out_channels": 32, "size": 512, "kernel": 3}, False),
    ("Gemm_ReLU_Divide", "Gemm_ReLU_Divide", {"batch": 128, "in_features": 512, "out_features": 256}, False),
    ("Gemm_LayerNorm_GELU_Scaling", "Gemm_LayerNorm_GELU_Scaling",
     {"batch": 128, "in_features": 512, "out_features": 256}, False),
    ("Gemm_Sigmoid_Sum_LogSumExp", "Gemm_Sigmoid_Sum_LogSumExp",
     {"batch": 128, "in_features": 512, "out_features": 256}, False),
    ("MHA", "MHA", {"batch": 1, "seq_len": 64, "embed": 256, "heads": 4}, False),
    ("mul_add", "mul_add", {"batch": 64, "rows": 256, "cols": 256}, False),
    ("conv2d_conv2d_padding", "conv2d_conv2d_padding",
     {"batch": 2, "in_channels": 8, "out_channels": 16, "height": 32, "width": 32, "kernel_h": 3, "kernel_w": 3,
      "padding": 1}, False),
]
# --quick: two small workloads, MetaSchedule on the GEMM only.
QUICK = [
    ("gemm_64", "square_matmul", {"n": 64}, True),
    ("softmax_small", "softmax", {"batch": 8, "dim": 512}, False),
]
GEMM_LABELS = {"gemm_512", "gemm_1024"}
SGEMM_LABELS = {"gemm_512", "gemm_64"}  # OpenBLAS sgemm at the same n


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def geomean(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def run_json(cmd, env=None, timeout=None):
    """Runs a command that prints one JSON object as its last stdout line."""
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout, check=False)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:3])}... exit {r.returncode}: {(r.stderr or r.stdout).strip()[-800:]}")
    return json.loads(r.stdout.strip().splitlines()[-1]), r.stderr


def openblas_coretype():
    """The OpenBLAS kernel family this CPU's flags support: Debian's 0.3.21 falls back to Prescott
    on CPUs it does not know (e.g. AVX-512 VMs), which is no baseline."""
    with open("/proc/cpuinfo", encoding="utf-8") as f:
        m = re.search(r"^flags\s*:\s*(.*)$", f.read(), re.M)
    flags = set(m.group(1).split()) if m else set()
    if {"avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512cd"} <= flags:
        return "SkylakeX"
    if {"avx2", "fma"} <= flags:
        return "Haswell"
    return None


def same_program(a, b):
    """Whether two program files (`steptp workloads emit` / `tune` best.json) hold the same LEIR."""
    with open(a) as fa, open(b) as fb:
        return json.load(fa).get("leir") == json.load(fb).get("leir")


class Panel:
    def __init__(self, a):
        self.a = a
        self.out = a.out
        # Every contender is timed in a process of its own, so no idle OpenMP pool spins beside
        # another one: OpenMP's default wait policy stays, as users run it (a passive policy made
        # every parallel region of ours and PyTorch's pay a wake-up; 2026-12-04 panel).
        self.env = dict(os.environ, STEPTP_TIMING_LOCK=os.path.join(self.out, "child-timing.lock"))
        core = openblas_coretype()
        if core and "OPENBLAS_CORETYPE" not in os.environ:
            self.env["OPENBLAS_CORETYPE"] = core
        self.notes = []
        self.rows = {}

    # ---- availability of the contenders -------------------------------------------------------
    def check_tools(self):
        a = self.a
        help_text = subprocess.run([a.steptp, "--help"], capture_output=True, text=True, check=False).stdout
        if not re.search(r"^\s+tune\b", help_text, re.M):
            log(f"tune_panel: {a.steptp} has no `tune` subcommand (issue 13's tuner is not built); nothing to compare")
            sys.exit(SKIP)
        self.torch = "torch" not in a.skip and os.path.exists(a.torch_eager)
        if "torch" not in a.skip and not self.torch:
            self.notes.append(f"PyTorch eager skipped: {a.torch_eager} not found")
        self.ms = "metaschedule" not in a.skip and os.access(a.bench_python, os.X_OK)
        if "metaschedule" not in a.skip and not self.ms:
            self.notes.append(f"MetaSchedule skipped: {a.bench_python} not found (run scripts/deps-bench.sh)")
        self.sgemm = "sgemm" not in a.skip and os.access(a.sgemm, os.X_OK)
        if "sgemm" not in a.skip and not self.sgemm:
            self.notes.append(f"OpenBLAS sgemm skipped: {a.sgemm} not found (build steptp_sgemm)")
        self.pingpong = os.access(a.pingpong, os.X_OK)
        if not self.pingpong:
            self.notes.append(f"core ping-pong not recorded: {a.pingpong} not found (build steptp_core_pingpong)")

    # ---- phases -------------------------------------------------------------------------------
    def emit(self, label, name, hyper):
        path = os.path.join(self.out, "programs", label + ".json")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        cmd = [self.a.steptp, "workloads", "emit", name, "--f32", "--size", self.a.size, "--seed", str(self.a.seed)]
        for k, v in hyper.items():
            cmd += ["--set", f"{k}={v}"]
        r = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if r.returncode != 0:
            raise RuntimeError(f"emit {name}: {r.stderr.strip()}")
        with open(path, "w", encoding="utf-8") as f:
            f.write(r.stdout)
        return path

    def tune(self, row):
        trials = self.a.trials * (self.a.gemm_factor if row["label"] in GEMM_LABELS else 1)
        d = os.path.join(self.out, "tune", row["label"])
        cmd = [self.a.steptp, "tune", row["program"], "--trials", str(trials), "--threads", str(self.a.threads),
               "--seed", str(self.a.seed), "--out", d, "--json"]
        t0 = time.perf_counter()
        j, _ = run_json(cmd, env=self.env)
        row["ours"] = {"trials": trials, "wall_s": j.get("wall_s", time.perf_counter() - t0),
                       "trials_measured": j.get("trials_measured"), "best_time_s": j.get("best_time_s"),
                       "speedup_tuning": j.get("speedup"), "cost_model": j.get("cost_model"),
                       "analytic_model": (j.get("cost_model") or {}).get("analytic"), "machine": j.get("machine"),
                       "roofline": j.get("roofline"), "trial_ms": our_trial_times(j)}
        row["best"] = os.path.join(d, "best.json")

    def metaschedule(self, row):
        trials = self.a.ms_trials * (self.a.gemm_factor if row["label"] in GEMM_LABELS else 1)
        d = os.path.join(self.out, "metaschedule", row["label"])
        cmd = [self.a.bench_python, os.path.join(ROOT, "bench", "baselines", "metaschedule.py"), "tune", row["program"],
               "--steptp", self.a.steptp, "--trials", str(trials), "--threads", str(self.a.threads),
               "--seed", str(self.a.seed), "--out", d, "--json"]
        j, _ = run_json(cmd, env=self.env)
        row["metaschedule"] = {k: j[k] for k in ("trials", "trial_ms", "best_ms_tuning", "wall_s", "target",
                                                 "verified", "max_rel_err", "versions")}
        row["ms_dir"] = d

    def time_round(self, rnd):
        order = list(self.rows.values())
        for row in order:
            if "error" in row:
                continue
            jobs = [("steptp", lambda r: self.time_steptp(r, rnd))]
            if self.torch:
                jobs.append(("torch", self.time_torch))
            if row.get("ms_dir"):
                jobs.append(("metaschedule", self.time_ms))
            if self.sgemm and row["label"] in SGEMM_LABELS:
                jobs.append(("sgemm", self.time_sgemm))
            if rnd % 2:
                jobs.reverse()
            self.record_pingpong(row)
            for what, fn in jobs:
                try:
                    fn(row)
                except (RuntimeError, subprocess.TimeoutExpired, ValueError) as e:
                    row.setdefault("timing_errors", []).append(f"round {rnd + 1} {what}: {e}")

    def record_pingpong(self, row):
        # Where the host has put the two CPUs when this row's round began (bench/baselines/
        # core_pingpong.cc): a two-thread kernel whose threads exchange data runs up to 1.5x slower
        # while they share no L3 (docs/tune.md, "The product parallel over the copy's columns").
        if not self.pingpong:
            return
        try:
            j, _ = run_json([self.a.pingpong], env=self.env)
            row.setdefault("pingpong_ns", []).append(j["one_way_ns"])
        except (RuntimeError, subprocess.TimeoutExpired, ValueError, KeyError) as e:
            row.setdefault("timing_errors", []).append(f"core ping-pong: {e}")

    def time_steptp(self, row, rnd):
        # Naive and best each alone, in a process of its own, as every other contender is timed:
        # interleaved run by run with the naive program (`bench --against`), half of the best's
        # runs followed a naive run of up to 140 ms, which cost a small kernel 4-18 % on 2 threads
        # and 6-25 % on one (batched matmul: 0.161-0.181 ms interleaved vs 0.153-0.161 ms alone,
        # same binary and session). The pair's order alternates over the rounds like the contenders'
        # (by the round, so a failed run does not shift it).
        sides = [("naive", row["program"]), ("best", row["best"])]
        if rnd % 2:
            sides.reverse()
        for key, program in sides:
            j, _ = run_json([self.a.steptp, "bench", program, "--threads", str(self.a.threads), "--min-time",
                             str(self.a.min_time), "--json"], env=self.env)
            row["times"].setdefault(key, []).append(j["median_ms"])

    def time_torch(self, row):
        cmd = ["/usr/bin/python3", self.a.torch_eager, row["name"], "--dtype", "f32", "--size", self.a.size,
               "--seed", str(self.a.seed), "--threads", str(self.a.threads), "--min-time", str(self.a.min_time),
               "--steptp", self.a.steptp]
        for k, v in row["hyper"].items():
            cmd += ["--set", f"{k}={v}"]
        j, _ = run_json(cmd, env=self.env)
        row["times"].setdefault("torch", []).append(j["median_ms"])
        row["torch_openblas"] = j.get("openblas_config")

    def time_ms(self, row):
        j, _ = run_json([self.a.bench_python, os.path.join(ROOT, "bench", "baselines", "metaschedule.py"), "time",
                         row["ms_dir"], "--threads", str(self.a.threads), "--min-time", str(self.a.min_time),
                         "--json"], env=self.env)
        row["times"].setdefault("metaschedule", []).append(j["median_ms"])

    def time_sgemm(self, row):
        n = str(row["hyper"]["n"])
        j, _ = run_json([self.a.sgemm, "--m", n, "--n", n, "--k", n, "--threads", str(self.a.threads), "--min-time",
                         str(self.a.min_time), "--json"], env=self.env)
        row["times"].setdefault("sgemm", []).append(j["median_ms"])
        row["sgemm_config"] = j["config"]

    def run(self):
        a = self.a
        panel = QUICK if a.quick else PANEL
        if a.workloads:
            wanted = set(a.workloads.split(","))
            unknown = wanted - {p[0] for p in PANEL + QUICK}
            if unknown:
                raise SystemExit(f"tune_panel: unknown panel labels: {', '.join(sorted(unknown))}")
            panel = [p for p in PANEL + QUICK if p[0] in wanted]
        started = time.time()
        for label, name, hyper, in_ms in panel:
            row = {"label": label, "name": name, "hyper": hyper, "times": {}}
            self.rows[label] = row
            try:
                row["program"] = self.emit(label, name, hyper)
                log(f"[tune] {label}")
                self.tune(row)
            except (RuntimeError, ValueError) as e:
                row["error"] = str(e)
                log(f"  {label}: {e}")
                continue
            if in_ms and self.ms:
                log(f"[metaschedule] {label}")
                try:
                    self.metaschedule(row)
                except (RuntimeError, ValueError, KeyError) as e:
                    row["metaschedule_error"] = str(e)
                    log(f"  {label}: MetaSchedule: {e}")
        for rnd in range(a.rounds):
            log(f"[timing] round {rnd + 1}/{a.rounds}")
            self.time_round(rnd)
        return self.report(time.time() - started)

    # ---- report -------------------------------------------------------------------------------
    def report(self, wall):
        rows = []
        for row in self.rows.values():
            times = dict(row["times"])
            if times.get("naive") and times.get("best") and same_program(row["program"], row["best"]):
                # The tuner kept its root: both slots time one program, so their ratio would be the
                # noise between processes (run 4: sum_reduction's 0.79 "x naive" for one program);
                # one pooled median stands for both.
                times["naive"] = times["best"] = times["naive"] + times["best"]
                row["best_is_root"] = True
            med = {k: statistics.median(v) for k, v in times.items() if v}
            row["median_ms"] = med
            if "best" in med and "naive" in med:
                row["speedup_vs_naive"] = med["naive"] / med["best"]
            if "best" in med and "torch" in med:
                row["torch_over_ours"] = med["torch"] / med["best"]
            if "best" in med and "sgemm" in med:
                row["sgemm_over_ours"] = med["sgemm"] / med["best"]
            # The share of the copy bandwidth our best reaches: the tuner's copy of the program's
            # unavoidable bytes (docs/tune.md, "Roofline") over the best program's panel time.
            roof = (row.get("ours") or {}).get("roofline")
            if "best" in med and roof and roof.get("copy_ms"):
                row["copy_share"] = roof["copy_ms"] / med["best"]
            ms, ours = row.get("metaschedule"), row.get("ours")
            if ms and ours and "best" in med and "metaschedule" in med:
                row["ms_over_ours"] = med["metaschedule"] / med["best"]
                row["ms_trials_to_reach_ours"] = trials_to_reach(ms["trial_ms"], med["best"])
                row["our_trials_to_reach_ms"] = trials_to_reach(ours["trial_ms"], med["metaschedule"])
            rows.append(row)
        ok = [r for r in rows if "speedup_vs_naive" in r]
        torch_rows = [r for r in rows if "torch_over_ours" in r]
        ms_rows = [r for r in rows if "ms_over_ours" in r]
        summary = {
            "workloads": len(rows), "tuned": len(ok),
            "geomean_vs_naive": geomean([r["speedup_vs_naive"] for r in ok]),
            "torch": {"n": len(torch_rows),
                      "fast_0": sum(r["torch_over_ours"] >= 1 for r in torch_rows) / len(torch_rows) if torch_rows else None,
                      "fast_1": sum(r["torch_over_ours"] > 1 for r in torch_rows) / len(torch_rows) if torch_rows else None,
                      "geomean_torch_over_ours": geomean([r["torch_over_ours"] for r in torch_rows])},
            "metaschedule": {"n": len(ms_rows), "ours_at_least_as_fast": sum(r["ms_over_ours"] >= 1 for r in ms_rows),
                             "geomean_ms_over_ours": geomean([r["ms_over_ours"] for r in ms_rows])},
            "sgemm_over_ours": next((r["sgemm_over_ours"] for r in rows if "sgemm_over_ours" in r), None),
            "cost_model": mean_fields([r["ours"].get("cost_model") for r in rows if r.get("ours")]),
            "analytic_model": mean_fields([r["ours"].get("analytic_model") for r in rows if r.get("ours")]),
            "pingpong": pingpong_summary(rows),
        }
        settings = {k: sorted(v) if isinstance(v, set) else v for k, v in vars(self.a).items()}
        result = {"settings": settings, "environment": environment(self.env),
                  "notes": self.notes, "wall_s": wall, "summary": summary, "rows": rows}
        with open(os.path.join(self.out, "panel.json"), "w", encoding="utf-8") as f:
            json.dump(result, f, indent=1)
        print_table(result)
        return result


SHARED_L3_NS = 100  # one-way ping-pong below this: the two CPUs share an L3 (25-30 ns measured, else >= 150)


def pingpong_summary(rows):
    """How many of the row-rounds began with the two CPUs on one L3, and the latencies' range."""
    ns = [x for r in rows for x in r.get("pingpong_ns", [])]
    if not ns:
        return None
    return {"row_rounds": len(ns), "shared_l3": sum(x < SHARED_L3_NS for x in ns), "min_ns": min(ns),
            "median_ns": statistics.median(ns), "max_ns": max(ns)}


def mean_fields(dicts):
    """Mean over workloads of every numeric field of the tuner's ranking-quality reports."""
    dicts = [d for d in dicts if isinstance(d, dict)]
    keys = sorted({k for d in dicts for k, v in d.items() if isinstance(v, (int, float))})
    return {k: statistics.mean(d[k] for d in dicts if isinstance(d.get(k), (int, float))) for k in keys}


def our_trial_times(tune_json):
    """Every candidate `steptp tune` measured, in order (ms; None = failed): its "history"."""
    history = tune_json.get("history")
    if not isinstance(history, list):
        return None
    return [h["time_s"] * 1e3 if h.get("ok") and h.get("time_s") is not None else None for h in history]


def trials_to_reach(trial_ms, target_ms):
    """1-based index of the first trial at least as fast as target_ms; None if none (or unknown)."""
    if not trial_ms:
        return None
    for i, t in enumerate(trial_ms):
        if t is not None and t <= target_ms:
            return i + 1
    return None


def environment(env):
    with open("/proc/cpuinfo", encoding="utf-8") as f:
        info = f.read()
    model = re.search(r"^model name\s*:\s*(.*)$", info, re.M)
    flags = re.search(r"^flags\s*:\s*(.*)$", info, re.M)
    flags = set(flags.group(1).split()) if flags else set()
    isa = "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "SSE"
    return {"cpu": model.group(1) if model else "?", "isa": isa, "cores": os.cpu_count(),
            "OPENBLAS_CORETYPE": env.get("OPENBLAS_CORETYPE"), "OMP_WAIT_POLICY": env.get("OMP_WAIT_POLICY"),
            "time": time.strftime("%Y-%m-%d %H:%M:%S %Z")}


def fmt(x, spec=".3f"):
    return "-" if x is None else format(x, spec)


def print_table(res):
    rows, s = res["rows"], res["summary"]
    print(f"# steptp tune panel: {s['workloads']} workloads, {res['settings']['threads']} threads, "
          f"{res['environment']['cpu']} ({res['environment']['isa']}), {res['wall_s'] / 60:.1f} min")
    for n in res["notes"]:
        print(f"# note: {n}")
    print(f"{'workload':34} {'naive ms':>10} {'best ms':>10} {'x naive':>8} {'torch ms':>10} {'torch/ours':>10} "
          f"{'MS ms':>10} {'MS/ours':>8} {'copy %':>6} {'trials':>6} {'MS reach':>8} {'we reach':>8} {'tune s':>7} "
          f"{'MS s':>7}")
    for r in rows:
        m = r.get("median_ms", {})
        if "error" in r:
            print(f"{r['label']:34} error: {r['error'][:120]}")
            continue
        ms = r.get("metaschedule") or {}
        print(f"{r['label']:34} {fmt(m.get('naive'), '.4f'):>10} {fmt(m.get('best'), '.4f'):>10} "
              f"{fmt(r.get('speedup_vs_naive'), '.2f'):>8} {fmt(m.get('torch'), '.4f'):>10} "
              f"{fmt(r.get('torch_over_ours'), '.2f'):>10} {fmt(m.get('metaschedule'), '.4f'):>10} "
              f"{fmt(r.get('ms_over_ours'), '.2f'):>8} "
              f"{fmt(100 * r['copy_share'] if 'copy_share' in r else None, '.0f'):>6} {r['ours']['trials']:>6} "
              f"{fmt(r.get('ms_trials_to_reach_ours'), 'd'):>8} {fmt(r.get('our_trials_to_reach_ms'), 'd'):>8} "
              f"{fmt(r['ours']['wall_s'], '.0f'):>7} {fmt(ms.get('wall_s'), '.0f'):>7}")
        for e in r.get("timing_errors", []) + ([r["metaschedule_error"]] if "metaschedule_error" in r else []):
            print(f"{'':34} ! {e[:160]}".replace("\n", " "))
    t, msum = s["torch"], s["metaschedule"]
    print(f"1. vs naive: geomean {fmt(s['geomean_vs_naive'], '.2f')}x over {s['tuned']} tuned workloads")
    print(f"2. vs PyTorch eager ({t['n']}): fast_0 {fmt(t['fast_0'], '.2f')}, fast_1 {fmt(t['fast_1'], '.2f')}, "
          f"geomean torch/ours {fmt(t['geomean_torch_over_ours'], '.2f')}")
    print(f"3. vs MetaSchedule ({msum['n']}): ours at least as fast on {msum['ours_at_least_as_fast']}, "
          f"geomean MS/ours {fmt(msum['geomean_ms_over_ours'], '.2f')}")
    sg = next((r for r in rows if "sgemm_over_ours" in r), None)
    print(f"4. GEMM vs OpenBLAS sgemm{' (' + sg['label'] + ')' if sg else ''}: sgemm/ours {fmt(s['sgemm_over_ours'], '.2f')}"
          + (f" ({sg['median_ms']['sgemm']:.4f} ms, {sg['sgemm_config']})" if sg else ""))
    for key, title in (("cost_model", "5. cost model (learned)"), ("analytic_model", "   analytic model")):
        print(f"{title}: " + (", ".join(f"{k} {v:.3f}" for k, v in s[key].items()) or "-"))
    pp = s.get("pingpong")
    if pp:
        print(f"6. core ping-pong: {pp['shared_l3']} of {pp['row_rounds']} row-rounds began with the two CPUs on one "
              f"L3 (< {SHARED_L3_NS} ns one way; {pp['min_ns']:.0f}-{pp['max_ns']:.0f} ns, median {pp['median_ns']:.0f})")


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steptp", default=os.path.join(ROOT, "build", "src", "steptp"))
    p.add_argument("--sgemm", default=os.path.join(ROOT, "build", "bench", "steptp_sgemm"))
    p.add_argument("--pingpong", default=os.path.join(ROOT, "build", "bench", "steptp_core_pingpong"),
                   help="the core ping-pong probe recorded beside each row's round (bench/baselines/core_pingpong.cc)")
    p.add_argument("--torch-eager", default=os.path.join(ROOT, "bench", "baselines", "torch_eager.py"))
    p.add_argument("--bench-python", default=os.path.join(ROOT, ".venv-bench", "bin", "python3"),
                   help="python3 of .venv-bench (MetaSchedule)")
    p.add_argument("--out", help="output folder (default: a new temporary folder)")
    p.add_argument("--quick", action="store_true", help="two small workloads, few trials (smoke run)")
    p.add_argument("--workloads", help="comma-separated panel labels to run (see PANEL in this file)")
    p.add_argument("--skip", default="", help="comma-separated contenders to leave out: torch,metaschedule,sgemm")
    p.add_argument("--trials", type=int, help="steptp tune trials per workload (default 64; --quick 4)")
    p.add_argument("--ms-trials", type=int, help="MetaSchedule trials per workload (default 64; --quick 4)")
    p.add_argument("--gemm-factor", type=int, default=4, help="trial multiplier on the two GEMMs (default 4)")
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--rounds", type=int, help="interleaved timing rounds (default 3; --quick 2)")
    p.add_argument("--min-time", type=float, help="seconds per timing call (default 0.5; --quick 0.05)")
    p.add_argument("--size", default="default", help="size class of hyper-parameters the panel leaves open")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-lock", action="store_true", help="do not take the machine's timing lock")
    a = p.parse_args(argv)
    quick = a.quick
    a.trials = a.trials or (4 if quick else 64)
    a.ms_trials = a.ms_trials or (4 if quick else 64)
    a.rounds = a.rounds or (2 if quick else 3)
    a.min_time = a.min_time if a.min_time is not None else (0.05 if quick else 0.5)
    if quick:
        a.gemm_factor = 1
    a.skip = set(filter(None, a.skip.split(",")))
    if a.skip - {"torch", "metaschedule", "sgemm"}:
        p.error(f"--skip: unknown contenders {sorted(a.skip - {'torch', 'metaschedule', 'sgemm'})}")
    if min(a.trials, a.ms_trials, a.rounds, a.threads, a.gemm_factor) < 1 or a.min_time < 0:
        p.error("--trials, --ms-trials, --rounds, --threads, --gemm-factor must be positive")
    for tool in ("steptp",):
        if not os.access(getattr(a, tool), os.X_OK):
            p.error(f"--{tool}: {getattr(a, tool)} is not an executable (build with scripts/build.sh)")
    a.out = os.path.abspath(a.out or tempfile.mkdtemp(prefix="steptp-panel-"))
    return a


def main(argv=None):
    a = parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    panel = Panel(a)
    panel.check_tools()  # before waiting on the lock: a missing tool ends the run at once
    lock = None
    if not a.no_lock:
        lock = open(os.environ.get("STEPTP_TIMING_LOCK") or "/tmp/steptp-timing.lock", "a", encoding="utf-8")
        fcntl.flock(lock, fcntl.LOCK_EX)
    try:
        panel.run()
    finally:
        if lock:
            lock.close()
    log(f"tune_panel: wrote {a.out}/panel.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
