"""``proportion``: the share of an arm's seeds with an outcome, against a claimed share.

Outcomes: ``observed`` (the seed reached the threshold within its budget; a censored seed did
not), ``value_below`` (value <= cut) or ``value_above`` (value >= cut). A censored seed's true
value is *above* its censoring value c, so it counts as a failure of ``value_below`` when
c >= cut and as a success of ``value_above`` when c >= cut; when c < cut its outcome is unknown
and the seed is left out of the count (reported as ``undetermined``).

CI: Clopper-Pearson (``method: beta``, the default) or Wilson score (``method: wilson``) from
statsmodels ``proportion_confint``;
p: exact binomial test (scipy ``binomtest``) of the share against ``threshold`` in the claimed
direction. The verdict comes from the CI by `grokverify.verdict.decide`.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator
from scipy.stats import binomtest
from statsmodels.stats.proportion import proportion_confint

from grokverify import verdict as verdict_rules
from grokverify.stats.base import ArmSample, Criterion, CriterionResult
from grokverify.stats.common import Frame, expect_params, require_arms, summarize

NAME = "proportion"


class ProportionParams(BaseModel):
    """Claim: the share of ``arm``'s seeds with ``outcome`` is >= (``greater``) or <= (``less``)
    ``threshold``. ``cut`` is required for (and only for) ``value_below`` / ``value_above``;
    ``method``: ``beta`` (Clopper-Pearson, default: it never under-covers) or ``wilson``
    (Wilson score, shorter, but its coverage dips below nominal for some n and shares). The
    boundary belongs to the claimed region; ``greater`` with threshold 1 or ``less`` with 0
    could never be supported by a CI and are rejected."""

    model_config = ConfigDict(extra="forbid")

    name: Literal["proportion"]
    arm: str
    outcome: Literal["observed", "value_below", "value_above"] = "observed"
    cut: float | None = None
    method: Literal["wilson", "beta"] = "beta"
    direction: Literal["greater", "less"]
    threshold: float = Field(ge=0, le=1)
    ci_level: float = Field(0.95, gt=0, lt=1)

    @model_validator(mode="after")
    def _check(self) -> ProportionParams:
        if (self.outcome == "observed") != (self.cut is None):
            raise ValueError("cut is required for value_below/value_above and only for them")
        if self.cut is not None and not math.isfinite(self.cut):
            raise ValueError("cut must be a finite number")
        if (self.direction, self.threshold) in (("greater", 1.0), ("less", 0.0)):
            edge = "at or above 1" if self.threshold else "at or below 0"
            raise ValueError(f"a CI can never lie wholly {edge}: choose a threshold strictly "
                             "inside (0, 1)")
        return self


def outcomes(arm: ArmSample, p: ProportionParams) -> tuple[np.ndarray, np.ndarray]:
    """(success, determined) per seed; see the module docstring for censored seeds."""
    x, obs = arm.times, arm.observed
    if p.outcome == "observed":
        return obs.copy(), np.ones(arm.n, dtype=bool)
    cut = float(p.cut if p.cut is not None else math.nan)
    known = obs | (x >= cut)
    if p.outcome == "value_below":
        return obs & (x <= cut), known
    return (x >= cut), known


def _outcome_words(p: ProportionParams) -> str:
    if p.outcome == "observed":
        return "reached the threshold within the budget"
    fmt = verdict_rules.format_number(float(p.cut or 0.0))
    return f"value {'<=' if p.outcome == 'value_below' else '>='} {fmt}"


def run_proportion(params: BaseModel, arms: dict[str, ArmSample]) -> CriterionResult:
    """Share of seeds with the outcome, its Wilson/Clopper-Pearson CI and an exact binomial p."""
    p = expect_params(params, ProportionParams)
    (arm,) = require_arms(NAME, [p.arm], arms)
    success, known = outcomes(arm, p)
    k, n = int(success[known].sum()), int(known.sum())
    undetermined = int(arm.n - n)
    op = ">=" if p.direction == "greater" else "<="
    method_words = {"wilson": "Wilson score", "beta": "Clopper-Pearson"}[p.method]
    frame = Frame(NAME, f"share of {arm.name} seeds with {_outcome_words(p)}",
                  f"exact binomial test against {p.threshold:g} (scipy binomtest, "
                  f"alternative={p.direction})", p.threshold,
                  f"share {op} {verdict_rules.format_number(p.threshold)}", p.ci_level,
                  {"outcome": _outcome_words(p), "ci_method": f"{method_words} "
                   "(statsmodels proportion_confint)",
                   "censoring": _censoring_words(p), "undetermined_seeds": undetermined,
                   "successes": k, "counted_seeds": n})
    row_stats: dict[str, Any] = {"successes": k, "counted": n, "undetermined": undetermined,
                                 "share": k / n if n else math.nan}
    rows = [summarize(arm, p.ci_level, row_stats)]
    if n == 0:
        left = ", ".join(f"{a}: {b}" for a, b in arm.excluded.items()) or "none"
        return frame.inconclusive(f"arm {arm.name!r} has no seed whose outcome is known "
                                  f"({arm.n} usable, {undetermined} undetermined by censoring; "
                                  f"left out: {left})", rows)
    low, high = proportion_confint(k, n, alpha=1 - p.ci_level, method=p.method)
    ci = (float(low), float(high))
    pval = float(binomtest(k, n, p.threshold, alternative=p.direction).pvalue)
    verdict, reason = verdict_rules.decide(ci, p.threshold, p.direction, k / n, frame.effect_label,
                                           p.ci_level)
    reason = reason.removesuffix(".") + f", from {k} of {n} seeds."
    return frame.result(k / n, ci, pval, verdict, reason, rows)


def _censoring_words(p: ProportionParams) -> str:
    if p.outcome == "observed":
        return "a censored seed did not reach the threshold within its budget: a failure"
    return ("a censored seed's true value exceeds its censoring value c: it is decided when "
            "c >= cut (value_below: failure; value_above: success), else left out as "
            "undetermined and counted")


def proportion_arms(params: BaseModel) -> list[str]:
    """[arm]."""
    return [expect_params(params, ProportionParams).arm]


PROPORTION = Criterion(NAME, ProportionParams, run_proportion, proportion_arms)
