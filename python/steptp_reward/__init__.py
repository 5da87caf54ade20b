"""Reward functions for verl and TRL backed by `steptp serve` (docs/serve.md)."""

from .client import StepTPClient, as_context, service_url
from .rewards import compute_score, steptp_reward

__all__ = ["StepTPClient", "as_context", "service_url", "compute_score", "steptp_reward"]
