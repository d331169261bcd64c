"""Per-claim figures (report.figures): which apply to a claim, and the files drawn; from the tiny
claim's stored result and hand-made results, no training beyond tiny's one run."""

from __future__ import annotations

import copy
import io
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
from PIL import Image
from suitedata import tiny_result, tiny_run

from grokverify.report.figures import FIGURES, FigureData, draw_figures
from grokverify.report.forest import claimed_interval
from grokverify.report.markdown import render_markdown
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


def tiny_family(res: dict[str, Any]) -> dict[str, Any]:
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
    assert "forest" in _drawn(FigureData(tiny_family(tiny_result())))


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
