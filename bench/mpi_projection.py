#!/usr/bin/env python3
"""Projects `mpirun -n N steptp generate` from a finished run's per-root costs (docs/mpi.md).

Reads OUT/stats.json (each root's deterministic cost_estimate, the sharding key) and
OUT/checkpoint.sqlite (each root's measured search wall time), then simulates the sharding
steptp does (longest estimate first to the least loaded rank, apps/dataset/sharding.h) for a number
of ranks, with the root set optionally replicated to a target size (bootstrap: roots drawn with
replacement, seeded). Prints the search makespan against the ideal (total / ranks) and the
Spearman correlation of estimate and time.

    bench/mpi_projection.py OUT [--ranks 1,2,64] [--roots 6300] [--jobs 1] [--seed 0]
                            [--tuned REPLAY_LOG]

--jobs: worker processes per rank (each rank's roots go round-robin to its workers, as
generate's --jobs does).

--tuned REPLAY_LOG: OUT is a 1-rank, --jobs 1 run with --trajectories tune (the tuned profiles),
written by bench/mpi_scaling.sh, whose OUT.log and OUT.json hold the run's stage lines and
summary (and OUT/../sizing.log the sizing of its roots, when there); REPLAY_LOG is the log of a replay of its store (it times nothing: what it spends
outside the tuner's replay is rank 0's serial part: filter, rewriting the records from the
store, export). Projects the whole run on N nodes with --jobs workers and one timing lock each
(one rank per node): rank 0's sizing (it alone sizes the roots) + the search (per node: its
roots' tuning over the workers, but never less than their timed seconds, which the node's lock
serializes, nor than its longest root) + the kept records' measurement (balanced over the nodes,
its timed share serialized per node) + rank 0's serial part, each per root as in this run.
--fit prints the least-squares constants of apps/dataset/sharding.h's tuned_root_cost from the
run's tuning times.
"""
import re
import argparse
import heapq
import json
import random
import sqlite3
import sys
from pathlib import Path


def ranks_of(values):
    order = sorted(range(len(values)), key=lambda i: values[i])
    r = [0.0] * len(values)
    for k, i in enumerate(order):
        r[i] = float(k)
    return r


def pearson(a, b):
    ma, mb = sum(a) / len(a), sum(b) / len(b)
    num = sum((x - ma) * (y - mb) for x, y in zip(a, b))
    den = (sum((x - ma) ** 2 for x in a) * sum((y - mb) ** 2 for y in b)) ** 0.5
    return num / den if den else 0.0


def shard(costs, parts):
    """apps/dataset/sharding.h: decreasing cost (ties: lower index), least loaded part (ties: lower part)."""
    order = sorted(range(len(costs)), key=lambda i: (-costs[i], i))
    heap = [(0, k) for k in range(parts)]
    owner = [0] * len(costs)
    for i in order:
        load, k = heapq.heappop(heap)
        owner[i] = k
        heapq.heappush(heap, (load + costs[i], k))
    return owner


def makespan(est, secs, ranks, jobs):
    owner = shard(est, ranks)
    worst = 0.0
    for r in range(ranks):
        mine = [i for i in range(len(est)) if owner[i] == r]  # in root order, as generate keeps them
        workers = [0.0] * jobs
        for k, i in enumerate(mine):
            workers[k % jobs] += secs[i]
        worst = max(worst, max(workers))
    return worst


def stage_seconds(log):
    """Stage wall times from a generate log's progress lines ("generate: search done in 1m46s")."""
    got = {}
    for m in re.finditer(r"^\S+: (\w+) done in (?:(\d+)m)?(\d+)s", log, re.M):
        got[m.group(1)] = int(m.group(2) or 0) * 60 + int(m.group(3))
    return got


def summary_of(log):
    return json.loads([line for line in log.splitlines() if line.startswith("{")][-1])


def tuned(a, out):
    stats = json.loads((out / "stats.json").read_text())
    est = {r["key"]: r["cost_estimate"] for r in stats["roots"]}
    naive = {r["key"]: r.get("naive_ms_one_thread", 0) for r in stats["roots"]}
    db = sqlite3.connect(out / "checkpoint.sqlite")
    timing = {k: json.loads(p)["timing"] for k, p in db.execute("SELECT key, payload FROM roots")}
    keys = sorted(k for k in timing if k in est)
    run_log = Path(str(out) + ".log").read_text()
    run, stages = summary_of(run_log), stage_seconds(run_log)
    replay_log = Path(a.tuned).read_text()
    replay, replay_stages = summary_of(replay_log), stage_seconds(replay_log)
    n = len(keys)
    t = [timing[k]["search_s"] for k in keys]
    timed = [timing[k].get("timed_s", 0.0) for k in keys]
    e = [est[k] for k in keys]
    if a.fit:
        trials = json.loads((out / "manifest.json").read_text())["options"]["tune_trials"]
        x = [naive[k] for k in keys]
        mx, my = sum(x) / n, sum(t) / n
        b = sum((u - mx) * (v - my) for u, v in zip(x, t)) / max(1e-12, sum((u - mx) ** 2 for u in x))
        print(f"fit per trial ({trials} trials): {(my - b * mx) / trials:.3f} s fixed + "
              f"{b / trials:.4f} s per naive ms")
    meas_wall = stages.get("measure", 0)
    bd = run["breakdown_s"]
    meas_timed_share = bd["measure"] / max(1e-9, bd["measure"] + bd["compile"])
    # mpi_scaling.sh sizes the roots once (OUT/sizing.log) and the runs reuse those facts.
    sizing_log = out.parent / "sizing.log"
    sizing = stage_seconds(sizing_log.read_text() if sizing_log.exists() else run_log).get("sizing", 0) / n
    # breakdown_s.search: the roots' tuning replayed (one worker: the stage's wall time, unrounded).
    serial = (replay["wall_s"] - replay["breakdown_s"]["search"] - replay_stages.get("sizing", 0)) / n
    q = sorted(t)
    print(f"roots {n} (1 rank, --jobs 1, wall {run['wall_s']:.0f} s): tuning per root median {q[n // 2]:.1f} s, "
          f"max {q[-1]:.1f} s, timed share {sum(timed) / max(1e-9, sum(t)):.0%}; measurement {meas_wall / n:.1f} s "
          f"per root (timed share {meas_timed_share:.0%}); rank 0: sizing {sizing:.2f} s + serial {serial:.2f} s "
          f"per root; Spearman(estimate, tuning time) = {pearson(ranks_of(e), ranks_of(t)):.3f}")
    if a.roots:
        rng = random.Random(a.seed)
        pick = [rng.randrange(n) for _ in range(a.roots)]
        e, t, timed = [e[i] for i in pick], [t[i] for i in pick], [timed[i] for i in pick]
    roots = len(t)
    print(f"projected to {roots} roots, --jobs {a.jobs} per node:")
    print("| nodes | rank 0 sizing h | search h | measurement h | rank 0 serial h | total h |")
    print("|---:|---:|---:|---:|---:|---:|")
    for nodes in (int(x) for x in a.ranks.split(",")):
        owner = shard(e, nodes)
        search = 0.0
        for r in range(nodes):
            mine = [i for i in range(roots) if owner[i] == r]
            if mine:
                search = max(search, max(sum(t[i] for i in mine) / a.jobs, sum(timed[i] for i in mine),
                                         max(t[i] for i in mine)))
        per_node = -(-roots // nodes)
        m = per_node * max(meas_wall / n / a.jobs, meas_wall / n * meas_timed_share)
        total = sizing * roots + search + m + serial * roots
        print(f"| {nodes} | {sizing * roots / 3600:.2f} | {search / 3600:.2f} | {m / 3600:.2f} | "
              f"{serial * roots / 3600:.2f} | {total / 3600:.2f} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--ranks", default="1,2,64")
    ap.add_argument("--roots", type=int, default=0, help="replicate the roots to this many (0: as they are)")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tuned", metavar="REPLAY_LOG", help="project a tuned run (see above)")
    ap.add_argument("--fit", action="store_true", help="with --tuned: fit tuned_root_cost's constants")
    a = ap.parse_args()
    out = Path(a.out)
    if a.tuned:
        tuned(a, out)
        return
    est = {r["key"]: r["cost_estimate"] for r in json.loads((out / "stats.json").read_text())["roots"]}
    db = sqlite3.connect(out / "checkpoint.sqlite")
    secs = {k: json.loads(p)["timing"]["search_s"] for k, p in db.execute("SELECT key, payload FROM roots")}
    keys = sorted(k for k in secs if k in est)
    if not keys:
        sys.exit("no roots with both a cost estimate and a timing")
    e, s = [est[k] for k in keys], [secs[k] for k in keys]
    if a.roots:
        rng = random.Random(a.seed)
        pick = [rng.randrange(len(keys)) for _ in range(a.roots)]
        e, s = [e[i] for i in pick], [s[i] for i in pick]
    q = sorted(s)
    print(f"roots {len(s)}: search total {sum(s):.1f} s, per root median {q[len(q)//2]:.3f} s, "
          f"p90 {q[int(0.9*len(q))]:.3f} s, max {q[-1]:.3f} s; "
          f"Spearman(estimate, time) = {pearson(ranks_of(e), ranks_of(s)):.3f}")
    print("| ranks | jobs/rank | makespan s | ideal s | efficiency |")
    print("|---:|---:|---:|---:|---:|")
    for n in (int(x) for x in a.ranks.split(",")):
        m = makespan(e, s, n, a.jobs)
        ideal = sum(s) / (n * a.jobs)
        print(f"| {n} | {a.jobs} | {m:.1f} | {ideal:.1f} | {ideal / m:.0%} |")


if __name__ == "__main__":
    main()
