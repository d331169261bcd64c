"""Verdict rules: an effect estimate, its CI and the claimed region give a verdict and a reason.

The claimed region is ``{effect <= threshold}`` for direction "less" and ``{effect >= threshold}``
for direction "greater"; the threshold is the boundary of the smallest effect the claim asserts
and belongs to the claimed region (the boundary is inclusive on both rules):

* SUPPORTED    -- the CI lies wholly inside the claimed region
                  (less: ``ci_high <= threshold``; greater: ``ci_low >= threshold``).
* REFUTED      -- the CI excludes the claimed region entirely
                  (less: ``ci_low > threshold``; greater: ``ci_high < threshold``).
* INCONCLUSIVE -- otherwise: the CI straddles (or touches from outside) the threshold, or the CI
                  is undefined (a NaN bound, or low > high), which gets its own reason.

Infinite CI bounds are legitimate (a median beyond the training budget) and are compared as
ordinary numbers. PARTIAL is never produced here; it is reserved for combining criteria.
"""

from __future__ import annotations

import math
from typing import Literal

from grokverify.stats.base import Verdict


def format_number(x: float) -> str:
    """Short human form used in reasons: "inf"/"-inf"/"nan", whole steps, else 3 significant."""
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if abs(x) >= 100:
        return f"{x:.0f}"
    return f"{x:.3g}"


def format_ci(ci: tuple[float, float]) -> str:
    """The CI as "[low, high]" with `format_number`, so reasons and tests agree on digits."""
    return f"[{format_number(ci[0])}, {format_number(ci[1])}]"


def decide(
    ci: tuple[float, float],
    threshold: float,
    direction: Literal["less", "greater"],
    estimate: float,
    effect_label: str,
    ci_level: float,
) -> tuple[Verdict, str]:
    """Apply the module's rules; the reason is one sentence with the CI, threshold and estimate."""
    if direction not in ("less", "greater"):
        raise ValueError(f"direction must be 'less' or 'greater', not {direction!r}")
    if math.isnan(threshold):
        raise ValueError("threshold must be a number, not NaN")
    low, high = float(ci[0]), float(ci[1])
    head = f"The {ci_level * 100:g}% CI of the {effect_label}, {format_ci((low, high))},"
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
        reason = f"{head} lies wholly {inside_words}, the boundary of the claimed effect {tail}"
        return Verdict.SUPPORTED, reason
    if outside:
        reason = (
            f"{head} lies wholly {outside_words}, excluding the claimed region bounded by {thr} "
            f"{tail}"
        )
        return Verdict.REFUTED, reason
    reason = (
        f"{head} straddles {thr}, the boundary of the claimed effect, so the data neither "
        f"support nor refute the claim {tail}"
    )
    return Verdict.INCONCLUSIVE, reason
