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
from typing import Any

import numpy as np
from pydantic import BaseModel
from statsmodels.stats.weightstats import CompareMeans, DescrStatsW, ttost_ind

from grokverify import verdict as verdict_rules
from grokverify.catalog.criteria import (
    ANY_KIND,
    CRITERION_SPECS,
    EquivalenceParams,
    equivalence_arms,
    expect_params,
)
from grokverify.stats.base import ArmSample, Criterion, CriterionResult, Verdict
from grokverify.stats.common import (
    Frame,
    arm_row,
    censored_column,
    censoring_details,
    determined,
    lower_bound_details,
    lower_bound_rule,
    refusal,
    require_arms,
    too_few_seeds,
)

NAME = "equivalence"


def _label(p: EquivalenceParams) -> str:
    if p.arm is not None:
        return f"{'geometric ' if p.margin_kind == 'relative' else ''}mean of {p.arm}"
    if p.margin_kind == "relative":
        return f"ratio of geometric means ({p.treated} / {p.baseline})"
    return f"difference of means ({p.treated} - {p.baseline})"


def _columns(arm: ArmSample, p: EquivalenceParams) -> dict[str, Any]:
    """seeds, mean (geometric for a relative margin: the scale it is judged on), sd, and for a
    time metric the seeds entered at the budget."""
    x = arm.values
    out: dict[str, Any] = {"seeds": arm.n}
    if p.margin_kind == "relative":
        with np.errstate(all="ignore"):
            positive = arm.n and (x > 0).all()
            out["geometric mean"] = float(np.exp(np.mean(np.log(x)))) if positive else math.nan
    else:
        out["mean"] = float(np.mean(x)) if arm.n else math.nan
    out["sd"] = float(np.std(x, ddof=1)) if arm.n > 1 else math.nan
    return {**out, **censored_column(arm)}


def _tost(p: EquivalenceParams, data: list[ArmSample]) -> tuple[float, tuple[float, float], float]:
    """Estimate, (1 - 2 alpha) CI and TOST p, on the log scale for a relative margin."""
    rel = p.margin_kind == "relative"
    tr = np.log if rel else (lambda v: v)
    back = math.exp if rel else float
    low, upp = p.region
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        if len(data) == 1:
            d = DescrStatsW(tr(data[0].values))
            pval = d.ttost_mean(tr(low), tr(upp))[0]
            est, (lo, hi) = float(d.mean), d.tconfint_mean(alpha=2 * p.alpha)
        else:
            base, treat = data
            pval = ttost_ind(treat.values, base.values, low, upp, usevar=p.usevar,
                             transform=np.log if rel else None)[0]
            cm = CompareMeans(DescrStatsW(tr(treat.values)), DescrStatsW(tr(base.values)))
            est = float(np.mean(tr(treat.values)) - np.mean(tr(base.values)))
            lo, hi = cm.tconfint_diff(alpha=2 * p.alpha, usevar=p.usevar)
    return back(est), (back(float(lo)), back(float(hi))), float(pval)


def run_equivalence(params: BaseModel, arms: dict[str, ArmSample]) -> CriterionResult:
    """TOST: the (1 - 2 alpha) CI within the margins supports, wholly outside refutes."""
    p = expect_params(params, EquivalenceParams)
    data = require_arms(NAME, equivalence_arms(p), arms, ANY_KIND)
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
    rows = [arm_row(a, _columns(a, p)) for a in data]
    if why := too_few_seeds(data, 2) or refusal(data, p.censored):
        return frame.inconclusive(why, rows)
    if p.margin_kind == "relative" and (bad := [a for a in data if (a.values <= 0).any()]):
        who = " and ".join(f"arm {a.name!r} has {int((a.values <= 0).sum())} value(s) <= 0"
                           for a in bad)
        return frame.inconclusive(f"{who}, and a relative margin compares logs", rows)
    estimate, ci, pval = _tost(p, data)
    verdict, reason = verdict_rules.decide_interval(ci, low, upp, estimate, frame.effect_label,
                                                    p.ci_level)
    at_risk = _at_risk(p, data, verdict, ci, low)
    verdict, reason, withheld = lower_bound_rule(verdict, reason, at_risk, "mean")
    return frame.result(estimate, ci, pval, verdict, reason, rows,
                        lower_bound_details(data, withheld))


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
    return [a for a in candidates if not determined(a.values, a.observed, "mean")]


EQUIVALENCE = Criterion.of(CRITERION_SPECS[NAME], run_equivalence)
