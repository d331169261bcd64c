"""Criteria on a per-seed scalar: ``scalar_compare`` (two arms, ratio or difference of a
statistic, paired by seed by default) and ``value`` (one arm's statistic within a tolerance of a
number), under the censoring policies and lower-bound rule of `grokverify.stats.common`
(docs/verdicts.md, "`scalar_compare`", "`value`" and "Paired analysis").
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np
from pydantic import BaseModel
from scipy.stats import binom, norm
from statsmodels.duration.survfunc import SurvfuncRight

from grokverify.claim.criteria import (
    ANY_KIND,
    MIN_MEDIAN_SEEDS,
    ScalarCompareParams,
    Statistic,
    ValueParams,
    boundary_words,
    effect_words,
    expect_params,
)
from grokverify.stats import verdict as verdict_rules
from grokverify.stats.base import INTERVAL_FAILS, ArmSample, CriterionResult, Verdict
from grokverify.stats.common import (
    STATISTIC_WORDS,
    STATISTICS,
    Frame,
    Pairing,
    Sides,
    arm_row,
    bootstrap_ci,
    broken_pairs_words,
    censored_column,
    censored_count,
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
    statistic_of,
    too_few_seeds,
    with_analysis,
)
from grokverify.stats.survival import (
    KM_MEDIAN_CONVENTION,
    km_columns,
    km_median,
    median_effect,
)

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


def _scalar_label(p: ScalarCompareParams, paired: bool) -> str:
    op = "/" if p.effect == "ratio" else "-"
    if not paired:
        return f"{p.effect} of {p.statistic}s ({p.treated} {op} {p.baseline})"
    if p.effect == "difference":
        return f"{p.statistic} of per-seed differences ({p.treated} - {p.baseline})"
    stat = {"mean": "geometric mean", "median": "median", "iqm": "geometric iqm"}[p.statistic]
    return f"{stat} of per-seed ratios ({p.treated} / {p.baseline})"


def _scalar_region(p: ScalarCompareParams) -> str:
    """E.g. "ratio <= 0.8", or under a non-inferiority margin "ratio <= 1.25 (non-inferiority:
    t at most 25% higher than b)"."""
    op = "<=" if p.direction == "less" else ">="
    region = f"{p.effect} {op} {verdict_rules.format_number(p.threshold)}"
    if p.margin == 0:
        return region
    worse = "higher" if p.direction == "less" else "lower"
    words = effect_words(p.effect, 0.0, p.margin, p.treated, p.baseline, worse, "")
    return f"{region} ({words})"


Estimate = tuple[float, tuple[float, float], dict[str, Any]]

# the method the `test` line names: what computes the CI (`_paired_effect`), no test of no effect
_BCA_TEST = "BCa bootstrap CI of the effect (no test)"
_PAIRED_TEST = {"median": "exact order-statistic CI of the median of the per-pair effects "
                          "(no test)",
                "mean": "bootstrap-t CI of the mean of the per-pair effects (no test)"}


def run_scalar_compare(params: BaseModel, arms: dict[str, ArmSample]) -> CriterionResult:
    """Ratio/difference of a per-seed statistic between two arms (of per-pair effects when
    paired); the BCa CI decides."""
    p = expect_params(params, ScalarCompareParams)
    given = require_arms(SCALAR, [p.baseline, p.treated], arms, ANY_KIND)
    base, treat = restricted(given, p.censored)
    pairing = pair_arms(base, treat, p.paired)
    method = _PAIRED_TEST.get(p.statistic, _BCA_TEST) if pairing.paired else _BCA_TEST
    frame = Frame(SCALAR, _scalar_label(p, pairing.paired),
                  with_analysis(method, pairing) + restricted_words(given, p.censored),
                  p.threshold, _scalar_region(p), p.ci_level,
                  {**censoring_details(given, p.censored),
                   "statistic": STATISTIC_WORDS[p.statistic], **pairing.details()})
    rows = [arm_row(a, _columns(a, p.statistic)) for a in (base, treat)]
    ratio_undefined = not_positive([base, treat]) if p.effect == "ratio" else None
    if pairing.paired and p.effect == "ratio" and not ratio_undefined:
        ratio_undefined = not_positive_pairs(pairing)
    if why := too_few_seeds((base, treat), 2) or refusal((base, treat), p.censored) \
            or ratio_undefined:
        return frame.inconclusive(why, rows)
    region = (p.direction, p.threshold)
    estimate, ci, boot = (_paired_effect(p, pairing, region) if pairing.paired
                          else _unpaired_effect(p, base, treat, region))
    if not (base.observed.any() or treat.observed.any()):
        boot[INTERVAL_FAILS] = ("every seed of both arms is censored at the budget, so the "
                                "interval is of the budget, not of the effect")
    verdict, reason = verdict_rules.decide(ci, p.threshold, p.direction, estimate,
                                           frame.effect_label, p.ci_level,
                                           boundary_words(p.margin, p.effect))
    at_risk = (_paired_at_risk(pairing, p) if pairing.paired
               else _unpaired_at_risk(base, treat, p))
    verdict, reason, withheld = lower_bound_rule(
        verdict, reason, at_risk(verdict),
        f"{p.statistic} of the per-pair effects" if pairing.paired else p.statistic)
    result = frame.result(estimate, ci, None, verdict, reason.rstrip(".")
                          + broken_pairs_words(pairing) + ".", rows,
                          {**boot, **lower_bound_details((base, treat), withheld)})
    # a side whose verdict the lower-bound rule would withhold has no valid p-value
    result.p_support = None if at_risk(Verdict.SUPPORTED) else boot.get("p_support")
    result.p_refute = None if at_risk(Verdict.REFUTED) else boot.get("p_refute")
    return result


def _unpaired_effect(p: ScalarCompareParams, base: ArmSample, treat: ArmSample,
                     region: tuple[str, float]) -> Estimate:
    """The effect of the arms' statistics, arms resampled independently."""
    stat, effect = STATISTICS[p.statistic], p.effect

    def effect_of(b: np.ndarray, t: np.ndarray, axis: int = -1) -> Any:
        return median_effect(stat(b, axis=axis), stat(t, axis=axis), effect)

    estimate = float(effect_of(base.values, treat.values))
    ci, boot = bootstrap_ci((base.values, treat.values), effect_of, p.ci_level, p.n_boot,
                            p.bootstrap_seed, expand=p.statistic in ("mean", "iqm"),
                            region=region)
    if p.statistic == "median" and (n := min(base.n, treat.n)) < MIN_MEDIAN_SEEDS:
        boot.setdefault(INTERVAL_FAILS, (
            f"{n} seeds in an arm, fewer than the {MIN_MEDIAN_SEEDS} at which the bootstrap of "
            "two medians keeps its level (benchmarks/calibration.py, \"few seeds\": at 4 seeds "
            "with ties, coverage 0.917, false verdicts 0.040 and 0.046)"))
    return estimate, ci, boot


def _paired_effect(p: ScalarCompareParams, pairing: Pairing,
                   region: tuple[str, float]) -> Estimate:
    """The statistic of the per-pair effects (log ratios for a ratio, back-transformed): one
    sample, so the median's exact order-statistic CI and the mean's bootstrap-t (as `value`:
    a one-sample BCa of few pairs under-covers), the IQM's BCa at the expanded level."""
    d = paired_effects(pairing, p.effect)
    log = p.effect == "ratio"
    back = np.exp if log else (lambda x: x)
    thr = math.log(region[1]) if log else region[1]
    on = "per-pair effects" + (" (log ratios)" if log else "")
    if p.statistic in _ONE_SAMPLE_CI:
        ci, boot = _ONE_SAMPLE_CI[p.statistic](d, p)
        sides: Sides = boot.pop("sides")(thr)
        inside, outside = (sides.le, sides.gt) if region[0] == "less" else (sides.ge, sides.lt)
        boot = {**boot, "ci_method": f"{boot['ci_method']}, of the {on}",
                "p_support": inside, "p_refute": outside}
    else:
        ci, boot = bootstrap_ci((d,), STATISTICS[p.statistic], p.ci_level, p.n_boot,
                                p.bootstrap_seed, expand=True, region=(region[0], thr),
                                how="scipy.stats.bootstrap of the per-pair effects (seed pairs "
                                    "resampled jointly)" + (", on log ratios" if log else ""))
    estimate = float(back(statistic_of(d, p.statistic)))
    return estimate, (float(back(ci[0])), float(back(ci[1]))), boot


# the one-sample CIs of the paired statistics that have an exact or studentized one (each
# returns its CI and details with "sides": the one-sided p's against a boundary, matched to it)
_ONE_SAMPLE_CI: dict[str, Callable[[np.ndarray, ScalarCompareParams],
                                   tuple[tuple[float, float], dict[str, Any]]]] = {
    "median": lambda d, p: median_order_ci(d, p.ci_level),
    "mean": lambda d, p: mean_bootstrap_t_ci(d, p.ci_level, p.n_boot, p.bootstrap_seed),
}


AtRisk = Any  # Callable[[Verdict], list[ArmSample]]


def _unpaired_at_risk(base: ArmSample, treat: ArmSample, p: ScalarCompareParams) -> AtRisk:
    """The arms whose censored values could have produced a verdict: a low value in treated
    pulls the effect down, in baseline up."""
    favours_less, favours_greater = treat, base
    pulls = {Verdict.SUPPORTED: favours_less if p.direction == "less" else favours_greater,
             Verdict.REFUTED: favours_greater if p.direction == "less" else favours_less}

    def at_risk(verdict: Verdict) -> list[ArmSample]:
        arm = pulls.get(verdict)
        return [arm] if arm is not None and not determined(arm.values, arm.observed,
                                                           p.statistic) else []
    return at_risk


def _paired_at_risk(pairing: Pairing, p: ScalarCompareParams) -> AtRisk:
    """Per-pair effects with a censored treated value can only be larger than entered (those
    with a censored baseline only smaller): the verdict that a too-low (too-high) entry favours
    stands only when the statistic of the effects is determined against it."""
    d = paired_effects(pairing, p.effect)
    rise = {Verdict.SUPPORTED: p.direction == "less", Verdict.REFUTED: p.direction == "greater"}

    def at_risk(verdict: Verdict) -> list[ArmSample]:
        if verdict not in rise:
            return []
        arm, sign = (pairing.treat, 1.0) if rise[verdict] else (pairing.base, -1.0)
        return [] if determined(sign * d, arm.observed, p.statistic) else [arm]
    return at_risk


def not_positive_pairs(pairing: Pairing) -> str | None:
    """Why per-pair log ratios are undefined (a paired value <= 0), or None."""
    bad = [a for a in (pairing.base, pairing.treat) if (a.values <= 0).any()]
    if not bad:
        return None
    who = " and ".join(f"arm {a.name!r} has {int((a.values <= 0).sum())} paired value(s) <= 0"
                       for a in bad)
    return f"{who}, and a per-seed ratio compares logs (use effect: difference)"




# ---------------------------------------------------------------- value


def run_value(params: BaseModel, arms: dict[str, ArmSample]) -> CriterionResult:
    """An arm's mean/median with its CI against [target - tol, target + tol]; the median of a
    time metric with a censored seed is the Kaplan-Meier median (`_run_km_value`)."""
    p = expect_params(params, ValueParams)
    given = require_arms(VALUE, [p.arm], arms, ANY_KIND)
    (arm,) = restricted(given, p.censored)
    lower, upper = p.target - p.tol, p.target + p.tol
    fmt = verdict_rules.format_number
    km = p.statistic == "median" and arm.kind == "time" and censored_count(arm) > 0
    if km:
        test = ("Kaplan-Meier median, Brookmeyer-Crowley CI (statsmodels quantile_ci, cloglog); "
                "p against the region's ends: the tests of S(b) = 1/2 that CI inverts")
        label = f"Kaplan-Meier median of {arm.name}"
    else:
        test = ("bootstrap-t CI of the mean (no test)" if p.statistic == "mean"
                else "order-statistic (binomial) CI of the median (no test)")
        test += restricted_words(given, p.censored)
        label = f"{p.statistic} of {arm.name}"
    frame = Frame(VALUE, label, test, p.target,
                  f"{p.statistic} within [{fmt(lower)}, {fmt(upper)}] ({fmt(p.target)} "
                  f"+/- {fmt(p.tol)})", p.ci_level, censoring_details(given, p.censored))
    rows = [arm_row(arm, km_columns(arm, p.ci_level) if km else _columns(arm, p.statistic))]
    if why := too_few_seeds([arm], 2) or refusal([arm], p.censored):
        return frame.inconclusive(why, rows)
    if km:
        return _run_km_value(frame, arm, lower, upper, p.ci_level, rows)
    x = arm.values
    estimate = statistic_of(x, p.statistic)
    details: dict[str, Any]
    if p.statistic == "mean":
        ci, details = mean_bootstrap_t_ci(x, p.ci_level, p.n_boot, p.bootstrap_seed)
    else:
        ci, details = median_order_ci(x, p.ci_level)
    sides = details.pop("sides")
    verdict, reason = verdict_rules.decide_interval(ci, lower, upper, estimate,
                                                    frame.effect_label, p.ci_level)
    # Censored values pull the statistic down: a CI above the region stands regardless.
    needs_arm = verdict == Verdict.SUPPORTED or (verdict == Verdict.REFUTED and ci[1] < lower)
    at_risk = [arm] if needs_arm and not determined(x, arm.observed, p.statistic) else []
    verdict, reason, withheld = lower_bound_rule(verdict, reason, at_risk, p.statistic)
    result = frame.result(estimate, ci, None, verdict, reason, rows,
                          {**details, "tolerance_region": [lower, upper],
                           **lower_bound_details([arm], withheld)})
    # p against the region, two one-sided tests like the CI's two ends: inside needs both
    # "above lower" and "below upper" (the larger p), outside needs either (the smaller)
    if not determined(x, arm.observed, p.statistic):
        return result  # censored values: the statistic is only a lower bound
    at_lower, at_upper = sides(lower), sides(upper)
    result.p_support = max(at_lower.ge, at_upper.le)
    result.p_refute = min(at_lower.lt, at_upper.gt)
    return result


KM_CENSORING = ("right-censored (Kaplan-Meier): a censored seed counts as 'not yet' up to its "
                "censoring value and drops out of the risk set after it, not entered as a value")
KM_CI_METHOD = ("Brookmeyer-Crowley: the event times t whose z-test of S(t) = 1/2 (cloglog "
                "transform, Greenwood variance) is not rejected, from the first to the event "
                "time after the last (statsmodels SurvfuncRight.quantile_ci(0.5, alpha, "
                "'cloglog')); inf above when the last event time is not rejected")
KM_P_METHOD = ("the smallest alpha/2 at which that CI's end passes b: max over the event times "
               "t_i the CI end needs rejected of norm.sf(|r_i|), r_i the cloglog z-statistic at "
               "t_i -- where r rises with t (the usual case) the one-sided test of S(b-) = 1/2 "
               "(p_ge, p_lt: just below b) or of S(b) = 1/2 (p_le, p_gt) against one side")


def _run_km_value(frame: Frame, arm: ArmSample, lower: float, upper: float, ci_level: float,
                  rows: list[Any]) -> CriterionResult:
    """The KM median of a time metric with censored seeds against [lower, upper]: the estimate
    and CI of the arm's table (`km_median`), the verdict from that CI and p's that invert it
    (docs/verdicts.md, "The median of a time metric with a censored seed")."""
    alpha = 1.0 - ci_level
    estimate, low, high = km_median(arm.values, arm.observed, alpha=alpha)
    ci = (low, high)
    event_times, q, defined = _bc_tail_p(arm.values, arm.observed, alpha)
    largest = float(arm.values.max())
    fmt = verdict_rules.format_number
    beyond = math.isinf(estimate)
    # no seed reached the event: every seed outlasted `largest`, which a median at or below a
    # time t < largest makes happen with probability at most 2^-n (each seed independently);
    # the KM variance is 0 then and proves nothing, this bound is exact. The values are the
    # metric's own (steps, or a ratio of steps): no unit is named
    no_events = not arm.observed.any()
    exact = 0.5 ** arm.n
    verdict, reason = verdict_rules.decide_interval(ci, lower, upper, estimate,
                                                    frame.effect_label, ci_level)
    if beyond and not defined:  # the table's CI (inf, inf): the median lies beyond `largest`
        head = (f"The {ci_level * 100:.4g}% CI of the {frame.effect_label} lies beyond the "
                f"budget (the KM survival stays significantly above 1/2 up to the largest time, "
                f"{fmt(largest)})")
        region = verdict_rules.format_ci((lower, upper))
        if upper >= largest:
            verdict, reason = Verdict.INCONCLUSIVE, (
                f"{head}, and the claimed region {region} reaches that far, so the data neither "
                "support nor refute the claim (point estimate inf).")
        elif no_events and exact > alpha / 2:
            verdict, reason = Verdict.INCONCLUSIVE, (
                f"No seed reached the event by {fmt(largest)}, but with {arm.n} seed(s) a "
                f"median inside the claimed region {region} leaves every seed censored with "
                f"probability up to 2^-{arm.n} = {fmt(exact)}, more than {fmt(alpha / 2)}: too "
                "few seeds to refute it (point estimate inf).")
        else:
            verdict, reason = Verdict.REFUTED, (
                f"{head}, wholly above the claimed region {region}, excluding it "
                "(point estimate inf).")
    if beyond:
        reason = reason.replace(
            "(point estimate inf)",
            f"(point estimate: beyond the budget, the KM survival never falls to 1/2 by "
            f"{fmt(largest)})")
    details = {"censoring": KM_CENSORING, "estimator": "Kaplan-Meier median",
               "km_median_convention": KM_MEDIAN_CONVENTION, "ci_method": KM_CI_METHOD,
               "p_method": KM_P_METHOD, "tolerance_region": [lower, upper],
               "median_beyond_budget": beyond, "largest_time": largest,
               "bc_ci_defined": defined}
    if not defined:
        details["bc_ci_undefined"] = (
            "no event time passes the test of S(t) = 1/2 at this level, so statsmodels' CI is "
            "undefined; the table's CI replaces it and the verdict comes from that; p_support "
            "is 1 and p_refute the largest norm.sf(|r_i|) where REFUTED, else 1 (with no event "
            "at all, a region below the largest time has p_refute = 2^-n exactly)")
    result = frame.result(estimate, ci, None, verdict, reason, rows, details)
    if not defined:
        result.p_support = 1.0
        if no_events and upper < largest:
            result.p_refute = exact
        else:
            result.p_refute = float(q.max()) if verdict == Verdict.REFUTED else 1.0
        return result
    at_lower, at_upper = (_bc_sides(event_times, q, b) for b in (lower, upper))
    result.p_support = max(at_lower.ge, at_upper.le)
    result.p_refute = min(at_lower.lt, at_upper.gt)
    return result


def _bc_tail_p(times: np.ndarray, observed: np.ndarray,
               alpha: float) -> tuple[np.ndarray, np.ndarray, bool]:
    """The KM event times, norm.sf(|r_i|) at each (r_i the cloglog z-statistic of S(t_i) = 1/2,
    computed with statsmodels' quantile_ci arithmetic; NaN, e.g. at S = 0, is rejected at every
    level: 0), and whether statsmodels' CI at `alpha` is defined (some |r_i| <= z)."""
    with np.errstate(all="ignore"):
        sf = SurvfuncRight(np.asarray(times, dtype=float), np.asarray(observed, dtype=float))
        s, se = sf.surv_prob, sf.surv_prob_se
        r = np.log(-np.log(s)) - np.log(-np.log(1 - 0.5))
        r /= (-1 / (s * np.log(s))) * se
        tr = norm.ppf(1 - alpha / 2)
        defined = bool(np.any(np.abs(r) <= tr))
        q = np.where(np.isnan(r), 0.0, norm.sf(np.abs(r)))
    return np.asarray(sf.surv_times, dtype=float), q, defined


def _bc_sides(event_times: np.ndarray, q: np.ndarray, b: float) -> Sides:
    """`Sides` of the Brookmeyer-Crowley CI against `b` (event times sorted, `q` their
    norm.sf(|r|)): each the largest q over the event times that the CI's end needs rejected
    (docs/verdicts.md lists them per side)."""
    def worst(mask_or_start: Any) -> float:
        part = q[mask_or_start]
        return float(part.max()) if part.size else 0.0

    at_or_below = int(np.searchsorted(event_times, b, side="right"))
    below = int(np.searchsorted(event_times, b, side="left"))
    return Sides(ge=worst(slice(0, below)), gt=worst(slice(0, at_or_below)),
                 le=worst(slice(max(at_or_below - 1, 0), None)),
                 lt=worst(slice(max(below - 1, 0), None)))


def median_order_ci(x: np.ndarray, ci_level: float) -> tuple[tuple[float, float], dict[str, Any]]:
    """Distribution-free CI of the median, ``[x_(k), x_(n+1-k)]`` with the largest k such that
    ``P(Bin(n, 1/2) <= k - 1) <= alpha/2``, covering at least the stated level; ``(-inf, inf)``
    when even k = 1 cannot (few seeds for the level)."""
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
                "order_statistic_k": k, "achieved_level": achieved,
                "sides": functools.partial(_sign_test_sides, xs)}


def _sign_test_sides(xs: np.ndarray, b: float) -> Sides:
    """`Sides` of the exact sign test against `b`, matched to the order-statistic CI (`xs`
    sorted): its low end x_(k) is >= b exactly when at most k - 1 values lie below b, i.e. when
    P(Bin(n, 1/2) <= that count) <= alpha/2; the other three sides likewise."""
    n = xs.size
    below, through = np.searchsorted(xs, b, side="left"), np.searchsorted(xs, b, side="right")
    cdf = functools.partial(binom.cdf, n=n, p=0.5)
    return Sides(ge=float(cdf(below)), le=float(cdf(n - through)), gt=float(cdf(through)),
                 lt=float(cdf(n - below)))


