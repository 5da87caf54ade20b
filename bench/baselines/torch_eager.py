#!/usr/bin/python3
"""PyTorch-eager baseline timer for steptp workloads.

Times a workload's own PyTorch reference (the `torch_reference` source each workload carries,
src/front/workloads/workload.h) at given hyper-parameters, dtype and thread count, on inputs drawn at
the program's shapes, and reports median and spread as JSON. Run it with Debian's python3-torch
(/usr/bin/python3 or the project .venv), never a PyPI wheel.

CLI:
    bench/baselines/torch_eager.py NAME [--set k=v]... [--size default] [--seed S]
        [--dtype f32|f64] [--threads T] [--min-time SEC] [--warmup N] [--steptp PATH]

prints one JSON object: workload, hyper, dtype, threads, torch_threads, openblas_config,
openblas_corename, median_ms, min_ms, max_ms, iqr_ms, cv, repeats.

Module (reuse from other benchmarks):
    import torch_eager                      # first: it pins OPENBLAS_CORETYPE before torch loads
    ref = torch_eager.workload_reference("gelu", {"batch": 64, "dim": 16384}, "f32")
    stats = torch_eager.time_reference(ref, threads=2, min_time=0.5)

Inputs: floats ~ U(-1, 1) as steptp's seeded generator draws them (same distribution, torch's
PRNG); integer and bool inputs come from steptp itself (`workloads emit --with-reference`),
because their valid range depends on how the program indexes with them.

OpenBLAS: Debian's OpenBLAS 0.3.21 misdetects some newer CPUs (AVX-512 VMs fall back to the
Prescott kernels). Unless OPENBLAS_CORETYPE is already set, it is set here, before torch is
imported, to the best kernel family the CPU's flags support, so the baseline uses the kernels this
CPU has; the config and core OpenBLAS reports are printed with every result.
"""
import argparse
import ctypes
import json
import math
import os
import re
import statistics
import subprocess
import sys
import time

DEFAULT_STEPTP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "build", "src", "steptp")


def _openblas_coretype_for_cpu():
    """OpenBLAS core name for this CPU's instruction set, or None to keep OpenBLAS's own choice."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = set(re.search(r"^flags\s*:\s*(.*)$", f.read(), re.M).group(1).split())
    except (OSError, AttributeError):
        return None
    if {"avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512cd"} <= flags:
        return "SkylakeX"
    if {"avx2", "fma"} <= flags:
        return "Haswell"
    return None


if "OPENBLAS_CORETYPE" not in os.environ and _openblas_coretype_for_cpu():
    os.environ["OPENBLAS_CORETYPE"] = _openblas_coretype_for_cpu()

import torch  # noqa: E402  (after OPENBLAS_CORETYPE: OpenBLAS reads it when it loads)
import torch.nn.functional as F  # noqa: E402

DTYPES = {"f32": torch.float32, "f64": torch.float64}
INT_DTYPES = {"i8", "i16", "i32", "i64", "u8"}


def openblas_info():
    """(config, corename) of the OpenBLAS torch loaded, or (None, None) when it loaded none."""
    with open("/proc/self/maps") as f:
        libs = sorted(set(re.findall(r"(/\S*libopenblas\S*\.so\S*)", f.read())))
    for path in libs:
        try:
            lib = ctypes.CDLL(path)
            lib.openblas_get_config.restype = ctypes.c_char_p
            lib.openblas_get_corename.restype = ctypes.c_char_p
            return lib.openblas_get_config().decode(), lib.openblas_get_corename().decode()
        except (OSError, AttributeError):
            continue
    return None, None


def workload_reference(name, hyper=None, dtype="f32", size="default", seed=0, steptp=DEFAULT_STEPTP):
    """What `steptp workloads emit NAME --with-reference` says about one instance of a workload:
    {"workload", "hyper", "torch_reference", "program", "inputs"} (plus "dtype")."""
    cmd = [steptp, "workloads", "emit", name, "--with-reference", "--size", size, "--seed", str(seed)]
    for k, v in sorted((hyper or {}).items()):
        cmd += ["--set", f"{k}={v}"]
    if dtype == "f32":
        cmd.append("--f32")
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    ref = json.loads(out.stdout)
    ref["dtype"] = dtype
    return ref


def _decode_number(x):
    return {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}[x] if isinstance(x, str) else x


def _discrete_tensor(v):
    data = [_decode_number(x) for x in v["data"]]
    if v["dtype"] == "bool":
        return torch.tensor([bool(x) for x in data], dtype=torch.bool).reshape(v["shape"])
    return torch.tensor([int(x) for x in data], dtype=torch.int64).reshape(v["shape"])


def make_inputs(ref, seed=0):
    """Every input/param/constant of the program as a torch tensor: floats in the timed dtype."""
    fdtype = DTYPES[ref["dtype"]]
    gen = torch.Generator().manual_seed(seed)
    tensors = {}
    for k in ref["program"]["known"]:
        name, shape, dt = k["name"], k["shape"], k["dtype"]
        if k["role"] == "output":
            continue
        if "value" in k:  # constants with values
            if dt == "bool":
                tensors[name] = torch.tensor(k["value"], dtype=torch.bool).reshape(shape)
            elif dt in INT_DTYPES:
                tensors[name] = torch.tensor(k["value"], dtype=torch.int64).reshape(shape)
            else:
                tensors[name] = torch.tensor([_decode_number(x) for x in k["value"]], dtype=fdtype).reshape(shape)
        elif name in ref["inputs"]:
            tensors[name] = _discrete_tensor(ref["inputs"][name])
        else:
            tensors[name] = torch.rand(shape, generator=gen, dtype=fdtype) * 2 - 1
    return tensors


def compile_reference(source):
    scope = {"torch": torch, "F": F, "math": math}
    exec(compile(source, "<torch_reference>", "exec"), scope)
    return scope["reference"]


def _stats(times_s):
    ms = sorted(t * 1e3 for t in times_s)
    q = statistics.quantiles(ms, n=4) if len(ms) >= 2 else [ms[0]] * 3
    mean = statistics.fmean(ms)
    return {"median_ms": statistics.median(ms), "min_ms": ms[0], "max_ms": ms[-1], "iqr_ms": q[2] - q[0],
            "cv": (statistics.pstdev(ms) / mean) if mean > 0 else 0.0, "repeats": len(ms)}


def time_reference(ref, threads=None, min_time=0.5, warmup=2, seed=0, max_repeats=10000):
    """Times ref's torch_reference (from workload_reference) in this process. Returns the JSON-ready
    stats plus the thread count torch used and the OpenBLAS it loaded."""
    if threads:
        torch.set_num_threads(threads)
    torch.set_default_dtype(DTYPES[ref["dtype"]])  # tensors the reference creates itself
    fn = compile_reference(ref["torch_reference"])
    hp = ref["hyper"]
    tensors = make_inputs(ref, seed)
    times = []
    with torch.no_grad():
        for _ in range(warmup):
            fn(tensors, hp)
        start = time.perf_counter()
        while len(times) < max_repeats and (time.perf_counter() - start < min_time or len(times) < 3):
            t0 = time.perf_counter()
            fn(tensors, hp)
            times.append(time.perf_counter() - t0)
    config, corename = openblas_info()
    result = {"workload": ref["workload"], "hyper": hp, "dtype": ref["dtype"], "threads": threads,
              "torch_threads": torch.get_num_threads(), "torch_version": torch.__version__,
              "openblas_config": config, "openblas_corename": corename,
              "openblas_coretype_env": os.environ.get("OPENBLAS_CORETYPE")}
    result.update(_stats(times))
    return result


def _parse_sets(sets):
    hyper = {}
    for s in sets:
        k, eq, v = s.partition("=")
        if not eq or not k or not re.fullmatch(r"-?\d+", v):
            raise SystemExit(f"torch_eager: --set expects NAME=INTEGER, got '{s}'")
        hyper[k] = int(v)
    return hyper


def main(argv=None):
    ap = argparse.ArgumentParser(description="time a workload's PyTorch reference (eager) and print JSON")
    ap.add_argument("name", help="workload name (steptp workloads list)")
    ap.add_argument("--set", action="append", default=[], help="hyper-parameter NAME=INTEGER (repeatable)")
    ap.add_argument("--size", default="default", help="size class for the parameters not set (default: default)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the hyper-parameter draw and the inputs")
    ap.add_argument("--dtype", choices=sorted(DTYPES), default="f32")
    ap.add_argument("--threads", type=int, default=os.cpu_count(), help="torch threads (default: all cores)")
    ap.add_argument("--min-time", type=float, default=0.5, help="seconds of timed calls (default 0.5)")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--steptp", default=DEFAULT_STEPTP, help="steptp binary (default: build/src/steptp)")
    a = ap.parse_args(argv)
    try:
        ref = workload_reference(a.name, _parse_sets(a.set), a.dtype, a.size, a.seed, a.steptp)
    except subprocess.CalledProcessError as e:
        sys.stderr.write(e.stderr)
        return 1
    print(json.dumps(time_reference(ref, a.threads, a.min_time, a.warmup, a.seed)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
