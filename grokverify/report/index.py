"""Write a suite's files beside its claim folders: results.json, index.md, index.html, the
library's forest plot (forest.png), and a referee report (md and html, its questions' forest
plots in a folder of its name) for each paper file given.

Kept apart from `report.suite` (the rows), which the renderers import, so none imports back.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from grokverify.atomic import write_atomic
from grokverify.claim.paper import PaperSpec
from grokverify.report.figures import forest_png
from grokverify.report.forest import entries, row_entries
from grokverify.report.html import data_uri, render_index_html, render_page
from grokverify.report.paper import paper_file_name, question_rows, render_paper_md
from grokverify.report.suite import SUITE_FILES, ClaimReport, build_suite, relative_path
from grokverify.report.suite_md import render_index_md

FOREST_FILE = "forest.png"


def _draw(path: Path, png: bytes | None) -> Path | None:
    """Write a figure (or remove a stale one where there is nothing to draw)."""
    if png is None:
        path.unlink(missing_ok=True)
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, png)
    return path


def write_suite(folder: Path, reports: Iterable[ClaimReport],
                formats: Iterable[str] = tuple(SUITE_FILES),
                papers: Iterable[PaperSpec] = (), beside: Path | None = None) -> list[Path]:
    """Write the suite's files (`formats`: json, md, html) into `folder`, and each paper's
    referee report in the md and html of them; `beside`: another scale's suite shown beside
    (`build_suite`); returns their paths."""
    reports = list(reports)
    suite = build_suite(reports, folder, beside)
    folder.mkdir(parents=True, exist_ok=True)
    rows = suite["claims"]
    formats = list(dict.fromkeys(formats))
    forest = _draw(folder / FOREST_FILE, forest_png(
        [e for row in rows for e in row_entries(row)],
        f"{len(rows)} claim(s): each estimate and CI on its claimed region")) \
        if {"md", "html"} & set(formats) else None
    render = {"json": lambda: json.dumps(suite, indent=2) + "\n",
              "md": lambda: render_index_md(suite, reports, folder,
                                            forest.name if forest else None),
              "html": lambda: render_index_html(suite, reports,
                                                data_uri(forest) if forest else None)}
    written = [forest] if forest else []
    for fmt in formats:
        path = folder / SUITE_FILES[fmt]
        write_atomic(path, render[fmt]())
        written.append(path)
    for paper in papers:
        written += _write_paper(folder, paper, reports, formats)
    return written


def _write_paper(folder: Path, paper: PaperSpec, reports: list[ClaimReport],
                 formats: list[str]) -> list[Path]:
    """One paper's referee report (md and html of `formats`) and its questions' forest plots."""
    if not {"md", "html"} & set(formats):
        return []
    name = paper_file_name(paper)
    plots, written = {}, []
    for question in paper.all_questions():
        drawn = _draw(folder / name / f"{question.id}.png", forest_png(
            [e for row in question_rows(question, reports) for e in entries(row)],
            f"{question.id}: its claims on their claimed regions"))
        if drawn:
            plots[question.id] = drawn
            written.append(drawn)
    pages = {"md": lambda: render_paper_md(
                 paper, reports, folder, {q: relative_path(p, folder) for q, p in plots.items()}),
             "html": lambda: render_page(f"Referee report: {paper.title}", render_paper_md(
                 paper, reports, folder, {q: data_uri(p) or "" for q, p in plots.items()}))}
    for fmt in (f for f in formats if f in pages):
        path = folder / f"{name}.{fmt}"
        write_atomic(path, pages[fmt]())
        written.append(path)
    return written
