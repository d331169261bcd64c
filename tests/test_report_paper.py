"""A paper's referee report from its paper file and the suite's claim reports: the summary by
verdict and side, each question's answer by its rule, its claims' verdicts and meanings."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from claimtext import write
from suitedata import tiny_result, write_variant

from grokverify.claim.paper import load_paper
from grokverify.report.index import write_suite
from grokverify.report.paper import answers_of
from grokverify.report.suite import read_report

PAPER = """\
arxiv: "2505.15624"
title: A <b>paper</b>
central:
  - id: holds
    asks: Does it hold?
    where: Sec. 1
    quote: It holds.
    claims: [good, bad_for_it]
    answer: {rule: all_agree}
    answers: {paper: For the paper., critic: For its critic., mixed: Both ways.,
              open: Nothing decided.}
questions:
  - id: skeptic
    asks: Is the skeptic right?
    where: skeptic_critique
    quote: It is Adam.
    claims: [undecided, untested, bad_for_it, good]
    answer: {rule: first_decided}
    answers: {paper: The skeptic is answered., critic: The skeptic is right., mixed: x, open: y}
"""
SCALES = {"quick": {"paper_setting": False, "seeds_per_arm": 4, "flops": 1e12, "cpu_hours": 0.01},
          "paper": {"paper_setting": True, "seeds_per_arm": 16, "flops": 3e15, "cpu_hours": 30}}
SIDES = {"favours": {"supported": "paper", "refuted": "critic"}}


def _reports(tmp_path: Path) -> list[Any]:
    source = {**tiny_result()["claim"]["source"], "arxiv": "2505.15624", "role": "falsifier"}
    made = {"good": ("SUPPORTED", "It holds, by this claim."),
            "bad_for_it": ("REFUTED", "It fails, by this claim."),
            "undecided": ("INCONCLUSIVE", "Undecided."),
            "untested": ("NOT TESTED", "Not tested.")}
    paths = []
    for claim, (verdict, meaning) in made.items():
        reason = ("Not tested: event_share on c1: 0.25 (share of seeds), needed ≥ 0.5 — the "
                  "baseline must generalise. The criterion alone would say REFUTED."
                  if verdict == "NOT TESTED" else "r")
        paths.append(write_variant(tmp_path / "reports", claim, verdict=verdict, reason=reason,
                                   meaning=meaning, interpretation=SIDES,
                                   claim__source=source, scale__paper_setting=False,
                                   scales=SCALES))
    return [read_report(p) for p in paths]


def test_each_question_is_answered_by_its_rule_from_its_claims(tmp_path: Path) -> None:
    sources = dict.fromkeys(("good", "bad_for_it", "undecided", "untested"), "2505.15624")
    paper = load_paper(write(tmp_path, PAPER, "paper.yaml"), sources)
    reports = _reports(tmp_path)
    assert answers_of(paper, reports) == {"holds": "mixed", "skeptic": "critic"}
    assert answers_of(paper, [r for r in reports if r.result["claim"]["id"] != "bad_for_it"]) \
        == {"holds": "paper", "skeptic": "paper"}
    written = write_suite(tmp_path / "reports", reports, papers=[paper])
    md = (tmp_path / "reports" / "referee-2505.15624.md").read_text()
    assert tmp_path / "reports" / "referee-2505.15624.html" in written
    for phrase in ("# Referee report: A &lt;b>paper&lt;/b>", "4 of the 4 claims",
                   "1 SUPPORTED, 1 REFUTED, 1 INCONCLUSIVE, 1 NOT TESTED",
                   "1 decided claim(s) favour the paper: good",
                   "1 decided claim(s) favour its critic: bad_for_it",
                   "Critics' tests that fired", "untested (event_share on c1: 0.25",
                   "its paper scale 'paper': 16 seeds an arm, 3e+15 flops, about 30 h of a "
                   "2-core CPU)",
                   "**Answer: mixed.** Both ways.",
                   "**Answer: for its critic.** The skeptic is right.", "arXiv:2505.15624",
                   "Rule `first_decided`", "> It is Adam.",
                   "| [good](<good/report.md>) | falsifier | **SUPPORTED** | the paper |",
                   "It fails, by this claim."):
        assert phrase in md, phrase
    assert md.index("## The paper's central claims") < md.index("## The reviewers' questions")
    html = (tmp_path / "reports" / "referee-2505.15624.html").read_text()
    assert "<b>paper" not in html and "<table>" in html and "Answer: mixed." in html
    for question in ("holds", "skeptic"):  # each question's forest plot, linked and embedded
        plot = tmp_path / "reports" / "referee-2505.15624" / f"{question}.png"
        assert plot in written and plot.read_bytes()[:4] == b"\x89PNG"
        assert f"](<referee-2505.15624/{question}.png>)" in md
    assert html.count('<img src="data:image/png;base64,') == 2
    assert json.loads((tmp_path / "reports" / "results.json").read_text())["claims"]


def test_a_claim_without_a_report_is_said_and_answers_nothing(tmp_path: Path) -> None:
    sources = dict.fromkeys(("good", "bad_for_it", "undecided", "untested"), "2505.15624")
    paper = load_paper(write(tmp_path, PAPER, "paper.yaml"), sources)
    reports = [r for r in _reports(tmp_path) if r.result["claim"]["id"] == "undecided"]
    assert answers_of(paper, reports) == {"holds": "open", "skeptic": "open"}
    write_suite(tmp_path / "reports", reports, papers=[paper])
    md = (tmp_path / "reports" / "referee-2505.15624.md").read_text()
    assert "1 of the 4 claims the paper file names" in md and "not in it: good" in md
    assert "| good | — | not in this suite |" in md
