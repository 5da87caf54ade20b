#!/usr/bin/env python3
"""Compares two `steptp strategy-sweep --results` listings (before/after a change to the strategy
layer): rows keyed by (input, strategy, site, params, occurrence), outcome = program hash and
exactness, the refusal, or the error. Prints counts, the strategies whose rows moved, the first
differences, and per strategy whose results changed the intermediate bytes of input, before and
after.

Usage: bench/compare_strategy_results.py BEFORE.jsonl AFTER.jsonl [--show N]

Layout parameters printed before 02f6dc5 as {"layout":"transpose:0,1"} are read in the typed form
{"dims":[0,1],"layout":"transpose"} so that a printing change alone is not a difference.
"""
import argparse
import collections
import json


def typed_layout(params):
    p = json.loads(params)
    layout = p.get("layout")
    if isinstance(layout, str) and ":" in layout:
        kind, rest = layout.split(":")
        nums = [int(x) for x in rest.split(",")]
        p = {"layout": kind, "dims": nums if kind == "transpose" else nums[:1]}
        if kind == "split":
            p["factor"] = nums[1]
        return json.dumps(p, sort_keys=True, separators=(",", ":"))
    return params


def load(path):
    rows, seen = {}, collections.Counter()
    with open(path) as f:
        for line in f:
            j = json.loads(line)
            key = (j["input"], j["strategy"], j.get("site"), typed_layout(j["params"]) if "params" in j else None)
            seen[key] += 1
            rows[key + (seen[key],)] = j
    return rows


def outcome(j):
    if "hash" in j:
        return ("result", j["hash"], j.get("exactness"))
    if "error" in j:
        return ("error",)
    return ("refused",)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--show", type=int, default=5)
    a = ap.parse_args()
    before, after = load(a.before), load(a.after)
    only_before = [k for k in before if k not in after]
    only_after = [k for k in after if k not in before]
    changed = [k for k in before if k in after and outcome(before[k]) != outcome(after[k])]
    same = sum(1 for k in before if k in after and outcome(before[k]) == outcome(after[k]))
    print(f"rows: before {len(before)}, after {len(after)}; same outcome {same}; changed {len(changed)}; "
          f"only before {len(only_before)}; only after {len(only_after)}")
    moved = collections.Counter(k[1] for k in changed + only_before + only_after)
    for name, n in sorted(moved.items()):
        print(f"  {name}: {n} rows differ")
    for label, keys in (("changed", changed), ("only before", only_before), ("only after", only_after)):
        for k in keys[: a.show]:
            print(f"  {label}: {k[:4]}: {outcome(before[k]) if k in before else '-'} -> "
                  f"{outcome(after[k]) if k in after else '-'}")
    sums = collections.defaultdict(lambda: [0, 0, 0, 0, 0])
    for k in changed:
        b, n = before[k], after[k]
        if "intermediate_bytes" in b and "intermediate_bytes" in n:
            s = sums[k[1]]
            s[0] += 1
            s[1] += b["intermediate_bytes"][0]
            s[2] += b["intermediate_bytes"][1]
            s[3] += n["intermediate_bytes"][1]
            s[4] += n["intermediate_bytes"][1] < b["intermediate_bytes"][1]
    for name, (n, inp, bb, aa, fewer) in sorted(sums.items()):
        print(f"  {name}: {n} changed results, intermediate bytes summed: input {inp}, before {bb}, after {aa}; "
              f"fewer in {fewer} of {n}")


if __name__ == "__main__":
    main()
