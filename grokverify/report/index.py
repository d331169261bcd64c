"""Write a suite's files beside its claim folders: results.json, index.md, index.html, and a
referee report (md and html) for each paper file given.

Kept apart from `report.suite` (the rows), which the renderers import, so none imports back.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from grokverify.atomic import write_atomic
from grokverify.claim.paper import PaperSpec
from grokverify.report.html import render_index_html, render_page
from grokverify.report.paper import paper_file_name, render_paper_md
from grokverify.report.suite import SUITE_FILES, ClaimReport, build_suite
from grokverify.report.suite_md import render_index_md


def write_suite(folder: Path, reports: Iterable[ClaimReport],
                formats: Iterable[str] = tuple(SUITE_FILES),
                papers: Iterable[PaperSpec] = ()) -> list[Path]:
    """Write the suite's files (`formats`: json, md, html) into `folder`, and each paper's
    referee report in the md and html of them; returns their paths."""
    reports = list(reports)
    suite = build_suite(reports, folder)
    render = {"json": lambda: json.dumps(suite, indent=2) + "\n",
              "md": lambda: render_index_md(suite, reports, folder),
              "html": lambda: render_index_html(suite, reports)}
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for fmt in dict.fromkeys(formats):
        path = folder / SUITE_FILES[fmt]
        write_atomic(path, render[fmt]())
        written.append(path)
    for paper in papers:
        md = render_paper_md(paper, reports, folder)
        pages = {"md": md, "html": render_page(f"Referee report: {paper.title}", md)}
        for fmt in (f for f in dict.fromkeys(formats) if f in pages):
            path = folder / f"{paper_file_name(paper)}.{fmt}"
            write_atomic(path, pages[fmt])
            written.append(path)
    return written
