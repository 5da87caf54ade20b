"""TVM MetaSchedule baseline of bench/tune_panel.py (docs/benchmarks.md): tunes steptp's own
TVMScript lowering of a naive program and times the best schedule with steptp's protocol.
Runs in .venv-bench (scripts/deps-bench.sh).

  metaschedule.py tune FILE --steptp BIN --trials N --threads T --out DIR [--seed S] [--timeout S] [--json]
      `steptp lower FILE --target tir --cpu-compatible` (B loops serial, every buffer global) ->
      DIR/naive_tir.py, a Python module that imports `tirx` as T (TVM 0.27 has no tvm.script.tir);
      tune_tir with the XGBoost cost model and the evolutionary search on
      llvm with mcpu = this CPU and num-cores = T; exports the best schedule as DIR/best.so; checks it
      against the unscheduled module built by TVM (and, for a 2-D matmul, against numpy);
      writes DIR/result.json: {"trial_ms" (every measured trial in order; null = failed),
      "best_ms_tuning", "trials", "wall_s", "target", "verified", "max_rel_err", "versions"}.
  metaschedule.py time DIR --threads T [--min-time S] [--json]
      loads DIR/best.so in this process and times it (bench/baselines/protocol.py), printing the
      fields of `steptp bench --json`.
"""
import argparse
import collections
import json
import os
import re
import runpy
import subprocess
import sys
import time

os.environ.setdefault("TVM_FFI_DISABLE_TORCH_C_DLPACK", "1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np  # noqa: E402

import protocol  # noqa: E402

FAILED_S = 1e9  # MetaSchedule records a failed build or run with a huge time (1e10 s)


def import_tvm(threads):
    # The runtime thread pool reads TVM_NUM_THREADS when it starts; popen workers inherit it.
    os.environ["TVM_NUM_THREADS"] = str(threads)
    import tvm  # pylint: disable=import-outside-toplevel
    return tvm


def host_cpu(tvm):
    """The -mcpu LLVM would pick for this host (e.g. znver3, sapphirerapids)."""
    from tvm.target import codegen  # pylint: disable=import-outside-toplevel
    return codegen.llvm_get_system_cpu()


def write_naive_tir(steptp, program, path):
    src = subprocess.run([steptp, "lower", program, "--target", "tir", "--cpu-compatible"], check=True,
                         capture_output=True, text=True).stdout
    header = "# from tvm.script import ir as I\n# from tvm.script import tir as T\n"
    if not src.startswith(header):
        raise SystemExit(f"{program}: unexpected TVMScript header from steptp lower: {src[:120]!r}")
    with open(path, "w", encoding="utf-8") as f:
        f.write("from tvm.script import ir as I\nfrom tvm.script import tirx as T\n" + src[len(header):])


def check_single_writers(program, path):
    """MetaSchedule's tiling rules (cache-write) need every buffer written by one block; steptp's
    lowering of an in-place update (e.g. a bias added into the matmul result) writes it in two.
    Fail with that reason rather than with TVM's schedule error in the middle of tuning."""
    with open(path, encoding="utf-8") as f:
        writes = collections.Counter(re.findall(r"T\.writes\((\w+)\[", f.read()))
    multi = sorted(b for b, n in writes.items() if n > 1)
    if multi:
        raise SystemExit(f"{program}: MetaSchedule needs every buffer written by one block; the naive program "
                         f"updates {', '.join(multi)} in place ({path})")


def load_module(path):
    return runpy.run_path(path)["Module"]


def buffers(func):
    """(shape, dtype) of every parameter (TVM 0.27 params are buffer-typed vars, no buffer_map)."""
    return [([int(x) for x in p.shape], str(p.dtype)) for p in func.params]


def random_args(func, seed):
    rng = np.random.default_rng(seed)
    arrays = []
    for shape, dtype in buffers(func):
        if dtype.startswith("float"):
            a = rng.uniform(-1.0, 1.0, size=shape).astype(dtype)
        elif dtype == "bool":
            a = rng.integers(0, 2, size=shape).astype(dtype)
        else:
            a = rng.integers(0, 8, size=shape).astype(dtype)
        arrays.append(a)
    return arrays


def to_tensors(tvm, arrays):
    return [tvm.runtime.tensor(a, tvm.cpu()) for a in arrays]


def trial_times(work_dir):
    """Every measured candidate's mean run time in ms, in the order MetaSchedule committed them."""
    out = []
    with open(os.path.join(work_dir, "database_tuning_record.json"), encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            run_secs = [float(x) for x in json.loads(line)[1][1]]
            mean = sum(run_secs) / len(run_secs) if run_secs else FAILED_S
            out.append(None if mean >= FAILED_S else mean * 1e3)
    return out


def trial_errors(work_dir):
    """Why MetaSchedule's trials failed, from its task logs: counts and the first reason."""
    reasons = []
    logs = os.path.join(work_dir, "logs")
    for name in sorted(os.listdir(logs)) if os.path.isdir(logs) else []:
        with open(os.path.join(logs, name), encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
        reasons += [lines[i + 1].strip() for i, l in enumerate(lines[:-1]) if re.search(r"Error in (building|running)", l)]
    if not reasons:
        return "its logs name no failed trial"
    return f"{len(reasons)} failed trials, first: {reasons[0]}"


def verify(tvm, mod, lib, target, seed):
    """Best schedule vs the unscheduled module, both built by TVM, on the same random inputs;
    a 2-D matmul is also checked against numpy. Returns (ok, max relative error)."""
    func = mod["main"]
    ref = tvm.compile(mod, target=target)
    arrays = random_args(func, seed)
    got, want = to_tensors(tvm, arrays), to_tensors(tvm, arrays)
    lib["main"](*got)
    ref["main"](*want)
    worst = 0.0
    for g, w in zip(got, want):
        g, w = g.numpy().astype(np.float64), w.numpy().astype(np.float64)
        scale = max(float(np.max(np.abs(w))), 1e-30)
        worst = max(worst, float(np.max(np.abs(g - w))) / scale if g.size else 0.0)
    shapes = [shape for shape, _ in buffers(func)]
    if len(shapes) == 3 and all(len(sh) == 2 for sh in shapes):
        a, b = arrays[0].astype(np.float64), arrays[1].astype(np.float64)
        if a.shape[1] == b.shape[0] and tuple(shapes[2]) == (a.shape[0], b.shape[1]):
            c = got[2].numpy().astype(np.float64)
            expect = a @ b
            worst = max(worst, float(np.max(np.abs(c - expect))) / max(float(np.max(np.abs(expect))), 1e-30))
    return worst <= 1e-4, worst


def cmd_tune(a):
    tvm = import_tvm(a.threads)
    from tvm.s_tir import meta_schedule as ms  # pylint: disable=import-outside-toplevel
    os.makedirs(a.out, exist_ok=True)
    tir_path = os.path.join(a.out, "naive_tir.py")
    write_naive_tir(a.steptp, a.file, tir_path)
    check_single_writers(a.file, tir_path)
    mod = load_module(tir_path)
    target = tvm.target.Target({"kind": "llvm", "mcpu": host_cpu(tvm), "num-cores": a.threads})
    work_dir = os.path.join(a.out, "work")
    start = time.perf_counter()
    # MetaSchedule's defaults except the time-outs: its 30 s include starting a worker process
    # that imports TVM, which on a loaded 2-core machine alone takes longer.
    builder = ms.builder.LocalBuilder(max_workers=a.threads, timeout_sec=a.timeout)
    runner = ms.runner.LocalRunner(timeout_sec=a.timeout)
    db = ms.tune_tir(mod=mod, target=target, work_dir=work_dir, max_trials_global=a.trials,
                     num_trials_per_iter=min(64, a.trials), builder=builder, runner=runner, cost_model="xgb",
                     strategy="evolutionary", num_tuning_cores=a.threads, seed=a.seed)
    sch = db.query_schedule(mod, target=target, workload_name="main")
    wall = time.perf_counter() - start
    if sch is None:
        raise SystemExit(f"{a.file}: MetaSchedule found no valid schedule in {a.trials} trials; {trial_errors(work_dir)}")
    lib = tvm.compile(sch.mod, target=target)
    lib.export_library(os.path.join(a.out, "best.so"))
    with open(os.path.join(a.out, "best_tir.py"), "w", encoding="utf-8") as f:
        f.write(sch.mod.script())
    ok, err = verify(tvm, mod, lib, target, a.seed)
    trials = trial_times(work_dir)
    valid = [t for t in trials if t is not None]
    result = {"program": a.file, "trials": len(trials), "trial_ms": trials,
              "best_ms_tuning": min(valid) if valid else None, "wall_s": wall, "target": str(target),
              "threads": a.threads, "seed": a.seed, "verified": ok, "max_rel_err": err,
              "versions": {"apache-tvm": tvm.__version__, "apache-tvm-ffi": __import__("tvm_ffi").__version__,
                           "xgboost": __import__("xgboost").__version__}}
    with open(os.path.join(a.out, "result.json"), "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)
    if a.json:
        print(json.dumps(result))
    else:
        print(f"{a.file}: {len(trials)} trials in {wall:.1f} s on {target}; best {result['best_ms_tuning']:.4f} ms "
              f"while tuning; verified {ok} (max rel err {err:.2e}); wrote {a.out}/best.so")
    if not ok:
        raise SystemExit(f"{a.file}: MetaSchedule's best schedule disagrees with the unscheduled module")
    return 0


def cmd_time(a):
    tvm = import_tvm(a.threads)
    mod = load_module(os.path.join(a.dir, "naive_tir.py"))
    lib = tvm.runtime.load_module(os.path.join(a.dir, "best.so"))
    args = to_tensors(tvm, random_args(mod["main"], 0))
    f = lib["main"]
    protocol.print_stats("metaschedule", protocol.measure(lambda: f(*args), a.min_time), a.json)
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("tune", help="tune a LEIR program with MetaSchedule")
    t.add_argument("file")
    t.add_argument("--steptp", required=True, help="the steptp binary (for `steptp lower`)")
    t.add_argument("--trials", type=int, default=64)
    t.add_argument("--threads", type=int, required=True)
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--out", required=True)
    t.add_argument("--timeout", type=float, default=300, help="build and run time-out per candidate in seconds")
    t.add_argument("--json", action="store_true")
    r = sub.add_parser("time", help="time the best schedule that `tune` exported")
    r.add_argument("dir")
    r.add_argument("--threads", type=int, required=True)
    r.add_argument("--min-time", type=float, default=0.5)
    r.add_argument("--json", action="store_true")
    a = p.parse_args()
    if getattr(a, "trials", 1) < 1 or a.threads < 1:
        p.error("--trials and --threads must be positive")
    return cmd_tune(a) if a.cmd == "tune" else cmd_time(a)


if __name__ == "__main__":
    sys.exit(main())
