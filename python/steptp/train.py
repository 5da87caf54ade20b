"""Training a policy on steptp's dataset over TRL (docs/train.md):

    python -m steptp.train tiny-model OUT --tokenizer qwen3|small --dataset FILE   # offline test model
    python -m steptp.train sft  --model DIR --data sft_prompt_completion_train.jsonl --out DIR
    python -m steptp.train dpo  --model DIR --data dpo_train.jsonl --out DIR
    python -m steptp.train grpo --model DIR --data rl_prompts_train.jsonl --out DIR [--reward-url URL]

Any local Hugging Face causal-LM folder is a base model; the output is such a folder (LoRA adapters
merged into it), so `transformers serve`/vLLM and `steptp optimize --policy llm` take it unchanged.
torch, transformers, trl, peft and datasets come from scripts/deps-train.sh's .venv-train and are
imported only when a command runs, so `import steptp` never needs them. Nothing is fetched from
the Hugging Face hub: the hub is switched off before transformers is imported.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from typing import Any, Sequence

# The hub stays off for everything this module imports (model folders and tokenizers are local).
for _var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
    os.environ.setdefault(_var, "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

TRAIN_VENV_HINT = "scripts/deps-train.sh makes .venv-train with them; run .venv-train/bin/python -m steptp.train"

# The dataset files by training method (docs/dataset.md) and the keys that tell them apart.
FILE_KINDS = {
    "sft_messages": "sft_messages_*.jsonl",
    "sft_prompt_completion": "sft_prompt_completion_*.jsonl",
    "dpo": "dpo_*.jsonl",
    "rl_prompts": "rl_prompts_*.jsonl",
}
COMMAND_KIND = {"sft": "sft_prompt_completion", "dpo": "dpo", "grpo": "rl_prompts"}


class TrainError(Exception):
    """Bad input (a model path, a dataset file, a missing package): printed as one line, exit 1."""


def log(msg: str) -> None:
    print(f"steptp.train: {msg}", file=sys.stderr, flush=True)


def require(*modules: str) -> None:
    """Imports the training packages, or says which are missing and how to get them."""
    import importlib

    missing = []
    for m in modules:
        try:
            importlib.import_module(m)
        except ImportError:
            missing.append(m)
    if missing:
        raise TrainError(f"missing Python packages: {', '.join(missing)} ({TRAIN_VENV_HINT})")


def file_kind(row: dict[str, Any]) -> str | None:
    if "messages" in row:
        return "sft_messages"
    if "completion" in row:
        return "sft_prompt_completion"
    if "chosen" in row and "rejected" in row:
        return "dpo"
    if "prompt" in row and "reward_context" in row:
        return "rl_prompts"
    return None


def read_records(path: str, command: str) -> list[dict[str, Any]]:
    """The JSONL rows of a dataset file, checked to be the kind `command` trains on."""
    if not os.path.isfile(path):
        raise TrainError(f"{path}: no such dataset file")
    want = COMMAND_KIND[command]
    rows = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise TrainError(f"{path}:{n}:{e.colno}: not JSON: {e.msg}") from None
            kind = file_kind(row) if isinstance(row, dict) else None
            if kind != want:
                what = f"a row of a {FILE_KINDS[kind]} file" if kind else "not a steptp dataset row"
                raise TrainError(f"{path}:{n}: {what}; `{command}` trains on {FILE_KINDS[want]} (docs/dataset.md)")
            rows.append(row)
    if not rows:
        raise TrainError(f"{path}: no records")
    return rows


def check_model_dir(path: str) -> None:
    if not os.path.isdir(path):
        raise TrainError(f"{path}: no such model folder (a local Hugging Face model folder; the hub is off)")
    if not os.path.isfile(os.path.join(path, "config.json")):
        raise TrainError(f"{path}: not a Hugging Face model folder (no config.json)")


def load_tokenizer(path: str):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(path)
    if tok.chat_template is None:
        raise TrainError(f"{path}: the tokenizer has no chat template (the dataset is chat records)")
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return tok


def record_lengths(rows: Sequence[dict[str, Any]], tok, kind: str) -> list[int]:
    """Each record's templated length in tokens, as the trainer will see it (the longest pair side for DPO,
    the generation prompt for RL)."""
    def n(messages, generation=False):
        return len(tok.apply_chat_template(messages, tokenize=True, add_generation_prompt=generation,
                                           return_dict=True)["input_ids"])

    out = []
    for r in rows:
        if kind == "sft_prompt_completion":
            out.append(n(r["prompt"] + r["completion"]))
        elif kind == "dpo":
            out.append(max(n(r["prompt"] + r["chosen"]), n(r["prompt"] + r["rejected"])))
        else:
            out.append(n(r["prompt"], generation=True))
    return out


THINK = re.compile(r"<think>.*?</think>\s*", re.S)


def without_reasoning(row: dict[str, Any]) -> dict[str, Any]:
    """An SFT record whose completion keeps only the answer: the <think> block is removed, so the chat
    template frames it as a turn with empty reasoning. For a small model trained from scratch the reasoning
    (the changed nests before and after, most of a completion's tokens) costs most of the compute before the
    model can place a single answer (docs/train.md, CPU experiment)."""
    out = dict(row)
    out["completion"] = [{**m, "content": THINK.sub("", m["content"])} if m.get("role") == "assistant" else m
                         for m in row["completion"]]
    return out


def select_records(rows, tok, kind: str, max_length: int, limit: int) -> tuple[list[dict[str, Any]], int]:
    """The records within max_length (0: sized to the longest record), the first `limit` of them (0: all).
    A record is left out rather than truncated: truncation cuts the answer off the end of a completion."""
    lengths = record_lengths(rows, tok, kind)
    if max_length <= 0:
        max_length = max(lengths)
    kept = [r for r, n in zip(rows, lengths) if n <= max_length]
    if len(kept) < len(rows):
        log(f"{len(rows) - len(kept)} of {len(rows)} records are longer than {max_length} tokens: left out")
    if limit > 0:
        kept = kept[:limit]
    if not kept:
        raise TrainError(f"no record fits in {max_length} tokens (the shortest has {min(lengths)})")
    return kept, max_length


def to_dataset(rows, columns: Sequence[str]):
    """A datasets.Dataset of the trainer's columns; reward_context as JSON text (one Arrow type for every
    program's context)."""
    from datasets import Dataset

    def cell(r, c):
        return json.dumps(r[c], sort_keys=True) if c == "reward_context" else r[c]

    return Dataset.from_list([{c: cell(r, c) for c in columns} for r in rows])


def lora_config(args):
    if not args.lora:
        return None
    require("peft")
    from peft import LoraConfig

    return LoraConfig(r=args.lora_r, lora_alpha=args.lora_alpha, lora_dropout=0.0, target_modules="all-linear",
                      task_type="CAUSAL_LM")


def progress_callback(out: str):
    """A TrainerCallback printing one line per logging step (step, loss, lr, the trainer's metrics) and
    appending it to OUT/train_log.jsonl, so progress is readable in logs without tqdm."""
    from transformers import TrainerCallback

    path = os.path.join(out, "train_log.jsonl")

    class Progress(TrainerCallback):
        def on_log(self, args, state, control, logs=None, **kwargs):
            if not logs:
                return
            entry = {"step": state.global_step, "max_steps": state.max_steps, "epoch": state.epoch, **logs}
            with open(path, "a", encoding="utf-8") as f:
                f.write(json.dumps(entry) + "\n")
            keys = [k for k in ("loss", "reward", "reward_std", "rewards/chosen", "rewards/rejected", "learning_rate",
                                "train_loss") if k in logs]
            shown = " ".join(f"{k} {logs[k]:.4g}" for k in keys if isinstance(logs[k], (int, float)))
            log(f"step {state.global_step}/{state.max_steps} epoch {state.epoch or 0:.2f} {shown}")

    return Progress()


def quiet(trainer):
    """Without tqdm the Trainer prints every log dict; progress_callback's line replaces it."""
    from transformers.trainer_callback import PrinterCallback

    trainer.remove_callback(PrinterCallback)
    return trainer


def common_config(args, max_length: int) -> dict[str, Any]:
    import torch

    cuda = torch.cuda.is_available()
    return dict(output_dir=args.out, num_train_epochs=args.epochs, max_steps=args.max_steps if args.max_steps else -1,
                learning_rate=args.lr, per_device_train_batch_size=args.batch,
                gradient_accumulation_steps=args.grad_accum, seed=args.seed, data_seed=args.seed,
                logging_steps=1, save_strategy="steps", save_steps=args.save_steps, save_total_limit=2,
                report_to=[], disable_tqdm=True, use_cpu=not cuda, bf16=cuda and torch.cuda.is_bf16_supported(),
                gradient_checkpointing=args.gradient_checkpointing, lr_scheduler_type=args.lr_scheduler, warmup_steps=0,
                max_length=max_length)


def finish(trainer, tok, args) -> None:
    """Trains (from the latest checkpoint in OUT with --resume), then writes the model folder: LoRA merged, the
    tokenizer beside it, the log history."""
    resume = None
    if args.resume:
        from transformers.trainer_utils import get_last_checkpoint

        resume = get_last_checkpoint(args.out)
        log(f"resuming from {resume}" if resume else "no checkpoint in the output folder: starting afresh")
    result = trainer.train(resume_from_checkpoint=resume)
    model = trainer.model
    if hasattr(model, "merge_and_unload"):
        model = model.merge_and_unload()
    model.save_pretrained(args.out)
    tok.save_pretrained(args.out)
    with open(os.path.join(args.out, "log_history.json"), "w", encoding="utf-8") as f:
        json.dump(trainer.state.log_history, f, indent=1)
    log(f"done: {result.global_step} steps, train loss {result.training_loss:.4g} -> {args.out}")


def prepare(args, command: str):
    """Model path, dataset kind and packages checked before anything heavy is loaded; then the tokenizer and the
    selected records."""
    check_model_dir(args.model)
    rows = read_records(args.data, command)
    if getattr(args, "drop_reasoning", False):
        rows = [without_reasoning(r) for r in rows]
    require("torch", "transformers", "trl", "datasets", "accelerate")
    import datasets
    import torch

    datasets.disable_progress_bars()
    if args.threads:
        torch.set_num_threads(args.threads)
    os.makedirs(args.out, exist_ok=True)
    tok = load_tokenizer(args.model)
    kind = COMMAND_KIND[command]
    rows, max_length = select_records(rows, tok, kind, args.max_length, args.limit)
    log(f"{command}: {len(rows)} records of {args.data}, max length {max_length} tokens, base model {args.model}")
    return rows, tok, max_length


def load_model(path: str):
    import torch
    from transformers import AutoModelForCausalLM

    dtype = torch.bfloat16 if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else torch.float32
    try:
        return AutoModelForCausalLM.from_pretrained(path, dtype=dtype)
    except (OSError, ValueError) as e:
        raise TrainError(f"{path}: not a causal language model folder transformers can load: {e}") from None


def cmd_sft(args) -> None:
    trainer, tok = sft_trainer(args)
    finish(trainer, tok, args)


def sft_trainer(args):
    """The SFTTrainer on the prompt/completion file: the loss on the completion tokens only (TRL's
    completion_mask; Qwen3's template has no generation markers, so assistant_only_loss cannot be used), or with
    --loss-on-prompt on every token: a model trained from scratch then learns the prompt's own language (the
    program, its facts and the menu of sites and parameters the answer must copy from) from every token of a
    record rather than from the ten of its answer."""
    rows, tok, max_length = prepare(args, "sft")
    from trl import SFTConfig, SFTTrainer

    cfg = SFTConfig(**common_config(args, max_length), completion_only_loss=not args.loss_on_prompt, packing=False,
                    dataset_num_proc=None)
    trainer = SFTTrainer(model=load_model(args.model), args=cfg, train_dataset=to_dataset(rows, ("prompt", "completion")),
                         processing_class=tok, peft_config=lora_config(args), callbacks=[progress_callback(args.out)])
    return quiet(trainer), tok


def cmd_dpo(args) -> None:
    rows, tok, max_length = prepare(args, "dpo")
    from trl import DPOConfig, DPOTrainer

    cfg = DPOConfig(**common_config(args, max_length), beta=args.beta)
    trainer = DPOTrainer(model=load_model(args.model), args=cfg,
                         train_dataset=to_dataset(rows, ("prompt", "chosen", "rejected")), processing_class=tok,
                         peft_config=lora_config(args), callbacks=[progress_callback(args.out)])
    finish(quiet(trainer), tok, args)


def steptp_rewards(url: str, measure: bool, out: str):
    """TRL reward function: steptp's reward (python/steptp_reward: in-process steptp.score, or `steptp serve` at
    url) of each completion, appended per batch to OUT/rewards.jsonl with the record ids, so a run shows whether
    a group's completions were told apart."""
    from steptp_reward import steptp_reward

    path = os.path.join(out, "rewards.jsonl")

    def steptp(prompts=None, completions=None, reward_context=None, **kwargs):
        rewards = steptp_reward(prompts=prompts, completions=completions, reward_context=reward_context,
                                url=url or None, steptp_measure=measure)
        ids = [json.loads(c).get("record_id") for c in reward_context]
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps({"record_ids": ids, "rewards": rewards}) + "\n")
        return rewards

    return steptp


def guided_rollout(guide_path: str, tok, max_completion_length: int):
    """TRL rollout function for --guide: every group's completions are sampled from the model as usual, except the
    first of a group whose prompt has an answer in the guide file (sft_prompt_completion_*), which is that answer
    (off-policy guidance, as LUFFY does). A model that cannot write a valid answer yet gets all -1 rewards, so its
    groups carry no advantage; a known-good answer in each group gives one. The rollout reuses the trainer's own
    tokenization and generation (TRL 1.16's GRPOTrainer._tokenize_prompts/_generate_single_turn)."""
    from trl.data_utils import maybe_apply_chat_template

    guide, too_long = {}, 0
    for row in read_records(guide_path, "sft"):
        text = maybe_apply_chat_template({"prompt": row["prompt"], "completion": row["completion"]}, tok)["completion"]
        ids = tok(text, add_special_tokens=False)["input_ids"]
        if len(ids) > max_completion_length:  # cut, it would lose its answer: no guide for that prompt
            too_long += 1
            continue
        guide.setdefault(json.dumps(row["prompt"], sort_keys=True), ids)
    log(f"guide: {len(guide)} known answers from {guide_path} ({too_long} longer than --max-completion-length)")

    def rollout(prompts, trainer):
        prompt_ids, images, multimodal = trainer._tokenize_prompts(prompts)
        completion_ids, _ = trainer._generate_single_turn(prompt_ids, images, multimodal, trainer.num_generations)
        completion_ids = [list(c) for c in completion_ids]
        previous = None
        for i, p in enumerate(prompts):  # a group's prompts are consecutive (TRL's RepeatSampler)
            key = json.dumps(p, sort_keys=True)
            if key != previous and key in guide:
                completion_ids[i] = list(guide[key])
            previous = key
        return {"prompt_ids": prompt_ids, "completion_ids": completion_ids, "logprobs": None}

    return rollout


def cmd_grpo(args) -> None:
    rows, tok, max_length = prepare(args, "grpo")
    if args.reward_url:
        os.environ["STEPTP_REWARD_BACKEND"] = "http"
    from trl import GRPOConfig, GRPOTrainer

    common = common_config(args, max_length)
    common.pop("max_length")
    cfg = GRPOConfig(**common, num_generations=args.num_generations, max_completion_length=args.max_completion_length,
                     temperature=args.temperature, beta=args.kl_beta, use_vllm=args.vllm, vllm_mode="colocate")
    log(f"reward: steptp {'serve at ' + args.reward_url if args.reward_url else 'in-process (steptp.score)'}, "
        f"{'measured' if args.measure else 'verified, not timed'}")
    rollout = None
    if args.guide:
        os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # rollout_func is documented as experimental
        rollout = guided_rollout(args.guide, tok, args.max_completion_length)
    trainer = GRPOTrainer(model=load_model(args.model), reward_funcs=[steptp_rewards(args.reward_url, args.measure,
                                                                                      args.out)],
                          args=cfg, train_dataset=to_dataset(rows, ("prompt", "reward_context")),
                          processing_class=tok, peft_config=lora_config(args), rollout_func=rollout,
                          callbacks=[progress_callback(args.out)])
    finish(quiet(trainer), tok, args)


def dataset_texts(path: str) -> list[str]:
    """Every message text of a dataset file (any kind), to train a small tokenizer on."""
    texts = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            for key in ("messages", "prompt", "completion", "chosen", "rejected"):
                texts += [m["content"] for m in row.get(key, [])]
    return texts


# `--split spans`: the pieces an answer copies from the prompt's menu — a site handle (`@0/2`), a parameter
# object (`{"order":[1,0]}`), a strategy name (`loop_vectorization`), an option's number (the menu's `[17]`, the
# choice answer's `{"choice":17}`) — each kept apart, so the menu and the answer spell them with the same tokens.
ANSWER_SPANS = r'(?<=\[)[0-9]+(?=\])|(?<="choice":)[0-9]+|@[0-9./]+|\{"(?!choice")[a-z_]+":[^{}]*\}|[a-z]+(?:_[a-z]+)+'


def small_tokenizer(qwen3_dir: str, dataset: str, vocab_size: int, split: str = "words"):
    """A byte-level BPE tokenizer trained (HF tokenizers) on the dataset's own text, with Qwen3's special tokens
    and chat template, so the chat framing is Qwen3's while the vocabulary is small enough for a CPU model.
    split: "words" pre-splits as GPT-2 does; "none" lets merges cross spaces and punctuation, so LEIR's
    recurring spellings (an access `A^{f32,g}_{i,j}`, a menu line) become single tokens and records get
    shorter; "spans" is "none" with ANSWER_SPANS kept apart."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    qwen = AutoTokenizer.from_pretrained(qwen3_dir)
    special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    tokenizer = Tokenizer(models.BPE())
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=split == "words")
    tokenizer.pre_tokenizer = byte_level if split != "spans" else pre_tokenizers.Sequence(
        [pre_tokenizers.Split(Regex(ANSWER_SPANS), behavior="isolated"), byte_level])
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=special,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tokenizer.train_from_iterator(dataset_texts(dataset), trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                   additional_special_tokens=["<|im_start|>"], model_max_length=qwen.model_max_length)
    # Qwen3 has <think> and </think> as single ordinary (not special) tokens: decoding keeps them.
    fast.add_tokens(["<think>", "</think>"])
    fast.chat_template = qwen.chat_template
    return fast


def cmd_tiny_model(args) -> None:
    """A Qwen3-architecture model with random weights drawn from --seed, its tokenizer and chat template: Qwen3's
    own (../shared/tokenizers/qwen3) or a small one trained on --dataset."""
    require("torch", "transformers", "tokenizers")
    import torch
    from transformers import AutoTokenizer, GenerationConfig, Qwen3Config, Qwen3ForCausalLM

    if not os.path.isfile(os.path.join(args.qwen3, "tokenizer.json")):
        raise TrainError(f"{args.qwen3}: no tokenizer.json (the Qwen3 tokenizer folder; --qwen3 names it)")
    if args.tokenizer == "small":
        if not args.dataset:
            raise TrainError("--tokenizer small trains its vocabulary on --dataset FILE")
        if not os.path.isfile(args.dataset):
            raise TrainError(f"{args.dataset}: no such dataset file")
        tok = small_tokenizer(args.qwen3, args.dataset, args.vocab_size, args.split)
    else:
        tok = AutoTokenizer.from_pretrained(args.qwen3)
    head_dim = args.hidden_size // args.heads
    config = Qwen3Config(vocab_size=len(tok), hidden_size=args.hidden_size, intermediate_size=args.hidden_size * 3,
                         num_hidden_layers=args.layers, num_attention_heads=args.heads,
                         num_key_value_heads=max(1, args.heads // 2), head_dim=head_dim,
                         max_position_embeddings=args.max_positions, tie_word_embeddings=True,
                         eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id, bos_token_id=None)
    torch.manual_seed(args.seed)
    model = Qwen3ForCausalLM(config)
    model.generation_config = GenerationConfig(eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id,
                                               do_sample=True, temperature=1.0)
    os.makedirs(args.out, exist_ok=True)
    model.save_pretrained(args.out)
    tok.save_pretrained(args.out)
    params = sum(p.numel() for p in model.parameters())
    print(json.dumps({"out": args.out, "parameters": params, "vocab_size": len(tok), "tokenizer": args.tokenizer,
                      "seed": args.seed}))


def default_qwen3_dir() -> str:
    shared = os.environ.get("STEPTP_SHARED")
    if shared:
        return os.path.join(shared, "tokenizers", "qwen3")
    return os.path.join("..", "shared", "tokenizers", "qwen3")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m steptp.train", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)

    t = sub.add_parser("tiny-model", help="an offline Qwen3-architecture model with random weights")
    t.add_argument("out", help="model folder to write")
    t.add_argument("--tokenizer", choices=("qwen3", "small"), default="qwen3",
                   help="Qwen3's tokenizer (152k tokens) or a small BPE trained on --dataset")
    t.add_argument("--dataset", help="a dataset JSONL file whose message texts train the small tokenizer")
    t.add_argument("--qwen3", default=default_qwen3_dir(),
                   help="the Qwen3 tokenizer folder (default $STEPTP_SHARED/tokenizers/qwen3 or ../shared/...)")
    t.add_argument("--vocab-size", type=int, default=2048, help="small tokenizer's vocabulary (default 2048)")
    t.add_argument("--split", choices=("words", "none", "spans"), default="words",
                   help="small tokenizer's pre-split: words (GPT-2's), none (merges cross spaces and punctuation: "
                        "shorter records), spans (none, with site handles, parameter objects, strategy names and "
                        "menu option numbers kept apart, so prompt and answer share their tokens)")
    t.add_argument("--hidden-size", type=int, default=64)
    t.add_argument("--layers", type=int, default=2)
    t.add_argument("--heads", type=int, default=4)
    t.add_argument("--max-positions", type=int, default=32768)
    t.add_argument("--seed", type=int, default=0)
    t.set_defaults(run=cmd_tiny_model)

    for name, run, what in (("sft", cmd_sft, "supervised fine-tuning on sft_prompt_completion_*.jsonl"),
                            ("dpo", cmd_dpo, "preference optimization on dpo_*.jsonl"),
                            ("grpo", cmd_grpo, "GRPO on rl_prompts_*.jsonl with steptp's reward")):
        s = sub.add_parser(name, help=what)
        s.add_argument("--model", required=True, help="base model: a local Hugging Face causal-LM folder")
        s.add_argument("--data", required=True, help=f"the dataset file ({FILE_KINDS[COMMAND_KIND[name]]})")
        s.add_argument("--out", required=True, help="output folder (checkpoints, then the trained model)")
        s.add_argument("--epochs", type=float, default=1.0)
        s.add_argument("--max-steps", type=int, default=0, help="stop after N optimizer steps (0: the epochs)")
        s.add_argument("--lr", type=float, default=1e-5 if name != "sft" else 2e-5)
        s.add_argument("--lr-scheduler", default="cosine", help="transformers' scheduler name (cosine, constant, linear...)")
        s.add_argument("--max-length", type=int, default=0,
                       help="tokens per record; longer records are left out (0: the longest record's length)")
        s.add_argument("--limit", type=int, default=0, help="train on the first N records that fit (0: all)")
        s.add_argument("--batch", type=int, default=2, help="records per device batch")
        s.add_argument("--grad-accum", type=int, default=1, help="gradient accumulation steps")
        s.add_argument("--seed", type=int, default=0)
        s.add_argument("--resume", action="store_true", help="continue from the latest checkpoint in --out")
        s.add_argument("--save-steps", type=int, default=500)
        s.add_argument("--lora", action="store_true", help="train LoRA adapters (peft), merged into the output")
        s.add_argument("--lora-r", type=int, default=16)
        s.add_argument("--lora-alpha", type=int, default=32)
        s.add_argument("--gradient-checkpointing", action="store_true")
        s.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
        if name == "sft":
            s.add_argument("--drop-reasoning", action="store_true",
                           help="train on the answers only: the <think> block of each completion is removed")
            s.add_argument("--loss-on-prompt", action="store_true",
                           help="the loss on the prompt's tokens too (language-model pretraining on the records), "
                                "not on the completion's alone")
        if name == "dpo":
            s.add_argument("--beta", type=float, default=0.1, help="DPO's KL strength")
        if name == "grpo":
            s.add_argument("--num-generations", type=int, default=4, help="completions per prompt (a group)")
            s.add_argument("--max-completion-length", type=int, default=1024)
            s.add_argument("--temperature", type=float, default=1.0)
            s.add_argument("--kl-beta", type=float, default=0.0, help="KL to the base model (0: none, TRL's default)")
            s.add_argument("--reward-url", default="",
                           help="score with `steptp serve` at URL (default: in-process steptp.score)")
            s.add_argument("--guide", default="",
                           help="an sft_prompt_completion_* file: the first completion of a group whose prompt it "
                                "answers is that answer (a cold model then still sees a reward difference)")
            s.add_argument("--vllm", action="store_true", help="generate with vLLM in the trainer's process (GPU)")
            s.add_argument("--no-measure", dest="measure", action="store_false",
                           help="verify answers but do not time them (reward without the speedup part)")
        s.set_defaults(run=run)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        args.run(args)
    except TrainError as e:
        print(f"steptp.train: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
