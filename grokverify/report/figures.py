"""Figures: accuracy curves per arm (each seed faint, median bold), the metric's per-seed
values (Kaplan–Meier curves for a time metric, a strip of per-seed dots for a value metric) and
the per-seed pairs of two arms that share seeds (one line per seed)."""

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
    order = np.lexsort((~sample.observed, sample.values))
    t, e = sample.values[order], sample.observed[order]
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
            idx = np.searchsorted(x, sample.values[cens], side="right") - 1
            ax.plot(sample.values[cens], y[idx], "|", color=color, ms=10)
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


def plot_values(samples: dict[str, ArmSample], label: str, path: Path) -> Path | None:
    """One row per arm: each seed's value as a dot (jittered vertically so ties stay visible)
    and the arm's median as a bar; arms without a usable seed are listed, not drawn."""
    names = list(samples)
    fig, ax = plt.subplots(figsize=(7, max(2.0, 0.6 * len(names) + 1.2)))
    jitter = np.random.default_rng(0)  # fixed: the figure is the same on every run
    for i, arm in enumerate(names):
        sample = samples[arm]
        color = _COLORS[i % len(_COLORS)]
        if sample.n == 0:
            ax.text(0.0, i, "  no usable seed", va="center", fontsize=8, color=color,
                    transform=ax.get_yaxis_transform())
            continue
        y = i + jitter.uniform(-0.15, 0.15, sample.n)
        ax.plot(sample.values, y, "o", color=color, alpha=0.7, ms=5)
        median = float(np.median(sample.values))
        ax.plot([median, median], [i - 0.3, i + 0.3], color=color, lw=2)
    ax.set_yticks(range(len(names)))
    ax.set_yticklabels([f"{a} (n={samples[a].n})" for a in names], fontsize=8)
    ax.set_ylim(-0.6, len(names) - 0.4)
    ax.invert_yaxis()
    ax.set_xlabel(label)
    ax.set_title("per-seed values (dots) and median (bar)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_pairs(pairs: dict[str, tuple[ArmSample, ArmSample]], label: str,
               path: Path) -> Path | None:
    """One panel per compared pair of arms (aligned by seed: `grokverify.stats.common.
    pair_arms`): each seed a line from its baseline value to its treated value, so a reader sees
    how much of the spread the arms share; a censored time is drawn at its censoring value (the
    budget) with a hollow triangle. Log scale for times (a ratio is a slope)."""
    if not pairs:
        return None
    fig, axes = plt.subplots(1, len(pairs), figsize=(3.6 * len(pairs) + 1.0, 4.2), squeeze=False)
    for ax, (title, (base, treat)) in zip(axes[0], pairs.items(), strict=True):
        for i in range(base.n):
            color = _COLORS[i % len(_COLORS)]
            ys = (base.values[i], treat.values[i])
            ax.plot((0, 1), ys, color=color, lw=1, alpha=0.7)
            for x, y, seen in ((0, ys[0], base.observed[i]), (1, ys[1], treat.observed[i])):
                ax.plot(x, y, "o" if seen else "^", color=color, ms=6 if seen else 8,
                        mfc=color if seen else "none")
        ax.set_xticks((0, 1))
        ax.set_xticklabels((base.name, treat.name), fontsize=8)
        ax.set_xlim(-0.3, 1.3)
        if base.kind == "time" and min(base.values.min(), treat.values.min()) > 0:
            ax.set_yscale("log")
        ax.set_title(f"{title + ': ' if title else ''}{base.n} seed pairs", fontsize=9)
    axes[0][0].set_ylabel(label)
    fig.suptitle("per-seed pairs\n(line = one seed; hollow triangle = censored at the budget)",
                 fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
