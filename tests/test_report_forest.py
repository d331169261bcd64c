"""The forest plots' shared axis (docs/verdicts.md, "The forest plot's axis"): known
placements, the position's agreement with the CI rule for every kind of region, and the
strip, figure and pages that draw it."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest
from suitedata import tiny_result, write_variant

from grokverify.report.figures import forest_png
from grokverify.report.forest import AXIS_LIMIT, Entry, entries, place, strip_svg
from grokverify.report.index import write_suite
from grokverify.report.suite import read_report, suite_row


def _result(region: str, estimate: float, ci: tuple[float, float],
            threshold: float | None = None) -> dict[str, object]:
    return {"claimed_region": region, "threshold": threshold, "estimate": estimate,
            "ci": list(ci)}


def test_known_placements() -> None:
    ratio = place(_result("ratio <= 0.8 (x at least 20% faster)", 0.4, (0.2, 0.8), 0.8))
    assert ratio is not None
    assert ratio.estimate == pytest.approx(-1.0) and ratio.lo == pytest.approx(-2.0)
    assert ratio.hi == pytest.approx(0.0)
    share = place(_result("share >= 0.5", 1.0, (0.7, 1.0), 0.5))  # unit |θ| = 0.5
    assert share is not None and (share.estimate, share.lo) == pytest.approx((-1.0, -1.0))
    assert share.hi == pytest.approx(-0.4)
    band = place(_result("median within [0.5, 2] (1.25 +/- 0.75)", 3.5, (1.0, 2.75)))
    assert band is not None and band.estimate == pytest.approx(2.0)
    assert (band.lo, band.hi) == pytest.approx((-1.0, 1.0))  # the CI spans the middle
    r = place(_result("r >= 0", 0.2, (-0.1, 0.4), 0.0))  # θ = 0: unit 1
    assert r is not None and (r.lo, r.estimate, r.hi) == pytest.approx((-0.4, -0.2, 0.1))


def test_an_end_beyond_the_axis_is_clipped_and_marked_open() -> None:
    p = place(_result("ratio <= 1 (x at least 0% faster)", 1.5, (1.3, math.inf), 1.0))
    assert p is not None and p.hi == AXIS_LIMIT and p.open_hi and not p.open_lo
    below = place(_result("ratio >= 1", 1.5, (0.0, 3.0), 1.0))  # ratio 0: infinitely far
    assert below is not None and below.hi == AXIS_LIMIT and below.open_hi


@pytest.mark.parametrize("result", [
    _result("none: an open question's estimate", 0.3, (0.2, 0.4)),
    _result("ratio <= 0.8", math.nan, (math.nan, math.nan), 0.8),
    {"claimed_region": "ratio <= 0.8", "threshold": 0.8, "estimate": None, "ci": [None, None]},
    _result("mean within [1, 1] (1 +/- 0)", 1.0, (0.9, 1.1)),
])
def test_nothing_is_placed_without_a_region_or_an_estimate(result: dict[str, object]) -> None:
    assert place(result) is None


@pytest.mark.parametrize("region,log", [("ratio <= 0.8", True), ("ratio >= 2", True),
                                        ("share <= 0.5", False), ("difference >= -0.2", False),
                                        ("r >= 0", False),
                                        ("geometric mean of x within [0.8, 1.25]", True),
                                        ("crossing x within [0.35, 0.45]", False)])
def test_left_of_zero_is_inside_and_right_of_zero_excludes_the_region(region: str,
                                                                       log: bool) -> None:
    """For random CIs: wholly at or left of 0 exactly when the CI lies in the region, wholly
    right of 0 exactly when it misses it (the criterion's SUPPORTED and REFUTED)."""
    rng = np.random.default_rng(7)
    m = re.search(r"(<=|>=) (-?[0-9.]+)", region)
    band = re.search(r"\[([0-9.]+), ([0-9.]+)\]", region)
    lo_r, hi_r = ((float(band[1]), float(band[2])) if band else
                  (-math.inf, float(m[2])) if m and m[1] == "<=" else (float(m[2]), math.inf))
    for _ in range(400):
        a, b = sorted(np.exp(rng.normal(0, 1, 2)) if log else rng.normal(0.4, 0.6, 2))
        p = place(_result(region, float((a + b) / 2), (float(a), float(b)),
                          None if band else float(m[2])))
        assert p is not None
        inside = lo_r <= a and b <= hi_r
        missed = b < lo_r or a > hi_r
        assert (p.hi <= 1e-12) == inside, (a, b, p)
        assert (p.lo > 1e-12) == missed, (a, b, p)


def _row(verdict: str = "SUPPORTED", role: str = "falsifier") -> dict[str, object]:
    res = tiny_result()
    res["claim"]["source"]["role"] = role
    res["interpretation"] = {"favours": {"supported": "critic", "refuted": "paper"}}
    return suite_row({**res, "verdict": verdict}, "t/result.json")


def test_a_family_row_gives_one_entry_per_member_with_its_side() -> None:
    row = _row("INCONCLUSIVE")
    row["members"] = [{"member": m, "verdict": v, "estimate": e, "ci": [e - 0.1, e + 0.1],
                       "claimed_region": "ratio <= 1", "threshold": 1.0}
                      for m, v, e in (("lr0.1", "SUPPORTED", 0.5), ("lr1", "REFUTED", 2.0))]
    got = entries(row)
    assert [e.label for e in got] == [f"{row['id']}: lr0.1", f"{row['id']}: lr1"]
    assert [e.favours for e in got] == ["critic", "paper"]
    assert all(e.critic for e in got)
    assert got[0].placement is not None and got[0].placement.hi < 0 < got[1].placement.lo


def test_the_strip_marks_verdict_polarity_and_scale_and_escapes_its_labels() -> None:
    p = place(_result("ratio <= 1", 0.5, (0.4, 0.6), 1.0))
    critic = Entry("a<b", "2505.15624", True, False, "quick", "SUPPORTED", p)
    paper = Entry("c", "2205.10343", False, True, "paper", "REFUTED", p)
    svg = strip_svg([critic, paper], {"2505.15624": "square", "2205.10343": "circle"})
    assert svg.count('stroke-dasharray="3 2"') == 1  # only the critic's CI is dashed
    assert '<rect x="' in svg and 'fill="#fff" stroke="#1A7F37"' in svg  # hollow square
    assert '<circle' in svg and 'fill="#C0392B" stroke="#C0392B"' in svg  # filled circle
    assert "a<b" not in svg and "a&lt;b" in svg
    assert "no estimate" in strip_svg([Entry("x", "1", False, True, "q", "FINDING", None)], {})


def test_the_figure_is_a_png_and_none_without_a_placed_entry() -> None:
    p = place(_result("share <= 0.5", 0.2, (0.1, 0.3), 0.5))
    assert forest_png([Entry("x", "1", False, True, "q", "SUPPORTED", p)],
                      "t")[:8] == b"\x89PNG\r\n\x1a\n"
    assert forest_png([Entry("x", "1", False, True, "q", "FINDING", None)], "t") is None


def test_the_suite_draws_the_library_forest_plot(tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    paths = [write_variant(reports, "a_one"), write_variant(reports, "b_two", verdict="REFUTED")]
    written = write_suite(reports, [read_report(p) for p in paths])
    assert reports / "forest.png" in written
    md = (reports / "index.md").read_text()
    assert "![the library's forest plot](<forest.png>)" in md
    html = (reports / "index.html").read_text()
    table = html[html.index('<table id="verdicts">'):html.index("</table>")]
    assert table.count("<svg") == 3  # the header's axis and one strip a row
    assert "data:image/png;base64," in html[html.index("</table>"):html.index("<section")]
