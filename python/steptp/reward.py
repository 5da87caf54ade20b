"""In-process answer scoring: the reward `steptp serve` computes for /v1/score (docs/serve.md,
src/apps/reward/reward.h), as a function call. python/steptp_reward's verl and TRL reward functions use
it when this package is importable."""

from __future__ import annotations

import json
import os
import random
from typing import Any, Mapping

from . import _core


def default_peaks_path() -> str:
    """The machine peaks cache `steptp serve` uses by default: ~/.cache/steptp/peaks.json."""
    return os.path.join(os.environ.get("HOME") or "/tmp", ".cache", "steptp", "peaks.json")


def score(answer: str, reward_context: Mapping[str, Any] | str, *, measure: bool = True, verify_trials: int = 3,
          verify_seed: int | None = None, input_seed: int | None = None, peaks: str | None = "default",
          measure_threads: int = 1, measure_min_time: float = 0.01) -> dict[str, Any]:
    """The reward of an assistant answer to a dataset prompt, as serve's /v1/score replies:
    {"reward", "parsed", "list", "answers": [{"reward", "parts", "failed_stage", ...}],
    "verify_seed", "input_seed"}.

    `reward_context` is the chat record's field of that name (dict or JSON text). Seeds default to
    fresh random ones per call (as the service draws them); `peaks` is the machine-peaks cache of
    the implausibility check ("default": serve's default file; None: no check). Raises ValueError
    for a malformed context and steptp.InvalidProgramError for an invalid program in it; a bad
    answer is never an error but a scored failure; an answer that could not be judged for a reason
    that is not its own (the measurement could not take place) has "reward" None and
    "infrastructure_failure" (no score)."""
    if isinstance(reward_context, str):
        reward_context = json.loads(reward_context)
    if not 1 <= verify_trials <= 16:
        raise ValueError("verify_trials must be in [1, 16]")
    fresh = random.SystemRandom()
    vseed = fresh.getrandbits(63) if verify_seed is None else verify_seed
    iseed = fresh.getrandbits(63) if input_seed is None else input_seed
    peaks_path = default_peaks_path() if peaks == "default" else (peaks or "")
    return _core.score(answer, dict(reward_context), measure, verify_trials, vseed, iseed, peaks_path,
                       measure_threads, measure_min_time)
