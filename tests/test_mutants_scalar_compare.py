"""Tests that pin what the mutation run of ``scalar_compare`` (``grokverify/stats/scalar.py``)
found unpinned.

mutmut left mutants of the two-arm ``scalar_compare`` criterion alive, and of the one-sample
CIs it shares with ``value``: the words of the result (the effect label with its operator, the
claimed region with its direction sign, the test and the CI method named, the resampling
described, the refusal messages), the lower-bound rule of the paired and the unpaired analysis
(which p's are withheld, the statistic named in the reason), the order-statistic CI's k at the
level where the binomial tail equals alpha/2 exactly, the one-sided p's of a statistic that sits
exactly on θ, the Brookmeyer-Crowley p's of the Kaplan-Meier median, and the absence of numpy
warnings. Each test pins a whole result a user reads for a small case; numbers are checked
against oracles computed here (binomial sums by hand, the bootstrap-t by hand, scipy's bootstrap
called directly, statsmodels' quantile CI), never against the function's own output.
"""

from __future__ import annotations

import math
import warnings
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from scipy import stats as sps
from statsmodels.duration.survfunc import SurvfuncRight

from grokverify.kinds import CRITERIA
from grokverify.stats.base import ArmSample, CriterionResult, Verdict, judge, verdict_from_p

AS_BUDGET = ("censored values enter as their censoring value (the budget), a lower bound on the "
             "true value; the lower-bound rule withholds any verdict that this could have "
             "produced (see docs/verdicts.md)")
NOT_CENSORED = ("none: a value metric is never censored (diverged seeds and seeds whose value is "
                "undefined are left out and counted)")
SPEARMAN = ("Spearman rank correlation of the paired seeds' values; a censored time enters at "
            "its censoring value (the budget), tied with the other censored seeds (ranks: the "
            "same on log times)")
BCA_TEST = "BCa bootstrap CI of the effect (no test)"
UNPAIRED_BOOTSTRAP = "scipy.stats.bootstrap, arms resampled independently (paired=False)"
P_METHOD = ("inversion of the bootstrap interval: the smallest one-sided level at which it lies "
            "wholly inside (support) / outside (refute) the claimed region")
LEVEL_RULE = ("Hesterberg's expanded level 1 - 2 Phi(-sqrt(n/(n-1)) t_(n-1, 1-alpha/2)), n = "
              "smallest arm, for the stated CI level with few seeds")
ORDER_METHOD = ("order statistics: [x_(k), x_(n+1-k)], k the largest with P(Bin(n, 1/2) <= k-1) "
                "<= alpha/2 (exact, distribution-free)")
BOOT_T_METHOD = ("bootstrap-t (studentized): mean - t*_(1-alpha/2) se, mean - t*_(alpha/2) se")
DEGENERATE = "all values equal: the CI is the single value"


# ---------------------------------------------------------------- helpers and oracles


def arm(name: str, values: list[float], observed: list[int] | None = None, kind: str = "time",
        seeds: tuple[int, ...] | None = None) -> ArmSample:
    """An arm with seeds 0..n-1 (or `seeds`), every value observed unless said otherwise."""
    v = np.asarray(values, dtype=float)
    obs = np.ones(v.size, bool) if observed is None else np.asarray(observed, bool)
    return ArmSample(name, v, obs, tuple(range(v.size)) if seeds is None else seeds,
                     kind=kind)  # type: ignore[arg-type]


def compare(b: ArmSample, t: ArmSample, **params: Any) -> CriterionResult:
    """scalar_compare of treated 't' against baseline 'b'."""
    crit = CRITERIA["scalar_compare"]
    claim = {"name": "scalar_compare", "baseline": "b", "treated": "t", **params}
    return judge(crit.model_validate(claim), {"b": b, "t": t})


def value(a: ArmSample, **params: Any) -> CriterionResult:
    """value of arm `a` (the KM median when a time has a censored seed)."""
    crit = CRITERIA["value"]
    claim = {"name": "value", "arm": a.name, **params}
    return judge(crit.model_validate(claim), {a.name: a})


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


def bootstrap_t(x: np.ndarray, level: float, n_boot: int, seed: int,
                boundary: float) -> tuple[tuple[float, float], float, float, float, int]:
    """Bootstrap-t of the mean by hand: (CI, share of t* below, at, above (m - b)/se, dropped)."""
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
    c = (m - boundary) / se
    share = len(ts)
    below = sum(t < c for t in ts) / share
    at = sum(t == c for t in ts) / share
    above = sum(t > c for t in ts) / share
    return (m - q_hi * se, m - q_lo * se), below, at, above, n_boot - len(ts)


def expanded(level: float, n: int) -> float:
    """Hesterberg's expanded bootstrap level, by hand."""
    z = math.sqrt(n / (n - 1)) * sps.t.ppf(1 - (1 - level) / 2, n - 1)
    return float(1 - 2 * sps.norm.cdf(-z))


def coherent(result: CriterionResult) -> bool:
    """Whether the one-sided p's against θ decide the verdict the CI decided."""
    alpha = (1 - result.ci_level) / 2
    return verdict_from_p(result.p_support, result.p_refute, alpha) == result.verdict


# ---------------------------------------------------------------- unpaired: words and numbers


def test_unpaired_ratio_of_means_withheld_by_the_lower_bound_rule() -> None:
    """``paired: false``, a ratio of means of times with a censored seed in each arm: the user
    reads the label "ratio of means (t / b)", the region "ratio >= 1.2", the BCa test, a CI
    equal to scipy's BCa at Hesterberg's expanded level, and a REFUTED that the censored
    treated seed withholds (its mean is only a lower bound); neither p against θ is valid."""
    b = arm("b", [700, 750, 800, 850, 900, 950, 1000], [1, 1, 1, 1, 1, 1, 0])
    t = arm("t", [300, 320, 340, 360, 380, 400, 1000], [1, 1, 1, 1, 1, 1, 0])
    result = compare(b, t, direction="greater", statistic="mean", paired=False, n_boot=200)

    level = expanded(0.95, 7)
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
        "within_pair_correlation": 1.0, "within_pair_correlation_method": SPEARMAN,
        "bootstrap": UNPAIRED_BOOTSTRAP, "n_boot": 200, "bootstrap_seed": 0,
        "ci_method": "BCa", "bootstrap_level_rule": LEVEL_RULE, "p_method": P_METHOD,
        "withheld_by_lower_bound_rule": ["t"]}
    assert words(result, ("details",)) == {
        "criterion": "scalar_compare", "effect_label": "ratio of means (t / b)",
        "ci_level": 0.95, "p_value": None, "test": BCA_TEST, "threshold": 1.2,
        "claimed_region": "ratio >= 1.2", "verdict": "INCONCLUSIVE",
        "reason": "The 95% CI of the ratio of means (t / b), [0.39, 0.872], lies wholly below "
                  "1.2, excluding the claimed region bounded by 1.2 (point estimate 0.521), "
                  "which would refute the claim, but arm 't' has 1 censored seed(s) entered at "
                  "the budget, a lower bound that leaves its mean undetermined, so no verdict "
                  "is drawn.",
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
    b = arm("b", [3.0, 3.5, 4.0, 4.5, 5.0, 5.5], kind="value", seeds=(0, 1, 2, 3, 4, 5))
    t = arm("t", [0.5, 0.8, 1.0, 1.4, 1.7, 2.0], kind="value", seeds=(6, 7, 8, 9, 10, 11))
    result = compare(b, t, direction="less", effect="difference", min_effect=1.0, n_boot=200)

    oracle = sps.bootstrap((b.values, t.values),
                           lambda x, y, axis=-1: np.median(y, axis=axis) - np.median(x, axis=axis),
                           n_resamples=200, confidence_level=0.95, method="BCa", paired=False,
                           vectorized=True, rng=np.random.default_rng(0)).confidence_interval
    assert result.estimate == pytest.approx(1.2 - 4.25, rel=1e-12)
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
        "reason": f"The 95% CI of the difference of medians (t - b), "
                  f"[{oracle.low:.3g}, {oracle.high:.3g}], lies wholly at or below -1, the "
                  f"boundary of the claimed effect (point estimate -3.05).",
        "arms": [
            {"name": "b", "n": 6, "excluded": {}, "columns": {"seeds": 6, "median": 4.25}},
            {"name": "t", "n": 6, "excluded": {}, "columns": {"seeds": 6, "median": 1.2}}],
        "p_value_label": "no-effect test p"}
    assert result.details["censoring"] == NOT_CENSORED
    assert result.details["statistic"] == "median"
    assert result.details["unpaired_reason"] == why
    assert "withheld_by_lower_bound_rule" not in result.details


# ---------------------------------------------------------------- paired: labels, CI methods


def test_paired_median_of_ratios_withheld_when_a_censored_pair_could_rise() -> None:
    """Paired ratio of medians of times, the treated seed 5 censored at its budget while its
    baseline seed took 4000 steps: that pair's ratio (0.25, the smallest) can only be larger, so
    the CI [0.25, 0.525] that would support "ratio <= 0.8" is withheld and p_support is None,
    although treated's own median is determined (the per-pair effects decide, not the arm)."""
    b = arm("b", [400, 500, 600, 700, 800, 4000])
    t = arm("t", [200, 260, 290, 350, 420, 1000], [1, 1, 1, 1, 1, 0])
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
    b = arm("b", [1.0, 2.5, -0.5, 3.0, 0.0, 1.5], kind="value")
    t = arm("t", [3.5, 4.0, 2.0, 6.5, 2.5, 3.0], kind="value")
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
        "within_pair_correlation_method": SPEARMAN,
        "ci_method": f"{ORDER_METHOD}, of the per-pair effects", "order_statistic_k": k,
        "achieved_level": achieved, "p_support": 1 / 64, "p_refute": 1.0}
    assert words(result, ("details", "test", "arms")) == {
        "criterion": "scalar_compare", "effect_label": "median of per-seed differences (t - b)",
        "ci_level": 0.95, "p_value": None, "threshold": 1.0,
        "claimed_region": "difference >= 1", "verdict": "SUPPORTED",
        "reason": "The 95% CI of the median of per-seed differences (t - b), [1.5, 3.5], lies "
                  "wholly at or above 1, the boundary of the claimed effect (point estimate "
                  "2.5).",
        "p_value_label": "no-effect test p"}


def test_paired_median_p_counts_the_differences_exactly_at_theta_as_inside() -> None:
    """Differences [-1, -1, -2, -3, -4, -5] against θ = -1 (less): the CI [-5, -1] ends on the
    boundary, which belongs to the region: SUPPORTED; the sign test counts the two differences
    at θ as inside, so p_support = P(Bin(6, 1/2) <= #(d > θ) = 0) = 1/64 and p_refute =
    P(Bin(6, 1/2) <= #(d <= θ) = 6) = 1."""
    b = arm("b", [5.0, 6.0, 7.0, 8.0, 9.0, 10.0], kind="value")
    t = arm("t", [4.0, 5.0, 5.0, 5.0, 5.0, 5.0], kind="value")
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
    b = arm("b", [400, 500, 600, 700, 800, 900])
    t = arm("t", [220, 240, 330, 380, 400, 470])
    result = compare(b, t, direction="less", statistic="mean", n_boot=200, bootstrap_seed=3)
    d = np.log(t.values / b.values)
    (low, high), below, _, _, dropped = bootstrap_t(d, 0.95, 200, 3, math.log(0.8))
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
    """Every per-pair difference equals θ (-1 for less, +1 for greater): the CI is that single
    value, on the boundary, which belongs to the claimed region: SUPPORTED at every level
    (p_support 0) and never outside (p_refute 1); the details say the CI is degenerate."""
    step = -1.0 if direction == "less" else 1.0
    b = arm("b", [1.0, 2.0, 3.0, 4.0], kind="value")
    t = arm("t", [1.0 + step, 2.0 + step, 3.0 + step, 4.0 + step], kind="value")
    result = compare(b, t, direction=direction, effect="difference", statistic="mean",
                     min_effect=1.0, n_boot=100)
    assert (result.estimate, result.ci, result.verdict) == (step, (step, step), Verdict.SUPPORTED)
    assert (result.p_support, result.p_refute) == (0.0, 1.0)
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
    b = arm("b", [1.0, 2.0, 3.0], kind="value")
    t = arm("t", [1.0, 3.0, 5.0], kind="value")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = compare(b, t, direction="greater", effect="difference", statistic="mean",
                         min_effect=1.0, n_boot=200)
    (low, high), _, at, above, dropped = bootstrap_t(np.array([0.0, 1.0, 2.0]), 0.95, 200, 0,
                                                     1.0)
    assert at > 0.1  # the case this pins: many t* exactly at the boundary
    assert result.ci == pytest.approx((low, high), rel=1e-12)
    assert result.p_support == pytest.approx(above, abs=1e-12)
    assert result.p_refute == pytest.approx(1 - above, abs=1e-12)
    assert result.details["n_dropped_resamples"] == dropped > 0
    assert result.verdict == Verdict.INCONCLUSIVE and coherent(result)


@pytest.mark.parametrize(("effect", "label", "how"), [
    ("ratio", "geometric iqm of per-seed ratios (t / b)", ", on log ratios"),
    ("difference", "iqm of per-seed differences (t - b)", ""),
])
def test_paired_iqm_is_the_expanded_bca_of_the_per_pair_effects(effect: str, label: str,
                                                                  how: str) -> None:
    """Paired IQM: the label names the (geometric) iqm of per-seed ratios or differences; the
    CI is scipy's one-sample BCa of the per-pair effects (log ratios for a ratio) at
    Hesterberg's expanded level for 8 pairs, and the details describe that resampling."""
    b = arm("b", [400, 520, 610, 700, 830, 900, 950, 1010])
    t = arm("t", [300, 380, 500, 500, 560, 610, 800, 700])
    min_effect = 0.2 if effect == "ratio" else 100.0
    result = compare(b, t, direction="less", statistic="iqm", effect=effect,
                     min_effect=min_effect, n_boot=200)
    d = np.log(t.values / b.values) if effect == "ratio" else t.values - b.values
    back = np.exp if effect == "ratio" else (lambda x: x)
    level = expanded(0.95, 8)
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
    b = arm("b", [0.0] * n, kind="value")
    t = arm("t", [float((7 * i) % n + i / 100) for i in range(n)], kind="value")
    result = compare(b, t, direction="greater", effect="difference", min_effect=1.0,
                     ci_level=level)
    k, low, high, achieved = order_ci(list(t.values), level)
    assert result.ci == (low, high)
    assert result.details["order_statistic_k"] == k
    assert result.details["achieved_level"] == pytest.approx(achieved, abs=1e-12)
    assert result.reason.startswith(f"The {level * 100:.4g}% CI of the median of per-seed "
                                    "differences (t - b), ")
    assert {10: 2, 5: 1, 37: 18, 2: 0}[n] == k


# ---------------------------------------------------------------- refusals


def test_ratio_of_a_signed_value_metric_names_every_arm_with_a_value_at_or_below_zero() -> None:
    """A ratio of a value metric with a 0 in baseline and a negative value in treated is
    refused; the message names both arms with their counts."""
    b = arm("b", [0.0, 2.0, 3.0, 4.0], kind="value")
    t = arm("t", [-1.0, 0.5, 2.0, 3.0], kind="value")
    result = compare(b, t, direction="less")
    assert result.verdict == Verdict.INCONCLUSIVE
    assert result.reason == (
        "No verdict is possible: arm 'b' has 1 value(s) <= 0 and arm 't' has 1 value(s) <= 0, "
        "and a ratio of statistics of a signed value metric is meaningful only when every "
        "value is > 0 (use effect: difference).")


def test_ratio_of_a_value_metric_with_values_below_one_is_judged() -> None:
    """Values in (0, 1] are positive: the ratio is judged, the estimate the median of the
    per-seed ratios."""
    b = arm("b", [0.5, 2.0, 3.0, 4.0], kind="value")
    t = arm("t", [0.25, 1.0, 1.5, 2.0], kind="value")
    result = compare(b, t, direction="less")
    assert result.estimate == pytest.approx(0.5, rel=1e-12)
    assert not result.reason.startswith("No verdict")


def test_paired_ratio_of_times_refuses_a_paired_time_of_zero() -> None:
    """A per-seed ratio of times takes logs: a paired time of 0 is refused with the counts of
    paired values <= 0 (seed 5 of baseline, without a partner, is not counted; a time of 1 is
    fine)."""
    b = arm("b", [0.0, 1.0, 300.0, 400.0, 500.0, 0.0])
    t = arm("t", [0.0, 0.0, 150.0, 200.0, 250.0])
    result = compare(b, t, direction="less")
    assert result.verdict == Verdict.INCONCLUSIVE
    assert result.reason == (
        "No verdict is possible: arm 'b' has 1 paired value(s) <= 0 and arm 't' has 2 paired "
        "value(s) <= 0, and a per-seed ratio compares logs (use effect: difference).")


def test_a_missing_arm_is_a_wiring_error_naming_the_criterion() -> None:
    """An arm without data raises KeyError naming the criterion and the arm."""
    crit = CRITERIA["scalar_compare"]
    params = crit.model_validate({"name": "scalar_compare", "baseline": "b",
                                               "treated": "t", "direction": "less"})
    with pytest.raises(KeyError, match=r"scalar_compare: no data for arm\(s\) \['t'\]"):
        judge(params, {"b": arm("b", [1.0, 2.0])})


# ---------------------------------------------------------------- the Kaplan-Meier median's p's


def _km_arm() -> ArmSample:
    """Five of eight seeds at step 100, one at 200, two censored later: at 80% only the event
    time 100 passes the test of S(t) = 1/2, so the Brookmeyer-Crowley CI is [100, 200]."""
    return arm("a", [100, 100, 100, 100, 100, 200, 300, 400], [1, 1, 1, 1, 1, 1, 0, 0])


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
    a = arm("a", [100, 100, 100, 100, 100, 200, 300], [1, 1, 1, 1, 1, 1, 0])
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
    a = arm("a", [100, 120, 150, 180, 200, 250, 300], [1, 1, 0, 1, 1, 1, 1])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = value(a, target=150.0, tol=100.0, statistic="median", censored="as_budget")
    assert result.ci == (100.0, 300.0)
    assert result.verdict == Verdict.INCONCLUSIVE and coherent(result)


@pytest.mark.parametrize(("statistic", "method", "ci_method"), [
    ("median", "exact order-statistic CI of the median of the per-pair effects (no test)",
     ORDER_METHOD),
    ("mean", "bootstrap-t CI of the mean of the per-pair effects (no test)", BOOT_T_METHOD),
])
def test_the_paired_test_line_names_the_ci_that_is_computed(statistic: str, method: str,
                                                            ci_method: str) -> None:
    """Paired median and mean are one-sample problems with their own CIs (order statistics,
    bootstrap-t), not the BCa bootstrap: the test line a reader sees says which."""
    b = arm("b", [1, 2.5, -0.5, 3, 0, 1.5], kind="value")
    t = arm("t", [3.5, 4, 2, 6.5, 2.5, 3], kind="value")
    result = compare(b, t, direction="greater", statistic=statistic, effect="difference",
                     min_effect=1.0, n_boot=200)
    rho = sps.spearmanr(b.values, t.values).statistic
    assert result.test == f"{method}; analysis: paired (6 pairs, within-pair correlation {rho:.3g})"
    assert result.details["ci_method"] == f"{ci_method}, of the per-pair effects"


def test_a_paired_withheld_verdict_names_the_per_pair_statistic() -> None:
    """Paired: what a censored seed leaves undetermined is the median of the per-pair effects
    (the treated arm's own median is determined here), and the reason says so."""
    b = arm("b", [400, 500, 600, 700, 800, 4000])
    t = arm("t", [200, 260, 290, 350, 420, 1000], [1, 1, 1, 1, 1, 0])
    result = compare(b, t, direction="less", effect="ratio", min_effect=0.2)
    assert result.verdict == Verdict.INCONCLUSIVE
    assert result.reason.endswith(
        "which would support the claim, but arm 't' has 1 censored seed(s) entered at the "
        "budget, a lower bound that leaves its median of the per-pair effects undetermined, so "
        "no verdict is drawn.")
