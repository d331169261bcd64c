"""phase_order (grokverify/stats/phase_order.py): γ against a brute-force count over pairs of
seed copies, ordered and disordered phase maps, the bootstrap over seed ids shared by every cell,
its BCa interval, the report's map, and the claim-file checks tying the phase metric to it."""

from __future__ import annotations

import itertools
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import Has, problems, run_criterion

from grokverify.claim.criteria import PhaseOrderParams
from grokverify.claim.load import load_claim
from grokverify.stats.base import ArmSample, CriterionResult, Verdict
from grokverify.stats.phase_order import _codes, gammas
from grokverify.stats.simulate import make_arm

C, G, M, X = 0.0, 1.0, 2.0, 3.0  # comprehension, grokking, memorization, confusion


def cell(name: str, codes: list[float], seeds: tuple[int, ...] | None = None) -> ArmSample:
    return make_arm(name, codes, kind="value", seeds=seeds)


def run(cells: dict[str, tuple[float, float]], arms: list[ArmSample],
        **kw: Any) -> CriterionResult:
    return run_criterion({"name": "phase_order", "cells": cells, "n_boot": 999, **kw}, *arms)


def brute_gamma(codes: np.ndarray, xs: np.ndarray, ys: np.ndarray, w: np.ndarray) -> float:
    """Every pair of seed copies in two cells of the same y, counted one by one."""
    conc = disc = 0.0
    for a, b in itertools.permutations(range(len(xs)), 2):
        if ys[a] != ys[b] or not xs[a] < xs[b]:
            continue
        for i, j in itertools.product(range(codes.shape[1]), repeat=2):
            ri, rj = codes[a, i], codes[b, j]
            if ri > 2 or rj > 2 or math.isnan(ri) or math.isnan(rj):
                continue
            conc += w[i] * w[j] * (ri < rj)
            disc += w[i] * w[j] * (ri > rj)
    return (conc - disc) / (conc + disc) if conc + disc else math.nan


def test_gamma_counts_every_weighted_pair_of_copies_within_a_y() -> None:
    rng = np.random.default_rng(3)
    for _ in range(20):
        codes = rng.integers(0, 4, size=(6, 5)).astype(float)
        codes[rng.random(codes.shape) < 0.15] = np.nan  # seeds without a phase in a cell
        xs = np.concatenate([rng.permutation([0.1, 0.2, 0.3]) for _ in range(2)])  # cells
        ys = np.array([0, 0, 0, 1, 1, 1.0])
        weights = rng.multinomial(5, np.full(5, 0.2), size=4).astype(float)
        got = gammas(codes, xs, ys, weights)
        want = [brute_gamma(codes, xs, ys, w) for w in weights]
        np.testing.assert_allclose(got, want, rtol=1e-12)


# a 3 x 2 map: x rises to the right, two y rows; 4 seeds per cell
CELLS = {f"x{i}y{j}": (float(10 ** -(4 - i)), float(j)) for j in range(2) for i in range(3)}


def test_an_ordered_map_with_all_three_phases_is_supported() -> None:
    rows = [[C, C, C, G] * 3, [G, G, G, C] * 3, [M, M, M, M] * 3]  # 12 seeds a cell
    arms = [cell(f"x{i}y{j}", rows[i]) for j in range(2) for i in range(3)]
    result = run(CELLS, arms)
    codes, _ = _codes(arms)
    xs = np.array([CELLS[a.name][0] for a in arms])
    ys = np.array([CELLS[a.name][1] for a in arms])
    assert result.estimate == pytest.approx(brute_gamma(codes, xs, ys, np.ones(12)))
    assert result.estimate > 0.8
    assert result.verdict is Verdict.SUPPORTED, result.reason
    assert result.details["cells_most_common"] == {
        "comprehension": 2, "grokking": 2, "memorization": 2, "confusion": 0}
    first = result.details["phase_map"]["cells"][0]
    assert first["counts"] == {"comprehension": 9, "grokking": 3, "memorization": 0,
                               "confusion": 0}
    assert first["most_common"] == "comprehension"


def test_four_seed_ids_give_an_interval_too_wide_to_support() -> None:
    """4 ids allow 35 distinct resamples: below 10 ids the bootstrap interval does not hold
    (docs/verdicts.md, "Intervals that do not hold"), so the same ordered map cannot be
    SUPPORTED; a resample without an ordered pair counts as -1 below and +1 above."""
    rows = [[C, C, C, G], [G, G, G, C], [M, M, M, M]]
    arms = [cell(f"x{i}y{j}", rows[i]) for j in range(2) for i in range(3)]
    result = run(CELLS, arms)
    assert result.estimate > 0.8
    assert result.details["bootstrap_level"] > 0.999
    assert result.verdict is Verdict.INCONCLUSIVE and "fewer than 10" in result.reason
    assert result.ci == (-math.inf, math.inf)
    assert "verdict_if_interval_held" in result.details
    low, high = result.details["ci_computed"]
    assert -1.0 <= low < 0.5 and high <= 1.0
    sparse = [cell("a", [C, X, X, X]), cell("b", [G, X, X, X]), cell("c", [M, X, X, X])]
    result = run({"a": (1.0, 0.0), "b": (2.0, 0.0), "c": (3.0, 0.0)}, sparse)
    assert result.details["resamples_without_an_ordered_pair"] > 0  # seed 0 not drawn
    assert result.estimate == 1.0 and result.details["ci_computed"] == [-1.0, 1.0]


def test_a_reversed_order_is_refuted_and_a_missing_band_is_refuted_by_name() -> None:
    rows = [[M, M, M, M] * 3, [G, G, G, G] * 3, [C, C, C, C] * 3]
    arms = [cell(f"x{i}y{j}", rows[i]) for j in range(2) for i in range(3)]
    result = run(CELLS, arms)
    assert result.estimate == -1.0
    assert result.verdict is Verdict.REFUTED and "below" in result.reason
    no_grokking = [[C, C, C, C] * 5, [C, C, M, M] * 5, [M, M, M, X] * 5]  # 20 seeds a cell
    arms = [cell(f"x{i}y{j}", no_grokking[i]) for j in range(2) for i in range(3)]
    result = run(CELLS, arms)
    assert result.estimate == 1.0  # ordered, but nothing lies between
    assert result.verdict is Verdict.REFUTED
    assert "grokking is the most common phase of 0 cell(s)" in result.reason
    assert result.details["cells_each_missing_phase_may_lead"] == {"grokking": 0}


def test_a_missing_phase_refutes_only_when_the_seeds_exclude_it_from_every_cell() -> None:
    """0 of 4 seeds grokking in every cell does not exclude a cell led by grokking (exact upper
    bound 0.87 at 0.025 / 6 cells); 0 of 20 does (0.24 < 1/4); the verdict says how many
    seeds a cell would need (ln(0.025 / 6) / ln(3/4) = 19.05: 20)."""
    no_grokking = [[C, C, C, C] * 3, [C, C, M, M] * 3, [M, M, M, X] * 3]  # 12 seeds a cell
    arms = [cell(f"x{i}y{j}", no_grokking[i]) for j in range(2) for i in range(3)]
    result = run(CELLS, arms)
    assert result.verdict is Verdict.INCONCLUSIVE
    assert "cannot exclude that it leads 6" in result.reason
    assert "at least 20 seeds" in result.reason


def test_confusion_is_left_out_and_ties_name_no_phase() -> None:
    rows = [[C, C, X, X] * 3, [C, C, G, G] * 3, [M, M, M, M] * 3]
    arms = [cell(f"x{i}y{j}", rows[i]) for j in range(2) for i in range(3)]
    result = run(CELLS, arms)
    cells = result.details["phase_map"]["cells"]
    assert cells[0]["most_common"] is None and cells[1]["most_common"] is None
    # comprehension and grokking lead no cell, but 12 seeds a cell exclude neither anywhere
    assert result.verdict is Verdict.INCONCLUSIVE
    assert result.details["cells_each_missing_phase_may_lead"] == {"comprehension": 6,
                                                                   "grokking": 6}
    assert result.estimate == 1.0


def test_the_bootstrap_draws_seed_ids_shared_by_every_cell() -> None:
    """Seed s's phase moves with s: with the phases of cell x0 and x1 swapped per seed, γ in
    every resample stays exactly as the resample's seeds make it (checked against the brute
    force on the same weights), and cells with other seed ids line up by id."""
    arms = [cell("a", [C, G], seeds=(0, 1)), cell("b", [G, M], seeds=(1, 2))]
    codes, ids = _codes(arms)
    assert ids == [0, 1, 2]
    np.testing.assert_array_equal(codes, [[C, G, np.nan], [np.nan, G, M]])
    result = run({"a": (1.0, 0.0), "b": (2.0, 0.0), "c": (1.0, 1.0), "d": (2.0, 1.0)},
                 [*arms, cell("c", [C, C]), cell("d", [M, M])], min_cells=1)
    assert result.details["seed_ids"] == [0, 1, 2]


def test_duplicate_cells_and_bad_codes() -> None:
    with pytest.raises(ValueError, match="each cell once"):
        PhaseOrderParams.model_validate({"name": "phase_order", "cells": {
            "a": [1, 0], "b": [1, 0], "c": [2, 0], "d": [3, 0]}})
    arms = [cell(f"x{i}y{j}", [C, 0.5, M, M]) for j in range(2) for i in range(3)]
    result = run(CELLS, arms)
    assert result.verdict is Verdict.INCONCLUSIVE and "not phase codes" in result.reason


CLAIM = """\
id: phase_tiny
title: Tiny phase claim
statement: test fixture.
source: {arxiv: "2205.10343", where: test fixture, role: inference, quote: test fixture}
base:
  task: {op: add, p: 6, modular: false, unordered: true, train_frac: 0.6, test_frac: null}
  model: {kind: toy_sum, hidden: 4, emb_dim: 1}
  optimizer: {name: adamw, lr: 0.001}
  training: {steps: 0, eval_interval: 1}
arms: {}
grid:
  name: "lr{lr}_wd{wd}"
  axes:
    lr: {path: optimizer.lr, values: [0.001, 0.01]}
    wd: {path: optimizer.weight_decay, values: [0, 1]}
scales: {quick: {description: tiny}}
seeds: 2
metric: {name: phase, lag: 10}
criterion:
  name: phase_order
  cells: {lr0.001_wd0: [0.001, 0], lr0.01_wd0: [0.01, 0], lr0.001_wd1: [0.001, 1],
          lr0.01_wd1: [0.01, 1]}
"""


def test_the_phase_metric_goes_with_phase_order_only(tmp_path: Path) -> None:
    path = tmp_path / "ok.yaml"
    path.write_text(CLAIM, encoding="utf-8")
    assert load_claim(path, limits=None).claim.criterion.name == "phase_order"
    assert problems(tmp_path, CLAIM.replace("name: phase, lag: 10",
                                            "name: phase_is, phase: grokking")) == [
        Has("18 metric.name: criterion 'phase_order' reads a phase code per seed",
            "give metric 'phase'")]
    other = CLAIM.split("criterion:")[0] + (
        "criterion: {name: value, arm: lr0.01_wd0, target: 1, tol: 0.5}\n")
    assert problems(tmp_path, other) == [
        Has("18 metric.name: metric 'phase' is a category's code, not a quantity",
            "only criterion 'phase_order' reads it")]


def test_a_phase_code_refusal_names_every_code_metric_and_every_reader(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With a second code metric and a second criterion that reads codes (as a plugin could
    add), the refusals list both, joined by "or"."""
    from grokverify.kinds import CRITERIA, METRICS

    monkeypatch.setitem(METRICS.specs, "phase_too", METRICS.specs["phase"])
    monkeypatch.setitem(CRITERIA.specs, "phase_order_too", CRITERIA.specs["phase_order"])
    block = CLAIM.replace("metric: {name: phase, lag: 10}",
                          "metric:\n  name: phase_is\n  phase: grokking")
    line = block.splitlines().index("  name: phase_is") + 1
    assert problems(tmp_path, block) == [
        Has(f"{line} metric.name: criterion 'phase_order' reads a phase code per seed",
            "give metric 'phase' or 'phase_too'")]
    other = CLAIM.split("criterion:")[0] + (
        "criterion: {name: value, arm: lr0.01_wd0, target: 1, tol: 0.5}\n")
    assert problems(tmp_path, other) == [
        Has("only criterion 'phase_order' or 'phase_order_too' reads it")]


def test_falling_turns_the_order_and_shown_names_the_phases_claimed() -> None:
    """A batch-size sweep (App. G): comprehension at the largest batch, grokking at small ones,
    no memorization claimed: falling with shown [comprehension, grokking]."""
    sweep = {"b4": (4.0, 0.0), "b16": (16.0, 0.0), "b45": (45.0, 0.0)}
    arms = [cell("b4", [G, G, G, M] * 3), cell("b16", [G, G, C, G] * 3),
            cell("b45", [C, C, C, C] * 3)]
    rising = run(sweep, arms)
    assert rising.estimate < 0 and rising.verdict is Verdict.REFUTED
    falling = run(sweep, arms, direction="falling", shown=["comprehension", "grokking"])
    assert falling.estimate == pytest.approx(-rising.estimate)
    assert falling.verdict is Verdict.SUPPORTED, falling.reason
    assert "memorization < grokking < comprehension" in falling.effect_label


def test_the_report_draws_the_map_with_y_rows_from_the_top() -> None:
    from grokverify.report.markdown import _phase_map
    rows = [[C, C, C, G], [G, G, G, C], [M, M, X, X]]
    arms = [cell(f"x{i}y{j}", rows[i]) for j in range(2) for i in range(3)]
    result = run(CELLS, arms, x_label="decoder lr", y_label="weight <decay>")
    lines = _phase_map({"family": None, "result": result.to_dict()})
    table = [line for line in lines if line.startswith("| ")]
    assert table[0] == "| weight &lt;decay> \\ decoder lr | 0.0001 | 0.001 | 0.01 |"
    assert table[1:] == ["| 1 | C 0.75 | G 0.75 | · |", "| 0 | C 0.75 | G 0.75 | · |"]


def test_grid_axes_place_every_generated_arm_as_written_by_hand(tmp_path: Path) -> None:
    by_hand = load_claim(_write(tmp_path / "a.yaml", CLAIM), limits=None).claim.criterion
    from_grid = CLAIM.replace(
        """  cells: {lr0.001_wd0: [0.001, 0], lr0.01_wd0: [0.01, 0], lr0.001_wd1: [0.001, 1],
          lr0.01_wd1: [0.01, 1]}""", "  grid_axes: {x: lr, y: wd}")
    got = load_claim(_write(tmp_path / "b.yaml", from_grid), limits=None).claim.criterion
    assert got.cells == by_hand.cells
    # y left out on a two-axis grid: two arms land on one cell, which is refused
    one_row = from_grid.replace("grid_axes: {x: lr, y: wd}", "grid_axes: {x: wd}")
    assert problems(tmp_path, one_row) == [
        Has("19 criterion.cells: arms 'lr0.001_wd0' and 'lr0.01_wd0' are both at [0, 0]",
            "each cell once")]
    both = from_grid.replace("grid_axes: {x: lr, y: wd}",
                             "grid_axes: {x: lr, y: wd}\n  cells: {a: [1, 0], b: [2, 0]}")
    assert problems(tmp_path, both) == [
        "21 criterion.grid_axes: give cells or grid_axes, not both"]
    grid = from_grid[from_grid.index("grid:"):from_grid.index("scales:")]
    no_grid = from_grid.replace(grid, "").replace("arms: {}", "arms: {a: {}, b: {}}")
    assert problems(tmp_path, no_grid) == [
        Has("16 criterion.grid_axes: grid_axes names axes of the claim's grid",
            "the claim has no grid: give cells")]
    for bad in ("{x: lr, y: c}", "{y: wd}", "{x: {lr: 1}}", "{x: lr, z: wd}"):
        assert problems(tmp_path, from_grid.replace("{x: lr, y: wd}", bad)) == [
            Has("21 criterion.grid_axes: expected {x: <axis>, y: <axis>} (y optional)",
                "the grid's axes are lr, wd")], bad


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_bca_without_bias_or_skew_is_the_percentile_interval_and_shifts_with_bias() -> None:
    """z0 = 0 (half the resamples below the estimate) and a = 0 (a symmetric jackknife) leave
    the levels at alpha/2 and 1 - alpha/2: the percentile order statistics [x*_(k),
    x*_(B+1-k)], k = floor(0.025 * 2000) = 50 (the upper one rounded up: 1951). With every
    resample above the estimate the bias correction moves both levels down, past the lowest
    resample at the lower end (clipped to it) and far below the percentile one at the upper."""
    from grokverify.stats.phase_order import _bca
    boot = np.linspace(-1, 1, 2000)
    jack = np.array([-0.1, 0.0, 0.1])
    none = np.zeros(2000, dtype=bool)
    ci, info = _bca(boot, none, 0.0, jack, 0.95)
    assert info["bca_z0"] == pytest.approx(0.0, abs=1e-12)
    assert info["bca_acceleration"] == 0.0
    assert ci == (boot[49], boot[1950]) and not info["bca_clipped"]
    (low, high), info = _bca(boot, none, -1.5, jack, 0.95)
    assert low == boot[0] and high < boot[1000] and info["bca_clipped"]
    undefined = none.copy()
    undefined[1990:] = True  # the top ten resamples had no ordered pair
    (low, high), _ = _bca(boot, undefined, 0.0, jack, 0.999)
    assert low == -1.0 and high == 1.0
