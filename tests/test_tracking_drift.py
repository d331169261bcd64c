"""tracking_drift: how far a ratio of curves drifts from a predicted ratio between an early and a
late window, against values worked out by hand on small synthetic records."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from grokverify.claim.metrics import TrackingDrift
from grokverify.stats.metrics import observe

WINDOWS = {"early_start": 0, "early_end": 10, "late_start": 20, "late_end": 30}


def _spec(**over: object) -> TrackingDrift:
    return TrackingDrift.model_validate({
        "name": "tracking_drift", "numerator": "g.E", "denominator": "g.W",
        "predicted_numerator": "s.W", "predicted_denominator": "s.E", **WINDOWS, **over})


def _record(steps: list[int], **curves: list[float | None]) -> dict:
    return {"curves": {name.replace("_", "."): {"steps": steps, "values": values}
                       for name, values in curves.items()}}


def test_the_fold_drift_by_hand() -> None:
    """x = (g.E/g.W) / (s.W/s.E): steps 0 and 10 give x = 2 and 4 (early mean 3), steps 20 and 30
    give 0.2 and 0.4 (late mean 0.3): r = 0.1, drift 10; the same data reversed drifts 10 too."""
    rec = _record([0, 10, 20, 30], g_E=[2.0, 8.0, 1.0, 2.0], g_W=[1.0, 2.0, 5.0, 5.0],
                  s_W=[1.0, 1.0, 1.0, 2.0], s_E=[1.0, 1.0, 1.0, 2.0])
    assert observe(_spec(), rec) == (pytest.approx(10.0), True)
    flipped = _spec(early_start=20, early_end=30, late_start=31, late_end=40)
    rec_rev = _record([20, 30, 35, 40], g_E=[1.0, 2.0, 2.0, 8.0], g_W=[5.0, 5.0, 1.0, 2.0],
                      s_W=[1.0, 2.0, 1.0, 1.0], s_E=[1.0, 2.0, 1.0, 1.0])
    assert observe(flipped, rec_rev) == (pytest.approx(10.0), True)


def test_a_ratio_that_tracks_its_prediction_does_not_drift() -> None:
    """g.E/g.W = 3 · s.W/s.E at every step, however both move: drift exactly 1."""
    s_w, s_e = [1.0, 2.0, 4.0, 8.0], [1.0, 1.0, 2.0, 0.5]
    g_w = [1.0, 3.0, 0.5, 2.0]
    g_e = [3 * (w / e) * gw for w, e, gw in zip(s_w, s_e, g_w, strict=True)]
    rec = _record([0, 10, 20, 30], g_E=g_e, g_W=g_w, s_W=s_w, s_E=s_e)
    assert observe(_spec(), rec) == (pytest.approx(1.0), True)


def test_steps_without_all_four_positive_values_are_skipped() -> None:
    """Step 0: g.E missing (None); step 5: s.E = 0; step 10: g.W negative; step 12 is only in
    three curves: none count. Early = step 7 (x = 2), late = step 25 (x = 5): drift 2.5."""
    steps = [0, 5, 7, 10, 25]
    rec = _record(steps, g_E=[None, 1.0, 2.0, 1.0, 5.0], g_W=[1.0, 1.0, 1.0, -1.0, 1.0],
                  s_W=[1.0, 1.0, 1.0, 1.0, 1.0], s_E=[1.0, 0.0, 1.0, 1.0, 1.0])
    rec["curves"]["g.E"]["steps"] = [0, 5, 7, 10, 25]
    rec["curves"]["s.W"] = {"steps": [0, 5, 7, 10, 12, 25], "values": [1.0] * 6}
    assert observe(_spec(), rec) == (pytest.approx(2.5), True)


@pytest.mark.parametrize("late_steps", [[11, 19], [31, 40]])
def test_an_empty_window_leaves_the_seed_undefined(late_steps: list[int]) -> None:
    rec = _record([0, *late_steps], g_E=[1.0, 1.0, 1.0], g_W=[1.0, 1.0, 1.0],
                  s_W=[1.0, 1.0, 1.0], s_E=[1.0, 1.0, 1.0])
    assert observe(_spec(), rec) is None


def test_a_quotient_past_the_float_range_is_skipped_not_raised() -> None:
    rec = _record([0, 20, 25], g_E=[1.0, 1e300, 1.0], g_W=[1.0, 1e-300, 1.0],
                  s_W=[1.0, 1.0, 1.0], s_E=[1.0, 1.0, 1.0])
    got = observe(_spec(), rec)
    assert got == (pytest.approx(1.0), True)  # step 20 overflowed and was left out
    huge = _record([0, 20], g_E=[1e-300, 1e300], g_W=[1.0, 1.0], s_W=[1.0, 1.0],
                   s_E=[1.0, 1.0])
    assert observe(_spec(), huge) is None  # r = 1e600 is not a float


@pytest.mark.parametrize(("over", "words"), [
    ({"late_start": 10}, "the late window must start after the early one ends"),
    ({"early_end": 0, "early_start": 5}, "each window's end must be >= its start"),
    ({"late_end": 19}, "each window's end must be >= its start"),
    ({"predicted_numerator": "g.E"}, "the four curves must be different"),
])
def test_bad_windows_and_curves_are_refused(over: dict, words: str) -> None:
    with pytest.raises(ValidationError, match=words):
        _spec(**over)


def test_its_label_and_description_name_every_part() -> None:
    spec = _spec()
    assert spec.curves() == ["g.E", "g.W", "s.W", "s.E"]
    assert spec.describe().startswith("fold drift max(r, 1/r) of x = (g.E / g.W) / (s.W / s.E), "
                                      "r = mean of x over steps [20, 30] / its mean over [0, 10]")
