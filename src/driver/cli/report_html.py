#!/usr/bin/python3
"""The page of `steptp report DIR`: figures and tables of a dataset written by `steptp generate`.

usage: report_html.py DIR OUT.html

Reads DIR/stats.json and DIR/steps.jsonl (the C++ command has validated both) and writes ONE
self-contained HTML page: every figure is an inline SVG drawn by matplotlib (Debian's
python3-matplotlib), with a caption that says what it measures and whether speedups were measured
or come from the analytic cost model, and tables of the files by training method, the label
statistics and the eval coverage per family (from stats.json). No scripts, stylesheets, fonts or
images are loaded from anywhere. The same inputs give the same bytes (fixed SVG hash salt, no dates).

The steptp binary carries this file (src/CMakeLists.txt embeds it) and runs it with
/usr/bin/python3; exit status 3 means matplotlib is missing.
"""
import html
import io
import json
import math
import os
import re
import statistics
import sys

try:
    import matplotlib

    matplotlib.use("svg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker
except ImportError as e:  # the C++ side turns this into "install python3-matplotlib"
    print(f"matplotlib is not importable: {e}", file=sys.stderr)
    sys.exit(3)

plt.rcParams.update({
    "svg.hashsalt": "steptp-report",  # deterministic element ids
    "svg.fonttype": "none",  # text stays text (smaller, searchable)
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
})

TRAIN, EVAL = "#3b6ea5", "#e8a33d"
IMPROVING, ENABLING, NON_IMPROVING = "#2e8b57", "#8fbc8f", "#b0b0b0"


def load(d):
    with open(os.path.join(d, "stats.json")) as f:
        stats = json.load(f)
    steps = []
    with open(os.path.join(d, "steps.jsonl")) as f:
        for line in f:
            if line.strip():
                steps.append(json.loads(line))
    return stats, steps


def singles(steps):
    """(record, answer) of every single-answer record."""
    return [(r, r["answers"][0]) for r in steps if r["kind"] == "single"]


def svg_of(fig, k):
    """The figure as an inline <svg> element whose ids cannot clash with another figure's."""
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)
    s = buf.getvalue()
    s = s[s.index("<svg"):]
    p = f"f{k}-"
    s = re.sub(r'\bid="([^"]+)"', lambda m: f'id="{p}{m.group(1)}"', s)
    s = s.replace('href="#', f'href="#{p}').replace("url(#", f"url(#{p}")
    return s


def log_ticks(ax, values):
    """Readable ticks (0.5, 1, 2, 5, ...) on a log x axis spanning `values` and 1."""
    lo, hi = min(list(values) + [1.0]), max(list(values) + [1.0])
    ticks = [m * 10.0 ** e for e in range(math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1)
             for m in (1, 2, 5)]
    ticks = [t for t in ticks if lo / 1.5 <= t <= hi * 1.5]
    ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())


def cost_words(stats):
    if stats.get("speedup_measured"):
        return "Speedups are measured (CPU backend, interleaved timing against parent and root)."
    return ("Speedups are NOT measured: they come from the analytic cost model "
            "(generate --cost model).")


def fig_coverage(stats, steps):
    per = stats["per_strategy"]
    names = sorted(set(per) | set(stats.get("strategies_uncovered", [])))
    names.sort(key=lambda s: (per.get(s, {}).get("train", 0) + per.get(s, {}).get("eval", 0), s))
    tr = [per.get(s, {}).get("train", 0) for s in names]
    ev = [per.get(s, {}).get("eval", 0) for s in names]
    fig, ax = plt.subplots(figsize=(8, 0.5 + 0.2 * len(names)))
    y = range(len(names))
    ax.barh(y, tr, color=TRAIN, label="train")
    ax.barh(y, ev, left=tr, color=EVAL, label="eval")
    ax.set_yticks(list(y), [s if per.get(s) else s + " (none)" for s in names])
    ax.set_xlabel("records in which the strategy is an answer")
    ax.set_ylim(-0.6, len(names) - 0.4)
    ax.legend(loc="lower right")
    covered = stats.get("strategies_covered", sum(1 for s in names if per.get(s)))
    total = stats.get("strategies_total", len(names))
    cap = (f"Strategy coverage: records (single- and multi-answer) in which each strategy is an "
           f"answer, split into train and eval (stats.json per_strategy). {covered} of {total} "
           f"strategies covered; strategies marked (none) have no record.")
    return "Strategy coverage", cap, fig


def fig_labels(stats, steps):
    sg = singles(steps)
    multi = [a for r in steps if r["kind"] == "multi" for a in r["answers"]]
    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(9, max(2.5, 0.5 + 0.2 * len({a["strategy"] for _, a in sg}))),
                                   gridspec_kw={"width_ratios": [1, 2.2]})
    groups = [("single-answer\nrecords", [a for _, a in sg]), ("answers of\nmulti-answer\nrecords", multi)]
    imp = [sum(a["label"] == "improving" for a in g) for _, g in groups]
    ena = [sum(a["label"] == "enabling" for a in g) for _, g in groups]
    non = [len(g) - i - e for (_, g), i, e in zip(groups, imp, ena)]
    x = range(len(groups))
    ax0.bar(x, imp, color=IMPROVING, label="improving")
    if any(ena):  # tuned trajectories only (docs/dataset.md)
        ax0.bar(x, ena, bottom=imp, color=ENABLING, label="enabling")
    ax0.bar(x, non, bottom=[i + e for i, e in zip(imp, ena)], color=NON_IMPROVING, label="non_improving")
    ax0.set_xticks(list(x), [g for g, _ in groups])
    ax0.set_ylabel("count")
    ax0.legend(loc="upper right")
    per = {}
    for _, a in sg:
        n, i = per.get(a["strategy"], (0, 0))
        per[a["strategy"]] = (n + 1, i + (a["label"] == "improving"))
    names = sorted(per, key=lambda s: (per[s][1] / per[s][0], s))
    shares = [per[s][1] / per[s][0] for s in names]
    y = range(len(names))
    ax1.barh(y, shares, color=IMPROVING)
    for k, s in enumerate(names):
        ax1.text(min(shares[k], 1.0) + 0.01, k, f"{per[s][1]}/{per[s][0]}", va="center", fontsize=7)
    ax1.set_yticks(list(y), names, fontsize=7)
    ax1.set_xlim(0, 1.15)
    ax1.set_ylim(-0.6, len(names) - 0.4)
    ax1.set_xlabel("improving share of single-answer records")
    total = len(sg)
    share = sum(imp[:1]) / total if total else 0.0
    cap = (f"Label balance: improving vs non_improving answers (left) and, per strategy, the share of "
           f"its single-answer records labelled improving (right, improving/records). Overall "
           f"{imp[0]} of {total} single-answer records improving ({share:.1%})"
           + (f", {ena[0]} enabling" if ena[0] else "") +
           f". A step is improving when its speedup over its parent reaches the improve threshold and "
           f"clears the timing noise; enabling when it is a step of a tuned root's best path that is not "
           f"faster on its own but that later steps of the path make pay off. {cost_words(stats)}")
    return "Label balance", cap, fig


def fig_speedups(stats, steps):
    per = {}
    dropped = 0
    for _, a in singles(steps):
        v = a["cost"]["speedup_vs_parent"]
        if isinstance(v, (int, float)) and v > 0 and math.isfinite(v):
            per.setdefault(a["strategy"], []).append(v)
        else:
            dropped += 1
    names = sorted(per, key=lambda s: (statistics.median(per[s]), s))
    fig, ax = plt.subplots(figsize=(8, 0.6 + 0.22 * max(1, len(names))))
    data = [per[s] for s in names]
    if data:
        ax.boxplot(data, vert=False, widths=0.6, showfliers=False,
                   medianprops={"color": "#c0392b"}, boxprops={"color": "#555555"})
        for k, vals in enumerate(data):
            jitter = [((j * 0.6180339) % 1.0 - 0.5) * 0.35 for j in range(len(vals))]
            ax.scatter(vals, [k + 1 + d for d in jitter], s=6, color=TRAIN, alpha=0.6, zorder=3)
        ax.set_yticks(range(1, len(names) + 1), [f"{s} ({len(per[s])})" for s in names], fontsize=7)
    ax.set_xscale("log")
    log_ticks(ax, [v for vals in data for v in vals])
    ax.axvline(1.0, color="black", lw=0.8, ls="--")
    ax.set_xlabel("speedup over the parent (log scale; > 1 is faster)")
    ax.set_ylim(0.4, len(names) + 0.6)
    cap = (f"Speedup distributions per strategy: speedup_vs_parent of every single-answer record "
           f"(box: quartiles, red: median, dots: records; count in brackets), log scale, dashed line "
           f"at 1. {cost_words(stats)}")
    if dropped:
        cap += f" {dropped} records without a positive finite speedup are not drawn."
    return "Speedup per strategy", cap, fig


def fig_depth(stats, steps):
    dist = stats["depth_distribution"]
    depths = [d["depth"] for d in dist]
    single = [d["single"] for d in dist]
    multi = [d["multi"] for d in dist]
    fig, ax = plt.subplots(figsize=(6, 3))
    ax.bar(depths, single, color=TRAIN, label="single-answer")
    ax.bar(depths, multi, bottom=single, color=EVAL, label="multi-answer")
    ax.set_xticks(depths)
    ax.set_xlabel("depth of the record's step (1 = the first step from the root)")
    ax.set_ylabel("records")
    ax.legend()
    cap = ("Trajectory depth distribution: records per depth of their step (1 = a step from the root "
           "program, 2 = from a state one step away, ...), single- and multi-answer (stats.json "
           "depth_distribution).")
    return "Trajectory depth", cap, fig


def fig_tokens(stats, steps):
    tc = stats.get("token_comparison")
    if not tc or not tc.get("compared"):
        return None
    cols = [("leir", "LEIR body"), ("leir_decl", "LEIR with\ndeclarations"), ("tvmscript", "TVMScript"),
            ("cpp", "C++ (OpenMP)"), ("cuda", "CUDA C")]
    cols = [(c, lab) for c, lab in cols if c in tc["median"]]
    med = [tc["median"][c] for c, _ in cols]
    fig, ax = plt.subplots(figsize=(7, 3.2))
    bars = ax.bar(range(len(cols)), med, color=[TRAIN, TRAIN, EVAL, EVAL, EVAL][:len(cols)])
    for b, (c, _) in zip(bars, cols):
        r = tc.get("ratio_of_totals", {}).get(f"{c}/leir")
        txt = f"{b.get_height():.0f}" + (f"\n{r:.2f}x" if r is not None and c != "leir" else "")
        ax.text(b.get_x() + b.get_width() / 2, b.get_height(), txt, ha="center", va="bottom", fontsize=8)
    ax.set_xticks(range(len(cols)), [lab for _, lab in cols])
    ax.set_ylabel("Qwen3 tokens per program (median)")
    ax.set_ylim(0, max(med) * 1.3 if med else 1)
    excl = ", ".join(f"{t} {v['count']}" for t, v in tc.get("excluded", {}).items() if v.get("count"))
    cap = (f"LEIR vs TVMScript / C++ / CUDA token counts (the Step-TP paper's Figure 4 analogue): "
           f"median Qwen3 tokens per program over the {tc['compared']} programs every target lowers "
           f"(of {tc.get('programs', tc['compared'])} sampled from {tc.get('distinct_programs', '?')} "
           f"distinct programs of the dataset); labels give the ratio of totals to the LEIR body "
           f"(stats.json token_comparison).")
    if excl:
        cap += f" Excluded because a target rejected them: {excl}."
    return "LEIR vs lowered-code tokens", cap, fig


def fig_best(stats, steps):
    best = {r["key"]: r["speedup_vs_root"] for r in stats["best_found_speedup"]["per_root"]}
    keys = sorted(best, key=lambda k: (best[k], k))
    fig, ax = plt.subplots(figsize=(8, 0.6 + 0.2 * max(1, len(keys))))
    vals = [best[k] for k in keys]
    ax.hlines(range(len(keys)), 1.0, vals, color=IMPROVING, lw=2)  # from "no faster" to the best
    ax.scatter(vals, range(len(keys)), color=IMPROVING, s=18, zorder=3)
    ax.set_yticks(range(len(keys)), keys, fontsize=7)
    ax.set_xscale("log")
    log_ticks(ax, best.values())
    ax.axvline(1.0, color="black", lw=0.8, ls="--")
    med = stats["best_found_speedup"]["median"] if best else float("nan")
    if best:
        ax.axvline(med, color="#c0392b", lw=1.0, label=f"median {med:.3g}")
        ax.legend(loc="lower right")
    ax.set_ylim(-0.6, len(keys) - 0.4)
    ax.set_xlabel("best speedup over the root among its records (log scale)")
    cap = (f"Best-found speedup per root: the largest speedup_vs_root over each root's single-answer "
           f"records; median over {len(keys)} roots {med:.4g} (stats.json best_found_speedup). "
           f"{cost_words(stats)}")
    return "Best-found speedup per root", cap, fig


def cv_bucket(b):
    """A cv_histogram bucket's name: "[0.01, 0.02)", "[0.2, inf)"."""
    return f"[{b['from']:g}, {'inf' if b['to'] is None else format(b['to'], 'g')})"


def fig_cv(stats, steps):
    ls = stats.get("label_statistics") or {}
    hist = ls.get("cv_histogram")
    if not hist or not ls.get("measured"):
        return None
    counts = [b["comparisons"] for b in hist]
    fig, ax = plt.subplots(figsize=(7, 3))
    # The quiet limit (measurement.h kQuietCv): a session above it is timed again.
    colors = [IMPROVING if b["to"] is not None and b["to"] <= 0.05 else NON_IMPROVING for b in hist]
    bars = ax.bar(range(len(hist)), counts, color=colors)
    for bar, n in zip(bars, counts):
        ax.text(bar.get_x() + bar.get_width() / 2, bar.get_height(), str(n), ha="center", va="bottom", fontsize=8)
    ax.set_xticks(range(len(hist)), [cv_bucket(b) for b in hist])
    ax.set_xlabel("CV of the comparison with the parent (the larger of its two timings)")
    ax.set_ylabel("measured answers")
    ax.set_ylim(0, max(counts) * 1.2 or 1)
    quiet = sum(n for n, c in zip(counts, colors) if c == IMPROVING)
    cap = (f"Measurement noise: the coefficient of variation (standard deviation / mean) of each measured "
           f"answer's comparison with its parent, the larger of the parent's and the result's, counted in "
           f"buckets (stats.json label_statistics.cv_histogram; {ls['measured']} comparisons). Green "
           f"buckets lie within the quiet limit 0.05 ({quiet} comparisons); a noisier session was timed "
           f"again unless its interval already decided the label, and every label rests on the "
           f"confidence interval of the speedup. {cost_words(stats)}")
    return "Comparison CV", cap, fig


FIGURES = [fig_coverage, fig_labels, fig_speedups, fig_depth, fig_tokens, fig_best, fig_cv]

CSS = """body{font-family:sans-serif;max-width:60rem;margin:1rem auto;padding:0 1rem;color:#222}
figure{margin:1.5rem 0;border-top:1px solid #ddd;padding-top:.5rem}
figure svg{max-width:100%;height:auto}figcaption{font-size:.9rem;color:#444}
table{border-collapse:collapse}td,th{padding:.1rem .6rem;text-align:left;border-bottom:1px solid #eee}
.note{color:#8a5a00}"""


def pct(x):
    return f"{x:.1%}" if isinstance(x, (int, float)) else "?"


def q3(q):
    """"p25 / median / p75" of a stats.json quantile object ("-" when empty)."""
    if not q or "median" not in q:
        return "-"
    return f"{q['p25']:.4g} / {q['median']:.4g} / {q['p75']:.4g} (max {q['max']:.4g}, n {q['count']})"


def tables(stats):
    """The stats.json tables: files by training method, label statistics, eval coverage per family
    (as (id, title, caption, header, rows)); datasets from before those fields have none."""
    out = []
    files = stats.get("files")
    if files:
        rows = []
        for name, f in files.items():
            top = sorted(f["per_strategy"].items(), key=lambda kv: (-kv[1], kv[0]))[:3]
            rows.append([name, f["records"], f["answers"], pct(f["loop_reorder_vectorization_share"]),
                         ", ".join(f"{s} {n}" for s, n in top), f["dropped_over_token_cap"]])
        loop = stats.get("sft_loop_share", {})
        cap = stats.get("token_cap", {})
        out.append(("files", "Files by training method",
                    f"Lines per file (stats.json files); answers: those the file teaches (SFT), the chosen "
                    f"ones (DPO) or those known for the prompt (RL). loop_reorder + loop_vectorization are "
                    f"{pct(loop.get('share'))} of the SFT answers (goal at most {pct(loop.get('goal_at_most'))}). "
                    f"Token cap {cap.get('limit', '?')} Qwen3 tokens: {cap.get('records_dropped', 0)} records "
                    f"dropped before export, the last column counts lines dropped per file.",
                    ["file", "lines", "answers", "loop share", "top strategies", "over cap"], rows))
    ls = stats.get("label_statistics")
    if ls:
        rows = [["labels", ", ".join(f"{k} {v}" for k, v in sorted(ls["labels"].items()))],
                ["measured answers", ls["measured"]],
                ["CV of the comparison with the parent (p25 / median / p75)", q3(ls["comparison_cv"])],
                ["CV above 0.05 / 0.1", f"{ls['cv_above']['0.05']} / {ls['cv_above']['0.1']}"],
                ["CV histogram (comparisons per bucket)",
                 ", ".join(f"{cv_bucket(b)} {b['comparisons']}" for b in ls.get("cv_histogram", [])) or "-"],
                ["repeats per side (p25 / median / p75)", q3(ls["repeats"])],
                ["answers with a confidence interval", ls["with_ci"]],
                ["interval low bound", q3(ls["ci_low"])],
                ["interval high bound", q3(ls["ci_high"])],
                ["intervals containing 1", ls["ci_contains_1"]],
                ["noise verdicts", ", ".join(f"{k} {v}" for k, v in sorted(ls["noise_verdicts"].items())) or "-"]]
        out.append(("labels", "Label statistics",
                    "Over every answer of steps.jsonl (stats.json label_statistics): the larger coefficient of "
                    "variation of the two timings of each comparison against the parent, the repeats behind "
                    "them, and the confidence interval of the speedup over the parent where the records carry "
                    "one. " + cost_words(stats), ["", "value"], rows))
    cov = stats.get("eval_coverage")
    if cov:
        rows = [[f, c["train_roots"], c["eval_roots"], c["train_records"], c["eval_records"], c["held_out"]]
                for f, c in cov["per_family"].items()]
        sp = stats.get("split", {}).get("median_tokens", {})
        out.append(("coverage", "Eval coverage per family",
                    f"Roots and records of each family in train and eval (stats.json eval_coverage): eval holds "
                    f"out whole roots within every family with at least 3 roots and some whole smaller families; "
                    f"{cov['families_in_eval']} of {cov['families']} families have eval records. Median record "
                    f"tokens: train {sp.get('train', '?')}, eval {sp.get('eval', '?')} (ratio {sp.get('ratio', '?')}).",
                    ["family", "train roots", "eval roots", "train records", "eval records", "held out"], rows))
    return out


def page(d, stats, steps):
    figs, notes = [], []
    skipped = {fig_tokens: "LEIR vs lowered-code tokens: not drawn, stats.json has no token_comparison "
                           "(the dataset was generated with --token-sample 0).",
               fig_cv: "Comparison CV: not drawn, stats.json has no measured comparison "
                       "(label_statistics.cv_histogram; the dataset's speedups are not measured or it predates "
                       "the histogram)."}
    for f in FIGURES:
        out = f(stats, steps)
        if out is None:
            notes.append(skipped[f])
            continue
        figs.append(out)
    share = stats["improving_share"]
    imp, n_single = share["improving"], share["single"]
    rows = [("records", f"{stats['records']} ({stats.get('train', '?')} train, {stats.get('eval', '?')} eval; "
                        f"{stats.get('single', '?')} single-answer, {stats.get('multi', '?')} multi-answer)"),
            ("strategies covered", f"{stats.get('strategies_covered', '?')} of {stats.get('strategies_total', '?')}"),
            ("improving single-answer records", f"{imp} of {n_single}" + (f" ({imp / n_single:.1%})" if n_single else "")),
            ("speedups", "measured" if stats.get("speedup_measured") else "analytic cost model (not measured)")]
    q = stats.get("speedup_vs_parent") or {}
    if "median" in q:
        rows.append(("median speedup over parent", f"{q['median']:.4g}"))
    m = stats.get("measurement") or {}
    if "trimmed_path_steps" in m:
        rows.append(("tuned path steps after the best state", f"{m['trimmed_path_steps']} single-answer records, "
                                                              "dropped (paths end at their best state)"))
    b = stats.get("best_found_speedup") or {}
    if b.get("median") is not None:
        rows.append(("median best-found speedup per root", f"{b['median']:.4g} over {b.get('roots', '?')} roots"))
    e = html.escape
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           f"<title>steptp dataset report: {e(os.path.basename(os.path.abspath(d)))}</title>",
           f"<style>{CSS}</style></head><body>",
           f"<h1>steptp dataset report</h1><p>{e(os.path.abspath(d))}: stats.json and steps.jsonl.</p>",
           "<table>" + "".join(f"<tr><th>{e(k)}</th><td>{e(v)}</td></tr>" for k, v in rows) + "</table>"]
    for n in notes:
        out.append(f'<p class="note">{e(n)}</p>')
    for tid, title, cap, header, trows in tables(stats):
        out.append(f'<section id="table-{tid}" class="report-table"><h2>{e(title)}</h2><table>')
        out.append("<tr>" + "".join(f"<th>{e(str(h))}</th>" for h in header) + "</tr>")
        for r in trows:
            out.append("<tr>" + "".join(f"<td>{e(str(c))}</td>" for c in r) + "</tr>")
        out.append(f"</table><p>{e(cap)}</p></section>")
    for k, (title, cap, fig) in enumerate(figs, 1):
        out.append(f'<figure id="figure-{k}" class="report-figure"><h2>Figure {k}. {e(title)}</h2>')
        out.append(svg_of(fig, k))
        out.append(f"<figcaption>{e(cap)}</figcaption></figure>")
    out.append("</body></html>\n")
    return "\n".join(out)


def main(argv):
    if len(argv) != 3:
        print("usage: report_html.py DIR OUT.html", file=sys.stderr)
        return 2
    d, out = argv[1], argv[2]
    stats, steps = load(d)
    text = page(d, stats, steps)
    tmp = out + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
