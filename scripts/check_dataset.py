#!/usr/bin/env python3
"""Checks a `steptp generate` output folder against what its records must teach (issue 35).

Usage: scripts/check_dataset.py OUT [--json] [--min-records N --min-sft N --min-strategies N
                                      --min-best-found X --min-improving-share S]

Checks (each prints a line; exit 1 if any fails):
  * hindsight: no assistant <think> of any chat file holds an outcome or hindsight phrase, and every
    number in it appears in the user message, the answer, or the answered step's effect facts
    (steps.jsonl `answers[].effect`: computed from the prompt's program and the answer —
    docs/dataset.md "Chain of thought");
  * SFT: every answer of the SFT files is labelled improving or enabling (an enabling step is slower
    only when its path pays off); no prompt twice with different targets;
  * one speedup per program: the speedup over the root a prompt states equals the one the record
    that produced that program measured (>= 95 % within 5 %);
  * eval: roots from the conv, matmul/GEMM and attention families; no record above 16k tokens;
  * counts, when thresholds are given (the main job's: docs/dataset.md "The main job").
The figures (counts per file, strategy shares, label shares, best-found median) are printed too.
"""
import argparse
import collections
import json
import pathlib
import re
import statistics
import sys

HINDSIGHT = ["measured", "measurement", "verified", "verification", "trials", "label", "improving", "enabling",
             "trajectory", "best-found", "later steps", "learned model", "cost model", "estimate", "predicted",
             "as expected", "contrary to", "outcome", "noise", "median", " ms", "speedup of", "times faster"]
NUMBER = re.compile(r"(?<![A-Za-z0-9_.])[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
THINK = re.compile(r"<think>(.*?)</think>", re.S)
STATED_SPEEDUP = re.compile(r"Speedup of the current program over the root: ([0-9.eE+-]+) \(measured\)")
MAX_TOKENS = 16384
FAMILY_GROUPS = {"conv": ("conv",), "matmul/GEMM": ("matmul", "gemm"), "attention": ("attention", "mha", "mqa", "gqa")}


def lines(path):
    with open(path) as f:
        return [json.loads(x) for x in f if x.strip()]


def numbers(text):
    return set(NUMBER.findall(text))


def number_forms(v, out):
    """Every number of a JSON value, as written in JSON and with common roundings."""
    if isinstance(v, bool) or v is None:
        return
    if isinstance(v, (int, float)):
        out.add(json.dumps(v))
        if isinstance(v, float) and v.is_integer():
            out.add(str(int(v)))
    elif isinstance(v, str):
        out |= numbers(v)
    elif isinstance(v, dict):
        for x in v.values():
            number_forms(x, out)
    elif isinstance(v, list):
        for x in v:
            number_forms(x, out)


def rounded_from(x, allowed):
    """Whether `x` is one of the allowed numbers written with fewer decimals (the CoT rounds shares)."""
    decimals = len(x.split(".")[1]) if "." in x and "e" not in x.lower() else None
    if decimals is None:
        return False
    for v in allowed:
        try:
            if round(float(v), decimals) == float(x):
                return True
        except ValueError:
            pass
    return False


def message_text(m):
    return m["content"] if isinstance(m, dict) else ""


def chats(out):
    """(file, user text, assistant text, record id) of every chat line with an answer."""
    for path in sorted(out.glob("*.jsonl")):
        if path.name == "steps.jsonl" or path.name.startswith("rl_prompts"):
            continue
        for row in lines(path):
            rc = row.get("reward_context", {})
            key = (rc.get("record_id", ""), rc.get("parent_hash", ""))
            if "messages" in row:
                msgs = row["messages"]
                yield path.name, message_text(msgs[1]), message_text(msgs[-1]), key
            elif "completion" in row:
                yield path.name, message_text(row["prompt"][-1]), message_text(row["completion"][0]), key
            elif "chosen" in row:
                user = message_text(row["prompt"][-1])
                yield path.name, user, message_text(row["chosen"][0]), key
                yield path.name, user, message_text(row["rejected"][0]), key


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--min-records", type=int, default=0)
    ap.add_argument("--min-sft", type=int, default=0)
    ap.add_argument("--min-strategies", type=int, default=0)
    ap.add_argument("--min-best-found", type=float, default=0)
    ap.add_argument("--min-improving-share", type=float, default=0)
    a = ap.parse_args()
    out = pathlib.Path(a.out)
    steps = lines(out / "steps.jsonl")
    by_id = {r["id"]: r for r in steps}
    # The effect facts of every step from a state (a DPO or RL line groups the answers of all
    # records at one prompt under the first record's id).
    effects_at = collections.defaultdict(set)
    for r in steps:
        for ans in r["answers"]:
            number_forms(ans.get("effect", {}), effects_at[r.get("parent_hash", "")])
            number_forms(ans.get("params", {}), effects_at[r.get("parent_hash", "")])
    failures, figures = [], {}

    def check(ok, what):
        print(("ok    " if ok else "FAIL  ") + what)
        if not ok:
            failures.append(what)

    # Hindsight and numbers.
    bad_phrase, bad_number, thinks = [], [], 0
    for name, user, asst, (rid, parent) in chats(out):
        m = THINK.search(asst)
        if not m:
            continue
        thinks += 1
        think = m.group(1)
        low = think.lower()
        found = [p for p in HINDSIGHT if p in low] + (["step N"] if re.search(r"step [0-9]", low) else [])
        if found:
            bad_phrase.append((name, rid, found))
        allowed = numbers(user) | numbers(asst[m.end():]) | effects_at[parent]
        stray = sorted(x for x in numbers(think) - allowed if not rounded_from(x, allowed))
        if stray:
            bad_number.append((name, rid, stray[:5]))
    check(thinks > 0 and not bad_phrase,
          f"{thinks} <think> texts, {len(bad_phrase)} with an outcome/hindsight phrase {bad_phrase[:2]}")
    check(thinks > 0 and not bad_number,
          f"{len(bad_number)} <think> texts with a number neither in the prompt, the answer nor its effect facts "
          f"{bad_number[:2]}")

    # SFT targets.
    sft_bad, sft_prompts, sft_answers = [], collections.defaultdict(set), collections.Counter()
    sft_lines = 0
    for path in sorted(out.glob("sft_messages_*.jsonl")):
        for row in lines(path):
            sft_lines += 1
            for o in row.get("step_outcome", {}).get("answers", []):
                sft_answers[o.get("strategy")] += 1
                if o.get("label") not in ("improving", "enabling"):
                    sft_bad.append((row["reward_context"]["record_id"], o.get("label")))
            prompt = row["messages"][0]["content"] + "\n" + row["messages"][1]["content"]
            sft_prompts[prompt].add(row["messages"][2]["content"])
    contradicting = sum(1 for v in sft_prompts.values() if len(v) > 1)
    check(sft_lines > 0 and not sft_bad, f"{sft_lines} SFT lines, {len(sft_bad)} answers neither improving nor enabling")
    check(contradicting == 0, f"{contradicting} SFT prompts with different targets")
    loop = sft_answers["loop_reorder"] + sft_answers["loop_vectorization"]
    figures["sft_loop_share"] = round(loop / max(1, sum(sft_answers.values())), 4)

    # One speedup over the root per program.
    produced = {}
    for r in steps:
        for ans in r["answers"]:
            if ans["cost"].get("measured"):
                produced[(r["root"]["key"], ans["result_hash"])] = ans["cost"]["speedup_vs_root"]
    agree = total = 0
    for r in steps:
        if r.get("depth", 1) <= 1 or not r.get("parent_speedup_measured"):
            continue
        p = produced.get((r["root"]["key"], r.get("parent_hash")))
        if p is None:
            continue
        total += 1
        agree += abs(r["parent_speedup_vs_root"] / p - 1) <= 0.05
    share = agree / total if total else 1.0
    figures["speedup_agreement"] = {"checked": total, "agree": agree}
    check(share >= 0.95, f"stated current speedup agrees within 5 % with its producing record: {agree} of {total}")
    stated_bad = 0
    for name, user, _, (rid, _) in chats(out):
        m = STATED_SPEEDUP.search(user)
        r = by_id.get(rid)
        if m and r and abs(float(m.group(1)) / r["parent_speedup_vs_root"] - 1) > 1e-3:
            stated_bad += 1
    check(stated_bad == 0, f"{stated_bad} prompts whose stated speedup differs from their record's")

    # Eval coverage and token cap.
    eval_families = {r["root"]["family"].lower() for r in steps if r.get("split") == "eval"}
    eval_keys = {r["root"]["key"].lower() for r in steps if r.get("split") == "eval"}
    for group, words in FAMILY_GROUPS.items():
        hit = any(w in f for f in eval_families | eval_keys for w in words)
        check(hit, f"eval holds a {group} root")
    over = [r["id"] for r in steps if r.get("tokens", 0) > MAX_TOKENS]
    check(not over, f"{len(over)} records above {MAX_TOKENS} tokens")

    # Counts.
    files = {p.name: sum(1 for _ in open(p)) for p in sorted(out.glob("*.jsonl"))}
    figures["files"] = files
    figures["records"] = len(steps)
    figures["sft_lines"] = sft_lines
    stats = json.loads((out / "stats.json").read_text())
    strategies = {a["strategy"] for r in steps for a in r["answers"]}
    figures["strategies"] = len(strategies)
    singles = [r["answers"][0] for r in steps if r["kind"] == "single"]
    improving = sum(a["label"] == "improving" for a in singles)
    figures["improving_share_single"] = round(improving / max(1, len(singles)), 4)
    figures["labels_single"] = dict(collections.Counter(a["label"] for a in singles))
    best = stats.get("best_found_speedup", {})
    figures["best_found_median"] = best.get("median")
    figures["best_found_roots"] = best.get("roots")
    check(len(steps) >= a.min_records, f"{len(steps)} measured records (>= {a.min_records})")
    check(sft_lines >= a.min_sft, f"{sft_lines} SFT lines (>= {a.min_sft})")
    check(len(strategies) >= a.min_strategies, f"{len(strategies)} strategies (>= {a.min_strategies})")
    check((best.get("median") or 0) >= a.min_best_found,
          f"best-found median {best.get('median')} (>= {a.min_best_found})")
    check(figures["improving_share_single"] >= a.min_improving_share,
          f"improving share of single-step records {figures['improving_share_single']} (>= {a.min_improving_share})")
    print(json.dumps(figures, indent=None if not a.json else 1))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
