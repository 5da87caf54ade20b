"""Reward functions for RL trainers, scored in-process by the `steptp` package when it is importable,
else by `steptp serve` over HTTP.

verl: set `custom_reward_function.path` to this file and `.name` to `compute_score`; put the
record's `reward_context` (docs/dataset.md) in `reward_model.ground_truth` (dict or JSON text) or
in `extra_info["reward_context"]`.

TRL (GRPOTrainer): `reward_funcs=[steptp_reward]`; the dataset's `reward_context` column reaches
it as a keyword argument. Completions may be strings or conversational message lists.

Both return the reward in [-1, 1] (apps/reward/reward.h documents its parts), or None for "no score":
the answer could not be judged for a reason that is not its own (the service timed out or ran out
of memory outside the answer's kernel run, the machine was not obtained, the service was shutting
down: 503), so a trainer leaves it out rather than learning from a failure reward. A
reward_context that is itself invalid raises: that is a data bug, not a bad answer.

Which scorer: $STEPTP_REWARD_BACKEND=inprocess or =http chooses; unset, a service named by a `url`
keyword or $STEPTP_SERVE_URL is used over HTTP, else the in-process scorer (steptp.score, the same
reward module the service runs) when `steptp` is importable, else the service at
http://127.0.0.1:8080.
"""

import os

from . import local
from .client import StepTPClient, as_context

_clients = {}


def _client(url=None):
    backend = os.environ.get("STEPTP_REWARD_BACKEND", "")
    if backend not in ("", "http", "inprocess"):
        raise ValueError("STEPTP_REWARD_BACKEND must be http or inprocess, not %r" % backend)
    if backend == "":
        configured = url or os.environ.get("STEPTP_SERVE_URL")
        backend = "http" if configured or not local.available() else "inprocess"
    key = (backend, url or "")
    if key not in _clients:
        _clients[key] = local.InProcessScorer() if backend == "inprocess" else StepTPClient(url)
    return _clients[key]


def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    """verl's custom reward function: the reward of one decoded response."""
    ctx = ground_truth
    if (ctx is None or ctx == "") and isinstance(extra_info, dict):
        ctx = extra_info.get("reward_context")
    measure = True
    if isinstance(extra_info, dict) and "steptp_measure" in extra_info:
        measure = bool(extra_info["steptp_measure"])
    reply = _client(kwargs.get("url")).score(solution_str, as_context(ctx), measure=measure)
    return _reward(reply)


def _reward(reply):
    """The reward of a score reply, None when it is "no score" (reward null)."""
    return None if reply.get("reward") is None else float(reply["reward"])


def _text(completion):
    if isinstance(completion, str):
        return completion
    # Conversational: a list of messages; the assistant's content is scored.
    return "".join(m.get("content", "") for m in completion if m.get("role", "assistant") == "assistant")


def steptp_reward(prompts=None, completions=None, reward_context=None, **kwargs):
    """TRL GRPO reward function: one reward per completion, scored in batches."""
    if completions is None or reward_context is None:
        raise ValueError("steptp_reward needs completions and the dataset's reward_context column")
    replies = _client(kwargs.get("url")).score_batch([_text(c) for c in completions], list(reward_context),
                                                     measure=kwargs.get("steptp_measure", True))
    out = []
    for r in replies:
        if r.get("status") == 503:  # the service could not judge it (shutting down): no score
            out.append(None)
            continue
        if r.get("status") != 200:
            raise RuntimeError("steptp refused an item: %s" % r.get("error"))
        out.append(_reward(r))
    return out
