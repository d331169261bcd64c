"""proportion (grokverify/stats/proportion.py): the share of seeds with an outcome, its
Clopper-Pearson or Wilson CI and p's against binomial sums by hand, scipy and statsmodels; the
outcomes of censored seeds; the words of its results and its refusals."""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Any

import numpy as np
import pytest
from conftest import NOT_CENSORED, Has, run_criterion
from scipy import stats as sps
from statsmodels.stats.proportion import proportion_confint

from grokverify.stats.base import ArmSample, CriterionResult, Verdict
from grokverify.stats.proportion import p_against
from grokverify.stats.simulate import make_arm

PHI = NormalDist()
OBSERVED_CENSORING = Has("a censored seed did not reach the threshold within its budget",
                         "a failure")
CUT_CENSORING = Has("a censored seed's true value exceeds its censoring value c",
                    "decided when c >= cut (value_below: failure; value_above: success)",
                    "left out as undetermined and counted")
BETA_WORDS = "Clopper-Pearson (statsmodels proportion_confint)"
WILSON_WORDS = "Wilson score (statsmodels proportion_confint)"
BETA_P_WORDS = ("exact binomial tails P(X >= k | θ), P(X <= k | θ) (inverting "
                "Clopper-Pearson)")
WILSON_P_WORDS = "one-sided score test z = (k/n - θ) / sqrt(θ(1-θ)/n) (inverting Wilson)"
P_LABEL = "one-sided exact binomial test p against θ"


def run(params: dict[str, Any], arm: ArmSample) -> CriterionResult:
    return run_criterion({"name": "proportion", **params}, arm)


def prop(**kw: Any) -> dict[str, Any]:
    """A claim about arm 'a': more than half its seeds succeed, unless said otherwise."""
    return {"arm": "a", "direction": "greater", "threshold": 0.5, **kw}


# ---------------------------------------------------------------- oracles


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


# ---------------------------------------------------------------- known answers


def test_proportion_hand_computed_and_statsmodels() -> None:
    a = make_arm("a", range(10), [True] * 8 + [False] * 2)
    res = run(prop(threshold=0.4, method="wilson"), a)
    assert res.estimate == 0.8 and res.ci == pytest.approx(wilson(8, 10, 0.95), rel=1e-9)
    assert res.ci == pytest.approx(proportion_confint(8, 10, 0.05, "wilson"), rel=1e-12)
    assert res.p_value == pytest.approx(sps.binomtest(8, 10, 0.4, "greater").pvalue)
    # the default is Clopper-Pearson: the beta quantiles at alpha/2 = 0.025
    default = run(prop(threshold=0.4), a)
    assert default.ci[0] == pytest.approx(sps.beta.ppf(0.025, 8, 3), rel=1e-9)
    assert default.ci[1] == pytest.approx(sps.beta.ppf(0.975, 9, 2), rel=1e-9)
    assert default.details["ci_method"].startswith("Clopper-Pearson")
    beta = run(prop(threshold=0.4, method="beta", ci_level=0.9), a)
    assert beta.ci == pytest.approx(proportion_confint(8, 10, 0.1, "beta"), rel=1e-12)
    # Clopper-Pearson by hand: the beta quantiles
    assert beta.ci[0] == pytest.approx(sps.beta.ppf(0.05, 8, 3))
    assert beta.ci[1] == pytest.approx(sps.beta.ppf(0.95, 9, 2))


@pytest.mark.parametrize(("k", "direction", "threshold", "expected"), [
    (19, "greater", 0.5, Verdict.SUPPORTED), (2, "greater", 0.5, Verdict.REFUTED),
    (10, "greater", 0.5, Verdict.INCONCLUSIVE), (1, "less", 0.3, Verdict.SUPPORTED),
    (15, "less", 0.3, Verdict.REFUTED)])
def test_proportion_verdicts(k: int, direction: str, threshold: float,
                             expected: Verdict) -> None:
    a = make_arm("a", range(20), [True] * k + [False] * (20 - k))
    res = run(prop(direction=direction, threshold=threshold), a)
    assert res.verdict == expected and f"{k} of 20 seeds" in res.reason


def test_proportion_value_outcomes_with_censoring() -> None:
    # values 100, 200, 300 observed; censored at 150 (below the cut: unknown) and at 1000
    a = make_arm("a", [100, 200, 300, 150, 1000], [True, True, True, False, False])
    below = run(prop(outcome="value_below", cut=250), a)
    assert below.details["successes"] == 2 and below.details["counted_seeds"] == 4
    assert below.details["undetermined_seeds"] == 1
    above = run(prop(outcome="value_above", cut=200), a)  # 200, 300, 1000+ above; 150+ unknown
    assert above.details["successes"] == 3 and above.details["counted_seeds"] == 4
    reached = run(prop(), a)
    assert reached.details["successes"] == 3 and reached.details["counted_seeds"] == 5
    unknown = run(prop(outcome="value_below", cut=2000), make_arm("a", [1000] * 3, [False] * 3))
    assert unknown.verdict == Verdict.INCONCLUSIVE and "3 undetermined" in unknown.reason


@pytest.mark.parametrize("method", ["beta", "wilson"])
def test_proportion_p_at_the_boundary_decides_like_the_ci(method: str) -> None:
    """k/n = θ exactly is inside neither side: both p's are large (about 1/2 or more)."""
    for region in ("greater", "less"):
        p_s, p_r = p_against(10, 20, 0.5, region, method)  # type: ignore[arg-type]
        assert p_s > 0.4 and p_r > 0.4


# ---------------------------------------------------------------- whole results


def test_observed_outcome_clopper_pearson_greater() -> None:
    """A time metric's ``observed`` outcome, default Clopper-Pearson, ``greater``: 8 of 10 seeds
    reached the threshold (2 censored count as failures). The user relies on the share, the
    beta-quantile CI, the exact binomial p and tails, the ``≥`` claimed region, the method named
    and a table without an undetermined column (no seed is undetermined for ``observed``)."""
    a = make_arm("a", np.arange(10.0) * 100, [True] * 8 + [False] * 2)
    res = run({"arm": "a", "direction": "greater", "threshold": 0.4}, a)
    out = res.to_dict()
    low, high = clopper_pearson(8, 10, 0.95)
    reason, label = out.pop("reason"), out.pop("effect_label")
    assert label == "share of a seeds that reached the threshold within the budget"
    assert reason == Has(f"95% CI of the {label}, [0.444, 0.975]",
                         "wholly at or above 0.4, the boundary of the claimed effect",
                         "(point estimate 0.8), from 8 of 10 seeds.")
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
    b = make_arm("b", [100, 250, 300, 150, 250, 1000], [True, True, True, False, False, False],
                 excluded={"diverged": 1})
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
        "reason": Has("90% CI of the share of b seeds with value <= 250, [0.143, 0.728]",
                      "straddles 0.7, the boundary of the claimed effect",
                      "neither support nor refute", "(point estimate 0.4), from 2 of 5 seeds."),
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
    c = make_arm("c", [-1, 0, 0.5, 2, -0.2], kind="value")
    res = run({"arm": "c", "direction": "greater", "threshold": 0.1, "outcome": "value_above",
               "cut": 0}, c)
    low, high = clopper_pearson(3, 5, 0.95)
    assert res.to_dict() == {
        "criterion": "proportion", "effect_label": "share of c seeds with value >= 0",
        "estimate": approx(0.6), "ci": [approx(low), approx(high)], "ci_level": 0.95,
        "p_value": approx(at_least(3, 5, 0.1)),
        "test": "exact binomial test against 0.1 (scipy binomtest, alternative=greater)",
        "threshold": 0.1, "claimed_region": "share >= 0.1", "verdict": "SUPPORTED",
        "reason": Has("95% CI of the share of c seeds with value >= 0, [0.147, 0.947]",
                      "wholly at or above 0.1, the boundary of the claimed effect",
                      "(point estimate 0.6), from 3 of 5 seeds."),
        "arms": [{"name": "c", "n": 5, "excluded": {},
                  "columns": {"seeds": 5, "counted": 5, "successes": 3, "share": approx(0.6)}}],
        "details": {"outcome": "value >= 0", "ci_method": BETA_WORDS,
                    "censoring": NOT_CENSORED, "undetermined_seeds": 0, "successes": 3,
                    "counted_seeds": 5, "p_against_threshold": BETA_P_WORDS},
        "p_support": approx(at_least(3, 5, 0.1)), "p_refute": approx(at_most(3, 5, 0.1)),
        "p_value_label": P_LABEL}


@pytest.mark.parametrize(("excluded", "left"), [
    ({"diverged": 1, "nan_loss": 2}, "diverged: 1, nan_loss: 2"), ({}, "none")])
def test_no_known_outcome_is_inconclusive_with_its_counts(excluded: dict[str, int],
                                                          left: str) -> None:
    """Every seed censored below the cut of ``value_below``: no outcome is known. The user
    relies on an INCONCLUSIVE result without numbers whose reason counts the usable and
    undetermined seeds and lists those left out (or "none"), and on the table's counts."""
    d = make_arm("d", [100, 200], [False, False], excluded=excluded)
    res = run({"arm": "d", "direction": "greater", "threshold": 0.5, "outcome": "value_below",
               "cut": 500}, d)
    assert res.to_dict() == {
        "criterion": "proportion", "effect_label": "share of d seeds with value <= 500",
        "estimate": None, "ci": [None, None], "ci_level": 0.95, "p_value": None,
        "test": "exact binomial test against 0.5 (scipy binomtest, alternative=greater)",
        "threshold": 0.5, "claimed_region": "share >= 0.5", "verdict": "INCONCLUSIVE",
        "reason": Has("No verdict is possible", "arm 'd' has no seed whose outcome is known",
                      f"(2 usable, 2 undetermined by censoring; left out: {left})."),
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
            make_arm("other", [1.0]))
    value = make_arm("a", [1.0], kind="value")
    with pytest.raises(TypeError, match=r"^proportion takes time metrics; arm\(s\) 'a' \(value\) "
                                        r"carry another kind$"):
        run({"arm": "a", "direction": "greater", "threshold": 0.4}, value)
