"""The referee's sections of report.md (report.referee): Setup, Reasoning, Caveats and Reproduce
in order, with their counts, levels and commands, and claim text inert in them."""

from __future__ import annotations

import copy

import pytest
from markdown_it import MarkdownIt
from suitedata import NASTY, rename_arm, tiny_result
from test_report_figures import tiny_family

from grokverify.report.markdown import render_markdown
from grokverify.report.referee import reasoning_lines


def _section(md: str, head: str) -> str:
    return md.split(f"## {head}\n", 1)[1].split("\n## ", 1)[0]


def test_referee_sections_in_order() -> None:
    md = render_markdown(tiny_result())
    heads = [ln[3:] for ln in md.splitlines() if ln.startswith("## ")]
    assert heads[:6] == ["Claim", "Setup", "Result", "Paired analysis", "Reasoning", "Caveats"]
    assert heads.index("Reproduce") < heads.index("Provenance")
    setup = _section(md, "Setup")
    assert "Arms (2): `c1`, `c10`" in setup and "3 seed(s) per arm (seeds 0–2)" in setup
    assert "300 training steps per seed, evaluated every 10 steps" in setup
    assert "**not the paper's setting**" in setup


def test_reasoning_names_the_rule_and_its_level() -> None:
    reasoning = _section(render_markdown(tiny_result()), "Reasoning")
    assert "`survival_compare` decided" in reasoning and "95% CI" in reasoning
    assert "one-sided α = 0.025" in reasoning
    # 3 seeds an arm: the median bootstrap's CI is set aside, and the reasoning says why
    assert "interval method does not hold" in reasoning and "3 seeds in an arm" in reasoning
    fam = "\n".join(reasoning_lines(tiny_family(tiny_result())))
    assert "Not every member has the effect." in fam and "`holm`" in fam


def test_caveats_count_censored_and_diverged_seeds_and_plan_for_inconclusive() -> None:
    res = tiny_result()
    caveats = _section(render_markdown(res), "Caveats")
    assert "Censoring: 2 of 6 seed run(s)" in caveats and "c1 2 of 3." in caveats
    assert "Divergence: 0 seed run(s)" in caveats
    assert "`grokverify plan " in caveats and "tiny_claim.yaml --scale quick --store" in caveats
    res = copy.deepcopy(res)
    res["verdict"] = res["result"]["verdict"] = "SUPPORTED"
    res["arms"]["c10"]["diverged"] = 2
    caveats = _section(render_markdown(res), "Caveats")
    assert "grokverify plan" not in caveats and "Power: not at issue" in caveats
    assert "Divergence: 2 seed run(s) diverged (non-finite loss): c10 2" in caveats
    res["verdict"] = res["result"]["verdict"] = "NOT TESTED"
    caveats = _section(render_markdown(res), "Caveats")
    assert "the CI settled" not in caveats and "did not test the claim" in caveats


def test_reproduce_has_the_run_report_and_plan_commands() -> None:
    res = tiny_result()
    reproduce = _section(render_markdown(res), "Reproduce")
    store = res["provenance"]["store"]
    assert "tiny_claim.yaml --scale quick --seeds 3`" in reproduce
    assert "`grokverify run " in reproduce and f"--seeds 3 --store {store}`" in reproduce
    assert "`grokverify report " in reproduce and "`grokverify plan " in reproduce


@pytest.mark.parametrize("section", ["Setup", "Reasoning", "Caveats", "Reproduce"])
def test_claim_strings_in_the_referee_sections_are_inert(section: str) -> None:
    res = rename_arm(tiny_result(), "c1", f"c1{NASTY}")
    res["reason"] = f"R{NASTY}"
    res["claim"]["file"] = f"claims/x{NASTY}.yaml"
    md = render_markdown(res)
    html = MarkdownIt("commonmark", {"html": True}).enable("table").render(
        f"## {section}\n" + _section(md, section))
    assert "<script" not in html
    if section in ("Reasoning", "Caveats", "Setup"):
        assert "&lt;script&gt;" in html


@pytest.mark.parametrize(("verdict", "ci", "region", "words"), [
    ("REFUTED", [0.86, 1.2], "ratio <= 0.8 (t at least 20% faster)",
     "exclude a speed-up larger than 14%"),
    ("SUPPORTED", [0.5, 0.75], "ratio <= 0.8 (t at least 20% faster)",
     "exclude a speed-up smaller than 25%"),
    ("REFUTED", [1.1, 1.3], "ratio <= 0.8 (t at least 20% faster)",
     "exclude any speed-up (the ratio is at least 1.1)"),
    ("SUPPORTED", [2.5, 3.0], "ratio >= 2 (t at least 100% slower)",
     "exclude a slow-down smaller than 150%"),
    ("REFUTED", [0.6, 0.9], "share <= 0.5", "the effect lies in [0.6, 0.9]"),
])
def test_a_decided_ci_is_said_in_the_claimed_regions_terms(verdict: str, ci: list[float],
                                                           region: str, words: str) -> None:
    from grokverify.report.referee import region_terms

    result = {"verdict": verdict, "ci": ci, "claimed_region": region,
              "criterion": "survival_compare" if region.startswith("ratio") else "proportion"}
    assert words in region_terms(result)
    assert region_terms({**result, "verdict": "INCONCLUSIVE"}) is None
