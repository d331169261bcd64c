"""Criteria on a per-seed scalar: ``scalar_compare`` (two arms, ratio or difference of a
statistic, BCa bootstrap CI) and ``value`` (one arm's statistic within a tolerance of a number).

Per-seed values are ``ArmSample.values``: for a time metric the step, or the budget when the
seed is censored; for a value metric a signed number. Censoring (time metrics) follows
``censored: as_budget | refuse`` and the lower-bound rule of `grokverify.stats.common`. A ratio
of statistics of a value metric is judged only when every value is > 0: with a value <= 0 a
statistic can be 0 or change sign and the ratio means nothing (INCONCLUSIVE, use a difference).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from pydantic import BaseModel
from scipy.stats import binom

from grokverify import verdict as verdict_rules
from grokverify.catalog.criteria import (
    ANY_KIND,
    CRITERION_SPECS,
    ScalarCompareParams,
    Statistic,
    ValueParams,
    expect_params,
)
from grokverify.stats.base import ArmSample, Criterion, CriterionResult, Verdict
from grokverify.stats.common import (
    STATISTIC_WORDS,
    STATISTICS,
    Frame,
    arm_row,
    bootstrap_ci,
    censored_column,
    censoring_details,
    determined,
    lower_bound_details,
    lower_bound_rule,
    refusal,
    require_arms,
    statistic_of,
    too_few_seeds,
)
from grokverify.stats.survival import median_effect

SCALAR = "scalar_compare"
VALUE = "value"


def _columns(arm: ArmSample, statistic: Statistic) -> dict[str, Any]:
    """seeds, the statistic, and for a time metric how many seeds entered at the budget and
    whether the statistic is determined despite them."""
    out: dict[str, Any] = {"seeds": arm.n, statistic: statistic_of(arm.values, statistic)}
    if arm.kind == "time":
        out.update(censored_column(arm))
        out["determined"] = "yes" if arm.n and determined(arm.values, arm.observed,
                                                          statistic) else "no"
    return out


def not_positive(arms: list[ArmSample]) -> str | None:
    """Why a ratio of a value metric's statistics means nothing here (a value <= 0), or None."""
    bad = [a for a in arms if a.kind == "value" and (a.values <= 0).any()]
    if not bad:
        return None
    who = " and ".join(f"arm {a.name!r} has {int((a.values <= 0).sum())} value(s) <= 0"
                       for a in bad)
    return (f"{who}, and a ratio of statistics of a signed value metric is meaningful only when "
            "every value is > 0 (use effect: difference)")


# ---------------------------------------------------------------- scalar_compare


def _scalar_label(p: ScalarCompareParams) -> str:
    op = "/" if p.effect == "ratio" else "-"
    return f"{p.effect} of {p.statistic}s ({p.treated} {op} {p.baseline})"


def _scalar_region(p: ScalarCompareParams) -> str:
    op = "<=" if p.direction == "less" else ">="
    return f"{p.effect} {op} {verdict_rules.format_number(p.threshold)}"


def run_scalar_compare(params: BaseModel, arms: dict[str, ArmSample]) -> CriterionResult:
    """Ratio/difference of a per-seed statistic between two arms; the BCa CI decides."""
    p = expect_params(params, ScalarCompareParams)
    base, treat = require_arms(SCALAR, [p.baseline, p.treated], arms, ANY_KIND)
    frame = Frame(SCALAR, _scalar_label(p), "BCa bootstrap CI of the effect (no test)",
                  p.threshold, _scalar_region(p), p.ci_level,
                  {**censoring_details((base, treat), p.censored),
                   "statistic": STATISTIC_WORDS[p.statistic]})
    rows = [arm_row(a, _columns(a, p.statistic)) for a in (base, treat)]
    ratio_undefined = not_positive([base, treat]) if p.effect == "ratio" else None
    if why := too_few_seeds((base, treat), 2) or refusal((base, treat), p.censored) \
            or ratio_undefined:
        return frame.inconclusive(why, rows)
    stat, effect = STATISTICS[p.statistic], p.effect

    def effect_of(b: np.ndarray, t: np.ndarray, axis: int = -1) -> Any:
        return median_effect(stat(b, axis=axis), stat(t, axis=axis), effect)

    estimate = float(effect_of(base.values, treat.values))
    ci, boot = bootstrap_ci((base.values, treat.values), effect_of, p.ci_level, p.n_boot,
                            p.bootstrap_seed, expand=p.statistic in ("mean", "iqm"))
    verdict, reason = verdict_rules.decide(ci, p.threshold, p.direction, estimate,
                                           frame.effect_label, p.ci_level)
    # A low value in treated pulls the effect down; in baseline, up.
    favours_less, favours_greater = treat, base
    pulls = {Verdict.SUPPORTED: favours_less if p.direction == "less" else favours_greater,
             Verdict.REFUTED: favours_greater if p.direction == "less" else favours_less}
    arm = pulls.get(verdict)
    at_risk = [arm] if arm is not None and not determined(arm.values, arm.observed,
                                                           p.statistic) else []
    verdict, reason, withheld = lower_bound_rule(verdict, reason, at_risk, p.statistic)
    return frame.result(estimate, ci, None, verdict, reason, rows,
                        {**boot, **lower_bound_details((base, treat), withheld)})


SCALAR_COMPARE = Criterion.of(CRITERION_SPECS[SCALAR], run_scalar_compare)


# ---------------------------------------------------------------- value


def run_value(params: BaseModel, arms: dict[str, ArmSample]) -> CriterionResult:
    """An arm's mean/median with its CI against [target - tol, target + tol]."""
    p = expect_params(params, ValueParams)
    (arm,) = require_arms(VALUE, [p.arm], arms, ANY_KIND)
    lower, upper = p.target - p.tol, p.target + p.tol
    fmt = verdict_rules.format_number
    test = ("bootstrap-t CI of the mean (no test)" if p.statistic == "mean"
            else "order-statistic (binomial) CI of the median (no test)")
    frame = Frame(VALUE, f"{p.statistic} of {arm.name}", test, p.target,
                  f"{p.statistic} within [{fmt(lower)}, {fmt(upper)}] ({fmt(p.target)} "
                  f"+/- {fmt(p.tol)})", p.ci_level, censoring_details([arm], p.censored))
    rows = [arm_row(arm, _columns(arm, p.statistic))]
    if why := too_few_seeds([arm], 2) or refusal([arm], p.censored):
        return frame.inconclusive(why, rows)
    x = arm.values
    estimate = statistic_of(x, p.statistic)
    details: dict[str, Any]
    if p.statistic == "mean":
        ci, details = mean_bootstrap_t_ci(x, p.ci_level, p.n_boot, p.bootstrap_seed)
    else:
        ci, details = median_order_ci(x, p.ci_level)
    verdict, reason = verdict_rules.decide_interval(ci, lower, upper, estimate,
                                                    frame.effect_label, p.ci_level)
    # Censored values pull the statistic down: a CI above the region stands regardless.
    needs_arm = verdict == Verdict.SUPPORTED or (verdict == Verdict.REFUTED and ci[1] < lower)
    at_risk = [arm] if needs_arm and not determined(x, arm.observed, p.statistic) else []
    verdict, reason, withheld = lower_bound_rule(verdict, reason, at_risk, p.statistic)
    return frame.result(estimate, ci, None, verdict, reason, rows,
                        {**details, "tolerance_region": [lower, upper],
                         **lower_bound_details([arm], withheld)})


def mean_bootstrap_t_ci(x: np.ndarray, ci_level: float, n_boot: int,
                        seed: int) -> tuple[tuple[float, float], dict[str, Any]]:
    """Bootstrap-t (studentized) CI of the mean: ``(m - q_hi s, m - q_lo s)`` with m the mean,
    s = sd / sqrt(n) (ddof 1), and q_lo, q_hi the alpha/2 and 1 - alpha/2 quantiles (inverted
    CDF) of ``t* = (m* - m) / s*`` over `n_boot` resamples drawn with
    ``np.random.default_rng(seed).integers(0, n, (n_boot, n))``. A resample with s* = 0 gives
    t* = +/-inf (or is dropped when m* = m too). Unlike the t interval it follows skewness."""
    x = np.asarray(x, dtype=float)
    n = x.size
    m, se = float(x.mean()), float(x.std(ddof=1) / math.sqrt(n))
    details: dict[str, Any] = {
        "ci_method": "bootstrap-t (studentized): mean - t*_(1-alpha/2) se, mean - t*_(alpha/2) se",
        "n_boot": int(n_boot), "bootstrap_seed": int(seed)}
    if se == 0:
        details["degenerate"] = "all values equal: the CI is the single value"
        return (m, m), details
    idx = np.random.default_rng(seed).integers(0, n, size=(n_boot, n))
    xb = x[idx]
    mb = xb.mean(axis=1)
    sb = xb.std(axis=1, ddof=1) / math.sqrt(n)
    with np.errstate(all="ignore"):
        t = (mb - m) / sb
    t = t[~np.isnan(t)]
    alpha = 1.0 - ci_level
    q_lo, q_hi = np.quantile(t, [alpha / 2, 1 - alpha / 2], method="inverted_cdf")
    details["n_dropped_resamples"] = int(n_boot - t.size)
    return (float(m - q_hi * se), float(m - q_lo * se)), details


def median_order_ci(x: np.ndarray, ci_level: float) -> tuple[tuple[float, float], dict[str, Any]]:
    """Distribution-free CI of the median from order statistics: ``[x_(k), x_(n+1-k)]`` (1-based,
    sorted) with the largest k such that ``P(Bin(n, 1/2) <= k - 1) <= alpha/2``; its coverage
    ``1 - 2 P(Bin(n, 1/2) <= k - 1)`` is at least the stated level for any continuous
    distribution. When even k = 1 is too narrow (few seeds for the level) the CI is unbounded,
    ``(-inf, inf)``."""
    xs = np.sort(np.asarray(x, dtype=float))
    n = xs.size
    alpha = 1.0 - ci_level
    k = int(binom.ppf(alpha / 2, n, 0.5))  # smallest k with cdf(k) >= alpha/2
    if binom.cdf(k, n, 0.5) <= alpha / 2:
        k += 1
    # now k is the largest integer with cdf(k - 1) <= alpha/2 (k = 0: none)
    if k >= 1:
        ci = (float(xs[k - 1]), float(xs[n - k]))
        achieved = float(1 - 2 * binom.cdf(k - 1, n, 0.5))
    else:
        ci, achieved = (-math.inf, math.inf), 1.0
    return ci, {"ci_method": "order statistics: [x_(k), x_(n+1-k)], k the largest with "
                             "P(Bin(n, 1/2) <= k-1) <= alpha/2 (exact, distribution-free)",
                "order_statistic_k": k, "achieved_level": achieved}


VALUE_CRITERION = Criterion.of(CRITERION_SPECS[VALUE], run_value)
