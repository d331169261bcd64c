"""ArmSample's refusals, a result's JSON form, the verdict read off the p's against θ
(`verdict_from_p`, `wald_p`) and the sentence the reports print for those p's."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import warnings
from functools import partial
from typing import Any

import numpy as np
import pytest
from conftest import Has, lognormal_arm, run_criterion

from grokverify.stats.base import (
    P_TOL,
    ArmSample,
    ArmSummary,
    CriterionResult,
    Verdict,
    p_against_words,
    verdict_from_p,
    wald_p,
)
from grokverify.stats.simulate import make_arm
from grokverify.stats.verdict import decide

INF = math.inf
NO_ESTIMATE = "p against θ: — (no estimate)"
probe = partial(make_arm, "a", kind="value")


def value(a: ArmSample, **params: object) -> CriterionResult:
    """The ``value`` criterion on one arm."""
    return run_criterion({"name": "value", "arm": a.name, **params}, a)


def p_words(support: str, refute: str, alpha: str) -> Has:
    """The line of p's against θ: both p's, then the one-sided level each decides at."""
    return Has(f"p(support) {support}, p(refute) {refute} against θ, the boundary of the "
               "claimed region", f"(one-sided; each decides at {alpha})")


# ---------------------------------------------------------------- ArmSample


def test_arm_sample_validation() -> None:
    with pytest.raises(ValueError):
        ArmSample("a", np.ones(3), np.ones(2, bool), (0, 1, 2))
    with pytest.raises(ValueError):
        ArmSample("a", np.ones(3), np.ones(3, bool), (0, 1))
    with pytest.raises(ValueError):
        ArmSample("a", np.array([1.0, np.inf]), np.ones(2, bool), (0, 1))


def test_a_value_arm_with_a_non_finite_value_is_refused_with_its_name() -> None:
    """A signed value metric must be a number for every seed: NaN or inf is refused, naming
    the arm."""
    for bad in (math.nan, INF, -INF):
        with pytest.raises(ValueError, match=r"^arm 'probe': values must be finite$"):
            make_arm("probe", [1.0, bad], kind="value")


def test_a_value_arm_with_a_censored_seed_is_refused_with_why() -> None:
    """A value metric has no censoring: an unobserved seed is refused with the rule, naming
    the arm."""
    with pytest.raises(ValueError, match="^arm 'probe': a value metric is never censored: "
                                         "every value must be observed$"):
        make_arm("probe", [1.0, 2.0], [1, 0], kind="value")


def test_value_arms_take_signed_values_but_not_censoring_or_non_finite() -> None:
    assert probe([-2.0, 0.0, 3.5]).values.tolist() == [-2.0, 0.0, 3.5]
    with pytest.raises(ValueError, match="never censored"):
        ArmSample("a", [1.0, 2.0], [True, False], (0, 1), kind="value")
    with pytest.raises(ValueError, match="finite"):
        probe([1.0, math.nan])
    with pytest.raises(ValueError, match=">= 0"):
        ArmSample("a", [-1.0], [True], (0,))  # a time is never negative


def test_arm_sample_extra() -> None:
    a = make_arm("a", [1, 2], extra={"m": [1, 2], "m.observed": [1, 0]})
    assert a.extra["m"].dtype == float and a.extra["m.observed"].dtype == bool
    assert make_arm("a", [1]).extra == {}
    with pytest.raises(ValueError, match="extra metric 'm' has 3 values for 2 seeds"):
        make_arm("a", [1, 2], extra={"m": [1, 2, 3]})


# ---------------------------------------------------------------- the JSON form of a result


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


def test_result_to_dict_is_json_with_inf_strings() -> None:
    rng = np.random.default_rng(6)
    base = lognormal_arm("b", 1000, rng, sigma=0.5, budget=3000)
    slow = lognormal_arm("t", 3000, rng, sigma=0.5, budget=3000)
    treat = make_arm("t", slow.values, slow.observed, excluded={"nan": 1})
    result = run_criterion({"name": "survival_compare", "baseline": "b", "treated": "t",
                            "direction": "less", "min_effect": 0.2}, base, treat)
    assert isinstance(result, CriterionResult)
    assert isinstance(result.verdict, Verdict)
    out = json.loads(json.dumps(result.to_dict(), allow_nan=False))
    assert out["ci"][1] == "inf"
    assert out["verdict"] == result.verdict.value
    assert out["arms"][1]["excluded"] == {"nan": 1}
    assert out["arms"][0]["n"] == 20


# ---------------------------------------------------------------- verdicts from p's against θ


@pytest.mark.parametrize(("p_support", "p_refute", "expected"), [
    (0.001, 0.999, Verdict.SUPPORTED),
    (0.025, 0.975, Verdict.SUPPORTED),  # a CI bound at θ supports: θ is in the region
    (0.975, 0.025, Verdict.INCONCLUSIVE),  # ... and so does not refute
    (0.99, 0.01, Verdict.REFUTED),
    (0.5, 0.5, Verdict.INCONCLUSIVE),
    (None, None, Verdict.INCONCLUSIVE),
])
def test_verdict_from_p_follows_the_boundary_convention(
        p_support: float | None, p_refute: float | None, expected: Verdict) -> None:
    assert verdict_from_p(p_support, p_refute, 0.025) is expected


def test_verdict_from_p_keeps_the_support_edge_closed_and_the_refute_edge_open() -> None:
    """The boundary θ belongs to the claimed region: a p(support) at the top of alpha's relative
    tolerance band still supports, a p(refute) at the bottom of its band does not yet refute."""
    alpha = 0.025
    assert verdict_from_p(alpha * (1 + P_TOL), 1.0, alpha) is Verdict.SUPPORTED
    assert verdict_from_p(alpha * (1 + 2 * P_TOL), 1.0, alpha) is Verdict.INCONCLUSIVE
    assert verdict_from_p(1.0, alpha * (1 - P_TOL), alpha) is Verdict.INCONCLUSIVE
    assert verdict_from_p(1.0, alpha * (1 - 2 * P_TOL), alpha) is Verdict.REFUTED


def test_a_bootstrap_p_at_exactly_alpha_is_read_as_the_ci_reads_it() -> None:
    """A bootstrap p of 15/300 is exactly the one-sided level of a 90% CI, but (1 - 0.9) / 2 is
    0.04999999999999999 in floats: it still supports (the CI bound sits at θ), and refutes
    only below the level."""
    alpha = (1 - 0.9) / 2
    assert alpha < 0.05
    assert verdict_from_p(15 / 300, 0.9, alpha) == Verdict.SUPPORTED
    assert verdict_from_p(0.9, 15 / 300, alpha) == Verdict.INCONCLUSIVE
    assert verdict_from_p(0.9, 14 / 300, alpha) == Verdict.REFUTED
    assert verdict_from_p(16 / 300, 0.9, alpha) == Verdict.INCONCLUSIVE


LABEL = "ratio of KM median steps (treated / baseline)"


@pytest.mark.parametrize("estimate", [-3.0, -1.96, -1.0, 0.0, 1.0, 1.9599, 1.9601, 3.0])
@pytest.mark.parametrize("region", ["less", "greater"])
def test_wald_p_gives_the_wald_ci_verdict(estimate: float, region: str) -> None:
    z = 1.959963984540054
    ci = (estimate - z, estimate + z)  # se 1, boundary 0
    verdict, _ = decide(ci, 0.0, region, estimate, LABEL, 0.95)  # type: ignore[arg-type]
    p_support, p_refute = wald_p(estimate, 1.0, 0.0, region)  # type: ignore[arg-type]
    assert verdict_from_p(p_support, p_refute, 0.025) is verdict
    assert p_support + p_refute == pytest.approx(1.0)


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


# ---------------------------------------------------------------- p's against θ in words


def test_p_words_of_a_bootstrap_p_of_zero_say_below_one_over_n_boot() -> None:
    """All five seeds within 1 ± 0.5: no bootstrap resample of the mean crosses θ, which says
    only p < 1/n_boot (1/200), not p = 0; the other side is 1; each decides at (1-0.95)/2."""
    res = value(probe([1.0, 1.1, 0.9, 1.05, 0.95]), target=1.0, tol=0.5, n_boot=200)
    assert (res.verdict, res.p_support, res.p_refute) == (Verdict.SUPPORTED, 0.0, 1.0)
    assert p_against_words(res.to_dict()) == p_words("< 0.005", "= 1", "0.025")


def test_p_words_of_a_refuted_bootstrap_result() -> None:
    """The same seeds against 5 ± 0.5: wholly outside, so p(refute) < 1/200."""
    res = value(probe([1.0, 1.1, 0.9, 1.05, 0.95]), target=5.0, tol=0.5, n_boot=200)
    assert (res.verdict, res.p_support, res.p_refute) == (Verdict.REFUTED, 1.0, 0.0)
    assert p_against_words(res.to_dict()) == p_words("= 1", "< 0.005", "0.025")


@pytest.mark.parametrize(("level", "verdict", "alpha_words"), [
    (0.9, Verdict.SUPPORTED, "0.05"), (0.95, Verdict.INCONCLUSIVE, "0.025")])
def test_p_words_of_an_exact_p_name_it_and_the_level_it_decides_at(
        level: float, verdict: Verdict, alpha_words: str) -> None:
    """The median's order-statistic CI (no bootstrap): all 5 seeds inside 1 ± 0.5 give the
    sign-test p(support) 2^-5 = 0.03125, printed as "= 0.0312" (a 0 would be a true 0 here);
    it supports at the 90% CI's one-sided 0.05, not at the 95% CI's 0.025."""
    res = value(probe([1.0, 1.1, 0.9, 1.05, 0.95]), target=1.0, tol=0.5, statistic="median",
                ci_level=level)
    assert res.p_support == pytest.approx(0.5 ** 5, rel=1e-12) and res.verdict is verdict
    assert p_against_words(res.to_dict()) == p_words("= 0.0312", "= 1", alpha_words)


def test_p_words_of_a_true_zero_without_bootstrap_print_it() -> None:
    """Only a bootstrap p of 0 is a bound; without n_boot in the details a 0 is printed as is,
    and a bootstrap p other than 0 is printed as its value."""
    base = {"ci_level": 0.95, "details": {}}
    zero = p_words("= 0", "= 1", "0.025")
    assert p_against_words({**base, "p_support": 0.0, "p_refute": 1.0}) == zero
    assert p_against_words({**base, "p_support": 0.0, "p_refute": 1.0, "details": None}) == zero
    assert p_against_words({**base, "p_support": 0.01, "p_refute": 1.0,
                            "details": {"n_boot": 200}}) == p_words("= 0.01", "= 1", "0.025")


def test_p_words_of_an_open_question_say_nothing_was_tested() -> None:
    words = "p against θ: — (an open question: no claimed region, nothing tested)"
    assert p_against_words({"verdict": "FINDING", "p_support": 0.5, "ci_level": 0.95}) == words


def test_p_words_of_a_result_without_estimate() -> None:
    """One usable seed, or a censored seed under ``censored: refuse``: no estimate, no p's, and
    the line says so."""
    for res in (value(probe([1.0]), target=1.0, tol=0.5),
                value(make_arm("a", [1000.0, 1100.0, 900.0], [1, 0, 1]), target=1000.0,
                      tol=500.0)):
        assert (res.verdict, res.p_support, res.p_refute) == (Verdict.INCONCLUSIVE, None, None)
        assert p_against_words(res.to_dict()) == NO_ESTIMATE


def test_p_words_of_a_result_with_one_side_withheld_print_no_p_for_that_side() -> None:
    """``scalar_compare`` of means with censored treated seeds (entered at the budget, a lower
    bound) withholds p(refute) but keeps the supporting verdict: the line prints the p that
    decided it and says the other is withheld."""
    base = make_arm("b", [1000.0, 1100.0, 900.0, 1050.0, 950.0])
    treat = make_arm("t", [1500.0, 2000.0, 1400.0, 2000.0, 1450.0], [1, 0, 1, 0, 1])
    res = run_criterion({"name": "scalar_compare", "baseline": "b", "treated": "t",
                         "direction": "greater", "statistic": "mean", "paired": False,
                         "n_boot": 200}, base, treat)
    assert res.verdict is Verdict.SUPPORTED and res.p_refute is None
    assert p_against_words(res.to_dict()) == p_words(
        "< 0.005", "withheld (censored seeds make it invalid)", "0.025")


# ---------------------------------------------------------------- imports


@pytest.mark.parametrize("module", ["grokverify.stats.verdict", "grokverify.stats.survival",
                                    "grokverify.stats.sequential", "grokverify.stats.power",
                                    "grokverify.stats.simulate"])
def test_a_stats_module_imports_on_its_own(module: str) -> None:
    """A module imported first in a fresh interpreter: no import cycle through it."""
    subprocess.run([sys.executable, "-c", f"import {module}"], check=True)


def test_an_arm_coerces_to_flat_float_and_bool_and_python_int_seeds() -> None:
    arm = ArmSample("a", [[1, 2], [3, 4]], [[1, 0], [1, 1]],  # type: ignore[arg-type]
                    [np.int64(5), 6, 7, 8])  # type: ignore[arg-type]
    assert arm.values.dtype == np.float64 and arm.values.shape == (4,)
    assert arm.values.tolist() == [1.0, 2.0, 3.0, 4.0]
    assert arm.observed.dtype == np.bool_ and arm.observed.shape == (4,)
    assert arm.observed.tolist() == [True, False, True, True]
    assert arm.seeds == (5, 6, 7, 8) and all(type(s) is int for s in arm.seeds)
    assert (arm.n, arm.events) == (4, 3)
    assert arm.extra == {}


def test_an_arm_coerces_its_extra_metrics_and_their_observed_masks() -> None:
    arm = ArmSample("a", [1.0, 2.0], [True, True], (0, 1),
                    extra={"x": [[3], [0]], "x.observed": [[1], [0]],  # type: ignore[dict-item]
                           7: [0.5, 2]})  # type: ignore[dict-item]
    assert sorted(arm.extra) == ["7", "x", "x.observed"]
    assert arm.extra["x"].dtype == np.float64 and arm.extra["x"].shape == (2,)
    assert arm.extra["x"].tolist() == [3.0, 0.0]
    assert arm.extra["x.observed"].dtype == np.bool_ and arm.extra["x.observed"].shape == (2,)
    assert arm.extra["x.observed"].tolist() == [True, False]
    assert arm.extra["7"].dtype == np.float64 and arm.extra["7"].tolist() == [0.5, 2.0]


def test_a_value_arm_with_every_value_observed_is_accepted() -> None:
    arm = ArmSample("v", [-1.5, 2.0], [True, True], (0, 1), kind="value")
    assert arm.values.tolist() == [-1.5, 2.0] and arm.events == 2


def _refusal(*args: Any, **kwargs: Any) -> str:
    with pytest.raises(ValueError) as err:
        ArmSample(*args, **kwargs)
    return str(err.value)


def test_arms_are_refused_with_their_name_and_why() -> None:
    assert _refusal("a", [1.0, 2.0], [True], (0, 1)) == (
        "arm 'a': values and observed differ in length")
    assert _refusal("a", [1.0, 2.0], [True, True], (0, 1, 2)) == "arm 'a': 3 seeds for 2 values"
    assert _refusal("a", [1.0], [True], (0,), kind="count") == (
        "arm 'a': unknown metric kind 'count'")
    assert _refusal("a", [1.0, -1.0], [True, True], (0, 1)) == (
        "arm 'a': times must be finite and >= 0")
    assert _refusal("a", [1.0, np.inf], [True, False], (0, 1)) == (
        "arm 'a': times must be finite and >= 0")
    assert _refusal("a", [1.0, 2.0], [True, True], (0, 1), extra={"x": [1.0, 2.0, 3.0]}) == (
        "arm 'a': extra metric 'x' has 3 values for 2 seeds")


def test_a_time_arm_at_zero_and_censored_is_accepted() -> None:
    arm = ArmSample("a", [0.0, 500.0], [True, False], (0, 1))
    assert arm.values.tolist() == [0.0, 500.0] and arm.observed.tolist() == [True, False]
    assert arm.events == 1


def test_an_interval_that_does_not_hold_decides_nothing() -> None:
    from dataclasses import replace

    from grokverify.stats.base import INTERVAL_FAILS, CriterionResult, interval_held

    held = CriterionResult(
        criterion="value", effect_label="mean of a", estimate=1.0, ci=(1.0, 1.0), ci_level=0.95,
        p_value=None, test="t", threshold=0.9, claimed_region="r", verdict=Verdict.SUPPORTED,
        reason="r", arms=[], details={}, p_support=0.0, p_refute=1.0)
    assert interval_held(held) is held
    broken = replace(held, details={INTERVAL_FAILS: "all 4 values equal 1"})
    out = interval_held(broken)
    assert out.verdict == Verdict.INCONCLUSIVE and out.ci == (-math.inf, math.inf)
    assert (out.p_support, out.p_refute) == (None, None)
    assert "does not hold for these data (all 4 values equal 1)" in out.reason
    assert "more seeds or a method that holds for such data are needed" in out.reason
    assert out.details["ci_computed"] == [1.0, 1.0] and out.details["p_computed"] == [0.0, 1.0]
    assert out.details["verdict_if_interval_held"] == "SUPPORTED"
    finding = replace(broken, verdict=Verdict.FINDING)
    assert interval_held(finding) is finding
