"""A suite's files (results.json, index.md, index.html) built from stored result dicts; no
training beyond the tiny claim's one run (tests/suitedata.py)."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt
from suitedata import NASTY, page_of, rename_arm, tiny_result, write_variant

from grokverify.numbers import format_number
from grokverify.report.index import write_suite
from grokverify.report.suite import read_report


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    """Three claims: tiny as run, a SUPPORTED and a REFUTED copy of it."""
    reports = tmp_path / "reports"
    paths = [write_variant(reports, "a_tiny"),
             write_variant(reports, "b_supported", verdict="SUPPORTED"),
             write_variant(reports, "c_refuted", verdict="REFUTED",
                           claim__title="Refuted one")]
    write_suite(reports, [read_report(p) for p in paths])
    return reports


def test_results_json_has_one_row_per_claim(suite: Path) -> None:
    rows = json.loads((suite / "results.json").read_text())["claims"]
    res = tiny_result()
    assert [r["id"] for r in rows] == ["a_tiny", "b_supported", "c_refuted"]
    assert [r["verdict"] for r in rows] == ["INCONCLUSIVE", "SUPPORTED", "REFUTED"]
    row = rows[0]
    assert row["estimate"] == res["result"]["estimate"] and row["ci"] == res["result"]["ci"]
    assert row["p_support"] == res["result"]["p_support"]
    assert (row["arxiv"], row["role"], row["scale"], row["paper_setting"]) == (
        "2505.15624", "paper_claim", "quick", False)
    assert (row["seeds_per_arm"], row["seed_runs"], row["members"]) == (3, 6, None)
    assert row["result_json"] == "a_tiny/result.json"
    assert row["command"].endswith("tiny_claim.yaml --scale quick --seeds 3")
    assert rows[2]["title"] == "Refuted one"


def test_index_md_has_the_table_then_a_section_per_claim(suite: Path) -> None:
    md = (suite / "index.md").read_text()
    table = [ln for ln in md.splitlines() if ln.startswith("| ") and "arXiv:" in ln]
    assert [ln.split(" | ")[0] for ln in table] == ["| a_tiny", "| b_supported", "| c_refuted"]
    assert "**SUPPORTED**" in table[1] and "95% \\[−∞, ∞\\]" in table[0]  # 3 seeds: set aside
    assert md.index("## Refuted one") > md.index("## Tiny test claim")
    assert "NOT THE PAPER'S SETTING" in md and "### Reproduce" in md
    for link in re.findall(r"\]\(<([^>]+)>\)", md):  # figures linked relative to index.md
        assert (suite / link).is_file()


def test_index_html_is_self_contained(suite: Path) -> None:
    page = page_of(suite / "index.html")
    figures = sum(len(tiny_result()["figures"]) for _ in range(3))
    images = [attrs for tag, attrs in page.tags if tag == "img"]
    assert len(images) == figures + 1 == 10  # and the library's forest plot
    assert all((a["src"] or "").startswith("data:image/png;base64,") for a in images)
    for tag, attrs in page.tags:
        assert tag not in ("link", "iframe", "object", "embed", "base")
        for name, value in attrs.items():
            if name in ("src", "href", "action", "srcset", "poster", "data"):
                assert value and (value.startswith(("#", "data:image/"))), (tag, name, value)
                assert "http" not in value.split(",")[0] and "//" not in value.split(",")[0]
        assert not (tag == "script" and "src" in attrs)
    style, script = "".join(page.inline["style"]), "".join(page.inline["script"])
    assert "url(" not in style and "@import" not in style and "//" not in style
    assert "http" not in script and "//" not in script and "fetch" not in script
    assert "@media print" in style
    csp = [a["content"] for t, a in page.tags if a.get("http-equiv") ==
           "Content-Security-Policy"]
    assert csp and "default-src 'none'" in csp[0]


def test_verdict_table_rows_carry_the_filters(suite: Path) -> None:
    page = page_of(suite / "index.html")
    rows = [a for t, a in page.tags if t == "tr" and "data-verdict" in a]
    assert [a["data-verdict"] for a in rows] == ["INCONCLUSIVE", "SUPPORTED", "REFUTED"]
    assert {a["data-paper"] for a in rows} == {"2505.15624"}
    selects = {a["id"] for t, a in page.tags if t == "select"}
    assert selects == {"f-paper", "f-verdict"}
    sections = [a["id"] for t, a in page.tags if t == "section"]
    links = [a["href"] for t, a in page.tags if t == "a" and a.get("href", "").startswith("#")]
    assert sections == ["claim-a_tiny", "claim-b_supported", "claim-c_refuted"]
    assert links == [f"#{s}" for s in sections]


def test_claim_strings_are_escaped(tmp_path: Path) -> None:
    """An id, title, arm, statement and quote holding markup show as written in both files
    and add no tag, attribute or script."""
    reports = tmp_path / "reports"
    res = rename_arm(tiny_result(), "c10", f"c10{NASTY}")
    res["claim"].update(id=f"x{NASTY}", title=f"T{NASTY}", statement=f"S{NASTY}")
    res["claim"]["source"] = {**res["claim"]["source"], "quote": f"Q{NASTY}",
                              "arxiv": f"2505{NASTY}"}
    folder = reports / "nasty"
    path = write_variant(reports, "nasty")
    path.write_text(json.dumps(res))
    write_suite(reports, [read_report(path)])
    html = (reports / "index.html").read_text()
    assert html.count("<script") == 1 and "alert(1)</script>" not in html
    page = page_of(reports / "index.html")
    assert [t for t, _ in page.tags].count("script") == 1
    text = "".join(page.text)
    for shown in (f"x{NASTY}", f"T{NASTY}", f"S{NASTY}", f"Q{NASTY}", f"c10{NASTY}"):
        assert shown in text, shown
    row = next(a for t, a in page.tags if t == "tr" and "data-verdict" in a)
    assert row["data-paper"] == f"2505{NASTY}"
    assert next(a["id"] for t, a in page.tags if t == "section") == f"claim-x{NASTY}"
    # index.md rendered by a viewer that lets raw HTML through: still no tag of the claim's
    md = MarkdownIt("commonmark", {"html": True}).enable("table").render(
        (reports / "index.md").read_text())
    assert "<script" not in md and "&lt;script&gt;" in md
    assert (folder / "result.json").is_file()


def test_comparisons_and_ampersands_read_as_written_in_markdown() -> None:
    """report.md is read as plain text too: "<=" and "a & b" stay; what would open a tag, an
    autolink or an entity still becomes one, and a viewer shows each as written."""
    from grokverify.report.escape import block, cell, text

    plain = "p(support) <= 0.025, accuracy >= 0.95 & c < 1"
    assert text(plain) == cell(plain) == plain
    assert text("<b>x</b> <https://a.b> &amp; &#38;") == \
        "&lt;b>x&lt;/b> &lt;https://a.b> &amp;amp; &amp;#38;"
    assert block("> quoted") == ["\\> quoted"]
    source = "\n\n".join([text(plain), text("<b>x</b> &amp;"), *block("> quoted")])
    html = MarkdownIt("commonmark", {"html": True}).render(source)
    assert "<b>" not in html and "<blockquote>" not in html
    assert "&lt;b&gt;x&lt;/b&gt; &amp;amp;" in html and "&lt;= 0.025" in html


def test_each_row_is_one_line_with_the_verdict_after_the_claim_and_its_side() -> None:
    """The verdict is the second column, then its forest strip and the side it favours by the
    claim's interpretation; a family's members are counted in the row and listed in its
    details."""
    from grokverify.report.cells import COLUMNS, cells, details
    from grokverify.report.suite import suite_row

    assert COLUMNS[:4] == ("claim", "verdict", "on its region", "favours")
    res = tiny_result()
    res["interpretation"] = {"supported": "x", "favours": {"supported": "critic",
                                                           "refuted": "paper"}}
    for verdict, side in (("SUPPORTED", "its critic"), ("REFUTED", "the paper"),
                          ("INCONCLUSIVE", "—"), ("NOT TESTED", "—")):
        row = suite_row({**res, "verdict": verdict}, "t/result.json")
        assert cells(row)["favours"][0] == side
    del res["interpretation"]
    assert cells(suite_row(res, "t/result.json"))["favours"][0] == "—"
    members = [{"member": m, "verdict": v, "estimate": 0.5, "ci": [0.4, 0.6], "ci_level": 0.95}
               for m, v in (("lr0.1", "SUPPORTED"), ("lr0.3", "INCONCLUSIVE"),
                            ("lr1", "INCONCLUSIVE"))]
    row = {**suite_row(res, "t/result.json"), "members": members, "verdict": "INCONCLUSIVE"}
    assert cells(row)["effect"][0] == "3 members: 1 SUPPORTED, 2 INCONCLUSIVE"
    assert details(row)["effect"] == "lr0.1: SUPPORTED; lr0.3: INCONCLUSIVE; lr1: INCONCLUSIVE"
    assert details(row)["claim"] == res["claim"]["title"]


def test_the_verdict_table_keeps_each_row_on_one_line(suite: Path) -> None:
    """The stated check for "no row taller than two text lines": every cell of the verdict
    table is nowrap and holds no line break, so a row is one line at any width (the table
    scrolls sideways); the claim and its verdict are the first two columns."""
    html = (suite / "index.html").read_text()
    table = html[html.index('<table id="verdicts">'):html.index("</table>")]
    assert "#verdicts td,#verdicts th{white-space:nowrap}" in html
    assert "<br" not in table and "\n" not in table
    head = re.findall(r'<th scope="col"[^>]*>([^<]*)<', table)
    assert head[:4] == ["claim", "verdict", "on its region", "favours"]


def test_a_missing_figure_is_said_not_linked(tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    path = write_variant(reports, "gone")
    (path.parent / "curves.png").unlink()
    write_suite(reports, [read_report(path)], formats=["html"])
    html = (reports / "index.html").read_text()
    assert "figure missing: accuracy curves" in html
    assert not (reports / "index.md").exists() and not (reports / "results.json").exists()


def test_each_section_has_the_referee_structure(suite: Path) -> None:
    """index.md and index.html: every claim's section has Setup, Result, Reasoning, Caveats
    and Reproduce in that order, and the figures' own captions."""
    md = (suite / "index.md").read_text()
    sections = md.split("\n## ")[1:]
    assert len(sections) == 3
    for section in sections:
        heads = [ln[4:] for ln in section.splitlines() if ln.startswith("### ")]
        assert [h for h in heads if h in ("Setup", "Result", "Reasoning", "Caveats",
                                          "Reproduce")] == ["Setup", "Result", "Reasoning",
                                                            "Caveats", "Reproduce"]
    assert "one-sided α = 0.025" in md and "Censoring: 2 of 6 seed run(s)" in md
    page = page_of(suite / "index.html")
    captions = tiny_result()["figure_captions"]
    alts = [a["alt"] for t, a in page.tags if t == "img"]
    assert alts[0] == "the library's forest plot"
    assert alts[1:4] == list(captions.values())
    text = "".join(page.text)
    assert "Reasoning" in text and "grokverify plan" in text


def test_wall_column_shows_the_records_training_time_in_a_run_and_a_rebuild(
        tmp_path: Path) -> None:
    """A rebuilt report's own wall time is the rebuild's; the records' training time (each
    chunk's wall once) is the claim's cost, the same whichever run trained them."""
    from rich.console import Console
    from suitedata import TINY, tiny_options, tiny_run

    from grokverify.claim.load import load_claim
    from grokverify.report.cells import cells, details
    from grokverify.report.suite import suite_row
    from grokverify.run.pipeline import run_claims

    stored = [json.loads(p.read_text()) for p in (tiny_run() / "store").rglob("*.json")
              if p.parent.parent.name == "records"]
    chunks = {(r["key_inputs"]["experiment"], r["host"], r["created"],
               tuple(r["chunk_seeds"])): r["chunk_wall_s"] for r in stored}
    assert len(chunks) < len(stored)  # chunks of several seeds: each counted once
    want = round(sum(chunks.values()), 2)
    ran = tiny_result()["provenance"]
    assert ran["records_train_s"] == want and ran["seeds_trained_now"] == 6
    by_chunk: dict[tuple[object, ...], list[dict[str, Any]]] = {}
    for r in stored:
        by_chunk.setdefault((r["key_inputs"]["experiment"], r["created"],
                             tuple(r["chunk_seeds"])), []).append(r)
    steps = sum(max(r["result"]["summary"]["stopped_step"] for r in rs) * len(rs)
                for rs in by_chunk.values())
    assert ran["records_model_steps"] == steps > 0  # a chunk runs every seed to its last stop
    rate = format_number(steps / want)
    assert f"{steps:,} model-steps: {rate} model-steps/s" in (
        tiny_run() / "reports" / "tiny" / "report.md").read_text()

    opts = replace(tiny_options(tiny_run()), reports=tmp_path)
    run_claims([load_claim(TINY)], opts, Console(quiet=True), train=False)
    rebuilt = json.loads((tmp_path / "tiny" / "result.json").read_text())
    assert rebuilt["provenance"]["records_train_s"] == want
    assert rebuilt["provenance"]["seeds_trained_now"] == 0
    row = suite_row(rebuilt, "tiny/result.json")
    text, key = cells(row)["training"]
    assert text == f"{want / 60:.1f} min" and key == want
    assert f"its records: {want / 60:.1f} min of training" in details(row)["training"]
