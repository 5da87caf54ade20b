"""steptp from Python: parse, check, run, verify, apply, lower, bench, tune and score LEIR programs
in-process, over the same C++ core as the `steptp` command (docs/python.md).

    import numpy as np, steptp
    p = steptp.Program.parse(text)
    out = steptp.run(p, {"A": np.ones((8, 16))})
"""

from __future__ import annotations

import os
import tempfile
from typing import Any, Sequence

from . import _core
from ._core import (Program, apply, bench, check, lower, parse_answer, strategies, strategy_info,
                    verify)
from .arrays import run
from .errors import (Error, FailedError, InvalidInputError, InvalidProgramError, LeirError, LowerError, ParseError,
                     RequestError, RunError, TooLargeError)
from .reward import score

__all__ = ["Program", "check", "run", "verify", "strategies", "strategy_info", "apply", "lower", "bench", "tune",
           "generate", "tokens", "score", "parse_answer", "Error", "RequestError", "InvalidInputError",
           "TooLargeError", "FailedError", "LeirError", "ParseError", "InvalidProgramError", "LowerError", "RunError"]


def tune(program: Program, *, trials: int = 64, time_limit: float = 0.0, threads: int = 0, seed: int = 0,
         store: str | os.PathLike | None = None) -> dict[str, Any]:
    """Measurement-guided search from `program` (`steptp tune`, docs/tune.md): result.json's object
    plus "trajectory", "wall_s" and "best" (a Program). Measurements are kept in the SQLite file
    `store` (same seed + same store: identical result); None: a temporary store."""
    if store is None:
        with tempfile.TemporaryDirectory(prefix="steptp-tune-") as d:
            return _core.tune(program, os.path.join(d, "measurements.sqlite"), trials, time_limit, threads, seed)
    return _core.tune(program, os.fspath(store), trials, time_limit, threads, seed)


def generate(out: str | os.PathLike, **options: Any) -> dict[str, Any]:
    """Writes the dataset to folder `out` (`steptp generate`, docs/dataset.md) and returns the run's
    summary. Options are the CLI's, named with '_' (seed, size, programs, composites, input,
    examples, search, beam, depth, jobs, verify_trials, per_strategy_cap, format, token_sample,
    eval_fraction, cost, measure_min_time, measure_threads, measurements); unknown ones raise
    ValueError."""
    return _core.generate(os.fspath(out), options)


def tokens(text: str | Sequence[str], tokenizer: str | os.PathLike | None = None) -> int | list[int]:
    """Exact Qwen3 token count of `text` (or of each text of a list), as `steptp tokens`; the
    tokenizer.json defaults to $STEPTP_SHARED/tokenizers/qwen3 or ../shared/tokenizers/qwen3."""
    path = os.fspath(tokenizer) if tokenizer is not None else ""
    if isinstance(text, str):
        return _core.tokens(text, path)
    return [_core.tokens(t, path) for t in text]
