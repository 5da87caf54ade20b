"""`steptp report DIR`: the page of a small --cost model dataset, opened in headless Chromium
(Debian's chromium; scripts/deps-test.sh), renders every figure; invalid folders and a Python
without matplotlib give clear errors and a non-zero exit.

Run by ctest (report_html) with STEPTP_EXE (and STEPTP_SHARED for the tokenizer) set.
"""
import html
import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

EXE = os.environ.get("STEPTP_EXE", "build/src/steptp")
CHROMIUM = shutil.which("chromium") or "chromium"

# The figures of a dataset whose stats.json has a token comparison, in page order.
EXPECTED = ["Strategy coverage", "Label balance", "Speedup per strategy", "Trajectory depth",
            "LEIR vs lowered-code tokens", "Best-found speedup per root"]

# Injected into a copy of the page (the report itself has no script): after load, what the browser
# made of each figure goes into <pre id="steptp-check"> for --dump-dom.
CHECK = """<script>
window.addEventListener('load', () => {
  const figs = [...document.querySelectorAll('figure')].map(f => {
    const svg = f.querySelector(':scope > svg');
    const r = svg ? svg.getBoundingClientRect() : null;
    let bb = null;
    try { bb = svg.getBBox(); } catch (e) {}
    return {id: f.id, title: (f.querySelector('h2') || {}).textContent || '',
            svg: svg instanceof SVGSVGElement, width: r ? r.width : 0, height: r ? r.height : 0,
            bbox: bb ? [bb.width, bb.height] : [0, 0],
            elements: svg ? svg.querySelectorAll('*').length : 0,
            drawn: svg ? svg.querySelectorAll('path, rect, line, polyline, use').length : 0,
            texts: svg ? [...svg.querySelectorAll('text')].map(t => t.textContent) : [],
            caption: (f.querySelector('figcaption') || {}).textContent || ''};
  });
  const pre = document.createElement('pre');
  pre.id = 'steptp-check';
  pre.textContent = JSON.stringify({figures: figs, svgs: document.querySelectorAll('svg').length,
                                    resources: performance.getEntriesByType('resource').length});
  document.body.appendChild(pre);
});
</script>"""


def run(*args, **kw):
    return subprocess.run([EXE, *args], capture_output=True, text=True, timeout=300, **kw)


class Report(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="steptp_report_test_")
        cls.ds = os.path.join(cls.tmp, "ds")
        g = run("generate", "--programs", "6", "--composites", "1", "--no-examples", "--cost", "model",
                "--out", cls.ds)
        assert g.returncode == 0, g.stderr
        cls.rep = run("report", cls.ds)
        cls.html_path = os.path.join(cls.ds, "report.html")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def page_text(self):
        with open(self.html_path, encoding="utf-8") as f:
            return f.read()

    def test_writes_one_self_contained_page(self):
        self.assertEqual(self.rep.returncode, 0, self.rep.stderr)
        self.assertEqual(self.rep.stdout.strip(), self.html_path)
        h = self.page_text()
        self.assertTrue(h.startswith("<!DOCTYPE html>"))
        # Nothing loaded from elsewhere: no scripts, stylesheets, images, frames or remote URLs
        # (xmlns="http://..." namespace names are not fetched).
        for pat in [r"<script", r"<link", r"<img", r"<iframe", r"\bsrc\s*=", r'href="(?!#)', r"url\((?!#)",
                    r"@import"]:
            self.assertIsNone(re.search(pat, h, re.I), pat)
        self.assertEqual(h.count("<svg"), len(EXPECTED))
        # Captions say where the speedups come from (this dataset: the analytic model).
        self.assertIn("NOT measured", h)
        self.assertIn("analytic cost model", h)

    def test_tables_show_the_files_labels_and_eval_coverage(self):
        self.assertEqual(self.rep.returncode, 0, self.rep.stderr)
        h = self.page_text()
        with open(os.path.join(self.ds, "stats.json")) as f:
            stats = json.load(f)
        for tid in ("files", "labels", "coverage"):
            self.assertIn(f'<section id="table-{tid}"', h)
        # One row per file with its line count, as stats.json and the file itself say.
        for name, f in stats["files"].items():
            with open(os.path.join(self.ds, name)) as lines:
                self.assertEqual(sum(1 for _ in lines), f["records"], name)
            self.assertRegex(h, rf"<tr><td>{re.escape(name)}</td><td>{f['records']}</td>")
        for fam, c in stats["eval_coverage"]["per_family"].items():
            self.assertIn(f"<tr><td>{html.escape(fam)}</td><td>{c['train_roots']}</td><td>{c['eval_roots']}</td>", h)
        ls = stats["label_statistics"]
        self.assertIn(f"<tr><td>answers with a confidence interval</td><td>{ls['with_ci']}</td></tr>", h)
        self.assertIn(f"<tr><td>measured answers</td><td>{ls['measured']}</td></tr>", h)
        # The CV histogram: every measured comparison in one bucket (none here: --cost model), so
        # the page notes the figure it cannot draw.
        self.assertEqual(sum(b["comparisons"] for b in ls["cv_histogram"]), ls["measured"])
        self.assertEqual(len(ls["cv_histogram"]), 6)
        self.assertIn("<tr><td>CV histogram (comparisons per bucket)</td><td>[0, 0.01) 0, ", h)
        self.assertIn("Comparison CV: not drawn", h)

    def test_cv_histogram_of_measured_comparisons(self):
        # A measured dataset takes minutes to generate: this one's stats.json with the histogram of
        # 17 measured comparisons, as a measured run writes it (apps/dataset/label_stats.h).
        with open(os.path.join(self.ds, "stats.json")) as f:
            stats = json.load(f)
        counts = [5, 4, 3, 2, 2, 1]
        edges = [0, 0.01, 0.02, 0.05, 0.1, 0.2, None]
        stats["label_statistics"]["measured"] = sum(counts)
        stats["label_statistics"]["cv_histogram"] = [
            {"from": edges[k], "to": edges[k + 1], "comparisons": n} for k, n in enumerate(counts)]
        d = self.copy_dataset("measured_cv", stats=json.dumps(stats))
        r = run("report", d)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(d, "report.html"), encoding="utf-8") as f:
            h = f.read()
        self.assertIn("<tr><td>CV histogram (comparisons per bucket)</td><td>[0, 0.01) 5, [0.01, 0.02) 4, "
                      "[0.02, 0.05) 3, [0.05, 0.1) 2, [0.1, 0.2) 2, [0.2, inf) 1</td></tr>", h)
        self.assertNotIn("Comparison CV: not drawn", h)
        m = re.search(r'<figure id="figure-(\d+)" class="report-figure"><h2>Figure \d+\. Comparison CV</h2>(.*?)</figure>',
                      h, re.S)
        self.assertIsNotNone(m, "no Comparison CV figure")
        self.assertEqual(h.count("<svg"), len(EXPECTED) + 1)
        fig = m.group(2)
        texts = re.findall(r"<text[^>]*>([^<]*)</text>", fig)
        for b in ("[0, 0.01)", "[0.2, inf)"):
            self.assertIn(b, texts)
        # Each bar carries its count, as stats.json states it.
        for n in set(counts):
            self.assertIn(str(n), texts)
        self.assertIn("17 comparisons", fig)
        self.assertIn("(12 comparisons)", fig)  # within the quiet limit: 5 + 4 + 3
        # A histogram that is not a list of buckets is a named error.
        stats["label_statistics"]["cv_histogram"] = [{"from": 0, "to": 0.01}]
        self.bad(self.copy_dataset("bad_cv", stats=json.dumps(stats)),
                 "missing field label_statistics.cv_histogram[0].comparisons")

    def test_every_figure_renders_in_chromium(self):
        self.assertEqual(self.rep.returncode, 0, self.rep.stderr)
        page = os.path.join(self.tmp, "check.html")
        with open(page, "w", encoding="utf-8") as f:
            f.write(self.page_text().replace("</body>", CHECK + "</body>"))
        c = subprocess.run([CHROMIUM, "--headless", "--disable-gpu", "--no-sandbox", "--no-first-run",
                            f"--user-data-dir={os.path.join(self.tmp, 'chromium')}", "--window-size=1280,1024",
                            "--dump-dom", "file://" + page], capture_output=True, text=True, timeout=180)
        m = re.search(r'<pre id="steptp-check">(.*?)</pre>', c.stdout, re.S)
        self.assertIsNotNone(m, f"no check output; chromium rc {c.returncode}: {c.stderr[-2000:]}")
        check = json.loads(html.unescape(m.group(1)))
        self.assertEqual(check["resources"], 0)
        self.assertEqual(check["svgs"], len(EXPECTED))
        figs = check["figures"]
        self.assertEqual([f["title"].split(". ", 1)[1] for f in figs], EXPECTED)
        for f in figs:
            with self.subTest(figure=f["title"]):
                self.assertTrue(f["svg"], "not parsed as SVG")
                self.assertGreater(f["width"], 100)
                self.assertGreater(f["height"], 100)
                self.assertGreater(min(f["bbox"]), 50)
                self.assertGreater(f["drawn"], 10)
                self.assertGreater(len(f["texts"]), 2, "no axis labels")
                self.assertGreater(len(f["caption"]), 80)
                for t in f["texts"] + [f["caption"]]:
                    self.assertNotRegex(t, r"(?i)error|traceback|exception|nan\b")

    def test_same_dataset_same_bytes(self):
        other = os.path.join(self.tmp, "again.html")
        r = run("report", self.ds, "--out", other)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(other, encoding="utf-8") as f:
            self.assertEqual(f.read(), self.page_text())

    def copy_dataset(self, name, stats=None, steps=None):
        """A copy of the dataset's stats.json and steps.jsonl, either replaced by the text given."""
        d = os.path.join(self.tmp, name)
        os.makedirs(d)
        for f, text in (("stats.json", stats), ("steps.jsonl", steps)):
            if text is None:
                shutil.copy(os.path.join(self.ds, f), d)
            else:
                with open(os.path.join(d, f), "w") as out:
                    out.write(text)
        return d

    def bad(self, d, *expect):
        r = run("report", d)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        for e in expect:
            self.assertIn(e, r.stderr)
        self.assertFalse(os.path.exists(os.path.join(d, "report.html")))
        return r

    def test_invalid_folders_are_named_errors(self):
        missing = os.path.join(self.tmp, "nowhere")
        self.bad(missing, missing, "not a folder")
        empty = os.path.join(self.tmp, "empty")
        os.makedirs(empty)
        self.bad(empty, os.path.join(empty, "stats.json"), "missing")
        only_stats = os.path.join(self.tmp, "only_stats")
        os.makedirs(only_stats)
        shutil.copy(os.path.join(self.ds, "stats.json"), only_stats)
        self.bad(only_stats, os.path.join(only_stats, "steps.jsonl"), "missing")

        with open(os.path.join(self.ds, "steps.jsonl")) as f:
            lines = f.read().splitlines(keepends=True)
        self.bad(self.copy_dataset("bad_stats", stats='{"records": 3,'), "stats.json: malformed JSON")
        self.bad(self.copy_dataset("stats_field", stats='{"records": 3, "per_strategy": {}}'),
                 "stats.json: missing field speedup_measured")
        self.bad(self.copy_dataset("bad_line", steps=lines[0] + "{not json\n" + "".join(lines[2:])),
                 "steps.jsonl:2: malformed JSON")
        rec = json.loads(lines[0])
        del rec["answers"][0]["cost"]["speedup_vs_parent"]
        self.bad(self.copy_dataset("bad_field", steps=json.dumps(rec) + "\n" + "".join(lines[1:])),
                 "steps.jsonl:1: missing field answers[0].cost.speedup_vs_parent")
        self.bad(self.copy_dataset("short", steps=lines[0]), "steps.jsonl: 1 records", f"counts {len(lines)}")

    def test_missing_matplotlib_says_what_to_install(self):
        # Debian's dist-packages come from the site module: without it, matplotlib is not found.
        py = os.path.join(self.tmp, "python-no-site")
        with open(py, "w") as f:
            f.write('#!/bin/sh\nexec /usr/bin/python3 -S "$@"\n')
        os.chmod(py, 0o755)
        out = os.path.join(self.tmp, "nompl.html")
        r = run("report", self.ds, "--out", out, "--python", py)
        self.assertEqual(r.returncode, 1)
        self.assertIn("install Debian's python3-matplotlib", r.stderr)
        self.assertFalse(os.path.exists(out))


if __name__ == "__main__":
    unittest.main()
