"""Time-to-grok as survival data: Kaplan-Meier medians, log-rank test, bootstrap of median effects.

Seeds that never reach the threshold within the budget are right-censored at the budget, not
dropped, so slow seeds still count against an arm. A median the survival curve never reaches is
``math.inf`` ("beyond the budget").

KM median convention (statsmodels ``SurvfuncRight.quantile(0.5)``, SAS style): the first event
time at which the estimated S(t) is *strictly* below 0.5. S(t) is computed as
``exp(cumsum(log(1 - d/n)))`` over event times, so where S(t) is exactly 0.5 in exact arithmetic
the rounding of that product decides between the two neighbouring event times;
`km_median_batch` reproduces the same arithmetic so that bootstrap resamples and the point
estimate share this convention bit for bit.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel
from statsmodels.duration.survfunc import SurvfuncRight, survdiff

from grokverify import verdict as verdict_rules
from grokverify.catalog.criteria import (
    CRITERION_SPECS,
    TIME_ONLY,
    Effect,
    SurvivalCompareParams,
    expect_params,
)
from grokverify.stats.base import ArmSample, ArmSummary, Criterion, CriterionResult
from grokverify.stats.common import Frame, arm_row, excluded_words, require_arms

NAME = "survival_compare"
CENSORING = "seeds that never reach the threshold are right-censored at their budget"

# statsmodels clips 1 - d/n at this floor before taking logs; mirrored in km_median_batch.
_SURV_FLOOR = 1e-16


def km_median(
    times: np.ndarray, observed: np.ndarray, alpha: float = 0.05
) -> tuple[float, float, float]:
    """KM median and its (1-alpha) CI via statsmodels (cloglog); inf where unreached/unbounded.

    A NaN upper bound means unbounded, so it becomes inf. A NaN lower bound becomes inf when the
    median itself is beyond the budget (no observed time is a plausible median), else 0.0, the
    trivial lower bound for a step count (no information).
    """
    t = np.asarray(times, dtype=float)
    d = np.asarray(observed, dtype=float)
    if t.size == 0:
        raise ValueError("km_median needs at least one time")
    with np.errstate(all="ignore"):
        sf = SurvfuncRight(t, d)
        median = _nan_to_inf(float(sf.quantile(0.5)))
        low, high = (float(x) for x in sf.quantile_ci(0.5, alpha=alpha, method="cloglog"))
    if math.isnan(low):
        low = math.inf if math.isinf(median) else 0.0
    return median, low, _nan_to_inf(high)


def _nan_to_inf(x: float) -> float:
    return math.inf if math.isnan(x) else x


def km_median_batch(times: np.ndarray, observed: np.ndarray) -> np.ndarray:
    """KM medians of B samples at once: (B, n) arrays -> (B,), inf where S never drops below 0.5.

    Mirrors statsmodels' arithmetic exactly (see module docstring): rows are sorted, each tie
    group contributes one factor 1 - d/n at its last position, and non-event positions add an
    exact 0.0 to the running log-sum, so the partial sums equal statsmodels' bit for bit.
    """
    t = np.asarray(times, dtype=float)
    o = np.asarray(observed, dtype=bool)
    if t.ndim != 2 or t.shape != o.shape:
        raise ValueError(f"expected equal (B, n) arrays, got {t.shape} and {o.shape}")
    n_rows, n = t.shape
    if n == 0:
        return np.full(n_rows, math.inf)
    order = np.argsort(t, axis=1, kind="stable")
    ts = np.take_along_axis(t, order, axis=1)
    events = np.take_along_axis(o, order, axis=1).astype(float)
    surv, is_event_time = _km_curve_sorted(ts, events)
    hit = is_event_time & (surv < 0.5)
    first = hit.argmax(axis=1)
    medians = ts[np.arange(n_rows), first]
    return np.where(hit.any(axis=1), medians, math.inf)


def _km_curve_sorted(ts: np.ndarray, events: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """S(t) at the last position of each tie group of row-sorted data, and the event-time mask."""
    n = ts.shape[1]
    new_group = np.ones(ts.shape, dtype=bool)
    new_group[:, 1:] = ts[:, 1:] != ts[:, :-1]
    last_of_group = np.ones(ts.shape, dtype=bool)
    last_of_group[:, :-1] = new_group[:, 1:]
    positions = np.arange(n)
    start = np.maximum.accumulate(np.where(new_group, positions, 0), axis=1)
    cum_events = np.cumsum(events, axis=1)
    before = np.where(start > 0, np.take_along_axis(cum_events, np.maximum(start - 1, 0), 1), 0.0)
    deaths = cum_events - before
    at_risk = (n - start).astype(float)
    is_event_time = last_of_group & (deaths > 0)
    factor = np.where(is_event_time, 1 - deaths / at_risk, 1.0)
    log_factor = np.log(np.maximum(factor, _SURV_FLOOR))
    return np.exp(np.cumsum(log_factor, axis=1)), is_event_time


def logrank(a: ArmSample, b: ArmSample) -> tuple[float, float]:
    """Log-rank chi2 and p via statsmodels survdiff; (nan, nan) when no arm has any event."""
    if a.events + b.events == 0:
        return math.nan, math.nan
    time = np.concatenate([a.values, b.values])
    status = np.concatenate([a.observed, b.observed]).astype(float)
    group = np.repeat([0, 1], [a.n, b.n])
    chisq, p = survdiff(time, status, group)
    return float(chisq), float(p)


def median_effect(base: np.ndarray | float, treat: np.ndarray | float, effect: Effect) -> Any:
    """treat/base or treat-base of medians; inf/inf, inf-inf and 0/0 are NaN (undefined).

    A finite treated median over a zero baseline median is inf (the ratio is unbounded).
    """
    b = np.asarray(base, dtype=float)
    t = np.asarray(treat, dtype=float)
    with np.errstate(all="ignore"):
        if effect == "difference":
            out = t - b
        elif effect == "ratio":
            out = np.where(b == 0, np.where(t == 0, math.nan, math.inf), t / b)
        else:
            raise ValueError(f"unknown effect {effect!r}")
    return out if out.ndim else float(out)


def bootstrap_median_effect(
    base: ArmSample,
    treat: ArmSample,
    effect: Effect,
    n_boot: int,
    seed: int,
    ci_level: float,
    region: tuple[Literal["less", "greater"], float] | None = None,
) -> tuple[float, tuple[float, float], dict[str, Any]]:
    """Point estimate of the median effect and its stratified percentile-bootstrap CI.

    Seeds are resampled with replacement within each arm, keeping each seed's (time, observed)
    pair, so censored seeds stay censored. A resample's KM median that is not reached is only
    known to lie in ``[largest time of that resample, inf)``, so each resample gives an effect
    *interval*: its lower end pairs the treated lower end with the baseline upper end
    (``t_lo / b_hi`` or ``t_lo - b_hi``), its upper end the treated upper end with the baseline
    lower end (``t_hi / b_lo`` or ``t_hi - b_lo``); where both medians are reached the two ends
    coincide. CI low is the alpha/2 quantile of the lower ends, CI high the 1 - alpha/2 quantile
    of the upper ends (order statistics, inverted CDF, so inf bounds stay inf). An end that is
    undefined (0/0) drops that resample and is counted. The point estimate keeps the convention
    that an unreached median is inf (inf/inf, inf - inf: NaN).
    With `region` = (direction, threshold), details also get the bootstrap one-sided p-values,
    by the same rule as the CI: for ``less``, p_support = share of upper ends above the threshold
    and p_refute = share of lower ends at or below it; for ``greater``, p_support = share of lower
    ends below it and p_refute = share of upper ends at or above it.
    """
    if base.n == 0 or treat.n == 0:
        raise ValueError("both arms need at least one seed")
    rng = np.random.default_rng(seed)
    base_medians, base_max = _resampled_medians(base, n_boot, rng)
    treat_medians, treat_max = _resampled_medians(treat, n_boot, rng)
    base_lo = np.where(np.isinf(base_medians), base_max, base_medians)
    treat_lo = np.where(np.isinf(treat_medians), treat_max, treat_medians)
    lower_ends = median_effect(base_medians, treat_lo, effect)
    upper_ends = median_effect(base_lo, treat_medians, effect)
    ok = ~(np.isnan(lower_ends) | np.isnan(upper_ends))
    lows, highs = lower_ends[ok], upper_ends[ok]
    alpha = 1.0 - ci_level
    if lows.size:
        low = np.quantile(lows, alpha / 2, method="inverted_cdf")
        high = np.quantile(highs, 1 - alpha / 2, method="inverted_cdf")
        ci = (float(low), float(high))
    else:
        ci = (math.nan, math.nan)
    base_med = km_median(base.values, base.observed)[0]
    treat_med = km_median(treat.values, treat.observed)[0]
    details = {
        "bootstrap": "percentile, stratified by arm, seeds resampled with replacement",
        "quantile_method": "inverted_cdf (order statistics; infinite bounds kept)",
        "unreached_median_bounds": "a resample's KM median that is not reached lies in "
                                   "[largest time of that resample, inf): CI low from the "
                                   "resamples' lower effect ends (treated at its lower bound, "
                                   "baseline at its upper), CI high from their upper ends "
                                   "(treated upper, baseline lower); the point estimate takes "
                                   "an unreached median as inf",
        "n_boot": int(n_boot),
        "bootstrap_seed": int(seed),
        "n_undefined_resamples": int(ok.size - lows.size),
        "n_bounded_resamples": int((np.isinf(base_medians) | np.isinf(treat_medians))[ok].sum()),
        "n_infinite_resamples": int((np.isinf(lows) | np.isinf(highs)).sum()),
        "n_base_median_beyond_budget": int(np.isinf(base_medians).sum()),
        "n_treated_median_beyond_budget": int(np.isinf(treat_medians).sum()),
    }
    if region is not None and lows.size:
        direction, threshold = region
        if direction == "less":
            p_support, p_refute = np.mean(highs > threshold), np.mean(lows <= threshold)
        else:
            p_support, p_refute = np.mean(lows < threshold), np.mean(highs >= threshold)
        details["p_support"] = float(p_support)
        details["p_refute"] = float(p_refute)
    return median_effect(base_med, treat_med, effect), ci, details


def _resampled_medians(arm: ArmSample, n_boot: int,
                       rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """KM medians of `n_boot` resamples of an arm (inf where not reached) and their largest
    times (the lower bound of an unreached median)."""
    idx = rng.integers(0, arm.n, size=(n_boot, arm.n))
    times = arm.values[idx]
    return km_median_batch(times, arm.observed[idx]), times.max(axis=1)


def _effect_label(p: SurvivalCompareParams) -> str:
    if p.effect == "ratio":
        return f"ratio of KM medians ({p.treated} / {p.baseline})"
    return f"difference of KM medians ({p.treated} - {p.baseline})"


def _claimed_region(p: SurvivalCompareParams) -> str:
    op = "<=" if p.direction == "less" else ">="
    pace = "faster" if p.direction == "less" else "slower"
    thr = verdict_rules.format_number(p.threshold)
    if p.effect == "ratio":
        return f"ratio {op} {thr} ({p.treated} at least {p.min_effect * 100:g}% {pace})"
    m = verdict_rules.format_number(p.min_effect)
    return f"difference {op} {thr} steps ({p.treated} at least {m} steps {pace})"


def km_columns(arm: ArmSample, ci_level: float) -> dict[str, Any]:
    """The row of a time-to-event arm: seeds, events, censored, the KM median and its CI (NaN
    for an arm without seeds)."""
    if arm.n:
        median, low, high = km_median(arm.values, arm.observed, alpha=1.0 - ci_level)
    else:
        median, low, high = math.nan, math.nan, math.nan
    return {"seeds": arm.n, "events": arm.events, "censored": arm.n - arm.events,
            "KM median": median, f"{ci_level * 100:.4g}% CI": (low, high)}


def run_survival_compare(params: BaseModel, arms: dict[str, ArmSample]) -> CriterionResult:
    """Compare KM medians of two arms: bootstrap CI of the effect decides, log-rank p informs."""
    p = expect_params(params, SurvivalCompareParams)
    base, treat = require_arms(NAME, [p.baseline, p.treated], arms, TIME_ONLY)
    rows = [arm_row(a, km_columns(a, p.ci_level)) for a in (base, treat)]
    frame = Frame(NAME, _effect_label(p), "log-rank (statsmodels survdiff)", p.threshold,
                  _claimed_region(p), p.ci_level, {"censoring": CENSORING})
    if base.n == 0 or treat.n == 0:
        return _no_usable_seeds(frame, base, treat, rows)
    estimate, ci, details = bootstrap_median_effect(
        base, treat, p.effect, p.n_boot, p.bootstrap_seed, p.ci_level,
        region=(p.direction, p.threshold),
    )
    chisq, pval = logrank(base, treat)
    verdict, reason = verdict_rules.decide(ci, p.threshold, p.direction, estimate,
                                           frame.effect_label, p.ci_level)
    details.update(
        km_median_convention="first event time with S(t) < 0.5 (statsmodels SurvfuncRight)",
        arm_median_ci="statsmodels quantile_ci, cloglog transform",
        logrank_chi2=chisq,
    )
    result = frame.result(estimate, ci, pval, verdict, reason, rows, details)
    result.p_support, result.p_refute = details.get("p_support"), details.get("p_refute")
    return result


def _no_usable_seeds(frame: Frame, base: ArmSample, treat: ArmSample,
                     rows: list[ArmSummary]) -> CriterionResult:
    """An arm whose every seed was left out by a declared rule: no comparison, INCONCLUSIVE."""
    empty = [a for a in (base, treat) if a.n == 0]
    why = "; ".join(f"arm {a.name!r} has no usable seed (left out: {excluded_words(a)})"
                    for a in empty)
    result = frame.inconclusive(why, rows)
    result.reason = f"No comparison is possible: {why}."
    return result


SURVIVAL_COMPARE = Criterion.of(CRITERION_SPECS[NAME], run_survival_compare)
