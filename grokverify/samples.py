"""Store records of one arm → the per-seed sample a criterion uses (metric + divergence rule)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from grokverify.metrics import METRICS
from grokverify.spec import MetricSpec
from grokverify.stats import ArmSample


def arm_sample(arm: str, records: list[dict[str, Any]], metric: MetricSpec) -> ArmSample:
    """Censored seeds stay in (censored at the budget); only declared rules leave a seed out,
    and each one left out is counted under its reason."""
    fn = METRICS[metric.name]
    times: list[float] = []
    observed: list[bool] = []
    seeds: list[int] = []
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
    return ArmSample(arm, times, observed, tuple(seeds), dict(excluded))
