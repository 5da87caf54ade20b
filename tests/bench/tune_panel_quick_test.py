#!/usr/bin/python3
"""Runs bench/tune_panel.py --quick (two small workloads, 4 trials, real steptp tune / bench,
PyTorch eager, MetaSchedule and OpenBLAS calls) and checks that every comparison came out with
plausible figures. Exit 77 (skipped) when steptp has no `tune` subcommand.
usage: tune_panel_quick_test.py --steptp BIN --sgemm BIN --pingpong BIN"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def program_text(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)["leir"]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steptp", required=True)
    p.add_argument("--sgemm", required=True)
    p.add_argument("--pingpong", required=True)
    a = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="steptp-panel-test-") as out:
        r = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "tune_panel.py"), "--quick", "--threads", "2",
                            "--steptp", a.steptp, "--sgemm", a.sgemm, "--pingpong", a.pingpong, "--out", out],
                           capture_output=True, text=True, check=False)
        print(r.stdout)
        print(r.stderr[-3000:], file=sys.stderr)
        if r.returncode == 77:
            return 77
        assert r.returncode == 0, f"tune_panel exited {r.returncode}"
        res = json.load(open(os.path.join(out, "panel.json"), encoding="utf-8"))
        kept_root = {r["label"]: program_text(r["program"]) == program_text(r["best"]) for r in res["rows"]
                     if r.get("best")}
    failures = []

    def check(cond, what):
        if not cond:
            failures.append(what)

    rows = {r["label"]: r for r in res["rows"]}
    check(sorted(rows) == ["gemm_64", "softmax_small"], f"panel rows {sorted(rows)}")
    for label, row in rows.items():
        check("error" not in row, f"{label}: {row.get('error')}")
        check(not row.get("timing_errors"), f"{label}: timing errors {row.get('timing_errors')}")
        m = row.get("median_ms", {})
        check(m.get("naive", 0) > 0 and m.get("best", 0) > 0, f"{label}: naive/best times {m}")
        check(len(row["times"].get("best", [])) == 2, f"{label}: two interleaved rounds expected")
        # A kept root is one program in both slots: one pooled median, x naive exactly 1.
        check(bool(row.get("best_is_root")) == kept_root.get(label), f"{label}: best_is_root {row.get('best_is_root')}")
        if kept_root.get(label):
            check(m.get("naive") == m.get("best") and row.get("speedup_vs_naive") == 1.0, f"{label}: kept root {m}")
        check(row.get("ours", {}).get("trials") == 4, f"{label}: 4 tune trials expected")
        # The probe ran before the row's timings in each round (tens to hundreds of nanoseconds on
        # a quiet machine; no upper bound here: on a loaded CI machine each hand-off may wait for
        # the scheduler).
        pp = row.get("pingpong_ns", [])
        check(len(pp) == 2 and all(x > 1 for x in pp), f"{label}: core ping-pong per round {pp}")
        if os.path.exists(os.path.join(ROOT, "bench", "baselines", "torch_eager.py")):
            check(m.get("torch", 0) > 0, f"{label}: no PyTorch eager time")
    gemm = rows["gemm_64"]
    check(gemm["median_ms"].get("sgemm", 0) > 0 and "Prescott" not in gemm.get("sgemm_config", "Prescott"),
          f"sgemm: {gemm.get('sgemm_config')} {gemm['median_ms'].get('sgemm')}")
    if os.access(os.path.join(ROOT, ".venv-bench", "bin", "python3"), os.X_OK):
        ms = gemm.get("metaschedule") or {}
        check(ms.get("verified") is True and ms.get("trials") == 4 and len(ms.get("trial_ms", [])) == 4,
              f"MetaSchedule: {ms or gemm.get('metaschedule_error')}")
        check(gemm["median_ms"].get("metaschedule", 0) > 0, "MetaSchedule's best was not re-timed")
    else:
        check(any("MetaSchedule skipped" in n for n in res["notes"]), "missing MetaSchedule skip note")
        print("note: .venv-bench absent (scripts/deps-bench.sh): MetaSchedule not exercised")
    s = res["summary"]
    check(s["geomean_vs_naive"] and s["geomean_vs_naive"] > 0, f"geomean {s['geomean_vs_naive']}")
    for line in ("1. vs naive", "2. vs PyTorch eager", "3. vs MetaSchedule", "4. GEMM vs OpenBLAS sgemm", "5. cost model",
                 "6. core ping-pong"):
        check(line in r.stdout, f"table lacks '{line}'")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
