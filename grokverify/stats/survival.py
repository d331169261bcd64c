"""Time to grok as survival data: Kaplan-Meier medians and restricted mean times (RMST), the
log-rank test, and the bootstrap of their effects, paired by seed by default
(docs/verdicts.md, "`survival_compare`"). A seed that never reaches the threshold within the
budget is right-censored there, never dropped; a median the KM curve never reaches is
``math.inf`` ("beyond the budget")."""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel
from statsmodels.duration.survfunc import SurvfuncRight, survdiff

from grokverify.claim.criteria import (
    MIN_MEDIAN_SEEDS,
    TIME_ONLY,
    Effect,
    SurvivalCompareParams,
    boundary_words,
    effect_words,
    expect_params,
)
from grokverify.stats import verdict as verdict_rules
from grokverify.stats.base import INTERVAL_FAILS, ArmSample, ArmSummary, CriterionResult
from grokverify.stats.common import (
    EXPANDED_LEVEL_RULE,
    Frame,
    Pairing,
    arm_row,
    bca_p_values,
    broken_pairs_words,
    excluded_words,
    expanded_level,
    expanded_p,
    no_spread,
    pair_arms,
    require_arms,
    with_analysis,
)
from grokverify.stats.verdict import Verdict

NAME = "survival_compare"
CENSORING = "seeds that never reach the threshold are right-censored at their budget"

# statsmodels clips 1 - d/n at this floor before taking logs; mirrored in km_median_batch.
_SURV_FLOOR = 1e-16
# |S(t) - 0.5| within this is S = 0.5 exactly (R survival's tolerance, sqrt(machine epsilon)).
HALF_TOL = math.sqrt(float(np.finfo(float).eps))
TAU_FROM_DATA = ("the largest time of any seed of either arm (the training budget whenever a "
                 "seed is censored at it)")
RMST_CONVENTION = ("area under the KM curve from 0 to τ (one τ for both arms and every "
                   "resample); past a sample's largest time the curve keeps its last value (0 "
                   "after a last event, flat after a last censored time)")
KM_MEDIAN_CONVENTION = ("first event time with S(t) < 0.5; where S(t) = 0.5 (within "
                        "sqrt(machine eps)) the midpoint of that event time and the next (or the "
                        "largest time when no event follows), as R survival's quantile.survfit")


def km_median(
    times: np.ndarray, observed: np.ndarray, alpha: float = 0.05
) -> tuple[float, float, float]:
    """KM median (`km_median_batch`) and its (1-alpha) CI via statsmodels (cloglog); a NaN upper
    bound is unbounded (inf), a NaN lower bound inf when the median is beyond the budget (no
    observed time is plausible), else 0.0, a step count's trivial bound."""
    t = np.asarray(times, dtype=float)
    d = np.asarray(observed, dtype=float)
    if t.size == 0:
        raise ValueError("km_median needs at least one time")
    median = float(km_median_batch(t[None], d[None].astype(bool))[0])
    with np.errstate(all="ignore"):
        sf = SurvfuncRight(t, d)
        low, high = (float(x) for x in sf.quantile_ci(0.5, alpha=alpha, method="cloglog"))
    if math.isnan(low):
        low = math.inf if math.isinf(median) else 0.0
    return median, low, _nan_to_inf(high)


def _nan_to_inf(x: float) -> float:
    return math.inf if math.isnan(x) else x


def km_median_batch(times: np.ndarray, observed: np.ndarray) -> np.ndarray:
    """KM medians of B samples at once, (B, n) -> (B,), inf where S never falls to 0.5, by
    `KM_MEDIAN_CONVENTION`; S(t) = exp(cumsum(log(1 - d/n))) as statsmodels computes it, so that
    `HALF_TOL`, not float rounding, decides S = 0.5 (one implementation for every median)."""
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
    rows = np.arange(n_rows)
    below = is_event_time & (surv < 0.5 - HALF_TOL)
    at_half = is_event_time & (np.abs(surv - 0.5) <= HALF_TOL)
    below_time = np.where(below.any(axis=1), ts[rows, below.argmax(axis=1)], math.inf)
    flat_end = np.where(below.any(axis=1), below_time, ts[:, -1])
    half_time = ts[rows, at_half.argmax(axis=1)]
    return np.where(at_half.any(axis=1), (half_time + flat_end) / 2, below_time)


def _km_curve_sorted(ts: np.ndarray, events: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """S(t) at the last position of each tie group of row-sorted data, and the event-time mask."""
    factor, is_event_time = _km_factors_sorted(ts, events)
    log_factor = np.log(np.maximum(factor, _SURV_FLOOR))
    return np.exp(np.cumsum(log_factor, axis=1)), is_event_time


def _km_factors_sorted(ts: np.ndarray, events: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The KM factor ``1 - d/n`` of row-sorted data at the last position of each tie group with
    an event (1.0 elsewhere), and that event-time mask."""
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
    return np.where(is_event_time, 1 - deaths / at_risk, 1.0), is_event_time


def rmst_batch(times: np.ndarray, observed: np.ndarray, tau: float) -> np.ndarray:
    """Restricted mean times of B samples at once, (B, n) -> (B,): the area under each row's KM
    curve on [0, tau] (`RMST_CONVENTION`), the factors 1 - d/n taken by ``cumprod`` so that the
    curve is exactly 0 after a last event (a censored time tied with an event is at risk)."""
    t = np.asarray(times, dtype=float)
    o = np.asarray(observed, dtype=bool)
    if t.ndim != 2 or t.shape != o.shape:
        raise ValueError(f"expected equal (B, n) arrays, got {t.shape} and {o.shape}")
    if not tau > 0:
        raise ValueError(f"tau must be > 0, got {tau!r}")
    n_rows, n = t.shape
    if n == 0:
        raise ValueError("rmst_batch needs at least one time per row")
    order = np.argsort(t, axis=1, kind="stable")
    ts = np.take_along_axis(t, order, axis=1)
    events = np.take_along_axis(o, order, axis=1).astype(float)
    factor, _ = _km_factors_sorted(ts, events)
    surv = np.concatenate([np.ones((n_rows, 1)), np.cumprod(factor, axis=1)], axis=1)
    grid = np.minimum(ts, tau)
    left = np.concatenate([np.zeros((n_rows, 1)), grid], axis=1)
    right = np.concatenate([grid, np.full((n_rows, 1), float(tau))], axis=1)
    return np.sum(surv * (right - left), axis=1)


def rmst(times: np.ndarray, observed: np.ndarray, tau: float) -> float:
    """Restricted mean time to the event up to `tau`: the area under the KM curve on [0, tau]
    (`rmst_batch` of one sample)."""
    t = np.asarray(times, dtype=float)
    if t.size == 0:
        raise ValueError("rmst needs at least one time")
    return float(rmst_batch(t[None], np.asarray(observed, dtype=bool)[None], tau)[0])


def rmst_tau(arms: list[ArmSample], tau: float | None) -> tuple[float, str]:
    """τ of an RMST comparison and where it came from: the claim's `tau` when given, else the
    largest time of any seed of the arms (the budget whenever a seed is censored at it)."""
    if tau is not None:
        return float(tau), "the claim's tau"
    times = [a.values for a in arms if a.n]
    if not times:
        return math.nan, "no seeds"
    return float(max(x.max() for x in times)), TAU_FROM_DATA


def logrank(a: ArmSample, b: ArmSample) -> tuple[float, float]:
    """Log-rank chi2 and p via statsmodels survdiff; (nan, nan) when it is undefined: no arm has
    any event, or one arm has no seed at risk at any event (zero variance)."""
    if a.events + b.events == 0:
        return math.nan, math.nan
    time = np.concatenate([a.values, b.values])
    status = np.concatenate([a.observed, b.observed]).astype(float)
    group = np.repeat([0, 1], [a.n, b.n])
    try:
        chisq, p = survdiff(time, status, group)
    except np.linalg.LinAlgError:
        return math.nan, math.nan
    return float(chisq), float(p)


def median_effect(base: np.ndarray | float, treat: np.ndarray | float, effect: Effect) -> Any:
    """treat/base or treat-base of medians; inf/inf, inf-inf and 0/0 are NaN (undefined), and a
    finite treated median over a zero baseline median is inf."""
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
    paired: bool = False,
) -> tuple[float, tuple[float, float], dict[str, Any]]:
    """Point estimate of the median effect and its percentile-bootstrap CI, each resample an
    effect interval where a median is unreached, and with `region` the p's by the CI's rule
    (docs/verdicts.md, "`survival_compare`"); ``paired``: the arms are aligned pairs."""
    _check_arms(base, treat, paired)
    base_idx, treat_idx = _draw_indices(base, treat, n_boot, seed, paired)
    base_medians, base_max = _resampled_medians(base, base_idx)
    treat_medians, treat_max = _resampled_medians(treat, treat_idx)
    base_lo = np.where(np.isinf(base_medians), base_max, base_medians)
    treat_lo = np.where(np.isinf(treat_medians), treat_max, treat_medians)
    lower_ends = median_effect(base_medians, treat_lo, effect)
    upper_ends = median_effect(base_lo, treat_medians, effect)
    ok = ~(np.isnan(lower_ends) | np.isnan(upper_ends))
    lows, highs = lower_ends[ok], upper_ends[ok]
    ci = _percentile_ci(lows, highs, ci_level)
    base_med = km_median(base.values, base.observed)[0]
    treat_med = km_median(treat.values, treat.observed)[0]
    details = {
        "bootstrap": _RESAMPLING[paired],
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
    details.update(_bootstrap_p(lows, highs, region))
    return median_effect(base_med, treat_med, effect), ci, details


# how both survival bootstraps (median, RMST) resample, by `paired`
_RESAMPLING = {True: "percentile, seed indices resampled with replacement jointly across the "
                     "two arms (each resampled seed keeps its time and censoring in both)",
               False: "percentile, stratified by arm, seeds resampled with replacement"}


def _check_arms(base: ArmSample, treat: ArmSample, paired: bool) -> None:
    """What both survival bootstraps need of their arms."""
    if base.n == 0 or treat.n == 0:
        raise ValueError("both arms need at least one seed")
    if paired and base.n != treat.n:
        raise ValueError("a paired bootstrap needs aligned arms of equal length")


def _draw_indices(base: ArmSample, treat: ArmSample, n_boot: int, seed: int,
                  paired: bool) -> tuple[np.ndarray, np.ndarray]:
    """The bootstrap's seed indices (n_boot, n) for each arm: paired, one draw serves both arms;
    unpaired, the baseline's indices are drawn first, then the treated arm's."""
    rng = np.random.default_rng(seed)
    if paired:
        idx = rng.integers(0, base.n, size=(n_boot, base.n))
        return idx, idx
    base_idx = rng.integers(0, base.n, size=(n_boot, base.n))
    return base_idx, rng.integers(0, treat.n, size=(n_boot, treat.n))


def _percentile_ci(lows: np.ndarray, highs: np.ndarray, ci_level: float) -> tuple[float, float]:
    """The alpha/2 quantile of the lower ends and the 1 - alpha/2 quantile of the upper ends
    (inverted CDF: order statistics, so infinite bounds stay infinite); NaN without resamples."""
    if not lows.size:
        return math.nan, math.nan
    alpha = 1.0 - ci_level
    low = np.quantile(lows, alpha / 2, method="inverted_cdf")
    high = np.quantile(highs, 1 - alpha / 2, method="inverted_cdf")
    return float(low), float(high)


def _bootstrap_p(lows: np.ndarray, highs: np.ndarray,
                 region: tuple[Literal["less", "greater"], float] | None) -> dict[str, float]:
    """The bootstrap one-sided p-values against the region's threshold, by the CI's rule: the
    shares of effect ends past it; empty without a region or resamples."""
    if region is None or not lows.size:
        return {}
    direction, threshold = region
    if direction == "less":
        p_support, p_refute = np.mean(highs > threshold), np.mean(lows <= threshold)
    else:
        p_support, p_refute = np.mean(lows < threshold), np.mean(highs >= threshold)
    return {"p_support": float(p_support), "p_refute": float(p_refute)}


def bootstrap_rmst_effect(
    base: ArmSample,
    treat: ArmSample,
    effect: Effect,
    tau: float,
    n_boot: int,
    seed: int,
    ci_level: float,
    region: tuple[Literal["less", "greater"], float] | None = None,
    paired: bool = False,
) -> tuple[float, tuple[float, float], dict[str, Any]]:
    """The ratio / difference of restricted mean times up to `tau` and its percentile-bootstrap
    CI from `bootstrap_median_effect`'s draws, at the expanded level (an RMST is a mean), with
    `region` the p's that invert it (docs/verdicts.md, "`summary: rmst`")."""
    _check_arms(base, treat, paired)
    estimate = median_effect(rmst(base.values, base.observed, tau),
                             rmst(treat.values, treat.observed, tau), effect)
    n = min(base.n, treat.n)
    details: dict[str, Any] = {
        "bootstrap": _RESAMPLING[paired],
        "quantile_method": "linear interpolation",
        "n_boot": int(n_boot),
        "bootstrap_seed": int(seed),
    }
    if n < 2:
        details["no_ci"] = "an expanded bootstrap level needs at least 2 seeds per arm"
        return estimate, (math.nan, math.nan), details
    base_idx, treat_idx = _draw_indices(base, treat, n_boot, seed, paired)
    base_rmst = rmst_batch(base.values[base_idx], base.observed[base_idx], tau)
    treat_rmst = rmst_batch(treat.values[treat_idx], treat.observed[treat_idx], tau)
    effects = np.asarray(median_effect(base_rmst, treat_rmst, effect))
    kept = effects[~np.isnan(effects)]
    level = expanded_level(ci_level, n)
    ci = ((float(np.quantile(kept, (1 - level) / 2)), float(np.quantile(kept, (1 + level) / 2)))
          if kept.size else (math.nan, math.nan))
    details.update({
        "bootstrap_level": level,
        "bootstrap_level_rule": f"{EXPANDED_LEVEL_RULE}, n = seeds of the smaller arm (pairs "
                                "when paired)",
        "n_undefined_resamples": int(effects.size - kept.size),
        "n_extended_resamples": int(sum(_ends_censored_before(a, idx, tau).sum()
                                        for a, idx in ((base, base_idx), (treat, treat_idx)))),
    })
    if why := no_spread(kept, "effect"):
        details[INTERVAL_FAILS] = why
    if region is not None and kept.size:
        details.update(bca_p_values(kept, 0.0, 0.0, region, expanded_p(n)))
    return estimate, ci, details


def _ends_censored_before(arm: ArmSample, idx: np.ndarray, tau: float) -> np.ndarray:
    """Per resample: whether its KM curve ends on a censored time below `tau` (so the RMST
    extends the last value flat to `tau`)."""
    times, observed = arm.values[idx], arm.observed[idx]
    last = times.max(axis=1)
    at_last = times == last[:, None]
    event_at_last = (at_last & observed).any(axis=1)
    return (last < tau) & ~event_at_last


def _resampled_medians(arm: ArmSample, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """KM medians of the resamples ``arm[idx[b]]`` (inf where not reached) and their largest
    times (the lower bound of an unreached median)."""
    times = arm.values[idx]
    return km_median_batch(times, arm.observed[idx]), times.max(axis=1)


def _effect_label(p: SurvivalCompareParams, tau: float = math.nan) -> str:
    op = "/" if p.effect == "ratio" else "-"
    if p.summary == "rmst":
        return (f"{p.effect} of restricted mean times to threshold up to τ = "
                f"{verdict_rules.format_number(tau)} ({p.treated} {op} {p.baseline})")
    return f"{p.effect} of KM medians ({p.treated} {op} {p.baseline})"


def _claimed_region(p: SurvivalCompareParams) -> str:
    """E.g. "ratio <= 0.8 (t at least 20% faster)", or under a non-inferiority margin
    "ratio <= 1.25 (non-inferiority: t at most 25% slower than b)"."""
    op = "<=" if p.direction == "less" else ">="
    better, worse = ("faster", "slower") if p.direction == "less" else ("slower", "faster")
    thr = verdict_rules.format_number(p.threshold)
    words = effect_words(p.effect, float(p.min_effect or 0.0), p.margin, p.treated, p.baseline,
                         worse, better, "steps")
    unit = "" if p.effect == "ratio" else " steps"
    return f"{p.effect} {op} {thr}{unit} ({words})"


def km_columns(arm: ArmSample, ci_level: float) -> dict[str, Any]:
    """The row of a time-to-event arm: seeds, events, censored, the KM median and its CI (NaN
    for an arm without seeds)."""
    if arm.n:
        median, low, high = km_median(arm.values, arm.observed, alpha=1.0 - ci_level)
    else:
        median, low, high = math.nan, math.nan, math.nan
    return {"seeds": arm.n, "events": arm.events, "censored": arm.n - arm.events,
            "KM median": median, f"{ci_level * 100:.4g}% CI": (low, high)}


def rmst_columns(arm: ArmSample, tau: float) -> dict[str, Any]:
    """The RMST column of a time-to-event arm (NaN for an arm without seeds or without τ)."""
    value = rmst(arm.values, arm.observed, tau) if arm.n and tau > 0 else math.nan
    return {f"RMST (τ = {verdict_rules.format_number(tau)})": value}


def run_survival_compare(params: BaseModel, arms: dict[str, ArmSample]) -> CriterionResult:
    """Compare KM medians (or restricted mean times up to τ, ``summary: rmst``) of two arms:
    bootstrap CI of the effect decides (seed pairs resampled jointly when paired), log-rank p
    informs."""
    p = expect_params(params, SurvivalCompareParams)
    base, treat = require_arms(NAME, [p.baseline, p.treated], arms, TIME_ONLY)
    if p.summary == "rmst":
        return _run_rmst(p, base, treat)
    rows = [arm_row(a, km_columns(a, p.ci_level)) for a in (base, treat)]
    pairing = pair_arms(base, treat, p.paired)
    test = "log-rank (statsmodels survdiff)"
    frame = Frame(NAME, _effect_label(p), with_analysis(test, pairing), p.threshold,
                  _claimed_region(p), p.ci_level, {"censoring": CENSORING, **pairing.details()})
    if base.n == 0 or treat.n == 0:
        return _no_usable_seeds(frame, base, treat, rows)
    b, t = pairing.base, pairing.treat
    estimate, ci, details = bootstrap_median_effect(
        b, t, p.effect, p.n_boot, p.bootstrap_seed, p.ci_level,
        region=(p.direction, p.threshold), paired=pairing.paired,
    )
    if min(b.n, t.n) < MIN_MEDIAN_SEEDS:
        details[INTERVAL_FAILS] = (
            f"{min(b.n, t.n)} seeds in an arm, fewer than the {MIN_MEDIAN_SEEDS} at which the "
            "bootstrap of KM medians keeps its level (benchmarks/calibration.py, \"few seeds\": "
            "false verdicts 0.06 at 4 seeds, 0.030-0.034 at 5-7, against 0.025)")
    bound = estimate_bound(b, t, p.effect)
    if bound is not None:
        estimate, side, words = bound
        details["estimate_bound"] = side
    verdict, reason = verdict_rules.decide(ci, p.threshold, p.direction, estimate,
                                           frame.effect_label, p.ci_level,
                                           boundary_words(p.margin, p.effect))
    if bound is not None:
        plain = f"(point estimate {verdict_rules.format_number(estimate)})"
        reason = reason.replace(plain, f"(point estimate {words})")
    return _result(frame, pairing, base, treat, estimate, ci, verdict, reason, rows, details)


def _run_rmst(p: SurvivalCompareParams, base: ArmSample, treat: ArmSample) -> CriterionResult:
    """``summary: rmst``: the ratio / difference of restricted mean times to threshold up to τ,
    one τ for both arms (`rmst_tau`); expanded percentile bootstrap CI
    (`bootstrap_rmst_effect`)."""
    tau, tau_source = rmst_tau([base, treat], p.tau)
    rows = [arm_row(a, {**km_columns(a, p.ci_level), **rmst_columns(a, tau)})
            for a in (base, treat)]
    pairing = pair_arms(base, treat, p.paired)
    test = "log-rank (statsmodels survdiff)"
    frame = Frame(NAME, _effect_label(p, tau), with_analysis(test, pairing), p.threshold,
                  _claimed_region(p), p.ci_level,
                  {"censoring": CENSORING, "summary": "rmst", "tau": tau, "tau_source": tau_source,
                   "rmst_convention": RMST_CONVENTION, **pairing.details()})
    if base.n == 0 or treat.n == 0:
        return _no_usable_seeds(frame, base, treat, rows)
    estimate, ci, details = bootstrap_rmst_effect(
        pairing.base, pairing.treat, p.effect, tau, p.n_boot, p.bootstrap_seed, p.ci_level,
        region=(p.direction, p.threshold), paired=pairing.paired,
    )
    verdict, reason = verdict_rules.decide(ci, p.threshold, p.direction, estimate,
                                           frame.effect_label, p.ci_level,
                                           boundary_words(p.margin, p.effect))
    return _result(frame, pairing, base, treat, estimate, ci, verdict, reason, rows, details)


def _result(frame: Frame, pairing: Pairing, base: ArmSample, treat: ArmSample, estimate: float,
            ci: tuple[float, float], verdict: Verdict, reason: str, rows: list[ArmSummary],
            details: dict[str, Any]) -> CriterionResult:
    """The result both summaries (median, RMST) give: the log-rank test beside the CI that
    decided, broken pairs named, and the bootstrap's p against θ."""
    chisq, pval = logrank(base, treat)
    details.update(
        km_median_convention=KM_MEDIAN_CONVENTION,
        arm_median_ci="statsmodels quantile_ci, cloglog transform",
        logrank_chi2=chisq,
        logrank="unpaired (both arms' seeds as independent samples); it informs, the CI decides",
    )
    reason = reason.rstrip(".") + broken_pairs_words(pairing) + "."
    result = frame.result(estimate, ci, pval, verdict, reason, rows, details)
    result.p_support, result.p_refute = details.get("p_support"), details.get("p_refute")
    return result


def estimate_bound(base: ArmSample, treat: ArmSample,
                   effect: Effect) -> tuple[float, str, str] | None:
    """When exactly one arm's KM median is beyond the budget the effect is only bounded (an
    unreached median is at least that arm's largest time): (the bound, "upper" | "lower", words
    for the reason), else None."""
    b_med, t_med = km_median(base.values, base.observed)[0], km_median(treat.values,
                                                                        treat.observed)[0]
    if math.isinf(b_med) == math.isinf(t_med):
        return None
    fmt = verdict_rules.format_number
    if math.isinf(b_med):
        value, side, op, arm = float(median_effect(base.values.max(), t_med, effect)), "upper", \
            "≤", base
    else:
        value, side, op, arm = float(median_effect(b_med, treat.values.max(), effect)), "lower", \
            "≥", treat
    return value, side, (f"{op} {fmt(value)}: the {arm.name} median is beyond the budget "
                         f"({fmt(float(arm.values.max()))} steps), so only a bound is known")


def _no_usable_seeds(frame: Frame, base: ArmSample, treat: ArmSample,
                     rows: list[ArmSummary]) -> CriterionResult:
    """An arm whose every seed was left out by a declared rule: no comparison, INCONCLUSIVE."""
    empty = [a for a in (base, treat) if a.n == 0]
    why = "; ".join(f"arm {a.name!r} has no usable seed (left out: {excluded_words(a)})"
                    for a in empty)
    result = frame.inconclusive(why, rows)
    result.reason = f"No comparison is possible: {why}."
    return result


