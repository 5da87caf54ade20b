#!/usr/bin/python3
"""bench/cost_model_trials.py's reading of a tune run: the incumbents follow the tuner's own rule
(a measured trial that clears the noise and beats the best so far), their programs come from the
candidates the run's store keeps, and a run reaches the baseline's best at its first incumbent
within the margin (never, if none is)."""
import json
import os
import sqlite3
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import cost_model_trials as cmt  # noqa: E402


def write_run(folder, history, programs):
    os.makedirs(folder)
    with open(os.path.join(folder, "result.json"), "w", encoding="utf-8") as f:
        json.dump({"history": history}, f)
    db = sqlite3.connect(os.path.join(folder, "measurements.sqlite"))
    db.execute("CREATE TABLE candidates(key TEXT PRIMARY KEY, payload TEXT)")
    for i, (h, text) in enumerate(programs.items()):
        db.execute("INSERT INTO candidates VALUES(?, ?)", (str(i), json.dumps({"hash": h, "program": text})))
    db.commit()
    db.close()


class Incumbents(unittest.TestCase):
    def test_the_tuners_rule_and_the_kept_programs(self):
        history = [
            {"ok": True, "faster": True, "speedup": 2.0, "hash": "a"},
            {"ok": False, "hash": "x"},
            {"ok": True, "faster": False, "speedup": 9.0, "hash": "b"},  # within the noise: not a best
            {"ok": True, "faster": True, "speedup": 1.5, "hash": "c"},  # slower than the best so far
            {"ok": True, "faster": True, "speedup": 3.0, "hash": "d"},
        ]
        with tempfile.TemporaryDirectory() as d:
            run = os.path.join(d, "run")
            write_run(run, history, {"a": "A", "b": "B", "c": "C", "d": "D"})
            changes, texts = cmt.incumbents(run)
        self.assertEqual(changes, [(1, "a"), (5, "d")])
        self.assertEqual(texts["d"], "D")

    def test_trials_to_reach(self):
        changes = [(1, "a"), (5, "d"), (9, "e")]
        q = {"a": 0.5, "d": 0.96, "e": 1.2}
        self.assertEqual(cmt.trials_to(changes, q, 1.0 / 1.05), 5)
        self.assertEqual(cmt.trials_to(changes, q, 1.2), 9)
        self.assertIsNone(cmt.trials_to(changes, q, 1.3))


if __name__ == "__main__":
    unittest.main()
