"""index.md of a suite: the verdict table, then one section per claim made of report.md's own
pieces (`report.markdown`), so a claim reads the same in its report and in the suite.

The section's parts are also what index.html renders (`report.html`), with its figures
embedded there instead of linked.
"""

from __future__ import annotations

from typing import Any

from grokverify.report.cells import FOREST, cells, columns
from grokverify.report.escape import block, cell, code, text
from grokverify.report.forest import AXIS_WORDS
from grokverify.report.markdown import claim_lines, figure_lines, result_lines
from grokverify.report.referee import caveat_lines, reasoning_lines, reproduce_lines, setup_lines
from grokverify.report.suite import ClaimReport, relative_path


def _demote(lines: list[str]) -> list[str]:
    """report.md's headings one level down, under the claim's own heading (a line of report.md
    that starts with # is a heading: claim text that does is escaped)."""
    return [f"#{line}" if line.startswith("#") else line for line in lines]


def section_head(res: dict[str, Any]) -> list[str]:
    """A claim's title, where it comes from, its verdict, banners, claim, quote, setup and
    result."""
    claim, src = res["claim"], res["claim"]["source"]
    return [f"## {text(claim['title'])}", "",
            f"{code(claim['id'])} · arXiv:{text(src['arxiv'])} · {text(src['role'])}", "",
            *_demote(claim_lines(res)), "### Setup", "", *setup_lines(res), "",
            "### Result", "", *_demote(result_lines(res))]


def section_tail(res: dict[str, Any]) -> list[str]:
    """Why the verdict, what limits it, the claim's notes and the commands that reproduce its
    report."""
    notes = res["claim"]["notes"].strip()
    out = ["### Reasoning", "", *reasoning_lines(res), "", "### Caveats", "",
           *caveat_lines(res), ""]
    out += ["### Notes (choices where the source is silent)", "", *block(notes), ""] if notes \
        else []
    return [*out, "### Reproduce", "", *reproduce_lines(res), ""]


def verdict_table(rows: list[dict[str, Any]]) -> list[str]:
    shown_columns = columns(rows)
    out = ["| " + " | ".join(shown_columns) + " |", "|---" * len(shown_columns) + "|"]
    for row in rows:
        shown = cells(row)
        out.append("| " + " | ".join(
            f"**{cell(shown[c][0])}**" if c == "verdict" else cell(shown[c][0])
            for c in shown_columns) + " |")
    return out


def render_index_md(suite: dict[str, Any], reports: list[ClaimReport], folder: Any,
                    forest: str | None = None) -> str:
    """index.md in `folder`: figures linked relative to it (they stay in the claim folders);
    `forest`: the library's forest plot's file in it (None: not drawn)."""
    rows = suite["claims"]
    lines = ["# Verdicts", "", f"{len(rows)} claim(s); generated {suite['generated']}. Each "
             "claim's full report (setup, per-seed results, provenance) is its folder's "
             "report.md.", "", *verdict_table(rows), ""]
    if forest:
        lines += [f"{cell(FOREST)}: {AXIS_WORDS}", "",
                  f"![the library's forest plot](<{forest}>)", ""]
    for report in reports:
        res = report.result
        figures = {name: relative_path(report.folder / file, folder)
                   for name, file in res.get("figures", {}).items()}
        lines += [*section_head(res), *figure_lines(figures, res.get("figure_captions")),
                  *section_tail(res)]
    return "\n".join(lines)
