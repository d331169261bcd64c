"""``equivalence``: TOST (two one-sided t tests) for "do not differ beyond a margin", in a
two-arm (paired by seed by default) or a one-arm form, judged by its CI at level 1 - 2 alpha
(docs/verdicts.md, "`equivalence`")."""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
from pydantic import BaseModel
from scipy import stats as sps
from statsmodels.stats.weightstats import CompareMeans, DescrStatsW, ttost_ind

from grokverify.claim.criteria import (
    ANY_KIND,
    EquivalenceParams,
    expect_params,
)
from grokverify.stats import verdict as verdict_rules
from grokverify.stats.base import INTERVAL_FAILS, ArmSample, CriterionResult, Verdict
from grokverify.stats.common import (
    Frame,
    Pairing,
    arm_row,
    broken_pairs_words,
    censored_column,
    censoring_details,
    determined,
    lower_bound_details,
    lower_bound_rule,
    mean_bootstrap_t_ci,
    pair_arms,
    paired_effects,
    refusal,
    require_arms,
    restricted,
    restricted_words,
    too_few_seeds,
    with_analysis,
)

NAME = "equivalence"


def _label(p: EquivalenceParams, paired: bool = False) -> str:
    if p.arm is not None:
        return f"{'geometric ' if p.margin_kind == 'relative' else ''}mean of {p.arm}"
    if p.margin_kind == "relative":
        what = "geometric mean of per-seed ratios" if paired else "ratio of geometric means"
        return f"{what} ({p.treated} / {p.baseline})"
    what = "mean of per-seed differences" if paired else "difference of means"
    return f"{what} ({p.treated} - {p.baseline})"


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


Tost = tuple[float, tuple[float, float], float, dict[str, Any]]


def _tost(p: EquivalenceParams, data: list[ArmSample], pairing: Pairing | None,
          studentized: bool = False) -> Tost:
    """Estimate, (1 - 2 alpha) CI, TOST p and the one-sided p-values against the margins, on
    the log scale for a relative margin; one sample for the one-arm form and for paired arms
    (their per-seed differences), by bootstrap-t when `studentized`."""
    rel = p.margin_kind == "relative"
    tr = np.log if rel else (lambda v: v)
    back = math.exp if rel else float
    low, upp = p.region
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        if len(data) == 1 or pairing is not None:
            x = (tr(data[0].values) if pairing is None
                 else paired_effects(pairing, "ratio" if rel else "difference"))
            if studentized:
                return _tost_bootstrap_t(p, x, back, tr(low), tr(upp))
            d = DescrStatsW(x)
            pval = d.ttost_mean(tr(low), tr(upp))[0]
            est, (lo, hi) = float(d.mean), d.tconfint_mean(alpha=2 * p.alpha)
            se, df = float(d.std_mean), float(d.nobs - 1)
        else:
            base, treat = data
            pval = ttost_ind(treat.values, base.values, low, upp, usevar=p.usevar,
                             transform=np.log if rel else None)[0]
            cm = CompareMeans(DescrStatsW(tr(treat.values)), DescrStatsW(tr(base.values)))
            est = float(np.mean(tr(treat.values)) - np.mean(tr(base.values)))
            lo, hi = cm.tconfint_diff(alpha=2 * p.alpha, usevar=p.usevar)
            se, df = ((float(cm.std_meandiff_pooledvar), float(cm.d1.nobs + cm.d2.nobs - 2))
                      if p.usevar == "pooled" else
                      (float(cm.std_meandiff_separatevar), float(cm.dof_satt())))
        sides = _one_sided(est, se, df, tr(low), tr(upp))
    if not se > 0:  # statsmodels gives 0/0 = nan; the exact p is the one p(support) states
        pval = sides["p_support"]
    return back(est), (back(float(lo)), back(float(hi))), float(pval), sides


def _tost_bootstrap_t(p: EquivalenceParams, x: np.ndarray, back: Any, low: float,
                      upp: float) -> Tost:
    """The one-sample TOST read off a bootstrap-t CI of the mean (restricted times: the seeds
    at τ put an atom in the effects that skews them, and the t interval under-covers)."""
    ci, details = mean_bootstrap_t_ci(x, p.ci_level, p.n_boot, p.bootstrap_seed)
    sides = details.pop("sides")
    at_low, at_upp = sides(low), sides(upp)
    out = {"p_support": float(max(at_low.ge, at_upp.le)),
           "p_refute": float(min(at_low.lt, at_upp.gt)), **details}
    return back(float(np.mean(x))), (back(ci[0]), back(ci[1])), out["p_support"], out


def _one_sided(est: float, se: float, df: float, low: float, upp: float) -> dict[str, float]:
    """p_support (the TOST p: the larger of "above low" and "below upp") and p_refute (the
    smaller of "below low" and "above upp"), t with `df` degrees of freedom."""
    if not se > 0:  # all differences equal: the estimate is exact
        inside = low <= est <= upp
        return {"p_support": 0.0 if inside else 1.0, "p_refute": 1.0 if inside else 0.0}
    t_low, t_upp = (est - low) / se, (est - upp) / se
    return {"p_support": float(max(sps.t.sf(t_low, df), sps.t.cdf(t_upp, df))),
            "p_refute": float(min(sps.t.cdf(t_low, df), sps.t.sf(t_upp, df)))}


def run_equivalence(params: BaseModel, arms: dict[str, ArmSample]) -> CriterionResult:
    """TOST: the (1 - 2 alpha) CI within the margins supports, wholly outside refutes."""
    p = expect_params(params, EquivalenceParams)
    given = require_arms(NAME, p.arms(), arms, ANY_KIND)
    data = restricted(given, p.censored)
    low, upp = p.region
    fmt = verdict_rules.format_number
    pairing = pair_arms(data[0], data[1], p.paired) if len(data) == 2 else None
    paired = pairing is not None and pairing.paired
    if p.arm is not None:
        test = "TOST, one sample (statsmodels DescrStatsW.ttost_mean)"
    elif paired:
        test = "TOST, paired: one sample of per-seed differences (statsmodels ttost_mean)"
    else:
        test = f"TOST, two samples (statsmodels ttost_ind, usevar={p.usevar})"
    if p.margin_kind == "relative":
        test += ", on log values"
    # restricted times with seeds at τ: a bootstrap-t CI (docs/verdicts.md, "Censoring and
    # divergence"); the two-sample form keeps Welch's t, which holds its level there
    studentized = (p.censored == "restricted" and (paired or p.arm is not None)
                   and any(not a.observed.all() for a in given))
    if studentized:
        test += ", CI and p by bootstrap-t (some seeds at τ skew the values)"
    test += restricted_words(given, p.censored)
    frame = Frame(NAME, _label(p, paired), test if pairing is None else
                  with_analysis(test, pairing), p.margin,
                  f"{_label(p, paired)} within [{fmt(low)}, {fmt(upp)}]", p.ci_level,
                  {**censoring_details(given, p.censored),
                   "ci_convention": f"{p.ci_level * 100:g}% CI = 1 - 2 alpha (TOST, alpha = "
                                    f"{p.alpha:g})",
                   "equivalence_region": [low, upp], "margin_kind": p.margin_kind,
                   **(pairing.details() if pairing is not None else {})})
    rows = [arm_row(a, _columns(a, p)) for a in data]
    if why := too_few_seeds(data, 2) or refusal(data, p.censored):
        return frame.inconclusive(why, rows)
    if p.margin_kind == "relative" and (bad := [a for a in data if (a.values <= 0).any()]):
        who = " and ".join(f"arm {a.name!r} has {int((a.values <= 0).sum())} value(s) <= 0"
                           for a in bad)
        return frame.inconclusive(f"{who}, and a relative margin compares logs", rows)
    analysed = [pairing.base, pairing.treat] if paired and pairing is not None else data
    estimate, ci, pval, sides = _tost(p, analysed, pairing if paired else None,
                                      studentized)
    verdict, reason = verdict_rules.decide_interval(ci, low, upp, estimate, frame.effect_label,
                                                    p.ci_level)
    at_risk = _at_risk(p, analysed, verdict, ci, low)
    verdict, reason, withheld = lower_bound_rule(verdict, reason, at_risk, "mean")
    if verdict == Verdict.SUPPORTED and (heavy := _heavily_restricted(given, p)):
        verdict, withheld = Verdict.INCONCLUSIVE, heavy
        reason = (f"{reason.rstrip('.')}, which would support the claim, but "
                  f"{', '.join(heavy)} {'has' if len(heavy) == 1 else 'have'} more than "
                  f"{RESTRICTED_SUPPORT_SHARE:.0%} of seeds at τ, where SUPPORTED is not "
                  "calibrated to its level (docs/verdicts.md, \"Censoring and divergence\"), so "
                  "no verdict is drawn.")
    if pairing is not None:
        reason = reason.rstrip(".") + broken_pairs_words(pairing) + "."
    result = frame.result(estimate, ci, pval, verdict, reason, rows,
                          {**lower_bound_details(data, withheld), **sides,
                           **_no_spread(analysed, paired, estimate, ci)})
    # a side the lower-bound rule would withhold (a censored mean is never determined) has no
    # valid p-value
    censored = any(not a.observed.all() for a in analysed)
    result.p_support = None if censored else sides["p_support"]
    result.p_refute = None if censored else sides["p_refute"]
    result.p_value_label = "TOST p against the margins (the same as p(support))"
    return result


# Above this share of an arm's seeds at τ, `censored: restricted` withholds SUPPORTED: calibration
# (12-24 seeds, 17-81% at τ) gives false SUPPORTED 0.032-0.074 by t, 0.013-0.031 by bootstrap-t;
# at 3-9%, 0.000-0.023.
RESTRICTED_SUPPORT_SHARE = 0.10


def _heavily_restricted(arms: list[ArmSample], p: EquivalenceParams) -> list[str]:
    """The arms ("arm 't'") whose censored share withholds SUPPORTED under `restricted`."""
    if p.censored != "restricted":
        return []
    return [f"arm {a.name!r}" for a in arms
            if a.kind == "time" and a.n and (~a.observed).mean() > RESTRICTED_SUPPORT_SHARE]


def _no_spread(data: list[ArmSample], paired: bool, estimate: float,
               ci: tuple[float, float]) -> dict[str, str]:
    """The interval rule's words when the t interval has zero width (no spread in the values
    it rests on): a single value is no CI (docs/verdicts.md, "Intervals that do not hold")."""
    if ci[0] != ci[1]:
        return {}
    what = "per-seed effects" if paired else "values of each arm"
    return {INTERVAL_FAILS: f"all {data[0].n} {what} are equal (estimate "
                            f"{verdict_rules.format_number(estimate)}): a t interval has no "
                            "spread to estimate, and a single value is no CI"}


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


