"""The verdict table's columns, as plain text and a sort key per cell, from a suite row, each
row one line (the verdict right after the claim; longer text in `details`, a tooltip in HTML).

One definition for both renderings (index.md escapes the text for Markdown, index.html for
HTML and sorts by the key), so the two tables can never say different things.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

from grokverify.report.forest import entries, placement_text
from grokverify.report.markdown import interval, number

FOREST = "on its region"  # the forest strip (index.html draws it; index.md says it in numbers)
COLUMNS = ("claim", "verdict", FOREST, "favours", "effect", "CI", "seeds per arm", "scale",
           "role", "paper", "metric", "p vs θ (support / refute)", "training")
OTHER = "other scale"  # the same claim's verdict in the suite beside (`report --beside`)
# the verdict's side, from the claim's interpretation (its `favours`), as the table says it
SIDE_WORDS = {"paper": "the paper", "critic": "its critic", "neither": "neither"}

SortKey = float | str


def _float(x: Any) -> float:
    """A result.json number for sorting: "inf"/"-inf" as infinities, None last."""
    if x is None:
        return math.inf
    return float(x)


def members_text(row: dict[str, Any]) -> str:
    """A family's member verdicts (an open question's member estimates: it judges nothing)."""
    members = row.get("members") or []
    if row["verdict"] == "FINDING":
        return "; ".join(f"{m['member']}: {number(m['estimate'])}" for m in members)
    return "; ".join(f"{m['member']}: {m['verdict']}" for m in members)


def effect_text(row: dict[str, Any]) -> str:
    """A single claim's effect and estimate; a family's count of members by verdict (each
    member in `details`)."""
    members = row.get("members")
    if members:
        if row["verdict"] == "FINDING":
            return members_text(row)
        counts = Counter(m["verdict"] for m in members)
        return (f"{len(members)} members: "
                + ", ".join(f"{n} {verdict}" for verdict, n in counts.items()))
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


def favours_text(row: dict[str, Any]) -> str:
    """The side the verdict favours; — where it favours none (undecided, or not declared)."""
    return SIDE_WORDS.get(row.get("favours") or "", "—")


def columns(rows: list[dict[str, Any]]) -> tuple[str, ...]:
    """The table's columns: OTHER after the strip when some row has a claim beside it."""
    if not any(row.get("beside") for row in rows):
        return COLUMNS
    at = COLUMNS.index(FOREST) + 1
    return (*COLUMNS[:at], OTHER, *COLUMNS[at:])


def other_text(row: dict[str, Any]) -> str:
    """The verdict of the same claim at the suite beside's scale; — where it was not run."""
    other = row.get("beside")
    if not other:
        return "— (not run)"
    setting = "the paper's setting" if other["paper_setting"] else "not the paper's"
    return f"{other['scale']} ({setting}): {other['verdict']}"


def details(row: dict[str, Any]) -> dict[str, str]:
    """Column label -> the longer text a row keeps out of its one line (a tooltip in HTML)."""
    out = {"claim": row["title"], "training": wall_text(row), "verdict": row.get("reason", "")}
    if row.get("members"):
        out["effect"] = members_text(row)
    return out


def cells(row: dict[str, Any]) -> dict[str, tuple[str, SortKey]]:
    """Column label -> (text, sort key) for one claim's row of the verdict table."""
    scale = row["scale"] + ("" if row["paper_setting"] else " (not the paper's)")
    estimate = row.get("estimate") if not row.get("members") else None
    return {
        "claim": (row["id"], row["id"]),
        "favours": (favours_text(row), favours_text(row)),
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
        FOREST: placement_text(entries(row)),
        OTHER: (other_text(row), (row.get("beside") or {}).get("verdict") or "~"),
        "seeds per arm": (str(row["seeds_per_arm"]), float(row["seeds_per_arm"])),
        "training": (f"{_wall_key(row) / 60:.1f} min", _wall_key(row)),
    }
