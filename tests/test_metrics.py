"""Per-seed metrics on small hand-written records: the value metrics' windows, nulls and
undefined cases, the time metrics' censoring, and how records become an arm's sample."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pydantic
import pytest

from grokverify.claim.criteria import AnyMetric
from grokverify.kinds import METRICS
from grokverify.stats.arms import arm_sample
from grokverify.stats.metrics import observe

METRIC = pydantic.TypeAdapter(AnyMetric)


def metric(**spec: Any) -> Any:
    return METRIC.validate_python(spec)


def result(curves: dict[str, tuple[list[int], list[float | None]]] | None = None,
           **summary: Any) -> dict[str, Any]:
    """A record's ``result``: named curves, each with its own steps, and the summary."""
    base = {"seed": 0, "budget": 1000, "train_step": None, "val_step": None, "gap": None,
            "diverged": False, "diverged_step": None, "stopped_step": 1000,
            "final_train_acc": 0.5, "final_val_acc": 0.5, "final_train_loss": 1.0,
            "final_val_loss": 1.0, "done": True}
    return {"seed": 0, "budget": base["budget"],
            "curves": {name: {"steps": steps, "values": values}
                       for name, (steps, values) in (curves or {}).items()},
            "summary": {**base, **summary}}


# ---------------------------------------------------------------- value metrics

CURVE = {"val_loss": ([0, 100, 200, 300], [4.0, None, 2.0, 1.0])}


@pytest.mark.parametrize(("step", "expected"), [
    (0, 4.0),      # the first recorded step itself
    (99, 4.0),     # last recorded step at or before 99 is 0
    (100, None),   # recorded at 100, but null there: undefined, not the value before
    (150, None),   # the last step at or before 150 is 100 (null)
    (200, 2.0),    # the window end is included
    (10_000, 1.0),
])
def test_curve_at_takes_the_last_recorded_step_at_or_before(step: int,
                                                            expected: float | None) -> None:
    got = observe(metric(name="curve_at", curve="val_loss", step=step), result(CURVE))
    assert got == (None if expected is None else (expected, True))


def test_curve_at_before_the_first_recorded_step_is_undefined() -> None:
    late = {"val_loss": ([50, 100], [3.0, 2.0])}
    assert observe(metric(name="curve_at", curve="val_loss", step=49), result(late)) is None


@pytest.mark.parametrize(("start", "end", "expected"), [
    (0, 300, (4.0 + 2.0 + 1.0) / 3),  # the null at 100 is skipped, not counted as 0
    (100, 200, 2.0),                  # both ends included; 100 is null
    (200, 300, 1.5),
    (0, 0, 4.0),
    (101, 199, None),                 # no recorded step in the window
    (100, 100, None),                 # only a null in the window
    (301, 500, None),
])
def test_curve_mean_over_a_window(start: int, end: int, expected: float | None) -> None:
    spec = metric(name="curve_mean", curve="val_loss", start=start, end=end)
    got = observe(spec, result(CURVE))
    assert got == (None if expected is None else (pytest.approx(expected), True))


def test_curve_ratio_divides_window_means_each_over_its_own_steps() -> None:
    curves = {"grad_norm.E": ([0, 50, 100, 150], [2.0, 4.0, 6.0, 100.0]),
              "grad_norm.W": ([0, 100], [1.0, 3.0])}
    spec = metric(name="curve_ratio", numerator="grad_norm.E", denominator="grad_norm.W",
                  start=0, end=100)
    # numerator mean over 0, 50, 100 = 4; denominator mean over 0, 100 = 2; 150 is outside
    assert observe(spec, result(curves)) == (pytest.approx(2.0), True)


@pytest.mark.parametrize("curves", [
    {"a": ([0, 100], [1.0, 2.0]), "b": ([0, 100], [1.0, -1.0])},   # denominator mean 0
    {"a": ([0, 100], [None, None]), "b": ([0, 100], [1.0, 1.0])},  # numerator undefined
    {"a": ([0, 100], [1.0, 1.0]), "b": ([500], [1.0])},            # denominator undefined
    {"a": ([0, 100], [1e308, 1e308]), "b": ([0, 100], [1e-10, 1e-10])},  # quotient overflows
    {"a": ([0, 100], [1.5e308, 1.7e308]), "b": ([0, 100], [1e-300, 1e-300])},  # huge mean
])
def test_curve_ratio_undefined(curves: dict[str, Any]) -> None:
    spec = metric(name="curve_ratio", numerator="a", denominator="b", start=0, end=100)
    assert observe(spec, result(curves)) is None


def test_curve_ratio_is_signed() -> None:
    curves = {"a": ([0, 10], [-3.0, -1.0]), "b": ([0, 10], [1.0, 3.0])}
    spec = metric(name="curve_ratio", numerator="a", denominator="b", start=0, end=10)
    assert observe(spec, result(curves)) == (pytest.approx(-1.0), True)


@pytest.mark.parametrize(("values", "expected"), [
    ([1.0, 2.0, None], 2.0),          # trailing null skipped
    ([1.0, float("nan")], 1.0),       # a non-finite value counts as missing
    ([None, None], None),
    ([], None),
    ([-0.25], -0.25),
])
def test_final_value(values: list[float | None], expected: float | None) -> None:
    curves = {"val_acc": (list(range(0, 10 * len(values), 10)), values)}
    got = observe(metric(name="final_value", curve="val_acc"), result(curves))
    assert got == (None if expected is None else (expected, True))


def test_a_curve_the_record_lacks_is_a_wiring_error() -> None:
    with pytest.raises(KeyError, match="no curve 'sigma_max.E'"):
        observe(metric(name="final_value", curve="sigma_max.E"), result(CURVE))


@pytest.mark.parametrize("bad", [
    {"name": "curve_mean", "curve": "val_loss", "start": 10, "end": 5},
    {"name": "curve_mean", "curve": "val_loss", "start": -1, "end": 5},
    {"name": "curve_ratio", "numerator": "a", "denominator": "a", "start": 0, "end": 5},
    {"name": "curve_at", "curve": "val_loss"},
    {"name": "curve_at", "curve": "val_loss", "step": 5, "on_diverged": "budget"},
    {"name": "final_value", "curve": "val_loss", "extra": 1},
])
def test_bad_metric_specs_are_refused(bad: dict[str, Any]) -> None:
    with pytest.raises(pydantic.ValidationError):
        metric(**bad)


def test_kinds_and_defaults() -> None:
    assert metric(name="val_threshold_step").on_diverged == "budget"
    assert metric(name="final_value", curve="val_acc").on_diverged == "exclude"
    kinds = {name: cls.kind for name, cls in METRICS.specs.items()}
    assert {n for n, k in kinds.items() if k == "time"} == {
        "val_threshold_step", "train_threshold_step", "grokking_lag", "delay_ratio",
        "curve_reaches", "fall_onset", "fall_onset_ratio", "reaches_ratio"}
    assert {n for n, k in kinds.items() if k == "value"} == {
        "curve_at", "curve_reached", "curve_mean", "curve_ratio", "final_value", "final_difference",
        "phase_is", "phase", "tracking_drift"}
    assert set(METRICS) == set(METRICS.specs)


# ---------------------------------------------------------------- time metrics


@pytest.mark.parametrize(("name", "train", "val", "expected"), [
    ("val_threshold_step", 200, 500, (500.0, True)),
    ("val_threshold_step", 200, None, (1000.0, False)),   # censored at the budget
    ("train_threshold_step", 200, None, (200.0, True)),
    ("train_threshold_step", None, None, (1000.0, False)),
    ("grokking_lag", 200, 500, (300.0, True)),            # val step minus the fit step
    ("grokking_lag", 200, None, (800.0, False)),          # censored at budget - fit step
    ("grokking_lag", 200, 100, (0.0, True)),              # generalised before fitting: 0
    ("grokking_lag", None, 500, None),                    # never fitted: undefined
    ("delay_ratio", 200, 500, (2.5, True)),
    ("delay_ratio", 0, 300, (300.0, True)),               # a fit at step 0 counts as step 1
    ("delay_ratio", 200, 100, (1.0, True)),
    ("delay_ratio", 200, None, (5.0, False)),             # censored at budget / fit step
    ("delay_ratio", None, None, None),
])
def test_time_metrics(name: str, train: int | None, val: int | None,
                      expected: tuple[float, bool] | None) -> None:
    assert observe(metric(name=name), result(train_step=train, val_step=val)) == expected


# ---------------------------------------------------------------- records -> arm sample


def record(seed: int, curves: dict[str, Any], **summary: Any) -> dict[str, Any]:
    return {"key": f"k{seed}", "seed": seed, "result": result(curves, seed=seed, **summary)}


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


def test_a_curve_whose_steps_and_values_differ_in_length_is_an_error() -> None:
    """A damaged record must not be read by silently dropping the unmatched points."""
    spec = metric(name="curve_mean", curve="val_loss", start=0, end=100)
    with pytest.raises(ValueError):
        observe(spec, result({"val_loss": ([0, 50, 100], [1.0, 2.0])}))


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


def test_a_window_mean_of_huge_finite_values_is_finite_not_a_crash() -> None:
    """Their sum overflows a float; the mean does not (a curve diverging towards 1e308 must give a
    number or an undefined value, never an OverflowError that stops the run)."""
    spec = metric(name="curve_mean", curve="val_loss", start=0, end=100)
    assert observe(spec, result({"val_loss": ([0, 100], [1.5e308, 1.7e308])})) == (
        pytest.approx(1.6e308), True)
