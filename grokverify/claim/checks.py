"""Validity checks a claim declares: measurements of its own records that show the test could
test (the regime held, the manipulation happened, the measurement resolves the event). A check
that fails makes the verdict NOT TESTED (docs/verdicts.md, "NOT TESTED and validity checks")."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from grokverify.claim.base import Float, Name, StrictModel
from grokverify.kinds import CHECKS
from grokverify.numbers import format_number

Event = Literal["fit", "generalise"]
EVENT_WORDS = {"fit": "train accuracy reaches τ_train", "generalise":
               "validation accuracy reaches τ_val"}
EVENT_FIELD = {"fit": "train_step", "generalise": "val_step"}


class CheckSpec(StrictModel):
    """The fields every check shares: the arm it reads, the bounds its measured value must lie
    in, and why the test needs it (printed beside the value)."""

    arm: Name | None = Field(None, description="the arm checked; null: every arm")
    at_least: Float | None = Field(None, description="the measured value must be >= this")
    at_most: Float | None = Field(None, description="the measured value must be <= this")
    why: str = Field("", description="what the check guards, in the claim's terms")

    @model_validator(mode="after")
    def _bounded(self) -> CheckSpec:
        if self.at_least is None and self.at_most is None:
            raise ValueError("a check needs at_least, at_most or both")
        if None not in (self.at_least, self.at_most) and self.at_least > self.at_most:  # type: ignore[operator]
            raise ValueError(f"at_least ({self.at_least}) exceeds at_most ({self.at_most})")
        return self

    def describe(self) -> str:
        """What is measured, e.g. "share of seeds whose validation accuracy reaches τ_val"."""
        raise NotImplementedError

    def needed(self) -> str:
        """The bounds in words: "≥ 0.5", "≤ 0.1", "in [0.9, 1.1]"."""
        if self.at_least is not None and self.at_most is not None:
            return f"in [{format_number(self.at_least)}, {format_number(self.at_most)}]"
        if self.at_least is not None:
            return f"≥ {format_number(self.at_least)}"
        return f"≤ {format_number(self.at_most)}"

    def passes(self, value: float) -> bool:
        """Whether a measured value meets the bounds (NaN never does)."""
        if value != value:
            return False
        return ((self.at_least is None or value >= self.at_least)
                and (self.at_most is None or value <= self.at_most))

    def cannot_measure(self, experiment: Any) -> str | None:
        """Why this check cannot measure an arm's experiment, refused at load (None: it can)."""
        return None

    @classmethod
    def applies(cls, claim: Any, experiments: list[Any]) -> str | None:
        """Why this kind of check applies to a claim that does not declare it (None: it does
        not), for `validate` to say."""
        return None


class _CurveCheckSpec(CheckSpec):
    """A check that reads one recorded curve: every arm it checks must record it."""

    curve: str = Field(min_length=1, description="the curve read; every checked arm records it")

    def cannot_measure(self, experiment: Any) -> str | None:
        curves = experiment.curves()
        if self.curve in curves:
            return None
        return (f"check {self.kind} reads curve {self.curve!r}, which the experiment does not "  # type: ignore[attr-defined]
                f"record; it records: {', '.join(curves)}")


@CHECKS.register("grokverify.stats.checks:event_share")
class EventShareSpec(CheckSpec):
    """The share of an arm's seeds that reach an event within the budget: the baseline
    generalises, the slow arm fits (the regime the claim is about holds)."""

    kind: Literal["event_share"]
    event: Event = Field("generalise", description="fit: train accuracy reaches τ_train; "
                                                    "generalise: validation accuracy reaches τ_val")

    def describe(self) -> str:
        return f"share of seeds whose {EVENT_WORDS[self.event]} within the budget"

    @classmethod
    def applies(cls, claim: Any, experiments: list[Any]) -> str | None:
        if claim.metric.kind == "time":
            return "the metric is a time to an event: a baseline should reach it in the budget"
        return None


@CHECKS.register("grokverify.stats.checks:value_within")
class ValueWithinSpec(_CurveCheckSpec):
    """The median over an arm's seeds of a curve's first or last recorded value: a matched
    σmax ratio at step 0, a probe that starts well below its maximum."""

    kind: Literal["value_within"]
    at: Literal["first", "last"] = Field("first", description="the curve's first (step 0) or "
                                                              "last recorded value")

    def describe(self) -> str:
        return f"median over seeds of {self.curve} at its {self.at} recorded step"

    @classmethod
    def applies(cls, claim: Any, experiments: list[Any]) -> str | None:
        if claim.metric.kind == "value" and claim.metric.curve_fields():
            return "the metric reads a curve: its starting value should leave room to move"
        return None


@CHECKS.register("grokverify.stats.checks:probe_resolution")
class ProbeResolutionSpec(_CurveCheckSpec):
    """A probe's interval as a share of the median step of the event it times: a probe
    measured every 500 steps cannot order events 100 steps apart."""

    kind: Literal["probe_resolution"]
    event: Event = Field("generalise", description="the event the probe's timing is set against")

    def describe(self) -> str:
        return (f"{self.curve}'s interval / the median step at which {EVENT_WORDS[self.event]}")

    @classmethod
    def applies(cls, claim: Any, experiments: list[Any]) -> str | None:
        if claim.metric.kind == "time" and claim.metric.curve_fields():
            return "the metric times a probe curve: its interval should resolve the event"
        return None


class _PairSplitCheckSpec(CheckSpec):
    """A check that reads each seed's split of a pair task (its datasets are rebuilt from the
    seed): an image task has no operand pairs to read."""

    def cannot_measure(self, experiment: Any) -> str | None:
        if getattr(type(experiment.task), "inputs", None) != "pairs":
            return (f"check {self.kind} reads a pair task's split, and this task gives "  # type: ignore[attr-defined]
                    "images")
        return None


@CHECKS.register("grokverify.stats.checks:rare_value_coverage")
class RareValueCoverageSpec(_PairSplitCheckSpec):
    """Of the rarest values of operand a (the `rarest` share of values, fewest training pairs
    first), the share of their pairs that are in training, median over seeds: a skewed split
    that starves nothing leaves this near the training fraction."""

    kind: Literal["rare_value_coverage"]
    rarest: Float = Field(0.1, gt=0, le=1, description="the share of a's values counted as rare")

    def describe(self) -> str:
        return (f"training share of the pairs of the rarest {format_number(self.rarest * 100)}% "
                f"of a's values (median over seeds)")

    @classmethod
    def applies(cls, claim: Any, experiments: list[Any]) -> str | None:
        if any(getattr(e.task, "split", None) == "skewed" for e in experiments):
            return "an arm draws a skewed split: its rare values should be starved"
        return None

    def cannot_measure(self, experiment: Any) -> str | None:
        if why := super().cannot_measure(experiment):
            return why
        if experiment.task.unordered:
            return ("check rare_value_coverage counts the pairs of each value of a, which an "
                    "unordered task (a <= b) makes rare by construction")
        return None


@CHECKS.register("grokverify.stats.checks:reachable_split")
class ReachableSplitSpec(_PairSplitCheckSpec):
    """The share of an arm's seeds whose split lets validation accuracy reach τ_val: a held-out
    pair whose label no training pair shows cannot be learnt, so a split that holds out every
    pair of some labels caps validation below τ_val whatever the training does."""

    kind: Literal["reachable_split"]

    def describe(self) -> str:
        return ("share of seeds whose split lets validation accuracy reach τ_val (the held-out "
                "pairs whose label training shows)")

    @classmethod
    def applies(cls, claim: Any, experiments: list[Any]) -> str | None:
        if claim.metric.reads_validation and any(getattr(e.task, "unordered", False)
                                                 for e in experiments):
            return ("an unordered task has labels with one or two pairs: a split can hold all of "
                    "them out and cap validation accuracy")
        return None


@CHECKS.register("grokverify.stats.checks:init_sigma_ratio")
class InitSigmaRatioSpec(CheckSpec):
    """σmax(E)/σmax(W) at step 0, after the interventions that act at initialisation, median
    over an arm's seeds (rebuilt from the seeds): a σmax-matched arm must start at 1, the arm
    it is compared with far from it, or the matching changed nothing."""

    kind: Literal["init_sigma_ratio"]

    def describe(self) -> str:
        return "σmax(E)/σmax(W) at step 0 (median over seeds)"

    def cannot_measure(self, experiment: Any) -> str | None:
        roles = type(experiment.model).roles
        if "E" in roles and "W" in roles:
            return None
        return (f"check init_sigma_ratio reads the embedding E and the weights W, and model "
                f"{experiment.model.kind!r} has: {', '.join(roles) or 'neither'}")

    @classmethod
    def applies(cls, claim: Any, experiments: list[Any]) -> str | None:
        if any(getattr(iv, "sigma_max", None) is not None for e in experiments
               for iv in e.interventions):
            return "an arm rescales E to a σmax: its starting ratio σmax(E)/σmax(W) shows it did"
        return None


def undeclared(claim: Any, experiments: list[Any]) -> dict[str, str]:
    """Built-in check kinds that apply to a claim and that it does not declare: name -> why."""
    declared = {c.kind for c in claim.checks}
    return {name: why for name, spec in CHECKS.items()
            if name not in declared and (why := spec.applies(claim, experiments))}
