"""The CI verdict rules (`decide` for a one-sided claim, `decide_interval` for a region), their
reasons, and how numbers and CIs are printed in them."""

from __future__ import annotations

import math

import pytest
from conftest import Has

from grokverify.stats.base import Verdict
from grokverify.stats.verdict import decide, decide_interval, format_ci, format_number

INF = math.inf
LABEL = "ratio of KM median steps (treated / baseline)"


def check(ci: tuple[float, float], threshold: float, direction: str) -> Verdict:
    verdict, reason = decide(ci, threshold, direction, 0.5, LABEL, 0.95)  # type: ignore[arg-type]
    assert reason.count(".") >= 1 and reason.endswith(".")
    assert format_ci(ci) in reason
    return verdict


# ---------------------------------------------------------------- decide


def test_decide_rejects_a_bad_direction_or_threshold_with_what_it_expected() -> None:
    with pytest.raises(ValueError, match="direction must be 'less' or 'greater', not 'lower'"):
        decide((0.1, 0.2), 0.8, "lower", 0.5, LABEL, 0.95)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="^threshold must be a number, not NaN$"):
        decide((0.1, 0.2), math.nan, "less", 0.5, LABEL, 0.95)
    with pytest.raises(ValueError, match="not 'sideways'"):
        decide((0.1, 0.2), 0.8, "sideways", 0.15, LABEL, 0.95)  # type: ignore[arg-type]


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
    assert reason == Has(f"The 95% CI of the {LABEL}, [0.41, 0.62]", "wholly at or below 0.8",
                         "the boundary of the claimed effect", "(point estimate 0.52).")
    _, refuted = decide((1.1, INF), 0.8, "less", 1.4, LABEL, 0.9)
    assert "90% CI" in refuted and "[1.1, inf]" in refuted and "above 0.8" in refuted
    _, straddle = decide((0.6, 1.1), 0.8, "less", 0.85, LABEL, 0.95)
    assert "straddles 0.8" in straddle and "[0.6, 1.1]" in straddle
    _, undefined = decide((math.nan, math.nan), 0.8, "less", math.nan, LABEL, 0.95)
    assert "undefined" in undefined and "[nan, nan]" in undefined


def test_format_number() -> None:
    assert [format_number(x) for x in (INF, -INF, math.nan)] == ["inf", "-inf", "nan"]
    assert format_number(12345.6) == "12346"
    assert format_number(0.41234) == "0.412"
    # a negative zero (a region "r <= -0.0") prints as the zero it is
    assert [format_number(-0.0), format_number(0.0)] == ["0", "0"]
    assert format_ci((-1500.0, 0.5)) == "[-1500, 0.5]"


# ---------------------------------------------------------------- decide_interval


@pytest.mark.parametrize(("ci", "expected"), [
    ((0.5, 1.5), Verdict.SUPPORTED), ((0.0, 2.0), Verdict.SUPPORTED),  # ends belong to region
    ((-0.1, 1.0), Verdict.INCONCLUSIVE), ((1.5, 2.5), Verdict.INCONCLUSIVE),
    ((2.0, 3.0), Verdict.INCONCLUSIVE), ((-1.0, 0.0), Verdict.INCONCLUSIVE),  # touch from outside
    ((2.01, 3.0), Verdict.REFUTED), ((-3.0, -0.01), Verdict.REFUTED),
    ((-math.inf, math.inf), Verdict.INCONCLUSIVE), ((math.nan, 1.0), Verdict.INCONCLUSIVE),
    ((1.5, 0.5), Verdict.INCONCLUSIVE)])
def test_decide_interval(ci: tuple[float, float], expected: Verdict) -> None:
    verdict, reason = decide_interval(ci, 0.0, 2.0, 1.0, "difference", 0.9)
    assert verdict == expected and reason.endswith(".") and "90% CI" in reason


def test_decide_interval_reasons_name_the_region_and_the_side() -> None:
    words = {ci: decide_interval(ci, 0.0, 2.0, 1.0, "difference", 0.9)[1] for ci in (
        (0.5, 1.5), (2.01, 3.0), (-3.0, -0.01), (1.5, 2.5), (math.nan, 1.0), (1.0, math.nan))}
    assert all("[0, 2]" in w for ci, w in words.items() if not any(map(math.isnan, ci)))
    assert "wholly within the claimed region [0, 2]" in words[(0.5, 1.5)]
    assert "wholly above the claimed region [0, 2]" in words[(2.01, 3.0)]
    assert "wholly below the claimed region [0, 2]" in words[(-3.0, -0.01)]
    assert "overlaps the claimed region [0, 2]" in words[(1.5, 2.5)]
    assert "is undefined" in words[(math.nan, 1.0)] and "is undefined" in words[(1.0, math.nan)]


@pytest.mark.parametrize(("lower", "upper"), [(2.0, 1.0), (math.nan, 1.0), (0.0, math.nan)])
def test_decide_interval_rejects_bad_region(lower: float, upper: float) -> None:
    with pytest.raises(ValueError, match=r"the claimed region \[.*\] is not an interval"):
        decide_interval((0, 1), lower, upper, 0.5, "x", 0.95)
