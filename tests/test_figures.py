"""Per-claim figures (report.figures) and the referee sections (report.referee), built from the
tiny claim's stored result and hand-made results: no training beyond tiny's one run."""

from __future__ import annotations

import copy
import io
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import pytest
from markdown_it import MarkdownIt
from PIL import Image
from suitedata import NASTY, rename_arm, tiny_result, tiny_run

from grokverify.report.figures import FIGURES, FigureData, claimed_interval, draw_figures
from grokverify.report.markdown import render_markdown
from grokverify.report.referee import reasoning_lines
from grokverify.store import Store


def _drawn(data: FigureData) -> set[str]:
    """The registered figures that apply to `data` (each function decides)."""
    out = set()
    for name, spec in FIGURES.items():
        fig = spec.draw(data)
        if fig is not None:
            out.add(name)
            plt.close(fig)
    return out


def _tiny_records() -> dict[str, list[dict[str, Any] | None]]:
    res, store = tiny_result(), Store(tiny_run() / "store")
    return {label: [store.get(k) for k in arm["store_keys"]] for label, arm in res["arms"].items()}


def _row(arm: str, seed: int, value: float, member: str = "") -> dict[str, Any]:
    return {"member": member, "arm": arm, "seed": seed, "metric": value, "metric_observed": True,
            "left_out": None, "diverged": False}


def _member(name: str, estimate: float, ci: list[float], verdict: str) -> dict[str, Any]:
    result = {**tiny_result()["result"], "estimate": estimate, "ci": ci, "verdict": verdict}
    p = 0.01 if verdict == "SUPPORTED" else 0.5
    return {"member": name, "verdict": verdict, "result": result, "p_support": p,
            "p_refute": 1 - p, "p_support_adj": p, "p_refute_adj": 1 - p}


def _family(res: dict[str, Any]) -> dict[str, Any]:
    """tiny's result as a family of three members (one refuted, one without an estimate)."""
    res = copy.deepcopy(res)
    res["family"] = {"members": [_member("vs_a", 0.6, [0.5, 0.75], "SUPPORTED"),
                                 _member("vs_b", 1.3, [1.1, "inf"], "REFUTED"),
                                 _member("vs_c", 0.9, [0.7, 1.2], "INCONCLUSIVE")],
                     "correction": "holm", "claims": "all", "alpha_one_sided": 0.025,
                     "verdict": "REFUTED", "reason": "Not every member has the effect."}
    res["result"] = None
    return res


def _crossing(members: tuple[str, ...] = ("",)) -> dict[str, Any]:
    """A crossing claim over four training fractions (a 0/1 metric, 10 seeds an arm), one
    crossing per member; with several members, a power trend of their crossings."""
    fractions = (0.2, 0.3, 0.4, 0.5)
    res: dict[str, Any] = {
        "metric": {"kind": "value", "label": "curve_at(curve=parallelogram_nullity.is2, step=0)"},
        "criterion": {"name": "crossing", "level": 0.5, "x": None},
        "arms": {}, "per_seed": [], "family": None, "result": None}
    results = {}
    for k, member in enumerate(members):
        arms = []
        for i, f in enumerate(fractions):
            name = f"f{f}"
            res["arms"][f"{member}/{name}" if member else name] = {"diverged": 0}
            ones = min(10, max(0, 3 * i + 2 * k))
            res["per_seed"] += [_row(name, s, float(s < ones), member) for s in range(10)]
            arms.append({"name": name, "columns": {"x": f, "seeds": 10, "mean": ones / 10}})
        results[member] = {"arms": arms, "estimate": 0.38 - 0.05 * k, "ci": [0.35 - 0.05 * k,
                           0.41 - 0.05 * k], "ci_level": 0.95, "threshold": 0.35,
                           "claimed_region": "crossing x within [0.35, 0.45]", "details": {},
                           "effect_label": "x at which the arm mean rises through 0.5"}
    if members == ("",):
        res["result"] = results[""]
    else:
        res["family"] = {"members": [{"member": m, "verdict": "FINDING", "result": r}
                                     for m, r in results.items()],
                         "trend": {"fit": "power", "ci_level": 0.95, "fitted": True,
                                   "x": {m: 10.0 * (i + 1) for i, m in enumerate(members)},
                                   "prefactor": 0.4, "slope": -0.5}}
    return res


def _phase_map() -> dict[str, Any]:
    cells = [{"x": x, "y": y, "seeds": 4, "most_common": top,
              "counts": {"comprehension": 3 if top == "comprehension" else 0, "grokking": 0,
                         "memorization": 3 if top == "memorization" else 0, "confusion": 1}}
             for x, y, top in ((0.1, 0, "comprehension"), (1.0, 0, "memorization"),
                               (0.1, 1, None), (1.0, 1, "memorization"))]
    res = copy.deepcopy(tiny_result())
    res["result"]["details"] = {"phase_map": {"x_label": "lr", "y_label": "wd", "cells": cells}}
    return res


def test_tiny_has_the_curves_survival_and_pairs_only() -> None:
    assert _drawn(FigureData(tiny_result(), _tiny_records())) == {"curves", "survival",
                                                                  "seed pairs"}


def test_without_records_no_figure_of_training_curves() -> None:
    assert _drawn(FigureData(tiny_result())) == {"survival", "seed pairs"}


def test_unpaired_analysis_has_no_pairs_figure() -> None:
    res = copy.deepcopy(tiny_result())
    res["result"]["details"]["paired"] = False
    assert "seed pairs" not in _drawn(FigureData(res))


def test_family_gets_a_forest_plot() -> None:
    assert "forest" in _drawn(FigureData(_family(tiny_result())))


def test_phase_map_is_drawn_from_the_result() -> None:
    assert "phase map" in _drawn(FigureData(_phase_map()))


def test_crossing_and_trend() -> None:
    assert _drawn(FigureData(_crossing())) == {"values", "crossing"}
    assert _drawn(FigureData(_crossing(("p10", "p20", "p30")))) == {"values", "crossing",
                                                                    "forest", "trend"}


def test_probe_traces_only_when_records_hold_probe_curves() -> None:
    records = copy.deepcopy(_tiny_records())
    assert "probes" not in _drawn(FigureData(tiny_result(), records))
    for recs in records.values():
        for r in recs:
            assert r is not None
            steps = [0, 10, 20, 40]
            r["result"]["curves"]["sigma_max.E"] = {"steps": steps, "values": [1, 2, None, 4]}
            r["result"]["curves"]["pca.eff_dim"] = {"steps": [0], "values": [3.0]}  # one step
    assert "probes" in _drawn(FigureData(tiny_result(), records))


def test_claimed_interval_reads_the_region() -> None:
    assert claimed_interval({"claimed_region": "ratio <= 0.8 (x at least 20% faster)",
                             "threshold": 0.8}) == (float("-inf"), 0.8)
    assert claimed_interval({"claimed_region": "share >= 0.5", "threshold": 0.5}) == (
        0.5, float("inf"))
    assert claimed_interval({"claimed_region": "median within [0.5, 2] (1.25 +/- 0.75)"}) == (
        0.5, 2.0)
    assert claimed_interval({"claimed_region": "none: an open question's estimate"}) is None


def test_figures_are_valid_pngs_of_sane_size(tmp_path: Path) -> None:
    data = FigureData(_crossing(("p10", "p20", "p30")))
    (tmp_path / "survival.png").write_bytes(b"stale")  # a figure that no longer applies
    files, captions = draw_figures(data, tmp_path)
    assert set(files) == set(captions) == {"values", "crossing", "forest", "trend"}
    assert not (tmp_path / "survival.png").exists()
    for file in files.values():
        raw = (tmp_path / file).read_bytes()
        assert raw.startswith(b"\x89PNG\r\n\x1a\n") and len(raw) < 400_000, file
        width, height = Image.open(io.BytesIO(raw)).size
        assert 300 <= width <= 2000 and 200 <= height <= 2000, (file, width, height)


def test_written_result_names_files_and_captions() -> None:
    res = tiny_result()
    assert set(res["figure_captions"]) == set(res["figures"])
    folder = tiny_run() / "reports" / "tiny"
    assert all((folder / f).is_file() for f in res["figures"].values())
    md = render_markdown(res)
    assert "log step axis" in md and "*Figure: Kaplan–Meier curves" in md


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
    assert "one-sided α = 0.025" in reasoning and "p(support)" in reasoning
    fam = "\n".join(reasoning_lines(_family(tiny_result())))
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


def test_reproduce_has_the_run_report_and_plan_commands() -> None:
    res = tiny_result()
    reproduce = _section(render_markdown(res), "Reproduce")
    store = res["provenance"]["store"]
    assert "tiny_claim.yaml --scale quick --seeds 3`" in reproduce
    assert "`grokverify run " in reproduce and f"--seeds 3 --store {store}`" in reproduce
    assert "`grokverify report " in reproduce and "`grokverify plan " in reproduce


@pytest.mark.parametrize("section", ["Setup", "Reasoning", "Caveats", "Reproduce"])
def test_claim_strings_in_the_new_sections_are_inert(section: str) -> None:
    res = rename_arm(tiny_result(), "c1", f"c1{NASTY}")
    res["reason"] = f"R{NASTY}"
    res["claim"]["file"] = f"claims/x{NASTY}.yaml"
    md = render_markdown(res)
    html = MarkdownIt("commonmark", {"html": True}).enable("table").render(
        f"## {section}\n" + _section(md, section))
    assert "<script" not in html
    if section in ("Reasoning", "Caveats", "Setup"):
        assert "&lt;script&gt;" in html
