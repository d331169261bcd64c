"""A question's answer from its claims' verdicts and sides, by each declared rule."""

from __future__ import annotations

from grokverify.claim.paper import AllAgreeSpec, FirstDecidedSpec
from grokverify.stats.answers import Evidence, answer

PAPER = Evidence("a", "SUPPORTED", "paper")
CRITIC = Evidence("b", "REFUTED", "critic")
UNDECIDED = Evidence("c", "INCONCLUSIVE", None)
UNTESTED = Evidence("d", "NOT TESTED", None)
NEITHER = Evidence("e", "REFUTED", "neither")
ABSENT = Evidence("f", None, None)


def test_all_agree_answers_with_the_side_every_decided_claim_favours() -> None:
    rule = AllAgreeSpec(rule="all_agree")
    assert answer(rule, [PAPER, UNDECIDED, UNTESTED, NEITHER, ABSENT]) == "paper"
    assert answer(rule, [UNDECIDED, CRITIC]) == "critic"
    assert answer(rule, [PAPER, CRITIC]) == "mixed"
    assert answer(rule, [UNDECIDED, UNTESTED, NEITHER, ABSENT]) == "open"
    assert answer(AllAgreeSpec(rule="all_agree", min_decided=2), [PAPER, UNDECIDED]) == "open"
    assert answer(AllAgreeSpec(rule="all_agree", min_decided=2), [PAPER, PAPER]) == "paper"


def test_first_decided_answers_with_the_first_decided_claim_in_order() -> None:
    rule = FirstDecidedSpec(rule="first_decided")
    assert answer(rule, [UNDECIDED, CRITIC, PAPER]) == "critic"
    assert answer(rule, [UNTESTED, NEITHER, PAPER, CRITIC]) == "paper"
    assert answer(rule, [UNDECIDED, ABSENT]) == "open"
