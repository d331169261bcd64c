"""Tests that pin what the mutation run of ``grokverify/stats/survival.py`` (mutmut) found
unpinned in the Kaplan-Meier median, the restricted mean time (RMST) and their bootstrap helpers.

What is pinned, and how the expected values were derived:

* the KM median convention at the exact edge of its tolerance: a 2048-seed sample whose KM curve
  is, as a rational number, exactly 1/2 - 2**-26 = 0.5 - HALF_TOL at one event time (checked
  with ``fractions.Fraction``), and whose float S(t) is that double too (checked with
  statsmodels' own ``SurvfuncRight.surv_prob``, the same arithmetic); "within HALF_TOL" is
  inclusive, so the median is the midpoint with the next event time;
* coercions a caller sees: narrow unsigned time dtypes do not overflow, text-coded times and
  statuses read as numbers, a nonzero status counts as one event (a truthiness mask);
* the messages of the refusals (empty samples, mismatched shapes, tau <= 0), the empty-row
  result of ``km_median_batch``, a tau below 1, the default ``alpha`` of ``km_median``
  (statsmodels ``quantile_ci`` called directly), ``rmst_tau`` / ``rmst_columns`` on edge inputs
  and the words of ``estimate_bound`` (all worked by hand);
* the bootstrap details: ``n_extended_resamples`` of ``bootstrap_rmst_effect`` and the CI of
  ``bootstrap_median_effect`` with unreached resampled medians, against a brute-force loop over
  the same documented draws (``default_rng(seed).integers``, baseline first) with an exact
  ``Fraction`` KM median and order-statistic quantiles.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from statsmodels.duration.survfunc import SurvfuncRight

from grokverify.stats.base import ArmSample
from grokverify.stats.survival import (
    HALF_TOL,
    bootstrap_median_effect,
    bootstrap_rmst_effect,
    estimate_bound,
    km_median,
    km_median_batch,
    rmst,
    rmst_batch,
    rmst_columns,
    rmst_tau,
)


def arm(name: str, values: list[float], observed: list[bool] | None = None) -> ArmSample:
    v = np.asarray(values, dtype=float)
    o = np.ones(v.size, bool) if observed is None else np.asarray(observed, bool)
    return ArmSample(name, v, o, tuple(range(v.size)))


# --- the KM median at S(t) = 0.5 - HALF_TOL exactly ---------------------------------------------

def edge_sample() -> tuple[np.ndarray, np.ndarray]:
    """2048 seeds: 247 events at t=1 (S = 1801/2048), 777 censored at 2, 423 events at 3
    (S *= 601/1024), 569 censored at 4, one event at 5 (S *= 31/32, so S = (2**25 - 1) / 2**26
    = 1/2 - 2**-26), one event at 6 (S < 0.5), 30 censored at 7."""
    groups = [(1, 247, True), (2, 777, False), (3, 423, True), (4, 569, False), (5, 1, True),
              (6, 1, True), (7, 30, False)]
    times = np.concatenate([np.full(k, float(t)) for t, k, _ in groups])
    observed = np.concatenate([np.full(k, ev) for _, k, ev in groups])
    return times, observed


def test_edge_sample_sits_exactly_on_the_tolerance() -> None:
    times, observed = edge_sample()
    assert times.size == 2048
    s = Fraction(1)
    for u in np.unique(times):
        at_risk = int(np.sum(times >= u))
        deaths = int(np.sum((times == u) & observed))
        s *= Fraction(at_risk - deaths, at_risk)
        if u == 5:
            assert s == Fraction(1, 2) - Fraction(1, 2**26)
    assert HALF_TOL == 2.0**-26
    sf = SurvfuncRight(times, observed.astype(float))
    assert list(sf.surv_times) == [1.0, 3.0, 5.0, 6.0]
    assert sf.surv_prob[2] == 0.5 - 2.0**-26  # the float curve hits the boundary exactly


def test_km_median_at_half_minus_tolerance_is_the_midpoint() -> None:
    """|S(5) - 0.5| == HALF_TOL counts as S = 0.5 (inclusive), and S(5) is not below 0.5 - tol:
    the median is the midpoint of 5 and the next event time 6."""
    times, observed = edge_sample()
    assert km_median_batch(times[None], observed[None]).tolist() == [5.5]
    assert km_median(times, observed)[0] == 5.5


# --- km_median_batch: coercions, empty rows, refusals ---------------------------------------------

def test_km_median_batch_narrow_unsigned_times_do_not_overflow() -> None:
    """S = 0.5 exactly after 40000, so the median is (40000 + 50000) / 2 = 45000 (a sum taken in
    uint16 would wrap to 24464)."""
    t = np.array([[30000, 40000, 50000, 60000]], dtype=np.uint16)
    assert km_median_batch(t, np.ones((1, 4), bool)).tolist() == [45000.0]


def test_km_median_batch_status_is_a_truthiness_mask() -> None:
    """Status 2 (or any nonzero) is one event, as True: S(1) = 3/4, 2 censored, S(3) = 3/8 < 0.5,
    median 3 (counting 2 deaths at t=1 would give S(1) = 0.5 and a median of 2)."""
    t = np.array([[1.0, 2.0, 3.0, 4.0]])
    assert km_median_batch(t, np.array([[2, 0, 1, 1]])).tolist() == [3.0]
    assert km_median_batch(t, np.array([[True, False, True, True]])).tolist() == [3.0]


def test_km_median_batch_of_empty_rows_is_inf() -> None:
    out = km_median_batch(np.empty((3, 0)), np.empty((3, 0), bool))
    assert out.dtype == np.float64
    assert out.tolist() == [math.inf] * 3


def test_km_median_batch_refuses_mismatched_shapes() -> None:
    with pytest.raises(ValueError, match=r"^expected equal \(B, n\) arrays, got \(2, 3\) and "
                                         r"\(2, 4\)$"):
        km_median_batch(np.ones((2, 3)), np.ones((2, 4), bool))


# --- km_median ------------------------------------------------------------------------------------

KM_T = np.array([5.0, 8, 12, 13, 15, 18, 21, 22, 25, 30, 33, 40, 41, 45, 50, 52, 60, 65, 70, 80])
KM_D = np.array([1, 1, 0, 1, 1, 1, 0, 1, 1, 1, 1, 0, 1, 1, 1, 1, 0, 1, 1, 1], dtype=float)


def test_km_median_default_alpha_is_a_95_percent_ci() -> None:
    with np.errstate(all="ignore"):
        low, high = SurvfuncRight(KM_T, KM_D).quantile_ci(0.5, alpha=0.05, method="cloglog")
    assert math.isfinite(low) and math.isfinite(high)
    median, lo, hi = km_median(KM_T, KM_D)
    assert (lo, hi) == (float(low), float(high))
    assert (median, lo, hi) == km_median(KM_T, KM_D, alpha=0.05)


def test_km_median_reads_text_coded_times_and_status_as_numbers() -> None:
    """Times and statuses as text (as read from a CSV) are numbers: "9" < "10", status "0" is
    censored. Five seeds, one censored at 9: S(5) = 4/5, S(10) = 8/15, S(30) = 4/15 -> median
    30; the CI is statsmodels' on the numeric data."""
    times, status = ["10", "9", "30", "40", "5"], ["1", "0", "1", "1", "1"]
    num_t, num_d = np.array([10.0, 9, 30, 40, 5]), np.array([1.0, 0, 1, 1, 1])
    with np.errstate(all="ignore"):
        low, high = SurvfuncRight(num_t, num_d).quantile_ci(0.5, alpha=0.05, method="cloglog")
    expected = (30.0, float(low), math.inf if math.isnan(high) else float(high))
    assert km_median(times, status) == expected
    assert km_median(num_t, num_d) == expected
    assert km_median_batch(np.array([times]), np.array([[1, 0, 1, 1, 1]])).tolist() == [30.0]


def test_km_median_refuses_an_empty_sample() -> None:
    with pytest.raises(ValueError, match="^km_median needs at least one time$"):
        km_median(np.array([]), np.array([]))


# --- rmst / rmst_batch ----------------------------------------------------------------------------

def test_rmst_refuses_an_empty_sample() -> None:
    with pytest.raises(ValueError, match="^rmst needs at least one time$"):
        rmst(np.array([]), np.array([], bool), 5.0)


def test_rmst_refuses_complex_times() -> None:
    """Times are real: a complex list is refused, not cut to its real part."""
    with pytest.raises(TypeError):
        rmst([1 + 0j, 2 + 0j], [True, True], 3.0)


def test_rmst_batch_refusals() -> None:
    with pytest.raises(ValueError, match=r"^expected equal \(B, n\) arrays, got \(1, 3\) and "
                                         r"\(1, 4\)$"):
        rmst_batch(np.ones((1, 3)), np.ones((1, 4), bool), 5.0)
    with pytest.raises(ValueError, match=r"^expected equal \(B, n\) arrays, got \(3,\) and "
                                         r"\(3,\)$"):
        rmst_batch(np.ones(3), np.ones(3, bool), 5.0)
    with pytest.raises(ValueError, match=r"^tau must be > 0, got 0\.0$"):
        rmst_batch(np.ones((1, 3)), np.ones((1, 3), bool), 0.0)
    with pytest.raises(ValueError, match="^rmst_batch needs at least one time per row$"):
        rmst_batch(np.empty((2, 0)), np.empty((2, 0), bool), 5.0)


def test_rmst_batch_tau_below_one() -> None:
    """Event at 0.2 of two seeds: area 0.2 * 1 + (0.5 - 0.2) * 0.5 = 0.35."""
    out = rmst_batch(np.array([[0.2, 1.0]]), np.array([[True, False]]), 0.5)
    assert out.tolist() == [pytest.approx(0.35, abs=1e-15)]


def test_rmst_batch_narrow_unsigned_times_with_an_integer_tau() -> None:
    """uint16 times with tau = 100000 (beyond uint16): S = 1 up to 10, 1/2 after:
    10 + 0.5 * (100000 - 10) = 50005."""
    t = np.array([[10, 60000]], dtype=np.uint16)
    assert rmst_batch(t, np.array([[True, False]]), 100_000).tolist() == [50005.0]


def test_rmst_batch_status_is_a_truthiness_mask() -> None:
    """Status 2 is one event: S = 1, 3/4, 3/4, 3/8 on [0,1), [1,2), [2,3), [3,4): 2.875
    (two deaths at t=1 would give 2.25)."""
    t = np.array([[1.0, 2.0, 3.0, 4.0]])
    assert rmst_batch(t, np.array([[2, 0, 1, 1]]), 4.0).tolist() == [2.875]


# --- rmst_tau, rmst_columns, estimate_bound ------------------------------------------------------

def test_rmst_tau_without_seeds() -> None:
    tau, source = rmst_tau([arm("b", []), arm("t", [])], None)
    assert math.isnan(tau)
    assert source == "no seeds"


def test_rmst_columns_tau_zero_and_below_one() -> None:
    a = arm("b", [0.2, 1.0], [True, False])
    zero = rmst_columns(a, 0.0)
    assert list(zero) == ["RMST (τ = 0)"] and math.isnan(zero["RMST (τ = 0)"])
    assert rmst_columns(a, 0.5) == {"RMST (τ = 0.5)": pytest.approx(0.35, abs=1e-15)}


def test_estimate_bound_lower_when_the_treated_median_is_beyond_the_budget() -> None:
    """Baseline median 20 (S = 2/3, 1/3 at 10, 20); treated S stays at 2/3: its median is at
    least its largest time 60, so the ratio is at least 60 / 20 = 3."""
    base = arm("b", [10, 20, 30])
    treat = arm("t", [15, 40, 60], [True, False, False])
    assert estimate_bound(base, treat, "ratio") == (
        3.0, "lower", "≥ 3: the t median is beyond the budget (60 steps), so only a bound is "
                      "known")
    assert estimate_bound(base, treat, "difference") == (
        40.0, "lower", "≥ 40: the t median is beyond the budget (60 steps), so only a bound is "
                       "known")


# --- the bootstrap helpers, against a brute-force loop over the same draws ------------------------

def draws(n_base: int, n_treat: int, n_boot: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The documented unpaired draw: baseline indices first, then the treated arm's."""
    rng = np.random.default_rng(seed)
    b = rng.integers(0, n_base, size=(n_boot, n_base))
    return b, rng.integers(0, n_treat, size=(n_boot, n_treat))


def ends_censored_before(times: np.ndarray, observed: np.ndarray, tau: float) -> bool:
    last = max(times)
    return last < tau and not any(o for t, o in zip(times, observed, strict=True) if t == last)


def test_bootstrap_rmst_counts_resamples_extended_flat_to_tau() -> None:
    """A resample is extended when its largest time is censored (no event tied there) and below
    tau: here 5 or a censored-only 7 in the baseline, 6 or 9 in the treated arm, never a last
    time equal to tau (10) or one with an event."""
    tau, n_boot, seed = 10.0, 300, 7
    base = arm("b", [3, 5, 7, 7, 10], [True, False, True, False, False])
    treat = arm("t", [4, 6, 9, 10, 10], [True, False, False, True, False])
    bi, ti = draws(base.n, treat.n, n_boot, seed)
    expected = sum(ends_censored_before(a.values[row], a.observed[row], tau)
                   for a, idx in ((base, bi), (treat, ti)) for row in idx)
    per_kind = [sum(ends_censored_before(base.values[r], base.observed[r], tau) for r in bi),
                sum(ends_censored_before(treat.values[r], treat.observed[r], tau) for r in ti)]
    assert 0 < per_kind[0] < n_boot and 0 < per_kind[1] < n_boot  # both kinds occur
    _, _, details = bootstrap_rmst_effect(base, treat, "ratio", tau, n_boot, seed, 0.95)
    assert details["n_extended_resamples"] == expected


def km_median_exact(times: np.ndarray, observed: np.ndarray) -> float:
    """KM median by the module's convention with exact rational S (no tolerance needed)."""
    s, half, below = Fraction(1), None, None
    for u in sorted(set(times.tolist())):
        deaths = sum(1 for t, o in zip(times, observed, strict=True) if t == u and o)
        if not deaths:
            continue
        s *= Fraction(int(np.sum(times >= u)) - deaths, int(np.sum(times >= u)))
        if s == Fraction(1, 2) and half is None:
            half = u
        if s < Fraction(1, 2):
            below = u
            break
    if half is not None:
        return (half + (below if below is not None else float(max(times)))) / 2
    return math.inf if below is None else float(below)


def order_stat(x: list[float], q: float) -> float:
    """Inverted-CDF quantile: the ceil(q n)-th smallest value."""
    xs = sorted(x)
    return xs[max(math.ceil(q * len(xs)), 1) - 1]


def test_bootstrap_median_ci_bounds_unreached_medians_by_each_resamples_largest_time() -> None:
    """Baseline all events (median always reached); the treated arm has one early event and
    censored seeds of different lengths, so most resampled treated medians are unreached: their
    lower end is that resample's own largest time over the baseline median."""
    n_boot, seed, level = 399, 11, 0.9
    base = arm("b", [10, 20, 30, 40, 50])
    treat = arm("t", [15, 25, 35, 60, 80, 100], [True] + [False] * 5)
    bi, ti = draws(base.n, treat.n, n_boot, seed)
    lows, highs = [], []
    for rb, rt in zip(bi, ti, strict=True):
        b_med = km_median_exact(base.values[rb], base.observed[rb])
        t_med = km_median_exact(treat.values[rt], treat.observed[rt])
        t_lo = float(treat.values[rt].max()) if math.isinf(t_med) else t_med
        lows.append(t_lo / b_med)
        highs.append(t_med / b_med)
    alpha = 1 - level
    expected = (order_stat(lows, alpha / 2), order_stat(highs, 1 - alpha / 2))
    assert len(set(lows)) > 5  # the lower ends differ between resamples
    _, ci, details = bootstrap_median_effect(base, treat, "ratio", n_boot, seed, level)
    assert ci == pytest.approx(expected, rel=1e-12)
    assert details["n_undefined_resamples"] == 0

