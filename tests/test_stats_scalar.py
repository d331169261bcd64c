"""scalar_compare and value (grokverify/stats/scalar.py): estimates, CIs (BCa, bootstrap-t, order
statistics, the KM median's Brookmeyer-Crowley CI) and p's against hand-computed oracles, scipy
and statsmodels; the words of their results; the lower-bound rule; the refusals."""

from __future__ import annotations

import math
import warnings
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from conftest import (
    AS_BUDGET,
    LEVEL_RULE,
    NOT_CENSORED,
    P_METHOD,
    REFUSE,
    SPEARMAN_PAIRS,
    Has,
    hesterberg_level,
    lognormal_arm,
    run_criterion,
)
from scipy import stats as sps
from scipy.stats import norm
from statsmodels.duration.survfunc import SurvfuncRight

from grokverify.stats.base import ArmSample, CriterionResult, Verdict, verdict_from_p
from grokverify.stats.scalar import _bc_sides, _bc_tail_p
from grokverify.stats.simulate import make_arm
from grokverify.stats.survival import km_columns

BUDGET = 10000.0
BCA_TEST = "BCa bootstrap CI of the effect (no test)"
UNPAIRED_BOOTSTRAP = "scipy.stats.bootstrap, arms resampled independently (paired=False)"
ORDER_METHOD = ("order statistics: [x_(k), x_(n+1-k)], k the largest with P(Bin(n, 1/2) <= k-1) "
                "<= alpha/2 (exact, distribution-free)")
BOOT_T_METHOD = "bootstrap-t (studentized): mean - t*_(1-alpha/2) se, mean - t*_(alpha/2) se"
DEGENERATE = "all values equal: the CI is the single value"
MEAN_TEST = "bootstrap-t CI of the mean (no test)"
MEDIAN_TEST = "order-statistic (binomial) CI of the median (no test)"
KM_TEST = Has("Kaplan-Meier median, Brookmeyer-Crowley CI (statsmodels quantile_ci, cloglog)",
              "p against the region's ends: the tests of S(b) = 1/2 that CI inverts")
KM_DETAILS = {
    "censoring": Has("right-censored (Kaplan-Meier)", "drops out of the risk set after it",
                     "not entered as a value"),
    "censored_policy": "as_budget",
    "estimator": "Kaplan-Meier median",
    "km_median_convention": Has("first event time with S(t) < 0.5", "where S(t) = 0.5",
                                "the midpoint of that event time and the next",
                                "quantile.survfit"),
    "ci_method": Has("Brookmeyer-Crowley", "z-test of S(t) = 1/2 (cloglog transform, Greenwood "
                     "variance)", "SurvfuncRight.quantile_ci(0.5, alpha, 'cloglog')",
                     "inf above when the last event time is not rejected"),
    "p_method": Has("the smallest alpha/2 at which that CI's end passes b",
                    "max over the event times", "norm.sf(|r_i|)",
                    "the one-sided test of S(b-) = 1/2"),
}
BC_UNDEFINED = Has("no event time passes the test of S(t) = 1/2 at this level",
                   "statsmodels' CI is undefined", "the table's CI replaces it",
                   "p_support is 1 and p_refute the largest norm.sf(|r_i|) where REFUTED",
                   "(with no event at all, a region below the largest time has p_refute = "
                   "2^-n exactly)")
BEYOND = ("lies beyond the budget", "stays significantly above 1/2 up to the largest time, "
          "1000)")
BEYOND_ESTIMATE = "(point estimate: beyond the budget, the KM survival never falls to 1/2 by 1000"


def compare(b: ArmSample, t: ArmSample, **params: Any) -> CriterionResult:
    """scalar_compare of treated `t` against baseline `b`."""
    return run_criterion({"name": "scalar_compare", "baseline": b.name, "treated": t.name,
                          **params}, b, t)


def value(a: ArmSample, **params: Any) -> CriterionResult:
    """value of arm `a` (the KM median when a time has a censored seed)."""
    return run_criterion({"name": "value", "arm": a.name, **params}, a)


def km_value(a: ArmSample, **params: Any) -> CriterionResult:
    """value of a time arm's median, its censored seeds as the Kaplan-Meier curve reads them."""
    return value(a, **{"statistic": "median", "censored": "as_budget", **params})


def scalar(b: ArmSample, t: ArmSample, **params: Any) -> CriterionResult:
    """scalar_compare at 500 resamples, "t less than b" unless said otherwise."""
    return compare(b, t, **{"direction": "less", "n_boot": 500, **params})


def km_lognormal(median: float, sd: float, n: int, seed: int,
                 budget: float = BUDGET) -> ArmSample:
    return lognormal_arm("a", median, seed, n, sigma=sd, budget=budget)


# ---------------------------------------------------------------- oracles


def words(result: CriterionResult, drop: tuple[str, ...] = ()) -> dict[str, Any]:
    """The result's dict without its numbers (checked against oracles separately)."""
    out = result.to_dict()
    for key in ("estimate", "ci", "p_support", "p_refute", *drop):
        out.pop(key)
    return out


def binom_cdf(k: int, n: int) -> Fraction:
    """P(Bin(n, 1/2) <= k), exactly."""
    return Fraction(sum(math.comb(n, j) for j in range(0, k + 1)), 2 ** n)


def order_ci(x: list[float], level: float) -> tuple[int, float, float, float]:
    """(k, low, high, achieved level) of the order-statistic CI of the median, by hand."""
    xs, n = sorted(x), len(x)
    alpha = 1 - Fraction(level)
    k = max([j for j in range(1, n + 1) if binom_cdf(j - 1, n) <= alpha / 2], default=0)
    if k == 0:
        return 0, -math.inf, math.inf, 1.0
    return k, xs[k - 1], xs[n - k], float(1 - 2 * binom_cdf(k - 1, n))


def bootstrap_t(x: Any, level: float, n_boot: int,
                seed: int) -> tuple[tuple[float, float], Any, int]:
    """The bootstrap-t CI of the mean by hand, resample by resample (drawn with
    ``default_rng(seed).integers(0, n, (n_boot, n))``): t* = (m* - m) / se*, a resample with
    se* = 0 giving +/-inf (dropped when m* = m), the CI m - q_hi se .. m - q_lo se with
    inverted-CDF quantiles. Returns (CI, shares, resamples dropped): shares(b) gives the shares
    of t* below, at and above (m - b) / se."""
    x = np.asarray(x, dtype=float)
    n = x.size
    m, se = x.mean(), x.std(ddof=1) / math.sqrt(n)
    ts = []
    for row in np.random.default_rng(seed).integers(0, n, size=(n_boot, n)):
        r = x[row]
        mb, sb = r.mean(), r.std(ddof=1) / math.sqrt(n)
        if sb > 0:
            ts.append((mb - m) / sb)
        elif mb != m:
            ts.append(math.copysign(math.inf, mb - m))
    ts_sorted = sorted(ts)
    a = 1 - level
    q_lo = ts_sorted[math.ceil(a / 2 * len(ts)) - 1]
    q_hi = ts_sorted[math.ceil((1 - a / 2) * len(ts)) - 1]

    def shares(boundary: float) -> tuple[float, float, float]:
        c = (m - boundary) / se
        return (sum(t < c for t in ts) / len(ts), sum(t == c for t in ts) / len(ts),
                sum(t > c for t in ts) / len(ts))

    return (m - q_hi * se, m - q_lo * se), shares, n_boot - len(ts)


def region_p(shares: Any, lower: float, upper: float) -> tuple[float, float]:
    """(p_support, p_refute) of a bootstrap-t against [lower, upper]: the share of t* beyond
    (m - b) / se on the side that moves the CI's end past b."""
    below_lo, at_lo, above_lo = shares(lower)
    below_hi, at_hi, above_hi = shares(upper)
    return max(above_lo, below_hi), min(below_lo + at_lo, at_hi + above_hi)


def coherent(result: CriterionResult) -> bool:
    """Whether the one-sided p's against θ decide the verdict the CI decided."""
    alpha = (1 - result.ci_level) / 2
    return verdict_from_p(result.p_support, result.p_refute, alpha) == result.verdict


def approx(x: float) -> Any:
    return pytest.approx(x, rel=1e-9, abs=1e-12)


def km_tail_p(times: list[float], observed: list[int]) -> list[float]:
    """norm.sf(|r|) at each event time, r the cloglog z-statistic of S(t) = 1/2 with the KM
    curve and Greenwood's variance computed by hand (distinct times)."""
    t, d = np.asarray(times, float), np.asarray(observed, bool)
    order = np.argsort(t, kind="stable")
    t, d = t[order], d[order]
    s, green, out = 1.0, 0.0, []
    for i in range(t.size):
        at_risk = t.size - i
        if d[i]:
            s *= 1 - 1 / at_risk
            green += 1 / (at_risk * (at_risk - 1))
            se = s * math.sqrt(green)
            r = (math.log(-math.log(s)) - math.log(math.log(2))) / (se / (s * -math.log(s)))
            out.append(float(sps.norm.sf(abs(r))))
    return out


def table(a: ArmSample, level: float = 0.95) -> tuple[float, tuple[float, float]]:
    cols = km_columns(a, level)
    return cols["KM median"], cols[f"{level * 100:.4g}% CI"]


# ---------------------------------------------------------------- scalar_compare: the BCa CI


def test_iqm_and_statistics_hand_computed() -> None:
    b = make_arm("b", [1, 2, 3, 4, 5, 6, 7, 8])  # IQM: mean of 3..6 = 4.5
    t = make_arm("t", [2, 4, 6, 8, 10, 12, 14, 16])  # IQM 9
    assert scalar(b, t, statistic="iqm", direction="greater").estimate == pytest.approx(2)
    res = scalar(b, t, statistic="median", effect="difference", min_effect=1)
    assert res.estimate == pytest.approx(9 - 4.5)
    assert res.arms[0].columns["median"] == 4.5


def test_scalar_bca_matches_scipy() -> None:
    b, t = lognormal_arm("b", 1000, seed=4), lognormal_arm("t", 600, seed=5)
    res = scalar(b, t, statistic="mean", n_boot=999, bootstrap_seed=7, paired=False)

    def ratio(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.mean(y, axis=axis) / np.mean(x, axis=axis)

    # Hesterberg's expanded level for n = 20 seeds per arm, computed here by hand
    n = 20
    level = 1 - 2 * sps.norm.cdf(-math.sqrt(n / (n - 1)) * sps.t.ppf(0.975, n - 1))
    assert 0.965 < level < 0.97  # z = 1.026 * 2.093 = 2.147
    ref = sps.bootstrap((b.values, t.values), ratio, n_resamples=999, method="BCa",
                        paired=False, vectorized=True, rng=np.random.default_rng(7),
                        confidence_level=level)
    assert res.ci == pytest.approx(tuple(ref.confidence_interval), rel=1e-12)
    assert res.details["bootstrap_level"] == pytest.approx(level, rel=1e-12)
    assert res.estimate == pytest.approx(t.values.mean() / b.values.mean())
    assert res.details["ci_method"] == "BCa" and res.p_value is None


def test_scalar_median_bca_is_not_expanded() -> None:
    b, t = lognormal_arm("b", 1000, n=12, seed=4), lognormal_arm("t", 600, n=9, seed=5)
    res = scalar(b, t, statistic="median", n_boot=999, bootstrap_seed=7, paired=False)

    def ratio(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.median(y, axis=axis) / np.median(x, axis=axis)

    ref = sps.bootstrap((b.values, t.values), ratio, n_resamples=999, method="BCa",
                        paired=False, vectorized=True, rng=np.random.default_rng(7))
    assert res.ci == pytest.approx(tuple(ref.confidence_interval), rel=1e-12)
    assert "bootstrap_level" not in res.details


def test_scalar_iqm_expanded_level_uses_smallest_arm() -> None:
    b, t = lognormal_arm("b", 1000, n=12, seed=4), lognormal_arm("t", 600, n=9, seed=5)
    res = scalar(b, t, statistic="iqm", n_boot=999, bootstrap_seed=7, paired=False)

    def ratio(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
        return sps.trim_mean(y, 0.25, axis=axis) / sps.trim_mean(x, 0.25, axis=axis)

    n = 9  # the smaller arm
    level = 1 - 2 * sps.norm.cdf(-math.sqrt(n / (n - 1)) * sps.t.ppf(0.975, n - 1))
    ref = sps.bootstrap((b.values, t.values), ratio, n_resamples=999, method="BCa",
                        paired=False, vectorized=True, rng=np.random.default_rng(7),
                        confidence_level=level)
    assert res.ci == pytest.approx(tuple(ref.confidence_interval), rel=1e-12)
    assert res.details["bootstrap_level"] == pytest.approx(level, rel=1e-12)


def test_scalar_degenerate_falls_back_to_percentile() -> None:
    """The two-sample BCa is undefined when every value is equal: the percentile CI of the same
    resamples stands in (the paired median's order-statistic CI needs no fallback)."""
    res = scalar(make_arm("b", [100] * 5), make_arm("t", [100] * 5), paired=False)
    assert res.details["ci_method"] == "percentile"
    assert "all values equal" in res.details["bca_fallback_reason"]
    # the CI [1, 1] would refute; a single value is no interval, so nothing is decided
    assert res.ci == (-math.inf, math.inf) and res.verdict == Verdict.INCONCLUSIVE
    assert res.details["ci_computed"] == [1.0, 1.0]
    assert res.details["verdict_if_interval_held"] == "REFUTED"
    assert "interval method does not hold" in res.reason
    # paired, the median of 5 per-pair ratios has no order-statistic CI at 95% (the sign
    # test's smallest two-sided p with 5 pairs is 1/16): unbounded, INCONCLUSIVE
    paired = scalar(make_arm("b", [100] * 5), make_arm("t", [100] * 5))
    assert paired.ci == (0.0, math.inf) and paired.verdict == Verdict.INCONCLUSIVE
    assert paired.details["ci_method"].startswith("order statistics")


@pytest.mark.parametrize(("t_median", "expected"), [
    (500, Verdict.SUPPORTED), (1200, Verdict.REFUTED), (800, Verdict.INCONCLUSIVE)])
def test_scalar_verdicts(t_median: float, expected: Verdict) -> None:
    res = scalar(lognormal_arm("b", 1000, seed=8, sigma=0.2),
              lognormal_arm("t", t_median, seed=9, sigma=0.2), statistic="iqm")
    assert res.verdict == expected, res.reason


def test_scalar_censoring() -> None:
    budget = 1500.0
    b = make_arm("b", [budget] * 10, [False] * 10)  # never reaches the threshold
    t = lognormal_arm("t", 300, n=10, seed=10)
    res = scalar(b, t)  # baseline's lower bounds work against "less": the verdict stands
    assert res.verdict == Verdict.SUPPORTED
    assert res.details["censored_seeds"] == {"b": 10, "t": 0}
    assert "lower bound" in res.details["censoring"]
    refused = scalar(b, t, censored="refuse")
    assert refused.verdict == Verdict.INCONCLUSIVE and "10 of 10 seeds censored" in refused.reason
    both = scalar(b, make_arm("t", [budget] * 10, [False] * 10))  # nothing known: no REFUTED
    assert both.verdict == Verdict.INCONCLUSIVE and "every seed of both arms is censored" in \
        both.reason
    # treated half censored: its mean is a lower bound that favours "less"
    half = make_arm("t", [100] * 5 + [budget] * 5, [True] * 5 + [False] * 5)
    slow = lognormal_arm("b", 5000, n=10, seed=11)
    assert scalar(slow, half, statistic="mean").verdict == Verdict.INCONCLUSIVE
    one = make_arm("t", [100] * 9 + [budget], [True] * 9 + [False])  # median still determined
    assert scalar(slow, one, statistic="median").verdict == Verdict.SUPPORTED


# ---------------------------------------------------------------- scalar_compare unpaired


def test_unpaired_ratio_of_means_withheld_by_the_lower_bound_rule() -> None:
    """``paired: false``, a ratio of means of times with a censored seed in each arm: the user
    reads the label "ratio of means (t / b)", the region "ratio >= 1.2", the BCa test, a CI
    equal to scipy's BCa at Hesterberg's expanded level, and a REFUTED that the censored
    treated seed withholds (its mean is only a lower bound); neither p against θ is valid."""
    b = make_arm("b", [700, 750, 800, 850, 900, 950, 1000], [1, 1, 1, 1, 1, 1, 0])
    t = make_arm("t", [300, 320, 340, 360, 380, 400, 1000], [1, 1, 1, 1, 1, 1, 0])
    result = compare(b, t, direction="greater", statistic="mean", paired=False, n_boot=200)

    level = hesterberg_level(0.95, 7)
    oracle = sps.bootstrap((b.values, t.values),
                           lambda x, y, axis=-1: np.mean(y, axis=axis) / np.mean(x, axis=axis),
                           n_resamples=200, confidence_level=level, method="BCa", paired=False,
                           vectorized=True, rng=np.random.default_rng(0)).confidence_interval
    assert result.estimate == pytest.approx(3100 / 7 / 850, rel=1e-12)
    assert result.ci == pytest.approx((oracle.low, oracle.high), rel=1e-9)
    assert result.ci[1] < 1.2  # the CI alone would refute
    assert result.p_support is None and result.p_refute is None
    details = words(result)["details"]
    assert details.pop("bootstrap_level") == pytest.approx(level, rel=1e-12)
    for key in ("p_support", "p_refute"):
        details.pop(key)
    assert details == {
        "censoring": AS_BUDGET, "censored_policy": "as_budget",
        "censored_seeds": {"b": 1, "t": 1}, "statistic": "mean", "analysis": "unpaired",
        "paired": False, "n_pairs": 7, "broken_pairs": {"b": 0, "t": 0},
        "within_pair_correlation": 1.0, "within_pair_correlation_method": SPEARMAN_PAIRS,
        "bootstrap": UNPAIRED_BOOTSTRAP, "n_boot": 200, "bootstrap_seed": 0,
        "ci_method": "BCa", "bootstrap_level_rule": LEVEL_RULE, "p_method": P_METHOD,
        "withheld_by_lower_bound_rule": ["t"]}
    assert words(result, ("details",)) == {
        "criterion": "scalar_compare", "effect_label": "ratio of means (t / b)",
        "ci_level": 0.95, "p_value": None, "test": BCA_TEST, "threshold": 1.2,
        "claimed_region": "ratio >= 1.2", "verdict": "INCONCLUSIVE",
        "reason": Has("95% CI of the ratio of means (t / b), [0.39, 0.872]",
                      "wholly below 1.2, excluding the claimed region bounded by 1.2",
                      "(point estimate 0.521), which would refute the claim",
                      "arm 't' has 1 censored seed(s) entered at the budget",
                      "leaves its mean undetermined, so no verdict is drawn."),
        "arms": [
            {"name": "b", "n": 7, "excluded": {},
             "columns": {"seeds": 7, "mean": 850.0, "censored (as budget)": 1,
                         "determined": "no"}},
            {"name": "t", "n": 7, "excluded": {},
             "columns": {"seeds": 7, "mean": 3100 / 7, "censored (as budget)": 1,
                         "determined": "no"}}],
        "p_value_label": "no-effect test p"}


def test_unpaired_difference_of_medians_when_the_seed_sets_differ() -> None:
    """Arms of a value metric with no seed number in common fall back to the unpaired
    analysis, which the test string says with its reason; the label is "difference of medians
    (t - b)", the region "difference <= -1", the CI scipy's BCa (no expansion for a median),
    the reason one sentence ending in one full stop, and the p's decide the CI's verdict."""
    b = make_arm("b", [3.0, 3.5, 4.0, 4.5, 5.0, 5.5, 6.0, 6.5], kind="value",
                 seeds=tuple(range(8)))
    t = make_arm("t", [0.5, 0.75, 1.0, 1.25, 1.75, 2.0, 2.25, 2.5], kind="value",
                 seeds=tuple(range(8, 16)))
    result = compare(b, t, direction="less", effect="difference", min_effect=1.0, n_boot=200)

    oracle = sps.bootstrap((b.values, t.values),
                           lambda x, y, axis=-1: np.median(y, axis=axis) - np.median(x, axis=axis),
                           n_resamples=200, confidence_level=0.95, method="BCa", paired=False,
                           vectorized=True, rng=np.random.default_rng(0)).confidence_interval
    assert result.estimate == pytest.approx(1.5 - 4.75, rel=1e-12)
    assert result.ci == pytest.approx((oracle.low, oracle.high), rel=1e-9)
    assert result.verdict == Verdict.SUPPORTED and oracle.high <= -1
    assert result.p_support is not None and coherent(result)
    why = ("the arms share 0 seed number(s) (different seed sets), fewer than the 2 pairs a "
           "paired analysis needs")
    out = words(result, ("details",))
    assert out == {
        "criterion": "scalar_compare", "effect_label": "difference of medians (t - b)",
        "ci_level": 0.95, "p_value": None, "test": f"{BCA_TEST}; analysis: unpaired ({why})",
        "threshold": -1.0, "claimed_region": "difference <= -1", "verdict": "SUPPORTED",
        "reason": Has(f"95% CI of the difference of medians (t - b), "
                      f"[{oracle.low:.3g}, {oracle.high:.3g}]",
                      "wholly at or below -1, the boundary of the claimed effect",
                      "(point estimate -3.25)."),
        "arms": [
            {"name": "b", "n": 8, "excluded": {}, "columns": {"seeds": 8, "median": 4.75}},
            {"name": "t", "n": 8, "excluded": {}, "columns": {"seeds": 8, "median": 1.5}}],
        "p_value_label": "no-effect test p"}
    assert result.details["censoring"] == NOT_CENSORED
    assert result.details["statistic"] == "median"
    assert result.details["unpaired_reason"] == why
    assert "withheld_by_lower_bound_rule" not in result.details


# ---------------------------------------------------------------- scalar_compare paired


def test_paired_median_of_ratios_withheld_when_a_censored_pair_could_rise() -> None:
    """Paired ratio of medians of times, the treated seed 5 censored at its budget while its
    baseline seed took 4000 steps: that pair's ratio (0.25, the smallest) can only be larger, so
    the CI [0.25, 0.525] that would support "ratio <= 0.8" is withheld and p_support is None,
    although treated's own median is determined (the per-pair effects decide, not the arm)."""
    b = make_arm("b", [400, 500, 600, 700, 800, 4000])
    t = make_arm("t", [200, 260, 290, 350, 420, 1000], [1, 1, 1, 1, 1, 0])
    result = compare(b, t, direction="less")
    ratios = [200 / 400, 260 / 500, 290 / 600, 350 / 700, 420 / 800, 1000 / 4000]
    k, low, high, achieved = order_ci(ratios, 0.95)
    assert result.estimate == pytest.approx(0.5, rel=1e-12)
    assert result.ci == pytest.approx((low, high), rel=1e-12) and high <= 0.8
    assert result.verdict == Verdict.INCONCLUSIVE
    assert result.details["withheld_by_lower_bound_rule"] == ["t"]
    assert result.p_support is None
    assert result.p_refute == pytest.approx(1.0)
    assert result.effect_label == "median of per-seed ratios (t / b)"
    assert result.claimed_region == "ratio <= 0.8"
    assert result.details["ci_method"] == f"{ORDER_METHOD}, of the per-pair effects (log ratios)"
    assert (result.details["order_statistic_k"], result.details["achieved_level"]) == (k, achieved)


def test_paired_median_of_differences_of_a_value_metric() -> None:
    """Paired difference of medians of a value metric, direction greater: the label "median of
    per-seed differences (t - b)", the region "difference >= 1", the exact order-statistic CI of
    the differences, p_support the sign test's P(Bin(6, 1/2) <= 0) = 1/64."""
    b = make_arm("b", [1.0, 2.5, -0.5, 3.0, 0.0, 1.5], kind="value")
    t = make_arm("t", [3.5, 4.0, 2.0, 6.5, 2.5, 3.0], kind="value")
    result = compare(b, t, direction="greater", effect="difference", min_effect=1.0)
    d = [2.5, 1.5, 2.5, 3.5, 2.5, 1.5]
    k, low, high, achieved = order_ci(d, 0.95)
    assert (result.estimate, result.ci) == (2.5, (low, high))
    assert (result.p_support, result.p_refute) == (1 / 64, 1.0)
    details = dict(result.details)
    details.pop("within_pair_correlation")
    assert details == {
        "censoring": NOT_CENSORED, "statistic": "median",
        "analysis": "paired (6 pairs, within-pair correlation 0.943)", "paired": True,
        "n_pairs": 6, "broken_pairs": {"b": 0, "t": 0},
        "within_pair_correlation_method": SPEARMAN_PAIRS,
        "ci_method": f"{ORDER_METHOD}, of the per-pair effects", "order_statistic_k": k,
        "achieved_level": achieved, "p_support": 1 / 64, "p_refute": 1.0}
    assert words(result, ("details", "test", "arms")) == {
        "criterion": "scalar_compare", "effect_label": "median of per-seed differences (t - b)",
        "ci_level": 0.95, "p_value": None, "threshold": 1.0,
        "claimed_region": "difference >= 1", "verdict": "SUPPORTED",
        "reason": Has("95% CI of the median of per-seed differences (t - b), [1.5, 3.5]",
                      "wholly at or above 1, the boundary of the claimed effect",
                      "(point estimate 2.5)."),
        "p_value_label": "no-effect test p"}


def test_paired_median_p_counts_the_differences_exactly_at_theta_as_inside() -> None:
    """Differences [-1, -1, -2, -3, -4, -5] against θ = -1 (less): the CI [-5, -1] ends on the
    boundary, which belongs to the region: SUPPORTED; the sign test counts the two differences
    at θ as inside, so p_support = P(Bin(6, 1/2) <= #(d > θ) = 0) = 1/64 and p_refute =
    P(Bin(6, 1/2) <= #(d <= θ) = 6) = 1."""
    b = make_arm("b", [5.0, 6.0, 7.0, 8.0, 9.0, 10.0], kind="value")
    t = make_arm("t", [4.0, 5.0, 5.0, 5.0, 5.0, 5.0], kind="value")
    result = compare(b, t, direction="less", effect="difference", min_effect=1.0)
    d = [-1.0, -1.0, -2.0, -3.0, -4.0, -5.0]
    _, low, high, _ = order_ci(d, 0.95)
    assert (result.ci, result.verdict) == ((low, high), Verdict.SUPPORTED) and high == -1.0
    assert result.p_support == float(binom_cdf(0, 6)) == 1 / 64
    assert result.p_refute == float(binom_cdf(6, 6)) == 1.0
    assert coherent(result)


def test_paired_geometric_mean_of_ratios_is_the_bootstrap_t_of_log_ratios() -> None:
    """Paired ratio of means: the label "geometric mean of per-seed ratios (t / b)", the CI the
    bootstrap-t of the log ratios (by hand here) back-transformed, its resampling count and
    seed in the details, and the p's the shares of t* on either side of (m - log 0.8) / se."""
    b = make_arm("b", [400, 500, 600, 700, 800, 900])
    t = make_arm("t", [220, 240, 330, 380, 400, 470])
    result = compare(b, t, direction="less", statistic="mean", n_boot=200, bootstrap_seed=3)
    d = np.log(t.values / b.values)
    (low, high), shares, dropped = bootstrap_t(d, 0.95, 200, 3)
    below = shares(math.log(0.8))[0]
    assert result.estimate == pytest.approx(math.exp(d.mean()), rel=1e-12)
    assert result.ci == pytest.approx((math.exp(low), math.exp(high)), rel=1e-12)
    assert result.p_support == pytest.approx(below, abs=1e-12)
    assert result.p_refute == pytest.approx(1 - below, abs=1e-12)
    assert result.effect_label == "geometric mean of per-seed ratios (t / b)"
    assert result.claimed_region == "ratio <= 0.8"
    assert {k: result.details[k] for k in ("ci_method", "n_boot", "bootstrap_seed",
                                           "n_dropped_resamples")} == {
        "ci_method": f"{BOOT_T_METHOD}, of the per-pair effects (log ratios)", "n_boot": 200,
        "bootstrap_seed": 3, "n_dropped_resamples": dropped}


@pytest.mark.parametrize("direction", ["less", "greater"])
def test_paired_mean_of_equal_differences_on_the_boundary(direction: str) -> None:
    """Every per-pair difference equals θ (-1 for less, +1 for greater): the computed CI is that
    single value, on the boundary, which belongs to the claimed region (p_support 0, p_refute
    1); a single value is no interval, so the verdict is INCONCLUSIVE and nothing decides."""
    step = -1.0 if direction == "less" else 1.0
    b = make_arm("b", [1.0, 2.0, 3.0, 4.0], kind="value")
    t = make_arm("t", [1.0 + step, 2.0 + step, 3.0 + step, 4.0 + step], kind="value")
    result = compare(b, t, direction=direction, effect="difference", statistic="mean",
                     min_effect=1.0, n_boot=100)
    assert (result.estimate, result.verdict) == (step, Verdict.INCONCLUSIVE)
    assert result.details["ci_computed"] == [step, step]
    assert result.details["verdict_if_interval_held"] == "SUPPORTED"
    assert result.details["p_computed"] == [0.0, 1.0]
    assert (result.p_support, result.p_refute) == (None, None)
    assert result.details["degenerate"] == DEGENERATE
    assert result.details["ci_method"] == f"{BOOT_T_METHOD}, of the per-pair effects"
    assert result.effect_label == "mean of per-seed differences (t - b)"
    sign = "<=" if direction == "less" else ">="
    assert result.claimed_region == f"difference {sign} {step:g}"


def test_paired_mean_p_counts_the_resamples_exactly_at_theta() -> None:
    """Differences [0, 1, 2] against θ = 1 (greater): every resample that is a permutation of
    the pairs has t* = 0 exactly, which is (m - θ) / se; such a resample puts the CI's low end
    exactly at θ, inside the region, so p_support counts only t* > 0 and p_refute t* <= 0 --
    and no numpy warning is printed for the resamples with zero spread."""
    b = make_arm("b", [1.0, 2.0, 3.0], kind="value")
    t = make_arm("t", [1.0, 3.0, 5.0], kind="value")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = compare(b, t, direction="greater", effect="difference", statistic="mean",
                         min_effect=1.0, n_boot=200)
    (low, high), shares, dropped = bootstrap_t([0.0, 1.0, 2.0], 0.95, 200, 0)
    _, at, above = shares(1.0)
    assert at > 0.1  # the case this pins: many t* exactly at the boundary
    assert result.details["ci_computed"] == pytest.approx([low, high], rel=1e-12)
    p_support, p_refute = result.details["p_computed"]
    assert p_support == pytest.approx(above, abs=1e-12)
    assert p_refute == pytest.approx(1 - above, abs=1e-12)
    assert result.details["n_dropped_resamples"] == dropped > 0
    # 3 seeds: a ninth of the resamples have no spread, more than α/2: the interval fails
    assert result.details["no_spread_resamples"] > 0.025 * 200
    assert result.verdict == Verdict.INCONCLUSIVE and result.p_support is None


@pytest.mark.parametrize(("effect", "label", "how"), [
    ("ratio", "geometric iqm of per-seed ratios (t / b)", ", on log ratios"),
    ("difference", "iqm of per-seed differences (t - b)", ""),
])
def test_paired_iqm_is_the_expanded_bca_of_the_per_pair_effects(effect: str, label: str,
                                                                  how: str) -> None:
    """Paired IQM: the label names the (geometric) iqm of per-seed ratios or differences; the
    CI is scipy's one-sample BCa of the per-pair effects (log ratios for a ratio) at
    Hesterberg's expanded level for 8 pairs, and the details describe that resampling."""
    b = make_arm("b", [400, 520, 610, 700, 830, 900, 950, 1010])
    t = make_arm("t", [300, 380, 500, 500, 560, 610, 800, 700])
    min_effect = 0.2 if effect == "ratio" else 100.0
    result = compare(b, t, direction="less", statistic="iqm", effect=effect,
                     min_effect=min_effect, n_boot=200)
    d = np.log(t.values / b.values) if effect == "ratio" else t.values - b.values
    back = np.exp if effect == "ratio" else (lambda x: x)
    level = hesterberg_level(0.95, 8)
    oracle = sps.bootstrap((d,), lambda x, axis=-1: sps.trim_mean(x, 0.25, axis=axis),
                           n_resamples=200, confidence_level=level, method="BCa",
                           vectorized=True, rng=np.random.default_rng(0)).confidence_interval
    assert result.estimate == pytest.approx(back(sps.trim_mean(d, 0.25)), rel=1e-12)
    assert result.ci == pytest.approx((back(oracle.low), back(oracle.high)), rel=1e-9)
    assert result.effect_label == label
    assert result.test == (f"{BCA_TEST}; analysis: paired (8 pairs, within-pair correlation "
                           f"{sps.spearmanr(b.values, t.values).statistic:.3g})")
    assert result.details["bootstrap"] == ("scipy.stats.bootstrap of the per-pair effects (seed "
                                           f"pairs resampled jointly){how}")
    assert result.details["bootstrap_level"] == pytest.approx(level, rel=1e-12)
    assert result.details["ci_method"] == "BCa"


@pytest.mark.parametrize(("statistic", "method", "ci_method"), [
    ("median", "exact order-statistic CI of the median of the per-pair effects (no test)",
     ORDER_METHOD),
    ("mean", "bootstrap-t CI of the mean of the per-pair effects (no test)", BOOT_T_METHOD),
])
def test_the_paired_test_line_names_the_ci_that_is_computed(statistic: str, method: str,
                                                            ci_method: str) -> None:
    """Paired median and mean are one-sample problems with their own CIs (order statistics,
    bootstrap-t), not the BCa bootstrap: the test line a reader sees says which."""
    b = make_arm("b", [1, 2.5, -0.5, 3, 0, 1.5], kind="value")
    t = make_arm("t", [3.5, 4, 2, 6.5, 2.5, 3], kind="value")
    result = compare(b, t, direction="greater", statistic=statistic, effect="difference",
                     min_effect=1.0, n_boot=200)
    rho = sps.spearmanr(b.values, t.values).statistic
    assert result.test == f"{method}; analysis: paired (6 pairs, within-pair correlation {rho:.3g})"
    assert result.details["ci_method"] == f"{ci_method}, of the per-pair effects"


def test_a_paired_withheld_verdict_names_the_per_pair_statistic() -> None:
    """Paired: what a censored seed leaves undetermined is the median of the per-pair effects
    (the treated arm's own median is determined here), and the reason says so."""
    b = make_arm("b", [400, 500, 600, 700, 800, 4000])
    t = make_arm("t", [200, 260, 290, 350, 420, 1000], [1, 1, 1, 1, 1, 0])
    result = compare(b, t, direction="less", effect="ratio", min_effect=0.2)
    assert result.verdict == Verdict.INCONCLUSIVE
    assert result.reason == Has("which would support the claim",
                                "arm 't' has 1 censored seed(s) entered at the budget",
                                "its median of the per-pair effects undetermined",
                                "so no verdict is drawn.")


# ---------------------------------------------------------------- the order-statistic CI's k


@pytest.mark.parametrize(("n", "level"), [
    (10, 1 - 22 / 1024),  # alpha/2 = P(Bin(10, 1/2) <= 1) exactly: k = 2
    (5, 1 - 2 / 32),      # alpha/2 = P(Bin(5, 1/2) <= 0) exactly: k = 1
    (37, 0.25),           # a low level with many pairs: k = 18
    (2, 0.95),            # too few pairs for the level: unbounded, k = 0
])
def test_order_statistic_ci_takes_the_largest_k_with_tail_at_most_alpha_half(
        n: int, level: float) -> None:
    """The median's CI is [x_(k), x_(n+1-k)] with the largest k such that P(Bin(n, 1/2) <=
    k - 1) <= alpha/2 -- a tail exactly equal to alpha/2 counts -- and its achieved level;
    with two pairs at 95% no k qualifies and the CI is unbounded (achieved level 1), which
    still gives a verdict sentence (two pairs are enough to be judged)."""
    b = make_arm("b", [0.0] * n, kind="value")
    t = make_arm("t", [float((7 * i) % n + i / 100) for i in range(n)], kind="value")
    result = compare(b, t, direction="greater", effect="difference", min_effect=1.0,
                     ci_level=level)
    k, low, high, achieved = order_ci(list(t.values), level)
    assert result.ci == (low, high)
    assert result.details["order_statistic_k"] == k
    assert result.details["achieved_level"] == pytest.approx(achieved, abs=1e-12)
    assert result.reason.startswith(f"The {level * 100:.4g}% CI of the median of per-seed "
                                    "differences (t - b), ")
    assert {10: 2, 5: 1, 37: 18, 2: 0}[n] == k


# ---------------------------------------------------------------- scalar_compare: lower bounds


B = 3000.0  # the budget of the scalar_compare arms
BASE = make_arm("base", [1000.0, 1050, 1100, 1150, 1200, 1250, 1300, 1350])
BASE_ROW = {"seeds": 8, "median": 1175.0, "censored (as budget)": 0, "determined": "yes"}
# 5 of 8 treated seeds censored at the budget: the treated median (3000) is only a lower bound
HIGH = make_arm("treat", [2600.0, 2700, 2800, B, B, B, B, B], [1, 1, 1, 0, 0, 0, 0, 0])
HIGH_ROW = {"seeds": 8, "median": 3000.0, "censored (as budget)": 5, "determined": "no"}


def test_unpaired_censored_treated_arm_withholds_only_the_side_it_favours() -> None:
    """Unpaired, median ratio, treated mostly censored (its median undetermined). A censored
    treated value can only have pulled the ratio *down*: with ``less`` it favours support, so
    no p_support is given while the REFUTED verdict (ratio ~2.55 > 0.8) stands with its p; with
    ``greater`` it favours refutation, so no p_refute while SUPPORTED (>= 1.2) stands. The
    table shows the censored count and whether each median is determined."""
    less = compare(BASE, HIGH, statistic="median", direction="less", paired=False, n_boot=200)
    greater = compare(BASE, HIGH, statistic="median", direction="greater", paired=False,
                      n_boot=200)
    for res in (less, greater):
        assert res.estimate == approx(3000 / 1175)
        assert [a.columns for a in res.arms] == [BASE_ROW, HIGH_ROW]
        assert res.details["withheld_by_lower_bound_rule"] == []
    assert less.verdict == Verdict.REFUTED and less.claimed_region == "ratio <= 0.8"
    assert less.p_support is None and less.p_refute is not None
    assert greater.verdict == Verdict.SUPPORTED and greater.claimed_region == "ratio >= 1.2"
    assert greater.p_support is not None and greater.p_refute is None


def test_unpaired_support_withheld_by_a_seed_censored_early() -> None:
    """Unpaired, ``less``: treated is ~10x faster but one of its seeds was censored at 105,
    below observed values, so its median is undetermined and the SUPPORTED verdict is withheld
    with a reason naming the arm; p_support is absent."""
    early = make_arm("treat", [100.0, 110, 120, 130, 105, 140, 150, 160], [1, 1, 1, 1, 0, 1, 1, 1])
    res = compare(BASE, early, statistic="median", direction="less", paired=False, n_boot=200)
    assert res.verdict == Verdict.INCONCLUSIVE and res.ci[1] <= 0.8
    assert res.reason.startswith("The 95% CI of the ratio of medians (treat / base), [")
    assert res.reason == Has("wholly at or below 0.8, the boundary of the claimed effect",
                             "(point estimate 0.106), which would support the claim",
                             "arm 'treat' has 1 censored seed(s) entered at the budget",
                             "leaves its median undetermined, so no verdict is drawn.")
    assert res.details["withheld_by_lower_bound_rule"] == ["treat"]
    assert res.p_support is None and res.p_refute is not None
    assert res.arms[1].columns == {"seeds": 8, "median": 125.0, "censored (as budget)": 1,
                                   "determined": "no"}


def test_unpaired_support_stands_when_the_censored_median_is_determined() -> None:
    """Unpaired, ``less``: one treated seed censored at the budget 200, above every observed
    value, with 8 seeds leaves the median determined: SUPPORTED stands, both p's are given,
    and the table says "determined: yes" despite the censored seed."""
    det = make_arm("treat", [100.0, 110, 120, 130, 140, 150, 160, 200], [1, 1, 1, 1, 1, 1, 1, 0])
    res = compare(BASE, det, statistic="median", direction="less", paired=False, n_boot=200)
    assert res.verdict == Verdict.SUPPORTED and res.estimate == approx(135 / 1175)
    assert res.details["withheld_by_lower_bound_rule"] == []
    assert res.p_support is not None and res.p_refute is not None
    assert [a.columns for a in res.arms] == [
        BASE_ROW, {"seeds": 8, "median": 135.0, "censored (as budget)": 1, "determined": "yes"}]


def paired_median_ci(d: list[float]) -> tuple[float, float]:
    """The 95% order-statistic CI of the median of 8 per-pair effects: k = 1 (P(Bin(8, 1/2) <=
    0) = 1/256 <= 0.025 < P(<= 1) = 9/256), so [min, max]."""
    assert float(binom_cdf(0, 8)) <= 0.025 < float(binom_cdf(1, 8))
    return min(d), max(d)


def test_paired_censored_treated_arm_withholds_p_refute_for_greater() -> None:
    """Paired median ratio, ``greater``: pairs with a censored treated value have per-pair
    ratios that can only be larger than entered, which favours refutation: p_refute is absent,
    SUPPORTED stands with the exact order-statistic CI and the sign-test p_support."""
    ratios = [h / b for h, b in zip(HIGH.values, BASE.values, strict=True)]
    low, high = paired_median_ci(ratios)
    res = compare(BASE, HIGH, statistic="median", direction="greater")
    srt = sorted(ratios)
    assert res.estimate == approx(math.sqrt(srt[3] * srt[4]))  # exp of the median log ratio
    assert res.ci == (approx(low), approx(high))
    assert res.verdict == Verdict.SUPPORTED and res.p_refute is None
    assert res.p_support == approx(float(binom_cdf(0, 8)))  # no ratio below 1.2
    assert [a.columns for a in res.arms] == [BASE_ROW, HIGH_ROW]


def test_paired_censored_baseline_value_keeps_refutation() -> None:
    """Paired median ratio, ``less``: one baseline seed censored at the budget 200. That pair's
    ratio can only be smaller than entered (here the smallest, 2.5), which favours support, not
    refutation: the REFUTED verdict (every ratio >= 2.5 > 0.8) stands with its sign-test p."""
    base = make_arm("base", [100.0, 110, 120, 130, 140, 150, 160, 200], [1, 1, 1, 1, 1, 1, 1, 0])
    treat = make_arm("treat", [300.0, 330, 360, 390, 420, 450, 480, 500])
    res = compare(base, treat, statistic="median", direction="less")
    assert res.ci == (approx(2.5), approx(3.0)) and res.estimate == approx(3.0)
    assert res.verdict == Verdict.REFUTED
    assert res.details["withheld_by_lower_bound_rule"] == []
    assert res.p_refute == approx(float(binom_cdf(0, 8))) and res.p_support is not None
    assert res.arms[0].columns == {"seeds": 8, "median": 135.0, "censored (as budget)": 1,
                                   "determined": "yes"}


def test_paired_difference_judges_determinedness_on_differences() -> None:
    """Paired median difference, ``less`` (claim: treated - base <= -10). The censored treated
    pair (40 -> 120 at the budget) has the largest difference (80) but not the largest ratio
    (3 < 50/10), so for a difference the median of the per-pair effects is determined despite
    it: p_support is given, and REFUTED stands on the exact CI [40, 80] of the differences."""
    base = make_arm("base", [10.0, 20, 30, 40, 50, 60, 70, 40])
    treat = make_arm("treat", [50.0, 65, 70, 85, 90, 105, 110, 120], [1, 1, 1, 1, 1, 1, 1, 0])
    d = [t - b for t, b in zip(treat.values, base.values, strict=True)]
    res = compare(base, treat, statistic="median", direction="less", effect="difference",
                  min_effect=10)
    assert res.estimate == float(np.median(d)) == 42.5
    assert res.ci == paired_median_ci(d) == (40.0, 80.0)
    assert res.verdict == Verdict.REFUTED and res.claimed_region == "difference <= -10"
    assert res.p_support == 1.0 and res.p_refute == approx(float(binom_cdf(0, 8)))
    assert res.arms[1].columns == {"seeds": 8, "median": 87.5, "censored (as budget)": 1,
                                   "determined": "yes"}


# ---------------------------------------------------------------- scalar_compare: refusals


def test_ratio_of_a_signed_value_metric_names_every_arm_with_a_value_at_or_below_zero() -> None:
    """A ratio of a value metric with a 0 in baseline and a negative value in treated is
    refused; the message names both arms with their counts."""
    b = make_arm("b", [0.0, 2.0, 3.0, 4.0], kind="value")
    t = make_arm("t", [-1.0, 0.5, 2.0, 3.0], kind="value")
    result = compare(b, t, direction="less")
    assert result.verdict == Verdict.INCONCLUSIVE
    assert result.reason == Has("No verdict is possible",
                                "arm 'b' has 1 value(s) <= 0 and arm 't' has 1 value(s) <= 0",
                                "meaningful only when every value is > 0",
                                "(use effect: difference).")


def test_ratio_of_a_value_metric_with_values_below_one_is_judged() -> None:
    """Values in (0, 1] are positive: the ratio is judged, the estimate the median of the
    per-seed ratios."""
    b = make_arm("b", [0.5, 2.0, 3.0, 4.0], kind="value")
    t = make_arm("t", [0.25, 1.0, 1.5, 2.0], kind="value")
    result = compare(b, t, direction="less")
    assert result.estimate == pytest.approx(0.5, rel=1e-12)
    assert not result.reason.startswith("No verdict")


def test_paired_ratio_of_times_refuses_a_paired_time_of_zero() -> None:
    """A per-seed ratio of times takes logs: a paired time of 0 is refused with the counts of
    paired values <= 0 (seed 5 of baseline, without a partner, is not counted; a time of 1 is
    fine)."""
    b = make_arm("b", [0.0, 1.0, 300.0, 400.0, 500.0, 0.0])
    t = make_arm("t", [0.0, 0.0, 150.0, 200.0, 250.0])
    result = compare(b, t, direction="less")
    assert result.verdict == Verdict.INCONCLUSIVE
    assert result.reason == Has("No verdict is possible", "arm 'b' has 1 paired value(s) <= 0 "
                                "and arm 't' has 2 paired value(s) <= 0", "compares logs",
                                "(use effect: difference).")


def test_a_missing_arm_is_a_wiring_error_naming_the_criterion() -> None:
    """An arm without data raises KeyError naming the criterion and the arm."""
    with pytest.raises(KeyError, match=r"scalar_compare: no data for arm\(s\) \['t'\]"):
        run_criterion({"name": "scalar_compare", "baseline": "b", "treated": "t",
                       "direction": "less"}, make_arm("b", [1.0, 2.0]))


# ---------------------------------------------------------------- value: mean and median


def test_value_mean_hand_computed() -> None:
    a = make_arm("a", [1, 2, 3, 4, 5])
    res = value(a, target=3.0, tol=2.5, n_boot=999, bootstrap_seed=5)
    idx = np.random.default_rng(5).integers(0, 5, size=(999, 5))
    k = sum(not (np.ptp(a.values[row]) == 0 and a.values[row].mean() == 3) for row in idx)
    assert res.estimate == 3
    assert res.ci == pytest.approx(bootstrap_t([1, 2, 3, 4, 5], 0.95, 999, 5)[0], rel=1e-12)
    assert res.details["n_dropped_resamples"] == 999 - k
    assert res.details["ci_method"].startswith("bootstrap-t")
    # all values equal: the computed CI is that value, which decides nothing
    const = value(make_arm("a", [7, 7, 7]), target=7, tol=0)
    assert const.details["ci_computed"] == [7.0, 7.0] and const.verdict == Verdict.INCONCLUSIVE
    assert const.details["verdict_if_interval_held"] == "SUPPORTED"


# The bootstrap-t 95% CI of the mean of 1..5 (the criterion's default 2000 resamples, seed 0),
# computed by hand, is wider than the t interval (1.04, 4.96) with 5 seeds: it lies inside
# [0.5, 5.5] and straddles [1.5, 4.5].
@pytest.mark.parametrize(("target", "tol", "expected"), [
    (3.0, 2.5, Verdict.SUPPORTED), (3.0, 1.5, Verdict.INCONCLUSIVE),
    (10.0, 1.0, Verdict.REFUTED), (-3.0, 1.0, Verdict.REFUTED)])
def test_value_verdicts(target: float, tol: float, expected: Verdict) -> None:
    res = value(make_arm("a", [1, 2, 3, 4, 5]), target=target, tol=tol)
    hand = bootstrap_t([1, 2, 3, 4, 5], 0.95, 2000, 0)[0]
    assert res.ci == pytest.approx(hand, rel=1e-12)
    assert 0.5 < hand[0] < 1.5 and 4.5 < hand[1] < 5.5
    assert res.verdict == expected


def test_value_median_order_statistic_ci() -> None:
    a = lognormal_arm("a", 400, n=15, seed=14)
    res = value(a, target=400, tol=100, statistic="median", n_boot=800, bootstrap_seed=3)
    # n = 15: P(Bin(15, 1/2) <= 3) = 576/32768 = 0.0176 <= 0.025 < P(<= 4) = 1941/32768, so
    # k = 4: the 4th and 12th smallest values, coverage 1 - 2 * 576/32768
    xs = np.sort(a.values)
    assert res.ci == (xs[3], xs[11])
    assert res.details["order_statistic_k"] == 4
    assert res.details["achieved_level"] == pytest.approx(1 - 2 * 576 / 32768)
    assert res.estimate == np.median(a.values)
    # n = 5 at 95%: even the extremes cover only 1 - 2/32 < 0.95, so the CI is unbounded
    few = value(make_arm("a", [1, 2, 3, 4, 5]), target=3, tol=1, statistic="median")
    assert few.ci == (-math.inf, math.inf) and few.verdict == Verdict.INCONCLUSIVE
    # n = 6: 1 - 2/64 >= 0.95, so [min, max]
    six = value(make_arm("a", [6, 1, 5, 2, 4, 3]), target=3, tol=10, statistic="median")
    assert six.ci == (1.0, 6.0) and six.verdict == Verdict.SUPPORTED


def test_value_censoring() -> None:
    a = make_arm("a", [1, 2, 3, 4, 9], [True] * 4 + [False])
    assert value(a, target=3.0, tol=2.5).verdict == Verdict.INCONCLUSIVE  # refuse by default
    high = value(a, target=-10, tol=1, censored="as_budget")  # above the region: stands
    assert high.verdict == Verdict.REFUTED
    inside = value(a, target=3, tol=10, censored="as_budget")
    assert inside.verdict == Verdict.INCONCLUSIVE and "would support" in inside.reason


def test_value_median_of_a_value_metric_whole_result() -> None:
    """A signed value metric, ``statistic: median``: 9 seeds, target 0.4 +/- 0.1. The user relies
    on the median, the exact order-statistic CI [x_(2), x_(8)] (k = 2 at 95% for n = 9), the
    method named, the claimed region, the sentence of the SUPPORTED verdict, a table of seeds and
    median only (no censoring columns for a value metric) and the sign-test p's."""
    x = [0.31, 0.42, 0.38, 0.45, 0.40, 0.36, 0.44, 0.39, 0.41]
    xs = sorted(x)
    assert float(binom_cdf(1, 9)) <= 0.025 < float(binom_cdf(2, 9))  # so k = 2
    res = value(make_arm("probe", x, kind="value"), target=0.4, tol=0.1, statistic="median")
    assert res.to_dict() == {
        "criterion": "value", "effect_label": "median of probe", "estimate": 0.4,
        "ci": [xs[1], xs[7]], "ci_level": 0.95, "p_value": None, "test": MEDIAN_TEST,
        "threshold": 0.4, "claimed_region": "median within [0.3, 0.5] (0.4 +/- 0.1)",
        "verdict": "SUPPORTED",
        "reason": Has("95% CI of the median of probe, [0.36, 0.44]",
                      "wholly within the claimed region [0.3, 0.5]", "(point estimate 0.4)."),
        "arms": [{"name": "probe", "n": 9, "excluded": {},
                  "columns": {"seeds": 9, "median": 0.4}}],
        "details": {"censoring": NOT_CENSORED, "ci_method": ORDER_METHOD, "order_statistic_k": 2,
                    "achieved_level": approx(1 - 2 * float(binom_cdf(1, 9))),
                    "tolerance_region": [0.4 - 0.1, 0.4 + 0.1]},
        # inside needs "no value below 0.3" and "no value above 0.5": P(Bin(9, 1/2) <= 0) each
        "p_support": approx(float(binom_cdf(0, 9))), "p_refute": 1.0,
        "p_value_label": "no-effect test p"}


def test_value_mean_of_an_uncensored_time_metric_whole_result() -> None:
    """A time metric without censored seeds, ``statistic: mean`` (default ``censored: refuse``).
    The user relies on the mean, the bootstrap-t CI and p's (oracle from the definition), the
    method named, and a table with the censored count 0 and the mean "determined"."""
    x = [100.0, 110, 120, 130, 140, 150]
    ci, shares, _ = bootstrap_t(x, 0.95, 200, 0)
    p_support, p_refute = region_p(shares, 80, 180)
    res = value(make_arm("fast", x), target=130, tol=50, statistic="mean", n_boot=200)
    out = res.to_dict()
    assert out == {
        "criterion": "value", "effect_label": "mean of fast", "estimate": 125.0,
        "ci": [approx(ci[0]), approx(ci[1])], "ci_level": 0.95, "p_value": None,
        "test": MEAN_TEST, "threshold": 130.0,
        "claimed_region": "mean within [80, 180] (130 +/- 50)", "verdict": "SUPPORTED",
        "reason": Has("95% CI of the mean of fast, [102, 143]",
                      "wholly within the claimed region [80, 180]", "(point estimate 125)."),
        "arms": [{"name": "fast", "n": 6, "excluded": {},
                  "columns": {"seeds": 6, "mean": 125.0, "censored (as budget)": 0,
                              "determined": "yes"}}],
        "details": {"censoring": REFUSE, "censored_policy": "refuse",
                    "censored_seeds": {"fast": 0}, "ci_method": BOOT_T_METHOD, "n_boot": 200,
                    "bootstrap_seed": 0, "n_dropped_resamples": 0,
                    "tolerance_region": [80.0, 180.0], "withheld_by_lower_bound_rule": []},
        "p_support": approx(p_support), "p_refute": approx(p_refute),
        "p_value_label": "no-effect test p"}
    assert list(out["arms"][0]["columns"]) == ["seeds", "mean", "censored (as budget)",
                                               "determined"]


def test_value_mean_with_a_censored_seed_below_the_region_is_withheld() -> None:
    """``censored: as_budget``, mean of 6 seeds, one censored at 150: the CI lies wholly below
    [500, 600]. A censored value only pulls the mean down, so a CI *below* the region could be
    that pull: the REFUTED verdict is withheld, the reason names the arm, its censored count
    and its undetermined mean, the table says "determined: no", the details name the withholding
    arm, and no p is given (the mean is only a lower bound)."""
    x = [100.0, 110, 120, 130, 140, 150]
    ci = bootstrap_t(x, 0.95, 200, 0)[0]
    res = value(make_arm("slow", x, [1, 1, 1, 1, 1, 0]), target=550, tol=50, statistic="mean",
                censored="as_budget", n_boot=200)
    assert res.to_dict() == {
        "criterion": "value", "effect_label": "mean of slow", "estimate": 125.0,
        "ci": [approx(ci[0]), approx(ci[1])], "ci_level": 0.95, "p_value": None,
        "test": MEAN_TEST, "threshold": 550.0,
        "claimed_region": "mean within [500, 600] (550 +/- 50)", "verdict": "INCONCLUSIVE",
        "reason": Has("95% CI of the mean of slow, [102, 143]",
                      "wholly below the claimed region [500, 600], excluding it",
                      "(point estimate 125), which would refute the claim",
                      "arm 'slow' has 1 censored seed(s) entered at the budget",
                      "leaves its mean undetermined, so no verdict is drawn."),
        "arms": [{"name": "slow", "n": 6, "excluded": {},
                  "columns": {"seeds": 6, "mean": 125.0, "censored (as budget)": 1,
                              "determined": "no"}}],
        "details": {"censoring": AS_BUDGET, "censored_policy": "as_budget",
                    "censored_seeds": {"slow": 1}, "ci_method": BOOT_T_METHOD, "n_boot": 200,
                    "bootstrap_seed": 0, "n_dropped_resamples": 0,
                    "tolerance_region": [500.0, 600.0], "withheld_by_lower_bound_rule": ["slow"]},
        "p_support": None, "p_refute": None, "p_value_label": "no-effect test p"}


def test_value_needs_two_seeds_and_an_existing_arm() -> None:
    """Two seeds are enough for an estimate (the median of 2 values, whose order-statistic CI at
    95% is unbounded); one seed is refused with the count in the message; an arm with no data is
    a wiring error that names the criterion."""
    two = value(make_arm("two", [1.0, 2.0], kind="value"), target=1.5, tol=1, statistic="median")
    assert (two.estimate, two.ci, two.verdict) == (1.5, (-math.inf, math.inf),
                                                   Verdict.INCONCLUSIVE)
    assert two.reason == Has("95% CI of the median of two, [-inf, inf]",
                             "overlaps the claimed region [0.5, 2.5] without lying within it",
                             "neither support nor refute", "(point estimate 1.5).")
    assert two.details["order_statistic_k"] == 0
    one = value(make_arm("one", [0.5], kind="value"), target=0.5, tol=0.1)
    assert one.verdict == Verdict.INCONCLUSIVE and math.isnan(one.estimate)
    assert one.reason == Has("No verdict is possible", "arm 'one' has 1 usable seed(s)",
                             "fewer than the 2", "(left out: none).")
    with pytest.raises(KeyError) as err:
        run_criterion({"name": "value", "arm": "a", "target": 1, "tol": 1},
                      make_arm("b", [1.0, 2.0]))
    assert err.value.args[0] == "value: no data for arm(s) ['a']"


# known answers on uncensored samples, where the median is the plain one:
# (sample, statistic, target, tol) -> (estimate, CI, verdict, p_support, p_refute)
UNCENSORED = [
    ("t12", "median", 2000, 600, 1897.0, (1561.0, 2307.0), "SUPPORTED", 0.003173828125,
     0.999755859375),
    ("t12", "median", 1500, 200, 1897.0, (1561.0, 2307.0), "INCONCLUSIVE", 0.80615234375,
     0.38720703125),
    ("t12", "median", 3500, 300, 1897.0, (1561.0, 2307.0), "REFUTED", 0.999755859375,
     0.003173828125),
    ("t12", "mean", 2000, 600, 1989.5833333333333, (1693.0665409727098, 2469.0073429207387),
     "SUPPORTED", 0.012, 0.988),
    ("t12", "mean", 1500, 200, 1989.5833333333333, (1693.0665409727098, 2469.0073429207387),
     "INCONCLUSIVE", 0.968, 0.032),
    ("t12", "mean", 3500, 300, 1989.5833333333333, (1693.0665409727098, 2469.0073429207387),
     "REFUTED", 0.998, 0.002),
    ("t9", "median", 1500, 200, 1135.0, (864.0, 1549.0), "INCONCLUSIVE", 0.74609375, 0.5),
    ("t9", "mean", 1500, 200, 1229.0, (993.3648460301654, 1535.7498105443442), "INCONCLUSIVE",
     0.71, 0.29),
    ("v15", "median", 0.4, 0.1, 0.35222467239660693, (0.3021480921943361, 0.4113308986003308),
     "SUPPORTED", 0.017578125, 0.996307373046875),
    ("v15", "mean", 0.4, 0.1, 0.3480401394084353, (0.29707421156824526, 0.3958105690577902),
     "INCONCLUSIVE", 0.032, 0.968),
]


def _uncensored() -> dict[str, ArmSample]:
    rng = np.random.default_rng(7)
    t12 = np.ceil(np.exp(rng.normal(math.log(2000), 0.4, 12)))
    t9 = np.ceil(np.exp(rng.normal(math.log(1500), 0.3, 9)))
    v15 = rng.normal(0.4, 0.1, 15)
    return {"t12": make_arm("a", t12), "t9": make_arm("a", t9),
            "v15": make_arm("a", v15, kind="value")}


@pytest.mark.parametrize("case", UNCENSORED, ids=lambda c: f"{c[0]}-{c[1]}-{c[2]}")
def test_uncensored_samples_give_their_known_numbers(case: tuple[Any, ...]) -> None:
    name, statistic, target, tol, estimate, ci, verdict, p_support, p_refute = case
    res = km_value(_uncensored()[name], target=target, tol=tol, statistic=statistic, n_boot=500)
    assert (res.estimate, res.ci, res.verdict.value) == (estimate, ci, verdict)
    assert (res.p_support, res.p_refute) == (p_support, p_refute)
    assert res.effect_label == f"{statistic} of a"


def test_the_mean_with_censored_values_keeps_the_lower_bound_rule() -> None:
    ci = (1525.4073239360835, 6824.437120077736)  # the known bootstrap-t CI
    for target, tol, verdict in ((2500, 1500, "INCONCLUSIVE"), (400, 100, "REFUTED")):
        res = km_value(EARLY, target=target, tol=tol, statistic="mean", n_boot=500)
        assert (res.estimate, res.ci, res.verdict.value) == (2550.0, ci, verdict)
        assert res.p_support is None and res.p_refute is None
    # withheld: the CI within the region would support, but the mean is only a lower bound
    wide = km_value(EARLY, target=4000, tol=3000, statistic="mean", n_boot=500)
    assert wide.verdict == Verdict.INCONCLUSIVE and "lower bound" in wide.reason


def test_refuse_refuses_a_censored_median() -> None:
    res = km_value(EARLY, target=2000, tol=500, censored="refuse")
    assert res.verdict == Verdict.INCONCLUSIVE and math.isnan(res.estimate)


# ---------------------------------------------------------------- value: the Kaplan-Meier median


# 12 seeds, three censored below some event times (seeds stopped early): the plain median with
# the censored values at their censoring steps is 1900, the KM median 2000
EARLY = make_arm("a", [900, 1100, 1300, 1500, 1700, 2000, 2200, 2600, 3100, 1800, 2400, BUDGET],
            [True] * 9 + [False] * 3)


def test_estimate_and_ci_are_the_tables_km_median_and_ci() -> None:
    for a in (EARLY, km_lognormal(9000, 0.5, 24, 3), km_lognormal(2000, 0.6, 12, 5, budget=2500)):
        assert (~a.observed).any()
        for level in (0.9, 0.95):
            res = km_value(a, target=2000, tol=500, ci_level=level)
            median, ci = table(a, level)
            assert res.estimate == median and res.ci == ci
            row = res.arms[0].columns
            assert row["KM median"] == median and row[f"{level * 100:.4g}% CI"] == ci
            assert res.effect_label == "Kaplan-Meier median of a"
            assert "Brookmeyer-Crowley" in res.details["ci_method"]
    res = km_value(EARLY, target=2000, tol=1000)
    assert res.estimate == 2000.0 != float(np.median(EARLY.values)) == 1900.0
    assert res.ci == (1100.0, 3100.0)
    assert res.verdict == Verdict.INCONCLUSIVE and res.p_support is not None


def test_many_seeds_censored_at_the_budget_give_a_median_beyond_it() -> None:
    a = km_lognormal(20000, 0.5, 24, 4)  # 20 of 24 censored
    assert (~a.observed).sum() > a.n / 2 and np.median(a.values) == BUDGET
    below = km_value(a, target=6000, tol=1000)
    assert math.isinf(below.estimate) and below.ci == table(a)[1] == (math.inf, math.inf)
    assert below.verdict == Verdict.REFUTED and "beyond the budget" in below.reason
    assert below.p_refute is not None and below.p_refute < 0.025 and below.p_support == 1.0
    reaching = km_value(a, target=11000, tol=2000)  # the median may lie anywhere past the budget
    assert reaching.verdict == Verdict.INCONCLUSIVE and "beyond the budget" in reaching.reason
    assert (reaching.p_support, reaching.p_refute) == (1.0, 1.0)


def test_a_median_beyond_the_budget_with_a_bounded_ci_start() -> None:
    a = km_lognormal(11000, 0.5, 24, 0)  # KM never reaches 1/2, yet the CI starts at an event
    median, (low, high) = table(a)
    assert math.isinf(median) and math.isfinite(low) and math.isinf(high)
    res = km_value(a, target=3000, tol=500)
    assert res.verdict == Verdict.REFUTED and res.ci == (low, high)
    assert "beyond the budget" in res.reason and "point estimate inf" not in res.reason
    near = km_value(a, target=low, tol=500)
    assert near.verdict == Verdict.INCONCLUSIVE  # never SUPPORTED: the CI is unbounded
    for r in (res, near):
        assert verdict_from_p(r.p_support, r.p_refute, 0.025) == r.verdict


def test_value_km_median_with_a_defined_brookmeyer_crowley_ci() -> None:
    """12 seeds, 3 censored (two stopped early, one at the budget): the median is the KM median
    (2000: S falls from 7/12 to 7/12 * 5/6 < 1/2 there), the CI statsmodels' Brookmeyer-Crowley
    interval. The user relies on the method named, the label, the reason's sentence, the KM table
    row and the details (no "bc_ci_undefined" note, since the CI is defined)."""
    values = [900.0, 1100, 1300, 1500, 1700, 2000, 2200, 2600, 3100, 1800, 2400, 10000]
    observed = [1] * 9 + [0] * 3
    low, high = SurvfuncRight(np.array(values), np.array(observed, float)).quantile_ci(
        0.5, alpha=0.05, method="cloglog")
    assert (low, high) == (1100.0, 3100.0)
    res = value(make_arm("a", values, observed), target=2000, tol=1000, statistic="median",
                censored="as_budget")
    out = res.to_dict()
    p_support, p_refute = out.pop("p_support"), out.pop("p_refute")
    assert out == {
        "criterion": "value", "effect_label": "Kaplan-Meier median of a", "estimate": 2000.0,
        "ci": [1100.0, 3100.0], "ci_level": 0.95, "p_value": None, "test": KM_TEST,
        "threshold": 2000.0, "claimed_region": "median within [1000, 3000] (2000 +/- 1000)",
        "verdict": "INCONCLUSIVE",
        "reason": Has("95% CI of the Kaplan-Meier median of a, [1100, 3100]",
                      "overlaps the claimed region [1000, 3000] without lying within it",
                      "neither support nor refute", "(point estimate 2000)."),
        "arms": [{"name": "a", "n": 12, "excluded": {},
                  "columns": {"seeds": 12, "events": 9, "censored": 3, "KM median": 2000.0,
                              "95% CI": [1100.0, 3100.0]}}],
        "details": {**KM_DETAILS, "censored_seeds": {"a": 3},
                    "tolerance_region": [1000.0, 3000.0], "median_beyond_budget": False,
                    "largest_time": 10000.0, "bc_ci_defined": True},
        "p_value_label": "no-effect test p"}
    assert verdict_from_p(p_support, p_refute, 0.025) == Verdict.INCONCLUSIVE


LATE = ([100.0, 200.0] + [1000.0] * 18, [1, 1] + [0] * 18)  # 2 events in 20, then the budget


def test_value_km_median_beyond_the_budget_refutes_a_region_below_it() -> None:
    """2 of 20 seeds reached the event (at 100 and 200), 18 censored at the budget 1000: S stays
    significantly above 1/2 at both event times, so the median lies beyond 1000 and the CI is
    (inf, inf). A region below 1000 is REFUTED with the beyond-the-budget sentence, p_support 1
    and p_refute the largest norm.sf(|r_i|) (hand KM + Greenwood), and the details say why the
    CI is the table's."""
    q = km_tail_p(*LATE)
    assert max(q) < 0.025  # no event time passes the test at 95%: the CI is undefined
    res = value(make_arm("late", *LATE), target=300, tol=100, statistic="median",
                censored="as_budget")
    assert res.to_dict() == {
        "criterion": "value", "effect_label": "Kaplan-Meier median of late", "estimate": "inf",
        "ci": ["inf", "inf"], "ci_level": 0.95, "p_value": None, "test": KM_TEST,
        "threshold": 300.0, "claimed_region": "median within [200, 400] (300 +/- 100)",
        "verdict": "REFUTED",
        "reason": Has("95% CI of the Kaplan-Meier median of late", *BEYOND,
                      "wholly above the claimed region [200, 400], excluding it",
                      BEYOND_ESTIMATE),
        "arms": [{"name": "late", "n": 20, "excluded": {},
                  "columns": {"seeds": 20, "events": 2, "censored": 18, "KM median": "inf",
                              "95% CI": ["inf", "inf"]}}],
        "details": {**KM_DETAILS, "censored_seeds": {"late": 18},
                    "tolerance_region": [200.0, 400.0], "median_beyond_budget": True,
                    "largest_time": 1000.0, "bc_ci_defined": False,
                    "bc_ci_undefined": BC_UNDEFINED},
        "p_support": 1.0, "p_refute": approx(max(q)), "p_value_label": "no-effect test p"}


def test_value_km_median_beyond_the_budget_with_a_region_reaching_the_budget() -> None:
    """The same arm against [800, 1000] (at 90%): the region reaches the largest time, so the
    median beyond it may still lie in it: INCONCLUSIVE with its own sentence, both p's 1."""
    res = value(make_arm("late", *LATE), target=900, tol=100, statistic="median",
                censored="as_budget", ci_level=0.9)
    assert (res.verdict, res.p_support, res.p_refute) == (Verdict.INCONCLUSIVE, 1.0, 1.0)
    assert res.reason == Has("90% CI of the Kaplan-Meier median of late", *BEYOND,
                             "the claimed region [800, 1000] reaches that far",
                             "neither support nor refute", BEYOND_ESTIMATE)
    assert res.details["bc_ci_undefined"] == BC_UNDEFINED


def test_value_km_median_of_an_arm_without_any_event() -> None:
    """20 seeds all censored at the budget (no event time at all): the median lies beyond the
    budget, a region below it is REFUTED, and the p's agree with that verdict (p_refute at most
    the exact sign-test bound 2^-20 of 20 of 20 seeds beyond the region)."""
    res = value(make_arm("never", [1000.0] * 20, [0] * 20), target=300, tol=100, statistic="median",
                censored="as_budget")
    assert res.verdict == Verdict.REFUTED and res.p_support == 1.0
    assert res.p_refute == 2.0 ** -20
    assert verdict_from_p(res.p_support, res.p_refute, 0.025) == Verdict.REFUTED
    assert res.details["bc_ci_undefined"] == BC_UNDEFINED


@pytest.mark.parametrize(("n", "level", "verdict"), [
    (2, 0.95, Verdict.INCONCLUSIVE),  # 1/4 > 0.025
    (5, 0.95, Verdict.INCONCLUSIVE),  # 1/32 > 0.025
    (6, 0.95, Verdict.REFUTED),  # 1/64 <= 0.025
    (6, 0.99, Verdict.INCONCLUSIVE),  # 1/64 > 0.005
    (8, 0.99, Verdict.REFUTED),  # 1/256 <= 0.005
])
def test_no_event_refutes_only_when_the_exact_bound_allows(n: int, level: float,
                                                           verdict: Verdict) -> None:
    """No seed reached the event: a median inside a region below the budget leaves all n seeds
    censored with probability up to 2^-n, so REFUTED needs 2^-n <= alpha/2 (the KM variance is
    0 here and would refute with certainty at any n); the p's agree with the verdict."""
    res = value(make_arm("never", [1000.0] * n, [0] * n), target=300, tol=100, statistic="median",
                censored="as_budget", ci_level=level)
    assert res.verdict == verdict
    assert (res.p_support, res.p_refute) == (1.0, 0.5 ** n)
    assert verdict_from_p(res.p_support, res.p_refute, (1 - level) / 2) == verdict
    if verdict == Verdict.INCONCLUSIVE:
        assert res.reason == Has(
            "No seed reached the event by 1000,", f"with {n} seed(s) a median inside the "
            "claimed region [200, 400]", f"up to 2^-{n} = {0.5 ** n:.3g}, more than "
            f"{(1 - level) / 2:.3g}: too few seeds to refute it", BEYOND_ESTIMATE)


def test_no_event_with_a_region_reaching_the_budget_stays_inconclusive() -> None:
    res = value(make_arm("never", [1000.0] * 10, [0] * 10), target=900, tol=100, statistic="median",
                censored="as_budget")
    assert res.verdict == Verdict.INCONCLUSIVE and (res.p_support, res.p_refute) == (1.0, 1.0)


@pytest.mark.parametrize(("n", "verdict"), [(4, Verdict.REFUTED), (3, Verdict.INCONCLUSIVE)])
def test_no_event_bound_equal_to_alpha_half_still_refutes(n: int, verdict: Verdict) -> None:
    """At 87.5% alpha/2 = 0.0625 = 2^-4: four seeds all censored refute a region below the
    budget (2^-4 <= alpha/2), three (2^-3 = 0.125 > 0.0625) do not."""
    never = make_arm("never", [BUDGET] * n, observed=[False] * n)
    res = value(never, target=300, tol=100, statistic="median",
              censored="as_budget", ci_level=0.875)
    assert res.verdict == verdict
    assert (res.p_support, res.p_refute) == (1.0, 0.5 ** n)
    if verdict == Verdict.REFUTED:
        assert res.reason.startswith("The 87.5% CI of the Kaplan-Meier median of never lies "
                                     "beyond the budget")


def _km_arm() -> ArmSample:
    """Five of eight seeds at step 100, one at 200, two censored later: at 80% only the event
    time 100 passes the test of S(t) = 1/2, so the Brookmeyer-Crowley CI is [100, 200]."""
    return make_arm("a", [100, 100, 100, 100, 100, 200, 300, 400], [1, 1, 1, 1, 1, 1, 0, 0])


@pytest.mark.parametrize(("target", "tol"), [(115.0, 35.0), (325.0, 175.0)])
def test_km_median_p_values_decide_the_verdict_of_the_ci(target: float, tol: float) -> None:
    """The CI [100, 200] overlaps [80, 150] and [150, 500]: INCONCLUSIVE, and neither p
    against the region's ends falls to alpha/2 (which would claim the CI's end had passed
    that end, through the first event time, which is the CI's only accepted time)."""
    a = _km_arm()
    result = value(a, target=target, tol=tol, statistic="median", censored="as_budget",
                   ci_level=0.8)
    with np.errstate(all="ignore"):
        oracle = SurvfuncRight(a.values, a.observed.astype(float)).quantile_ci(0.5, 0.2,
                                                                               "cloglog")
    assert result.ci == tuple(float(x) for x in oracle) == (100.0, 200.0)
    assert result.verdict == Verdict.INCONCLUSIVE
    assert result.p_support is not None and result.p_refute is not None
    assert result.p_support > 0.1 and result.p_refute > 0.1
    assert coherent(result)


def test_km_median_time_whose_test_sits_exactly_at_the_level_is_accepted() -> None:
    """At the level whose z equals |r| of the first event time to the last bit, that time is
    accepted (|r| <= z, as statsmodels' quantile_ci): the CI is defined, [100, 200], within
    [50, 250], SUPPORTED, with a p_support that says so."""
    a = make_arm("a", [100, 100, 100, 100, 100, 200, 300], [1, 1, 1, 1, 1, 1, 0])
    level = 0.7852869577543448
    s, n_risk, deaths = 2 / 7, 7, 5  # S(100) and its Greenwood variance, by hand
    se = s * math.sqrt(deaths / (n_risk * (n_risk - deaths)))
    r = (math.log(-math.log(s)) - math.log(math.log(2))) / ((-1 / (s * math.log(s))) * se)
    assert float(sps.norm.ppf(1 - (1 - level) / 2)) == pytest.approx(abs(r), rel=1e-14)
    result = value(a, target=150.0, tol=100.0, statistic="median", censored="as_budget",
                   ci_level=level)
    assert result.ci == (100.0, 200.0)
    assert result.details["bc_ci_defined"] is True
    assert result.verdict == Verdict.SUPPORTED and coherent(result)


def test_km_median_prints_no_numpy_warning() -> None:
    """The KM median's tests at S = 0 (the last seed an event) print no numpy warning."""
    a = make_arm("a", [100, 120, 150, 180, 200, 250, 300], [1, 1, 0, 1, 1, 1, 1])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = value(a, target=150.0, tol=100.0, statistic="median", censored="as_budget")
    assert result.ci == (100.0, 300.0)
    assert result.verdict == Verdict.INCONCLUSIVE and coherent(result)


def _censored_samples() -> list[ArmSample]:
    out = []
    for seed in range(40):
        rng = np.random.default_rng(seed)
        n = int(rng.choice([6, 8, 12, 16, 24, 40]))
        raw = np.ceil(np.exp(rng.normal(math.log(1000), rng.uniform(0.2, 0.8), n)))
        if seed % 3 == 0:  # a common budget, sometimes below the median
            cens = np.full(n, float(rng.choice([900, 1200, 1600, 3000])))
        else:  # seeds stopped early at various steps
            cens = np.ceil(rng.uniform(300, 3000, n))
            cens[rng.random(n) < 0.5] = 2500
        obs = raw <= cens
        obs[np.argmax(raw)] = False
        cens[np.argmax(raw)] = min(cens[np.argmax(raw)], raw.max())
        out.append(make_arm("a", np.where(obs, raw, cens), obs))
    # most seeds censored at a budget below the median: the KM median beyond the budget
    return out + [km_lognormal(1000, 0.4, n, seed, budget=600) for n, seed in ((12, 1), (24, 2))]


def test_p_against_the_region_gives_the_ci_verdict_on_a_grid() -> None:
    """SUPPORTED <=> p_support <= α/2, REFUTED <=> p_refute < α/2, on censored samples with
    regions from below through the median to above, narrow and wide, at three levels."""
    seen: set[tuple[str, bool]] = set()
    for a in _censored_samples():
        for target in np.linspace(300, 3000, 12):
            for tol in (50.0, 500.0):
                for level in (0.9, 0.95):
                    res = km_value(a, target=float(target), tol=tol, ci_level=level)
                    where = f"{a.values}, {a.observed}, [{target - tol}, {target + tol}]"
                    assert res.ci == table(a, level)[1], where
                    assert res.p_support is not None and res.p_refute is not None, where
                    assert 0.0 <= res.p_support <= 1.0 and 0.0 <= res.p_refute <= 1.0, where
                    alpha = (1.0 - level) / 2
                    assert verdict_from_p(res.p_support, res.p_refute, alpha) == res.verdict, \
                        f"{where}: {res.verdict} p {res.p_support}, {res.p_refute}"
                    seen.add((res.verdict.value, res.details["bc_ci_defined"]))
    assert {("SUPPORTED", True), ("REFUTED", True), ("INCONCLUSIVE", True),
            ("REFUTED", False), ("INCONCLUSIVE", False)} <= seen, seen


def test_the_p_is_the_one_sided_test_of_s_at_b_where_r_rises() -> None:
    """Where the cloglog z-statistic r(t) rises through the event times an end needs rejected
    (r_k at the event time next to b is the one nearest 0 among them), each p is the one-sided
    test of S(t) = 1/2 at t = b (just below b for the low end's sides), against the side the
    data point to. r is not monotone everywhere (it dips after the first event times), which is
    why the p's take the largest of those tail areas, as the CI does."""
    a = km_lognormal(2000, 0.5, 40, 11, budget=3000)
    with np.errstate(all="ignore"):
        sf = SurvfuncRight(a.values, a.observed.astype(float))
        s, se = sf.surv_prob, sf.surv_prob_se
        r = (np.log(-np.log(s)) - np.log(math.log(2))) / (-1 / (s * np.log(s)) * se)
    ts, q, defined = _bc_tail_p(a.values, a.observed, 0.05)
    assert defined and np.array_equal(ts, sf.surv_times) and np.all(np.isfinite(r))
    checked = 0
    for b in np.linspace(500, 3500, 61):
        sides = _bc_sides(ts, q, float(b))
        below = int(np.searchsorted(ts, b, side="left")) - 1  # the event time just below b
        at = int(np.searchsorted(ts, b, side="right")) - 1  # the last at or below b
        for k, low_side, high_side in ((below, sides.ge, sides.lt), (at, sides.gt, sides.le)):
            if k < 0:  # before the first event time: S = 1 there, the low end is past b
                assert low_side == 0.0
                continue
            # low_side's event times: up to k; high_side's: from k on
            if abs(r[k]) == np.abs(r[: k + 1]).min() and r[k] < 0:
                assert low_side == pytest.approx(norm.cdf(r[k]))
                checked += 1
            if abs(r[k]) == np.abs(r[k:]).min() and r[k] > 0:
                assert high_side == pytest.approx(norm.sf(r[k]))
                checked += 1
    assert checked >= 80


def test_median_of_few_unpaired_seeds_or_all_censored_decides_nothing() -> None:
    """The interval rule for scalar_compare: an unpaired median bootstrap from fewer than 8 seeds
    an arm, and arms whose every seed is censored, give INCONCLUSIVE with the computed verdict
    kept (benchmarks/calibration.py, "few seeds" and "all censored")."""
    from grokverify.claim.criteria import ScalarCompareParams
    from grokverify.stats.base import judge

    def params(**kw: Any) -> ScalarCompareParams:
        return ScalarCompareParams(name="scalar_compare", baseline="b", treated="t",
                                   direction="less", statistic="median", n_boot=200, **kw)

    few = judge(params(paired=False), {"b": make_arm("b", [1000.0, 1100, 1200, 1300]),
                                       "t": make_arm("t", [300.0, 350, 400, 450])})
    assert few.verdict == Verdict.INCONCLUSIVE
    assert few.details["verdict_if_interval_held"] == "SUPPORTED"
    assert few.details["interval_fails"] == Has(
        "4 seeds in an arm, fewer than the 8 at which the bootstrap of two medians keeps its "
        "level (benchmarks/calibration.py, \"few seeds\": at 4 seeds with ties, coverage "
        "0.917, false verdicts 0.040 and 0.046)")
    cens = [False] * 8
    none = judge(params(), {"b": make_arm("b", [5000.0] * 8, cens),
                            "t": make_arm("t", [5000.0] * 8, cens)})
    assert none.verdict == Verdict.INCONCLUSIVE and none.ci == (-math.inf, math.inf)
    assert none.details["interval_fails"] == Has(
        "every seed of both arms is censored at the budget, so the interval is of the budget, "
        "not of the effect")
