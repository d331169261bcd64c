"""Verdict rules: an effect estimate, its CI and the claimed region give a verdict and a
one-sentence reason. The boundary belongs to the claimed region, and infinite CI bounds (a
median beyond the budget) compare as numbers: see docs/verdicts.md, "What the verdicts mean"."""

from __future__ import annotations

import enum
import math
from typing import Literal

from grokverify.numbers import format_ci, format_number


class Verdict(str, enum.Enum):
    """Outcome for one claim; PARTIAL is a family's (`claims: any`). Defined with the rules
    (not the statistics) so that reading a verdict needs no numeric package."""

    SUPPORTED = "SUPPORTED"
    REFUTED = "REFUTED"
    PARTIAL = "PARTIAL"
    INCONCLUSIVE = "INCONCLUSIVE"
    FINDING = "FINDING"  # an open question's estimates: nothing claimed, nothing judged
    NOT_TESTED = "NOT TESTED"  # a validity check failed: the run did not test the claim


def decide(
    ci: tuple[float, float],
    threshold: float,
    direction: Literal["less", "greater"],
    estimate: float,
    effect_label: str,
    ci_level: float,
    boundary: str = "the boundary of the claimed effect",
) -> tuple[Verdict, str]:
    """The verdict of a one-sided claimed region (``less``: effect <= threshold) and its reason,
    which quotes the CI, threshold and estimate; `boundary` names what the threshold is (e.g. a
    non-inferiority margin's bound). A NaN bound, or low > high, is INCONCLUSIVE."""
    if direction not in ("less", "greater"):
        raise ValueError(f"direction must be 'less' or 'greater', not {direction!r}")
    if math.isnan(threshold):
        raise ValueError("threshold must be a number, not NaN")
    low, high = float(ci[0]), float(ci[1])
    head = f"The {ci_level * 100:.4g}% CI of the {effect_label}, {format_ci((low, high))},"
    tail = f"(point estimate {format_number(estimate)})."
    thr = format_number(threshold)
    if math.isnan(low) or math.isnan(high) or low > high:
        return Verdict.INCONCLUSIVE, f"{head} is undefined, so no verdict can be drawn {tail}"
    if direction == "less":
        inside, outside = high <= threshold, low > threshold
        inside_words, outside_words = f"at or below {thr}", f"above {thr}"
    else:
        inside, outside = low >= threshold, high < threshold
        inside_words, outside_words = f"at or above {thr}", f"below {thr}"
    if inside:
        reason = f"{head} lies wholly {inside_words}, {boundary} {tail}"
        return Verdict.SUPPORTED, reason
    if outside:
        reason = (
            f"{head} lies wholly {outside_words}, excluding the claimed region bounded by {thr} "
            f"{tail}"
        )
        return Verdict.REFUTED, reason
    reason = (
        f"{head} straddles {thr}, {boundary}, so the data neither support nor refute the "
        f"claim {tail}"
    )
    return Verdict.INCONCLUSIVE, reason


def decide_interval(
    ci: tuple[float, float],
    lower: float,
    upper: float,
    estimate: float,
    effect_label: str,
    ci_level: float,
) -> tuple[Verdict, str]:
    """`decide` for an interval claim ``[lower, upper]`` (both ends belong to it): SUPPORTED
    when the CI lies within it, REFUTED when wholly outside, else INCONCLUSIVE."""
    if math.isnan(lower) or math.isnan(upper) or lower > upper:
        raise ValueError(f"the claimed region [{lower}, {upper}] is not an interval")
    low, high = float(ci[0]), float(ci[1])
    head = f"The {ci_level * 100:.4g}% CI of the {effect_label}, {format_ci((low, high))},"
    tail = f"(point estimate {format_number(estimate)})."
    region = format_ci((lower, upper))
    if math.isnan(low) or math.isnan(high) or low > high:
        return Verdict.INCONCLUSIVE, f"{head} is undefined, so no verdict can be drawn {tail}"
    if lower <= low and high <= upper:
        return Verdict.SUPPORTED, f"{head} lies wholly within the claimed region {region} {tail}"
    if high < lower or low > upper:
        side = "below" if high < lower else "above"
        return Verdict.REFUTED, (f"{head} lies wholly {side} the claimed region {region}, "
                                 f"excluding it {tail}")
    return Verdict.INCONCLUSIVE, (f"{head} overlaps the claimed region {region} without lying "
                                  f"within it, so the data neither support nor refute the claim "
                                  f"{tail}")
