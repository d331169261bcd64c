"""Per-seed metrics: a registered function turns one seed's record summary into a
time-to-event observation (time, observed), or None when the seed has no defined value.

A seed that never reaches the event within the budget is censored at the budget, never dropped.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Observation = tuple[float, bool] | None
MetricFn = Callable[[dict[str, Any]], Observation]


def _step_or_censored(step: int | None, budget: int) -> Observation:
    return (float(step), True) if step is not None else (float(budget), False)


def val_threshold_step(s: dict[str, Any]) -> Observation:
    """Steps until validation accuracy first reaches τ_val."""
    return _step_or_censored(s["val_step"], s["budget"])


def train_threshold_step(s: dict[str, Any]) -> Observation:
    """Steps until training accuracy first reaches τ_train."""
    return _step_or_censored(s["train_step"], s["budget"])


def grokking_lag(s: dict[str, Any]) -> Observation:
    """Steps from fitting (τ_train) to generalising (τ_val); censored at budget − fit step when
    validation never gets there; undefined (None) when the training set is never fitted."""
    if s["train_step"] is None:
        return None
    if s["val_step"] is None:
        return float(s["budget"] - s["train_step"]), False
    return float(max(s["val_step"] - s["train_step"], 0)), True


def delay_ratio(s: dict[str, Any]) -> Observation:
    """Step of τ_val over step of τ_train: how many times longer generalising takes than
    fitting (≈1 when they rise together); censored at budget / fit step when validation never
    gets there; undefined (None) when the training set is never fitted."""
    if s["train_step"] is None:
        return None
    fit = max(s["train_step"], 1)
    if s["val_step"] is None:
        return s["budget"] / fit, False
    return max(s["val_step"], fit) / fit, True


METRICS: dict[str, MetricFn] = {
    "val_threshold_step": val_threshold_step,
    "train_threshold_step": train_threshold_step,
    "grokking_lag": grokking_lag,
    "delay_ratio": delay_ratio,
}

DESCRIPTIONS: dict[str, str] = {name: " ".join((fn.__doc__ or "").split())
                                for name, fn in METRICS.items()}
