"""Figures: accuracy curves per arm (each seed faint, median bold) and Kaplan–Meier curves."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from grokverify.stats import ArmSample  # noqa: E402

_COLORS = plt.rcParams["axes.prop_cycle"].by_key()["color"]


def _median_curve(records: list[dict[str, Any]], key: str) -> tuple[np.ndarray, np.ndarray]:
    """Median across seeds on the union of eval steps; a frozen (early-stopped) seed keeps its
    last value, which is at or above the threshold it stopped at."""
    steps = sorted({s for r in records for s in r["result"]["curves"][key]["steps"]})
    grid = np.array(steps, dtype=float)
    rows = []
    for r in records:
        curve = r["result"]["curves"][key]
        xs, ys = curve["steps"], curve["values"]
        if xs:
            rows.append(np.interp(grid, xs, ys, right=ys[-1]))
    return grid, (np.median(np.array(rows), axis=0) if rows else np.zeros_like(grid))


def plot_curves(records: dict[str, list[dict[str, Any] | None]], path: Path) -> Path | None:
    fig, ax = plt.subplots(figsize=(7, 4))
    for i, (arm, recs) in enumerate(records.items()):
        recs = [r for r in recs if r]
        color = _COLORS[i % len(_COLORS)]
        for r in recs:
            val = r["result"]["curves"]["val_acc"]
            ax.plot(val["steps"], val["values"], color=color, alpha=0.15, lw=0.8)
        if recs:
            grid, med = _median_curve(recs, "val_acc")
            ax.plot(grid, med, color=color, lw=2, label=f"{arm}: val (median)")
            grid, med = _median_curve(recs, "train_acc")
            ax.plot(grid, med, color=color, lw=1.5, ls="--", label=f"{arm}: train (median)")
    ax.set_xlabel("step")
    ax.set_ylabel("accuracy")
    ax.set_ylim(-0.02, 1.02)
    ax.legend(fontsize=8, loc="lower right")
    ax.set_title("accuracy per seed (faint) and median across seeds")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _km_steps(sample: ArmSample) -> tuple[np.ndarray, np.ndarray]:
    order = np.lexsort((~sample.observed, sample.times))
    t, e = sample.times[order], sample.observed[order]
    at_risk = len(t) - np.arange(len(t))
    surv = np.cumprod(np.where(e, 1 - 1 / at_risk, 1.0))
    return np.concatenate([[0.0], t]), np.concatenate([[1.0], surv])


def plot_survival(samples: dict[str, ArmSample], label: str, path: Path) -> Path | None:
    fig, ax = plt.subplots(figsize=(7, 4))
    for i, (arm, sample) in enumerate(samples.items()):
        if sample.n == 0:
            continue
        color = _COLORS[i % len(_COLORS)]
        x, y = _km_steps(sample)
        ax.step(x, y, where="post", color=color, label=f"{arm} (n={sample.n})")
        cens = ~sample.observed
        if cens.any():
            idx = np.searchsorted(x, sample.times[cens], side="right") - 1
            ax.plot(sample.times[cens], y[idx], "|", color=color, ms=10)
    ax.axhline(0.5, color="grey", lw=0.8, ls=":")
    ax.set_xlabel(label)
    ax.set_ylabel("fraction of seeds not yet reached")
    ax.set_ylim(-0.02, 1.02)
    ax.legend(fontsize=8)
    ax.set_title("Kaplan–Meier (| = censored)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
