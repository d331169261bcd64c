"""Per-seed metrics: a registered function turns one seed's result (its named curves and
summary) and the metric's spec into an observation (value, observed), or None when the seed has
no defined value. The kinds and their rules are docs/verdicts.md's "Metrics and their kinds";
the spec classes are `grokverify.claim.metrics`.
"""

from __future__ import annotations

import math
from typing import Any

from grokverify.claim.metrics import (
    PHASES,
    CurveAt,
    CurveMean,
    CurveRatio,
    CurveReached,
    CurveReaches,
    FallOnset,
    FallOnsetRatio,
    FinalDifference,
    FinalValue,
    MetricSpec,
    Phase,
    PhaseIs,
    ReachesRatio,
    TrackingDrift,
)
from grokverify.kinds import METRICS

Observation = tuple[float, bool]


# ---------------------------------------------------------------- time metrics


def _step_or_censored(step: int | None, budget: int) -> Observation:
    return (float(step), True) if step is not None else (float(budget), False)


def val_threshold_step(result: dict[str, Any], spec: MetricSpec) -> Observation | None:
    """Steps until validation accuracy first reaches τ_val."""
    s = result["summary"]
    return _step_or_censored(s["val_step"], s["budget"])


def train_threshold_step(result: dict[str, Any], spec: MetricSpec) -> Observation | None:
    """Steps until training accuracy first reaches τ_train."""
    s = result["summary"]
    return _step_or_censored(s["train_step"], s["budget"])


def grokking_lag(result: dict[str, Any], spec: MetricSpec) -> Observation | None:
    """Steps from fitting to generalising; censored at budget − fit step."""
    s = result["summary"]
    if s["train_step"] is None:
        return None
    if s["val_step"] is None:
        return float(s["budget"] - s["train_step"]), False
    return float(max(s["val_step"] - s["train_step"], 0)), True


def delay_ratio(result: dict[str, Any], spec: MetricSpec) -> Observation | None:
    """Step of τ_val over step of τ_train (a fit at step 0 counts as step 1); censored at
    budget / fit step."""
    s = result["summary"]
    if s["train_step"] is None:
        return None
    fit = max(s["train_step"], 1)
    if s["val_step"] is None:
        return s["budget"] / fit, False
    return max(s["val_step"], fit) / fit, True


def curve_reaches(result: dict[str, Any], spec: CurveReaches) -> Observation | None:
    """The first recorded step whose (non-null) value is at or past the level; censored at the
    budget, or at the last recorded step of a record frozen by early stopping (a diverged seed
    stays censored at the budget: its `on_diverged` rule decides)."""
    for step, v in _points(result, spec.curve):
        if _at_level(v, spec):
            return float(step), True
    s = result["summary"]
    return float(s["stopped_step"] if _frozen(s) else s["budget"]), False


def _at_level(v: float | None, spec: CurveReaches | CurveReached | ReachesRatio) -> bool:
    """A (non-null) value at or past the spec's level in its direction (equal counts)."""
    return v is not None and (v >= spec.level if spec.direction == "above" else v <= spec.level)


def _frozen(summary: dict[str, Any]) -> bool:
    """Early stopping froze the record at `stopped_step` (nothing was measured after it)."""
    return bool(summary.get("done")) and not summary["diverged"]


# ---------------------------------------------------------------- fall of a probe trace


def running_median(values: list[float], k: int) -> list[float]:
    """Centred running median of k (odd) points, the window cut short at the ends (the median
    of the points within k // 2 on either side that exist; an even count takes the mean of the
    middle two). k = 1 returns the values."""
    h = k // 2
    out = []
    for i in range(len(values)):
        window = sorted(values[max(0, i - h):i + h + 1])
        n = len(window)
        out.append(window[n // 2] if n % 2 else (window[n // 2 - 1] + window[n // 2]) / 2)
    return out


def fall_step(points: list[tuple[int, float | None]], k: int) -> Observation | None:
    """(step, observed) where a trace starts to fall: the *last* point at which its running
    median of k points (over its non-null values) equals its maximum, since a plateau at the top
    is not yet a fall; censored when that is the last point; None for a trace without values."""
    kept = [(step, v) for step, v in points if v is not None]
    if not kept:
        return None
    smooth = running_median([v for _, v in kept], k)
    top = max(smooth)
    last = max(i for i, v in enumerate(smooth) if v == top)
    step = float(kept[last][0])
    return step, last < len(kept) - 1


def fall_onset(result: dict[str, Any], spec: FallOnset) -> Observation | None:
    """The step at which the curve starts to fall (`fall_step`)."""
    return fall_step(_points(result, spec.curve), spec.smooth)


def fall_onset_ratio(result: dict[str, Any], spec: FallOnsetRatio) -> Observation | None:
    """Fall step / threshold step (at least 1), censored with the fall; None when the threshold
    is never reached or the curve has no value."""
    event = result["summary"]["train_step" if spec.against == "train_threshold_step"
                                else "val_step"]
    fall = fall_step(_points(result, spec.curve), spec.smooth)
    if event is None or fall is None:
        return None
    return fall[0] / max(int(event), 1), fall[1]


def reaches_ratio(result: dict[str, Any], spec: ReachesRatio) -> Observation | None:
    """Reach step / threshold step (at least 1), censored at the curve's last recorded step
    when it never reaches the level; None when the threshold is never reached or the curve has
    no recorded step."""
    event = result["summary"]["train_step" if spec.against == "train_threshold_step"
                                else "val_step"]
    points = _points(result, spec.curve)
    if event is None or not points:
        return None
    denominator = max(int(event), 1)
    for step, v in points:
        if _at_level(v, spec):
            return step / denominator, True
    return points[-1][0] / denominator, False


# ---------------------------------------------------------------- value metrics


def _points(result: dict[str, Any], name: str) -> list[tuple[int, float | None]]:
    """(step, value or None) of a curve; a curve the record lacks is a wiring error, since the
    claim's curves are checked against the experiment when it is loaded."""
    curves = result["curves"]
    if name not in curves:
        raise KeyError(f"the record has no curve {name!r}; it has {sorted(curves)}")
    curve = curves[name]
    return [(int(step), _number(v)) for step, v in zip(curve["steps"], curve["values"],
                                                       strict=True)]


def _number(v: Any) -> float | None:
    if v is None:
        return None
    x = float(v)
    return x if math.isfinite(x) else None


def _window_mean(result: dict[str, Any], name: str, start: int, end: int) -> float | None:
    values = [v for step, v in _points(result, name) if start <= step <= end and v is not None]
    if not values:
        return None
    try:
        return math.fsum(values) / len(values)
    except OverflowError:  # finite values whose sum exceeds the float range (a diverging curve)
        return math.fsum(v / len(values) for v in values)


def curve_at(result: dict[str, Any], spec: CurveAt) -> Observation | None:
    """The curve's value at its last recorded step <= `step`."""
    before = [v for step, v in _points(result, spec.curve) if step <= spec.step]
    if not before or before[-1] is None:
        return None
    return before[-1], True


def curve_reached(result: dict[str, Any], spec: CurveReached) -> Observation | None:
    """1.0 when the curve reaches the level at a recorded step <= `by` (the budget), else 0.0;
    None when the record was frozen by early stopping before `by` without reaching it."""
    s = result["summary"]
    by = s["budget"] if spec.by is None else spec.by
    for step, v in _points(result, spec.curve):
        if step > by:
            break
        if _at_level(v, spec):
            return 1.0, True
    return None if _frozen(s) and s["stopped_step"] < by else (0.0, True)


def phase_of(result: dict[str, Any], lag: int) -> str:
    """Table 1's phase of one run (`PhaseIs`) from its threshold steps."""
    s = result["summary"]
    fit, val = s["train_step"], s["val_step"]
    if fit is None:
        return "confusion"
    if val is None:
        return "memorization"
    return "comprehension" if val - fit < lag else "grokking"


def phase_is(result: dict[str, Any], spec: PhaseIs) -> Observation | None:
    """1.0 when the run's Table 1 phase is `phase`, else 0.0."""
    return float(phase_of(result, spec.lag) == spec.phase), True


def phase(result: dict[str, Any], spec: Phase) -> Observation | None:
    """The run's Table 1 phase as its index in PHASES."""
    return float(PHASES.index(phase_of(result, spec.lag))), True


def curve_mean(result: dict[str, Any], spec: CurveMean) -> Observation | None:
    """Mean of the curve's non-null values at its recorded steps in [start, end]."""
    mean = _window_mean(result, spec.curve, spec.start, spec.end)
    return None if mean is None else (mean, True)


def curve_ratio(result: dict[str, Any], spec: CurveRatio) -> Observation | None:
    """Window mean of the numerator over the window mean of the denominator."""
    num = _window_mean(result, spec.numerator, spec.start, spec.end)
    den = _window_mean(result, spec.denominator, spec.start, spec.end)
    if num is None or den is None or den == 0:
        return None
    try:
        ratio = num / den
    except OverflowError:  # Python floats raise where the quotient exceeds the float range
        return None
    return (ratio, True) if math.isfinite(ratio) else None


def final_value(result: dict[str, Any], spec: FinalValue) -> Observation | None:
    """The curve's last non-null value."""
    values = [v for _, v in _points(result, spec.curve) if v is not None]
    return (values[-1], True) if values else None


def final_difference(result: dict[str, Any], spec: FinalDifference) -> Observation | None:
    """curve − minus (or its absolute value) at the last step where both have a value."""
    minus = {step: v for step, v in _points(result, spec.minus) if v is not None}
    both = [(step, v) for step, v in _points(result, spec.curve)
            if v is not None and step in minus]
    if not both:
        return None
    step, v = both[-1]
    diff = v - minus[step]
    return (abs(diff) if spec.absolute else diff), True


def tracking_drift(result: dict[str, Any], spec: TrackingDrift) -> Observation | None:
    """Fold drift of x = (num / den) / (pred_num / pred_den) between two windows."""
    names = spec.curves()
    by_step = [dict(_points(result, name)) for name in names]
    xs: dict[int, float] = {}
    for step in sorted(set.intersection(*(set(c) for c in by_step))):
        n, d, pn, pd = (c[step] for c in by_step)
        if None in (n, d, pn, pd) or min(n, d, pn, pd) <= 0:  # type: ignore[type-var]
            continue
        try:  # Python floats raise where a quotient exceeds the float range
            x = (n / d) / (pn / pd)  # type: ignore[operator]
        except (OverflowError, ZeroDivisionError):
            continue
        if math.isfinite(x) and x > 0:
            xs[step] = x
    early = [x for step, x in xs.items() if spec.early_start <= step <= spec.early_end]
    late = [x for step, x in xs.items() if spec.late_start <= step <= spec.late_end]
    if not early or not late:
        return None
    try:
        r = (math.fsum(late) / len(late)) / (math.fsum(early) / len(early))
        drift = max(r, 1 / r)
    except (OverflowError, ZeroDivisionError):
        return None
    return (drift, True) if math.isfinite(drift) else None




def observe(spec: MetricSpec, result: dict[str, Any]) -> Observation | None:
    """The metric `spec` of one seed's result (the record's ``result``)."""
    return METRICS.of(spec)(result, spec)
