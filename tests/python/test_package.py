"""The package's shape: exports, type stubs beside the module, and datasets.load_dataset of the
files generate() writes (PyPI datasets in its own venv, .venv-datasets: scripts/deps-python.sh)."""

import json
import os
import re
import subprocess
import sys

import pytest
import steptp

from conftest import cli

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


def test_every_api_call_is_exported():
    for name in ("Program", "check", "run", "verify", "strategies", "apply", "lower", "bench", "tune", "generate",
                 "tokens", "score", "parse_answer", "ParseError", "LeirError"):
        assert hasattr(steptp, name), name
    assert set(steptp.__all__) <= set(dir(steptp))


def test_type_stubs_ship_with_the_module():
    here = os.path.dirname(steptp._core.__file__)
    with open(os.path.join(here, "_core.pyi")) as f:
        stub = f.read()
    assert "class Program:" in stub
    assert "def parse(text: str, name: str = '') -> Program:" in stub
    assert "def run(program: Program, inputs:" in stub
    assert os.path.exists(os.path.join(here, "py.typed"))


def test_generate_and_load_with_datasets(tmp_path):
    out = tmp_path / "ds"
    s = steptp.generate(out, programs=2, composites=0, examples=False, cost="model", token_sample=0, seed=3, jobs=2)
    assert s["records"] == s["train"] + s["eval"] > 0 and s["out"] == str(out)
    # The CLI (one job) writes the same bytes.
    cli("generate", "--out", tmp_path / "cli", "--programs", 2, "--composites", 0, "--no-examples", "--cost", "model",
        "--token-sample", 0, "--seed", 3)
    for f in ("train.jsonl", "eval.jsonl", "steps.jsonl"):
        assert (out / f).read_bytes() == (tmp_path / "cli" / f).read_bytes(), f
    # Action-form answers (the form `steptp optimize` takes) as with the CLI's --answer-format.
    steptp.generate(tmp_path / "act", programs=2, composites=0, examples=False, cost="model", token_sample=0, seed=3,
                    answer_format="action")
    cli("generate", "--out", tmp_path / "cli-act", "--programs", 2, "--composites", 0, "--no-examples", "--cost",
        "model", "--token-sample", 0, "--seed", 3, "--answer-format", "action")
    act = (tmp_path / "act" / "train.jsonl").read_bytes()
    assert act == (tmp_path / "cli-act" / "train.jsonl").read_bytes() and act != (out / "train.jsonl").read_bytes()
    with pytest.raises(ValueError, match="answer format must be ir, action or choice"):
        steptp.generate(tmp_path / "y", answer_format="prose")
    with pytest.raises(ValueError, match="unknown option 'colour'"):
        steptp.generate(tmp_path / "x", colour="blue")
    lines = {f: sum(1 for _ in open(out / f)) for f in ("train.jsonl", "eval.jsonl", "steps.jsonl")}
    assert lines["train.jsonl"] == s["train"] and lines["eval.jsonl"] == s["eval"]
    first = json.loads(open(out / "train.jsonl").readline())
    # The chat records (train, eval) share one schema; steps.jsonl has its own, so it loads apart.
    script = (
        "import datasets, json, sys\n"
        "d = datasets.load_dataset('json', data_files={'train': sys.argv[1] + '/train.jsonl', "
        "'eval': sys.argv[1] + '/eval.jsonl'}, cache_dir=sys.argv[2])\n"
        "d['steps'] = datasets.load_dataset('json', data_files=sys.argv[1] + '/steps.jsonl', split='train', "
        "cache_dir=sys.argv[2])\n"
        "print(json.dumps({k: {'rows': d[k].num_rows, 'columns': sorted(d[k].column_names)} for k in d}))\n"
        "print(json.dumps(d['train'][0]['reward_context']))\n")
    python = os.path.join(ROOT, ".venv-datasets", "bin", "python3")
    assert os.path.exists(python), "run scripts/deps-python.sh (creates .venv-datasets)"
    r = subprocess.run([python, "-c", script, str(out), str(tmp_path / "hf-cache")], capture_output=True,
                       text=True, env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, timeout=600)
    assert r.returncode == 0, r.stderr
    summary, ctx = (json.loads(l) for l in r.stdout.splitlines()[-2:])
    for name in ("train", "eval", "steps"):
        assert summary[name]["rows"] == lines[name + ".jsonl"]
    assert sorted(first) == summary["train"]["columns"]
    assert ctx == first["reward_context"]


def test_readme_and_docs_examples_run():
    for doc in ("README.md", os.path.join("docs", "python.md")):
        with open(os.path.join(ROOT, doc)) as f:
            text = f.read()
        code = text.split("```python\n", 1)[1].split("```", 1)[0]
        r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, doc + ": " + r.stderr
        assert "exact True" in r.stdout and r.stdout.rstrip().endswith("0.1"), r.stdout


def test_training_front_end_imports_without_torch(tmp_path):
    """steptp.train (docs/train.md) imports torch, transformers and trl only when a command runs: `import steptp`
    and its argument parser work in any venv, and a wrong dataset file is refused before any of them is needed."""
    code = ("import sys, steptp, steptp.train as t\n"
            "assert not {'torch', 'transformers', 'trl'} & set(sys.modules), sorted(sys.modules)\n"
            "a = t.parser().parse_args(['sft', '--model', 'm', '--data', 'd', '--out', 'o'])\n"
            "assert (a.epochs, a.batch, a.max_length, a.lora) == (1.0, 2, 0, False)\n")
    subprocess.run([sys.executable, "-c", code], check=True)
    data = tmp_path / "dpo_train.jsonl"
    data.write_text(json.dumps({"prompt": [], "chosen": [], "rejected": []}) + "\n")
    from steptp import train

    with pytest.raises(train.TrainError, match=r"dpo_train.jsonl:1: a row of a dpo_\*.jsonl file; `sft` trains on"):
        train.read_records(str(data), "sft")


def test_sft_can_drop_the_reasoning_of_completions():
    """`sft --drop-reasoning` (the CPU experiment of docs/train.md) trains on the answer alone: the <think> block
    and the blank line after it leave the assistant message, the prompt and the answer stay as they were."""
    from steptp import train

    answer = '<answer>{"params":{},"site":"@0/1","strategy":"loop_vectorization"}</answer>'
    row = {"prompt": [{"role": "user", "content": "Program <think>in a prompt</think> stays"}],
           "completion": [{"role": "assistant", "content": "<think>\nThe site is item 0.\n</think>\n" + answer}]}
    out = train.without_reasoning(row)
    assert out["completion"] == [{"role": "assistant", "content": answer}]
    assert out["prompt"] == row["prompt"] and row["completion"][0]["content"].startswith("<think>")
    assert train.parser().parse_args(["sft", "--model", "m", "--data", "d", "--out", "o", "--drop-reasoning"]).drop_reasoning
    assert train.parser().parse_args(["tiny-model", "o", "--split", "spans"]).split == "spans"
    spans = re.findall(train.ANSWER_SPANS, '  @0/2 (nest 0) params: {"order":[1,0]}\nloop_reorder:\n'
                                           '<answer>{"params":{"order":[1,0]},"site":"@0/2","strategy":"loop_reorder"}')
    assert spans == ["@0/2", '{"order":[1,0]}', "loop_reorder", '{"order":[1,0]}', "@0/2", "loop_reorder"]
    # The choice form: an option's number is one piece in the menu ("[17]") and in the answer ({"choice":17}).
    spans = re.findall(train.ANSWER_SPANS, ' params: [17] {"factor":4}\n  [3] @0/1 (x)\n<answer>{"choice":17}</answer>')
    assert spans == ["17", '{"factor":4}', "3", "@0/1", "17"]
