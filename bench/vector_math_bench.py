#!/usr/bin/python3
"""Level-1 activation, softmax, normalization and loss workloads, f32, all cores: steptp's naive
lowering and the program after `loop_vectorization` (every site), each compiled with the scalar
math lowering (before vector math) and with vector math, against PyTorch eager
(bench/baselines/torch_eager.py) at the same thread count. One run, side by side: per workload,
rounds of [naive old/new, vectorized old/new, torch], old/new interleaved inside each
`steptp bench --vs-scalar-math` call; each figure is the median over the rounds of the per-call
medians. Shapes are fixed below so that every naive kernel runs for at least ~1 ms.

With --tune TRIALS, `steptp tune` first searches each workload's naive program (TRIALS measured
candidates, same threads, seed 0) and its best program joins every round as the "tuned" column,
timed interleaved against the naive program (vector math) in its own `steptp bench --against`
call; the tuner's own timings are not reused, so all columns share one session policy.

usage: bench/vector_math_bench.py [--threads T] [--rounds R] [--min-time SEC] [--only NAME,...]
       [--tune TRIALS] [--steptp PATH] [--json OUT.json]
Prints a markdown table (README "Benchmarks").
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "baselines"))
import torch_eager  # noqa: E402  (sets OPENBLAS_CORETYPE before torch loads)

FAMILIES = ("activation", "softmax", "norm", "loss")
# Fixed hyper-parameters: [64, 16384] for rows-by-features workloads (activations, softmax, l1/l2
# norm) as in issue 14 (the memory-bound ones, relu & co, take < 1 ms there), [512, 4096] for
# elementwise row losses; batch/frobenius/group norms are smaller because their naive form
# opens an OpenMP region per innermost row (seconds per call at 4 M elements). Parameters not
# listed keep the `default` size class (fixed values; all printed in the table). ppo_clip_loss is
# capped at 4096 rows by its range.
ROWS_BY_FEATURES = {"batch": 64, "dim": 16384}
IMAGE_NORM = {"batch": 4, "features": 16, "h": 32, "w": 32}
LOSS_ROWS = {"batch": 512, "dim": 4096}
SHAPES = {
    "batch_norm": IMAGE_NORM, "frobenius_norm": IMAGE_NORM,
    "rms_norm": {"batch": 16, "features": 64, "h": 64, "w": 64},
    "instance_norm": {"batch": 16, "features": 64, "h": 64, "w": 64},
    "group_norm": {"batch": 16, "groups": 8, "channels_per_group": 8, "h": 32, "w": 32},
    "layer_norm": {"batch": 64, "features": 64, "dim": 256},
    "batch_norm_1d_train": {"batch": 1024, "features": 1024},
    "cross_entropy_loss": {"batch": 4096, "classes": 1000}, "nll_loss": {"batch": 4096, "classes": 1000},
    "augmix_jsd_loss": {"batch": 512, "classes": 1000},
    "ppo_clip_loss": {"batch": 4096},
    # Matrix-product losses (batch x batch similarities): their defaults already run for >= 1 ms.
    "clip_loss": {}, "infonce_loss": {}, "nt_xent_loss": {},
}


def steptp(args, exe):
    return subprocess.run([exe] + args, check=True, capture_output=True, text=True).stdout


def workloads(exe, only):
    listed = json.loads(steptp(["workloads", "list", "--json"], exe))
    chosen = [w for w in listed if w["level"] == 1 and w["family"] in FAMILIES and (not only or w["name"] in only)]
    return [(w["name"], fixed_hyper(w["name"], w["family"], {p["name"] for p in w["params"]})) for w in chosen]


def fixed_hyper(name, family, params):
    if name in SHAPES:
        return SHAPES[name]
    if params == {"batch", "dim"}:
        return LOSS_ROWS if family == "loss" else ROWS_BY_FEATURES
    return {}


def vectorize_everywhere(src, dst, exe):
    """Applies loop_vectorization at its first site until no site is left; returns the count."""
    steps = 0
    cur = src
    while True:
        out = steptp(["apply", cur, "--strategy", "loop_vectorization", "--site", "0"], exe).strip()
        if not out:
            break
        with open(dst, "w") as f:
            f.write(json.dumps(json.loads(out.splitlines()[0])["program"]) + "\n")
        cur = dst
        steps += 1
        if steps > 64:
            raise RuntimeError(f"{src}: loop_vectorization still applies after 64 steps")
    if steps == 0:
        with open(src) as fin, open(dst, "w") as fout:
            fout.write(fin.read())
    return steps


def bench_interleaved(path, second, threads, min_time, exe):
    """(first ms, second ms) from one interleaved `steptp bench PATH ...` session; `second` is
    ["--vs-scalar-math"] (first = scalar math) or ["--against", OTHER]."""
    j = json.loads(steptp(["bench", path] + second + ["--threads", str(threads), "--min-time", str(min_time),
                                                      "--json"], exe))
    return j["baseline"]["median_ms"], j["median_ms"]


def tune_best(naive, out_dir, trials, threads, exe):
    """Runs the measured tuner on `naive`; returns (best program path, tuner's speedup claim)."""
    res = json.loads(steptp(["tune", naive, "--trials", str(trials), "--threads", str(threads), "--seed", "0",
                             "--out", out_dir, "--json"], exe))
    return os.path.join(out_dir, "best.json"), res.get("speedup", float("nan"))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--min-time", type=float, default=0.2, help="seconds per timed call (default 0.2)")
    ap.add_argument("--only", default="", help="comma-separated workload names")
    ap.add_argument("--steptp", default=torch_eager.DEFAULT_STEPTP)
    ap.add_argument("--tune", type=int, default=0, metavar="TRIALS",
                    help="add the tuner's best program after TRIALS measured candidates (default 0: no column)")
    ap.add_argument("--json", default="", help="also write every figure to this file")
    a = ap.parse_args(argv)
    chosen = workloads(a.steptp, set(filter(None, a.only.split(","))))
    rows = []
    with tempfile.TemporaryDirectory(prefix="steptp-vecmath-") as tmp:
        for name, hyper in chosen:
            ref = torch_eager.workload_reference(name, hyper, "f32", steptp=a.steptp)
            naive = os.path.join(tmp, name + ".json")
            vect = os.path.join(tmp, name + ".vect.json")
            with open(naive, "w") as f:
                f.write(json.dumps(ref["program"]) + "\n")
            steps = vectorize_everywhere(naive, vect, a.steptp)
            columns = ["naive_old", "naive_new", "vect_old", "vect_new", "torch"]
            if a.tune:
                tuned, claimed = tune_best(naive, os.path.join(tmp, name + ".tune"), a.tune, a.threads, a.steptp)
                columns[4:4] = ["tuned", "naive_vs_tuned"]
            samples = {k: [] for k in columns}
            for _ in range(a.rounds):
                o, n = bench_interleaved(naive, ["--vs-scalar-math"], a.threads, a.min_time, a.steptp)
                samples["naive_old"].append(o), samples["naive_new"].append(n)
                o, n = bench_interleaved(vect, ["--vs-scalar-math"], a.threads, a.min_time, a.steptp)
                samples["vect_old"].append(o), samples["vect_new"].append(n)
                if a.tune:  # interleaved with the naive program (vector math), like every other pair
                    n2, t2 = bench_interleaved(naive, ["--against", tuned], a.threads, a.min_time, a.steptp)
                    samples["tuned"].append(t2), samples["naive_vs_tuned"].append(n2)
                try:
                    t = torch_eager.time_reference(ref, threads=a.threads, min_time=a.min_time)
                    samples["torch"].append(t["median_ms"])
                except RuntimeError as e:  # a reference that cannot run in f32: reported, not hidden
                    t = {"error": str(e).splitlines()[0]}
                    samples["torch"].append(float("nan"))
            row = {"workload": name, "hyper": ref["hyper"], "vectorized_loops": steps, "torch": t}
            if a.tune:
                row["tuner_claimed_speedup"] = claimed
            row.update({k + "_ms": statistics.median(v) for k, v in samples.items()})
            row["samples"] = samples
            rows.append(row)
            print(f"{name}: " + ", ".join(f"{k} {row[k + '_ms']:.3f}" for k in samples), file=sys.stderr, flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    timed = next((r["torch"] for r in rows if "error" not in r["torch"]), {})
    print(f"threads {a.threads}, f32, {a.rounds} round(s), median of per-call medians (ms); "
          f"old = scalar math lowering, new = vector math; V = after loop_vectorization; torch "
          f"{torch_eager.torch.__version__} ({timed.get('torch_threads', '?')} threads, OpenBLAS "
          f"{timed.get('openblas_corename', '?')})\n")
    tuned_head = f" | tuned ({a.tune} trials) | tuned speedup" if a.tune else ""
    print(f"| workload | hyper-parameters | naive old | naive new | V old | V new{tuned_head} | torch eager "
          "| best new / torch | naive new/old | V new/old |")
    print("|---" * (10 + 2 * bool(a.tune)) + "|")
    for r in rows:
        hp = " ".join(f"{k}={v}" for k, v in r["hyper"].items())
        best = min(r["naive_new_ms"], r["vect_new_ms"], r.get("tuned_ms", float("inf")))
        # tuned speedup: naive / tuned from their own interleaved session (vector math both)
        tuned_ms = f" | {r['tuned_ms']:.3f} | {r['naive_vs_tuned_ms'] / r['tuned_ms']:.2f}x" if a.tune else ""
        torch_ms = f"{r['torch_ms']:.3f}" if "error" not in r["torch"] else "error: " + r["torch"]["error"]
        print(f"| `{r['workload']}` | {hp} | {r['naive_old_ms']:.3f} | {r['naive_new_ms']:.3f} | {r['vect_old_ms']:.3f} | "
              f"{r['vect_new_ms']:.3f}{tuned_ms} | {torch_ms} | {best / r['torch_ms']:.2f}x | "
              f"{r['naive_new_ms'] / r['naive_old_ms']:.2f} | {r['vect_new_ms'] / r['vect_old_ms']:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
