"""Write a suite's files beside its claim folders: results.json, index.md, index.html.

Kept apart from `report.suite` (the rows), which the renderers import, so none imports back.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from grokverify.atomic import write_atomic
from grokverify.report.html import render_index_html
from grokverify.report.suite import SUITE_FILES, ClaimReport, build_suite
from grokverify.report.suite_md import render_index_md


def write_suite(folder: Path, reports: Iterable[ClaimReport],
                formats: Iterable[str] = tuple(SUITE_FILES)) -> list[Path]:
    """Write the suite's files (`formats`: json, md, html) into `folder`; returns their paths."""
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
    return written
