"""Tests that pin what the mutation run of ``grokverify/stats/survival.py`` (mutmut) found unpinned
in the effect bootstraps and the ``survival_compare`` result (the KM / RMST primitives are pinned
in ``test_mutants_survival_km.py``).

What a user relies on, group by group:

- whole results of ``survival_compare`` (``summary: median`` and ``summary: rmst``): criterion,
  test named, claimed region, reason, log-rank chi2 / p and every key and value of the details;
- the claimed region in words for each direction, effect and ``min_effect: 0``;
- the INCONCLUSIVE results of arms without usable seeds, and that one seed is not "no seed";
- the errors of the bootstraps (an empty arm, unequal paired arms) and of the arm look-up;
- the counts in the bootstrap details (resamples bounded, infinite, undefined, extended);
- ``median_effect`` on its edges (zero / one baselines, float coercion, scalars as floats).

How expected values were derived: by hand for the data chosen (treated times are exactly half
the baseline's, so every paired resample's effect is exactly 0.5 and the CI is [0.5, 0.5]);
the log-rank statistic from its hypergeometric sums in a loop; KM medians "beyond the budget"
by exact ``Fraction`` products; RMSTs of uncensored resamples as plain means; the expanded
bootstrap level from scipy's t and normal distributions; bootstrap draws re-made with
``np.random.default_rng(seed).integers`` as documented (baseline first when unpaired).
"""

from __future__ import annotations

import math
import warnings
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from scipy import stats as sps

from grokverify.claim.criteria import SurvivalCompareParams
from grokverify.stats.base import ArmSample, CriterionResult, Verdict, judge
from grokverify.stats.common import CORRELATION_METHOD, EXPANDED_LEVEL_RULE
from grokverify.stats.survival import (
    CENSORING,
    KM_MEDIAN_CONVENTION,
    RMST_CONVENTION,
    TAU_FROM_DATA,
    bootstrap_median_effect,
    bootstrap_rmst_effect,
    median_effect,
)

NAME = "survival_compare"
PAIRED_BOOT = ("percentile, seed indices resampled with replacement jointly across the two arms "
               "(each resampled seed keeps its time and censoring in both)")
UNPAIRED_BOOT = "percentile, stratified by arm, seeds resampled with replacement"
UNREACHED_BOUNDS = ("a resample's KM median that is not reached lies in [largest time of that "
                    "resample, inf): CI low from the resamples' lower effect ends (treated at its "
                    "lower bound, baseline at its upper), CI high from their upper ends (treated "
                    "upper, baseline lower); the point estimate takes an unreached median as inf")
RESULT_DETAILS = {
    "km_median_convention": KM_MEDIAN_CONVENTION,
    "arm_median_ci": "statsmodels quantile_ci, cloglog transform",
    "logrank": "unpaired (both arms' seeds as independent samples); it informs, the CI decides",
}
P_METHOD = ("inversion of the bootstrap interval: the smallest one-sided level at which it lies "
            "wholly inside (support) / outside (refute) the claimed region")
TEST = "log-rank (statsmodels survdiff)"


def arm(name: str, times: list[float], observed: list[bool] | None = None,
        seeds: tuple[int, ...] | None = None, excluded: dict[str, int] | None = None,
        kind: Any = "time") -> ArmSample:
    t = np.asarray(times, dtype=float)
    o = np.ones(t.size, bool) if observed is None else np.asarray(observed, bool)
    return ArmSample(name, t, o, tuple(range(t.size)) if seeds is None else seeds,
                     excluded or {}, kind=kind)


def params(**kw: Any) -> SurvivalCompareParams:
    return SurvivalCompareParams.model_validate(
        {"name": NAME, "baseline": "b", "treated": "t", "direction": "less", **kw})


def run(b: ArmSample, t: ArmSample, **kw: Any) -> CriterionResult:
    return judge(params(**kw), {"b": b, "t": t})


def logrank_oracle(base: ArmSample, treat: ArmSample) -> tuple[float, float]:
    """Log-rank chi2 (1 df) and p: (O - E)^2 / V of the baseline arm over the event times."""
    time = np.r_[base.values, treat.values]
    event = np.r_[base.observed, treat.observed]
    group0 = np.r_[np.ones(base.n, bool), np.zeros(treat.n, bool)]
    o_minus_e = var = 0.0
    for u in np.unique(time[event]):
        risk = time >= u
        n, n0 = risk.sum(), (risk & group0).sum()
        d = ((time == u) & event).sum()
        o_minus_e += ((time == u) & event & group0).sum() - d * n0 / n
        var += d * (n0 / n) * (1 - n0 / n) * (n - d) / max(n - 1, 1)
    chi2 = o_minus_e ** 2 / var
    return chi2, float(sps.chi2.sf(chi2, 1))


def expanded_level_oracle(ci_level: float, n: int) -> float:
    """Hesterberg: 1 - 2 Phi(-sqrt(n/(n-1)) t_(n-1, 1 - alpha/2))."""
    t = sps.t.ppf(1 - (1 - ci_level) / 2, n - 1)
    return float(1 - 2 * sps.norm.cdf(-math.sqrt(n / (n - 1)) * t))


def median_unreached(times: np.ndarray, observed: np.ndarray) -> bool:
    """Whether the KM curve stays above 1/2 (exact fractions): the median is beyond the budget."""
    s = Fraction(1)
    for u in sorted(set(times[observed].tolist())):
        at_risk = int(np.sum(times >= u))
        deaths = int(np.sum((times == u) & observed))
        s *= 1 - Fraction(deaths, at_risk)
    return s > Fraction(1, 2)


def split(details: dict[str, Any], *keys: str) -> dict[str, Any]:
    """Remove and return the float entries `keys` (compared with a tolerance)."""
    return {k: details.pop(k) for k in keys}


# ---------------------------------------------------------------- whole results

# Treated times are exactly half the baseline's: every paired resample has effect 0.5 exactly.
BASE_T = [300.0, 420.0, 500.0, 640.0, 760.0, 880.0]
HALF_T = [x / 2 for x in BASE_T]


def test_median_result_is_pinned_whole() -> None:
    """Paired median comparison with a broken pair: the reason (effect label, the boundary words,
    the broken pair appended once before a single full stop), criterion, test, region, p-value
    (the log-rank of all seeds), and every detail."""
    b = arm("b", BASE_T)
    t = arm("t", [*HALF_T, 999.0], seeds=(0, 1, 2, 3, 4, 5, 6))  # seed 6: no partner in b
    res = run(b, t, min_effect=0.2, n_boot=200, bootstrap_seed=3)
    chi2, p = logrank_oracle(b, t)
    assert res.criterion == NAME
    assert res.effect_label == "ratio of KM medians (t / b)"
    assert res.test == f"{TEST}; analysis: paired (6 pairs, within-pair correlation 1)"
    assert res.claimed_region == "ratio <= 0.8 (t at least 20% faster)"
    assert res.ci_level == 0.95
    assert res.threshold == pytest.approx(0.8)
    # KM medians of the pairs: S = 1/2 at 500 exactly -> midpoint (500 + 640) / 2 = 570; 285
    assert res.estimate == 0.5
    assert res.ci == (0.5, 0.5)
    assert res.verdict is Verdict.SUPPORTED
    assert res.reason == (
        "The 95% CI of the ratio of KM medians (t / b), [0.5, 0.5], lies wholly at or below "
        "0.8, the boundary of the claimed effect (point estimate 0.5); 1 seed(s) without a "
        "partner in the other arm, left out (t: 1).")
    assert res.p_value == pytest.approx(p, rel=1e-9)
    assert (res.p_support, res.p_refute) == (0.0, 1.0)
    details = dict(res.details)
    floats = split(details, "within_pair_correlation", "logrank_chi2")
    assert floats == pytest.approx({"within_pair_correlation": 1.0, "logrank_chi2": chi2},
                                   rel=1e-9)
    assert details == {
        "censoring": CENSORING,
        "analysis": "paired (6 pairs, within-pair correlation 1)",
        "paired": True, "n_pairs": 6, "broken_pairs": {"b": 0, "t": 1},
        "within_pair_correlation_method": CORRELATION_METHOD,
        "bootstrap": PAIRED_BOOT,
        "quantile_method": "inverted_cdf (order statistics; infinite bounds kept)",
        "unreached_median_bounds": UNREACHED_BOUNDS,
        "n_boot": 200, "bootstrap_seed": 3,
        "n_undefined_resamples": 0, "n_bounded_resamples": 0, "n_infinite_resamples": 0,
        "n_base_median_beyond_budget": 0, "n_treated_median_beyond_budget": 0,
        "p_support": 0.0, "p_refute": 1.0,
        **RESULT_DETAILS,
    }


def test_rmst_result_is_pinned_whole() -> None:
    """Paired RMST comparison under a non-inferiority margin: τ from the data (880), RMST = mean
    time without censoring, so every paired resample's ratio is 0.5; the margin's boundary words
    in the reason, the expanded level for 6 pairs, and every detail."""
    b, t = arm("b", BASE_T), arm("t", HALF_T)
    res = run(b, t, summary="rmst", margin=0.25, n_boot=150, bootstrap_seed=5)
    chi2, p = logrank_oracle(b, t)
    label = "ratio of restricted mean times to threshold up to τ = 880 (t / b)"
    assert res.criterion == NAME
    assert res.effect_label == label
    assert res.test == f"{TEST}; analysis: paired (6 pairs, within-pair correlation 1)"
    assert res.claimed_region == "ratio <= 1.25 (non-inferiority: t at most 25% slower than b)"
    assert res.ci_level == 0.95
    assert res.estimate == 0.5
    assert res.ci == (0.5, 0.5)
    assert res.verdict is Verdict.SUPPORTED
    assert res.reason == (
        f"The 95% CI of the {label}, [0.5, 0.5], lies wholly at or below 1.25, the "
        "non-inferiority bound (margin 25%) (point estimate 0.5).")
    assert res.p_value == pytest.approx(p, rel=1e-9)
    assert (res.p_support, res.p_refute) == (0.0, 1.0)
    rmst_b = sum(BASE_T) / 6
    assert [r.columns["RMST (τ = 880)"] for r in res.arms] == pytest.approx(
        [rmst_b, rmst_b / 2], rel=1e-12)
    details = dict(res.details)
    floats = split(details, "within_pair_correlation", "logrank_chi2", "bootstrap_level")
    assert floats == pytest.approx({"within_pair_correlation": 1.0, "logrank_chi2": chi2,
                                    "bootstrap_level": expanded_level_oracle(0.95, 6)},
                                   rel=1e-9)
    assert details == {
        "censoring": CENSORING, "summary": "rmst", "tau": 880.0, "tau_source": TAU_FROM_DATA,
        "rmst_convention": RMST_CONVENTION,
        "analysis": "paired (6 pairs, within-pair correlation 1)",
        "paired": True, "n_pairs": 6, "broken_pairs": {"b": 0, "t": 0},
        "within_pair_correlation_method": CORRELATION_METHOD,
        "bootstrap": PAIRED_BOOT,
        "quantile_method": "linear interpolation",
        "n_boot": 150, "bootstrap_seed": 5,
        "bootstrap_level_rule": f"{EXPANDED_LEVEL_RULE}, n = seeds of the smaller arm (pairs "
                                "when paired)",
        "n_undefined_resamples": 0, "n_extended_resamples": 0,
        "p_support": 0.0, "p_refute": 1.0, "p_method": P_METHOD,
        **RESULT_DETAILS,
    }


# ---------------------------------------------------------------- claimed region in words


@pytest.mark.parametrize(("kw", "region"), [
    ({"direction": "greater", "min_effect": 0.2}, "ratio >= 1.2 (t at least 20% slower)"),
    ({"direction": "less", "min_effect": 0.0}, "ratio <= 1 (t at least 0% faster)"),
    ({"direction": "greater", "effect": "difference", "min_effect": 50},
     "difference >= 50 steps (t at least 50 steps slower)"),
    ({"direction": "greater", "margin": 0.1},
     "ratio >= 0.9 (non-inferiority: t at most 10% faster than b)"),
])
@pytest.mark.parametrize("summary", ["median", "rmst"])
def test_claimed_region_words(kw: dict[str, Any], region: str, summary: str) -> None:
    """The claimed region is reported even when no comparison is possible."""
    res = run(arm("b", [], excluded={"diverged": 2}), arm("t", [100.0, 200.0]),
              summary=summary, **kw)
    assert res.claimed_region == region


# ---------------------------------------------------------------- arms without usable seeds


def test_both_arms_without_seeds_named_in_the_reason() -> None:
    b = arm("b", [], excluded={"diverged": 3})
    t = arm("t", [], excluded={"diverged": 1, "nan_loss": 1})
    res = run(b, t, min_effect=0.2)
    assert res.verdict is Verdict.INCONCLUSIVE
    assert math.isnan(res.estimate)
    assert res.reason == (
        "No comparison is possible: arm 'b' has no usable seed (left out: diverged: 3); "
        "arm 't' has no usable seed (left out: diverged: 1, nan_loss: 1).")
    assert res.details["censoring"] == CENSORING


def test_rmst_arm_without_seeds_keeps_the_rows() -> None:
    """τ from the treated arm (300); its row carries its RMST (the mean time, no censoring)."""
    res = run(arm("b", [], excluded={"diverged": 3}), arm("t", [100.0, 200.0, 300.0]),
              summary="rmst", min_effect=0.2)
    assert res.verdict is Verdict.INCONCLUSIVE
    assert res.reason == ("No comparison is possible: arm 'b' has no usable seed (left out: "
                          "diverged: 3).")
    assert [(r.name, r.n, r.excluded) for r in res.arms] == [("b", 0, {"diverged": 3}),
                                                               ("t", 3, {})]
    assert math.isnan(res.arms[0].columns["RMST (τ = 300)"])
    assert res.arms[1].columns["RMST (τ = 300)"] == pytest.approx(200.0, rel=1e-12)
    assert res.arms[1].columns["KM median"] == 200.0
    assert (res.details["summary"], res.details["tau"]) == ("rmst", 300.0)


def test_rmst_treated_arm_of_one_seed_is_compared() -> None:
    """One treated seed is a seed: the point estimate is given (RMST 150 / 200), only the CI
    is not (an expanded level needs two seeds per arm)."""
    res = run(arm("b", [100.0, 200.0, 300.0]), arm("t", [150.0]), summary="rmst",
              min_effect=0.2)
    assert res.estimate == pytest.approx(0.75, rel=1e-12)
    assert res.verdict is Verdict.INCONCLUSIVE
    assert res.reason == (
        "The 95% CI of the ratio of restricted mean times to threshold up to τ = 300 (t / b), "
        "[nan, nan], is undefined, so no verdict can be drawn (point estimate 0.75).")
    assert res.details["no_ci"] == "an expanded bootstrap level needs at least 2 seeds per arm"


def test_median_treated_arm_of_one_seed_is_compared() -> None:
    """Unpaired (one shared seed number): the treated median is always 150; a baseline
    resample of 3 uncensored times has the middle one as KM median."""
    base = [100.0, 200.0, 300.0]
    res = run(arm("b", base), arm("t", [150.0]), min_effect=0.2, n_boot=300, bootstrap_seed=4)
    rng = np.random.default_rng(4)
    idx = rng.integers(0, 3, size=(300, 3))
    ratios = 150.0 / np.sort(np.asarray(base)[idx], axis=1)[:, 1]
    low = np.quantile(ratios, 0.025, method="inverted_cdf")
    high = np.quantile(ratios, 0.975, method="inverted_cdf")
    assert res.estimate == 0.75
    assert res.ci == (low, high)
    assert res.details["bootstrap"] == UNPAIRED_BOOT
    assert res.reason.startswith("The 95% CI of the ratio of KM medians (t / b), ")


# ---------------------------------------------------------------- wiring errors


def test_missing_arm_and_wrong_kind_are_named() -> None:
    b = arm("b", [100.0, 200.0])
    with pytest.raises(KeyError, match=r"survival_compare: no data for arm\(s\) \['t'\]"):
        judge(params(min_effect=0.2), {"b": b})
    v = arm("t", [0.5, 0.7], kind="value")
    with pytest.raises(TypeError, match=r"^survival_compare takes time metrics; arm\(s\) 't' "
                                        r"\(value\) carry another kind$"):
        judge(params(min_effect=0.2), {"b": b, "t": v})


@pytest.mark.parametrize("boot", ["median", "rmst"])
def test_bootstraps_reject_an_empty_arm(boot: str) -> None:
    full, empty = arm("x", [100.0, 200.0]), arm("y", [])
    for b, t in ((empty, full), (full, empty)):
        with pytest.raises(ValueError, match=r"^both arms need at least one seed$"):
            if boot == "median":
                bootstrap_median_effect(b, t, "ratio", 100, 0, 0.95)
            else:
                bootstrap_rmst_effect(b, t, "ratio", 500.0, 100, 0, 0.95)


@pytest.mark.parametrize("boot", ["median", "rmst"])
def test_paired_bootstraps_reject_unequal_arms(boot: str) -> None:
    b, t = arm("b", [100.0, 200.0, 300.0]), arm("t", [50.0, 60.0, 70.0, 80.0])
    with pytest.raises(ValueError, match=r"^a paired bootstrap needs aligned arms of equal "
                                         r"length$"):
        if boot == "median":
            bootstrap_median_effect(b, t, "ratio", 100, 0, 0.95, paired=True)
        else:
            bootstrap_rmst_effect(b, t, "ratio", 500.0, 100, 0, 0.95, paired=True)


# ---------------------------------------------------------------- bootstrap counts


@pytest.mark.parametrize("effect", ["ratio", "difference"])
def test_median_bootstrap_counts_of_unreached_medians(effect: str) -> None:
    """Unpaired draws (baseline first). A resample is bounded when either median is beyond the
    budget; an end is infinite when the treated median is (upper end), or, for a difference,
    when the baseline median is (lower end: t_lo - inf)."""
    bt = np.array([100.0, 150.0, 200.0, 250.0, 1000.0, 1000.0])
    bo = np.array([True, True, True, True, False, False])
    tt = np.array([80.0, 120.0, 300.0, 1000.0, 1000.0, 1000.0])
    to = np.array([True, True, True, False, False, False])
    n_boot, seed = 400, 11
    _, _, details = bootstrap_median_effect(arm("b", bt.tolist(), bo.tolist()),
                                            arm("t", tt.tolist(), to.tolist()),
                                            effect, n_boot, seed, 0.9)
    rng = np.random.default_rng(seed)
    bi = rng.integers(0, 6, size=(n_boot, 6))
    ti = rng.integers(0, 6, size=(n_boot, 6))
    b_inf = np.array([median_unreached(bt[i], bo[i]) for i in bi])
    t_inf = np.array([median_unreached(tt[i], to[i]) for i in ti])
    assert (b_inf & ~t_inf).sum() > 0 and (t_inf & ~b_inf).sum() > 0  # the data do their job
    infinite = t_inf if effect == "ratio" else (t_inf | b_inf)
    assert {k: details[k] for k in ("n_undefined_resamples", "n_bounded_resamples",
                                    "n_infinite_resamples", "n_base_median_beyond_budget",
                                    "n_treated_median_beyond_budget")} == {
        "n_undefined_resamples": 0,
        "n_bounded_resamples": int((b_inf | t_inf).sum()),
        "n_infinite_resamples": int(infinite.sum()),
        "n_base_median_beyond_budget": int(b_inf.sum()),
        "n_treated_median_beyond_budget": int(t_inf.sum()),
    }


def test_median_bootstrap_drops_a_resample_with_one_undefined_end() -> None:
    """Baseline median 0; treated censored at 0 (median beyond the budget, lower bound 0): the
    lower end 0/0 is undefined (the upper end inf/0 is not), so every resample is dropped."""
    estimate, ci, details = bootstrap_median_effect(
        arm("b", [0.0, 0.0]), arm("t", [0.0, 0.0], [False, False]), "ratio", 100, 0, 0.95,
        region=("less", 0.8))
    assert math.isnan(ci[0]) and math.isnan(ci[1])
    assert details["n_undefined_resamples"] == 100
    assert "p_support" not in details
    assert estimate == math.inf  # inf / 0 (finite over zero is inf; inf over zero too)


def test_rmst_bootstrap_two_seeds_per_arm_give_a_ci() -> None:
    """Two seeds per arm suffice. Uncensored, τ above every time: each resample's RMST is its
    mean time, the CI the linear quantiles of the ratios at the expanded level for n = 2."""
    bt, tt = np.array([100.0, 300.0]), np.array([50.0, 200.0])
    n_boot, seed = 200, 7
    estimate, ci, details = bootstrap_rmst_effect(arm("b", bt.tolist()), arm("t", tt.tolist()),
                                                  "ratio", 400.0, n_boot, seed, 0.9)
    rng = np.random.default_rng(seed)
    bi = rng.integers(0, 2, size=(n_boot, 2))
    ti = rng.integers(0, 2, size=(n_boot, 2))
    ratios = tt[ti].mean(axis=1) / bt[bi].mean(axis=1)
    level = expanded_level_oracle(0.9, 2)
    assert estimate == pytest.approx(125.0 / 200.0, rel=1e-12)
    assert ci == pytest.approx((np.quantile(ratios, (1 - level) / 2),
                                np.quantile(ratios, (1 + level) / 2)), rel=1e-12)
    assert details["bootstrap_level"] == pytest.approx(level, rel=1e-12)
    assert "no_ci" not in details
    assert "p_support" not in details and "p_refute" not in details  # no region given


def test_rmst_bootstrap_all_effects_undefined() -> None:
    """Every time 0 in both arms: both RMSTs 0, every resample 0/0, so no CI and all dropped."""
    estimate, ci, details = bootstrap_rmst_effect(arm("b", [0.0, 0.0]), arm("t", [0.0, 0.0]),
                                                  "ratio", 10.0, 100, 0, 0.95)
    assert math.isnan(estimate)
    assert math.isnan(ci[0]) and math.isnan(ci[1])
    assert details["n_undefined_resamples"] == 100


def test_rmst_bootstrap_counts_resamples_extended_to_tau() -> None:
    """A resample is extended when its largest time is censored (no event there) and below τ;
    counted over both arms' resamples (unpaired draws, baseline first)."""
    bt, bo = np.array([100.0, 200.0, 300.0]), np.array([True, True, False])
    tt, to = np.array([50.0, 150.0, 250.0]), np.array([True, False, False])
    n_boot, seed, tau = 120, 1, 500.0
    _, _, details = bootstrap_rmst_effect(arm("b", bt.tolist(), bo.tolist()),
                                          arm("t", tt.tolist(), to.tolist()),
                                          "difference", tau, n_boot, seed, 0.95)
    rng = np.random.default_rng(seed)
    expected = 0
    for times, obs in ((bt, bo), (tt, to)):
        for i in rng.integers(0, 3, size=(n_boot, 3)):
            last = times[i].max()
            expected += int(last < tau and not np.any((times[i] == last) & obs[i]))
    assert expected > 2
    assert details["n_extended_resamples"] == expected


# ---------------------------------------------------------------- median_effect


def test_median_effect_ratio_over_zero_and_one() -> None:
    """A finite treated median over a zero baseline (signed zero too) is inf, 0/0 is NaN, and
    neither warns; a baseline of 1 is an ordinary divisor."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert median_effect(0.0, 5.0, "ratio") == math.inf
        assert median_effect(-0.0, 5.0, "ratio") == math.inf
        assert math.isnan(median_effect(0.0, 0.0, "ratio"))
        out = median_effect(np.array([1.0, 0.0, 2.0]), np.array([2.0, 3.0, 1.0]), "ratio")
    assert out.tolist() == [2.0, math.inf, 0.5]
    assert median_effect(1.0, 0.8, "ratio") == 0.8


def test_median_effect_scalar_is_a_float() -> None:
    value = median_effect(200.0, 150.0, "ratio")
    assert type(value) is float and value == 0.75
    value = median_effect(200, 150, "difference")
    assert type(value) is float and value == -50.0


def test_median_effect_coerces_to_float() -> None:
    """Missing medians given as None in an object array are undefined effects (NaN)."""
    base = np.array([100.0, None], dtype=object)
    out = median_effect(base, np.array([80.0, 90.0]), "ratio")
    assert out[0] == 0.8 and math.isnan(out[1])
    out = median_effect(np.array([100.0, 200.0]), np.array([80.0, None], dtype=object),
                        "difference")
    assert out[0] == -20.0 and math.isnan(out[1])


def test_median_effect_unknown_effect() -> None:
    with pytest.raises(ValueError, match=r"^unknown effect 'log'$"):
        median_effect(1.0, 2.0, "log")  # type: ignore[arg-type]
