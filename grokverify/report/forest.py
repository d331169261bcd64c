"""Forest plots across claims: each estimate and CI placed on one shared axis, the signed
distance beyond its claimed region's boundary (docs/verdicts.md, "The forest plot's axis"), so
that left of 0 supports, right of 0 refutes and a CI across 0 decides nothing, whatever the
criterion. Drawn as an SVG strip per table row (index.html) and as a figure (PNG).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from html import escape
from typing import Any

from grokverify.report.suite import side_of

AXIS_LIMIT = 3.0  # the axis shows [-3, 3] region units; beyond, an arrow at the edge
CRITIC_ROLES = ("falsifier", "skeptic", "referee", "inference")
VERDICT_COLOUR = {"SUPPORTED": "#1A7F37", "REFUTED": "#C0392B", "INCONCLUSIVE": "#B7950B",
                  "PARTIAL": "#B7950B", "NOT TESTED": "#7F7F7F", "FINDING": "#2166AC"}
# the i-th paper of a suite (sorted by arXiv id) is drawn with the i-th marker
PAPER_MARKERS = ("circle", "square", "triangle", "diamond")
MARKER_GLYPHS = {"circle": "●", "square": "■", "triangle": "▲", "diamond": "◆"}  # in text
# what the axis means, where a page shows a forest plot
AXIS_WORDS = ("each estimate and CI on one axis, its distance beyond the claimed region's "
              "boundary (0): left of it supports, right of it refutes (docs/verdicts.md, \"The "
              "forest plot's axis\").")

_WITHIN = re.compile(r"within \[([^,\]]+), ([^\]]+)\]")
_SIDE = re.compile(r"(<=|>=) ?(-?[0-9][0-9.e+-]*)")


def _float(x: Any) -> float:
    """A result.json number: "inf"/"-inf" as infinities, None as NaN."""
    return math.nan if x is None else float(x)


def claimed_interval(result: dict[str, Any]) -> tuple[float, float] | None:
    """The claimed region of a criterion result as an interval, read from its words
    ("ratio <= 0.8", "median within [0.5, 2]", "γ within [0.5, 1]"); None for an open
    question's estimate or a region it cannot read."""
    words = str(result.get("claimed_region") or "")
    if (m := _WITHIN.search(words)) is not None:
        try:
            return float(m[1]), float(m[2])
        except ValueError:
            return None
    if (m := _SIDE.search(words)) is not None:
        theta = _float(result.get("threshold")) if result.get("threshold") is not None \
            else float(m[2].rstrip(".e+-"))
        return (-math.inf, theta) if m[1] == "<=" else (theta, math.inf)
    return None


def is_ratio(result: dict[str, Any]) -> bool:
    """A ratio's region is read on a log scale (a factor of 2 above 1 is as far as one below)."""
    words = str(result.get("claimed_region") or "")
    return words.startswith(("ratio", "geometric mean"))


@dataclass(frozen=True)
class Placement:
    """An estimate and its CI on the shared axis (region units; <= 0 inside the region),
    clipped to ±AXIS_LIMIT; `open_lo`/`open_hi` mark an end beyond the axis."""

    estimate: float
    lo: float
    hi: float
    open_lo: bool
    open_hi: bool


def _distance(region: tuple[float, float], log: bool) -> Any:
    """x -> its signed distance beyond the region, in region units (half its width for an
    interval; for a one-sided region ln 2 on a log scale, else |θ| or 1 when θ is 0)."""
    lo, hi = (math.log(e) if log and e > 0 else (-math.inf if log else e) for e in region)

    def t(x: float) -> float:
        return (math.log(x) if x > 0 else -math.inf) if log else x

    if math.isfinite(lo) and math.isfinite(hi):
        mid, half = (lo + hi) / 2, (hi - lo) / 2
        return lambda x: (abs(t(x) - mid) - half) / half, mid
    theta = hi if math.isfinite(hi) else lo
    unit = math.log(2) if log else (abs(theta) or 1.0)
    sign = 1.0 if math.isfinite(hi) else -1.0
    return lambda x: sign * (t(x) - theta) / unit, None


def place(result: dict[str, Any]) -> Placement | None:
    """Where one criterion result lies on the shared axis; None without an estimate, a CI or
    a readable region (an open question's estimate has none)."""
    region = claimed_interval(result)
    ci = result.get("ci") or [None, None]
    est, a, b = _float(result.get("estimate")), _float(ci[0]), _float(ci[1])
    if region is None or any(math.isnan(v) for v in (est, a, b)):
        return None
    if math.isfinite(region[0]) and math.isfinite(region[1]) and not region[0] < region[1]:
        return None
    log = is_ratio(result) and (region[0] > 0 or not math.isfinite(region[0]))
    d, mid = _distance(region, log)
    with_nan = [d(v) for v in (a, b)]
    if mid is not None:  # an interval's distance folds at its middle
        t_lo = math.log(a) if log and a > 0 else (-math.inf if log else a)
        t_hi = math.log(b) if log and b > 0 else (-math.inf if log else b)
        lo, hi = (-1.0, max(with_nan)) if t_lo < mid < t_hi else sorted(with_nan)
    else:
        lo, hi = sorted(with_nan)
    e = d(est)

    def clip(v: float) -> float:
        return max(-AXIS_LIMIT, min(AXIS_LIMIT, v))

    return Placement(clip(e), clip(lo), clip(hi), lo < -AXIS_LIMIT, hi > AXIS_LIMIT)


@dataclass(frozen=True)
class Entry:
    """One row of a forest plot: a claim (or a family member) and how it is marked."""

    label: str
    arxiv: str
    critic: bool  # a critic's claim (falsifier, skeptic, referee, inference), not the paper's
    paper_setting: bool
    scale: str
    verdict: str
    placement: Placement | None
    favours: str | None = None  # the side its verdict favours (paper, critic, neither)


def entries(row: dict[str, Any]) -> list[Entry]:
    """A suite row's forest entries (`report.suite.suite_row`): one, or one per family member
    ("claim: member"), each with the side its verdict favours."""
    common = {"arxiv": row["arxiv"], "critic": row["role"] in CRITIC_ROLES,
              "paper_setting": bool(row["paper_setting"]), "scale": row["scale"]}
    claim_sides = row.get("sides") or {}
    if row.get("members"):
        return [Entry(f"{row['id']}: {m['member']}", verdict=m["verdict"], placement=place(m),
                      favours=side_of(m["verdict"], claim_sides), **common)
                for m in row["members"]]
    return [Entry(row["id"], verdict=row["verdict"], placement=place(row),
                  favours=row.get("favours"), **common)]


def row_entries(row: dict[str, Any]) -> list[Entry]:
    """A row's entries and those of the same claim at the scale beside it (`report --beside`)."""
    return entries(row) + (entries(row["beside"]) if row.get("beside") else [])


def placement_text(rows: list[Entry]) -> tuple[str, float]:
    """The strip in words (index.md; the sort key in index.html): the estimate and CI on the
    shared axis, or a family's range of estimates."""
    placed = [e.placement for e in rows if e.placement is not None]
    if not placed:
        return "—", math.inf
    if len(rows) == 1:
        p = placed[0]
        return f"{p.estimate:+.2f} [{p.lo:+.2f}, {p.hi:+.2f}]", p.estimate
    ests = [p.estimate for p in placed]
    return f"{min(ests):+.2f} … {max(ests):+.2f} ({len(placed)} of {len(rows)})", min(ests)


def paper_markers(arxivs: list[str]) -> dict[str, str]:
    """arXiv id -> its marker, by sorted id."""
    return {a: PAPER_MARKERS[i % len(PAPER_MARKERS)]
            for i, a in enumerate(sorted(set(arxivs)))}


# ---------------------------------------------------------------- SVG strip (a table cell)

STRIP_WIDTH, STRIP_HEIGHT = 220, 16


_MARGIN = 9  # px each side, so that the axis' end labels fit


def _x(v: float, width: float) -> float:
    return (v + AXIS_LIMIT) / (2 * AXIS_LIMIT) * (width - 2 * _MARGIN) + _MARGIN


def _marker_svg(shape: str, x: float, y: float, r: float, colour: str, filled: bool) -> str:
    fill = colour if filled else "#fff"
    style = f'fill="{fill}" stroke="{colour}" stroke-width="1.4"'
    if shape == "square":
        return f'<rect x="{x - r:.1f}" y="{y - r:.1f}" width="{2 * r:.1f}" ' \
               f'height="{2 * r:.1f}" {style}/>'
    if shape in ("triangle", "diamond"):
        pts = ([(x, y - r), (x + r, y + r), (x - r, y + r)] if shape == "triangle" else
               [(x, y - r), (x + r, y), (x, y + r), (x - r, y)])
        return '<polygon points="' + " ".join(f"{a:.1f},{b:.1f}" for a, b in pts) + \
            f'" {style}/>'
    return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{r:.1f}" {style}/>'


def strip_svg(rows: list[Entry], markers: dict[str, str], width: int = STRIP_WIDTH,
              height: int = STRIP_HEIGHT) -> str:
    """An inline SVG of a table row's entries on the shared axis (one line each, stacked):
    the region's boundary at 0, each CI a line (dashed: a critic's claim), its estimate a
    marker (hollow: not the paper's setting), coloured by verdict."""
    placed = [e for e in rows if e.placement is not None]
    title = "; ".join(f"{e.label}: {e.verdict}" + (
        "" if e.placement else " (no estimate on a region)") for e in rows)
    zero = _x(0.0, width)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title, quote=True)}">'
             f"<title>{escape(title)}</title>",
             f'<rect x="{_MARGIN}" y="0" width="{zero - _MARGIN:.1f}" height="{height}" '
             'fill="#E9F5EC"/>',
             f'<line x1="{zero:.1f}" y1="0" x2="{zero:.1f}" y2="{height}" stroke="#555" '
             'stroke-width="1"/>']
    if not placed:
        parts.append(f'<text x="{zero + 4:.1f}" y="{height - 4}" font-size="9" fill="#555">'
                     "no estimate on a region</text>")
    step = (height - 4) / max(len(placed), 1)
    r = min(3.5, max(1.2, step / 2.2))
    for i, e in enumerate(placed):
        p = e.placement
        assert p is not None
        y = 2 + step * (i + 0.5)
        colour = VERDICT_COLOUR.get(e.verdict, "#000")
        dash = ' stroke-dasharray="3 2"' if e.critic else ""
        a, b = _x(p.lo, width), _x(p.hi, width)
        parts.append(f'<line x1="{a:.1f}" y1="{y:.1f}" x2="{b:.1f}" y2="{y:.1f}" '
                     f'stroke="{colour}" stroke-width="{1.8 if len(placed) < 4 else 1.1}"'
                     f"{dash}/>")
        for open_, end, sign in ((p.open_lo, a, -1), (p.open_hi, b, 1)):
            if open_:
                parts.append(f'<polygon points="{end + sign * 4:.1f},{y:.1f} {end:.1f},'
                             f'{y - 2.5:.1f} {end:.1f},{y + 2.5:.1f}" fill="{colour}"/>')
        parts.append(_marker_svg(markers.get(e.arxiv, "circle"), _x(p.estimate, width), y, r,
                                 colour, e.paper_setting))
    return "".join(parts) + "</svg>"


def axis_svg(width: int = STRIP_WIDTH) -> str:
    """The strips' shared axis, for the column's header: ticks at -3 … 3, 0 the boundary."""
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="14" '
             f'viewBox="0 0 {width} 14" role="img" aria-label="axis: region units, 0 = the '
             'claimed region\'s boundary">']
    for tick in range(-int(AXIS_LIMIT), int(AXIS_LIMIT) + 1):
        x = _x(tick, width)
        parts.append(f'<text x="{x:.1f}" y="11" font-size="9" text-anchor="middle" '
                     f'fill="#333">{tick:+d}</text>' if tick else
                     f'<text x="{x:.1f}" y="11" font-size="9" text-anchor="middle" '
                     f'font-weight="700" fill="#000">0</text>')
    return "".join(parts) + "</svg>"
