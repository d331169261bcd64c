"""A trend through a family's member estimates (r_c(p) against p for paper 2's open question):
weighted least squares, each member weighted by 1/se² with its se read off its CI as if normal,
the covariance scaled by max(1, χ²/df) (docs/verdicts.md, "Families")."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import stats

FITS = ("power", "linear")


def fit_trend(points: dict[str, tuple[float, float, tuple[float, float], float]], fit: str,
              ci_level: float) -> dict[str, Any]:
    """The fitted trend of {member: (x, estimate, ci, member_ci_level)}; ``fitted`` false with
    ``why`` when fewer than 3 members can enter."""
    if fit not in FITS:
        raise ValueError(f"a trend is fitted as {' or '.join(FITS)}, not {fit!r}")
    power = fit == "power"
    used: dict[str, tuple[float, float, float]] = {}  # member -> (x, y, se)
    left_out: dict[str, str] = {}
    for member, (x, est, (lo, hi), level) in points.items():
        values = (x, est, lo, hi)
        if not all(math.isfinite(v) for v in values):
            left_out[member] = "no estimate or an unbounded CI"
            continue
        if power and min(values) <= 0:
            left_out[member] = "x, the estimate or its CI not positive (a power fit takes logs)"
            continue
        z = float(stats.norm.ppf(0.5 + level / 2))
        f = math.log if power else float
        se = (f(hi) - f(lo)) / (2 * z)  # a percentile CI's ends transform with the estimate
        if not se > 0:
            left_out[member] = "a CI of zero width"
            continue
        used[member] = (f(x), f(est), se)
    out: dict[str, Any] = {
        "fit": fit, "ci_level": ci_level, "members": list(used), "left_out": left_out,
        "x": {m: v[0] for m, v in points.items()},
        "method": ("weighted least squares of log(estimate) on log(x)" if power else
                   "weighted least squares of the estimate on x")
        + ", weights 1/se², se = CI width / (2 z) (on the log scale for a power fit); "
          "covariance scaled by max(1, χ²/df); Student-t CIs on df = n - 2",
    }
    if len(used) < 3:
        return {**out, "fitted": False,
                "why": f"{len(used)} member(s) with an estimate; a trend needs at least 3"}
    xs, ys, ses = (np.array(v, dtype=float) for v in zip(*used.values(), strict=True))
    design = np.column_stack([np.ones_like(xs), xs])
    w = 1.0 / ses ** 2
    normal = design.T @ (w[:, None] * design)
    beta = np.linalg.solve(normal, design.T @ (w * ys))
    resid = ys - design @ beta
    chi2 = float((w * resid ** 2).sum())
    df = len(xs) - 2
    scale = max(1.0, chi2 / df)
    cov = np.linalg.inv(normal) * scale
    t = float(stats.t.ppf(0.5 + ci_level / 2, df))
    half = t * np.sqrt(np.diag(cov))
    (a, b), (ha, hb) = beta.tolist(), half.tolist()
    return {**out, "fitted": True, "intercept": a, "intercept_ci": [a - ha, a + ha],
            "slope": b, "slope_ci": [b - hb, b + hb], "chi2": chi2, "df": df,
            "scale": scale, "p_fit": float(stats.chi2.sf(chi2, df)),
            "prefactor": math.exp(a) if power else None,
            "predicted": {m: (math.exp(a + b * x) if power else a + b * x)
                          for m, (x, _, _) in used.items()}}


def describe(trend: dict[str, Any]) -> str:
    """One sentence for a report: the fitted law and its exponent's (or slope's) CI."""
    if not trend["fitted"]:
        return f"No trend is fitted: {trend['why']}."
    lo, hi = trend["slope_ci"]
    level = f"{trend['ci_level']:.0%}"
    fit_p = f"goodness of fit χ² = {trend['chi2']:.2f} on {trend['df']} df, p = " \
            f"{trend['p_fit']:.3g}"
    if trend["fit"] == "power":
        return (f"estimate ≈ {trend['prefactor']:.3g} · x^{trend['slope']:.3f}, exponent "
                f"{level} CI [{lo:.3f}, {hi:.3f}] ({fit_p}; {len(trend['members'])} members).")
    return (f"estimate ≈ {trend['intercept']:.3g} + {trend['slope']:.3g} · x, slope {level} CI "
            f"[{lo:.3g}, {hi:.3g}] ({fit_p}; {len(trend['members'])} members).")
