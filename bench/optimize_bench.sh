#!/usr/bin/env bash
# The `steptp optimize` benchmark (docs/optimize.md): the first N programs of a `generate`
# output's eval split, the random and model policies with chain, greedy, beam and MCTS at a budget
# of B measured candidates each, and `steptp tune` at B trials as the non-LLM reference; prints a
# markdown table (funnel rates, pass@1, fast_p, geomean/median best speedup) and the
# sample-efficiency curves (geomean best-so-far after m measured candidates), and keeps every
# run directory under OUT.
#
#   bench/optimize_bench.sh MANIFEST OUT [MEASURE=cpu|model] [BUDGET=32] [N=10]
#
# MEASURE=model replaces timing by the analytic estimate (minutes instead of hours; no `tune`
# row, which always times). Wrap in `flock /tmp/steptp-timing.lock` with STEPTP_TIMING_LOCK=none
# when reporting figures. POLICIES and SEARCHES (space-separated) narrow the runs; the table has a
# row for every run file OUT/LABEL-SEARCH.json, so runs written there before (scripts/eval_model.sh's
# served models) stand beside the baselines.
set -euo pipefail
MANIFEST=$1 OUT=$2 MEASURE=${3:-cpu} BUDGET=${4:-32} N=${5:-10}
STEPTP=${STEPTP:-build/src/steptp}
mkdir -p "$OUT"
for policy in ${POLICIES:-random model}; do
  for search in ${SEARCHES:-chain greedy beam mcts}; do
    "$STEPTP" optimize "$MANIFEST" --limit "$N" --policy "$policy" --search "$search" --measure "$MEASURE" \
      --max-measured "$BUDGET" --depth 4 --proposals 4 --beam 2 --nodes 1000 --out "$OUT/$policy-$search" --json \
      > "$OUT/$policy-$search.json"
  done
done
if [ "$MEASURE" = cpu ]; then
  /usr/bin/python3 - "$MANIFEST" "$N" "$OUT/roots" <<'PY'
import json, os, sys
manifest, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
os.makedirs(out, exist_ok=True)
seen = []
for line in open(os.path.join(os.path.dirname(manifest), "steps.jsonl")):
    r = json.loads(line)
    if r.get("split") == "eval" and r["root"]["hash"] not in seen:
        seen.append(r["root"]["hash"])
        if len(seen) > n:
            break
        open(os.path.join(out, "%03d.leir" % (len(seen) - 1)), "w").write(r["root_program"])
PY
  mkdir -p "$OUT/tune"
  # `tune` times with the threads the optimize runs timed with (the manifest's records' threads).
  threads=$(/usr/bin/python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["threads"])' \
    "$(ls "$OUT"/*-*.json | head -1)")
  for f in "$OUT"/roots/*.leir; do
    k=$(basename "$f" .leir)
    "$STEPTP" tune "$f" --trials "$BUDGET" --threads "$threads" --out "$OUT/tune/$k" --json > "$OUT/tune/$k.json"
  done
fi
/usr/bin/python3 - "$OUT" "$BUDGET" <<'PY'
import glob, json, math, os, sys
out, budget = sys.argv[1], int(sys.argv[2])
marks = [m for m in (1, 2, 4, 8, 16, 32, 64) if m <= budget]
print("| policy | search | judged | measured | valid | equivalent | compiles | faster | pass@1 | fast_0 | fast_1 | fast_1.2 | geomean | median |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
curves = []
searches = ("chain", "greedy", "beam", "mcts", "dfs", "bfs")
runs = [os.path.basename(f)[:-5].rsplit("-", 1) for f in glob.glob(os.path.join(out, "*-*.json"))]
runs = sorted((r for r in runs if r[1] in searches), key=lambda r: (r[0] not in ("random", "model"), r[0],
                                                                      searches.index(r[1])))
for policy, search in runs:
    run = json.load(open(os.path.join(out, f"{policy}-{search}.json")))
    a = run["aggregate"]
    measured = sum(len(p["curve_measured"]) for p in run["programs"].values())
    f, r = a["funnel"], a["funnel"]["rates"]
    fp = a["fast_p_vs_naive"]
    p1 = a["pass_at_k"]["pass@1"]
    print(f"| {policy} | {search} | {f['judged']} | {measured} | {r['valid']:.2f} | {r['equivalent']:.2f} | {r['compiles']:.2f} | "
          f"{r['faster']:.2f} | {p1 if p1 is None else round(p1, 3)} | {fp['fast_0']:.2f} | {fp['fast_1']:.2f} | "
          f"{fp['fast_1.2']:.2f} | {a['geomean_speedup']:.3f} | {a['median_speedup']:.3f} |")
    c = a["curve_measured_geomean"]
    curves.append((f"{policy}-{search}", [c[min(m, len(c)) - 1] if c else 1.0 for m in marks]))
tunes = sorted(glob.glob(os.path.join(out, "tune", "*.json")))
if tunes:
    sp = [json.load(open(t))["speedup"] for t in tunes]
    g = math.exp(sum(math.log(max(s, 1e-12)) for s in sp) / len(sp))
    med = sorted(sp)[len(sp) // 2] if len(sp) % 2 else (sorted(sp)[len(sp) // 2 - 1] + sorted(sp)[len(sp) // 2]) / 2
    print(f"| tune | evolutionary | | {budget * len(sp)} trials | | | | | | | {sum(s > 1 for s in sp) / len(sp):.2f} | "
          f"{sum(s > 1.2 for s in sp) / len(sp):.2f} | {g:.3f} | {med:.3f} |")
print()
print("Sample efficiency: geomean best-so-far speedup after m measured candidates")
print()
print("| run | " + " | ".join(f"m={m}" for m in marks) + " |")
print("|---|" + "---|" * len(marks))
for name, v in curves:
    print(f"| {name} | " + " | ".join(f"{x:.3f}" for x in v) + " |")
PY
