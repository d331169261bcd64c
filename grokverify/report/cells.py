"""The verdict table's columns, as plain text and a sort key per cell, from a suite row.

One definition for both renderings (index.md escapes the text for Markdown, index.html for
HTML and sorts by the key), so the two tables can never say different things.
"""

from __future__ import annotations

import math
from typing import Any

from grokverify.report.markdown import interval, number

COLUMNS = ("claim", "paper", "role", "scale", "metric", "effect", "CI", "p vs θ (support / refute)",
           "verdict", "seeds per arm", "wall")

SortKey = float | str


def _float(x: Any) -> float:
    """A result.json number for sorting: "inf"/"-inf" as infinities, None last."""
    if x is None:
        return math.inf
    return float(x)


def effect_text(row: dict[str, Any]) -> str:
    """A single claim's effect and estimate; a family's member verdicts (an open question's
    member estimates: it judges nothing)."""
    members = row.get("members")
    if members:
        if row["verdict"] == "FINDING":
            return "; ".join(f"{m['member']}: {number(m['estimate'])}" for m in members)
        return "; ".join(f"{m['member']}: {m['verdict']}" for m in members)
    if row.get("effect_label") is None:
        return "—"
    return f"{row['effect_label']} = {number(row['estimate'])}"


def ci_text(row: dict[str, Any]) -> str:
    if row.get("members") or not row.get("ci"):
        return "—"
    return f"{row['ci_level'] * 100:.4g}% {interval(row['ci'])}"


def p_text(row: dict[str, Any]) -> str:
    """p(support) / p(refute) against θ, the boundary of the claimed region (the p's that
    decide, one-sided); — where the criterion gives none (a family: see its members)."""
    if row.get("members") or (row.get("p_support") is None and row.get("p_refute") is None):
        return "—"
    return f"{number(row.get('p_support'))} / {number(row.get('p_refute'))}"


def wall_text(row: dict[str, Any]) -> str:
    """The run's wall time and, where the result has it, what training its records took (the
    claim's cost, the same in a run that reused the store and in a rebuilt report)."""
    text = f"{row['wall_s'] / 60:.1f} min ({row['trained']} trained, {row['reused']} reused)"
    if row.get("records_train_s") is not None:
        text += f"; its records: {row['records_train_s'] / 60:.1f} min of training"
    return text


def _wall_key(row: dict[str, Any]) -> float:
    return float(row["records_train_s"] if row.get("records_train_s") is not None
                 else row["wall_s"])


def cells(row: dict[str, Any]) -> dict[str, tuple[str, SortKey]]:
    """Column label -> (text, sort key) for one claim's row of the verdict table."""
    scale = row["scale"] + ("" if row["paper_setting"] else " (not the paper's)")
    estimate = row.get("estimate") if not row.get("members") else None
    return {
        "claim": (row["id"], row["id"]),
        "paper": (f"arXiv:{row['arxiv']}", row["arxiv"]),
        "role": (row["role"], row["role"]),
        "scale": (scale, scale),
        "metric": (row["metric"], row["metric"]),
        "effect": (effect_text(row), _float(estimate) if estimate is not None
                   else effect_text(row)),
        "CI": (ci_text(row), _float((row.get("ci") or [None])[0]) if ci_text(row) != "—"
               else math.inf),
        "p vs θ (support / refute)": (p_text(row), _float(row.get("p_support"))),
        "verdict": (row["verdict"], row["verdict"]),
        "seeds per arm": (str(row["seeds_per_arm"]), float(row["seeds_per_arm"])),
        "wall": (wall_text(row), _wall_key(row)),
    }
