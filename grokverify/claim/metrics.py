"""Metrics a claim can name: the per-seed quantity its criterion judges, as spec classes, each
registered with the function that computes it from a seed's record (`grokverify.stats.metrics`).
A metric is of one kind, fixed per class: a `time` to an event (censored at the budget) or a
signed `value` read off the curves (never censored); docs/verdicts.md, "Metrics and their kinds".
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field, model_validator

from grokverify.claim.base import Float, Int, StrictModel
from grokverify.claim.limits import MAX_STEPS
from grokverify.kinds import METRICS

Kind = Literal["time", "value"]
MAX_SMOOTH = 101  # the widest running median a fall metric may declare
KIND_WORDS: dict[str, str] = {
    "time": "a time to an event, censored at the budget",
    "value": "a signed per-seed value read off a curve, never censored",
}


class MetricSpec(StrictModel):
    """Base of every metric spec. `describe` words it for reports (with its parameters);
    `undefined` says why a seed may have no value (counted under that reason)."""

    kind: ClassVar[Kind]
    undefined: ClassVar[str] = "undefined"
    curve_keys: ClassVar[tuple[str, ...]] = ()  # the fields that name a record curve
    # a category's code, not a quantity: only criteria that read codes take it (and only it)
    codes: ClassVar[bool] = False
    reads_validation: ClassVar[bool] = False  # whether the value depends on τ_val being reached
    name: str
    on_diverged: str  # each kind narrows it to the rules that apply

    def curve_fields(self) -> dict[str, str]:
        """Field name -> the record curve it names (checked against the experiment at load)."""
        return {key: getattr(self, key) for key in self.curve_keys}

    def curves(self) -> list[str]:
        """The record curves this metric reads."""
        return list(self.curve_fields().values())

    def params(self) -> dict[str, object]:
        """The parameters beyond name and on_diverged: the curves first, then the rest in
        declaration order."""
        rest = {k: v for k, v in self.model_dump().items() if k not in ("name", "on_diverged")}
        return {**self.curve_fields(), **rest}

    def label(self) -> str:
        """A short unique name: the bare name for a metric without parameters."""
        params = self.params()
        if not params:
            return self.name
        return f"{self.name}(" + ", ".join(f"{k}={v}" for k, v in params.items()) + ")"

    def describe(self) -> str:
        return " ".join((type(self).__doc__ or "").split())


# ---------------------------------------------------------------- time metrics


class TimeMetric(MetricSpec):
    kind: ClassVar[Kind] = "time"
    on_diverged: Literal["budget", "exclude"] = Field(
        "budget", description="a diverged seed that had not reached the event: censored at the "
                              "budget (never reached), or left out; counted in the report "
                              "either way")


@METRICS.register("grokverify.stats.metrics:val_threshold_step")
class ValThresholdStep(TimeMetric):
    """Steps until validation accuracy first reaches τ_val; censored at the budget."""

    reads_validation: ClassVar[bool] = True
    name: Literal["val_threshold_step"]


@METRICS.register("grokverify.stats.metrics:train_threshold_step")
class TrainThresholdStep(TimeMetric):
    """Steps until training accuracy first reaches τ_train; censored at the budget."""

    name: Literal["train_threshold_step"]


@METRICS.register("grokverify.stats.metrics:grokking_lag")
class GrokkingLag(TimeMetric):
    """Steps from fitting (τ_train) to generalising (τ_val); censored at budget − fit step when
    validation never gets there; undefined when the training set is never fitted."""

    undefined: ClassVar[str] = "undefined (training set never fitted)"
    reads_validation: ClassVar[bool] = True
    name: Literal["grokking_lag"]


@METRICS.register("grokverify.stats.metrics:delay_ratio")
class DelayRatio(TimeMetric):
    """Step of τ_val over step of τ_train: how many times longer generalising takes than
    fitting (≈1 when they rise together); censored at budget / fit step when validation never
    gets there; undefined when the training set is never fitted."""

    undefined: ClassVar[str] = "undefined (training set never fitted)"
    reads_validation: ClassVar[bool] = True
    name: Literal["delay_ratio"]


@METRICS.register("grokverify.stats.metrics:curve_reaches")
class CurveReaches(TimeMetric):
    """Steps until a curve first reaches a level: the first recorded step at which its value is
    >= level (direction above) or <= level (below), null and non-finite values skipped;
    censored at the budget when it never does, and at the last recorded step of a record that
    early stopping froze before the budget (nothing was measured after it)."""

    curve_keys: ClassVar[tuple[str, ...]] = ("curve",)
    name: Literal["curve_reaches"]
    curve: str = Field(description="a curve the experiment records, e.g. parallelogram.rqi")
    level: Float = Field(description="the level the curve must reach (the step where it "
                                     "equals the level counts)")
    direction: Literal["above", "below"] = Field(
        "above", description="above: value >= level; below: value <= level")

    def describe(self) -> str:
        sign = ">=" if self.direction == "above" else "<="
        return (f"steps until {self.curve} is first {sign} {self.level:g} at a recorded step; "
                "censored at the budget when it never is (at the last recorded step of a record "
                "frozen by early stopping).")


SmoothWindow = Annotated[Int, Field(ge=1, le=MAX_SMOOTH, description=(
    "points in the centred running median the trace is smoothed with before its maximum is "
    "found (odd; 1 = no smoothing; the window is cut short at the trace's ends)"))]


class _FallTime(TimeMetric):
    """Shared by the metrics timed by where a probe trace starts to fall. A diverged seed is
    left out (its trace stops at the divergence)."""

    curve_keys: ClassVar[tuple[str, ...]] = ("curve",)
    on_diverged: Literal["exclude"] = Field(
        "exclude", description="a diverged seed is left out and counted (its trace stops at the "
                               "divergence)")
    curve: str = Field(description="a curve the experiment records, e.g. hessian_max.W")
    smooth: SmoothWindow

    @model_validator(mode="after")
    def _odd_window(self) -> _FallTime:
        if self.smooth % 2 == 0:
            raise ValueError(f"smooth must be an odd number of points (a centred window), got "
                             f"{self.smooth}")
        return self

    def _fall_words(self) -> str:
        smoothed = ("" if self.smooth == 1 else
                    f", smoothed by a centred running median of {self.smooth} probe points,")
        return (f"the last probe point at which {self.curve}{smoothed} equals its maximum over "
                f"the run (after it the trace stays below that maximum)")


@METRICS.register("grokverify.stats.metrics:fall_onset")
class FallOnset(_FallTime):
    """The step at which a curve starts to fall: the last recorded point at which the curve,
    smoothed by a centred running median of `smooth` points, attains its maximum over the run;
    censored at the curve's last recorded step (the budget for a seed trained to it) when that
    point is the last one (the trace never falls); undefined when the curve has no value."""

    undefined: ClassVar[str] = "undefined (the curve has no value)"
    name: Literal["fall_onset"]

    def describe(self) -> str:
        return (f"the step where {self.curve} starts to fall: {self._fall_words()}; censored at "
                "its last recorded step when the maximum is there (it never falls).")


@METRICS.register("grokverify.stats.metrics:fall_onset_ratio")
class FallOnsetRatio(_FallTime):
    """When a curve starts to fall relative to when an accuracy reaches its threshold, in the
    same seed: (step of `fall_onset`) / (step of `against`: train_threshold_step or
    val_threshold_step; a threshold at step 0 counts as step 1). 1: at the same step; 2: the
    fall comes twice as late. Censored at (the curve's last recorded step) / (threshold step)
    when the curve never falls; undefined when the accuracy never reaches its threshold or the
    curve has no value."""

    undefined: ClassVar[str] = "undefined (the threshold never reached, or the curve has no value)"
    name: Literal["fall_onset_ratio"]
    against: Literal["train_threshold_step", "val_threshold_step"] = Field(
        description="the time of the accuracy event: train_threshold_step (τ_train) or "
                    "val_threshold_step (τ_val)")

    def describe(self) -> str:
        event = ("training accuracy first reaches τ_train" if self.against ==
                 "train_threshold_step" else "validation accuracy first reaches τ_val")
        return (f"(step where {self.curve} starts to fall) / (step where {event}), per seed; the "
                f"fall is {self._fall_words()}; censored when the maximum is at the last "
                "recorded step (it never falls); seeds that never reach the threshold are left "
                "out.")


@METRICS.register("grokverify.stats.metrics:reaches_ratio")
class ReachesRatio(TimeMetric):
    """When a curve first reaches a level relative to when an accuracy reaches its threshold,
    in the same seed: (step of `curve_reaches`) / (step of `against`: train_threshold_step or
    val_threshold_step; a threshold at step 0 counts as step 1). 1: at the same step; 0.5: at
    half the threshold's step (before it); 2: twice as late. Censored at (the curve's last
    recorded step) / (threshold step) when the curve never reaches the level; undefined when
    the accuracy never reaches its threshold. A diverged seed is left out (its curve stops at
    the divergence)."""

    undefined: ClassVar[str] = "undefined (the threshold never reached)"
    curve_keys: ClassVar[tuple[str, ...]] = ("curve",)
    name: Literal["reaches_ratio"]
    on_diverged: Literal["exclude"] = Field(
        "exclude", description="a diverged seed is left out and counted (its curve stops at the "
                               "divergence)")
    curve: str = Field(description="a curve the experiment records, e.g. pca.circular")
    level: Float = Field(description="the level the curve must reach (equal counts)")
    direction: Literal["above", "below"] = Field(
        "above", description="above: value >= level; below: value <= level")
    against: Literal["train_threshold_step", "val_threshold_step"] = Field(
        description="the time of the accuracy event: train_threshold_step (τ_train) or "
                    "val_threshold_step (τ_val)")

    def describe(self) -> str:
        sign = ">=" if self.direction == "above" else "<="
        event = ("training accuracy first reaches τ_train" if self.against ==
                 "train_threshold_step" else "validation accuracy first reaches τ_val")
        return (f"(first recorded step where {self.curve} {sign} {self.level:g}) / (step where "
                f"{event}), per seed; censored at (last recorded step) / (threshold step) when "
                "the curve never gets there; seeds that never reach the threshold are left "
                "out.")


# ---------------------------------------------------------------- value metrics


class ValueMetric(MetricSpec):
    kind: ClassVar[Kind] = "value"
    on_diverged: Literal["exclude"] = Field(
        "exclude", description="a diverged seed is left out and counted (a value metric is "
                               "never censored)")


class _Window(ValueMetric):
    start: Int = Field(ge=0, le=MAX_STEPS, description="first step of the window (included)")
    end: Int = Field(ge=0, le=MAX_STEPS, description="last step of the window (included)")

    @model_validator(mode="after")
    def _ordered(self) -> _Window:
        if self.end < self.start:
            raise ValueError(f"end ({self.end}) must be >= start ({self.start})")
        return self


@METRICS.register("grokverify.stats.metrics:curve_at")
class CurveAt(ValueMetric):
    """A curve's value at the last step it was recorded at or before `step`; undefined when it
    has no recorded step there or its value there is null."""

    undefined: ClassVar[str] = "undefined (no value recorded at or before the step)"
    curve_keys: ClassVar[tuple[str, ...]] = ("curve",)
    name: Literal["curve_at"]
    curve: str = Field(description="a curve the experiment records, e.g. val_acc")
    step: Int = Field(ge=0, le=MAX_STEPS, description="training step")

    def describe(self) -> str:
        return (f"{self.curve} at step {self.step} (its last recorded value at or before it); "
                "seeds without one are left out.")


@METRICS.register("grokverify.stats.metrics:curve_reached")
class CurveReached(ValueMetric):
    """1 when a curve reaches a level at a recorded step <= `by` (default: the budget), else 0:
    an arm's mean is the share of its seeds that got there in time (paper 2's empirical
    threshold: whether RQI reaches 0.95 within the budget, against the training fraction, for
    `crossing`). Undefined for a record frozen by early stopping before `by` without having
    reached it (whether it would have is unknown)."""

    undefined: ClassVar[str] = "undefined (stopped early, before the step, without reaching it)"
    curve_keys: ClassVar[tuple[str, ...]] = ("curve",)
    name: Literal["curve_reached"]
    curve: str = Field(description="a curve the experiment records, e.g. parallelogram.rqi")
    level: Float = Field(description="the level the curve must reach (equal counts)")
    direction: Literal["above", "below"] = Field(
        "above", description="above: value >= level; below: value <= level")
    by: Int | None = Field(None, ge=0, le=MAX_STEPS,
                           description="the last step that counts (default: the budget)")

    def describe(self) -> str:
        sign = ">=" if self.direction == "above" else "<="
        when = "within the budget" if self.by is None else f"by step {self.by}"
        return (f"1 when {self.curve} is {sign} {self.level:g} at a recorded step {when}, else "
                "0; seeds stopped early before that without reaching it are left out.")


PHASES = ("comprehension", "grokking", "memorization", "confusion")


@METRICS.register("grokverify.stats.metrics:phase_is")
class PhaseIs(ValueMetric):
    """1 when a run falls in `phase` by paper 2's Table 1 (arXiv 2205.10343, §4), else 0, read
    off the run's own threshold steps (training.train_threshold and val_threshold, reached at
    an evaluation) and its budget: comprehension, both reached with validation at most `lag`
    steps behind training (less than `lag`); grokking, both reached with a longer lag;
    memorization, the training set fitted and validation not within the budget; confusion,
    the training set not fitted (whatever validation did). An arm's mean is the share of its
    seeds in that phase: one cell of a phase diagram."""

    reads_validation: ClassVar[bool] = True
    name: Literal["phase_is"]
    phase: Literal["comprehension", "grokking", "memorization", "confusion"] = Field(
        description="the phase whose indicator this is")
    lag: Int = Field(1000, ge=1, le=MAX_STEPS, description=(
        "steps by which validation may lag training and still be comprehension (Table 1: "
        "1,000)"))

    def describe(self) -> str:
        return (f"1 when the run is in the {self.phase} phase of paper 2's Table 1 (lag "
                f"{self.lag} steps between the training and validation thresholds), else 0.")


@METRICS.register("grokverify.stats.metrics:phase")
class Phase(ValueMetric):
    """The run's phase by paper 2's Table 1 (the rules of `phase_is`) as a code: its index in
    PHASES (0 comprehension, 1 grokking, 2 memorization, 3 confusion), for criteria that read
    phases (phase_order); an arm's mean of codes means nothing."""

    codes: ClassVar[bool] = True
    reads_validation: ClassVar[bool] = True
    name: Literal["phase"]
    lag: Int = Field(1000, ge=1, le=MAX_STEPS, description=(
        "steps by which validation may lag training and still be comprehension (Table 1: "
        "1,000)"))

    def describe(self) -> str:
        return (f"the run's phase of paper 2's Table 1 (lag {self.lag} steps between the "
                f"training and validation thresholds) as a code: "
                + ", ".join(f"{i} {name}" for i, name in enumerate(PHASES)) + ".")


@METRICS.register("grokverify.stats.metrics:curve_mean")
class CurveMean(_Window):
    """Mean of a curve's non-null values at its recorded steps in [start, end]; undefined when
    it has none there."""

    undefined: ClassVar[str] = "undefined (no value recorded in the window)"
    curve_keys: ClassVar[tuple[str, ...]] = ("curve",)
    name: Literal["curve_mean"]
    curve: str = Field(description="a curve the experiment records")

    def describe(self) -> str:
        return (f"mean of {self.curve} over its recorded steps in [{self.start}, {self.end}]; "
                "seeds without a value there are left out.")


@METRICS.register("grokverify.stats.metrics:curve_ratio")
class CurveRatio(_Window):
    """Mean of `numerator` over [start, end] divided by the mean of `denominator` over the same
    window (each over its own recorded steps); undefined when either mean is undefined or the
    denominator's is 0."""

    undefined: ClassVar[str] = "undefined (no value in the window, or a zero denominator)"
    curve_keys: ClassVar[tuple[str, ...]] = ("numerator", "denominator")
    name: Literal["curve_ratio"]
    numerator: str = Field(description="a curve the experiment records")
    denominator: str = Field(description="a curve the experiment records")

    @model_validator(mode="after")
    def _two_curves(self) -> CurveRatio:
        if self.numerator == self.denominator:
            raise ValueError("numerator and denominator must be different curves (the ratio "
                             "of a curve to itself is 1)")
        return self

    def describe(self) -> str:
        return (f"mean of {self.numerator} over its recorded steps in [{self.start}, "
                f"{self.end}] divided by the mean of {self.denominator} there; seeds where "
                "either is missing or the denominator's mean is 0 are left out.")


@METRICS.register("grokverify.stats.metrics:final_value")
class FinalValue(ValueMetric):
    """A curve's last non-null value; undefined when it has none."""

    undefined: ClassVar[str] = "undefined (the curve has no value)"
    curve_keys: ClassVar[tuple[str, ...]] = ("curve",)
    name: Literal["final_value"]
    curve: str = Field(description="a curve the experiment records")

    def describe(self) -> str:
        return (f"last recorded value of {self.curve} (a seed stopped early keeps its last "
                "value); seeds without one are left out.")


@METRICS.register("grokverify.stats.metrics:final_difference")
class FinalDifference(ValueMetric):
    """`curve` minus `minus` at the last step where both have a value (|difference| with
    `absolute`): e.g. paper 2's predicted test accuracy Acc^ against the measured one at the end
    of training. Undefined when no step has both."""

    undefined: ClassVar[str] = "undefined (no step where both curves have a value)"
    curve_keys: ClassVar[tuple[str, ...]] = ("curve", "minus")
    name: Literal["final_difference"]
    curve: str = Field(description="a curve the experiment records, e.g. parallelogram.acc_test")
    minus: str = Field(description="the curve subtracted, e.g. val_acc")
    absolute: bool = Field(False, description="the difference's absolute value")

    @model_validator(mode="after")
    def _two_curves(self) -> FinalDifference:
        if self.curve == self.minus:
            raise ValueError("curve and minus must be different curves (the difference of a "
                             "curve and itself is 0)")
        return self

    def describe(self) -> str:
        what = (f"|{self.curve} - {self.minus}|" if self.absolute
                else f"{self.curve} - {self.minus}")
        return (f"{what} at the last step where both have a value; seeds without one are left "
                "out.")


@METRICS.register("grokverify.stats.metrics:tracking_drift")
class TrackingDrift(ValueMetric):
    """How far a ratio of two curves drifts from tracking a predicted ratio of two others over
    training: x(t) = (numerator / denominator) / (predicted_numerator / predicted_denominator)
    at each step where all four are recorded, finite and > 0; r = mean of x over the late
    window / mean of x over the early window; the value is the fold drift max(r, 1/r) >= 1
    (1: x kept its level, the ratio tracked the prediction up to a constant; 10: it moved an
    order of magnitude, either way). Undefined when a window has no such step."""

    undefined: ClassVar[str] = "undefined (no step with all four curves > 0 in a window)"
    curve_keys: ClassVar[tuple[str, ...]] = ("numerator", "denominator", "predicted_numerator",
                                             "predicted_denominator")
    name: Literal["tracking_drift"]
    numerator: str = Field(description="a curve the experiment records, e.g. grad_norm.E")
    denominator: str = Field(description="a curve the experiment records, e.g. grad_norm.W")
    predicted_numerator: str = Field(description="e.g. sigma_max.W")
    predicted_denominator: str = Field(description="e.g. sigma_max.E")
    early_start: Int = Field(ge=0, le=MAX_STEPS, description="early window's first step")
    early_end: Int = Field(ge=0, le=MAX_STEPS, description="early window's last step")
    late_start: Int = Field(ge=0, le=MAX_STEPS, description="late window's first step")
    late_end: Int = Field(ge=0, le=MAX_STEPS, description="late window's last step")

    @model_validator(mode="after")
    def _windows(self) -> TrackingDrift:
        if self.early_end < self.early_start or self.late_end < self.late_start:
            raise ValueError("each window's end must be >= its start")
        if self.late_start <= self.early_end:
            raise ValueError(f"the late window must start after the early one ends "
                             f"(late_start {self.late_start} <= early_end {self.early_end})")
        if len(set(self.curves())) != 4:
            raise ValueError("the four curves must be different")
        return self

    def describe(self) -> str:
        return (f"fold drift max(r, 1/r) of x = ({self.numerator} / {self.denominator}) / "
                f"({self.predicted_numerator} / {self.predicted_denominator}), r = mean of x "
                f"over steps [{self.late_start}, {self.late_end}] / its mean over "
                f"[{self.early_start}, {self.early_end}]; seeds without a value in a window are "
                "left out.")


def names_of_kind(kind: str) -> list[str]:
    return [name for name, cls in METRICS.specs.items() if cls.kind == kind]
