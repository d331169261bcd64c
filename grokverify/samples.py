"""Store records of one arm → the per-seed sample a criterion uses (metric + divergence rule)."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np

from grokverify.metrics import METRICS
from grokverify.spec import MetricSpec
from grokverify.stats import ArmSample


def arm_sample(arm: str, records: list[dict[str, Any]], metric: MetricSpec,
               extra_metrics: list[str] | tuple[str, ...] = ()) -> ArmSample:
    """Censored seeds stay in (censored at the budget); only declared rules leave a seed out,
    and each one left out is counted under its reason. `extra_metrics` (e.g. a correlation's
    x and y) are read for the same seeds into `extra[name]` and `extra[name + ".observed"]`,
    NaN where undefined for a seed."""
    fn = METRICS[metric.name]
    times: list[float] = []
    observed: list[bool] = []
    seeds: list[int] = []
    extra: dict[str, list[float]] = {k: [] for name in extra_metrics
                                     for k in (name, f"{name}.observed")}
    excluded: Counter[str] = Counter()
    for rec in records:
        summary = rec["result"]["summary"]
        obs = fn(summary)
        if summary["diverged"] and metric.on_diverged == "exclude":
            excluded["diverged"] += 1
        elif obs is None:
            excluded["undefined (training set never fitted)"] += 1
        else:
            times.append(obs[0])
            observed.append(obs[1])
            seeds.append(int(summary["seed"]))
            for name in extra_metrics:
                value = METRICS[name](summary)
                extra[name].append(math.nan if value is None else value[0])
                extra[f"{name}.observed"].append(value is not None and value[1])
    arrays = {k: np.asarray(v, dtype=bool if k.endswith(".observed") else float)
              for k, v in extra.items()}
    return ArmSample(arm, times, observed, tuple(seeds), dict(excluded), extra=arrays)
