"""Criteria on a per-seed scalar: ``scalar_compare`` (two arms, ratio or difference of a
statistic, BCa bootstrap CI) and ``value`` (one arm's statistic within a tolerance of a number).

Per-seed values are ``ArmSample.times`` (for a time metric: the step, or the budget when the seed
is censored). Censoring follows ``censored: as_budget | refuse`` and the lower-bound rule of
`grokverify.stats.common`.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator
from scipy.stats import binom

from grokverify import verdict as verdict_rules
from grokverify.specbase import Int
from grokverify.stats.base import ArmSample, Criterion, CriterionResult, Verdict
from grokverify.stats.common import (
    STATISTIC_WORDS,
    STATISTICS,
    CensoredPolicy,
    Frame,
    Statistic,
    bootstrap_ci,
    censored_count,
    censoring_details,
    determined,
    expect_params,
    lower_bound_rule,
    refusal,
    require_arms,
    statistic_of,
    summarize,
    too_few_seeds,
)
from grokverify.stats.survival import (
    Effect,
    check_two_arm_effect,
    effect_threshold,
    median_effect,
)

SCALAR = "scalar_compare"
VALUE = "value"
DEFAULT_MIN_EFFECT = 0.2  # relative, for ratios


def _arm_stats(arm: ArmSample, statistic: Statistic) -> dict[str, Any]:
    value = statistic_of(arm.times, statistic) if arm.n else math.nan
    return {statistic: value, "censored_as_budget": censored_count(arm),
            "determined_despite_censoring": bool(arm.n) and determined(arm.times, arm.observed,
                                                                       statistic)}


# ---------------------------------------------------------------- scalar_compare


class ScalarCompareParams(BaseModel):
    """Claim: a statistic (mean | median | iqm) of a per-seed scalar is lower (``less``) or
    higher (``greater``) in treated than in baseline, by at least ``min_effect``.

    ``effect: ratio`` compares ``stat(treated) / stat(baseline)`` with ``1 -/+ min_effect``
    (default min_effect 0.2, i.e. 20%); ``effect: difference`` compares
    ``stat(treated) - stat(baseline)`` with ``-/+ min_effect`` in the metric's units (no default:
    it must be stated). The boundary belongs to the claimed region. CI: BCa bootstrap
    (scipy.stats.bootstrap, ``n_boot`` resamples, seeded by ``bootstrap_seed``), percentile when
    BCa is degenerate; for the mean and the IQM run at Hesterberg's expanded level (see
    `grokverify.stats.common.expanded_level`) so that it keeps its coverage with few seeds.
    ``censored``: ``as_budget`` (default) enters censored values at the budget
    under the lower-bound rule; ``refuse`` gives INCONCLUSIVE when any value is censored.
    """

    model_config = ConfigDict(extra="forbid")

    name: Literal["scalar_compare"]
    baseline: str
    treated: str
    statistic: Statistic = "median"
    effect: Effect = "ratio"
    direction: Literal["less", "greater"]
    min_effect: float | None = Field(None, ge=0)
    ci_level: float = Field(0.95, gt=0, lt=1)
    n_boot: Int = Field(2000, ge=100)
    bootstrap_seed: Int = 0
    censored: CensoredPolicy = "as_budget"

    @model_validator(mode="after")
    def _check(self) -> ScalarCompareParams:
        if self.min_effect is None:
            if self.effect == "difference":
                raise ValueError("effect 'difference' needs min_effect in the metric's units")
            self.min_effect = DEFAULT_MIN_EFFECT
        check_two_arm_effect(self.baseline, self.treated, self.effect, self.direction,
                             self.min_effect)
        return self

    @property
    def threshold(self) -> float:
        return effect_threshold(self.effect, self.direction, float(self.min_effect or 0.0))


def _scalar_label(p: ScalarCompareParams) -> str:
    op = "/" if p.effect == "ratio" else "-"
    return f"{p.effect} of {p.statistic}s ({p.treated} {op} {p.baseline})"


def _scalar_region(p: ScalarCompareParams) -> str:
    op = "<=" if p.direction == "less" else ">="
    return f"{p.effect} {op} {verdict_rules.format_number(p.threshold)}"


def run_scalar_compare(params: BaseModel, arms: dict[str, ArmSample]) -> CriterionResult:
    """Ratio/difference of a per-seed statistic between two arms; the BCa CI decides."""
    p = expect_params(params, ScalarCompareParams)
    base, treat = require_arms(SCALAR, scalar_arms(p), arms)
    frame = Frame(SCALAR, _scalar_label(p), "BCa bootstrap CI of the effect (no test)",
                  p.threshold, _scalar_region(p), p.ci_level,
                  {**censoring_details((base, treat), p.censored),
                   "statistic": STATISTIC_WORDS[p.statistic]})
    rows = [summarize(a, p.ci_level, _arm_stats(a, p.statistic)) for a in (base, treat)]
    if why := too_few_seeds((base, treat), 2) or refusal((base, treat), p.censored):
        return frame.inconclusive(why, rows)
    stat, effect = STATISTICS[p.statistic], p.effect

    def effect_of(b: np.ndarray, t: np.ndarray, axis: int = -1) -> Any:
        return median_effect(stat(b, axis=axis), stat(t, axis=axis), effect)

    estimate = float(effect_of(base.times, treat.times))
    ci, boot = bootstrap_ci((base.times, treat.times), effect_of, p.ci_level, p.n_boot,
                            p.bootstrap_seed, expand=p.statistic in ("mean", "iqm"))
    verdict, reason = verdict_rules.decide(ci, p.threshold, p.direction, estimate,
                                           frame.effect_label, p.ci_level)
    # A low value in treated pulls the effect down; in baseline, up.
    favours_less, favours_greater = treat, base
    pulls = {Verdict.SUPPORTED: favours_less if p.direction == "less" else favours_greater,
             Verdict.REFUTED: favours_greater if p.direction == "less" else favours_less}
    arm = pulls.get(verdict)
    at_risk = [arm] if arm is not None and not determined(arm.times, arm.observed,
                                                           p.statistic) else []
    verdict, reason, withheld = lower_bound_rule(verdict, reason, at_risk, p.statistic)
    return frame.result(estimate, ci, None, verdict, reason, rows,
                        {**boot, "withheld_by_lower_bound_rule": withheld})


def scalar_arms(params: BaseModel) -> list[str]:
    """[baseline, treated]."""
    p = expect_params(params, ScalarCompareParams)
    return [p.baseline, p.treated]


SCALAR_COMPARE = Criterion(SCALAR, ScalarCompareParams, run_scalar_compare, scalar_arms)


# ---------------------------------------------------------------- value


class ValueParams(BaseModel):
    """Claim: an arm's per-seed quantity lies within ``tol`` of a paper's number ``target``.

    Estimate: the mean (CI: bootstrap-t, `mean_bootstrap_t_ci`) or the median (CI: exact
    distribution-free order-statistic interval, `median_order_ci`) over seeds. Claimed region
    ``[target - tol, target + tol]``, both ends included:
    SUPPORTED when the CI lies within it, REFUTED when wholly outside, else INCONCLUSIVE.
    ``censored``: ``refuse`` (default: a lower bound cannot place a value in an interval) or
    ``as_budget`` under the lower-bound rule.
    """

    model_config = ConfigDict(extra="forbid")

    name: Literal["value"]
    arm: str
    target: float
    tol: float = Field(ge=0)
    statistic: Literal["mean", "median"] = "mean"
    ci_level: float = Field(0.95, gt=0, lt=1)
    n_boot: Int = Field(2000, ge=100)
    bootstrap_seed: Int = 0
    censored: CensoredPolicy = "refuse"

    @model_validator(mode="after")
    def _finite(self) -> ValueParams:
        if not (math.isfinite(self.target) and math.isfinite(self.tol)):
            raise ValueError("target and tol must be finite numbers")
        return self


def run_value(params: BaseModel, arms: dict[str, ArmSample]) -> CriterionResult:
    """An arm's mean/median with its CI against [target - tol, target + tol]."""
    p = expect_params(params, ValueParams)
    (arm,) = require_arms(VALUE, [p.arm], arms)
    lower, upper = p.target - p.tol, p.target + p.tol
    fmt = verdict_rules.format_number
    test = ("bootstrap-t CI of the mean (no test)" if p.statistic == "mean"
            else "order-statistic (binomial) CI of the median (no test)")
    frame = Frame(VALUE, f"{p.statistic} of {arm.name}", test, p.target,
                  f"{p.statistic} within [{fmt(lower)}, {fmt(upper)}] ({fmt(p.target)} "
                  f"+/- {fmt(p.tol)})", p.ci_level, censoring_details([arm], p.censored))
    rows = [summarize(arm, p.ci_level, _arm_stats(arm, p.statistic))]
    if why := too_few_seeds([arm], 2) or refusal([arm], p.censored):
        return frame.inconclusive(why, rows)
    x = arm.times
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
                         "withheld_by_lower_bound_rule": withheld})


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


def value_arms(params: BaseModel) -> list[str]:
    """[arm]."""
    return [expect_params(params, ValueParams).arm]


VALUE_CRITERION = Criterion(VALUE, ValueParams, run_value, value_arms)
