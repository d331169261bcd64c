"""equivalence (grokverify/stats/equivalence.py): the TOST of one arm, two arms and paired arms
against statsmodels and hand-computed t intervals, the words of each form, zero spread,
censoring and the refusals."""

from __future__ import annotations

import math
import statistics
import warnings
from typing import Any

import numpy as np
import pytest
from conftest import AS_BUDGET, REFUSE, SPEARMAN_PAIRS, Has, correlated_arms, run_criterion
from scipy import stats as sps
from statsmodels.stats.weightstats import CompareMeans, DescrStatsW, ttost_ind

from grokverify.stats.base import ArmSample, CriterionResult, Verdict
from grokverify.stats.simulate import make_arm

P_LABEL = "TOST p against the margins (the same as p(support))"


def run(params: dict[str, Any], *arms: ArmSample) -> CriterionResult:
    return run_criterion({"name": "equivalence", **params}, *arms)


def two(**kw: Any) -> dict[str, Any]:
    return {"baseline": "b", "treated": "t", **kw}


def assert_matches(actual: Any, expected: Any, path: str = "") -> None:
    """Equal trees (dicts with the same keys, lists), floats to 1e-9 relative."""
    if isinstance(expected, dict):
        assert isinstance(actual, dict), path
        assert list(actual) == list(expected), path
        for k in expected:
            assert_matches(actual[k], expected[k], f"{path}.{k}")
    elif isinstance(expected, list):
        assert isinstance(actual, list) and len(actual) == len(expected), path
        for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
            assert_matches(a, e, f"{path}[{i}]")
    elif isinstance(expected, float):
        assert actual == pytest.approx(expected, rel=1e-9, abs=1e-15), path
    else:
        assert actual == expected, path


def t_sides(est: float, se: float, df: float, low: float, upp: float) -> tuple[float, float]:
    """(p_support, p_refute) of the two one-sided t tests against the margins, by hand."""
    t_low, t_upp = (est - low) / se, (est - upp) / se
    return (max(sps.t.sf(t_low, df), sps.t.cdf(t_upp, df)),
            min(sps.t.cdf(t_low, df), sps.t.sf(t_upp, df)))


# ---------------------------------------------------------------- known answers


B_EQ = make_arm("b", [10.2, 9.8, 10.5, 9.9, 10.1, 10.4, 9.7, 10.0])
T_EQ = make_arm("t", [10.3, 10.1, 9.6, 10.2, 10.0, 9.9, 10.4, 10.6])


@pytest.mark.parametrize("usevar", ["unequal", "pooled"])
def test_equivalence_matches_ttost_ind(usevar: str) -> None:
    res = run(two(margin=0.5, usevar=usevar, paired=False), B_EQ, T_EQ)
    assert res.p_value == pytest.approx(
        ttost_ind(T_EQ.values, B_EQ.values, -0.5, 0.5, usevar=usevar)[0], rel=1e-12)
    cm = CompareMeans(DescrStatsW(T_EQ.values), DescrStatsW(B_EQ.values))
    assert res.ci == pytest.approx(cm.tconfint_diff(alpha=0.1, usevar=usevar), rel=1e-12)
    assert res.ci_level == pytest.approx(0.9) and "1 - 2 alpha" in res.details["ci_convention"]
    assert res.estimate == pytest.approx(T_EQ.values.mean() - B_EQ.values.mean())
    assert res.verdict == Verdict.SUPPORTED
    assert (res.p_value < 0.05) == (res.verdict == Verdict.SUPPORTED)


def test_equivalence_relative_matches_ttost_ind_log() -> None:
    res = run(two(margin=0.2, margin_kind="relative", paired=False), B_EQ, T_EQ)
    ref = ttost_ind(T_EQ.values, B_EQ.values, 0.8, 1.25, usevar="unequal", transform=np.log)[0]
    assert res.p_value == pytest.approx(ref, rel=1e-12)
    gm = np.exp(np.log(T_EQ.values).mean() - np.log(B_EQ.values).mean())
    assert res.estimate == pytest.approx(gm) and res.verdict == Verdict.SUPPORTED


def test_equivalence_one_arm_hand_computed() -> None:
    a = make_arm("a", [1, 2, 3, 4, 5])  # mean 3, se sqrt(0.5), t_{0.95, 4} = 2.131847
    res = run({"arm": "a", "reference": 3, "margin": 1.6}, a)
    half = 2.131847 * math.sqrt(0.5)
    assert res.ci == pytest.approx((3 - half, 3 + half), rel=1e-6)
    assert res.p_value == pytest.approx(DescrStatsW(a.values).ttost_mean(1.4, 4.6)[0], rel=1e-12)
    assert res.verdict == Verdict.SUPPORTED  # [1.49, 4.51] within [1.4, 4.6]
    assert run({"arm": "a", "reference": 3, "margin": 1.4}, a).verdict == Verdict.INCONCLUSIVE
    assert run({"arm": "a", "reference": 0, "margin": 1.0}, a).verdict == Verdict.REFUTED
    rel = run({"arm": "a", "reference": 3, "margin": 0.2, "margin_kind": "relative"}, a)
    assert rel.estimate == pytest.approx(sps.gmean(a.values))


@pytest.mark.parametrize(("shift", "expected"), [
    (0.0, Verdict.SUPPORTED), (3.0, Verdict.REFUTED), (-3.0, Verdict.REFUTED),
    (0.9, Verdict.INCONCLUSIVE)])
def test_equivalence_verdicts(shift: float, expected: Verdict) -> None:
    t = make_arm("t", T_EQ.values + shift)
    assert run(two(margin=1.0), B_EQ, t).verdict == expected


# two arms of different sizes (Welch), for which the one-sided t formula and statsmodels'
# ttost_ind differ in the last bits
E_BASE = make_arm("b", [1.809, 2.331, 1.666, 1.394, 2.864, 1.488])
E_TREAT = make_arm("t", [1.294, 1.56, 1.679, 1.45, 2.073, 2.874, 1.252, 1.83])


def test_equivalence_p_is_statsmodels_ttost_ind() -> None:
    """The reported TOST p is statsmodels' ``ttost_ind`` p itself (as documented), not a
    recomputation."""
    res = run(two(margin=1.0, paired=False), E_BASE, E_TREAT)
    expected = ttost_ind(E_TREAT.values, E_BASE.values, -1.0, 1.0, usevar="unequal")[0]
    assert res.p_value == float(expected)
    assert res.p_support == pytest.approx(float(expected), rel=1e-12)


@pytest.mark.parametrize("paired", [True, False])
def test_equivalence_p_values_match_the_tost(paired: bool) -> None:
    rng = np.random.default_rng(9)
    seen = set()
    for ratio in np.linspace(0.5, 1.6, 30):
        b, t = correlated_arms(rng, 12, 0.8, ratio=float(ratio), sigma=0.3)
        res = run(two(margin=0.2, margin_kind="relative", paired=paired), b, t)
        assert res.p_support == pytest.approx(res.p_value, rel=1e-9)
        assert (res.verdict == Verdict.SUPPORTED) == (res.p_support <= 0.05)
        assert (res.verdict == Verdict.REFUTED) == (res.p_refute < 0.05)
        seen.add(res.verdict)
    assert seen == {Verdict.SUPPORTED, Verdict.REFUTED, Verdict.INCONCLUSIVE}


def test_paired_equivalence_is_a_one_sample_tost_of_differences() -> None:
    b = make_arm("b", [10.2, 9.8, 10.5, 9.9, 10.1, 10.4, 9.7, 10.0], kind="value")
    t = make_arm("t", [10.3, 10.0, 10.6, 10.0, 10.1, 10.6, 9.8, 10.2], kind="value")
    res = run(two(margin=0.3), b, t)
    d = t.values - b.values
    se = d.std(ddof=1) / math.sqrt(d.size)
    half = sps.t.ppf(0.95, d.size - 1) * se
    assert res.ci == pytest.approx((d.mean() - half, d.mean() + half), rel=1e-12)
    assert res.verdict == Verdict.SUPPORTED and "paired" in res.test


# ---------------------------------------------------------------- whole results


def test_unpaired_pooled_result_is_pinned() -> None:
    """A two-sample pooled-variance TOST: the reader relies on the estimate, the 90% CI, the
    TOST p and the one-sided p's with n1 + n2 - 2 degrees of freedom (unequal arms, so Welch's
    would differ), the per-arm table (seeds, mean, sd, censored) and every word of the result."""
    bv, tv = [10.0, 12.0, 11.0, 13.0, 9.0], [11.0, 12.5, 10.0, 12.0]
    res = run(two(margin=2.0, usevar="pooled", paired=False), make_arm("b", bv), make_arm("t", tv))
    est = float(np.mean(tv) - np.mean(bv))  # 0.375
    sp2 = ((len(bv) - 1) * statistics.variance(bv) + (len(tv) - 1) * statistics.variance(tv)) / 7
    se = math.sqrt(sp2 * (1 / 5 + 1 / 4))
    half = float(sps.t.ppf(0.95, 7)) * se
    p_support, p_refute = t_sides(est, se, 7, -2.0, 2.0)
    assert est == 0.375 and p_support > 0.05  # CI overlaps the upper margin: INCONCLUSIVE
    reason = Has("90% CI of the difference of means (t - b), [-1.4, 2.15]",
                 "overlaps the claimed region [-2, 2] without lying within it",
                 "neither support nor refute", "(point estimate 0.375).")
    assert_matches(res.to_dict(), {
        "criterion": "equivalence",
        "effect_label": "difference of means (t - b)",
        "estimate": est, "ci": [est - half, est + half], "ci_level": 0.9,
        "p_value": p_support,
        "test": "TOST, two samples (statsmodels ttost_ind, usevar=pooled)",
        "threshold": 2.0,
        "claimed_region": "difference of means (t - b) within [-2, 2]",
        "verdict": "INCONCLUSIVE", "reason": reason,
        "arms": [
            {"name": "b", "n": 5, "excluded": {},
             "columns": {"seeds": 5, "mean": 11.0, "sd": math.sqrt(2.5),
                         "censored (as budget)": 0}},
            {"name": "t", "n": 4, "excluded": {},
             "columns": {"seeds": 4, "mean": 11.375, "sd": math.sqrt(3.6875 / 3),
                         "censored (as budget)": 0}}],
        "details": {
            "censoring": REFUSE, "censored_policy": "refuse",
            "censored_seeds": {"b": 0, "t": 0},
            "ci_convention": "90% CI = 1 - 2 alpha (TOST, alpha = 0.05)",
            "equivalence_region": [-2.0, 2.0], "margin_kind": "absolute",
            "analysis": "unpaired", "paired": False, "n_pairs": 4,
            "broken_pairs": {"b": 1, "t": 0},
            "within_pair_correlation": 0.6,  # ranks (1,3,2,4) vs (2,4,1,3): 1 - 6*4/60
            "within_pair_correlation_method": SPEARMAN_PAIRS,
            "withheld_by_lower_bound_rule": [],
            "p_support": p_support, "p_refute": p_refute},
        "p_support": p_support, "p_refute": p_refute,
        "p_value_label": P_LABEL,
    })


def test_paired_relative_result_with_a_broken_censored_pair_is_pinned() -> None:
    """A paired TOST on log ratios: the seed of 'b' without a partner (censored, 500) is left out
    of the analysis, so it neither withholds the SUPPORTED verdict nor voids the p's; the reason
    counts it, the table still shows it, and the estimate / CI are back on the ratio scale."""
    bv, tv = [100.0, 200.0, 150.0, 120.0, 500.0], [105.0, 190.0, 160.0, 118.0]
    res = run(two(margin=0.2, margin_kind="relative", censored="as_budget"),
              make_arm("b", bv, [1, 1, 1, 1, 0]), make_arm("t", tv))
    logs = [math.log(t / b) for b, t in zip(bv[:4], tv, strict=True)]
    m, se = statistics.mean(logs), statistics.stdev(logs) / 2.0
    half = float(sps.t.ppf(0.95, 3)) * se
    p_support, p_refute = t_sides(m, se, 3, math.log(0.8), math.log(1.25))
    reason = Has("90% CI of the geometric mean of per-seed ratios (t / b), [0.948, 1.08]",
                 "wholly within the claimed region [0.8, 1.25]",
                 "(point estimate 1.01); 1 seed(s) without a partner in the other arm",
                 "left out (b: 1).")
    analysis = "paired (4 pairs, within-pair correlation 1)"
    assert_matches(res.to_dict(), {
        "criterion": "equivalence",
        "effect_label": "geometric mean of per-seed ratios (t / b)",
        "estimate": math.exp(m), "ci": [math.exp(m - half), math.exp(m + half)],
        "ci_level": 0.9, "p_value": p_support,
        "test": "TOST, paired: one sample of per-seed differences (statsmodels ttost_mean), on "
                f"log values; analysis: {analysis}",
        "threshold": 0.2,
        "claimed_region": "geometric mean of per-seed ratios (t / b) within [0.8, 1.25]",
        "verdict": "SUPPORTED", "reason": reason,
        "arms": [
            {"name": "b", "n": 5, "excluded": {},
             "columns": {"seeds": 5, "geometric mean": float(sps.gmean(bv)),
                         "sd": statistics.stdev(bv), "censored (as budget)": 1}},
            {"name": "t", "n": 4, "excluded": {},
             "columns": {"seeds": 4, "geometric mean": float(sps.gmean(tv)),
                         "sd": statistics.stdev(tv), "censored (as budget)": 0}}],
        "details": {
            "censoring": AS_BUDGET, "censored_policy": "as_budget",
            "censored_seeds": {"b": 1, "t": 0},
            "ci_convention": "90% CI = 1 - 2 alpha (TOST, alpha = 0.05)",
            "equivalence_region": [0.8, 1.25], "margin_kind": "relative",
            "analysis": analysis, "paired": True, "n_pairs": 4,
            "broken_pairs": {"b": 1, "t": 0},
            "within_pair_correlation": 1.0, "within_pair_correlation_method": SPEARMAN_PAIRS,
            "withheld_by_lower_bound_rule": [],
            "p_support": p_support, "p_refute": p_refute},
        "p_support": p_support, "p_refute": p_refute,
        "p_value_label": P_LABEL,
    })


def test_one_arm_relative_table_and_ci_convention() -> None:
    """One arm on the log scale, values below 1, alpha 0.1: the table shows the geometric mean
    (not the arithmetic one) and the sd of the values; the details state the 80% CI convention
    and the region [reference (1 - m), reference / (1 - m)]."""
    values = [0.5, 0.8, 0.6, 0.7]
    res = run({"arm": "a", "reference": 0.65, "margin": 0.2, "margin_kind": "relative",
               "alpha": 0.1}, make_arm("a", values))
    logs = np.log(values)
    m, se = float(logs.mean()), float(logs.std(ddof=1)) / 2.0
    half = float(sps.t.ppf(0.9, 3)) * se
    assert res.estimate == pytest.approx(math.exp(m), rel=1e-12)
    assert res.ci == pytest.approx((math.exp(m - half), math.exp(m + half)), rel=1e-12)
    assert res.effect_label == "geometric mean of a"
    assert res.claimed_region == "geometric mean of a within [0.52, 0.812]"
    assert res.test == "TOST, one sample (statsmodels DescrStatsW.ttost_mean), on log values"
    assert res.details["ci_convention"] == "80% CI = 1 - 2 alpha (TOST, alpha = 0.1)"
    assert res.details["equivalence_region"] == pytest.approx([0.52, 0.8125])
    assert res.details["margin_kind"] == "relative"
    assert_matches(res.to_dict()["arms"], [
        {"name": "a", "n": 4, "excluded": {},
         "columns": {"seeds": 4, "geometric mean": math.exp(m), "sd": statistics.stdev(values),
                     "censored (as budget)": 0}}])


def test_two_seeds_per_arm_are_enough() -> None:
    """Two seeds an arm is the minimum the criterion needs: it gives a Welch TOST (by hand) and
    the table shows each arm's sd."""
    res = run(two(margin=100.0, paired=False), make_arm("b", [1.0, 3.0]), make_arm("t", [2.0, 5.0]))
    v1, v2 = 2.0 / 2, 4.5 / 2  # s^2 / n
    se = math.sqrt(v1 + v2)
    df = (v1 + v2) ** 2 / (v1 ** 2 + v2 ** 2)  # Welch-Satterthwaite, n - 1 = 1
    half = float(sps.t.ppf(0.95, df)) * se
    assert res.verdict == Verdict.SUPPORTED
    assert res.ci == pytest.approx((1.5 - half, 1.5 + half), rel=1e-9)
    assert [a.columns for a in res.arms] == [
        {"seeds": 2, "mean": 2.0, "sd": pytest.approx(math.sqrt(2.0)), "censored (as budget)": 0},
        {"seeds": 2, "mean": 3.5, "sd": pytest.approx(math.sqrt(4.5)), "censored (as budget)": 0}]


# ---------------------------------------------------------------- words of each form


B4, T4 = [10.0, 12.0, 11.0, 13.0], [11.0, 12.5, 10.0, 12.0]
ONE = "TOST, one sample (statsmodels DescrStatsW.ttost_mean)"
PAIRED = "TOST, paired: one sample of per-seed differences (statsmodels ttost_mean)"
WELCH = "TOST, two samples (statsmodels ttost_ind, usevar=unequal)"
PAIRS = "; analysis: paired (4 pairs, within-pair correlation 0.6)"
NO_PAIRS = ("; analysis: unpaired (the arms share 0 seed number(s) (different seed sets)",
            "fewer than the 2 pairs a paired analysis needs)")


@pytest.mark.parametrize(("params", "t_seeds", "label", "test", "region"), [
    ({"arm": "b", "reference": 11.0, "margin": 2.0}, None,
     "mean of b", ONE, "[9, 13]"),
    ({"arm": "b", "reference": 11.0, "margin": 0.2, "margin_kind": "relative"}, None,
     "geometric mean of b", ONE + ", on log values", "[8.8, 13.8]"),
    (two(margin=2.0), None,
     "mean of per-seed differences (t - b)", PAIRED + PAIRS, "[-2, 2]"),
    (two(margin=2.0, paired=False), None,
     "difference of means (t - b)", WELCH, "[-2, 2]"),
    (two(margin=0.2, margin_kind="relative"), None,
     "geometric mean of per-seed ratios (t / b)", PAIRED + ", on log values" + PAIRS,
     "[0.8, 1.25]"),
    (two(margin=0.2, margin_kind="relative", paired=False), None,
     "ratio of geometric means (t / b)", WELCH + ", on log values", "[0.8, 1.25]"),
    (two(margin=2.0), (10, 11, 12, 13),
     "difference of means (t - b)", Has(WELCH + NO_PAIRS[0], NO_PAIRS[1]), "[-2, 2]"),
])
def test_each_form_names_its_effect_method_and_region(
        params: dict[str, Any], t_seeds: Any, label: str, test: str, region: str) -> None:
    """The reader learns what was estimated (effect label), how (the method, the analysis and the
    log scale) and against what (claimed region), for each of the six forms and for paired arms
    that share no seed numbers; the reason names the same effect."""
    res = run(params, make_arm("b", B4), make_arm("t", T4, seeds=t_seeds))
    assert res.criterion == "equivalence"
    assert res.effect_label == label
    assert res.test == test
    assert res.claimed_region == f"{label} within {region}"
    assert res.reason.startswith(f"The 90% CI of the {label}, [")
    assert res.p_value_label == P_LABEL


# ---------------------------------------------------------------- zero spread


@pytest.mark.parametrize(("values", "verdict", "p_support", "p_refute"), [
    ([4.0, 4.0, 4.0], Verdict.SUPPORTED, 0.0, 1.0),  # estimate 4 = upper margin
    ([2.0, 2.0, 2.0], Verdict.SUPPORTED, 0.0, 1.0),  # estimate 2 = lower margin
    ([6.0, 6.0, 6.0], Verdict.REFUTED, 1.0, 0.0),  # exactly outside
])
def test_zero_spread_sample_decides_nothing(values: list[float], verdict: Verdict,
                                            p_support: float, p_refute: float) -> None:
    """All values equal: a zero-width t interval does not hold (a single value is no CI), so the
    verdict is INCONCLUSIVE; the computed verdict and p's (0 or 1; a margin belongs to the
    region) are kept in the details."""
    res = run({"arm": "a", "reference": 3.0, "margin": 1.0}, make_arm("a", values))
    assert res.verdict == Verdict.INCONCLUSIVE and res.ci == (-math.inf, math.inf)
    assert res.details["verdict_if_interval_held"] == verdict.value
    assert res.details["p_computed"] == [p_support, p_refute]
    assert (res.details["p_support"], res.details["p_refute"]) == (p_support, p_refute)
    assert res.details["interval_fails"] == Has("all 3 values of each arm are equal",
                                                "no spread to estimate, and a single value is "
                                                "no CI")
    assert (res.p_support, res.p_refute) == (None, None)
    assert res.p_value == p_support  # the exact TOST p, not statsmodels' 0/0


def test_zero_spread_paired_differences_at_the_margins() -> None:
    """Paired arms whose per-seed differences all equal a margin: computed inside (p_support 0),
    and set aside by the interval rule."""
    b = make_arm("b", [1.0, 2.0, 3.0])
    for shift in (1.0, -1.0):
        res = run(two(margin=1.0), b, make_arm("t", b.values + shift))
        assert res.estimate == shift and res.verdict == Verdict.INCONCLUSIVE
        assert res.details["verdict_if_interval_held"] == "SUPPORTED"
        assert res.details["p_computed"] == [0.0, 1.0]
        assert "all 3 per-seed effects are equal" in res.reason


def test_zero_spread_under_numpy_raise() -> None:
    """A caller that runs numpy with floating-point errors raised (np.errstate(all="raise"), a
    debugging setting) still gets the zero-spread result."""
    with np.errstate(all="raise"):
        res = run({"arm": "a", "reference": 3.0, "margin": 1.0}, make_arm("a", [4.0, 4.0, 4.0]))
    assert res.details["verdict_if_interval_held"] == "SUPPORTED"
    assert res.details["p_computed"] == [0.0, 1.0]


# ---------------------------------------------------------------- censoring


def test_equivalence_censoring_and_logs() -> None:
    t = make_arm("t", [10.0] * 7 + [12.0], [True] * 7 + [False])
    res = run(two(margin=5.0), B_EQ, t)
    assert res.verdict == Verdict.INCONCLUSIVE and "censored: refuse" in res.reason
    res = run(two(margin=5.0, censored="as_budget"), B_EQ, t)  # would be SUPPORTED
    assert res.verdict == Verdict.INCONCLUSIVE and "would support" in res.reason
    zero = make_arm("t", [0.0, 1.0, 2.0])
    res = run(two(margin=0.2, margin_kind="relative"), B_EQ, zero)
    assert res.verdict == Verdict.INCONCLUSIVE and "value(s) <= 0" in res.reason


def test_one_arm_refuted_below_with_censoring_is_withheld() -> None:
    """Censored values pull a mean down: an arm found below the region may truly lie in it, so
    REFUTED is withheld, the reason says which arm and why, the details list it, and the p's
    (invalid with censoring) are None."""
    a = make_arm("a", [1.0, 1.2, 0.9, 1.2], [1, 1, 1, 0])
    res = run({"arm": "a", "reference": 10.0, "margin": 1.0, "censored": "as_budget"}, a)
    se = statistics.stdev(a.values) / 2.0
    half = float(sps.t.ppf(0.95, 3)) * se
    est = float(np.mean(a.values))
    assert res.ci == pytest.approx((est - half, est + half), rel=1e-12)
    assert res.verdict == Verdict.INCONCLUSIVE
    assert res.reason == Has("90% CI of the mean of a, [0.898, 1.25]",
                             "wholly below the claimed region [9, 11], excluding it",
                             "(point estimate 1.07), which would refute the claim",
                             "arm 'a' has 1 censored seed(s) entered at the budget",
                             "leaves its mean undetermined, so no verdict is drawn.")
    assert res.details["withheld_by_lower_bound_rule"] == ["a"]
    assert res.p_support is None and res.p_refute is None


def test_one_arm_refuted_above_with_censoring_stands() -> None:
    """An arm above the region stays above whatever its censored seeds' true values: REFUTED
    stands, but its p's are still None (a censored mean has no valid p)."""
    a = make_arm("a", [20.0, 21.0, 19.0, 21.0], [1, 1, 1, 0])
    res = run({"arm": "a", "reference": 10.0, "margin": 1.0, "censored": "as_budget"}, a)
    assert res.verdict == Verdict.REFUTED
    assert res.details["withheld_by_lower_bound_rule"] == []
    assert res.p_support is None and res.p_refute is None
    assert res.details["p_refute"] < 0.05  # the computed side is kept in the details


@pytest.mark.parametrize(("tv", "censored_arm", "verdict", "withheld"), [
    ([1.0, 2.0, 1.5, 2.0], "t", Verdict.INCONCLUSIVE, ["t"]),  # below: a low treated at risk
    ([1.0, 2.0, 1.5, 2.0], "b", Verdict.REFUTED, []),
    ([20.0, 21.0, 19.0, 21.0], "b", Verdict.INCONCLUSIVE, ["b"]),  # above: a low baseline
    ([20.0, 21.0, 19.0, 21.0], "t", Verdict.REFUTED, []),
])
def test_two_arm_refuted_with_censoring(tv: list[float], censored_arm: str, verdict: Verdict,
                                        withheld: list[str]) -> None:
    """treated - baseline below the region: only a censored treated arm could have pulled it
    there; above it: only a censored baseline arm. Only that arm withholds REFUTED."""
    last = [1, 1, 1, 0]
    b = make_arm("b", [10.0, 11.0, 9.0, 10.0], last if censored_arm == "b" else None)
    t = make_arm("t", tv, last if censored_arm == "t" else None)
    res = run(two(margin=1.0, censored="as_budget", paired=False), b, t)
    assert res.verdict == verdict
    assert res.details["withheld_by_lower_bound_rule"] == withheld


# ---------------------------------------------------------------- refusals


def test_relative_margin_refuses_non_positive_values() -> None:
    """A relative margin compares logs: the reason counts each arm's values <= 0 (0 counts, 0.5
    does not), and the table shows no geometric mean for an arm with a 0, without numpy
    warnings."""
    b, t = make_arm("b", [0.0, 2.0, 3.0]), make_arm("t", [0.5, 0.0, 2.0, 0.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = run(two(margin=0.2, margin_kind="relative"), b, t)
    assert res.verdict == Verdict.INCONCLUSIVE
    assert res.reason == Has("No verdict is possible",
                             "arm 'b' has 1 value(s) <= 0 and arm 't' has 2 value(s) <= 0",
                             "a relative margin compares logs.")
    assert [a.columns["geometric mean"] for a in res.arms] == [pytest.approx(math.nan,
                                                                             nan_ok=True)] * 2
    assert [a.columns["sd"] for a in res.arms] == [pytest.approx(statistics.stdev(b.values)),
                                                   pytest.approx(statistics.stdev(t.values))]


@pytest.mark.parametrize("margin_kind", ["absolute", "relative"])
def test_too_few_seeds_table_and_reason(margin_kind: str) -> None:
    """An arm with no usable seed and one with a single seed: no verdict, the reason says which
    and what was left out, the table shows NaN means and sds, and numpy stays quiet."""
    b = make_arm("b", [], excluded={"diverged": 3})
    t = make_arm("t", [5.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = run(two(margin=0.2, margin_kind=margin_kind), b, t)
    assert res.verdict == Verdict.INCONCLUSIVE
    assert res.reason == Has("No verdict is possible",
                             "arm 'b' has no usable seed (left out: diverged: 3); arm 't'",
                             "arm 't' has 1 usable seed(s), fewer than the 2",
                             "(left out: none).")
    mean = "mean" if margin_kind == "absolute" else "geometric mean"
    cols = res.to_dict()["arms"]
    assert [c["columns"] for c in cols] == [
        {"seeds": 0, mean: None, "sd": None, "censored (as budget)": 0},
        {"seeds": 1, mean: pytest.approx(5.0), "sd": None, "censored (as budget)": 0}]


def test_missing_arm_names_the_criterion() -> None:
    """A claim naming an arm without data is a wiring error that says which criterion."""
    with pytest.raises(KeyError, match=r"equivalence: no data for arm\(s\) \['t'\]"):
        run(two(margin=1.0), make_arm("b", [1.0, 2.0]))


def test_restricted_policy_decides_what_refuse_leaves_open() -> None:
    """Every baseline seed generalises, 22 of 24 treated seeds never do within 4,000 steps: the
    restricted times differ ~8-fold, so "equal" is REFUTED where `refuse` withholds it."""
    base = make_arm("b", np.linspace(300, 600, 24))
    treat = make_arm("t", [4000.0] * 22 + [900, 1000], observed=[0] * 22 + [1, 1])
    rel = two(margin=0.2, margin_kind="relative")
    refused = run({**rel, "censored": "refuse"}, base, treat)
    assert refused.verdict == Verdict.INCONCLUSIVE and "22 of 24 seeds censored" in refused.reason
    res = run({**rel, "censored": "restricted"}, base, treat)
    assert res.verdict == Verdict.REFUTED and res.ci[0] > 1.25
    assert res.estimate == pytest.approx(8.05, abs=0.01)
    assert res.details["restricted_tau"] == 4000.0 and res.p_refute is not None


def test_restricted_policy_withholds_support_when_many_seeds_are_at_tau() -> None:
    """Two similar arms, 3 of 12 treated seeds at τ (25% > 10%): the CI lies within the margin
    but SUPPORTED is withheld; with 1 of 12 (8%) it stands."""
    rng = np.random.default_rng(3)
    times = np.exp(rng.normal(np.log(1000), 0.05, 12))
    base = make_arm("b", times)
    rel = two(margin=0.2, margin_kind="relative", censored="restricted")
    for censored, verdict in ((3, Verdict.INCONCLUSIVE), (1, Verdict.SUPPORTED)):
        t = times * np.exp(rng.normal(0.02, 0.03, 12))
        t[:censored] = 1050.0
        res = run(rel, base, make_arm("t", t, observed=[0] * censored + [1] * (12 - censored)))
        assert res.verdict == verdict, res.reason
        assert ("arm 't' has more than 10% of seeds at τ" in res.reason) == (censored == 3)
        if censored == 3:
            assert res.reason == Has(
                "), which would support the claim, but arm 't' has more than 10% of seeds at τ, "
                "where SUPPORTED is not calibrated to its level (docs/verdicts.md, \"Censoring "
                "and divergence\"), so no verdict is drawn.") and res.reason.endswith("drawn.")
    ten = times[:10] * np.exp(rng.normal(0.02, 0.03, 10))
    ten[0] = 1050.0  # 1 of 10 at τ: exactly 10%, not more
    res = run(rel, make_arm("b", times[:10]), make_arm("t", ten, observed=[0] + [1] * 9))
    assert res.verdict == Verdict.SUPPORTED, res.reason
    both = times * np.exp(rng.normal(0.02, 0.03, 12))
    both[:3] = 1050.0
    b_cut = times.copy()
    b_cut[9:] = 1050.0
    res = run(rel, make_arm("b", b_cut, observed=[1] * 9 + [0] * 3),
              make_arm("t", both, observed=[0] * 3 + [1] * 9))
    assert res.verdict == Verdict.INCONCLUSIVE and res.reason == Has(
        "but arm 'b', arm 't' have more than 10% of seeds at τ"), res.reason


def test_restricted_seeds_at_tau_take_the_bootstrap_t_interval() -> None:
    """With seeds at τ the paired TOST's CI is the bootstrap-t of the mean per-seed log ratio
    (the atom at τ skews it; the t interval under-covers: benchmarks/README.md); without any,
    the t interval as before. The p's are the bootstrap-t's against the margins."""
    from grokverify.stats.common import mean_bootstrap_t_ci

    rng = np.random.default_rng(5)
    times = np.exp(rng.normal(np.log(1000), 0.3, 16))
    base = make_arm("b", times)
    t = times * np.exp(rng.normal(0.1, 0.2, 16))
    rel = two(margin=0.2, margin_kind="relative", censored="restricted", n_boot=999,
              bootstrap_seed=7)
    plain = run(rel, base, make_arm("t", t))
    d = DescrStatsW(np.log(t / times))
    assert plain.ci == pytest.approx(tuple(np.exp(d.tconfint_mean(alpha=0.1))))
    assert "bootstrap-t" not in plain.test
    tau = float(np.sort(t)[11])
    cut = np.minimum(t, tau)
    res = run(rel, base, make_arm("t", cut, observed=t < tau))
    x = np.log(np.minimum(cut, tau) / np.minimum(times, tau))
    (lo, hi), _ = mean_bootstrap_t_ci(x, 0.9, 999, 7)
    assert res.ci == pytest.approx((math.exp(lo), math.exp(hi)))
    assert res.estimate == pytest.approx(math.exp(x.mean()))
    assert res.test == Has("TOST, paired", ", CI and p by bootstrap-t (some seeds at τ skew the "
                           "values), on restricted times min(T, τ = ")
    assert res.details["n_boot"] == 999
    unpaired = run({**rel, "paired": False}, base, make_arm("t", cut, observed=t < tau))
    assert "bootstrap-t" not in unpaired.test and "TOST, two samples" in unpaired.test
    assert 0 <= res.details["p_support"] <= 1 and 0 <= res.details["p_refute"] <= 1
    # the CI within the margins exactly when p(support) is at most alpha, as for the t form
    inside = res.ci[0] >= 0.8 and res.ci[1] <= 1.25
    assert inside == (res.details["p_support"] <= 0.05)
