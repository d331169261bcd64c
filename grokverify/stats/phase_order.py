"""``phase_order``: whether a phase diagram's phases are ordered comprehension < grokking <
memorization along one setting (paper 2's Fig. 6), with the map itself kept as data; the rules
are docs/verdicts.md's "`phase_order`"."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from pydantic import BaseModel
from scipy.special import ndtr, ndtri
from statsmodels.stats.proportion import proportion_confint

from grokverify.claim.criteria import PhaseOrderParams, expect_params
from grokverify.claim.metrics import PHASES
from grokverify.stats import verdict as verdict_rules
from grokverify.stats.base import INTERVAL_FAILS, ArmSample, CriterionResult
from grokverify.stats.common import Frame, arm_row, expanded_level, require_arms

NAME = "phase_order"
MIN_IDS = 10  # seed ids for γ's interval to decide (benchmarks/calibration.py, phase_order rows)
ORDERED = PHASES[:3]  # comprehension, grokking, memorization: ranks 0, 1, 2
CENSORING = ("a phase is never censored: a run that does not reach a threshold within the "
             "budget is labelled by Table 1 (memorization or confusion); seeds without a phase "
             "(diverged) are left out and counted")


def _codes(data: list[ArmSample]) -> tuple[np.ndarray, list[int]]:
    """(cells, seeds) phase codes over the union of the cells' seed ids (NaN: the seed has no
    phase in that cell), and those ids."""
    ids = sorted({s for a in data for s in a.seeds})
    where = {s: i for i, s in enumerate(ids)}
    codes = np.full((len(data), len(ids)), np.nan)
    for c, arm in enumerate(data):
        codes[c, [where[s] for s in arm.seeds]] = arm.values
    return codes, ids


def gammas(codes: np.ndarray, xs: np.ndarray, ys: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """(B,) pooled γ of each weight row (B, seeds) over the cells (codes (cells, seeds)); NaN
    where no pair is ordered. A resample of seed ids is a weight row: a seed drawn w times adds
    w copies of its phase to every cell, and a pair of copies counts w_i · w_j."""
    onehot = np.stack([codes == k for k in range(len(ORDERED))], axis=-1).astype(float)
    counts = np.einsum("bs,csk->bck", weights, onehot)  # (B, cells, 3)
    concordant = np.zeros(len(weights))
    discordant = np.zeros(len(weights))
    for y in np.unique(ys):
        cells = np.flatnonzero(ys == y)
        n = counts[:, cells[np.argsort(xs[cells])], :]  # N[cell, phase rank], sorted by x
        before = np.cumsum(n, axis=1) - n  # weighted counts in the cells of smaller x
        lower = np.cumsum(before, axis=2) - before  # of ranks k < l
        higher = before.sum(axis=2, keepdims=True) - np.cumsum(before, axis=2)  # k > l
        concordant += (n * lower).sum(axis=(1, 2))
        discordant += (n * higher).sum(axis=(1, 2))
    total = concordant + discordant
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, (concordant - discordant) / total, np.nan)


def _bca(boot: np.ndarray, undefined: np.ndarray, estimate: float, jack: np.ndarray,
         level: float) -> tuple[tuple[float, float], dict[str, Any]]:
    """Efron's BCa interval at `level` from the bootstrap γ's, read as order statistics like
    `crossing`'s (a level beyond the resamples reads the extreme one). An undefined resample
    (no ordered pair) could be any γ: -1 for the lower end, +1 for the upper."""
    n_boot = len(boot)
    low_sorted = np.sort(np.where(undefined, -1.0, boot))
    high_sorted = np.sort(np.where(undefined, 1.0, boot))
    defined = boot[~undefined]
    below = (np.sum(defined < estimate) + 0.5 * np.sum(defined == estimate)
             + 0.5 * np.sum(undefined)) / n_boot
    z0 = float(ndtri(min(max(below, 0.5 / n_boot), 1 - 0.5 / n_boot)))
    jack = jack[np.isfinite(jack)]
    d = jack.mean() - jack if jack.size else np.zeros(1)
    denom = 6.0 * float((d ** 2).sum()) ** 1.5
    a = float((d ** 3).sum()) / denom if denom > 0 else 0.0
    levels = []
    for z in (ndtri((1 - level) / 2), ndtri((1 + level) / 2)):
        levels.append(float(ndtr(z0 + (z0 + z) / (1 - a * (z0 + z)))))
    lo_k = int(math.floor(levels[0] * (n_boot + 1)))
    hi_k = int(math.ceil(levels[1] * (n_boot + 1)))
    # a level beyond the resamples' resolution reads the extreme resample
    ci = (float(low_sorted[max(lo_k, 1) - 1]), float(high_sorted[min(hi_k, n_boot) - 1]))
    return ci, {"bca_clipped": not 1 <= lo_k <= hi_k <= n_boot,
                "ci_method": "BCa percentile bootstrap (Efron 1987) at Hesterberg's expanded "
                             "level for the seed ids: bias correction z0 and jackknife "
                             "acceleration a over seed ids", "bca_z0": z0,
                "bca_acceleration": a, "bca_levels": levels, "bootstrap_level": level}


def _cells_it_may_lead(data: list[ArmSample], code: int, alpha: float) -> list[str]:
    """The cells where the phase may still be the most common one: its share's one-sided
    Clopper-Pearson upper bound at `alpha` reaches 1/4 (a most common of four phases has at
    least 1/4 of the seeds)."""
    out = []
    for arm in data:
        k, n = int((arm.values == code).sum()), arm.n
        if n == 0 or proportion_confint(k, n, alpha=2 * alpha, method="beta")[1] >= 0.25:
            out.append(arm.name)
    return out


def _cell(arm: ArmSample, xy: tuple[float, float]) -> dict[str, Any]:
    counts = {ph: int((arm.values == i).sum()) for i, ph in enumerate(PHASES)}
    top = max(counts.values())
    leaders = [ph for ph, n in counts.items() if n == top]
    return {"arm": arm.name, "x": xy[0], "y": xy[1], "seeds": arm.n, "counts": counts,
            "most_common": leaders[0] if top > 0 and len(leaders) == 1 else None}


def run_phase_order(params: BaseModel, arms: dict[str, ArmSample]) -> CriterionResult:
    """γ of the phases against x within each y, its bootstrap CI over seed ids, the map, and
    the verdict."""
    p = expect_params(params, PhaseOrderParams)
    data = require_arms(NAME, p.arms(), arms, ("value",))
    fmt = verdict_rules.format_number
    order = "comprehension < grokking < memorization" if p.direction == "rising" else (
        "memorization < grokking < comprehension")
    label = f"γ between {p.x_label} and the phase ({order})"
    frame = Frame(NAME, label, "Goodman-Kruskal γ within each " + p.y_label + ", pooled; "
                  "BCa bootstrap CI over seed ids shared by every cell, at the expanded "
                  "level (no test)",
                  p.min_gamma, f"γ within [{fmt(p.min_gamma)}, 1], and each of "
                  f"{', '.join(p.shown)} the most common phase of >= {p.min_cells} cell(s)",
                  p.ci_level,
                  {"censoring": CENSORING, "alpha": 1.0 - p.ci_level,
                   "x_label": p.x_label, "y_label": p.y_label})
    cells = [_cell(a, p.cells[a.name]) for a in data]
    rows = [arm_row(a, {"x": c["x"], "y": c["y"], **c["counts"], "most common": c["most_common"]
                        or "none (tie)"}) for a, c in zip(data, cells, strict=True)]
    phase_map = {"x_label": p.x_label, "y_label": p.y_label, "cells": cells}
    bad = [a.name for a in data if not np.isin(a.values, range(len(PHASES))).all()]
    if bad:
        return frame.inconclusive(f"arm(s) {', '.join(bad)} carry values that are not phase "
                                  f"codes 0-{len(PHASES) - 1}", rows)
    codes, ids = _codes(data)
    xs = np.array([c["x"] for c in cells]) * (1 if p.direction == "rising" else -1)
    ys = np.array([c["y"] for c in cells])
    shown = {ph: sum(c["most_common"] == ph for c in cells) for ph in PHASES}
    estimate = float(gammas(codes, xs, ys, np.ones((1, len(ids))))[0])
    rng = np.random.default_rng(p.bootstrap_seed)
    weights = rng.multinomial(len(ids), np.full(len(ids), 1 / len(ids)), size=p.n_boot)
    boot = gammas(codes, xs, ys, weights.astype(float))
    undefined = np.isnan(boot)
    jack = gammas(codes, xs, ys, 1.0 - np.eye(len(ids)))  # leave one seed id out
    details: dict[str, Any] = {
        "phase_map": phase_map, "cells_most_common": shown, "seed_ids": ids,
        "n_boot": p.n_boot, "bootstrap_seed": p.bootstrap_seed,
        "resamples_without_an_ordered_pair": int(undefined.sum()),
        "bootstrap": "seed ids resampled with replacement, the same draw in every cell "
                     "(np.random.default_rng(bootstrap_seed).multinomial); a resample without "
                     "an ordered pair counts as -1 for the CI's lower end and +1 for its upper"}
    if len(ids) < 2:
        return frame.inconclusive(f"γ's interval needs at least 2 seed ids; the cells share "
                                  f"{len(ids)}", rows, details)
    ci, bca = _bca(boot, undefined, estimate, jack, expanded_level(p.ci_level, len(ids)))
    details.update(bca)
    if math.isnan(estimate):
        return frame.inconclusive("no two seeds in cells of the same " + p.y_label + " have "
                                  "different phases among comprehension, grokking and "
                                  "memorization", rows, details)
    missing = [ph for ph in p.shown if shown[ph] < p.min_cells]
    alpha = (1.0 - p.ci_level) / 2 / len(cells)  # one-sided, Bonferroni over the cells
    possible = {ph: _cells_it_may_lead(data, PHASES.index(ph), alpha) for ph in missing}
    details.update(min_seed_ids=MIN_IDS, lead_bound_alpha=alpha,
                   cells_each_missing_phase_may_lead={ph: len(c) for ph, c in possible.items()})
    verdict, reason = verdict_rules.decide_interval(ci, p.min_gamma, 1.0, estimate, label,
                                                    p.ci_level)
    if len(ids) < MIN_IDS:
        details[INTERVAL_FAILS] = (f"γ's bootstrap over the {len(ids)} seed ids the cells "
                                   f"share: fewer than {MIN_IDS} give too few distinct "
                                   "resamples to keep its level")
    refuted = [ph for ph in missing if len(possible[ph]) < p.min_cells]
    if refuted:
        verdict = verdict_rules.Verdict.REFUTED
        reason = ("The diagram does not show every phase claimed: "
                  + "; ".join(f"{ph} is the most common phase of {shown[ph]} cell(s), and its "
                              f"share's exact upper bound reaches 1/4 (what a most common phase "
                              f"needs) in {len(possible[ph])}, fewer than the {p.min_cells} "
                              "claimed" for ph in refuted)
                  + f". (For the record: {reason})")
    elif missing and verdict is not verdict_rules.Verdict.REFUTED:
        need = math.ceil(math.log(alpha) / math.log(0.75))
        verdict = verdict_rules.Verdict.INCONCLUSIVE
        reason = ("; ".join(f"{ph} is the most common phase of {shown[ph]} cell(s), fewer than "
                            f"the {p.min_cells} claimed, but the seeds cannot exclude that it "
                            f"leads {len(possible[ph])} (each such cell's exact upper bound on "
                            "its share reaches 1/4)" for ph in missing)
                  + f": a cell needs at least {need} seeds, none of them that phase, to "
                  f"exclude it. (For the record: {reason})")
    counts = ", ".join(f"{ph} {shown[ph]}" for ph in PHASES)
    reason = reason.rstrip(".") + f"; cells by most common phase: {counts}, ties " \
        f"{sum(c['most_common'] is None for c in cells)}."
    return frame.result(estimate, ci, None, verdict, reason, rows, details)


