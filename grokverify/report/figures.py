"""Per-claim figures, drawn from a claim's result dict and (for training curves) its records: a
figure is one function in `FIGURES` that returns None where the claim has no data for it. The
style holds in print and greyscale: arms differ by line style and marker as well as colour (the
Okabe–Ito palette keeps its order in lightness too).
"""

from __future__ import annotations

import io
import math
import textwrap
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from scipy import stats as sps  # noqa: E402

from grokverify.atomic import write_atomic  # noqa: E402
from grokverify.claim.load import arm_label
from grokverify.report.cells import SIDE_WORDS  # noqa: E402
from grokverify.report.forest import (  # noqa: E402
    AXIS_LIMIT,
    VERDICT_COLOUR,
    Entry,
    claimed_interval,
    paper_markers,
)
from grokverify.report.markdown import PHASE_LETTER, phase_share  # noqa: E402
from grokverify.report.png import palette_png  # noqa: E402
from grokverify.report.suite import member_results  # noqa: E402
from grokverify.stats.base import ArmSample  # noqa: E402

Record = dict[str, Any]

_PALETTE = ("#000000", "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9",
            "#999999")
_LINES: tuple[Any, ...] = ("-", "--", ":", "-.", (0, (5, 1)), (0, (3, 1, 1, 1, 1, 1)),
                           (0, (1, 3)), (0, (8, 3)))
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
_STYLE = {"font.size": 9, "axes.titlesize": 9, "axes.labelsize": 9, "legend.fontsize": 7.5,
          "legend.frameon": False, "axes.grid": True, "grid.alpha": 0.3, "grid.linewidth": 0.5,
          "axes.spines.top": False, "axes.spines.right": False, "lines.linewidth": 1.6,
          "savefig.dpi": 110, "figure.dpi": 110}
MOST_ARMS = 8  # arms drawn in one panel of curves; more are thinned evenly (the title says so)
MOST_STRIP_ARMS = 30  # the per-seed strip is one row per arm: beyond this, the other figures
MOST_PROBES = 6  # probe panels


def arm_style(i: int) -> dict[str, Any]:
    """The i-th arm's colour, line style and marker (all three change together)."""
    return {"color": _PALETTE[i % len(_PALETTE)], "ls": _LINES[i % len(_LINES)],
            "marker": _MARKERS[i % len(_MARKERS)]}


@dataclass(frozen=True)
class FigureData:
    """What the figures are drawn from: result.json's dict, and each arm's stored records by
    its label ("arm" or "member/arm"; None for a seed the store lacks); no records when only
    the result is at hand (then the figures of training curves are not drawn)."""

    result: dict[str, Any]
    records: dict[str, list[Record | None]] = field(default_factory=dict)


@dataclass(frozen=True)
class FigureSpec:
    """A registered figure: its file in the claim folder, its caption, and its function."""

    file: str
    caption: str
    draw: Callable[[FigureData], Figure | None]


def _new(ncols: int = 1, width: float = 7.0, height: float = 4.0) -> tuple[Figure, Any]:
    with plt.rc_context(_STYLE):
        fig, axes = plt.subplots(1, ncols, figsize=(width, height), squeeze=False)
    return fig, axes[0]


def _thin(labels: list[str], most: int = MOST_ARMS) -> tuple[list[str], str]:
    """At most `most` labels, evenly spaced (first and last kept), and a note when thinned."""
    if len(labels) <= most:
        return labels, ""
    idx = np.unique(np.linspace(0, len(labels) - 1, most).round().astype(int))
    return [labels[i] for i in idx], f" ({len(idx)} of {len(labels)} arms, evenly spaced)"


def _log_axis(ax: Any, which: str) -> None:
    """A log axis labelled in plain numbers at 1, 2 and 5 of each decade (not 4×10⁻¹)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    axis = ax.xaxis if which == "x" else ax.yaxis
    (ax.set_xscale if which == "x" else ax.set_yscale)("log")
    axis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(NullFormatter())


def _float(x: Any) -> float:
    """A result.json number ("inf"/"-inf" strings, None as NaN)."""
    if x is None:
        return math.nan
    return float(x)


# ---------------------------------------------------------------- curves from the records


def _quartiles(records: list[Record], key: str, hold_last: bool
               ) -> tuple[np.ndarray, np.ndarray] | None:
    """The steps after step 0 that any seed evaluated, and the 25th, 50th and 75th percentiles
    across seeds there (3 rows); a seed that stopped early keeps its last value when
    `hold_last` (an early-stopped accuracy stays at the threshold it stopped at), else has none."""
    curves = [c for r in records if (c := r["result"]["curves"].get(key)) and c["steps"]]
    grid = np.array(sorted({s for c in curves for s in c["steps"] if s > 0}), dtype=float)
    rows = []
    for c in curves:
        xs = np.asarray(c["steps"], dtype=float)
        ys = np.array([math.nan if v is None else v for v in c["values"]], dtype=float)
        ok = np.isfinite(ys)
        if ok.any():
            rows.append(np.interp(grid, xs[ok], ys[ok], left=math.nan,
                                  right=ys[ok][-1] if hold_last else math.nan))
    if not rows or grid.size == 0:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a step no seed reached: NaN, not drawn
        return grid, np.nanpercentile(np.array(rows), [25, 50, 75], axis=0)


def _draw_band(ax: Any, band: tuple[np.ndarray, np.ndarray], style: dict[str, Any],
               label: str) -> None:
    grid, (q25, med, q75) = band
    ax.fill_between(grid, q25, q75, color=style["color"], alpha=0.15, lw=0)
    ax.plot(grid, med, color=style["color"], ls=style["ls"], marker=style["marker"], ms=3.5,
            markevery=max(1, len(grid) // 8), label=label)


def _records(data: FigureData) -> dict[str, list[Record]]:
    return {label: [r for r in recs if r] for label, recs in data.records.items()
            if any(recs)}


def curves_figure(data: FigureData) -> Figure | None:
    """Training and validation accuracy per arm: median across seeds and inter-quartile band,
    log step axis from the first evaluation after step 0 (a log axis has no 0)."""
    records = _records(data)
    labels, note = _thin(list(records))
    bands = {(label, key): band for label in labels for key in ("train_acc", "val_acc")
             if (band := _quartiles(records[label], key, hold_last=True)) is not None}
    if not bands:
        return None
    fig, axes = _new(2, 9.0, 3.8)
    for ax, key, title in zip(axes, ("train_acc", "val_acc"), ("training", "validation"),
                              strict=True):
        for i, label in enumerate(labels):
            if (label, key) in bands:
                _draw_band(ax, bands[label, key], arm_style(i),
                           f"{label} (n={len(records[label])})")
        _log_axis(ax, "x")
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel("step (log scale; from the first evaluation after step 0)")
        ax.set_title(f"{title} accuracy: median, inter-quartile band")
    axes[0].set_ylabel("accuracy")
    axes[1].legend(loc="best")
    fig.suptitle(f"accuracy across seeds{note}", fontsize=9)
    return fig


def _probe_keys(records: dict[str, list[Record]]) -> list[str]:
    """The probe curves the records hold ("probe.quantity" names) with two or more steps."""
    keys: set[str] = set()
    for recs in records.values():
        for r in recs[:1]:
            keys.update(k for k, c in r["result"]["curves"].items()
                        if "." in k and len(c["steps"]) > 1)
    return sorted(keys)


def probes_figure(data: FigureData) -> Figure | None:
    """Each probe curve over training (σmax, gradient norms, Hessian λmax, PCA effective
    dimension, ...): per arm the median across seeds with its inter-quartile band."""
    records = _records(data)
    keys = _probe_keys(records)[:MOST_PROBES]
    if not keys:
        return None
    labels, note = _thin(list(records))
    cols = min(3, len(keys))
    rows = math.ceil(len(keys) / cols)
    with plt.rc_context(_STYLE):
        fig, grid = plt.subplots(rows, cols, figsize=(3.3 * cols + 0.6, 2.9 * rows + 0.4),
                                 squeeze=False)
    for ax, key in zip(grid.flat, keys, strict=False):
        for i, label in enumerate(labels):
            band = _quartiles(records[label], key, hold_last=False)
            if band is not None:
                _draw_band(ax, band, arm_style(i), label)
        _log_axis(ax, "x")
        ax.set_title(key)
        ax.set_xlabel("step (log scale)")
    for ax in list(grid.flat)[len(keys):]:
        ax.set_visible(False)
    grid.flat[0].legend(loc="best")
    fig.suptitle(f"probe traces: median across seeds, inter-quartile band{note}", fontsize=9)
    return fig


# ---------------------------------------------------------------- per-seed metric from result


def samples_of(result: dict[str, Any]) -> dict[str, ArmSample]:
    """Each arm's usable per-seed metric (per_seed rows not left out), in arm order."""
    kind = result["metric"]["kind"]
    rows: dict[str, list[dict[str, Any]]] = {label: [] for label in result["arms"]}
    for row in result["per_seed"]:
        if not row.get("left_out") and row.get("metric") is not None:
            rows.setdefault(arm_label(row.get("member"), row["arm"]), []).append(row)
    return {label: ArmSample(label, np.array([_float(r["metric"]) for r in rs], dtype=float),
                             np.array([bool(r["metric_observed"]) for r in rs], dtype=bool),
                             tuple(int(r["seed"]) for r in rs), kind=kind)
            for label, rs in rows.items()}


def _km_steps(sample: ArmSample) -> tuple[np.ndarray, np.ndarray]:
    order = np.lexsort((~sample.observed, sample.values))
    t, e = sample.values[order], sample.observed[order]
    at_risk = len(t) - np.arange(len(t))
    surv = np.cumprod(np.where(e, 1 - 1 / at_risk, 1.0))
    return np.concatenate([[0.0], t]), np.concatenate([[1.0], surv])


def survival_figure(data: FigureData) -> Figure | None:
    """Kaplan–Meier curves of a time metric per arm, a censored seed marked | at its time."""
    res = data.result
    samples = {k: s for k, s in samples_of(res).items() if s.n} \
        if res["metric"]["kind"] == "time" else {}
    if not samples:
        return None
    labels, note = _thin(list(samples), 2 * MOST_ARMS)
    fig, (ax,) = _new()
    for i, label in enumerate(labels):
        sample, style = samples[label], arm_style(i)
        x, y = _km_steps(sample)
        ax.step(x, y, where="post", color=style["color"], ls=style["ls"],
                label=f"{label} (n={sample.n}, censored {int((~sample.observed).sum())})")
        cens = ~sample.observed
        if cens.any():
            idx = np.searchsorted(x, sample.values[cens], side="right") - 1
            ax.plot(sample.values[cens], y[idx], "|", color=style["color"], ms=10, mew=1.5)
    ax.axhline(0.5, color="grey", lw=0.8, ls=":")
    ax.set_xlabel(res["metric"]["label"])
    ax.set_ylabel("fraction of seeds not yet reached")
    ax.set_ylim(-0.02, 1.02)
    ax.legend()
    ax.set_title(f"Kaplan–Meier curves (| = censored at the budget){note}")
    return fig


def values_figure(data: FigureData) -> Figure | None:
    """One row per arm: each seed's value as a dot (jittered vertically so ties stay visible)
    and the arm's median as a bar; for a value metric with at most MOST_STRIP_ARMS arms."""
    res = data.result
    samples = samples_of(res)
    if res["metric"]["kind"] != "value" or not 0 < len(samples) <= MOST_STRIP_ARMS or not any(
            s.n for s in samples.values()):
        return None
    names = list(samples)
    fig, (ax,) = _new(height=max(2.0, 0.45 * len(names) + 1.2))
    jitter = np.random.default_rng(0)  # fixed: the figure is the same on every run
    for i, arm in enumerate(names):
        sample, style = samples[arm], arm_style(i)
        if sample.n == 0:
            ax.text(0.0, i, "  no usable seed", va="center", fontsize=8, color=style["color"],
                    transform=ax.get_yaxis_transform())
            continue
        y = i + jitter.uniform(-0.15, 0.15, sample.n)
        ax.plot(sample.values, y, style["marker"], color=style["color"], alpha=0.7, ms=4,
                mfc="none")
        median = float(np.median(sample.values))
        ax.plot([median, median], [i - 0.3, i + 0.3], color=style["color"], lw=2.2)
    ax.set_yticks(range(len(names)))
    ax.set_yticklabels([f"{a} (n={samples[a].n})" for a in names])
    ax.set_ylim(-0.6, len(names) - 0.4)
    ax.invert_yaxis()
    ax.set_xlabel(res["metric"]["label"])
    ax.set_title("per-seed values (markers) and each arm's median (bar)")
    return fig


def seed_pairs(result: dict[str, Any]) -> dict[str, tuple[ArmSample, ArmSample]]:
    """Per member analysed paired (its result's details say so), the criterion's baseline and
    treated arms aligned by seed number (the seeds both have, as `stats.common.pair_arms`)."""
    crit = result["criterion"]
    base, treat = crit.get("baseline"), crit.get("treated")
    samples = samples_of(result)
    out = {}
    for member, r in member_results(result).items():
        pair = [samples.get(arm_label(member, a)) for a in (base, treat)]
        paired = bool(r and (r.get("details") or {}).get("paired"))
        if not (paired and base and treat and pair[0] and pair[1]):
            continue
        common = sorted(set(pair[0].seeds) & set(pair[1].seeds))
        if len(common) < 2:
            continue
        aligned = []
        for s in pair:
            where = {seed: i for i, seed in enumerate(s.seeds)}
            idx = np.array([where[c] for c in common])
            aligned.append(ArmSample(s.name.split("/")[-1], s.values[idx], s.observed[idx],
                                     tuple(common), kind=s.kind))
        out[member] = (aligned[0], aligned[1])
    return out


def pairs_figure(data: FigureData) -> Figure | None:
    """One panel per compared pair of arms analysed paired: each seed a line from its baseline
    value to its treated value, so a reader sees how much of the spread the arms share; a
    censored time is drawn at its censoring value (the budget) with a hollow triangle. Log
    scale for times (a ratio is a slope)."""
    pairs = seed_pairs(data.result)
    if not pairs:
        return None
    fig, axes = _new(len(pairs), 3.6 * len(pairs) + 1.0, 4.2)
    for ax, (title, (base, treat)) in zip(axes, pairs.items(), strict=True):
        for i in range(base.n):
            style = arm_style(i)
            ys = (base.values[i], treat.values[i])
            ax.plot((0, 1), ys, color=style["color"], ls=style["ls"], lw=1, alpha=0.8)
            for x, y, seen in ((0, ys[0], base.observed[i]), (1, ys[1], treat.observed[i])):
                ax.plot(x, y, "o" if seen else "^", color=style["color"], ms=5 if seen else 7,
                        mfc=style["color"] if seen else "none")
        ax.set_xticks((0, 1))
        ax.set_xticklabels((base.name, treat.name))
        ax.set_xlim(-0.3, 1.3)
        if base.kind == "time" and min(base.values.min(), treat.values.min()) > 0:
            _log_axis(ax, "y")
        ax.set_title(f"{title + ': ' if title else ''}{base.n} seed pairs")
    axes[0].set_ylabel(data.result["metric"]["label"])
    fig.suptitle("per-seed pairs\n(line = one seed; hollow triangle = censored at the budget)",
                 fontsize=9)
    return fig


# ---------------------------------------------------------------- effects from the result

def _shade(ax: Any, region: tuple[float, float] | None, vertical: bool = True) -> None:
    """Shade the claimed region (hatched too, so it shows in greyscale) and draw its ends."""
    if region is None:
        return
    lo, hi = region
    lims = ax.get_xlim() if vertical else ax.get_ylim()
    lo_, hi_ = max(lo, lims[0]), min(hi, lims[1])
    span = ax.axvspan if vertical else ax.axhspan
    line = ax.axvline if vertical else ax.axhline
    if lo_ < hi_:
        span(lo_, hi_, color="#009E73", alpha=0.12, hatch="//", ec="#009E73", lw=0,
             label="claimed region")
    for end in (lo, hi):
        if math.isfinite(end):
            line(end, color="#009E73", lw=1, ls="--")
    (ax.set_xlim if vertical else ax.set_ylim)(lims)


def _members(result: dict[str, Any]) -> list[tuple[str, dict[str, Any], str]]:
    fam = result.get("family") or {}
    return [(m["member"], m["result"], m["verdict"]) for m in fam.get("members", [])]


def forest_figure(data: FigureData) -> Figure | None:
    """A family's members: each estimate with its CI (an open end drawn to the edge, with an
    arrow), the verdict beside it, the claimed region shaded; log axis for ratios."""
    members = [(name, r, v) for name, r, v in _members(data.result)
               if math.isfinite(_float(r["estimate"]))]
    if len(members) < 2:
        return None
    fig, (ax,) = _new(height=max(2.4, 0.42 * len(members) + 1.4))
    est = np.array([_float(r["estimate"]) for _, r, _ in members])
    lo = np.array([_float(r["ci"][0]) for _, r, _ in members])
    hi = np.array([_float(r["ci"][1]) for _, r, _ in members])
    finite = np.concatenate([est, lo[np.isfinite(lo)], hi[np.isfinite(hi)]])
    log = "ratio" in members[0][1]["effect_label"] and bool((finite > 0).all())
    if log:
        _log_axis(ax, "x")
    pad = (finite.max() - finite.min()) * 0.15 or abs(finite.max()) * 0.2 or 1.0
    edge = (finite.min() / 1.5, finite.max() * 1.5) if log else (finite.min() - pad,
                                                                 finite.max() + pad)
    region = claimed_interval(members[0][1])
    for end in region or ():
        if math.isfinite(end) and (not log or end > 0):
            edge = (min(edge[0], end / 1.2 if log else end - pad),
                    max(edge[1], end * 1.2 if log else end + pad))
    ax.set_xlim(edge)
    for i, (_, _, verdict) in enumerate(members):
        a, b = (max(lo[i], edge[0]) if math.isfinite(lo[i]) else edge[0],
                min(hi[i], edge[1]) if math.isfinite(hi[i]) else edge[1])
        ax.plot([a, b], [i, i], color="black", lw=1.5)
        for end, open_ in ((a, not math.isfinite(lo[i])), (b, not math.isfinite(hi[i]))):
            ax.plot(end, i, "<" if open_ and end == a else ">" if open_ else "|", color="black",
                    ms=6)
        ax.plot(est[i], i, "s", color="black", ms=6)
        ax.annotate(verdict, (1.01, i), xycoords=("axes fraction", "data"), va="center",
                    fontsize=7.5, annotation_clip=False)
    _shade(ax, region)
    ax.set_yticks(range(len(members)))
    ax.set_yticklabels([name for name, _, _ in members])
    ax.set_ylim(-0.7, len(members) - 0.3)
    ax.invert_yaxis()
    level = members[0][1]["ci_level"] * 100
    ax.set_xlabel(members[0][1]["effect_label"] + (" (log scale)" if log else ""))
    ax.set_title(f"each member's estimate (square) and {level:.4g}% CI; claimed region shaded")
    if region is not None:
        ax.legend(loc="best")
    return fig


# light to dark, so the phases stay apart in greyscale; a tie is white
_PHASE_COLOUR = {"comprehension": "#F0E442", "grokking": "#56B4E9", "memorization": "#D55E00",
                 "confusion": "#3B3B3B"}


def phase_map_figure(data: FigureData) -> Figure | None:
    """A phase diagram (criterion phase_order): each cell coloured by its most common phase,
    with the phase's letter and its share of the cell's seeds written in it."""
    res = data.result.get("result") or {}
    pm = (res.get("details") or {}).get("phase_map")
    if not pm or not pm.get("cells"):
        return None
    from matplotlib.colors import to_rgb
    from matplotlib.patches import Patch

    xs = sorted({c["x"] for c in pm["cells"]})
    ys = sorted({c["y"] for c in pm["cells"]})
    image = np.ones((len(ys), len(xs), 3))
    fig, (ax,) = _new(width=max(5.0, 0.55 * len(xs) + 2.8),
                      height=max(3.0, 0.42 * len(ys) + 1.8))
    for c in pm["cells"]:
        i, j, top = ys.index(c["y"]), xs.index(c["x"]), c["most_common"]
        if top:
            image[i, j] = to_rgb(_PHASE_COLOUR[top])
        share = phase_share(c)
        mark = f"{PHASE_LETTER[top]}\n{share:.2f}" if share is not None else "tie"
        dark = top in ("memorization", "confusion")
        ax.text(j, i, mark, ha="center", va="center", fontsize=6.5,
                color="white" if dark else "black")
    ax.imshow(image, origin="lower", aspect="auto")
    ax.set_xticks(range(len(xs)))
    ax.set_xticklabels([f"{x:.3g}" for x in xs], rotation=45, ha="right")
    ax.set_yticks(range(len(ys)))
    ax.set_yticklabels([f"{y:.3g}" for y in ys])
    ax.set_xlabel(pm["x_label"])
    ax.set_ylabel(pm["y_label"])
    ax.grid(False)
    ax.legend(handles=[Patch(color=_PHASE_COLOUR[p], label=f"{letter} {p}")
                       for p, letter in PHASE_LETTER.items()]
              + [Patch(fc="white", ec="grey", label="tie")],
              loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.set_title("most common phase per cell\nand its share of the cell's seeds", fontsize=10)
    return fig


def _mean_band(values: np.ndarray, level: float) -> tuple[float, float, float]:
    """An arm's mean and its CI at `level`: Wilson's score interval for a 0/1 metric (a share,
    such as P(nullity = 2)), else the normal interval of the mean."""
    n, mean = len(values), float(np.mean(values))
    z = float(sps.norm.ppf(0.5 + level / 2))
    if np.isin(values, (0.0, 1.0)).all():
        centre = (mean + z * z / (2 * n)) / (1 + z * z / n)
        half = z * math.sqrt(mean * (1 - mean) / n + z * z / (4 * n * n)) / (1 + z * z / n)
        return mean, centre - half, centre + half
    half = z * float(np.std(values, ddof=1)) / math.sqrt(n) if n > 1 else 0.0
    return mean, mean - half, mean + half


def _crossings(result: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(member, criterion result) of a crossing criterion: the claim's own, or each member's."""
    if result["criterion"]["name"] != "crossing":
        return []
    return list(member_results(result).items())


def crossing_figure(data: FigureData) -> Figure | None:
    """A crossing criterion (e.g. P(nullity = 2) against the training fraction): each arm's
    mean against its x with a CI band, the level, the crossing's estimate and CI, and the
    claimed region shaded; one line per family member."""
    res = data.result
    crossings = _crossings(res)
    samples = samples_of(res)
    if not crossings:
        return None
    fig, (ax,) = _new(width=7.5, height=4.2)
    level = float(res["criterion"]["level"])
    for i, (member, r) in enumerate(crossings):
        style = arm_style(i)
        points = []
        for arm in r["arms"]:
            s = samples.get(arm_label(member, arm["name"]))
            x = arm["columns"].get("x")
            if s is not None and s.n and x is not None:
                points.append((float(x), *_mean_band(s.values, r["ci_level"])))
        if not points:
            continue
        x, mean, lo, hi = np.array(sorted(points)).T
        ax.fill_between(x, lo, hi, color=style["color"], alpha=0.15, lw=0)
        ax.plot(x, mean, color=style["color"], ls=style["ls"], marker=style["marker"], ms=3.5,
                label=member or "arm mean")
        est, ci = _float(r["estimate"]), [_float(v) for v in r["ci"]]
        if math.isfinite(est):
            ax.errorbar(est, level, xerr=[[est - ci[0]], [ci[1] - est]] if all(
                map(math.isfinite, ci)) else None, fmt="D", color=style["color"], ms=5,
                capsize=3, mfc="white")
    ax.axhline(level, color="grey", lw=0.8, ls=":")
    _shade(ax, claimed_interval(crossings[0][1]))
    low, high = ax.get_ylim()
    if low >= -0.1 and high <= 1.1:  # a share: the whole [0, 1]
        ax.set_ylim(-0.03, 1.03)
    x_metric = res["criterion"].get("x")
    ax.set_xlabel(f"x: arm mean of {x_metric['curve']}" if isinstance(x_metric, dict)
                  and x_metric.get("curve") else "x: the arm's point")
    ax.set_ylabel(textwrap.fill(f"arm mean of {res['metric']['label']}", 40))
    ax.set_title(f"arm means with {crossings[0][1]['ci_level'] * 100:.4g}% CI band (Wilson for "
                 f"a 0/1 metric)\ndiamond: where the mean crosses {level:g}, with its CI")
    ax.legend(loc="best", ncol=2 if len(crossings) > 4 else 1)
    return fig


def trend_figure(data: FigureData) -> Figure | None:
    """A family's fitted trend (e.g. the critical fraction r_c against p): each member's
    estimate and CI against its x, and the fitted law (log–log axes for a power law)."""
    trend = (data.result.get("family") or {}).get("trend")
    if not trend:
        return None
    members = {m: r for m, r, _ in _members(data.result)}
    points = [(float(trend["x"][m]), _float(members[m]["estimate"]),
               *(_float(v) for v in members[m]["ci"])) for m in trend["x"] if m in members]
    points = [p for p in points if all(map(math.isfinite, p))]
    if len(points) < 2:
        return None
    x, est, lo, hi = np.array(sorted(points)).T
    fig, (ax,) = _new(width=6.0, height=4.2)
    ax.errorbar(x, est, yerr=[est - lo, hi - est], fmt="o", color="black", capsize=3,
                label=f"member estimate, {trend['ci_level'] * 100:.4g}% CI")
    if trend.get("fitted"):
        grid = np.geomspace(x.min(), x.max(), 100) if trend["fit"] == "power" else \
            np.linspace(x.min(), x.max(), 100)
        if trend["fit"] == "power":
            fitted, law = trend["prefactor"] * grid ** trend["slope"], \
                f"fit: {trend['prefactor']:.3g} x^{trend['slope']:.3f}"
        else:
            fitted, law = trend["intercept"] + trend["slope"] * grid, \
                f"fit: {trend['intercept']:.3g} + {trend['slope']:.3g} x"
        ax.plot(grid, fitted, color="#0072B2", ls="--", label=law)
    if trend["fit"] == "power":
        _log_axis(ax, "x")
        _log_axis(ax, "y")
    crit = data.result["criterion"]
    ax.set_xlabel("x of each member (" + ", ".join(m for m in trend["x"]) + ")")
    ax.set_ylabel(next(iter(members.values()))["effect_label"]
                  if crit["name"] != "crossing" else "crossing x (e.g. r_c)")
    ax.set_title(f"trend across members ({trend['fit']} fit)")
    ax.legend()
    return fig


FIGURES: dict[str, FigureSpec] = {
    "curves": FigureSpec("curves.png", "accuracy curves per arm: median across seeds and "
                         "inter-quartile band, log step axis from the first evaluation after "
                         "step 0", curves_figure),
    "survival": FigureSpec("survival.png", "Kaplan–Meier curves (| = a seed censored at the "
                           "budget)", survival_figure),
    "values": FigureSpec("values.png", "per-seed values of the metric", values_figure),
    "seed pairs": FigureSpec("pairs.png", "per-seed pairs of the paired analysis (one line per "
                             "seed)", pairs_figure),
    "forest": FigureSpec("forest.png", "forest plot: each member's effect and CI, the claimed "
                         "region shaded", forest_figure),
    "phase map": FigureSpec("phase_map.png", "phase diagram: each cell's most common phase and "
                            "its share of the seeds", phase_map_figure),
    "crossing": FigureSpec("crossing.png", "arm means against x with their CI band (a 0/1 "
                           "metric's mean is a share, e.g. P(nullity = 2)), the crossing and "
                           "its CI", crossing_figure),
    "trend": FigureSpec("trend.png", "members' estimates against x with the fitted trend (e.g. "
                        "r_c against p)", trend_figure),
    "probes": FigureSpec("probes.png", "probe traces: median across seeds and inter-quartile "
                         "band, log step axis", probes_figure),
}


def png_bytes(fig: Figure) -> bytes:
    """The figure as a palette-reduced PNG, and closed."""
    with plt.rc_context(_STYLE):
        fig.tight_layout()
        # tight_layout leaves a placeholder layout engine, for which savefig draws the
        # figure twice (the first time only to lay it out again): half a report's time
        fig.set_layout_engine(None)
        png = io.BytesIO()
        fig.savefig(png, format="png")
    plt.close(fig)
    return palette_png(png.getvalue())


_MPL_MARKER = {"circle": "o", "square": "s", "triangle": "^", "diamond": "D"}


def forest_png(rows: list[Entry], title: str) -> bytes | None:
    """A forest plot of `rows` on the shared axis (`report.forest`) as a PNG, one line per
    entry with its verdict at the right; None when none has a place on it."""
    placed = [e for e in rows if e.placement is not None]
    if not placed:
        return None
    markers = paper_markers([e.arxiv for e in rows])
    fig, (ax,) = _new(width=8.2, height=max(1.9, 0.26 * len(placed) + 1.5))
    ax.axvspan(-AXIS_LIMIT - 0.2, 0, color="#1A7F37", alpha=0.08, lw=0)
    ax.axvline(0, color="#333", lw=1)
    for i, e in enumerate(placed):
        p = e.placement
        assert p is not None
        colour = VERDICT_COLOUR.get(e.verdict, "#000")
        ax.plot([p.lo, p.hi], [i, i], color=colour, lw=1.6, ls="--" if e.critic else "-")
        for open_, end, m in ((p.open_lo, p.lo, "<"), (p.open_hi, p.hi, ">")):
            if open_:
                ax.plot(end, i, m, color=colour, ms=5)
        ax.plot(p.estimate, i, _MPL_MARKER[markers[e.arxiv]], color=colour, ms=5.5,
                mfc=colour if e.paper_setting else "white", mew=1.3)
        side = f" (favours {SIDE_WORDS[e.favours]})" if e.favours else ""
        ax.annotate(e.verdict + side, (1.01, i), xycoords=("axes fraction", "data"),
                    va="center", fontsize=7, color=colour, annotation_clip=False)
    ax.set_yticks(range(len(placed)))
    ax.set_yticklabels([e.label + ("" if e.paper_setting else f" [{e.scale}]")
                        for e in placed], fontsize=7)
    ax.set_ylim(-0.7, len(placed) - 0.3)
    ax.invert_yaxis()
    ax.set_xlim(-AXIS_LIMIT - 0.2, AXIS_LIMIT + 0.2)
    unplaced = [e.label for e in rows if e.placement is None]
    ax.set_xlabel("distance beyond the claimed region's boundary (region units; shaded: "
                  "inside the region)" + (
                      "\nnot drawn (no estimate on a region): " + textwrap.shorten(
                          ", ".join(unplaced), 150, placeholder=" …") if unplaced else ""),
                  fontsize=7.5)
    shapes = ", ".join(f"{m} arXiv:{a}" for a, m in markers.items())
    ax.set_title(f"{title}\nmarker: {shapes}; hollow: not the paper's setting; dashed: a "
                 "critic's claim", fontsize=8)
    return png_bytes(fig)


def draw_figures(data: FigureData, folder: Path) -> tuple[dict[str, str], dict[str, str]]:
    """Draw every registered figure that applies into `folder`; returns {name: file} and
    {name: caption} of those drawn, and removes a stale file of one that no longer applies."""
    files, captions = {}, {}
    for name, spec in FIGURES.items():
        fig = spec.draw(data)
        path = folder / spec.file
        if fig is None:
            path.unlink(missing_ok=True)
            continue
        write_atomic(path, png_bytes(fig))
        files[name], captions[name] = spec.file, spec.caption
    return files, captions
