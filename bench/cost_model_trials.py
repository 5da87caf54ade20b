#!/usr/bin/python3
"""Trials to reach the per-root model's best, with and without a pre-trained cost model (issue 39;
docs/tune.md, "A cost model that transfers").

For each workload (bench shapes as bench/tune_panel.py's PANEL emits them) and seed, `steptp tune
--trials N --no-tasks` runs twice: without (`base`: the analytic prior, then the per-root model)
and with `--cost-model MODEL` (`cm`). Each run's incumbents are read from its result.json history
(the tuner's own rule: a measured trial that clears the noise and beats the best so far) and their
programs from the candidates its store keeps (history "hash" -> the store's `candidates` table).

The tuner's speedups come from different sessions (and, on a loaded machine, different loads), so
they are not compared across runs. Instead every incumbent of both runs of a seed is timed side by
side against one reference -- `base`'s last incumbent (its best), or the root when it has none --
with `steptp bench REF --against P` (one interleaved session per pair), all pairs of a seed back to
back in `--rounds` rounds of alternating order, each pair's speedup the median over rounds. The
baseline's best is the best of `base`'s incumbents by that timing; a run reaches it at the trial of
its first incumbent within `--within` (5 %) of it. Medians per workload over the seeds.

  bench/cost_model_trials.py --model M.json --out DIR [--workloads conv2d,softmax] [--seeds 1,2,3]
      [--trials 32] [--threads 2] [--rounds 2] [--min-time 0.2] [--steptp build/src/steptp]

Resumable: a run whose result.json exists is not tuned again, a timed pair in DIR/W/timing.json is
not timed again. Prints a table per workload and writes DIR/report.json.
"""
import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from tune_panel import PANEL  # noqa: E402  (the panel's shapes: one definition)

ARMS = ("base", "cm")


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:3])}... exit {r.returncode}: {(r.stderr or r.stdout).strip()[-800:]}")
    return r.stdout


def emit(a, name, folder):
    """The workload's program at the panel's shape (tune_panel.py emit: size "default", seed 0)."""
    rows = [p for p in PANEL if p[0] == name]
    if not rows:
        raise SystemExit(f"{name}: not a label of bench/tune_panel.py's PANEL")
    _, workload, hyper, _ = rows[0]
    path = os.path.join(folder, "program.json")
    if not os.path.exists(path):
        cmd = [a.steptp, "workloads", "emit", workload, "--f32", "--size", "default", "--seed", "0"]
        for k, v in hyper.items():
            cmd += ["--set", f"{k}={v}"]
        with open(path, "w", encoding="utf-8") as f:
            f.write(run(cmd))
    return path


def tune(a, program, out, seed, model):
    if os.path.exists(os.path.join(out, "result.json")):
        return
    cmd = [a.steptp, "tune", program, "--trials", str(a.trials), "--threads", str(a.threads), "--seed", str(seed),
           "--no-tasks", "--quiet", "--out", out]
    if model:
        cmd += ["--cost-model", model]
    log(f"  tune {os.path.relpath(out, a.out)}")
    run(cmd)


def incumbents(out):
    """[(trial (1-based), hash)] where the run's best so far changed, and hash -> program text."""
    with open(os.path.join(out, "result.json"), encoding="utf-8") as f:
        history = json.load(f)["history"]
    best, changes = 1.0, []
    for i, h in enumerate(history):
        if h.get("ok") and h.get("faster") and h["speedup"] > best:
            best = h["speedup"]
            changes.append((i + 1, h["hash"]))
    db = sqlite3.connect(os.path.join(out, "measurements.sqlite"))
    texts = {}
    for (payload,) in db.execute("SELECT payload FROM candidates"):
        row = json.loads(payload)
        texts[row["hash"]] = row["program"]
    db.close()
    return changes, texts


def bench(a, ref, other):
    out = run([a.steptp, "bench", ref, "--against", other, "--threads", str(a.threads), "--min-time",
               str(a.min_time), "--json"])
    return json.loads(out.strip().splitlines()[-1])["speedup"]


def trials_to(changes, q, target):
    for trial, h in changes:
        if q[h] >= target:
            return trial
    return None


def reach_text(trial, trials):
    return f"> {trials}" if trial is None else str(trial)


def ratio_text(seed_row):
    if seed_row["best_cm_vs_ref"] is None:
        return "-"
    return f"{seed_row['best_cm_vs_ref'] / seed_row['best_base_vs_ref']:.3f}"


def workload_report(a, name):
    folder = os.path.join(a.out, name)
    os.makedirs(folder, exist_ok=True)
    program = emit(a, name, folder)
    timing_path = os.path.join(folder, "timing.json")
    timing = {}
    if os.path.exists(timing_path):
        with open(timing_path, encoding="utf-8") as f:
            timing = json.load(f)
    seeds = []
    for seed in a.seeds:
        runs = {arm: os.path.join(folder, f"{arm}-{seed}") for arm in ARMS}
        for arm in ARMS:
            tune(a, program, runs[arm], seed, a.model if arm == "cm" else None)
        inc, texts = {}, {}
        for arm in ARMS:
            inc[arm], t = incumbents(runs[arm])
            texts.update(t)
        # The reference: base's best by its own search (the root when it found nothing faster).
        ref_hash = inc["base"][-1][1] if inc["base"] else "root"
        files = {}
        for h in {h for arm in ARMS for _, h in inc[arm]} | {ref_hash} - {"root"}:
            files[h] = os.path.join(folder, "programs", h + ".leir")
            os.makedirs(os.path.dirname(files[h]), exist_ok=True)
            with open(files[h], "w", encoding="utf-8") as f:
                f.write(texts[h] + "\n")
        ref = files.get(ref_hash, program)
        others = sorted(h for h in files if h != ref_hash)
        key = f"seed {seed}"
        timing.setdefault(key, {"reference": ref_hash, "rounds": {}})
        for rnd in range(a.rounds):
            done = timing[key]["rounds"].setdefault(str(rnd), {})
            order = others if rnd % 2 == 0 else others[::-1]
            for h in order:
                if h not in done:
                    done[h] = bench(a, ref, files[h])
                    with open(timing_path, "w", encoding="utf-8") as f:
                        json.dump(timing, f, indent=1)
        q = {ref_hash: 1.0}
        for h in others:
            q[h] = statistics.median(timing[key]["rounds"][str(r)][h] for r in range(a.rounds))
        best_base = max([q[h] for _, h in inc["base"]] + [1.0])
        target = best_base / (1 + a.within)
        row = {"seed": seed, "reference": ref_hash, "best_base_vs_ref": best_base,
               "best_cm_vs_ref": max(q[h] for _, h in inc["cm"]) if inc["cm"] else None}
        for arm in ARMS:
            # Base found nothing faster than the root: the root is the best, both runs start there.
            reach = 0 if ref_hash == "root" else trials_to(inc[arm], q, target)
            row[arm] = {"incumbents": [[t, h, round(q[h], 4)] for t, h in inc[arm]], "trials_to_reach": reach}
        seeds.append(row)

    def med(arm):
        # A run that never reaches the target counts as trials + 1 (reported as "> trials").
        vals = [s[arm]["trials_to_reach"] for s in seeds]
        m = statistics.median(a.trials + 1 if v is None else v for v in vals)
        return None if m > a.trials else m

    ratios = [s["best_cm_vs_ref"] / s["best_base_vs_ref"] for s in seeds if s["best_cm_vs_ref"]]
    return {"workload": name, "seeds": seeds, "median_trials_to_reach": {arm: med(arm) for arm in ARMS},
            "median_cm_best_over_base_best": statistics.median(ratios) if ratios else None}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steptp", default=os.path.join(ROOT, "build", "src", "steptp"))
    p.add_argument("--model", required=True, help="pre-trained cost model (steptp cost-model train --exclude ...)")
    p.add_argument("--out", required=True)
    p.add_argument("--workloads", default="conv2d,softmax,batched_matmul,layer_norm,BMM_Scale_Softmax")
    p.add_argument("--seeds", default="1,2,3")
    p.add_argument("--trials", type=int, default=32)
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--rounds", type=int, default=2, help="timing rounds of each seed's pairs (alternating order)")
    p.add_argument("--min-time", type=float, default=0.2, help="seconds per program per bench call")
    p.add_argument("--within", type=float, default=0.05, help="reached: within this share of the baseline's best")
    a = p.parse_args()
    a.seeds = [int(s) for s in a.seeds.split(",")]
    a.model = os.path.abspath(a.model)
    os.makedirs(a.out, exist_ok=True)
    reports = []
    for name in a.workloads.split(","):
        log(f"[{name}]")
        reports.append(workload_report(a, name))
        with open(os.path.join(a.out, "report.json"), "w", encoding="utf-8") as f:
            json.dump({"trials": a.trials, "threads": a.threads, "within": a.within, "rounds": a.rounds,
                       "model": a.model, "workloads": reports}, f, indent=1)
        r = reports[-1]
        per_seed = "; ".join(f"seed {s['seed']}: base {reach_text(s['base']['trials_to_reach'], a.trials)}, cm "
                             f"{reach_text(s['cm']['trials_to_reach'], a.trials)}, cm best / base best {ratio_text(s)}"
                             for s in r["seeds"])
        m = r["median_trials_to_reach"]
        print(f"{name}: median trials to reach base's best (within {a.within:.0%}): base "
              f"{reach_text(m['base'], a.trials)}, cm "
              f"{reach_text(m['cm'], a.trials)} [{per_seed}]", flush=True)


if __name__ == "__main__":
    main()
