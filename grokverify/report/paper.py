"""A paper's referee report (referee-ARXIV.md and .html beside the suite): what its claims
found, by verdict and by side, then each central claim and reviewer question answered by its
declared rule (docs/verdicts.md, "Questions and referee reports"). Built only from the claims'
result.json and the paper file: no sentence is written after the results."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from grokverify.claim.paper import PaperSpec, QuestionSpec
from grokverify.report.cells import ci_text, favours_text
from grokverify.report.escape import cell, text
from grokverify.report.forest import AXIS_WORDS
from grokverify.report.markdown import number
from grokverify.report.suite import ClaimReport, favours, relative_path, suite_row
from grokverify.stats.answers import Evidence, answer

ANSWER_WORDS = {"paper": "for the paper", "critic": "for its critic",
                "mixed": "mixed", "open": "open"}
CRITICS = ("falsifier", "skeptic", "referee", "inference")
VERDICT_ORDER = ("SUPPORTED", "REFUTED", "INCONCLUSIVE", "PARTIAL", "NOT TESTED", "FINDING")


def paper_file_name(paper: PaperSpec) -> str:
    return f"referee-{paper.arxiv}"


def _evidence(question: QuestionSpec, by_id: dict[str, ClaimReport]) -> list[Evidence]:
    out = []
    for claim in question.claims:
        report = by_id.get(claim)
        res = report.result if report else None
        out.append(Evidence(claim, res["verdict"] if res else None,
                            favours(res) if res else None))
    return out


def _claim_rows(question: QuestionSpec, by_id: dict[str, ClaimReport],
                folder: Path) -> list[str]:
    rows = ["| claim | role | verdict | favours | estimate [CI] | what it means |",
            "|---|---|---|---|---|---|"]
    for claim in question.claims:
        report = by_id.get(claim)
        if report is None:
            rows.append(f"| {cell(claim)} | — | not in this suite | — | — | — |")
            continue
        res = report.result
        row = suite_row(res, report.path.name)
        link = relative_path(report.folder / "report.md", folder)
        effect = "—" if row.get("members") or row.get("estimate") is None else \
            f"{number(row['estimate'])} {ci_text(row)}"
        rows.append(f"| [{cell(claim)}](<{link}>) | {cell(res['claim']['source']['role'])} | "
                    f"**{cell(res['verdict'])}** | {cell(favours_text(row))} | {cell(effect)} | "
                    f"{cell(res.get('meaning') or '—')} |")
    return rows


def question_rows(question: QuestionSpec, reports: list[ClaimReport]) -> list[dict[str, Any]]:
    """The suite rows of a question's claims in this suite, in its order (its forest plot)."""
    by_id = {r.result["claim"]["id"]: r for r in reports}
    return [suite_row(by_id[c].result, by_id[c].path.name) for c in question.claims
            if c in by_id]


def _question(question: QuestionSpec, by_id: dict[str, ClaimReport], folder: Path,
              plot: str | None) -> list[str]:
    found = answer(question.answer, _evidence(question, by_id))
    rule = (type(question.answer).__doc__ or "").split(";")[0].strip()
    figure = [f"![{cell(question.id)}: its claims on their claimed regions](<{plot}>)", "",
              AXIS_WORDS[0].upper() + AXIS_WORDS[1:], ""] if plot else []
    return [f"### {text(question.asks)}", "",
            f"**Answer: {ANSWER_WORDS[found]}.** {cell(question.answers.sentence(found))}", "",
            f"Rule `{question.answer.rule}`: {cell(rule)}. Asked in {cell(question.where)}:", "",
            f"> {text(question.quote)}", "", *_claim_rows(question, by_id, folder), "",
            *figure]


def _first_failure(reason: str) -> str:
    """The first failed check of a NOT TESTED reason ("Not tested: X on arm: 0.2 (...)...")."""
    return reason.removeprefix("Not tested: ").split(" — ")[0].split("; ")[0]


def _cost(res: dict[str, Any]) -> str:
    """What the claim's paper scale would cost, from result.json's `scales` ("" without)."""
    if res["scale"]["paper_setting"]:
        return "; this is the paper's setting"
    paper = [(n, s) for n, s in (res.get("scales") or {}).items() if s["paper_setting"]]
    if not res.get("scales"):
        return ""
    if not paper:
        return "; the claim declares no paper scale"
    return "".join(f"; its paper scale {name!r}: {s['seeds_per_arm']} seeds an arm, "
                   f"{s['flops']:.2g} flops, about {s['cpu_hours']:.2g} h of a 2-core CPU"
                   for name, s in paper)


def _summary(paper: PaperSpec, by_id: dict[str, ClaimReport]) -> list[str]:
    named = list(dict.fromkeys(c for q in paper.all_questions() for c in q.claims))
    here = [by_id[c].result for c in named if c in by_id]
    verdicts = Counter(r["verdict"] for r in here)
    sides: dict[str, list[str]] = {"paper": [], "critic": [], "neither": []}
    for res in here:
        side = favours(res)
        if side:
            sides[side].append(res["claim"]["id"])
    fired = [r["claim"]["id"] for r in here
             if r["claim"]["source"]["role"] in CRITICS and favours(r) == "critic"]
    untested = [r for r in here if r["verdict"] == "NOT TESTED"]
    scales = sorted({(r["scale"]["name"], r["scale"]["paper_setting"]) for r in here})
    out = [f"{len(here)} of the {len(named)} claims the paper file names have a report in this "
           "suite" + (f"; not in it: {', '.join(c for c in named if c not in by_id)}"
                      if len(here) < len(named) else "") + ".", ""]
    out += ["Scale: " + ", ".join(f"{name} ({'the' if setting else 'NOT the'} paper's setting)"
                                  for name, setting in scales) + ".", ""]
    out += ["- By verdict: " + ", ".join(f"{verdicts[v]} {v}" for v in VERDICT_ORDER
                                         if verdicts[v]) + "."]
    for side, words in (("paper", "favour the paper"), ("critic", "favour its critic"),
                        ("neither", "decide for neither side")):
        out.append(f"- {len(sides[side])} decided claim(s) {words}"
                   + (f": {', '.join(sides[side])}." if sides[side] else "."))
    out.append("- Critics' tests that fired (a falsifier's, skeptic's, referee's or inference's "
               "claim whose verdict favours the critic): " + (", ".join(fired) or "none") + ".")
    out.append("- NOT TESTED at this scale (the run did not realise the claim's regime): "
               + ("; ".join(f"{r['claim']['id']} ({_first_failure(r['reason'])}{_cost(r)})"
                            for r in untested) or "none") + ".")
    return [text(line) if not line.startswith("- ") else "- " + text(line[2:]) for line in out]


def render_paper_md(paper: PaperSpec, reports: list[ClaimReport], folder: Path,
                    plots: dict[str, str] | None = None) -> str:
    """The referee report of one paper from the suite's claim reports (written into `folder`);
    `plots`: question id -> the link of its forest plot."""
    plots = plots or {}
    by_id = {r.result["claim"]["id"]: r for r in reports}
    lines = [f"# Referee report: {text(paper.title)}", "", f"arXiv:{cell(paper.arxiv)}", "",
             "## Summary", "", *_summary(paper, by_id), "", "## The paper's central claims", ""]
    for question in paper.central:
        lines += _question(question, by_id, folder, plots.get(question.id))
    if paper.questions:
        lines += ["## The reviewers' questions", ""]
        for question in paper.questions:
            lines += _question(question, by_id, folder, plots.get(question.id))
    return "\n".join(lines).rstrip("\n") + "\n"


def answers_of(paper: PaperSpec, reports: list[ClaimReport]) -> dict[str, str]:
    """Question id -> its answer (paper, critic, mixed, open)."""
    by_id = {r.result["claim"]["id"]: r for r in reports}
    return {q.id: answer(q.answer, _evidence(q, by_id)) for q in paper.all_questions()}
