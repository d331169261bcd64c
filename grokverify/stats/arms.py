"""Store records of one arm → the per-seed sample a criterion uses (metric + divergence rule)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from grokverify.claim.metrics import MetricSpec
from grokverify.stats.base import OBSERVED_SUFFIX, ArmSample
from grokverify.stats.metrics import Observation, observe

DIVERGED = "diverged"


def seed_value(metric: MetricSpec, record: dict[str, Any]) -> Observation | str:
    """One seed's (value, observed), or the reason it is left out: diverged under the metric's
    ``on_diverged: exclude``, or the metric's own reason for an undefined value."""
    result = record["result"]
    if result["summary"]["diverged"] and metric.on_diverged == "exclude":
        return DIVERGED
    obs = observe(metric, result)
    return metric.undefined if obs is None else obs


def arm_sample(arm: str, records: list[dict[str, Any]], metric: MetricSpec,
               extra_metrics: Sequence[MetricSpec] = ()) -> ArmSample:
    """Censored seeds stay in; only declared rules leave a seed out, counted under its reason.
    `extra_metrics` (e.g. a correlation's x and y) are read for the same seeds into
    ``extra[label]`` and ``extra[label.observed]``, NaN where undefined for a seed."""
    values: list[float] = []
    observed: list[bool] = []
    seeds: list[int] = []
    extra: dict[str, list[Any]] = {k: [] for m in extra_metrics
                                   for k in (m.label(), m.label() + OBSERVED_SUFFIX)}
    excluded: Counter[str] = Counter()
    for rec in records:
        got = seed_value(metric, rec)
        if isinstance(got, str):
            excluded[got] += 1
            continue
        values.append(got[0])
        observed.append(got[1])
        seeds.append(int(rec["result"]["summary"]["seed"]))
        for m in extra_metrics:
            other = seed_value(m, rec)
            defined = not isinstance(other, str)
            extra[m.label()].append(other[0] if defined else math.nan)
            extra[m.label() + OBSERVED_SUFFIX].append(defined and other[1])
    arrays = {k: np.asarray(v, dtype=bool if k.endswith(OBSERVED_SUFFIX) else float)
              for k, v in extra.items()}
    return ArmSample(arm, values, observed, tuple(seeds), dict(excluded), arrays, metric.kind)
