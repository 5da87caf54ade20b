"""Reward functions for RL trainers, backed by `steptp serve`.

verl: set `custom_reward_function.path` to this file and `.name` to `compute_score`; put the
record's `reward_context` (docs/dataset.md) in `reward_model.ground_truth` (dict or JSON text) or
in `extra_info["reward_context"]`.

TRL (GRPOTrainer): `reward_funcs=[steptp_reward]`; the dataset's `reward_context` column reaches
it as a keyword argument. Completions may be strings or conversational message lists.

Both return the service's reward in [-1, 1] (reward/reward.h documents its parts). A reply that
is not 200 (e.g. a reward_context that is itself invalid) raises: that is a data bug, not a bad
answer. The service URL comes from $STEPTP_SERVE_URL (default http://127.0.0.1:8080).
"""

from .client import StepTPClient, as_context

_clients = {}


def _client(url=None):
    key = url or ""
    if key not in _clients:
        _clients[key] = StepTPClient(url)
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
    return float(reply["reward"])


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
        if r.get("status") != 200:
            raise RuntimeError("steptp serve refused an item: %s" % r.get("error"))
        out.append(float(r["reward"]))
    return out
