"""`grokverify diff OLD NEW`: what changed between two suites (e.g. last night and tonight).

A line per claim, keyed by claim id: NEW (only in NEW), CHANGED (its verdict, or a family
member's: a member may flip while the family's verdict stays), same, MISSING (only in OLD:
removed, or skipped tonight), and MOVED for an estimate (a family member's too) that left OLD's
CI, which a verdict may survive but a reader wants to know about.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from grokverify.report.markdown import interval, number


@dataclass(frozen=True)
class Line:
    kind: str  # NEW | CHANGED | same | MOVED | MISSING
    claim: str
    words: str

    def __str__(self) -> str:
        return f"{self.kind:<8} {self.claim}: {self.words}"


def _value(x: Any) -> float | None:
    """A result.json number ("inf"/"-inf" strings included); None where there is none."""
    if x is None:
        return None
    try:
        value = float(x)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(value) else value


def _outside(estimate: Any, ci: Any) -> bool:
    """Whether NEW's estimate lies outside OLD's CI (not comparable: False)."""
    value = _value(estimate)
    if value is None or not isinstance(ci, list) or len(ci) != 2:
        return False
    low, high = _value(ci[0]), _value(ci[1])
    low = -math.inf if low is None else low
    high = math.inf if high is None else high
    return not low <= value <= high


def _effects(row: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Name -> effect of a row: the claim's own, or each family member's."""
    if row.get("members"):
        return {m["member"]: m for m in row["members"]}
    return {"": row} if "estimate" in row else {}


def _moves(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    out = []
    old_effects = _effects(old)
    for name, effect in _effects(new).items():
        before = old_effects.get(name)
        if before is None or not _outside(effect.get("estimate"), before.get("ci")):
            continue
        level = before.get("ci_level")
        label = f"{name}: " if name else ""
        out.append(f"{label}estimate {number(before.get('estimate'))} -> "
                   f"{number(effect.get('estimate'))}, outside OLD's "
                   f"{'' if level is None else f'{float(level) * 100:.4g}% '}CI "
                   f"{interval(before['ci'])}")
    return out


def _member_changes(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """Each family member whose verdict differs, appeared or went (NEW's order, then OLD's)."""
    before = {m["member"]: m.get("verdict") for m in old.get("members") or []}
    after = {m["member"]: m.get("verdict") for m in new.get("members") or []}
    out = [f"{name} {before[name]} -> {verdict}" if name in before else f"{name} new ({verdict})"
           for name, verdict in after.items() if before.get(name) != verdict]
    return out + [f"{name} gone (was {verdict})" for name, verdict in before.items()
                  if name not in after]


def diff_suites(old: dict[str, Any], new: dict[str, Any]) -> list[Line]:
    """Every claim of NEW (sorted by id), then those only in OLD."""
    before = {row["id"]: row for row in old["claims"]}
    after = {row["id"]: row for row in new["claims"]}
    lines = []
    for claim_id in sorted(after):
        row = after[claim_id]
        was = before.get(claim_id)
        if was is None:
            lines.append(Line("NEW", claim_id, row["verdict"]))
            continue
        scale = ("" if was.get("scale") == row.get("scale")
                 else f" (scale {was.get('scale')} -> {row.get('scale')})")
        members = _member_changes(was, row)
        inside = f"; members: {', '.join(members)}" if members else ""
        if was["verdict"] != row["verdict"]:
            lines.append(Line("CHANGED", claim_id,
                              f"{was['verdict']} -> {row['verdict']}{scale}{inside}"))
        elif members:
            lines.append(Line("CHANGED", claim_id, f"{row['verdict']} (unchanged){scale}{inside}"))
        else:
            lines.append(Line("same", claim_id, f"{row['verdict']}{scale}"))
        lines += [Line("MOVED", claim_id, words) for words in _moves(was, row)]
    lines += [Line("MISSING", claim_id, f"{before[claim_id]['verdict']} in OLD, no report in NEW")
              for claim_id in sorted(set(before) - set(after))]
    return lines


def summary(lines: list[Line]) -> str:
    count = {kind: len({ln.claim for ln in lines if ln.kind == kind})
             for kind in ("CHANGED", "MOVED", "NEW", "MISSING", "same")}
    return (f"{count['CHANGED']} verdict(s) changed, {count['MOVED']} claim(s) with an estimate "
            f"outside OLD's CI, {count['NEW']} new, {count['MISSING']} missing, "
            f"{count['same']} unchanged")
