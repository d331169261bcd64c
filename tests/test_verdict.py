"""Tests of the verdict rules, directly and end to end on synthetic censored seeds."""

from __future__ import annotations

import math

import numpy as np
import pytest

from grokverify.stats.base import ArmSample, CriterionResult, Verdict, judge, verdict_from_p, wald_p
from grokverify.stats.survival import SurvivalCompareParams
from grokverify.stats.verdict import decide, format_ci, format_number

INF = math.inf
LABEL = "ratio of KM median steps (treated / baseline)"
BUDGET = 6000.0


def check(ci: tuple[float, float], threshold: float, direction: str) -> Verdict:
    verdict, reason = decide(ci, threshold, direction, 0.5, LABEL, 0.95)  # type: ignore[arg-type]
    assert reason.count(".") >= 1 and reason.endswith(".")
    assert format_ci(ci) in reason
    return verdict


# --- decide() directly ----------------------------------------------------------------------


def test_decide_rejects_a_bad_direction_or_threshold_with_what_it_expected() -> None:
    with pytest.raises(ValueError, match="direction must be 'less' or 'greater', not 'lower'"):
        decide((0.1, 0.2), 0.8, "lower", 0.5, LABEL, 0.95)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="^threshold must be a number, not NaN$"):
        decide((0.1, 0.2), math.nan, "less", 0.5, LABEL, 0.95)


@pytest.mark.parametrize(
    ("ci", "expected"),
    [
        ((0.41, 0.62), Verdict.SUPPORTED),
        ((0.41, 0.8), Verdict.SUPPORTED),  # the boundary belongs to the claimed region
        ((0.6, 0.81), Verdict.INCONCLUSIVE),
        ((0.8, 1.2), Verdict.INCONCLUSIVE),  # touches the region at its boundary
        ((0.81, 1.2), Verdict.REFUTED),
        ((0.0, INF), Verdict.INCONCLUSIVE),
        ((0.9, INF), Verdict.REFUTED),
        ((INF, INF), Verdict.REFUTED),
        ((-INF, 0.5), Verdict.SUPPORTED),
        ((math.nan, 0.5), Verdict.INCONCLUSIVE),
        ((0.5, math.nan), Verdict.INCONCLUSIVE),
        ((0.7, 0.6), Verdict.INCONCLUSIVE),  # malformed: low > high
    ],
)
def test_decide_less(ci: tuple[float, float], expected: Verdict) -> None:
    assert check(ci, 0.8, "less") is expected


@pytest.mark.parametrize(
    ("ci", "expected"),
    [
        ((1.3, 2.0), Verdict.SUPPORTED),
        ((1.2, 2.0), Verdict.SUPPORTED),
        ((1.5, INF), Verdict.SUPPORTED),
        ((1.1, 1.3), Verdict.INCONCLUSIVE),
        ((0.9, 1.2), Verdict.INCONCLUSIVE),
        ((0.9, 1.19), Verdict.REFUTED),
        ((math.nan, math.nan), Verdict.INCONCLUSIVE),
    ],
)
def test_decide_greater(ci: tuple[float, float], expected: Verdict) -> None:
    assert check(ci, 1.2, "greater") is expected


def test_reason_wording_has_the_numbers() -> None:
    verdict, reason = decide((0.41, 0.62), 0.8, "less", 0.52, LABEL, 0.95)
    assert verdict is Verdict.SUPPORTED
    assert reason == (
        "The 95% CI of the ratio of KM median steps (treated / baseline), [0.41, 0.62], lies "
        "wholly at or below 0.8, the boundary of the claimed effect (point estimate 0.52)."
    )
    _, refuted = decide((1.1, INF), 0.8, "less", 1.4, LABEL, 0.9)
    assert "90% CI" in refuted and "[1.1, inf]" in refuted and "above 0.8" in refuted
    _, straddle = decide((0.6, 1.1), 0.8, "less", 0.85, LABEL, 0.95)
    assert "straddles 0.8" in straddle and "[0.6, 1.1]" in straddle
    _, undefined = decide((math.nan, math.nan), 0.8, "less", math.nan, LABEL, 0.95)
    assert "undefined" in undefined and "[nan, nan]" in undefined


def test_decide_rejects_bad_input() -> None:
    with pytest.raises(ValueError):
        decide((0.1, 0.2), 0.8, "sideways", 0.15, LABEL, 0.95)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        decide((0.1, 0.2), math.nan, "less", 0.15, LABEL, 0.95)


def test_format_number() -> None:
    assert [format_number(x) for x in (INF, -INF, math.nan)] == ["inf", "-inf", "nan"]
    assert format_number(12345.6) == "12346"
    assert format_number(0.41234) == "0.412"
    # a negative zero (a region "r <= -0.0") prints as the zero it is
    assert [format_number(-0.0), format_number(0.0)] == ["0", "0"]
    assert format_ci((-1500.0, 0.5)) == "[-1500, 0.5]"


# --- end to end on synthetic censored data ----------------------------------------------------


def make_arm(name: str, rng: np.random.Generator, median: float, n: int = 20) -> ArmSample:
    """Lognormal steps-to-grok, logged every 100 steps, censored at a 6000-step budget."""
    steps = np.ceil(np.exp(rng.normal(math.log(median), 0.5, n)) / 100) * 100
    return ArmSample(name, np.minimum(steps, BUDGET), steps <= BUDGET, tuple(range(n)))


def run_claim(base_median: float, treat_median: float, seed: int, **kw: object) -> CriterionResult:
    rng = np.random.default_rng(seed)
    arms = {
        "base": make_arm("base", rng, base_median),
        "treat": make_arm("treat", rng, treat_median),
    }
    raw = {"name": "survival_compare", "baseline": "base", "treated": "treat"}
    raw |= {"direction": "less", "min_effect": 0.2} | kw
    params = SurvivalCompareParams.model_validate(raw)
    result = judge(params, arms)
    assert format_ci(result.ci) in result.reason
    assert format_number(result.threshold) in result.reason
    return result


@pytest.mark.parametrize("seed", range(3))
def test_clearly_faster_is_supported(seed: int) -> None:
    result = run_claim(4000, 1500, seed)
    assert result.verdict is Verdict.SUPPORTED
    assert result.ci[1] <= 0.8
    assert result.p_value is not None and result.p_value < 0.01


@pytest.mark.parametrize("seed", range(3))
def test_identical_distributions_not_supported(seed: int) -> None:
    result = run_claim(3000, 3000, seed)
    assert result.verdict in (Verdict.INCONCLUSIVE, Verdict.REFUTED)
    assert result.ci[0] <= 1.0 <= result.ci[1] or result.verdict is Verdict.REFUTED


@pytest.mark.parametrize("seed", range(3))
def test_slower_when_claimed_faster_is_refuted(seed: int) -> None:
    result = run_claim(2500, 6000, seed)
    assert result.verdict is Verdict.REFUTED
    assert result.arms[1].columns["censored"] > 0
    assert result.ci[0] > 0.8


def test_straddling_ci_is_inconclusive() -> None:
    result = run_claim(3000, 2400, 0)
    assert result.ci[0] < 0.8 < result.ci[1]
    assert result.verdict is Verdict.INCONCLUSIVE
    assert "straddles" in result.reason


def test_claimed_slower_is_supported_with_greater() -> None:
    result = run_claim(1500, 4500, 1, direction="greater", min_effect=0.5)
    assert result.threshold == pytest.approx(1.5)
    assert result.verdict is Verdict.SUPPORTED


def test_difference_effect_in_steps() -> None:
    result = run_claim(4000, 1500, 2, effect="difference", min_effect=1000)
    assert result.threshold == -1000
    assert result.verdict is Verdict.SUPPORTED
    assert "difference" in result.effect_label and "steps" in result.claimed_region


# --- the same rules on one-sided p-values against θ (what families combine) ---------------


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


@pytest.mark.parametrize("estimate", [-3.0, -1.96, -1.0, 0.0, 1.0, 1.9599, 1.9601, 3.0])
@pytest.mark.parametrize("region", ["less", "greater"])
def test_wald_p_gives_the_wald_ci_verdict(estimate: float, region: str) -> None:
    z = 1.959963984540054
    ci = (estimate - z, estimate + z)  # se 1, boundary 0
    verdict, _ = decide(ci, 0.0, region, estimate, LABEL, 0.95)  # type: ignore[arg-type]
    p_support, p_refute = wald_p(estimate, 1.0, 0.0, region)  # type: ignore[arg-type]
    assert verdict_from_p(p_support, p_refute, 0.025) is verdict
    assert p_support + p_refute == pytest.approx(1.0)
