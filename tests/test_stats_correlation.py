"""correlation (grokverify/stats/correlation.py): Spearman and Pearson estimates, their Fisher-z
CIs and p's against hand-computed oracles and scipy, the handling of undefined and censored
values, the words of its results and its refusals."""

from __future__ import annotations

import math
import re
import warnings
from typing import Any

import numpy as np
import pytest
from conftest import NOT_CENSORED, REFUSE, Has, run_criterion
from scipy import stats as sps

from grokverify.stats.base import ArmSample, CriterionResult, Verdict
from grokverify.stats.simulate import make_arm

X, Y = "val_threshold_step", "train_threshold_step"
Z975 = float(sps.norm.ppf(0.975))
Z95 = float(sps.norm.ppf(0.95))
NUMBERS = ("estimate", "ci", "p_value", "p_support", "p_refute")
AS_BUDGET = Has("censored values enter at their censoring value",
                "(Spearman: tied above observed ones under a common budget)",
                "no lower-bound rule")
SPEARMAN_SE = "Fisher z with Bonett-Wright se sqrt((1 + r^2/2)/(n-3))"
PEARSON_SE = "Fisher z, bias-corrected centre atanh(r) - r/(2(n-1)), se 1/sqrt(n-3)"
P_AGAINST = "one-sided z = (atanh(r) - atanh(θ)) / se, the CI's se"


def run(params: dict[str, Any], arm: ArmSample) -> CriterionResult:
    """The correlation criterion on one arm, with the claim's defaults of these tests."""
    return run_criterion({"name": "correlation", "arm": arm.name, "x": X, "y": Y,
                          "direction": "positive", "min_effect": 0.3, **params}, arm)


def time_arm(x: list[float], y: list[float], x_observed: list[int] | None = None,
             y_observed: list[int] | None = None, excluded: dict[str, int] | None = None,
             ) -> ArmSample:
    """An arm of time metrics: x is the claim's own metric (``values``), y is in ``extra``."""
    extra: dict[str, Any] = {Y: y}
    if y_observed is not None:
        extra[Y + ".observed"] = y_observed
    return make_arm("a", x, x_observed, extra, excluded=excluded)


def split_numbers(result: CriterionResult) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the numbers of the result, the rest of its dict: the words and counts a reader sees)."""
    d = result.to_dict()
    numbers = {k: d.pop(k) for k in NUMBERS}
    numbers["r column"] = d["arms"][0]["columns"].pop("r", None)
    return numbers, d


def t_test_p(r: float, n: int) -> float:
    """Two-sided p of r = 0 by the t statistic r sqrt((n - 2) / (1 - r^2)) on n - 2 df."""
    t = abs(r) * math.sqrt((n - 2) / (1 - r * r))
    return float(2 * sps.t.sf(t, n - 2))


# ---------------------------------------------------------------- known answers


def test_spearman_hand_computed() -> None:
    res = run({"min_effect": 0.0}, time_arm([1, 2, 3, 4, 5], [2, 1, 4, 3, 5]))
    assert res.estimate == pytest.approx(0.8)  # 1 - 6 * 4 / (5 * 24)
    se = math.sqrt((1 + 0.64 / 2) / 2)
    z = math.atanh(0.8)
    assert res.ci == pytest.approx((math.tanh(z - 1.959964 * se), math.tanh(z + 1.959964 * se)),
                                   rel=1e-6)
    assert res.p_value == pytest.approx(sps.spearmanr([1, 2, 3, 4, 5], [2, 1, 4, 3, 5]).pvalue)


def test_pearson_is_scipys_interval_less_the_fisher_z_bias() -> None:
    """r and p are scipy's; the CI is scipy's Fisher-z interval with its centre moved down by
    atanh(r)'s bias r / (2 (n - 1)), the same width on the z scale."""
    rng = np.random.default_rng(12)
    x = rng.uniform(100, 200, 25)
    y = x + rng.normal(0, 30, 25)
    res = run({"method": "pearson", "ci_level": 0.9}, time_arm(x, y))
    ref = sps.pearsonr(x, y)
    r = float(ref.statistic)
    assert res.estimate == pytest.approx(r)
    assert res.p_value == pytest.approx(ref.pvalue)
    shift = r / (2 * 24)
    scipy_z = np.arctanh(ref.confidence_interval(0.9))
    assert np.arctanh(res.ci) == pytest.approx(scipy_z - shift, rel=1e-9)
    half = 1.6448536 / math.sqrt(22)
    assert np.arctanh(res.ci) == pytest.approx(
        (math.atanh(r) - shift - half, math.atanh(r) - shift + half), rel=1e-6)


@pytest.mark.parametrize(("slope", "noise", "direction", "expected"), [
    (1.0, 5.0, "positive", Verdict.SUPPORTED), (-1.0, 5.0, "positive", Verdict.REFUTED),
    (1.0, 60.0, "positive", Verdict.INCONCLUSIVE), (-1.0, 5.0, "negative", Verdict.SUPPORTED)])
def test_correlation_verdicts(slope: float, noise: float, direction: str,
                              expected: Verdict) -> None:
    rng = np.random.default_rng(13)
    x = np.arange(100.0, 130.0)
    y = 500 + slope * x + rng.normal(0, noise, x.size)
    assert run({"direction": direction}, time_arm(x, y)).verdict == expected


def test_correlation_data_handling() -> None:
    x = [1, 2, 3, 4, 5, 6]
    y = [1, 3, 2, 5, 4, math.nan]
    res = run({"min_effect": 0.0}, time_arm(x, y))
    assert res.details["pairs_used"] == 5 and res.details["pairs_dropped_undefined"] == 1
    assert res.estimate == pytest.approx(sps.spearmanr(x[:5], y[:5]).statistic)
    few = run({}, time_arm([1, 2, 3, 4], [1, 2, math.nan, 4]))
    assert few.verdict == Verdict.INCONCLUSIVE and "3 complete" in few.reason
    const = run({}, time_arm([1, 2, 3, 4, 5], [7, 7, 7, 7, 7]))
    assert const.verdict == Verdict.INCONCLUSIVE and "constant" in const.reason
    with pytest.raises(KeyError, match=Y):
        run({}, make_arm("a", x))
    # x read from extra when present; y's observed mask from "<y>.observed"
    cens = make_arm("a", [0] * 6,
                    extra={X: x, Y: [1, 3, 2, 5, 4, 6], Y + ".observed": [1] * 5 + [0]})
    assert run({"min_effect": 0.0}, cens).details["censored_values"] == {X: 0, Y: 1}
    refused = run({"censored": "refuse"}, cens)
    assert refused.verdict == Verdict.INCONCLUSIVE and "1 censored value(s) of" in refused.reason


# ---------------------------------------------------------------- whole results


def test_spearman_positive_on_censored_times_whole_result() -> None:
    """A Spearman claim on two time metrics: the user reads the method named "Spearman", the
    claimed region "r >= 0.3", the Bonett-Wright CI, the censored counts per metric (columns
    and details), the as-budget censoring words, the undefined pair dropped and counted; the
    numbers are Fisher z with se sqrt((1 + r^2/2)/(n-3)) and its one-sided tests against
    atanh(0.3)."""
    x = [100, 200, 300, 400, 500, 600, 700]
    y = [150, 120, 400, 380, 900, 900, math.nan]  # two censored at the budget, one undefined
    arm = make_arm("a", np.zeros(7), extra={X: x, Y: y, Y + ".observed": [1, 1, 1, 1, 0, 0, 1]},
                   excluded={"diverged": 2})
    numbers, rest = split_numbers(run({}, arm))

    rx, ry = sps.rankdata(x[:6]), sps.rankdata(y[:6])  # censored tied above the observed
    assert list(ry) == [2, 1, 4, 3, 5.5, 5.5]
    r = float(np.corrcoef(rx, ry)[0, 1])
    z, se = math.atanh(r), math.sqrt((1 + r * r / 2) / 3)
    w = (z - math.atanh(0.3)) / se
    assert numbers == {
        "estimate": pytest.approx(r, rel=1e-12),
        "ci": pytest.approx([math.tanh(z - Z975 * se), math.tanh(z + Z975 * se)], rel=1e-9),
        "p_value": pytest.approx(t_test_p(r, 6), rel=1e-9),
        "p_support": pytest.approx(float(sps.norm.sf(w)), rel=1e-9),
        "p_refute": pytest.approx(float(sps.norm.cdf(w)), rel=1e-9),
        "r column": pytest.approx(r, rel=1e-12)}
    assert rest == {
        "criterion": "correlation",
        "effect_label": "Spearman correlation of train_threshold_step with val_threshold_step "
                        "in a",
        "ci_level": 0.95,
        "test": "scipy spearmanr (two-sided, H0: no correlation)",
        "threshold": 0.3,
        "claimed_region": "r >= 0.3",
        "verdict": "INCONCLUSIVE",
        "reason": Has("95% CI of the Spearman correlation of train_threshold_step with "
                      "val_threshold_step in a, [0.00325, 0.99]",
                      "straddles 0.3, the boundary of the claimed effect",
                      "neither support nor refute", "(point estimate 0.87)."),
        "arms": [{"name": "a", "n": 7, "excluded": {"diverged": 2},
                  "columns": {"pairs": 6, "censored val_threshold_step": 0,
                              "censored train_threshold_step": 2}}],
        "details": {"ci_method": SPEARMAN_SE, "pairs_used": 6, "pairs_dropped_undefined": 1,
                    "censored_values": {X: 0, Y: 2}, "censoring": AS_BUDGET,
                    "p_against_threshold": P_AGAINST},
        "p_value_label": "no-effect test p"}


def test_pearson_negative_on_value_metrics_whole_result() -> None:
    """A Pearson claim of a negative correlation between two value metrics at a 90% level: the
    user reads "Pearson", the claimed region "r <= -0.5", the bias-corrected Fisher z CI, no
    censored columns and the never-censored words; the verdict is SUPPORTED with the reason's
    "at or below -0.5". Numbers: centre atanh(r) - r/(2(n-1)), se 1/sqrt(n-3)."""
    fv = "final_value(curve=val_loss)"
    x = [1.0, 2, 3, 4, 5, 6]
    y = [5.0, 4.1, 4.3, 2.0, 1.5, 0.2]
    arm = make_arm("b", x, extra={fv: y}, kind="value")
    params = {"x": {"name": "curve_at", "curve": "val_acc", "step": 10},
              "y": {"name": "final_value", "curve": "val_loss"}, "method": "pearson",
              "direction": "negative", "min_effect": 0.5, "ci_level": 0.9}
    numbers, rest = split_numbers(run(params, arm))

    xa, ya = np.asarray(x), np.asarray(y)
    r = float(np.sum((xa - xa.mean()) * (ya - ya.mean()))
              / math.sqrt(np.sum((xa - xa.mean()) ** 2) * np.sum((ya - ya.mean()) ** 2)))
    centre, se = math.atanh(r) - r / (2 * 5), 1 / math.sqrt(3)
    w = (centre - math.atanh(-0.5)) / se
    assert numbers == {
        "estimate": pytest.approx(r, rel=1e-12),
        "ci": pytest.approx([math.tanh(centre - Z95 * se), math.tanh(centre + Z95 * se)],
                            rel=1e-9),
        "p_value": pytest.approx(t_test_p(r, 6), rel=1e-9),
        "p_support": pytest.approx(float(sps.norm.cdf(w)), rel=1e-9),  # claimed: r <= -0.5
        "p_refute": pytest.approx(float(sps.norm.sf(w)), rel=1e-9),
        "r column": pytest.approx(r, rel=1e-12)}
    assert rest == {
        "criterion": "correlation",
        "effect_label": "Pearson correlation of final_value(curve=val_loss) with "
                        "curve_at(curve=val_acc, step=10) in b",
        "ci_level": 0.9,
        "test": "scipy pearsonr (two-sided, H0: no correlation)",
        "threshold": -0.5,
        "claimed_region": "r <= -0.5",
        "verdict": "SUPPORTED",
        "reason": Has("90% CI of the Pearson correlation of final_value(curve=val_loss) with "
                      "curve_at(curve=val_acc, step=10) in b, [-0.993, -0.745]",
                      "wholly at or below -0.5, the boundary of the claimed effect",
                      "(point estimate -0.965)."),
        "arms": [{"name": "b", "n": 6, "excluded": {}, "columns": {"pairs": 6}}],
        "details": {"ci_method": PEARSON_SE, "pairs_used": 6, "pairs_dropped_undefined": 0,
                    "censored_values": {"curve_at(curve=val_acc, step=10)": 0, fv: 0},
                    "censoring": NOT_CENSORED, "p_against_threshold": P_AGAINST},
        "p_value_label": "no-effect test p"}


def test_spearman_negative_and_pearson_positive_name_method_and_sign() -> None:
    """The other pairing of method and direction: "Pearson ... r >= 0.3" and "Spearman ...
    r <= -0.3", so that neither word nor sign is tied to the other."""
    x, y = [1, 2, 3, 4, 5, 6], [2, 1, 4, 3, 6, 5]
    pos = run({"method": "pearson"}, time_arm(x, y))
    assert (pos.effect_label, pos.claimed_region, pos.test, pos.details["ci_method"]) == (
        "Pearson correlation of train_threshold_step with val_threshold_step in a", "r >= 0.3",
        "scipy pearsonr (two-sided, H0: no correlation)", PEARSON_SE)
    neg = run({"direction": "negative"}, time_arm(x, y))
    assert (neg.effect_label, neg.claimed_region, neg.test, neg.details["ci_method"]) == (
        "Spearman correlation of train_threshold_step with val_threshold_step in a", "r <= -0.3",
        "scipy spearmanr (two-sided, H0: no correlation)", SPEARMAN_SE)
    assert neg.verdict == Verdict.REFUTED and neg.reason.startswith(
        "The 95% CI of the Spearman correlation of train_threshold_step with val_threshold_step "
        "in a, [")


# ---------------------------------------------------------------- how many pairs


def test_four_pairs_are_enough() -> None:
    """MIN_PAIRS = 4 complete pairs give an estimate and a CI (se = sqrt((1 + r^2/2) / 1))."""
    res = run({"min_effect": 0.0}, time_arm([1, 2, 3, 4], [1, 3, 2, 4]))
    r = 0.8  # 1 - 6 * 2 / (4 * 15)
    z, se = math.atanh(r), math.sqrt(1 + r * r / 2)
    assert res.estimate == pytest.approx(r, rel=1e-12)
    assert res.ci == pytest.approx((math.tanh(z - Z975 * se), math.tanh(z + Z975 * se)),
                                   rel=1e-9)
    assert res.arms[0].columns == {"pairs": 4, "censored val_threshold_step": 0,
                                   "censored train_threshold_step": 0, "r": pytest.approx(r)}


def test_too_few_pairs_counts_undefined_and_left_out_seeds() -> None:
    """Three complete pairs of five seeds: the reason counts the 2 undefined seeds and the
    seeds left out before the analysis."""
    arm = time_arm([1, 2, 3, 4, 5], [1, math.nan, 3, math.nan, 5], excluded={"diverged": 1})
    res = run({}, arm)
    assert res.verdict == Verdict.INCONCLUSIVE
    assert res.reason == Has("No verdict is possible", "arm 'a' has 3 complete (x, y) pair(s)",
                             "fewer than the 4 a Fisher-z CI needs",
                             "(2 undefined; left out: diverged: 1).")
    assert res.details["pairs_dropped_undefined"] == 2


# ---------------------------------------------------------------- refusals


def test_refuse_names_each_censored_metric() -> None:
    """``censored: refuse`` with censored values of both x (``ArmSample.observed``) and y
    (``extra["<y>.observed"]``): the reason counts each, and the details name the policy."""
    arm = time_arm([1, 2, 3, 4, 9, 9], [2, 1, 4, 3, 5, 9],
                   x_observed=[1, 1, 1, 1, 0, 0], y_observed=[1, 1, 1, 1, 1, 0])
    res = run({"censored": "refuse"}, arm)
    assert res.verdict == Verdict.INCONCLUSIVE
    assert res.reason == Has("No verdict is possible", "arm 'a' has 2 censored value(s) of "
                             "val_threshold_step and 1 censored value(s) of train_threshold_step",
                             "`censored: refuse`.")
    assert res.details["censoring"] == REFUSE
    assert res.details["censored_values"] == {X: 2, Y: 1}
    assert res.arms[0].columns == {"pairs": 6, "censored val_threshold_step": 2,
                                   "censored train_threshold_step": 1}


def test_refuse_without_censored_values_decides_and_says_the_policy() -> None:
    """Under ``refuse`` with no censored value the claim is decided, and the details still
    word the policy the claim set."""
    res = run({"censored": "refuse", "min_effect": 0.0},
              time_arm([1, 2, 3, 4, 5, 6, 7, 8], [1, 2, 3, 4, 5, 6, 8, 7]))
    assert res.verdict == Verdict.SUPPORTED
    assert res.details["censoring"] == REFUSE


def test_constant_x_and_y_are_both_named() -> None:
    """Both metrics constant: the reason names both (joined by "and"), the seeds and the arm."""
    res = run({}, time_arm([5, 5, 5, 5, 5], [7, 7, 7, 7, 7]))
    assert res.verdict == Verdict.INCONCLUSIVE
    assert res.reason == Has("No verdict is possible",
                             "val_threshold_step and train_threshold_step are constant",
                             "over the 5 seeds of arm 'a'", "the correlation is undefined.")


def test_one_constant_metric_reads_is() -> None:
    """One metric constant: named alone, with a singular verb."""
    res = run({}, time_arm([5, 6, 7, 8, 9], [7, 7, 7, 7, 7]))
    assert res.verdict == Verdict.INCONCLUSIVE
    assert res.reason == Has("No verdict is possible", "train_threshold_step is constant over "
                             "the 5 seeds of arm 'a'", "the correlation is undefined.")
    assert "val_threshold_step" not in res.reason


def test_missing_arm_is_a_wiring_error_naming_the_criterion() -> None:
    """A claim whose arm has no data raises KeyError that names the criterion and the arm."""
    with pytest.raises(KeyError, match=re.escape("correlation: no data for arm(s) ['a']")):
        run_criterion({"name": "correlation", "arm": "a", "x": X, "y": Y, "direction": "positive",
                       "min_effect": 0.3}, make_arm("other", [1, 2, 3, 4]))


# ---------------------------------------------------------------- perfect correlation


def test_perfect_correlation_collapses_without_warnings() -> None:
    """|r| = 1: the CI is [r, r] and the p's against θ are 0 / 1, with no RuntimeWarning (a
    user running with warnings as errors, or reading the console, sees none)."""
    x = [1, 2, 3, 4, 5, 6]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pos = run({}, time_arm(x, [2, 4, 6, 8, 10, 12]))
        neg = run({}, time_arm(x, [6, 5, 4, 3, 2, 1]))
        pearson = run({"method": "pearson"}, time_arm(x, [2, 4, 6, 8, 10, 12]))
    assert (pos.estimate, pos.ci, pos.p_support, pos.p_refute) == (
        pytest.approx(1.0), pytest.approx((1.0, 1.0)), 0.0, 1.0)
    assert pos.verdict == Verdict.SUPPORTED
    assert (neg.estimate, neg.ci, neg.p_support, neg.p_refute) == (
        pytest.approx(-1.0), pytest.approx((-1.0, -1.0)), 1.0, 0.0)
    assert neg.verdict == Verdict.REFUTED
    assert pearson.ci == pytest.approx((1.0, 1.0)) and pearson.verdict == Verdict.SUPPORTED


def test_restricted_policy_clips_each_time_metric_at_its_smallest_censoring_value() -> None:
    """y's seed censored at 40 makes τ = 40: every y enters as min(y, 40), all observed."""
    x = [1.0, 2, 3, 4, 5, 6]
    cens = make_arm("a", [0] * 6, extra={X: x, Y: [10.0, 30, 20, 50, 40, 60],
                                         Y + ".observed": [1, 1, 1, 1, 0, 1]})
    res = run({"min_effect": 0.0, "method": "pearson", "censored": "restricted"}, cens)
    clipped = run({"min_effect": 0.0, "method": "pearson"},
                  make_arm("a", [0] * 6, extra={X: x, Y: [10.0, 30, 20, 40, 40, 40]}))
    assert res.estimate == pytest.approx(clipped.estimate)
    assert res.estimate != pytest.approx(run({"min_effect": 0.0, "method": "pearson"},
                                             cens).estimate)
    assert res.details["censored_values"] == {X: 0, Y: 1}
    assert res.details["censoring"] == Has(
        "censored: restricted -- each time metric enters as min(T, τ), τ its smallest censoring "
        "value (exact for every seed)")
