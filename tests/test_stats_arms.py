"""How an arm's store records become its sample (grokverify/stats/arms.py): seeds left out by
divergence or an undefined value are counted per reason, censored times stay in, and further
metrics are read for the same seeds."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from conftest import metric_spec as metric
from conftest import seed_result

from grokverify.stats.arms import arm_sample


def record(seed: int, curves: dict[str, Any], **summary: Any) -> dict[str, Any]:
    return {"key": f"k{seed}", "seed": seed, "result": seed_result(curves, seed=seed, **summary)}


def test_value_sample_leaves_out_diverged_and_undefined_seeds_and_counts_them() -> None:
    spec = metric(name="curve_mean", curve="val_loss", start=0, end=100)
    records = [
        record(0, {"val_loss": ([0, 100], [-1.0, -3.0])}),
        record(1, {"val_loss": ([0, 100], [2.0, 4.0])}, diverged=True, diverged_step=150),
        record(2, {"val_loss": ([200], [1.0])}),
        record(3, {"val_loss": ([0], [0.5])}),
    ]
    sample = arm_sample("a", records, spec)
    assert sample.kind == "value"
    assert sample.seeds == (0, 3)
    assert sample.values.tolist() == [-2.0, 0.5] and sample.observed.all()
    assert sample.excluded == {"diverged": 1, "undefined (no value recorded in the window)": 1}


def test_time_sample_censors_a_diverged_seed_at_the_budget_by_default() -> None:
    records = [record(0, {}, val_step=300), record(1, {}, diverged=True, diverged_step=40)]
    sample = arm_sample("a", records, metric(name="val_threshold_step"))
    assert sample.kind == "time"
    assert sample.values.tolist() == [300.0, 1000.0]
    assert sample.observed.tolist() == [True, False] and sample.excluded == {}
    excluded = arm_sample("a", records, metric(name="val_threshold_step", on_diverged="exclude"))
    assert excluded.seeds == (0,) and excluded.excluded == {"diverged": 1}


def test_extra_metrics_are_read_for_the_same_seeds_under_their_labels() -> None:
    x = metric(name="curve_at", curve="val_loss", step=0)
    records = [record(0, {"val_loss": ([0], [-1.5])}, val_step=300),
               record(1, {"val_loss": ([10], [2.0])}, val_step=None)]
    sample = arm_sample("a", records, metric(name="val_threshold_step"), [x])
    label = "curve_at(curve=val_loss, step=0)"
    assert x.label() == label
    assert sample.extra[label][0] == -1.5 and math.isnan(sample.extra[label][1])
    assert sample.extra[label + ".observed"].tolist() == [True, False]
    assert np.array_equal(sample.observed, [True, False])


def test_left_out_seeds_are_counted_per_reason_and_extra_arrays_are_typed() -> None:
    """Two diverged seeds count 2 under one reason; a further metric's values are floats (NaN
    where undefined) and its observed flags booleans, even when every value is a whole step."""
    records = [record(0, {}, val_step=300, train_step=100),
               record(1, {}, diverged=True, diverged_step=40),
               record(2, {}, diverged=True, diverged_step=60),
               record(3, {}, val_step=500, train_step=200)]
    x = metric(name="train_threshold_step")
    sample = arm_sample("a", records, metric(name="val_threshold_step", on_diverged="exclude"),
                        [x])
    assert sample.excluded == {"diverged": 2} and sample.seeds == (0, 3)
    assert sample.extra[x.label()].dtype == np.float64
    assert sample.extra[x.label()].tolist() == [100.0, 200.0]
    assert sample.extra[x.label() + ".observed"].dtype == np.bool_
