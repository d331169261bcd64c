"""``equivalence``: TOST (two one-sided t tests) for "do not differ beyond a margin".

Two-arm form (``baseline``, ``treated``): the mean difference ``treated - baseline`` within
``[-margin, +margin]`` (``margin_kind: absolute``, metric units), or the ratio of geometric means
``treated / baseline`` within ``[1 - margin, 1 / (1 - margin)]`` (``relative``: the log scale,
symmetric, as the 80-125% bioequivalence rule for margin 0.2); p from statsmodels ``ttost_ind``
(``transform=np.log`` for relative).

One-arm form (``arm``, ``reference``, default 0): the arm's mean within
``[reference - margin, reference + margin]`` (absolute), or its geometric mean within
``[reference (1 - margin), reference / (1 - margin)]`` (relative; reference > 0); p from
statsmodels ``DescrStatsW.ttost_mean`` (on the logs for relative).

The CI is at level ``1 - 2 alpha`` (the TOST convention: the TOST rejects at alpha exactly when
this CI lies inside the margins); the verdict comes from that CI by
`grokverify.verdict.decide_interval`.
"""

from __future__ import annotations

import math
import warnings
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator
from statsmodels.stats.weightstats import CompareMeans, DescrStatsW, ttost_ind

from grokverify import verdict as verdict_rules
from grokverify.stats.base import ArmSample, Criterion, CriterionResult, Verdict
from grokverify.stats.common import (
    CensoredPolicy,
    Frame,
    censored_count,
    censoring_details,
    determined,
    expect_params,
    lower_bound_rule,
    refusal,
    require_arms,
    summarize,
    too_few_seeds,
)

NAME = "equivalence"


class EquivalenceParams(BaseModel):
    """Claim: two arms (or one arm and a reference value) do not differ beyond ``margin``.

    Give either ``baseline`` + ``treated`` (two-arm form) or ``arm`` (+ ``reference``, default 0;
    one-arm form). ``margin_kind: absolute`` (metric units) or ``relative`` (a fraction < 1, on
    the ratio scale ``[1 - margin, 1 / (1 - margin)]``, values must be > 0). CI at ``1 - 2
    alpha``. ``usevar``: Welch (``unequal``, default) or pooled variance, two-arm form only.
    ``censored``: ``refuse`` (default; censored values make "equal" unjudgeable) or
    ``as_budget`` under the lower-bound rule (the mean is never determined with censoring, so
    SUPPORTED is then always withheld).
    """

    model_config = ConfigDict(extra="forbid")

    name: Literal["equivalence"]
    baseline: str | None = None
    treated: str | None = None
    arm: str | None = None
    reference: float | None = None
    margin: float = Field(gt=0)
    margin_kind: Literal["absolute", "relative"] = "absolute"
    usevar: Literal["unequal", "pooled"] = "unequal"
    alpha: float = Field(0.05, gt=0, lt=0.5)
    censored: CensoredPolicy = "refuse"

    @model_validator(mode="after")
    def _one_form(self) -> EquivalenceParams:
        two = self.baseline is not None or self.treated is not None
        if two and self.arm is not None:
            raise ValueError("give either baseline + treated (two arms) or arm (+ reference), "
                             "not both")
        if two:
            if self.baseline is None or self.treated is None:
                raise ValueError("the two-arm form needs both baseline and treated")
            if self.baseline == self.treated:
                raise ValueError("baseline and treated must be different arms")
            if self.reference is not None:
                raise ValueError("reference applies to the one-arm form (arm:) only")
        elif self.arm is None:
            raise ValueError("give baseline + treated (two arms) or arm (+ reference)")
        elif self.reference is None:
            self.reference = 0.0
        if self.margin_kind == "relative":
            if self.margin >= 1:
                raise ValueError("a relative margin must be < 1 (ratio in [1-m, 1/(1-m)])")
            if self.arm is not None and not (self.reference or 0) > 0:
                raise ValueError("a relative margin needs reference > 0")
        return self

    @property
    def ci_level(self) -> float:
        return 1.0 - 2.0 * self.alpha

    @property
    def region(self) -> tuple[float, float]:
        m = self.margin
        centre = 0.0 if self.arm is None else float(self.reference or 0.0)
        if self.margin_kind == "absolute":
            return centre - m, centre + m
        scale = 1.0 if self.arm is None else centre
        return scale * (1 - m), scale / (1 - m)


def _label(p: EquivalenceParams) -> str:
    if p.arm is not None:
        return f"{'geometric ' if p.margin_kind == 'relative' else ''}mean of {p.arm}"
    if p.margin_kind == "relative":
        return f"ratio of geometric means ({p.treated} / {p.baseline})"
    return f"difference of means ({p.treated} - {p.baseline})"


def _stats(arm: ArmSample) -> dict[str, Any]:
    x = arm.times
    with np.errstate(all="ignore"):
        gmean = float(np.exp(np.mean(np.log(x)))) if arm.n and (x > 0).all() else math.nan
    return {"mean": float(np.mean(x)) if arm.n else math.nan, "geometric_mean": gmean,
            "sd": float(np.std(x, ddof=1)) if arm.n > 1 else math.nan,
            "censored_as_budget": censored_count(arm)}


def _tost(p: EquivalenceParams, data: list[ArmSample]) -> tuple[float, tuple[float, float], float]:
    """Estimate, (1 - 2 alpha) CI and TOST p, on the log scale for a relative margin."""
    rel = p.margin_kind == "relative"
    tr = np.log if rel else (lambda v: v)
    back = math.exp if rel else float
    low, upp = p.region
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        if len(data) == 1:
            d = DescrStatsW(tr(data[0].times))
            pval = d.ttost_mean(tr(low), tr(upp))[0]
            est, (lo, hi) = float(d.mean), d.tconfint_mean(alpha=2 * p.alpha)
        else:
            base, treat = data
            pval = ttost_ind(treat.times, base.times, low, upp, usevar=p.usevar,
                             transform=np.log if rel else None)[0]
            cm = CompareMeans(DescrStatsW(tr(treat.times)), DescrStatsW(tr(base.times)))
            est = float(np.mean(tr(treat.times)) - np.mean(tr(base.times)))
            lo, hi = cm.tconfint_diff(alpha=2 * p.alpha, usevar=p.usevar)
    return back(est), (back(float(lo)), back(float(hi))), float(pval)


def run_equivalence(params: BaseModel, arms: dict[str, ArmSample]) -> CriterionResult:
    """TOST: the (1 - 2 alpha) CI within the margins supports, wholly outside refutes."""
    p = expect_params(params, EquivalenceParams)
    data = require_arms(NAME, equivalence_arms(p), arms)
    low, upp = p.region
    fmt = verdict_rules.format_number
    test = ("TOST, one sample (statsmodels DescrStatsW.ttost_mean)" if p.arm is not None else
            f"TOST, two samples (statsmodels ttost_ind, usevar={p.usevar})")
    if p.margin_kind == "relative":
        test += ", on log values"
    frame = Frame(NAME, _label(p), test, p.margin,
                  f"{_label(p)} within [{fmt(low)}, {fmt(upp)}]", p.ci_level,
                  {**censoring_details(data, p.censored),
                   "ci_convention": f"{p.ci_level * 100:g}% CI = 1 - 2 alpha (TOST, alpha = "
                                    f"{p.alpha:g})",
                   "equivalence_region": [low, upp], "margin_kind": p.margin_kind})
    rows = [summarize(a, p.ci_level, _stats(a)) for a in data]
    if why := too_few_seeds(data, 2) or refusal(data, p.censored):
        return frame.inconclusive(why, rows)
    if p.margin_kind == "relative" and (bad := [a for a in data if (a.times <= 0).any()]):
        who = " and ".join(f"arm {a.name!r} has {int((a.times <= 0).sum())} value(s) <= 0"
                           for a in bad)
        return frame.inconclusive(f"{who}, and a relative margin compares logs", rows)
    estimate, ci, pval = _tost(p, data)
    verdict, reason = verdict_rules.decide_interval(ci, low, upp, estimate, frame.effect_label,
                                                    p.ci_level)
    at_risk = _at_risk(p, data, verdict, ci, low)
    verdict, reason, withheld = lower_bound_rule(verdict, reason, at_risk, "mean")
    return frame.result(estimate, ci, pval, verdict, reason, rows,
                        {"withheld_by_lower_bound_rule": withheld})


def _at_risk(p: EquivalenceParams, data: list[ArmSample], verdict: Verdict,
             ci: tuple[float, float], low: float) -> list[ArmSample]:
    """Arms whose censored values (pulling their mean down) could have produced `verdict`."""
    if verdict == Verdict.SUPPORTED:
        candidates = list(data)
    elif verdict == Verdict.REFUTED:
        below = ci[1] < low
        if len(data) == 1:
            candidates = list(data) if below else []
        else:  # effect = treated vs baseline: low treated pulls it below, low baseline above
            candidates = [data[1]] if below else [data[0]]
    else:
        candidates = []
    return [a for a in candidates if not determined(a.times, a.observed, "mean")]


def equivalence_arms(params: BaseModel) -> list[str]:
    """[baseline, treated] (two-arm form) or [arm] (one-arm form)."""
    p = expect_params(params, EquivalenceParams)
    if p.arm is not None:
        return [p.arm]
    return [str(p.baseline), str(p.treated)]


EQUIVALENCE = Criterion(NAME, EquivalenceParams, run_equivalence, equivalence_arms)
