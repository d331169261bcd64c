"""fall_onset and fall_onset_ratio: the step at which a probe trace starts to fall (the last
point at which its centred running median of `smooth` points equals its maximum over the run),
alone and over the step an accuracy reaches its threshold in the same seed.

Hand-made traces with the answer worked out by hand; the running median is checked against
pandas' centred rolling median with the window cut short at the ends (min_periods=1).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pydantic
import pytest

from grokverify.claim.metrics import FallOnset, FallOnsetRatio
from grokverify.kinds import METRICS
from grokverify.stats.arms import seed_value
from grokverify.stats.metrics import observe, running_median

STEPS = [0, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000]


def record(values: list[float | None], steps: list[int] | None = None, train_step: int | None
           = 150, val_step: int | None = 600, diverged: bool = False) -> dict[str, Any]:
    steps = STEPS[:len(values)] if steps is None else steps
    return {"curves": {"lam.W": {"steps": steps, "values": values}},
            "summary": {"train_step": train_step, "val_step": val_step, "budget": 1000,
                        "diverged": diverged}}


def onset(smooth: int = 1) -> FallOnset:
    return FallOnset.model_validate({"name": "fall_onset", "curve": "lam.W", "smooth": smooth})


def ratio(against: str, smooth: int = 1) -> FallOnsetRatio:
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
def test_hand_made_traces(values: list[float | None], expected: tuple[float, bool]) -> None:
    assert observe(onset(), record(values)) == expected


def test_a_trace_without_values_is_undefined() -> None:
    assert observe(onset(), record([None, None])) is None
    assert seed_value(onset(), {"result": record([None, None])}) == onset().undefined


def test_censored_at_the_last_recorded_step_not_beyond() -> None:
    """A trace that stops early (early stop) and is still at its maximum is censored where it
    stops: it is only known not to have fallen by then."""
    assert observe(onset(), record([1.0, 2.0, 3.0], steps=[0, 500, 700])) == (700.0, False)


TRACE = [1, 2, 3, 4, 5, 4, 3, 2, 9, 1, 0]  # a rise-and-fall with a one-point spike at step 800


def test_a_noisy_spike_is_removed_by_the_running_median() -> None:
    """Unsmoothed, the spike is the maximum (step 800). The running median of 3 by hand:
    [1.5, 2, 3, 4, 4, 4, 3, 3, 2, 1, 0.5]: the spike is gone, the maximum 4 spans steps
    300-500, and the trace starts to fall after the last of them, 500."""
    assert observe(onset(1), record(TRACE)) == (800.0, True)
    assert running_median([float(v) for v in TRACE], 3) == [1.5, 2, 3, 4, 4, 4, 3, 3, 2, 1, 0.5]
    assert observe(onset(3), record(TRACE)) == (500.0, True)


@pytest.mark.parametrize("k", [1, 3, 5, 7])
def test_running_median_matches_pandas(k: int) -> None:
    x = np.random.default_rng(k).normal(size=23).tolist()
    reference = pd.Series(x).rolling(k, center=True, min_periods=1).median().tolist()
    assert running_median(x, k) == pytest.approx(reference, rel=0, abs=1e-15)


@pytest.mark.parametrize(("against", "expected"), [
    ("train_threshold_step", (200 / 150, True)),   # falls at 200, fitted at 150
    ("val_threshold_step", (200 / 600, True)),     # generalised at 600
])
def test_the_ratio_to_the_threshold_step(against: str, expected: tuple[float, bool]) -> None:
    got = observe(ratio(against), record([1, 3, 5, 4, 2, 1]))
    assert got is not None and got[0] == pytest.approx(expected[0]) and got[1] == expected[1]


def test_the_ratio_is_censored_with_the_fall_and_undefined_without_the_threshold() -> None:
    assert observe(ratio("val_threshold_step"), record([1, 2, 3, 4, 5])) == (400 / 600, False)
    assert observe(ratio("val_threshold_step"), record([1, 3, 2], val_step=None)) is None
    assert observe(ratio("train_threshold_step"), record([1, 3, 2], train_step=0)) == \
        (100.0, True)  # a threshold at step 0 counts as step 1


def test_a_diverged_seed_is_left_out() -> None:
    spec = onset()
    assert spec.on_diverged == "exclude"
    got = seed_value(spec, {"result": record([1, 3, 2], diverged=True)})
    assert got == "diverged"


@pytest.mark.parametrize("bad", [
    {"name": "fall_onset", "curve": "lam.W"},                        # smooth must be declared
    {"name": "fall_onset", "curve": "lam.W", "smooth": 2},           # even window
    {"name": "fall_onset", "curve": "lam.W", "smooth": 0},
    {"name": "fall_onset", "curve": "lam.W", "smooth": 1, "on_diverged": "budget"},
    {"name": "fall_onset_ratio", "curve": "lam.W", "smooth": 1},     # against missing
    {"name": "fall_onset_ratio", "curve": "lam.W", "smooth": 1, "against": "grokking_lag"},
])
def test_bad_specs_are_refused(bad: dict[str, Any]) -> None:
    with pytest.raises(pydantic.ValidationError):
        METRICS.specs[bad["name"]].model_validate(bad)


def test_even_window_message_says_why() -> None:
    with pytest.raises(pydantic.ValidationError, match="odd number of points"):
        onset(4)


def test_labels_and_descriptions_name_the_parts() -> None:
    spec = ratio("train_threshold_step", 3)
    assert spec.kind == "time" and spec.curves() == ["lam.W"]
    assert spec.label() == ("fall_onset_ratio(curve=lam.W, smooth=3, "
                            "against=train_threshold_step)")
    words = spec.describe()
    assert "lam.W" in words and "running median of 3" in words and "τ_train" in words
    assert "running median" not in onset(1).describe()
