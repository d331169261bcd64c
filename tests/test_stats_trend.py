"""The trend through a family's member estimates (grokverify/stats/trend.py): exact power laws
and lines, the CI's se read off each member's CI, scatter that widens (never narrows) the CIs,
members left out, and the goodness of fit, against numpy and scipy."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from conftest import Has
from scipy import stats

from grokverify.stats.trend import describe, fit_trend

Z95 = float(stats.norm.ppf(0.975))


def _points(xs: list[float], ys: list[float], rel_se: float = 0.02, level: float = 0.95,
            power: bool = True) -> dict[str, Any]:
    """Members whose CIs are symmetric about the estimate on the fit's scale, se given."""
    out = {}
    for i, (x, y) in enumerate(zip(xs, ys, strict=True)):
        half = Z95 * rel_se
        ci = (y * math.exp(-half), y * math.exp(half)) if power else (y - half, y + half)
        out[f"m{i}"] = (x, y, ci, level)
    return out


def test_an_exact_power_law_is_recovered_with_a_ci_from_the_members_ses() -> None:
    xs = [10, 15, 20, 30, 40, 60]
    ys = [2.5 * x ** -0.8 for x in xs]
    got = fit_trend(_points(xs, ys), "power", 0.95)
    assert got["fitted"] and got["slope"] == pytest.approx(-0.8, abs=1e-12)
    assert got["prefactor"] == pytest.approx(2.5, rel=1e-12)
    assert got["chi2"] == pytest.approx(0, abs=1e-18) and got["scale"] == 1.0
    # no scatter: the CI is the WLS one from the members' se (0.02 on the log scale), t on 4 df
    lx = np.log(xs)
    se_b = 0.02 / math.sqrt(((lx - lx.mean()) ** 2).sum())
    half = stats.t.ppf(0.975, 4) * se_b
    assert got["slope_ci"] == pytest.approx([-0.8 - half, -0.8 + half], rel=1e-9)
    assert got["predicted"]["m2"] == pytest.approx(ys[2], rel=1e-12)
    assert got["x"] == {f"m{i}": x for i, x in enumerate(xs)}
    assert describe(got).startswith("estimate ≈ 2.5 · x^-0.800, exponent 95% CI [")


def test_scatter_beyond_the_cis_widens_them_and_the_fit_p_says_so() -> None:
    """Against numpy's polyfit with weights and scipy's χ²: the same slope, χ², and the
    covariance scaled by χ²/df."""
    xs = np.array([10.0, 15, 20, 30, 40, 60])
    ys = 2.5 * xs ** -0.8 * np.exp([0.05, -0.04, 0.03, -0.05, 0.04, -0.02])
    got = fit_trend(_points(xs.tolist(), ys.tolist()), "power", 0.95)
    w = np.full(6, 1 / 0.02)  # polyfit weights are 1/se
    (b, a), cov = np.polyfit(np.log(xs), np.log(ys), 1, w=w, cov="unscaled")
    resid = np.log(ys) - (a + b * np.log(xs))
    chi2 = float(((resid / 0.02) ** 2).sum())
    assert got["slope"] == pytest.approx(b, rel=1e-10)
    assert got["chi2"] == pytest.approx(chi2, rel=1e-10) and chi2 / 4 > 1
    assert got["scale"] == pytest.approx(chi2 / 4)
    half = stats.t.ppf(0.975, 4) * math.sqrt(cov[0, 0] * chi2 / 4)
    assert got["slope_ci"] == pytest.approx([b - half, b + half], rel=1e-9)
    assert got["p_fit"] == pytest.approx(stats.chi2.sf(chi2, 4), rel=1e-10) and \
        got["p_fit"] < 0.001
    tight = fit_trend(_points(xs.tolist(), (2.5 * xs ** -0.8).tolist()), "power", 0.95)
    assert np.ptp(got["slope_ci"]) > np.ptp(tight["slope_ci"])


def test_a_linear_trend_and_members_left_out() -> None:
    pts = _points([1, 2, 3, 4], [1.0, 3.0, 5.0, 7.0], rel_se=0.1, power=False)
    pts["none"] = (5, math.nan, (math.nan, math.nan), 0.95)  # no estimate
    pts["open"] = (6, 11.0, (10.0, math.inf), 0.95)  # unbounded CI
    got = fit_trend(pts, "linear", 0.95)
    assert got["slope"] == pytest.approx(2) and got["intercept"] == pytest.approx(-1)
    assert got["members"] == ["m0", "m1", "m2", "m3"]
    assert set(got["left_out"]) == {"none", "open"}
    assert describe(got).startswith("estimate ≈ -1 + 2 · x, slope 95% CI [")
    neg = fit_trend({"a": (1, -1.0, (-2.0, -0.5), 0.95), **_points([1, 2, 3], [1, 2, 3])},
                    "power", 0.95)
    assert "not positive" in neg["left_out"]["a"]


def test_fewer_than_three_members_fit_nothing() -> None:
    got = fit_trend(_points([10, 20], [0.4, 0.2]), "power", 0.95)
    assert not got["fitted"] and "needs at least 3" in got["why"]
    assert describe(got) == Has("No trend is fitted", "2 member(s) with an estimate",
                                "a trend needs at least 3.")
    with pytest.raises(ValueError, match="power or linear"):
        fit_trend({}, "cubic", 0.95)
