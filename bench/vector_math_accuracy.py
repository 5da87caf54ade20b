#!/usr/bin/python3
"""Accuracy of the CPU lowering's math functions (docs/vector-math.md): for each LEIR function and
dtype, one V-loop program `D = f(X)` over a seeded sweep of its domain, compiled by steptp (vector
math) and run; reports the max error in units in the last place (ULP of the result's dtype)
against the reference interpreter computing in float64 (exact to < 1 ulp of f64) and against
PyTorch eager in the same dtype, plus the count of NaN/inf that differ from the interpreter's.

usage: bench/vector_math_accuracy.py [--points N] [--seed S] [--steptp PATH]
Prints a markdown table.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

DEFAULT_STEPTP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "src", "steptp")

# name: (LEIR right-hand side, torch function, f32 domain, f64 domain); domains are (lo, hi, kind)
# with kind "lin" (uniform) or "log" (log-uniform magnitude, sign per `lo`).
FUNCTIONS = {
    "exp": ("exp(X)", torch.exp, (-103.0, 88.7, "lin"), (-744.0, 709.7, "lin")),
    "log": ("log(X)", torch.log, (1e-38, 1e38, "log"), (1e-307, 1e307, "log")),
    "log1p": ("log1p(X)", torch.log1p, (-0.999, 1e6, "lin"), (-0.999, 1e6, "lin")),
    "sqrt": ("sqrt(X)", torch.sqrt, (1e-38, 1e38, "log"), (1e-307, 1e307, "log")),
    "rsqrt": ("rsqrt(X)", torch.rsqrt, (1e-37, 1e37, "log"), (1e-307, 1e307, "log")),
    "erf": ("erf(X)", torch.erf, (-5.0, 5.0, "lin"), (-6.0, 6.0, "lin")),
    "tanh": ("tanh(X)", torch.tanh, (-10.0, 10.0, "lin"), (-20.0, 20.0, "lin")),
    "sigmoid": ("sigmoid(X)", torch.sigmoid, (-80.0, 80.0, "lin"), (-700.0, 700.0, "lin")),
    "sin": ("sin(X)", torch.sin, (-1e4, 1e4, "lin"), (-1e4, 1e4, "lin")),
    "cos": ("cos(X)", torch.cos, (-1e4, 1e4, "lin"), (-1e4, 1e4, "lin")),
    "pow": ("X**Y", torch.pow, (1e-3, 100.0, "lin"), (1e-3, 100.0, "lin")),
}
NP = {"f32": np.float32, "f64": np.float64}
TORCH = {"f32": torch.float32, "f64": torch.float64}


def sweep(domain, n, rng, dtype):
    lo, hi, kind = domain
    if kind == "log":
        x = np.exp(rng.uniform(np.log(lo), np.log(hi), n))
    else:
        x = rng.uniform(lo, hi, n)
    small = rng.uniform(-1.0, 1.0, n // 8)  # the region activations live in
    if lo > 0:
        small = np.abs(small) + lo
    return np.concatenate([x, small]).astype(NP[dtype])


def encode(a):
    return [("nan" if np.isnan(v) else ("inf" if v > 0 else "-inf")) if not np.isfinite(v) else float(v) for v in a]


def decode(data):
    return np.array([float(x) for x in data])  # float() reads "nan", "inf", "-inf" too


def run(exe, prog, values, target):
    with tempfile.TemporaryDirectory(prefix="steptp-acc-") as d:
        pf, vf, of = (os.path.join(d, n) for n in ("p.leir", "v.json", "o.json"))
        with open(pf, "w") as f:
            f.write(prog)
        with open(vf, "w") as f:
            json.dump({k: {"dtype": t, "shape": [len(a)], "data": encode(a)} for k, (t, a) in values.items()}, f)
        cmd = [exe, "run", pf, "--inputs", vf, "--out", of]
        if target:
            cmd += ["--target", target]
        subprocess.run(cmd, check=True, capture_output=True)
        with open(of) as f:
            return decode(json.load(f)["D"]["data"])


def ulps(got, ref, dtype):
    """|got - ref| in ULPs of `dtype` at ref (ref may be more precise than dtype)."""
    r = ref.astype(NP[dtype])
    spacing = np.spacing(np.abs(r)).astype(np.float64)
    return np.abs(got.astype(np.float64) - ref.astype(np.float64)) / spacing


def measure(name, dtype, n, exe, rng):
    rhs, tfn, d32, d64 = FUNCTIONS[name]
    x = sweep(d32 if dtype == "f32" else d64, n, rng, dtype)
    y = rng.uniform(-8.0, 8.0, len(x)).astype(NP[dtype])
    body = rhs.replace("X", f"X^{{{dtype},g}}_{{a}}").replace("Y", f"Y^{{{dtype},g}}_{{a}}")
    m = len(x)
    prog = f"input X: {dtype}[{m}]\ninput Y: {dtype}[{m}]\noutput D: {dtype}[{m}]\nV^{{{m}}}_{{a=0}}[D^{{{dtype},g}}_{{a}}={body};];\n"
    values = {"X": (dtype, x), "Y": (dtype, y)}
    got = run(exe, prog, values, "cpu")
    # The interpreter in float64 on the same inputs: the f64 program (exact to < 1 f64 ulp).
    prog64 = prog.replace(dtype, "f64")
    want = run(exe, prog64, {k: ("f64", v.astype(np.float64)) for k, (t, v) in values.items()}, None)
    args = [torch.from_numpy(x)] + ([torch.from_numpy(y)] if "Y" in rhs else [])
    torch_out = tfn(*args).to(TORCH[dtype]).numpy().astype(np.float64)
    finite = np.isfinite(want) & np.isfinite(got)
    special = int(np.sum((np.isnan(got) != np.isnan(want)) | (np.isinf(got) & (got != want))
                         | (np.isinf(want) & (got != want))))
    tf = finite & np.isfinite(torch_out)
    # For f64 results the interpreter is the reference at f64 precision; its own libm error
    # (< 1 ulp) is part of the figure.
    return {"function": name, "dtype": dtype, "points": m,
            "max_ulp_vs_interp": float(np.max(ulps(got[finite], want[finite], dtype))),
            "max_ulp_vs_torch": float(np.max(ulps(got[tf], torch_out[tf], dtype))),
            "torch_max_ulp_vs_interp": float(np.max(ulps(torch_out[tf], want[tf], dtype))),
            "special_mismatches": special}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--points", type=int, default=100000)
    ap.add_argument("--steptp", default=DEFAULT_STEPTP)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    torch.set_num_threads(1)
    rng = np.random.default_rng(a.seed)
    print("| function | dtype | points | max ulp vs interpreter (f64) | max ulp vs PyTorch | PyTorch's max ulp vs interpreter | NaN/inf mismatches |")
    print("|---|---|---|---|---|---|---|")
    for name in FUNCTIONS:
        for dtype in ("f32", "f64"):
            r = measure(name, dtype, a.points, a.steptp, rng)
            print(f"| `{name}` | {dtype} | {r['points']} | {r['max_ulp_vs_interp']:.2f} | {r['max_ulp_vs_torch']:.2f} | "
                  f"{r['torch_max_ulp_vs_interp']:.2f} | {r['special_mismatches']} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
