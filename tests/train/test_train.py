"""The training loop end to end on 2 CPU cores (docs/train.md; ctest label heavy, `train_loop`):
a small --answer-format action dataset generated here, a tiny Qwen3-architecture model built
offline, SFT (completion-only mask checked, loss decreasing), DPO, GRPO with steptp's reward, the
SFT folder served by `transformers serve` and driven by `steptp optimize`, and the errors of a bad
model path, a dataset file of the wrong kind, missing packages and an unreachable server.

Runs in .venv-train (scripts/deps-train.sh) with PYTHONPATH=build/python:python; STEPTP_EXE names
the CLI. The fixtures are module-scoped: one dataset, one tiny model and one SFT run serve every
test.
"""
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
EXE = os.environ.get("STEPTP_EXE", os.path.join(ROOT, "build", "src", "steptp"))
SHARED = os.environ.get("STEPTP_SHARED", os.path.join(ROOT, "..", "shared"))
# Small: 2 torch threads (the machine is shared), records up to MAX_LEN tokens of the small tokenizer.
THREADS = "2"
MAX_LEN = "2048"
SFT_RECORDS = 4
SFT_STEPS = 12


def train(*args, check=True, python=sys.executable, timeout=1500):
    env = dict(os.environ, STEPTP_SHARED=SHARED)
    r = subprocess.run([python, "-m", "steptp.train", *args], capture_output=True, text=True, env=env,
                       timeout=timeout)
    if check and r.returncode != 0:
        raise AssertionError(f"steptp.train {args[0]} failed ({r.returncode}):\n{r.stderr[-4000:]}")
    return r


def log_entries(out):
    with open(os.path.join(out, "train_log.jsonl")) as f:
        return [json.loads(line) for line in f]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    out = tmp_path_factory.mktemp("ds") / "ds"
    subprocess.run([EXE, "generate", "--profile", "quick", "--answer-format", "action", "--programs", "12",
                    "--composites", "0", "--no-examples", "--cost", "model", "--token-sample", "0", "--seed", "5",
                    "--out", str(out), "--quiet"], check=True, timeout=900)
    return out


@pytest.fixture(scope="module")
def tiny(dataset, tmp_path_factory):
    out = tmp_path_factory.mktemp("tiny") / "model"
    r = train("tiny-model", str(out), "--tokenizer", "small", "--dataset", str(dataset / "train.jsonl"),
              "--hidden-size", "128", "--layers", "4", "--seed", "3")
    info = json.loads(r.stdout)
    assert info["vocab_size"] < 4096 and info["parameters"] < 3_000_000, info
    return out


@pytest.fixture(scope="module")
def sft(dataset, tiny, tmp_path_factory):
    """A few SFT steps over a few records (GRPO and serving start from this checkpoint)."""
    out = tmp_path_factory.mktemp("sft") / "model"
    train("sft", "--model", str(tiny), "--data", str(dataset / "sft_prompt_completion_train.jsonl"), "--out", str(out),
          "--limit", str(SFT_RECORDS), "--max-length", MAX_LEN, "--max-steps", str(SFT_STEPS), "--epochs", "1000",
          "--lr", "3e-3", "--lr-scheduler", "constant", "--batch", "2", "--threads", THREADS, "--seed", "1")
    return out


def test_tiny_model_loads_with_qwen3_tokenizer(tmp_path):
    """The same builder with Qwen3's own tokenizer: its 151k vocabulary sizes the embedding."""
    out = tmp_path / "q"
    info = json.loads(train("tiny-model", str(out), "--tokenizer", "qwen3", "--seed", "3").stdout)
    assert info["vocab_size"] > 150_000
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(out)
    tok = AutoTokenizer.from_pretrained(out)
    assert model.config.model_type == "qwen3" and model.config.vocab_size == len(tok)
    text = tok.apply_chat_template([{"role": "user", "content": "x"}], tokenize=False, add_generation_prompt=True)
    assert text.endswith("<|im_start|>assistant\n")


@pytest.mark.parametrize("loss_on_prompt", [False, True])
def test_sft_loss_mask_covers_the_completion_only(dataset, tiny, tmp_path, loss_on_prompt):
    """The default labels the completion alone; --loss-on-prompt labels every real token, prompt included."""
    import torch
    from steptp import train as st
    from trl.data_utils import maybe_apply_chat_template

    torch.set_num_threads(int(THREADS))
    args = st.parser().parse_args(["sft", "--model", str(tiny), "--data",
                                   str(dataset / "sft_prompt_completion_train.jsonl"), "--out", str(tmp_path / "o"),
                                   "--limit", "3", "--max-length", MAX_LEN, "--batch", "3"]
                                  + (["--loss-on-prompt"] if loss_on_prompt else []))
    trainer, tok = st.sft_trainer(args)
    rows, _ = st.select_records(st.read_records(args.data, "sft"), tok, "sft_prompt_completion", int(MAX_LEN), 3)
    batch = next(iter(trainer.get_train_dataloader()))
    ids, labels = batch["input_ids"], batch["labels"]
    by_text = {}
    for row in rows:
        t = maybe_apply_chat_template({"prompt": row["prompt"], "completion": row["completion"]}, tok)
        by_text[t["prompt"] + t["completion"]] = t
    assert ids.shape[0] == 3
    for i in range(ids.shape[0]):
        real = batch["attention_mask"][i].bool() if "attention_mask" in batch else ids[i] != tok.pad_token_id
        whole = tok.decode(ids[i][real])
        t = by_text[whole]  # the row, whatever order the sampler drew
        learned = labels[i] != -100
        if loss_on_prompt:
            assert tok.decode(ids[i][learned]) == t["prompt"] + t["completion"]
            assert not (real & ~learned).any()
        else:
            # Labelled tokens are exactly the completion (through <|im_end|>), unlabelled real ones the prompt.
            assert tok.decode(ids[i][learned]) == t["completion"]
            assert tok.decode(ids[i][real & ~learned]) == t["prompt"]
        assert t["prompt"].endswith("<|im_start|>assistant\n") and "<answer>" in t["completion"]
        assert not learned[~real].any()


def test_sft_loss_decreases(sft):
    losses = [e["loss"] for e in log_entries(sft) if "loss" in e]
    assert len(losses) == SFT_STEPS
    first, last = sum(losses[:3]) / 3, sum(losses[-3:]) / 3
    assert last < 0.85 * first, losses
    for f in ("config.json", "model.safetensors", "tokenizer.json", "log_history.json"):
        assert (sft / f).exists(), f


def test_sft_resumes_from_its_checkpoint(dataset, tiny, tmp_path):
    """--resume continues from the latest checkpoint in --out: the optimizer step count goes on from it."""
    out = tmp_path / "r"
    common = ("sft", "--model", str(tiny), "--data", str(dataset / "sft_prompt_completion_train.jsonl"), "--out",
              str(out), "--limit", "1", "--max-length", MAX_LEN, "--batch", "1", "--epochs", "100", "--save-steps", "2",
              "--threads", THREADS)
    train(*common, "--max-steps", "2")
    assert (out / "checkpoint-2").is_dir()
    r = train(*common, "--max-steps", "3", "--resume")
    assert f"resuming from {out / 'checkpoint-2'}" in r.stderr and "done: 3 steps" in r.stderr, r.stderr
    steps = [e["step"] for e in log_entries(out) if "loss" in e]
    assert steps == [1, 2, 3], steps  # step 3 only in the second run: steps 1-2 were not trained again


def test_dpo_steps(dataset, tiny, tmp_path):
    out = tmp_path / "dpo"
    r = train("dpo", "--model", str(tiny), "--data", str(dataset / "dpo_train.jsonl"), "--out", str(out),
              "--limit", "8", "--max-length", MAX_LEN, "--max-steps", "3", "--lr", "1e-3", "--batch", "2",
              "--threads", THREADS)
    entries = [e for e in log_entries(out) if "loss" in e]
    assert len(entries) == 3 and all(e["loss"] == e["loss"] for e in entries)  # finite, logged every step
    assert all("rewards/chosen" in e and "rewards/margins" in e for e in entries)
    assert "step 3/3" in r.stderr
    assert (out / "model.safetensors").exists()


def test_grpo_with_steptp_reward(dataset, sft, tmp_path):
    """GRPO from the SFT checkpoint, rewarded in-process by steptp.score without timing. A few SFT steps do not
    teach the answer format (every sampled answer would score -1 and no group would carry an advantage), so
    --guide puts the dataset's answer in each group: that completion must parse, apply and verify (reward > -1)
    while the sampled ones do not, and the trainer must see the difference (reward_std > 0)."""
    rl = tmp_path / "rl_prompts_sft.jsonl"
    with open(dataset / "sft_prompt_completion_train.jsonl") as f, open(rl, "w") as g:
        for line in f:
            row = json.loads(line)
            if len(row["completion"][0]["content"]) > 1800:  # about 600 tokens: the guide's answer must fit 640
                continue
            g.write(json.dumps({"prompt": row["prompt"], "reward_context": row["reward_context"]}) + "\n")
    out = tmp_path / "grpo"
    r = train("grpo", "--model", str(sft), "--data", str(rl), "--guide",
              str(dataset / "sft_prompt_completion_train.jsonl"), "--out", str(out), "--max-length", MAX_LEN,
              "--limit", "2", "--max-steps", "2", "--num-generations", "4", "--batch", "4",
              "--max-completion-length", "640", "--lr", "1e-4", "--no-measure", "--threads", THREADS, "--seed", "2")
    assert "guide: " in r.stderr
    groups = {}
    with open(out / "rewards.jsonl") as f:
        for line in f:
            b = json.loads(line)
            for rid, rew in zip(b["record_ids"], b["rewards"]):
                groups.setdefault(rid, []).append(rew)
    assert len(groups) == 2 and all(len(g) == 4 for g in groups.values()), groups
    assert all(-1.0 <= x <= 1.0 for g in groups.values() for x in g), groups
    for g in groups.values():
        assert max(g) > -1.0 and len(set(g)) > 1, groups  # the known answer scores, the sampled ones differ
    logged = [e for e in log_entries(out) if "reward_std" in e]
    assert len(logged) == 2 and all(e["reward_std"] > 0 for e in logged), logged
    assert (out / "model.safetensors").exists()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_served_model_in_optimize(dataset, sft, tmp_path):
    port = free_port()
    log = open(tmp_path / "serve.log", "w")
    server = subprocess.Popen([os.path.join(ROOT, "scripts", "serve_model.sh"), "127.0.0.1", str(port), str(sft)],
                              stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.time() + 300
        while True:
            assert server.poll() is None, open(tmp_path / "serve.log").read()[-4000:]
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=5) as r:
                    r.read()
                break
            except OSError:
                assert time.time() < deadline, "server did not start"
                time.sleep(2)
        run = tmp_path / "run"
        r = subprocess.run([EXE, "optimize", str(dataset / "manifest.json"), "--limit", "1", "--policy", "llm",
                            "--base-url", f"http://127.0.0.1:{port}/v1", "--model", str(sft), "--search", "chain",
                            "--max-calls", "4", "--max-tokens", "512", "--timeout", "300", "--measure", "model",
                            "--out", str(run), "--json", "--quiet"], capture_output=True, text=True, timeout=1500)
        assert r.returncode == 0, r.stderr
        agg = json.loads(r.stdout)["aggregate"]
        f = agg["funnel"]
        # Every call was answered and judged; the funnel's stages only narrow.
        assert agg["cost"]["calls"] >= 1 and f["transport_failures"] == 0 and f["judged"] >= agg["cost"]["calls"]
        assert f["judged"] >= f["parsed"] >= f["valid"] >= f["differs"] >= f["equivalent"]
        assert agg["cost"]["completion_tokens"] > 0
    finally:
        os.killpg(server.pid, 15)
        server.wait(timeout=60)
        log.close()


def test_bad_model_path(dataset, tmp_path):
    r = train("sft", "--model", str(tmp_path / "nothing"), "--data", str(dataset / "sft_prompt_completion_train.jsonl"),
              "--out", str(tmp_path / "o"), check=False)
    assert r.returncode == 1 and "nothing: no such model folder" in r.stderr, r.stderr
    (tmp_path / "empty").mkdir()
    r = train("grpo", "--model", str(tmp_path / "empty"), "--data", str(dataset / "rl_prompts_train.jsonl"),
              "--out", str(tmp_path / "o"), check=False)
    assert r.returncode == 1 and "not a Hugging Face model folder (no config.json)" in r.stderr, r.stderr


def test_dataset_of_the_wrong_kind(dataset, tiny, tmp_path):
    for cmd, data, said in (("sft", "dpo_train.jsonl", "dpo_train.jsonl:1: a row of a dpo_*.jsonl file; `sft` trains "
                                                       "on sft_prompt_completion_*.jsonl"),
                            ("sft", "sft_messages_train.jsonl", "a row of a sft_messages_*.jsonl file"),
                            ("dpo", "rl_prompts_train.jsonl", "`dpo` trains on dpo_*.jsonl"),
                            ("grpo", "sft_prompt_completion_train.jsonl", "`grpo` trains on rl_prompts_*.jsonl")):
        r = train(cmd, "--model", str(tiny), "--data", str(dataset / data), "--out", str(tmp_path / "o"), check=False)
        assert r.returncode == 1 and said in r.stderr, (cmd, data, r.stderr)


def test_missing_packages(dataset, tiny, tmp_path):
    """Debian's python3 (torch 1.13, no transformers or trl): the error names what is missing and the venv."""
    r = train("sft", "--model", str(tiny), "--data", str(dataset / "sft_prompt_completion_train.jsonl"),
              "--out", str(tmp_path / "o"), python="/usr/bin/python3", check=False)
    assert r.returncode == 1 and "missing Python packages:" in r.stderr and "trl" in r.stderr, r.stderr
    assert "scripts/deps-train.sh" in r.stderr


def test_unreachable_server(dataset, tmp_path):
    port = free_port()  # nothing listens there
    r = subprocess.run([EXE, "optimize", str(dataset / "manifest.json"), "--limit", "1", "--policy", "llm",
                        "--base-url", f"http://127.0.0.1:{port}/v1", "--model", "m", "--search", "chain",
                        "--max-calls", "2", "--http-retries", "0", "--out", str(tmp_path / "run"), "--quiet"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert f"no answer from the Chat Completions server at http://127.0.0.1:{port}/v1: all 2 requests failed" in r.stderr
    assert "Couldn't connect to server" in r.stderr
