"""Tests that pin what the mutation run of ``grokverify/stats/base.py`` found unpinned: the JSON
form of a result (``inf``/``-inf``/NaN and numpy scalars), the refusals of a malformed value
arm, the edges of the tolerance band of `verdict_from_p`, `wald_p` on a degenerate se, the
sentence of p-values against θ that the reports print next to the verdict, and the wiring of a
criterion built from its catalog schema (`Criterion.of`).

Numbers are checked against independent oracles (a sign-test p of 2^-n by hand, the normal
tails of an infinite z); words are pinned as the exact sentence a reader sees for a small,
hand-checked case.
"""

from __future__ import annotations

import json
import math
import re
import warnings
from typing import Any

import numpy as np
import pytest

from grokverify.claim.criteria import CorrelationParams, ValueParams
from grokverify.kinds import CRITERIA
from grokverify.stats.base import (
    P_TOL,
    ArmSample,
    ArmSummary,
    CriterionResult,
    Verdict,
    judge,
    p_against_words,
    verdict_from_p,
    wald_p,
)
from grokverify.stats.correlation import run_correlation
from grokverify.stats.scalar import run_value

INF = math.inf
THETA = "against θ, the boundary of the claimed region (one-sided; each decides at"
NO_ESTIMATE = "p against θ: — (no estimate)"


def arm(values: list[float], observed: list[int] | None = None, kind: str = "value",
        name: str = "a") -> ArmSample:
    v = np.asarray(values, dtype=float)
    o = np.ones(v.size, bool) if observed is None else np.asarray(observed, bool)
    return ArmSample(name, v, o, tuple(range(v.size)), kind=kind)  # type: ignore[arg-type]


def value(a: ArmSample, **params: Any) -> CriterionResult:
    """The ``value`` criterion on one arm."""
    crit = CRITERIA["value"]
    return judge(crit.model_validate({"name": "value", "arm": a.name, **params}),
                    {a.name: a})


# --- the JSON form of a result --------------------------------------------------------------


def test_to_dict_writes_infinities_as_strings_nan_as_null_and_numpy_scalars_as_json() -> None:
    """A report or a stored verdict reads `to_dict()`: a median beyond the budget stays "inf",
    an unbounded lower CI end "-inf" (not "inf": the sign is the claim's direction), an
    undefined value null, and numpy ints / bools / arrays plain JSON."""
    res = CriterionResult(
        criterion="survival_compare", effect_label="difference of KM medians (t - b)",
        estimate=INF, ci=(-INF, np.float64(INF)), ci_level=0.95, p_value=math.nan,
        test="log-rank", threshold=-100.0, claimed_region="difference <= -100",
        verdict=Verdict.INCONCLUSIVE, reason="r.",
        arms=[ArmSummary("b", 3, {"diverged": 1},
                         {"KM median": 1000.0, "KM median CI": (900.0, np.float64(INF))}),
              ArmSummary("t", 4, {}, {"KM median": INF, "mean": np.float32(-INF),
                                      "share": math.nan})],
        details={"n_boot": np.int64(200), "censored": np.bool_(True), "low": -INF,
                 "counts": np.array([1, 2])},
        p_support=1.0, p_refute=0.0)
    expected = {
        "criterion": "survival_compare", "effect_label": "difference of KM medians (t - b)",
        "estimate": "inf", "ci": ["-inf", "inf"], "ci_level": 0.95, "p_value": None,
        "test": "log-rank", "threshold": -100.0, "claimed_region": "difference <= -100",
        "verdict": "INCONCLUSIVE", "reason": "r.",
        "arms": [{"name": "b", "n": 3, "excluded": {"diverged": 1},
                  "columns": {"KM median": 1000.0, "KM median CI": [900.0, "inf"]}},
                 {"name": "t", "n": 4, "excluded": {},
                  "columns": {"KM median": "inf", "mean": "-inf", "share": None}}],
        "details": {"n_boot": 200, "censored": True, "low": "-inf", "counts": [1, 2]},
        "p_support": 1.0, "p_refute": 0.0, "p_value_label": "no-effect test p"}
    out = res.to_dict()
    assert out == expected
    assert out["details"]["censored"] is True and type(out["details"]["n_boot"]) is int
    assert json.loads(json.dumps(out, allow_nan=False)) == expected


# --- refusals of a malformed value arm ------------------------------------------------------


def test_a_value_arm_with_a_non_finite_value_is_refused_with_its_name() -> None:
    """A signed value metric must be a number for every seed: NaN or inf is refused, naming
    the arm."""
    for bad in (math.nan, INF, -INF):
        with pytest.raises(ValueError, match="^" + re.escape("arm 'probe': values must be "
                                                             "finite") + "$"):
            arm([1.0, bad], name="probe")


def test_a_value_arm_with_a_censored_seed_is_refused_with_why() -> None:
    """A value metric has no censoring: an unobserved seed is refused with the rule, naming
    the arm."""
    msg = "arm 'probe': a value metric is never censored: every value must be observed"
    with pytest.raises(ValueError, match="^" + re.escape(msg) + "$"):
        arm([1.0, 2.0], [1, 0], name="probe")


# --- the verdict read off the p's against θ, at the edges of the tolerance band -------------


def test_verdict_from_p_keeps_the_support_edge_closed_and_the_refute_edge_open() -> None:
    """The boundary θ belongs to the claimed region: a p(support) at the top of alpha's relative
    tolerance band still supports, a p(refute) at the bottom of its band does not yet refute."""
    alpha = 0.025
    assert verdict_from_p(alpha * (1 + P_TOL), 1.0, alpha) is Verdict.SUPPORTED
    assert verdict_from_p(alpha * (1 + 2 * P_TOL), 1.0, alpha) is Verdict.INCONCLUSIVE
    assert verdict_from_p(1.0, alpha * (1 - P_TOL), alpha) is Verdict.INCONCLUSIVE
    assert verdict_from_p(1.0, alpha * (1 - 2 * P_TOL), alpha) is Verdict.REFUTED


# --- wald_p on a degenerate standard error --------------------------------------------------


@pytest.mark.parametrize(("estimate", "region", "expected"), [
    (1.0, "greater", (0.0, 1.0)),  # z = +inf: wholly above θ
    (1.0, "less", (1.0, 0.0)),
    (-1.0, "greater", (1.0, 0.0)),  # z = -inf: wholly below θ
    (-1.0, "less", (0.0, 1.0)),
])
def test_wald_p_of_a_zero_se_is_decisive_and_silent(estimate: float, region: str,
                                                    expected: tuple[float, float]) -> None:
    """A fit whose se is 0 (numpy scalars, as a fit returns them) gives the p's of z = ±inf
    (the normal tails 0 and 1) without a RuntimeWarning in the user's log."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = wald_p(np.float64(estimate), np.float64(0.0), 0.0, region)  # type: ignore[arg-type]
    assert got == expected


# --- the p's against θ in the reports -------------------------------------------------------


def test_p_words_of_a_bootstrap_p_of_zero_say_below_one_over_n_boot() -> None:
    """All five seeds within 1 ± 0.5: no bootstrap resample of the mean crosses θ, which says
    only p < 1/n_boot (1/200), not p = 0; the other side is 1; each decides at (1-0.95)/2."""
    res = value(arm([1.0, 1.1, 0.9, 1.05, 0.95]), target=1.0, tol=0.5, n_boot=200)
    assert (res.verdict, res.p_support, res.p_refute) == (Verdict.SUPPORTED, 0.0, 1.0)
    assert p_against_words(res.to_dict()) == (
        f"p(support) < 0.005, p(refute) = 1 {THETA} 0.025)")


def test_p_words_of_a_refuted_bootstrap_result() -> None:
    """The same seeds against 5 ± 0.5: wholly outside, so p(refute) < 1/200."""
    res = value(arm([1.0, 1.1, 0.9, 1.05, 0.95]), target=5.0, tol=0.5, n_boot=200)
    assert (res.verdict, res.p_support, res.p_refute) == (Verdict.REFUTED, 1.0, 0.0)
    assert p_against_words(res.to_dict()) == (
        f"p(support) = 1, p(refute) < 0.005 {THETA} 0.025)")


@pytest.mark.parametrize(("level", "verdict", "alpha_words"), [
    (0.9, Verdict.SUPPORTED, "0.05"), (0.95, Verdict.INCONCLUSIVE, "0.025")])
def test_p_words_of_an_exact_p_name_it_and_the_level_it_decides_at(
        level: float, verdict: Verdict, alpha_words: str) -> None:
    """The median's order-statistic CI (no bootstrap): all 5 seeds inside 1 ± 0.5 give the
    sign-test p(support) 2^-5 = 0.03125, printed as "= 0.0312" (a 0 would be a true 0 here);
    it supports at the 90% CI's one-sided 0.05, not at the 95% CI's 0.025."""
    res = value(arm([1.0, 1.1, 0.9, 1.05, 0.95]), target=1.0, tol=0.5, statistic="median",
                ci_level=level)
    assert res.p_support == pytest.approx(0.5 ** 5, rel=1e-12) and res.verdict is verdict
    assert p_against_words(res.to_dict()) == (
        f"p(support) = 0.0312, p(refute) = 1 {THETA} {alpha_words})")


def test_p_words_of_a_true_zero_without_bootstrap_print_it() -> None:
    """Only a bootstrap p of 0 is a bound; without n_boot in the details a 0 is printed as is,
    and a bootstrap p other than 0 is printed as its value."""
    base = {"ci_level": 0.95, "details": {}}
    assert p_against_words({**base, "p_support": 0.0, "p_refute": 1.0}) == (
        f"p(support) = 0, p(refute) = 1 {THETA} 0.025)")
    assert p_against_words({**base, "p_support": 0.0, "p_refute": 1.0, "details": None}) == (
        f"p(support) = 0, p(refute) = 1 {THETA} 0.025)")
    assert p_against_words({**base, "p_support": 0.01, "p_refute": 1.0,
                            "details": {"n_boot": 200}}) == (
        f"p(support) = 0.01, p(refute) = 1 {THETA} 0.025)")


def test_p_words_of_a_result_without_estimate() -> None:
    """One usable seed, or a censored seed under ``censored: refuse``: no estimate, no p's, and
    the line says so."""
    for res in (value(arm([1.0]), target=1.0, tol=0.5),
                value(arm([1000.0, 1100.0, 900.0], [1, 0, 1], kind="time"), target=1000.0,
                      tol=500.0)):
        assert (res.verdict, res.p_support, res.p_refute) == (Verdict.INCONCLUSIVE, None, None)
        assert p_against_words(res.to_dict()) == NO_ESTIMATE


def test_p_words_of_a_result_with_one_side_withheld_print_no_p_for_that_side() -> None:
    """``scalar_compare`` of means with censored treated seeds (entered at the budget, a lower
    bound) withholds p(refute) but keeps the supporting verdict: the line prints the p that
    decided it and says the other is withheld (it said "no estimate" beside an estimate)."""
    base = arm([1000.0, 1100.0, 900.0, 1050.0, 950.0], kind="time", name="b")
    treat = arm([1500.0, 2000.0, 1400.0, 2000.0, 1450.0], [1, 0, 1, 0, 1], kind="time", name="t")
    crit = CRITERIA["scalar_compare"]
    params = crit.model_validate(
        {"name": "scalar_compare", "baseline": "b", "treated": "t", "direction": "greater",
         "statistic": "mean", "paired": False, "n_boot": 200})
    res = judge(params, {"b": base, "t": treat})
    assert res.verdict is Verdict.SUPPORTED and res.p_refute is None
    assert p_against_words(res.to_dict()) == (
        "p(support) < 0.005, p(refute) withheld (censored seeds make it invalid) against θ, the "
        "boundary of the claimed region (one-sided; each decides at 0.025)")


# --- a criterion built from its catalog schema ----------------------------------------------


def test_a_criterion_is_found_from_its_name_with_its_arms_metrics_and_information() -> None:
    """``correlation``: its params class and its run from one name, its arm, its x and y
    metrics, the kinds it accepts and its information n - 3 (1 / se^2 of Fisher's z)."""
    assert CRITERIA["correlation"] is CorrelationParams
    assert CRITERIA.implementation("correlation") is run_correlation
    params = CorrelationParams.model_validate(
        {"name": "correlation", "arm": "a", "x": "val_threshold_step",
         "y": "train_threshold_step", "direction": "positive", "min_effect": 0.3})
    assert params.arms() == ["a"]
    assert [m.name for m in params.metrics_needed()] == ["val_threshold_step",
                                                         "train_threshold_step"]
    assert params.kinds() == ("time", "value")
    assert params.information(10) == 7.0


def test_a_criterion_without_further_metrics_has_information_n_and_runs() -> None:
    """``value``: no further metrics, information n by default, and its run judges a claim
    (all five seeds within 1 ± 0.5: SUPPORTED)."""
    assert CRITERIA["value"] is ValueParams
    assert CRITERIA.implementation("value") is run_value
    params = ValueParams.model_validate({"name": "value", "arm": "a", "target": 1.0, "tol": 0.5,
                                         "statistic": "median"})
    assert params.metrics_needed() == [] and params.information(12) == 12.0
    assert params.arms() == ["a"] and params.kinds() == ("time", "value")
    res = judge(params, {"a": arm([1.0, 1.1, 0.9, 1.05, 0.95, 1.02, 0.98])})
    assert (res.criterion, res.verdict) == ("value", Verdict.SUPPORTED)
