#!/usr/bin/env python3
"""Projects `mpirun -n N steptp generate` from a finished run's per-root costs (docs/mpi.md).

Reads OUT/stats.json (each root's deterministic cost_estimate, the sharding key) and
OUT/checkpoint.sqlite (each root's measured search wall time), then simulates the sharding
steptp does (longest estimate first to the least loaded rank, dataset/sharding.h) for a number
of ranks, with the root set optionally replicated to a target size (bootstrap: roots drawn with
replacement, seeded). Prints the search makespan against the ideal (total / ranks) and the
Spearman correlation of estimate and time.

    bench/mpi_projection.py OUT [--ranks 1,2,64] [--roots 6300] [--jobs 1] [--seed 0]

--jobs: worker processes per rank (each rank's roots go round-robin to its workers, as
generate's --jobs does).
"""
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
    """dataset/sharding.h: decreasing cost (ties: lower index), least loaded part (ties: lower part)."""
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


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--ranks", default="1,2,64")
    ap.add_argument("--roots", type=int, default=0, help="replicate the roots to this many (0: as they are)")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    out = Path(a.out)
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
