"""Per-seed metrics (grokverify/stats/metrics.py) on small hand-written records, each answer
worked out by hand: the value metrics' windows, nulls and undefined cases, the time metrics'
censoring, fall_onset, reaches_ratio, tracking_drift and the phases of paper 2's Table 1."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pydantic
import pytest
from conftest import Has, seed_result
from conftest import metric_spec as metric

from grokverify.claim.load import load_claim
from grokverify.claim.metrics import (
    PHASES,
    CurveReached,
    CurveReaches,
    FallOnset,
    FallOnsetRatio,
    FinalDifference,
    PhaseIs,
    ReachesRatio,
    TrackingDrift,
)
from grokverify.engine.loop import train_seeds
from grokverify.kinds import METRICS
from grokverify.stats.arms import DIVERGED, seed_value
from grokverify.stats.metrics import observe, phase_of, running_median

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
    got = observe(metric(name="curve_at", curve="val_loss", step=step), seed_result(CURVE))
    assert got == (None if expected is None else (expected, True))


def test_curve_at_before_the_first_recorded_step_is_undefined() -> None:
    late = {"val_loss": ([50, 100], [3.0, 2.0])}
    assert observe(metric(name="curve_at", curve="val_loss", step=49), seed_result(late)) is None


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
    got = observe(spec, seed_result(CURVE))
    assert got == (None if expected is None else (pytest.approx(expected), True))


def test_curve_ratio_divides_window_means_each_over_its_own_steps() -> None:
    curves = {"grad_norm.E": ([0, 50, 100, 150], [2.0, 4.0, 6.0, 100.0]),
              "grad_norm.W": ([0, 100], [1.0, 3.0])}
    spec = metric(name="curve_ratio", numerator="grad_norm.E", denominator="grad_norm.W",
                  start=0, end=100)
    # numerator mean over 0, 50, 100 = 4; denominator mean over 0, 100 = 2; 150 is outside
    assert observe(spec, seed_result(curves)) == (pytest.approx(2.0), True)


@pytest.mark.parametrize("curves", [
    {"a": ([0, 100], [1.0, 2.0]), "b": ([0, 100], [1.0, -1.0])},   # denominator mean 0
    {"a": ([0, 100], [None, None]), "b": ([0, 100], [1.0, 1.0])},  # numerator undefined
    {"a": ([0, 100], [1.0, 1.0]), "b": ([500], [1.0])},            # denominator undefined
    {"a": ([0, 100], [1e308, 1e308]), "b": ([0, 100], [1e-10, 1e-10])},  # quotient overflows
    {"a": ([0, 100], [1.5e308, 1.7e308]), "b": ([0, 100], [1e-300, 1e-300])},  # huge mean
])
def test_curve_ratio_undefined(curves: dict[str, Any]) -> None:
    spec = metric(name="curve_ratio", numerator="a", denominator="b", start=0, end=100)
    assert observe(spec, seed_result(curves)) is None


def test_curve_ratio_is_signed() -> None:
    curves = {"a": ([0, 10], [-3.0, -1.0]), "b": ([0, 10], [1.0, 3.0])}
    spec = metric(name="curve_ratio", numerator="a", denominator="b", start=0, end=10)
    assert observe(spec, seed_result(curves)) == (pytest.approx(-1.0), True)


@pytest.mark.parametrize(("values", "expected"), [
    ([1.0, 2.0, None], 2.0),          # trailing null skipped
    ([1.0, float("nan")], 1.0),       # a non-finite value counts as missing
    ([None, None], None),
    ([], None),
    ([-0.25], -0.25),
])
def test_final_value(values: list[float | None], expected: float | None) -> None:
    curves = {"val_acc": (list(range(0, 10 * len(values), 10)), values)}
    got = observe(metric(name="final_value", curve="val_acc"), seed_result(curves))
    assert got == (None if expected is None else (expected, True))


def test_a_curve_the_record_lacks_is_a_wiring_error() -> None:
    with pytest.raises(KeyError, match="no curve 'sigma_max.E'"):
        observe(metric(name="final_value", curve="sigma_max.E"), seed_result(CURVE))


def test_a_curve_whose_steps_and_values_differ_in_length_is_an_error() -> None:
    """A damaged record must not be read by silently dropping the unmatched points."""
    spec = metric(name="curve_mean", curve="val_loss", start=0, end=100)
    with pytest.raises(ValueError):
        observe(spec, seed_result({"val_loss": ([0, 50, 100], [1.0, 2.0])}))


def test_a_window_mean_of_huge_finite_values_is_finite_not_a_crash() -> None:
    """Their sum overflows a float; the mean does not (a curve diverging towards 1e308 must give a
    number or an undefined value, never an OverflowError that stops the run)."""
    spec = metric(name="curve_mean", curve="val_loss", start=0, end=100)
    assert observe(spec, seed_result({"val_loss": ([0, 100], [1.5e308, 1.7e308])})) == (
        pytest.approx(1.6e308), True)


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
    assert observe(metric(name=name), seed_result(train_step=train, val_step=val)) == expected


# ---------------------------------------------------------------- fall_onset, fall_onset_ratio


LAM_STEPS = [0, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000]


def lam_record(values: list[float | None], steps: list[int] | None = None, train_step: int | None
           = 150, val_step: int | None = 600, diverged: bool = False) -> dict[str, Any]:
    steps = LAM_STEPS[:len(values)] if steps is None else steps
    return {"curves": {"lam.W": {"steps": steps, "values": values}},
            "summary": {"train_step": train_step, "val_step": val_step, "budget": 1000,
                        "diverged": diverged}}


def onset(smooth: int = 1) -> FallOnset:
    return FallOnset.model_validate({"name": "fall_onset", "curve": "lam.W", "smooth": smooth})


def onset_ratio(against: str, smooth: int = 1) -> FallOnsetRatio:
    return FallOnsetRatio.model_validate({"name": "fall_onset_ratio", "curve": "lam.W",
                                          "smooth": smooth, "against": against})


@pytest.mark.parametrize(("values", "expected"), [
    ([1, 3, 5, 4, 2, 1], (200.0, True)),           # rise then fall: the peak
    ([5, 4, 3, 2], (0.0, True)),                   # falls from the start
    ([1, 3, 3, 3, 2], (300.0, True)),              # rise, plateau, fall: the plateau's end
    ([1, 2, 3, 3, 3], (400.0, False)),             # rise then plateau: never falls, censored
    ([1, 2, 3, 4, 5], (400.0, False)),             # keeps rising: censored at the last step
    ([2.0], (0.0, False)),                         # one point: nothing after it
    ([1, None, 4, 3, None], (200.0, True)),        # missing values are skipped
])
def test_fall_onset_of_hand_made_traces(values: list[float | None],
                                        expected: tuple[float, bool]) -> None:
    assert observe(onset(), lam_record(values)) == expected


def test_a_trace_without_values_is_undefined() -> None:
    assert observe(onset(), lam_record([None, None])) is None
    assert seed_value(onset(), {"result": lam_record([None, None])}) == onset().undefined


def test_censored_at_the_last_recorded_step_not_beyond() -> None:
    """A trace that stops early (early stop) and is still at its maximum is censored where it
    stops: it is only known not to have fallen by then."""
    assert observe(onset(), lam_record([1.0, 2.0, 3.0], steps=[0, 500, 700])) == (700.0, False)


TRACE = [1, 2, 3, 4, 5, 4, 3, 2, 9, 1, 0]  # a rise-and-fall with a one-point spike at step 800


def test_a_noisy_spike_is_removed_by_the_running_median() -> None:
    """Unsmoothed, the spike is the maximum (step 800). The running median of 3 by hand:
    [1.5, 2, 3, 4, 4, 4, 3, 3, 2, 1, 0.5]: the spike is gone, the maximum 4 spans steps
    300-500, and the trace starts to fall after the last of them, 500."""
    assert observe(onset(1), lam_record(TRACE)) == (800.0, True)
    assert running_median([float(v) for v in TRACE], 3) == [1.5, 2, 3, 4, 4, 4, 3, 3, 2, 1, 0.5]
    assert observe(onset(3), lam_record(TRACE)) == (500.0, True)


@pytest.mark.parametrize("k", [1, 3, 5, 7])
def test_running_median_matches_pandas(k: int) -> None:
    x = np.random.default_rng(k).normal(size=23).tolist()
    reference = pd.Series(x).rolling(k, center=True, min_periods=1).median().tolist()
    assert running_median(x, k) == pytest.approx(reference, rel=0, abs=1e-15)


@pytest.mark.parametrize(("against", "expected"), [
    ("train_threshold_step", (200 / 150, True)),   # falls at 200, fitted at 150
    ("val_threshold_step", (200 / 600, True)),     # generalised at 600
])
def test_fall_onset_ratio_to_the_threshold_step(against: str, expected: tuple[float, bool]) -> None:
    got = observe(onset_ratio(against), lam_record([1, 3, 5, 4, 2, 1]))
    assert got is not None and got[0] == pytest.approx(expected[0]) and got[1] == expected[1]


def test_fall_onset_ratio_is_censored_with_the_fall_and_undefined_without_the_threshold() -> None:
    assert observe(onset_ratio("val_threshold_step"), lam_record([1, 2, 3, 4, 5])) == \
        (400 / 600, False)
    assert observe(onset_ratio("val_threshold_step"), lam_record([1, 3, 2], val_step=None)) is None
    assert observe(onset_ratio("train_threshold_step"), lam_record([1, 3, 2], train_step=0)) == \
        (100.0, True)  # a threshold at step 0 counts as step 1


def test_a_diverged_seed_has_no_fall_onset() -> None:
    spec = onset()
    assert spec.on_diverged == "exclude"
    got = seed_value(spec, {"result": lam_record([1, 3, 2], diverged=True)})
    assert got == "diverged"


@pytest.mark.parametrize("bad", [
    {"name": "fall_onset", "curve": "lam.W"},                        # smooth must be declared
    {"name": "fall_onset", "curve": "lam.W", "smooth": 2},           # even window
    {"name": "fall_onset", "curve": "lam.W", "smooth": 0},
    {"name": "fall_onset", "curve": "lam.W", "smooth": 1, "on_diverged": "budget"},
    {"name": "fall_onset_ratio", "curve": "lam.W", "smooth": 1},     # against missing
    {"name": "fall_onset_ratio", "curve": "lam.W", "smooth": 1, "against": "grokking_lag"},
])
def test_bad_fall_onset_specs_are_refused(bad: dict[str, Any]) -> None:
    with pytest.raises(pydantic.ValidationError):
        METRICS.specs[bad["name"]].model_validate(bad)


def test_even_window_message_says_why() -> None:
    with pytest.raises(pydantic.ValidationError, match="odd number of points"):
        onset(4)


def test_labels_and_descriptions_name_the_parts() -> None:
    spec = onset_ratio("train_threshold_step", 3)
    assert spec.kind == "time" and spec.curves() == ["lam.W"]
    assert spec.label() == ("fall_onset_ratio(curve=lam.W, smooth=3, "
                            "against=train_threshold_step)")
    words = spec.describe()
    assert "lam.W" in words and "running median of 3" in words and "τ_train" in words
    assert "running median" not in onset(1).describe()


# ---------------------------------------------------------------- reaches_ratio


PCA_STEPS = [0, 100, 200, 300, 400, 500]


def pca_record(values: list[float | None], train_step: int | None = 100,
           val_step: int | None = 400) -> dict[str, Any]:
    return {"curves": {"pca.circular": {"steps": PCA_STEPS[:len(values)], "values": values}},
            "summary": {"train_step": train_step, "val_step": val_step, "budget": 500,
                        "diverged": False}}


def reaches(against: str = "val_threshold_step", direction: str = "above",
          level: float = 1.0) -> ReachesRatio:
    return ReachesRatio.model_validate({"name": "reaches_ratio", "curve": "pca.circular",
                                        "level": level, "direction": direction,
                                        "against": against})


@pytest.mark.parametrize(("values", "spec", "expected"), [
    ([0, 0, 0, 1, 1, 1], reaches(), (300 / 400, True)),         # before generalisation
    ([0, 0, 0, 0, 0, 1], reaches(), (500 / 400, True)),         # after it
    ([0, 1, 0, 1, 1, 1], reaches(), (100 / 400, True)),         # the first step counts
    ([0, 0, 0, 0, 0, 0], reaches(), (500 / 400, False)),        # never: censored at the last step
    ([0, 0, None, 0.5, 1], reaches(level=0.5), (300 / 400, True)),  # equal counts; null skipped
    ([0, 0, 1, 1], reaches("train_threshold_step"), (200 / 100, True)),
    ([3, 2, 1, 0], reaches(direction="below", level=1), (200 / 400, True)),
])
def test_reaches_ratio_of_hand_made_records(values: list[float | None], spec: ReachesRatio,
                           expected: tuple[float, bool]) -> None:
    assert observe(spec, pca_record(values)) == expected


def test_reaches_ratio_threshold_at_step_0_counts_as_step_1_a_missing_one_undefined() -> None:
    assert observe(reaches(), pca_record([0, 1], val_step=0)) == (100.0, True)
    assert observe(reaches(), pca_record([0, 1], val_step=None)) is None
    assert seed_value(reaches(), {"result": pca_record([0, 1], val_step=None)}) == \
        reaches().undefined


def test_reaches_ratio_is_a_time_metric_that_needs_its_event() -> None:
    assert ReachesRatio.kind == "time" and reaches().on_diverged == "exclude"
    assert reaches().curves() == ["pca.circular"]
    with pytest.raises(pydantic.ValidationError):
        ReachesRatio.model_validate({"name": "reaches_ratio", "curve": "c", "level": 1})


# ---------------------------------------------------------------- tracking_drift


WINDOWS = {"early_start": 0, "early_end": 10, "late_start": 20, "late_end": 30}


def drift(**over: object) -> TrackingDrift:
    return TrackingDrift.model_validate({
        "name": "tracking_drift", "numerator": "g.E", "denominator": "g.W",
        "predicted_numerator": "s.W", "predicted_denominator": "s.E", **WINDOWS, **over})


def drift_record(steps: list[int], **curves: list[float | None]) -> dict:
    return {"curves": {name.replace("_", "."): {"steps": steps, "values": values}
                       for name, values in curves.items()}}


def test_the_fold_drift_by_hand() -> None:
    """x = (g.E/g.W) / (s.W/s.E): steps 0 and 10 give x = 2 and 4 (early mean 3), steps 20 and 30
    give 0.2 and 0.4 (late mean 0.3): r = 0.1, drift 10; the same data reversed drifts 10 too."""
    rec = drift_record([0, 10, 20, 30], g_E=[2.0, 8.0, 1.0, 2.0], g_W=[1.0, 2.0, 5.0, 5.0],
                  s_W=[1.0, 1.0, 1.0, 2.0], s_E=[1.0, 1.0, 1.0, 2.0])
    assert observe(drift(), rec) == (pytest.approx(10.0), True)
    flipped = drift(early_start=20, early_end=30, late_start=31, late_end=40)
    rec_rev = drift_record([20, 30, 35, 40], g_E=[1.0, 2.0, 2.0, 8.0], g_W=[5.0, 5.0, 1.0, 2.0],
                      s_W=[1.0, 2.0, 1.0, 1.0], s_E=[1.0, 2.0, 1.0, 1.0])
    assert observe(flipped, rec_rev) == (pytest.approx(10.0), True)


def test_a_ratio_that_tracks_its_prediction_does_not_drift() -> None:
    """g.E/g.W = 3 · s.W/s.E at every step, however both move: drift exactly 1."""
    s_w, s_e = [1.0, 2.0, 4.0, 8.0], [1.0, 1.0, 2.0, 0.5]
    g_w = [1.0, 3.0, 0.5, 2.0]
    g_e = [3 * (w / e) * gw for w, e, gw in zip(s_w, s_e, g_w, strict=True)]
    rec = drift_record([0, 10, 20, 30], g_E=g_e, g_W=g_w, s_W=s_w, s_E=s_e)
    assert observe(drift(), rec) == (pytest.approx(1.0), True)


def test_steps_without_all_four_positive_values_are_skipped() -> None:
    """Step 0: g.E missing (None); step 5: s.E = 0; step 10: g.W negative; step 12 is only in
    three curves: none count. Early = step 7 (x = 2), late = step 25 (x = 5): drift 2.5."""
    steps = [0, 5, 7, 10, 25]
    rec = drift_record(steps, g_E=[None, 1.0, 2.0, 1.0, 5.0], g_W=[1.0, 1.0, 1.0, -1.0, 1.0],
                  s_W=[1.0, 1.0, 1.0, 1.0, 1.0], s_E=[1.0, 0.0, 1.0, 1.0, 1.0])
    rec["curves"]["g.E"]["steps"] = [0, 5, 7, 10, 25]
    rec["curves"]["s.W"] = {"steps": [0, 5, 7, 10, 12, 25], "values": [1.0] * 6}
    assert observe(drift(), rec) == (pytest.approx(2.5), True)


@pytest.mark.parametrize("late_steps", [[11, 19], [31, 40]])
def test_an_empty_window_leaves_the_seed_undefined(late_steps: list[int]) -> None:
    rec = drift_record([0, *late_steps], g_E=[1.0, 1.0, 1.0], g_W=[1.0, 1.0, 1.0],
                  s_W=[1.0, 1.0, 1.0], s_E=[1.0, 1.0, 1.0])
    assert observe(drift(), rec) is None


def test_a_quotient_past_the_float_range_is_skipped_not_raised() -> None:
    rec = drift_record([0, 20, 25], g_E=[1.0, 1e300, 1.0], g_W=[1.0, 1e-300, 1.0],
                  s_W=[1.0, 1.0, 1.0], s_E=[1.0, 1.0, 1.0])
    got = observe(drift(), rec)
    assert got == (pytest.approx(1.0), True)  # step 20 overflowed and was left out
    huge = drift_record([0, 20], g_E=[1e-300, 1e300], g_W=[1.0, 1.0], s_W=[1.0, 1.0],
                   s_E=[1.0, 1.0])
    assert observe(drift(), huge) is None  # r = 1e600 is not a float


@pytest.mark.parametrize(("over", "words"), [
    ({"late_start": 10}, "the late window must start after the early one ends"),
    ({"early_end": 0, "early_start": 5}, "each window's end must be >= its start"),
    ({"late_end": 19}, "each window's end must be >= its start"),
    ({"predicted_numerator": "g.E"}, "the four curves must be different"),
])
def test_bad_windows_and_curves_are_refused(over: dict, words: str) -> None:
    with pytest.raises(pydantic.ValidationError, match=words):
        drift(**over)


def test_tracking_drift_label_and_description_name_every_part() -> None:
    spec = drift()
    assert spec.curves() == ["g.E", "g.W", "s.W", "s.E"]
    assert spec.describe().startswith("fold drift max(r, 1/r) of x = (g.E / g.W) / (s.W / s.E), "
                                      "r = mean of x over steps [20, 30] / its mean over [0, 10]")


# ---------------------------------------------------------------- phase_is and the phases


def phase_run(fit: int | None, val: int | None, budget: int = 100_000,
         diverged: bool = False) -> dict[str, Any]:
    return {"curves": {}, "summary": {"train_step": fit, "val_step": val, "budget": budget,
                                      "diverged": diverged, "done": False,
                                      "stopped_step": budget}}


def phase_is(phase: str, lag: int = 1000) -> PhaseIs:
    return PhaseIs.model_validate({"name": "phase_is", "phase": phase, "lag": lag})


@pytest.mark.parametrize(("fit", "val", "want"), [
    (200, 500, "comprehension"),       # validation 300 steps behind
    (200, 1199, "comprehension"),      # 999 behind: under the lag
    (200, 1200, "grokking"),           # 1,000 behind: the lag itself is grokking
    (200, 40_000, "grokking"),
    (100, 100, "comprehension"),       # together
    (500, 300, "comprehension"),       # validation first
    (200, None, "memorization"),       # fitted, never generalised in the budget
    (None, None, "confusion"),
    (None, 3000, "confusion"),         # never fitted, whatever validation did
])
def test_each_phase_from_the_threshold_steps(fit, val, want) -> None:
    run = phase_run(fit, val)
    assert phase_of(run, 1000) == want
    got = {phase: observe(phase_is(phase), run) for phase in PHASES}
    assert got == {phase: (float(phase == want), True) for phase in PHASES}


def test_the_lag_is_declared_and_a_diverged_run_is_left_out() -> None:
    assert observe(phase_is("grokking", lag=100), phase_run(200, 500)) == (1.0, True)
    assert observe(phase_is("comprehension", lag=100), phase_run(200, 500)) == (0.0, True)
    diverged = {"result": phase_run(200, None, diverged=True)}
    assert seed_value(phase_is("grokking"), diverged) == DIVERGED
    spec = phase_is("memorization", lag=500)
    assert spec.kind == "value" and spec.curves() == []
    assert spec.describe() == Has("1 when the run is in the memorization phase",
                                  "paper 2's Table 1 (lag 500 steps", "else 0.")


@pytest.mark.parametrize("bad", [{"phase": "grokked"}, {"lag": 0}, {"lag": -5},
                                 {"threshold": 0.9}, {}])
def test_bad_phase_is_fields_are_refused(bad: dict[str, Any]) -> None:
    fields = {"name": "phase_is", "phase": "grokking", **bad}
    if not bad:
        del fields["phase"]
    with pytest.raises(pydantic.ValidationError):
        PhaseIs.model_validate(fields)


PHASE_CLAIM = """\
id: phase_tiny
title: Tiny phase claim
statement: test fixture.
source: {arxiv: "2205.10343", where: test fixture, role: inference, quote: test fixture}
base:
  task: {op: add, p: 7, modular: false, unordered: true, train_frac: 0.6, test_frac: null}
  model: {kind: toy_sum, hidden: 16, emb_dim: 1}
  optimizer: {name: adamw, lr: 0.01}
  training: {steps: 300, eval_interval: 50, train_threshold: 0.9, val_threshold: 0.9}
arms:
  toy: {}
scales:
  quick: {description: test scale}
seeds: 6
metric: {name: phase_is, phase: grokking, lag: 100}
criterion: {name: proportion, arm: toy, outcome: value_above, cut: 0.5, direction: greater,
            threshold: 0.1}
"""


def test_in_a_claim_every_seed_has_exactly_one_phase(tmp_path: Path) -> None:
    path = tmp_path / "claim.yaml"
    path.write_text(PHASE_CLAIM, encoding="utf-8")
    loaded = load_claim(path)
    records = train_seeds(loaded.resolved["quick"]["toy"], list(range(6)))
    for rec in records:
        values = [observe(phase_is(ph, 100), rec)[0] for ph in PHASES]  # type: ignore[index]
        assert sorted(values) == [0.0, 0.0, 0.0, 1.0]


def _reaches(**fields: Any) -> CurveReaches:
    return CurveReaches.model_validate({"name": "curve_reaches", "curve": "parallelogram.rqi",
                                        "level": 0.95, **fields})


def _record(values: list[float | None], budget: int = 100, done: bool = False,
            diverged: bool = False) -> dict[str, Any]:
    steps = [10 * k for k in range(len(values))]
    return {"curves": {"parallelogram.rqi": {"steps": steps, "values": values}},
            "summary": {"budget": budget, "done": done, "diverged": diverged,
                        "stopped_step": steps[-1]}}


def test_curve_reaches_the_first_step_at_or_past_the_level() -> None:
    assert observe(_reaches(), _record([0.1, 0.9, 0.95, 0.97])) == (20.0, True)  # equal counts
    assert observe(_reaches(), _record([0.1, 0.96, 0.9, 0.99])) == (10.0, True)  # the first
    assert observe(_reaches(), _record([0.97, 0.1])) == (0.0, True)
    below = _reaches(direction="below", level=0.2)
    assert observe(below, _record([0.9, 0.5, 0.2, 0.1])) == (20.0, True)


def test_curve_reaches_skips_null_and_nan_values() -> None:
    """A null (a non-finite value as the record stores it) or a NaN is no value: neither
    reaching the level nor ending the search."""
    assert observe(_reaches(), _record([0.1, None, math.nan, 0.99])) == (30.0, True)
    assert observe(_reaches(direction="below", level=0.5),
                   _record([None, math.nan, 0.9])) == (100.0, False)


def test_curve_reaches_is_censored_when_never_reached() -> None:
    """At the budget; at the last recorded step of a record early stopping froze (nothing was
    measured after it); a diverged seed at the budget, or left out under on_diverged
    exclude."""
    assert observe(_reaches(), _record([0.1, 0.5, 0.94], budget=500)) == (500.0, False)
    assert observe(_reaches(), _record([0.1, 0.5, 0.94], budget=500, done=True)) == (20.0, False)
    diverged = {"result": _record([0.1, 0.5], budget=500, diverged=True)}
    assert seed_value(_reaches(), diverged) == (500.0, False)
    assert seed_value(_reaches(on_diverged="exclude"), diverged) == DIVERGED
    assert seed_value(_reaches(), {"result": _record([0.1, 0.99], diverged=True)}) == (10.0, True)


@pytest.mark.parametrize("bad", [{"level": "0.9"}, {"level": True}, {"level": math.inf},
                                 {"direction": "up"}, {"curve": None}, {"threshold": 0.9}])
def test_bad_curve_reaches_fields_are_refused(bad: dict[str, Any]) -> None:
    with pytest.raises(pydantic.ValidationError):
        _reaches(**bad)


def _reached(**fields: Any) -> CurveReached:
    return CurveReached.model_validate({"name": "curve_reached", "curve": "parallelogram.rqi",
                                        "level": 0.95, **fields})


def test_curve_reached_is_one_when_the_level_is_reached_in_time() -> None:
    """1 at or past the level (equal counts) by the budget or by `by`; 0 when not; nulls and
    NaNs are no value; left out when early stopping froze the record before `by` unreached."""
    assert observe(_reached(), _record([0.1, 0.9, 0.95])) == (1.0, True)
    assert observe(_reached(), _record([0.1, None, math.nan, 0.94])) == (0.0, True)
    assert observe(_reached(by=10), _record([0.1, 0.5, 0.99])) == (0.0, True)  # too late
    assert observe(_reached(by=20), _record([0.1, 0.5, 0.99])) == (1.0, True)
    assert observe(_reached(direction="below", level=0.2), _record([0.9, 0.2])) == (1.0, True)
    assert observe(_reached(), _record([0.1, 0.5], budget=500, done=True)) is None
    assert observe(_reached(by=10), _record([0.1, 0.5], budget=500, done=True)) == (0.0, True)
    assert seed_value(_reached(), {"result": _record([0.1], diverged=True)}) == DIVERGED
    spec = _reached(by=300)
    assert spec.kind == "value" and spec.curves() == ["parallelogram.rqi"]
    assert spec.describe().startswith("1 when parallelogram.rqi is >= 0.95")
    assert Has("at a recorded step by step 300", "else 0") == spec.describe()


def test_final_difference_is_taken_at_the_last_step_both_curves_have() -> None:
    """Acc^ against the measured accuracy: the last step where both are recorded and finite."""
    rec = {"curves": {"parallelogram.acc_test": {"steps": [0, 10, 20, 30],
                                                 "values": [0.2, 0.9, 0.5, None]},
                      "val_acc": {"steps": [0, 10, 20, 30], "values": [0.1, 0.7, 0.4, 0.8]}},
           "summary": {"budget": 20, "done": False, "diverged": False, "stopped_step": 20}}
    spec = FinalDifference.model_validate({"name": "final_difference",
                                           "curve": "parallelogram.acc_test",
                                           "minus": "val_acc"})
    got = observe(spec, rec)
    assert got is not None and got[0] == pytest.approx(0.1) and got[1]
    flipped = spec.model_copy(update={"curve": "val_acc", "minus": "parallelogram.acc_test"})
    assert observe(flipped, rec)[0] == pytest.approx(-0.1)  # type: ignore[index]
    assert observe(flipped.model_copy(update={"absolute": True}), rec)[0] == pytest.approx(0.1)  # type: ignore[index]
    rec["curves"]["val_acc"]["values"] = [None, math.nan, math.nan, 0.8]
    assert observe(spec, rec) is None  # no step with both
    assert spec.curves() == ["parallelogram.acc_test", "val_acc"] and spec.kind == "value"
    with pytest.raises(pydantic.ValidationError, match="different curves"):
        FinalDifference.model_validate({"name": "final_difference", "curve": "val_acc",
                                        "minus": "val_acc"})


def test_curve_reaches_words() -> None:
    spec = _reaches()
    assert spec.kind == "time" and spec.on_diverged == "budget"
    assert spec.curves() == ["parallelogram.rqi"]
    assert spec.label() == ("curve_reaches(curve=parallelogram.rqi, level=0.95, "
                            "direction=above)")
    assert "parallelogram.rqi is first >= 0.95" in spec.describe()


def _drift(g_e: list[float], g_w: list[float], s_w: list[float], s_e: list[float]) -> Any:
    spec = TrackingDrift.model_validate({
        "name": "tracking_drift", "numerator": "g.E", "denominator": "g.W",
        "predicted_numerator": "s.W", "predicted_denominator": "s.E",
        "early_start": 0, "early_end": 10, "late_start": 20, "late_end": 30})
    steps = [0, 5, 10, 20, 30]
    rec = {"curves": {name: {"steps": steps, "values": values} for name, values in
                      (("g.E", g_e), ("g.W", g_w), ("s.W", s_w), ("s.E", s_e))}}
    return observe(spec, rec)


def test_a_step_whose_predicted_ratio_underflows_is_skipped_and_the_scan_goes_on() -> None:
    """Step 0: s.W/s.E = 1e-200/1e200 underflows to 0 (the quotient raises): skipped. Steps 5
    and 10 give x = 2 and 2 (early mean 2), steps 20 and 30 give 6 and 10 (late mean 8):
    drift 4."""
    got = _drift(g_e=[1.0, 2.0, 4.0, 6.0, 10.0], g_w=[1.0, 1.0, 2.0, 1.0, 1.0],
                 s_w=[1e-200, 1.0, 1.0, 1.0, 1.0], s_e=[1e200, 1.0, 1.0, 1.0, 1.0])
    assert got == (pytest.approx(4.0), True)


def test_a_ratio_that_underflows_to_zero_is_dropped_not_averaged_in() -> None:
    """Step 0: g.E/g.W = 1e-200/1e200 underflows to 0.0: dropped (x must be > 0). Early mean
    (x = 2 at 5 and 10) is 2, not 4/3; late mean 8: drift 4 (with the 0 it would be 6)."""
    got = _drift(g_e=[1e-200, 2.0, 4.0, 6.0, 10.0], g_w=[1e200, 1.0, 2.0, 1.0, 1.0],
                 s_w=[1.0] * 5, s_e=[1.0] * 5)
    assert got == (pytest.approx(4.0), True)
