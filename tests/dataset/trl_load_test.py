"""The files by training method load with TRL's data utilities, as its trainers load them.

A small --cost model dataset is generated with STEPTP_EXE; then, in .venv-datasets (PyPI datasets,
transformers and trl without torch: scripts/deps-python.sh), every file is read with
datasets.load_dataset("json") and each row must be conversational for trl.data_utils, and
maybe_apply_chat_template with the Qwen3 tokenizer (STEPTP_SHARED/tokenizers/qwen3) must give
the text each trainer trains on: SFTTrainer "text" (messages) or "prompt" + "completion";
DPOTrainer "prompt" + "chosen" / "rejected"; GRPOTrainer "prompt" alone, its metadata columns
left for the reward function. Every templated row stays within the dataset's token cap, and a
record's "tokens" is the templated length of its chat record.

Run by ctest (dataset_trl_load); exits 77 (ctest: skipped) when .venv-datasets or its trl is
missing.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
EXE = os.environ.get("STEPTP_EXE", os.path.join(ROOT, "build", "src", "steptp"))
SHARED = os.environ.get("STEPTP_SHARED", os.path.join(ROOT, "..", "shared"))
VENV_PYTHON = os.path.join(ROOT, ".venv-datasets", "bin", "python3")
SKIP = 77

# Run inside the venv: argv[1] the dataset folder, argv[2] the tokenizer folder, argv[3] a cache.
CHECK = r"""
import json, sys
import datasets
from transformers import AutoTokenizer
from trl.data_utils import is_conversational, maybe_apply_chat_template

d, tok_dir, cache = sys.argv[1:4]
tok = AutoTokenizer.from_pretrained(tok_dir)
stats = json.load(open(d + "/stats.json"))
cap = stats["token_cap"]["limit"]
expect = {
    "sft_messages": {"text"},
    "sft_prompt_completion": {"prompt", "completion"},
    "dpo": {"prompt", "chosen", "rejected"},
    "rl_prompts": {"prompt"},
}
report = {}
for method, keys in expect.items():
    for split in ("train", "eval"):
        name = f"{method}_{split}.jsonl"
        ds = datasets.load_dataset("json", data_files=d + "/" + name, split="train", cache_dir=cache)
        assert ds.num_rows == stats["files"][name]["records"], (name, ds.num_rows)
        longest = 0
        for row in ds:
            assert is_conversational(row), name
            out = maybe_apply_chat_template(row, tok)
            assert keys <= set(out), (name, sorted(out))
            if method == "sft_messages":
                # The conversation as the template renders it, the answer at its end.
                assert out["text"].startswith("<|im_start|>system\n"), name
                assert row["messages"][2]["content"].split("</think>")[-1].strip() in out["text"], name
                texts = [out["text"]]
            elif method == "rl_prompts":
                # The generation prompt only: the model writes the answer.
                assert out["prompt"].endswith("<|im_start|>assistant\n"), name
                assert out["prompt"].count("<|im_start|>assistant") == 1, name
                texts = [out["prompt"]]
            else:
                assert out["prompt"].endswith("<|im_start|>assistant\n"), name
                seconds = [out["completion"]] if method == "sft_prompt_completion" else [out["chosen"], out["rejected"]]
                for s in seconds:
                    assert "<answer>" in s and s.endswith("<|im_end|>\n"), name
                texts = [out["prompt"] + s for s in seconds]
                if method == "dpo":
                    assert out["chosen"] != out["rejected"], name
                    o = row["step_outcome"]
                    assert o["chosen"]["speedup_vs_parent"] > o["rejected"]["speedup_vs_parent"], name
            for t in texts:
                n = len(tok(t, add_special_tokens=False)["input_ids"])
                assert n <= cap, (name, n)
                longest = max(longest, n)
        report[name] = {"rows": ds.num_rows, "columns": sorted(ds.column_names), "longest_tokens": longest}
# The cap counts what the template makes: a record's "tokens" (steps.jsonl) is the templated length
# of its chat record (train.jsonl, eval.jsonl).
tokens = {}
for line in open(d + "/steps.jsonl"):
    r = json.loads(line)
    tokens[r["id"]] = r["tokens"]
for split in ("train", "eval"):
    for line in open(f"{d}/{split}.jsonl"):
        c = json.loads(line)
        text = tok.apply_chat_template(c["messages"], tokenize=False)
        n = len(tok(text, add_special_tokens=False)["input_ids"])
        assert n == tokens[c["reward_context"]["record_id"]], (split, n, tokens[c["reward_context"]["record_id"]])
print(json.dumps(report))
"""


def main():
    if not os.path.exists(VENV_PYTHON):
        print(f"skipped: {VENV_PYTHON} is missing (scripts/deps-python.sh creates it)")
        return SKIP
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    probe = subprocess.run([VENV_PYTHON, "-c", "import trl.data_utils, transformers"], capture_output=True, text=True,
                           env=env)
    if probe.returncode != 0:
        print("skipped: trl is not importable in .venv-datasets (scripts/deps-python.sh installs it):\n" +
              probe.stderr[-2000:])
        return SKIP
    tmp = tempfile.mkdtemp(prefix="steptp_trl_test_")
    try:
        out = os.path.join(tmp, "ds")
        g = subprocess.run([EXE, "generate", "--programs", "12", "--composites", "0", "--no-examples", "--cost",
                            "model", "--token-sample", "0", "--seed", "5", "--out", out], capture_output=True,
                           text=True, timeout=900)
        if g.returncode != 0:
            print(g.stderr)
            return 1
        stats = json.load(open(os.path.join(out, "stats.json")))
        r = subprocess.run([VENV_PYTHON, "-c", CHECK, out, os.path.join(SHARED, "tokenizers", "qwen3"),
                            os.path.join(tmp, "hf-cache")], capture_output=True, text=True, env=env, timeout=900)
        if r.returncode != 0:
            print(r.stdout + r.stderr)
            return 1
        report = json.loads(r.stdout.splitlines()[-1])
        print(json.dumps(report, indent=1))
        if not any(report[f"{m}_train.jsonl"]["rows"] for m in ("sft_messages", "dpo", "rl_prompts")):
            print("no rows to check")
            return 1
        for m in ("sft_messages", "sft_prompt_completion", "dpo", "rl_prompts"):
            for split in ("train", "eval"):
                f = report[f"{m}_{split}.jsonl"]
                if f["rows"] and "step_outcome" not in f["columns"]:
                    print(f"{m}_{split}.jsonl: no step_outcome column")
                    return 1
        print(f"trl.data_utils accepted {sum(v['rows'] for v in report.values())} rows made from "
              f"{stats['records']} records")
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
