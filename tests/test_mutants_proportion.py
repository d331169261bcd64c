"""Tests that pin what the mutation run of ``grokverify/stats/proportion.py`` found unpinned.

Each test fixes a whole result a user reads for a small, hand-checked case: the share, its CI
and p-values (against independent oracles: binomial sums by hand, scipy's beta quantiles, the
Wilson and score-test formulas with the standard library's normal), the verdict, the reason,
the claimed region with its direction sign, the CI method named, the counts of censored and
undetermined seeds, the per-arm table's columns, and the messages of the refusals.
"""

from __future__ import annotations

import json
import math
from statistics import NormalDist
from typing import Any

import numpy as np
import pytest
from scipy import stats as sps

from grokverify.kinds import CRITERIA
from grokverify.stats.base import ArmSample, CriterionResult, judge

PHI = NormalDist()
OBSERVED_CENSORING = "a censored seed did not reach the threshold within its budget: a failure"
CUT_CENSORING = ("a censored seed's true value exceeds its censoring value c: it is decided when "
                 "c >= cut (value_below: failure; value_above: success), else left out as "
                 "undetermined and counted")
VALUE_CENSORING = ("none: a value metric is never censored (diverged seeds and seeds whose value "
                   "is undefined are left out and counted)")
BETA_WORDS = "Clopper-Pearson (statsmodels proportion_confint)"
WILSON_WORDS = "Wilson score (statsmodels proportion_confint)"
BETA_P_WORDS = ("exact binomial tails P(X >= k | θ), P(X <= k | θ) (inverting "
                "Clopper-Pearson)")
WILSON_P_WORDS = "one-sided score test z = (k/n - θ) / sqrt(θ(1-θ)/n) (inverting Wilson)"
P_LABEL = "one-sided exact binomial test p against θ"


def run(params: dict[str, Any], arm: ArmSample) -> CriterionResult:
    crit = CRITERIA["proportion"]
    result = judge(crit.model_validate({"name": "proportion", **params}),
                      {arm.name: arm})
    json.dumps(result.to_dict(), allow_nan=False)
    return result


def binom_pmf(j: int, n: int, theta: float) -> float:
    return math.comb(n, j) * theta ** j * (1 - theta) ** (n - j)


def at_least(k: int, n: int, theta: float) -> float:
    """P(X >= k | n, θ), summed by hand."""
    return sum(binom_pmf(j, n, theta) for j in range(k, n + 1))


def at_most(k: int, n: int, theta: float) -> float:
    """P(X <= k | n, θ), summed by hand."""
    return sum(binom_pmf(j, n, theta) for j in range(0, k + 1))


def wilson(k: int, n: int, level: float) -> tuple[float, float]:
    """Wilson score interval by its formula."""
    z = PHI.inv_cdf(1 - (1 - level) / 2)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


def clopper_pearson(k: int, n: int, level: float) -> tuple[float, float]:
    """Clopper-Pearson interval as beta quantiles (0 < k < n)."""
    a = (1 - level) / 2
    return float(sps.beta.ppf(a, k, n - k + 1)), float(sps.beta.ppf(1 - a, k + 1, n - k))


def approx(x: float) -> Any:
    return pytest.approx(x, rel=1e-9, abs=1e-12)


# ---------------------------------------------------------------- whole results


def test_observed_outcome_clopper_pearson_greater() -> None:
    """A time metric's ``observed`` outcome, default Clopper-Pearson, ``greater``: 8 of 10 seeds
    reached the threshold (2 censored count as failures). The user relies on the share, the
    beta-quantile CI, the exact binomial p and tails, the ``≥`` claimed region, the method named
    and a table without an undetermined column (no seed is undetermined for ``observed``)."""
    a = ArmSample("a", np.arange(10.0) * 100, [True] * 8 + [False] * 2, tuple(range(10)))
    res = run({"arm": "a", "direction": "greater", "threshold": 0.4}, a)
    out = res.to_dict()
    low, high = clopper_pearson(8, 10, 0.95)
    reason, label = out.pop("reason"), out.pop("effect_label")
    assert label == "share of a seeds that reached the threshold within the budget"
    assert reason.startswith(f"The 95% CI of the {label}, [0.444, 0.975], lies wholly at or above "
                             "0.4, the boundary of the claimed effect (point estimate 0.8)")
    assert reason.endswith("(point estimate 0.8), from 8 of 10 seeds.")
    assert out == {
        "criterion": "proportion", "estimate": approx(0.8), "ci": [approx(low), approx(high)],
        "ci_level": 0.95, "p_value": approx(at_least(8, 10, 0.4)),
        "test": "exact binomial test against 0.4 (scipy binomtest, alternative=greater)",
        "threshold": 0.4, "claimed_region": "share >= 0.4", "verdict": "SUPPORTED",
        "arms": [{"name": "a", "n": 10, "excluded": {},
                  "columns": {"seeds": 10, "counted": 10, "successes": 8,
                              "share": approx(0.8)}}],
        "details": {"outcome": "reached the threshold within the budget",
                    "ci_method": BETA_WORDS, "censoring": OBSERVED_CENSORING,
                    "undetermined_seeds": 0, "successes": 8, "counted_seeds": 10,
                    "p_against_threshold": BETA_P_WORDS},
        "p_support": approx(at_least(8, 10, 0.4)), "p_refute": approx(at_most(8, 10, 0.4)),
        "p_value_label": P_LABEL}
    assert list(out["arms"][0]["columns"]) == ["seeds", "counted", "successes", "share"]


def test_value_below_wilson_less_with_censored_seeds() -> None:
    """``value_below`` 250 on a time metric, Wilson at 90%, ``less`` 0.7. Seeds: 100, 250 (at the
    cut: a success), 300 observed; censored at 150 (below the cut: undetermined), at 250 (at the
    cut: the true value is above it, a decided failure) and at 1000 (a failure). So 2 successes
    of 5 counted, 1 undetermined. The user relies on those counts, the Wilson CI, the score-test
    p's, the ``≤`` region and the undetermined column of the table."""
    b = ArmSample("b", [100, 250, 300, 150, 250, 1000],
                  [True, True, True, False, False, False], tuple(range(6)), {"diverged": 1})
    res = run({"arm": "b", "direction": "less", "threshold": 0.7, "outcome": "value_below",
               "cut": 250, "method": "wilson", "ci_level": 0.9}, b)
    low, high = wilson(2, 5, 0.9)
    z = (2 / 5 - 0.7) / math.sqrt(0.7 * 0.3 / 5)
    assert res.to_dict() == {
        "criterion": "proportion", "effect_label": "share of b seeds with value <= 250",
        "estimate": approx(0.4), "ci": [approx(low), approx(high)], "ci_level": 0.9,
        "p_value": approx(at_most(2, 5, 0.7)),
        "test": "exact binomial test against 0.7 (scipy binomtest, alternative=less)",
        "threshold": 0.7, "claimed_region": "share <= 0.7", "verdict": "INCONCLUSIVE",
        "reason": "The 90% CI of the share of b seeds with value <= 250, [0.143, 0.728], "
                  "straddles 0.7, the boundary of the claimed effect, so the data neither "
                  "support nor refute the claim (point estimate 0.4), from 2 of 5 seeds.",
        "arms": [{"name": "b", "n": 6, "excluded": {"diverged": 1},
                  "columns": {"seeds": 6, "counted": 5, "successes": 2, "share": approx(0.4),
                              "undetermined (censored)": 1}}],
        "details": {"outcome": "value <= 250", "ci_method": WILSON_WORDS,
                    "censoring": CUT_CENSORING, "undetermined_seeds": 1, "successes": 2,
                    "counted_seeds": 5, "p_against_threshold": WILSON_P_WORDS},
        "p_support": approx(PHI.cdf(z)), "p_refute": approx(1 - PHI.cdf(z)),
        "p_value_label": P_LABEL}


def test_value_above_zero_on_a_value_metric() -> None:
    """``value_above`` with a cut of 0 on a value metric (never censored): -1, 0, 0.5, 2, -0.2
    give 3 of 5 at or above 0. The user relies on "value >= 0" (the cut 0 itself, not a
    default), the value-metric censoring words and a table without an undetermined column."""
    c = ArmSample("c", [-1, 0, 0.5, 2, -0.2], [True] * 5, tuple(range(5)), kind="value")
    res = run({"arm": "c", "direction": "greater", "threshold": 0.1, "outcome": "value_above",
               "cut": 0}, c)
    low, high = clopper_pearson(3, 5, 0.95)
    assert res.to_dict() == {
        "criterion": "proportion", "effect_label": "share of c seeds with value >= 0",
        "estimate": approx(0.6), "ci": [approx(low), approx(high)], "ci_level": 0.95,
        "p_value": approx(at_least(3, 5, 0.1)),
        "test": "exact binomial test against 0.1 (scipy binomtest, alternative=greater)",
        "threshold": 0.1, "claimed_region": "share >= 0.1", "verdict": "SUPPORTED",
        "reason": "The 95% CI of the share of c seeds with value >= 0, [0.147, 0.947], lies "
                  "wholly at or above 0.1, the boundary of the claimed effect (point estimate "
                  "0.6), from 3 of 5 seeds.",
        "arms": [{"name": "c", "n": 5, "excluded": {},
                  "columns": {"seeds": 5, "counted": 5, "successes": 3, "share": approx(0.6)}}],
        "details": {"outcome": "value >= 0", "ci_method": BETA_WORDS,
                    "censoring": VALUE_CENSORING, "undetermined_seeds": 0, "successes": 3,
                    "counted_seeds": 5, "p_against_threshold": BETA_P_WORDS},
        "p_support": approx(at_least(3, 5, 0.1)), "p_refute": approx(at_most(3, 5, 0.1)),
        "p_value_label": P_LABEL}


# ---------------------------------------------------------------- no seed with a known outcome


@pytest.mark.parametrize(("excluded", "left"), [
    ({"diverged": 1, "nan_loss": 2}, "diverged: 1, nan_loss: 2"), ({}, "none")])
def test_no_known_outcome_is_inconclusive_with_its_counts(excluded: dict[str, int],
                                                          left: str) -> None:
    """Every seed censored below the cut of ``value_below``: no outcome is known. The user
    relies on an INCONCLUSIVE result without numbers whose reason counts the usable and
    undetermined seeds and lists those left out (or "none"), and on the table's counts."""
    d = ArmSample("d", [100, 200], [False, False], (0, 1), excluded)
    res = run({"arm": "d", "direction": "greater", "threshold": 0.5, "outcome": "value_below",
               "cut": 500}, d)
    assert res.to_dict() == {
        "criterion": "proportion", "effect_label": "share of d seeds with value <= 500",
        "estimate": None, "ci": [None, None], "ci_level": 0.95, "p_value": None,
        "test": "exact binomial test against 0.5 (scipy binomtest, alternative=greater)",
        "threshold": 0.5, "claimed_region": "share >= 0.5", "verdict": "INCONCLUSIVE",
        "reason": "No verdict is possible: arm 'd' has no seed whose outcome is known (2 usable, "
                  f"2 undetermined by censoring; left out: {left}).",
        "arms": [{"name": "d", "n": 2, "excluded": excluded,
                  "columns": {"seeds": 2, "counted": 0, "successes": 0, "share": None,
                              "undetermined (censored)": 2}}],
        "details": {"outcome": "value <= 500", "ci_method": BETA_WORDS,
                    "censoring": CUT_CENSORING, "undetermined_seeds": 2, "successes": 0,
                    "counted_seeds": 0},
        "p_support": None, "p_refute": None, "p_value_label": "no-effect test p"}


# ---------------------------------------------------------------- refusals


def test_missing_arm_and_wrong_kind_messages_name_the_criterion() -> None:
    """A wiring error names the criterion: a missing arm (KeyError) and a value metric under
    ``observed``, which needs a time metric (TypeError)."""
    with pytest.raises(KeyError, match=r"^\"proportion: no data for arm\(s\) \['a'\]\"$"):
        run({"arm": "a", "direction": "greater", "threshold": 0.4},
            ArmSample("other", [1.0], [True], (0,)))
    value = ArmSample("a", [1.0], [True], (0,), kind="value")
    with pytest.raises(TypeError, match=r"^proportion takes time metrics; arm\(s\) 'a' \(value\) "
                                        r"carry another kind$"):
        run({"arm": "a", "direction": "greater", "threshold": 0.4}, value)
