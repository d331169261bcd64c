"""index.html in a real browser (headless Chromium, runners/browser_check.py) at 1280 × 800:
the column order, no row taller than two text lines, the first ten claims' names, verdicts and
forest strips on the first screen, and every figure in the printed PDF. Skipped where no
Chromium is installed (.ci/run installs it where it can); the same checks without a browser
are in test_report_suite.py (every cell nowrap, no line break in the table)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from suitedata import write_variant

from grokverify.report.index import write_suite
from grokverify.report.suite import read_report

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runners"))
import browser_check  # noqa: E402

EXE = browser_check.browser()
pytestmark = pytest.mark.skipif(EXE is None, reason="no Chromium on PATH")


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Twelve claims, one of them with a long title and a long reason (tooltips, not lines)."""
    reports = tmp_path_factory.mktemp("browser") / "reports"
    paths = [write_variant(reports, f"claim_{i:02d}", verdict=v,
                           claim__title="A long title " * (20 if i == 3 else 1),
                           reason="A long reason " * (40 if i == 4 else 1))
             for i, v in enumerate(["SUPPORTED", "REFUTED", "INCONCLUSIVE", "NOT TESTED"] * 3)]
    write_suite(reports, [read_report(p) for p in paths])
    return reports / "index.html"


def test_the_first_screen_shows_ten_claims_their_verdicts_and_strips(page: Path) -> None:
    assert EXE is not None
    m = browser_check.measure(EXE, page)
    assert m["columns"][:2] == ["claim", "verdict"]
    assert m["columns"][2].startswith("on its region")
    result = browser_check.checks(m, (1, 1))
    assert result["no row taller than two text lines"], [r["row"] for r in m["rows"]]
    assert result["first screen shows the first 10 claims' names, verdicts and strips"]
    assert len(m["rows"]) == 12 and m["rows"][0]["claim"] == "claim_00"


def test_the_page_prints_to_pdf_with_every_figure(page: Path) -> None:
    assert EXE is not None
    shown, printed = browser_check.pdf_images(EXE, page)
    assert shown > 1 and printed >= shown
