"""A question's answer from its claims' verdicts by the paper file's declared rule
(grokverify.claim.paper): each decided claim favours the paper, its critic or neither."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from grokverify.kinds import ANSWER_RULES

DECIDED = ("SUPPORTED", "REFUTED")


@dataclass(frozen=True)
class Evidence:
    """One claim as a question reads it: its verdict, and the side that verdict favours (None:
    undecided, or its interpretation names no side)."""

    claim: str
    verdict: str | None  # None: no report of it in the suite
    favours: str | None


def _sides(evidence: Sequence[Evidence]) -> list[str]:
    """The sides of the decided claims, in order; a verdict that favours neither answers nothing."""
    return [e.favours for e in evidence
            if e.verdict in DECIDED and e.favours in ("paper", "critic")]


def all_agree(spec: Any, evidence: Sequence[Evidence]) -> str:
    sides = _sides(evidence)
    if len(sides) < spec.min_decided:
        return "open"
    return sides[0] if len(set(sides)) == 1 else "mixed"


def first_decided(spec: Any, evidence: Sequence[Evidence]) -> str:
    sides = _sides(evidence)
    return sides[0] if sides else "open"


def answer(spec: Any, evidence: Sequence[Evidence]) -> str:
    """paper, critic, mixed or open, by the question's rule."""
    return str(ANSWER_RULES.of(spec)(spec, evidence))
