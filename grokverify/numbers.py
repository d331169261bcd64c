"""How numbers are written in messages, reasons and reports, so that all of them (and the
tests) agree on digits."""

from __future__ import annotations

import math


def format_number(x: float) -> str:
    """Short human form used in reasons: "inf"/"-inf"/"nan", whole steps, else 3 significant."""
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if x == 0:  # -0.0 too: "r <= -0" reads as a different claim
        return "0"
    if abs(x) >= 100:
        return f"{x:.0f}"
    return f"{x:.3g}"


def format_ci(ci: tuple[float, float]) -> str:
    """The CI as "[low, high]" with `format_number`, so reasons and tests agree on digits."""
    return f"[{format_number(ci[0])}, {format_number(ci[1])}]"
