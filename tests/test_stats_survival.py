"""survival_compare (grokverify/stats/survival.py): the Kaplan-Meier median and the restricted
mean time (RMST), the log-rank test, the bootstraps of their effects, and the criterion's results
against hand-computed answers, statsmodels and scipy."""

from __future__ import annotations

import math
import warnings
from fractions import Fraction
from functools import partial
from typing import Any

import numpy as np
import pydantic
import pytest
from conftest import P_METHOD, Has, hesterberg_level, lognormal_arm, logrank_oracle
from statsmodels.duration.survfunc import SurvfuncRight, survdiff

from grokverify.claim.criteria import SurvivalCompareParams
from grokverify.stats.base import ArmSample, CriterionResult, Verdict, judge, verdict_from_p
from grokverify.stats.common import CORRELATION_METHOD, EXPANDED_LEVEL_RULE
from grokverify.stats.simulate import make_arm
from grokverify.stats.survival import (
    CENSORING,
    HALF_TOL,
    KM_MEDIAN_CONVENTION,
    RMST_CONVENTION,
    TAU_FROM_DATA,
    bootstrap_median_effect,
    bootstrap_rmst_effect,
    estimate_bound,
    km_median,
    km_median_batch,
    logrank,
    median_effect,
    rmst,
    rmst_batch,
    rmst_columns,
    rmst_tau,
    run_survival_compare,
)
from grokverify.stats.verdict import format_ci, format_number

INF = math.inf
NAME = "survival_compare"
TEST = "log-rank (statsmodels survdiff)"
PAIRED_BOOT = Has("percentile, seed indices resampled with replacement jointly across the two "
                  "arms", "keeps its time and censoring in both")
UNPAIRED_BOOT = "percentile, stratified by arm, seeds resampled with replacement"
UNREACHED_BOUNDS = Has("a resample's KM median that is not reached lies in [largest time of that "
                       "resample, inf)", "treated at its lower bound, baseline at its upper",
                       "(treated upper, baseline lower)", "takes an unreached median as inf",
                       "CI low from the resamples' lower effect ends",
                       "CI high from their upper ends")
RESULT_DETAILS = {
    "km_median_convention": KM_MEDIAN_CONVENTION,
    "arm_median_ci": "statsmodels quantile_ci, cloglog transform",
    "logrank": Has("unpaired (both arms' seeds as independent samples)", "the CI decides"),
}
lognormal = partial(lognormal_arm, sigma=0.5)  # steps to threshold of a wide spread


def survival(**kw: Any) -> SurvivalCompareParams:
    """survival_compare of treated 't' against baseline 'b', "t faster" unless said otherwise."""
    return SurvivalCompareParams.model_validate(
        {"name": NAME, "baseline": "b", "treated": "t", "direction": "less", **kw})


def rmst_params(**kw: Any) -> SurvivalCompareParams:
    return survival(**{"summary": "rmst", "min_effect": 0.2, "n_boot": 400, **kw})


def compare(b: ArmSample, t: ArmSample, **kw: Any) -> CriterionResult:
    return judge(survival(**kw), {"b": b, "t": t})


def computed(b: ArmSample, t: ArmSample, **kw: Any) -> CriterionResult:
    """The criterion's own result, before `judge` sets aside an interval that does not hold
    (fewer than MIN_MEDIAN_SEEDS seeds an arm): what its computation gives."""
    return run_survival_compare(survival(**kw), {"b": b, "t": t})


def random_censored(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Integer times with many ties; some censored at the budget, some events exactly at it."""
    budget = float(rng.integers(2, 15))
    times = rng.integers(0, int(budget) + 1, size=n).astype(float)
    observed = rng.random(n) < rng.uniform(0.2, 1.0)
    at_budget = rng.random(n) < 0.25
    times[at_budget] = budget
    observed[at_budget] = rng.random(int(at_budget.sum())) < 0.5
    return times, observed


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


def split(details: dict[str, Any], *keys: str) -> dict[str, Any]:
    """Remove and return the float entries `keys` (compared with a tolerance)."""
    return {k: details.pop(k) for k in keys}


def ref_rmst(times: Any, observed: Any, tau: float) -> float:
    """Loop reference: KM product over distinct event times, area of the step curve up to tau,
    the last value carried to tau."""
    t = np.asarray(times, dtype=float)
    o = np.asarray(observed, dtype=bool)
    area, surv, prev = 0.0, 1.0, 0.0
    for u in np.unique(t):
        if u >= tau:
            break
        area += surv * (u - prev)
        prev = u
        at_risk = np.sum(t >= u)
        deaths = np.sum((t == u) & o)
        surv *= 1.0 - deaths / at_risk
    return area + surv * (tau - prev)


# ---------------------------------------------------------------- km_median


@pytest.mark.parametrize(
    ("times", "observed", "expected"),
    [
        # S = .75, .5, .25, 0 -- S(2) = 0.5 (the float product is 0.5000000000000001, within
        # the tolerance): the midpoint of 2 and the next event time 3, as R's survfit.
        ([1, 2, 3, 4], [1, 1, 1, 1], 2.5),
        ([1, 2], [1, 1], 1.5),  # S(1) = 0.5 exactly: the midpoint of 1 and the next event
        ([1, 2, 3], [1, 1, 1], 2.0),  # S = 2/3, 1/3
        # S(1)=.8; t=2: one event, one censoring, n=4 -> .6; t=3: n=2 -> .3
        ([1, 2, 2, 3, 4], [1, 0, 1, 1, 0], 3.0),
        ([5, 5, 5, 5], [0, 0, 0, 0], INF),  # all censored at the budget
        ([1] + [10] * 9, [1] + [0] * 9, INF),  # S stays at 0.9: beyond the budget
        ([1, 2, 10, 10, 10, 10], [1, 1, 0, 0, 0, 0], INF),  # S = 5/6, 4/6, then censored
    ],
)
def test_km_median_hand_cases(times: list[float], observed: list[int], expected: float) -> None:
    median, low, high = km_median(np.array(times, float), np.array(observed, bool))
    assert median == expected
    assert low <= high
    if math.isinf(expected):
        assert math.isinf(high)


def test_km_median_all_censored_ci_is_beyond_budget() -> None:
    assert km_median(np.full(6, 100.0), np.zeros(6, bool)) == (INF, INF, INF)


def test_km_median_undefined_ci_with_finite_median_is_uninformative() -> None:
    """statsmodels gives a NaN CI when every seed has its event at one step (Greenwood se NaN)."""
    assert km_median(np.full(3, 5.0), np.ones(3, bool)) == (5.0, 0.0, INF)


@pytest.mark.parametrize("seed", range(5))
def test_km_median_matches_statsmodels(seed: int) -> None:
    rng = np.random.default_rng(seed)
    times, observed = random_censored(rng, 30)
    sf = SurvfuncRight(times, observed.astype(float))
    with np.errstate(all="ignore"):
        low, high = sf.quantile_ci(0.5, alpha=0.1, method="cloglog")
    median, my_low, my_high = km_median(times, observed, alpha=0.1)
    expected_median = sf.quantile(0.5)
    assert median == (INF if np.isnan(expected_median) else expected_median)
    assert my_high == (INF if np.isnan(high) else high)
    if not np.isnan(low):
        assert my_low == low


@pytest.mark.parametrize(("times", "observed", "expected"), [
    ([500, 736, 1008, 1200], [1, 1, 1, 1], 872.0),  # S(736) = 1/2: midpoint with 1008
    ([500, 736, 1008, 1200], [1, 1, 0, 0], 968.0),  # flat at 1/2 to the end: with the largest
    ([100, 200, 300, 400, 500, 600], [1, 1, 1, 1, 1, 1], 350.0),  # 3/6 in floats: 0.5000...01
    ([100, 200, 300, 400, 500], [1, 1, 1, 1, 1], 300.0),  # odd n: never exactly 1/2
])
def test_km_median_at_exactly_one_half(times: list[float], observed: list[int],
                                       expected: float) -> None:
    t, o = np.array(times, float), np.array(observed, bool)
    assert km_median(t, o)[0] == expected
    assert km_median_batch(t[None], o[None])[0] == expected


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


# ---------------------------------------------------------------- km_median_batch


def test_km_median_batch_equals_statsmodels_row_by_row() -> None:
    rng = np.random.default_rng(123)
    for n in (1, 2, 5, 12, 31):
        rows = [random_censored(rng, n) for _ in range(150)]
        times = np.stack([r[0] for r in rows])
        observed = np.stack([r[1] for r in rows])
        batch = km_median_batch(times, observed)
        single = np.array([km_median(t, o)[0] for t, o in rows])
        np.testing.assert_array_equal(batch, single)
        assert np.isinf(batch).any() and np.isfinite(batch).any()


def test_km_median_batch_reproduces_rounding_at_exact_half() -> None:
    """With n even and no censoring S hits 0.5 exactly; float rounding picks the median."""
    for n in range(1, 80):
        times = np.arange(1.0, n + 1)
        observed = np.ones(n, bool)
        got = km_median_batch(times[None], observed[None])[0]
        assert got == km_median(times, observed)[0], n


def test_km_median_batch_event_and_censoring_tied_at_budget() -> None:
    times = np.array([[3.0, 5, 5, 5, 5, 5], [5, 5, 5, 5, 5, 5], [1, 2, 5, 5, 5, 5]])
    observed = np.array([[1, 1, 1, 1, 0, 0], [0, 0, 0, 0, 0, 0], [1, 1, 1, 1, 0, 0]], bool)
    expected = [km_median(t, o)[0] for t, o in zip(times, observed, strict=True)]
    np.testing.assert_array_equal(km_median_batch(times, observed), expected)
    # row 0: S(3) = 5/6, then 3 events and 2 censorings at the budget: S(5) = 5/6 * 2/5 = 1/3
    assert expected == [5.0, INF, 5.0]


def test_km_median_batch_rejects_bad_shapes() -> None:
    with pytest.raises(ValueError):
        km_median_batch(np.ones(3), np.ones(3, bool))
    with pytest.raises(ValueError):
        km_median_batch(np.ones((2, 3)), np.ones((2, 2), bool))


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


# ---------------------------------------------------------------- the restricted mean time


@pytest.mark.parametrize(("times", "observed", "tau", "expected"), [
    # KM: S = 5/6 after 2; 4/6 after 3 (an event and a censored seed tied at 3: the censored one
    # is at risk there); 4/9 after 5; 6 censored; 0 after 8.
    ([2, 3, 3, 5, 6, 8], [1, 1, 0, 1, 0, 1], 10, 2 + 5 / 6 + 2 * 4 / 6 + 3 * 4 / 9),
    ([2, 3, 3, 5, 6, 8], [1, 1, 0, 1, 0, 1], 7, 2 + 5 / 6 + 2 * 4 / 6 + 2 * 4 / 9),
    ([2, 3, 3, 5, 6, 8], [1, 1, 0, 1, 0, 1], 2.5, 2 + 0.5 * 5 / 6),
    # two events tied at 1: S = 1/2, then 1/4 after 2; censored at 3, flat to tau.
    ([1, 1, 2, 3], [1, 1, 1, 0], 5, 1 + 0.5 * 1 + 0.25 * 3),
    # the curve ends censored below tau: its last value is carried to tau.
    ([1, 2, 4], [1, 0, 0], 6, 1 + 5 * 2 / 3),
])
def test_rmst_hand_values(times: list[float], observed: list[int], tau: float,
                          expected: float) -> None:
    assert rmst(times, observed, tau) == pytest.approx(expected, rel=1e-12)
    assert ref_rmst(times, observed, tau) == pytest.approx(expected, rel=1e-12)
    # the order of the seeds does not matter
    order = np.arange(len(times))[::-1]
    assert rmst(np.asarray(times)[order], np.asarray(observed)[order], tau) == pytest.approx(
        expected, rel=1e-12)


def test_rmst_is_the_mean_without_censoring() -> None:
    rng = np.random.default_rng(0)
    times = rng.integers(100, 400, size=25).astype(float)
    times[:5] = times[5]  # ties
    observed = np.ones(times.size, dtype=bool)
    assert rmst(times, observed, times.max()) == pytest.approx(times.mean(), rel=1e-12)
    assert rmst(times, observed, times.max() + 1000) == pytest.approx(times.mean(), rel=1e-12)
    # below the largest time it is the mean of min(T, tau)
    assert rmst(times, observed, 250.0) == pytest.approx(np.minimum(times, 250).mean(), rel=1e-12)


def test_rmst_batch_matches_the_loop_reference() -> None:
    rng = np.random.default_rng(1)
    times = rng.integers(1, 8, size=(200, 9)).astype(float)  # many ties
    observed = rng.random((200, 9)) < 0.6
    got = rmst_batch(times, observed, 6.5)
    want = [ref_rmst(t, o, 6.5) for t, o in zip(times, observed, strict=True)]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert np.all(np.isfinite(got)) and np.all(got <= 6.5)


def test_rmst_tau_choice() -> None:
    b, t = make_arm("b", [5, 9, 12], [1, 1, 0]), make_arm("t", [3, 4, 7], [1, 1, 1])
    assert rmst_tau([b, t], None)[0] == 12.0
    assert rmst_tau([b, t], 10.0) == (10.0, "the claim's tau")
    with pytest.raises(ValueError):
        rmst_batch(np.ones((2, 3)), np.ones((2, 3), dtype=bool), 0.0)


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


def test_rmst_tau_without_seeds() -> None:
    tau, source = rmst_tau([make_arm("b", []), make_arm("t", [])], None)
    assert math.isnan(tau)
    assert source == "no seeds"


def test_rmst_columns_tau_zero_and_below_one() -> None:
    a = make_arm("b", [0.2, 1.0], [True, False])
    zero = rmst_columns(a, 0.0)
    assert list(zero) == ["RMST (τ = 0)"] and math.isnan(zero["RMST (τ = 0)"])
    assert rmst_columns(a, 0.5) == {"RMST (τ = 0.5)": pytest.approx(0.35, abs=1e-15)}


# ---------------------------------------------------------------- log-rank


def test_logrank_matches_survdiff() -> None:
    rng = np.random.default_rng(7)
    a = lognormal("a", 1000, rng, budget=2000, every=100)
    b = lognormal("b", 1300, rng, n=15, budget=2000, every=100)
    chisq, p = survdiff(
        np.concatenate([a.values, b.values]),
        np.concatenate([a.observed, b.observed]).astype(float),
        np.repeat([0, 1], [a.n, b.n]),
    )
    assert logrank(a, b) == pytest.approx((chisq, p), rel=1e-12)


def test_logrank_identical_arms_p_near_one() -> None:
    a = lognormal("a", 1000, np.random.default_rng(1), budget=1500)
    b = make_arm("b", a.values.copy(), a.observed.copy())
    chisq, p = logrank(a, b)
    assert chisq == pytest.approx(0.0, abs=1e-12)
    assert p == pytest.approx(1.0, abs=1e-9)


def test_logrank_very_different_arms() -> None:
    rng = np.random.default_rng(2)
    _, p = logrank(lognormal("a", 300, rng, budget=5000), lognormal("b", 3000, rng, budget=5000))
    assert p < 0.01


def test_logrank_without_events_is_undefined() -> None:
    a = make_arm("a", np.full(3, 10.0), np.zeros(3, bool))
    assert all(math.isnan(x) for x in logrank(a, a))



def test_logrank_without_a_seed_at_risk_in_one_arm_is_undefined() -> None:
    """One arm censored before the other's every event has zero variance: statsmodels raises,
    the test is undefined (a peer run shorter than the engine's)."""
    short = make_arm("short", np.full(2, 200.0), np.zeros(2, bool))
    engine = make_arm("engine", np.array([1900.0, 2100.0, 5000.0]), np.array([True, True, False]))
    with pytest.raises(np.linalg.LinAlgError):
        survdiff(np.r_[short.values, engine.values], np.r_[short.observed, engine.observed],
                 np.repeat([0, 1], [2, 3]))
    assert all(math.isnan(x) for x in logrank(short, engine))

# ---------------------------------------------------------------- median_effect


def test_median_effect_edge_cases() -> None:
    assert math.isnan(median_effect(INF, INF, "ratio"))
    assert math.isnan(median_effect(INF, INF, "difference"))
    assert math.isnan(median_effect(0.0, 0.0, "ratio"))
    assert median_effect(0.0, 5.0, "ratio") == INF
    assert median_effect(INF, 5.0, "ratio") == 0.0
    assert median_effect(10.0, INF, "ratio") == INF
    assert median_effect(10.0, INF, "difference") == INF
    assert median_effect(INF, 10.0, "difference") == -INF
    assert median_effect(10.0, 4.0, "difference") == -6.0


def test_median_effect_ratio_over_zero_and_one() -> None:
    """A finite treated median over a zero baseline (signed zero too) is inf, 0/0 is NaN, and
    neither warns; a baseline of 1 is an ordinary divisor."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert median_effect(0.0, 5.0, "ratio") == math.inf
        assert median_effect(-0.0, 5.0, "ratio") == math.inf
        assert math.isnan(median_effect(0.0, 0.0, "ratio"))
        out = median_effect(np.array([1.0, 0.0, 2.0]), np.array([2.0, 3.0, 1.0]), "ratio")
    assert out.tolist() == [2.0, math.inf, 0.5]
    assert median_effect(1.0, 0.8, "ratio") == 0.8


def test_median_effect_scalar_is_a_float() -> None:
    value = median_effect(200.0, 150.0, "ratio")
    assert type(value) is float and value == 0.75
    value = median_effect(200, 150, "difference")
    assert type(value) is float and value == -50.0


def test_median_effect_coerces_to_float() -> None:
    """Missing medians given as None in an object array are undefined effects (NaN)."""
    base = np.array([100.0, None], dtype=object)
    out = median_effect(base, np.array([80.0, 90.0]), "ratio")
    assert out[0] == 0.8 and math.isnan(out[1])
    out = median_effect(np.array([100.0, 200.0]), np.array([80.0, None], dtype=object),
                        "difference")
    assert out[0] == -20.0 and math.isnan(out[1])


def test_median_effect_unknown_effect() -> None:
    with pytest.raises(ValueError, match=r"^unknown effect 'log'$"):
        median_effect(1.0, 2.0, "log")  # type: ignore[arg-type]


# ---------------------------------------------------------------- bootstrap of the median effect


def test_bootstrap_reproducible() -> None:
    rng = np.random.default_rng(3)
    a, b = lognormal("a", 1000, rng, budget=1800), lognormal("b", 700, rng, budget=1800)
    first = bootstrap_median_effect(a, b, "ratio", 500, seed=11, ci_level=0.95)
    assert first == bootstrap_median_effect(a, b, "ratio", 500, seed=11, ci_level=0.95)
    assert first[1] != bootstrap_median_effect(a, b, "ratio", 500, seed=12, ci_level=0.95)[1]


def test_bootstrap_recovers_true_ratio() -> None:
    rng = np.random.default_rng(4)
    base, treat = lognormal("base", 2000, rng), lognormal("treat", 1000, rng)
    estimate, (low, high), details = bootstrap_median_effect(
        base, treat, "ratio", 2000, seed=0, ci_level=0.95
    )
    assert low < 0.5 < high < 1.0
    assert low <= estimate <= high
    assert details["n_undefined_resamples"] == 0
    assert details["n_boot"] == 2000


def test_bootstrap_difference_effect() -> None:
    rng = np.random.default_rng(5)
    base, treat = lognormal("base", 2000, rng, sigma=0.2), lognormal("treat", 1000, rng, sigma=0.2)
    _, (low, high), _ = bootstrap_median_effect(base, treat, "difference", 1000, 0, 0.95)
    assert low < -1000 < high < 0


def test_bootstrap_heavy_censoring_gives_inf_not_nan() -> None:
    rng = np.random.default_rng(6)
    base = lognormal("base", 1000, rng, budget=3000)
    treat = lognormal("treat", 3000, rng, budget=3000)  # about half censored at the budget
    estimate, (low, high), details = bootstrap_median_effect(base, treat, "ratio", 2000, 0, 0.95)
    assert high == INF
    assert not math.isnan(low) and not math.isnan(estimate)
    assert details["n_treated_median_beyond_budget"] > 0
    assert not any(isinstance(v, float) and math.isnan(v) for v in details.values())


def _bounded_effects(base: ArmSample, treat: ArmSample, effect: str, n_boot: int,
                     seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Each resample's effect interval, computed resample by resample with an exact KM median
    (`km_median_exact`): an unreached median lies in [largest time of the resample, inf)."""
    rng = np.random.default_rng(seed)
    idx_b = rng.integers(0, base.n, size=(n_boot, base.n))
    idx_t = rng.integers(0, treat.n, size=(n_boot, treat.n))
    lows, highs = [], []
    for ib, it in zip(idx_b, idx_t, strict=True):
        ends = []
        for arm_, i in ((base, ib), (treat, it)):
            med = km_median_exact(arm_.values[i], arm_.observed[i])
            ends.append((arm_.values[i].max(), INF) if math.isinf(med) else (med, med))
        (b_lo, b_hi), (t_lo, t_hi) = ends
        if effect == "ratio":
            lows.append(t_lo / b_hi)
            highs.append(t_hi / b_lo)
        else:
            lows.append(t_lo - b_hi)
            highs.append(t_hi - b_lo)
    return np.array(lows), np.array(highs)


@pytest.mark.parametrize("effect", ["ratio", "difference"])
def test_bootstrap_bounds_unreached_medians(effect: str) -> None:
    rng = np.random.default_rng(8)
    base = lognormal("base", 2500, rng, budget=3000)  # the median is often not reached
    treat = lognormal("treat", 2000, rng, budget=3000)
    thr = 0.8 if effect == "ratio" else -300.0
    _, (low, high), details = bootstrap_median_effect(base, treat, effect, 400, 3, 0.9,
                                                      region=("less", thr))
    lows, highs = _bounded_effects(base, treat, effect, 400, 3)
    assert details["n_bounded_resamples"] > 0 and details["n_undefined_resamples"] == 0
    assert low == np.sort(lows)[math.ceil(0.05 * 400) - 1]  # inverted CDF: order statistics
    assert high == np.sort(highs)[math.ceil(0.95 * 400) - 1]
    assert details["p_support"] == pytest.approx(np.mean(highs > thr))
    assert details["p_refute"] == pytest.approx(np.mean(lows <= thr))
    _, _, greater = bootstrap_median_effect(base, treat, effect, 400, 3, 0.9,
                                            region=("greater", thr))
    assert greater["p_support"] == pytest.approx(np.mean(lows < thr))
    assert greater["p_refute"] == pytest.approx(np.mean(highs >= thr))


def test_bootstrap_of_reached_medians_is_a_point_per_resample() -> None:
    rng = np.random.default_rng(9)
    base, treat = lognormal("base", 1000, rng), lognormal("treat", 700, rng)
    _, (low, high), details = bootstrap_median_effect(base, treat, "ratio", 300, 1, 0.95)
    lows, highs = _bounded_effects(base, treat, "ratio", 300, 1)
    assert np.array_equal(lows, highs)  # every median reached: a point per resample
    assert (low, high) == tuple(np.quantile(lows, [0.025, 0.975], method="inverted_cdf"))
    assert details["n_bounded_resamples"] == 0


def test_bootstrap_all_censored_is_unbounded() -> None:
    # no median is reached anywhere: each is only known to be >= 100, so the ratio is (0, inf)
    arm = make_arm("a", np.full(5, 100.0), np.zeros(5, bool))
    estimate, (low, high), details = bootstrap_median_effect(arm, arm, "ratio", 200, 0, 0.95)
    assert math.isnan(estimate) and (low, high) == (0.0, INF)
    assert details["n_bounded_resamples"] == 200 and details["n_undefined_resamples"] == 0


def draws(n_base: int, n_treat: int, n_boot: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The documented unpaired draw: baseline indices first, then the treated arm's."""
    rng = np.random.default_rng(seed)
    b = rng.integers(0, n_base, size=(n_boot, n_base))
    return b, rng.integers(0, n_treat, size=(n_boot, n_treat))


def order_stat(x: list[float], q: float) -> float:
    """Inverted-CDF quantile: the ceil(q n)-th smallest value."""
    xs = sorted(x)
    return xs[max(math.ceil(q * len(xs)), 1) - 1]


def test_bootstrap_median_ci_bounds_unreached_medians_by_each_resamples_largest_time() -> None:
    """Baseline all events (median always reached); the treated arm has one early event and
    censored seeds of different lengths, so most resampled treated medians are unreached: their
    lower end is that resample's own largest time over the baseline median."""
    n_boot, seed, level = 399, 11, 0.9
    base = make_arm("b", [10, 20, 30, 40, 50])
    treat = make_arm("t", [15, 25, 35, 60, 80, 100], [True] + [False] * 5)
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


def test_paired_bootstrap_equals_hand_computed() -> None:
    # six seeds; seed 5 is censored in the baseline (budget 900), seed 2 in treated
    b = make_arm("b", [400, 520, 610, 700, 830, 900], [1, 1, 1, 1, 1, 0])
    t = make_arm("t", [300, 380, 900, 500, 560, 610], [1, 1, 0, 1, 1, 1])
    n_boot, seed, level = 300, 11, 0.9
    estimate, (low, high), details = bootstrap_median_effect(b, t, "ratio", n_boot, seed, level,
                                                             paired=True)
    idx = np.random.default_rng(seed).integers(0, 6, size=(n_boot, 6))  # one draw, both arms
    lows, highs = [], []
    for row in idx:
        ends = []
        for arm in (b, t):
            med = km_median(arm.values[row], arm.observed[row])[0]
            ends.append((arm.values[row].max(), INF) if math.isinf(med) else (med, med))
        (b_lo, b_hi), (t_lo, t_hi) = ends
        lows.append(t_lo / b_hi)
        highs.append(t_hi / b_lo)
    assert low == np.sort(lows)[math.ceil(0.05 * n_boot) - 1]  # inverted CDF: order statistic
    assert high == np.sort(highs)[math.ceil(0.95 * n_boot) - 1]
    assert estimate == km_median(t.values, t.observed)[0] / km_median(b.values, b.observed)[0]
    assert "jointly" in details["bootstrap"]


@pytest.mark.parametrize("effect", ["ratio", "difference"])
def test_median_bootstrap_counts_of_unreached_medians(effect: str) -> None:
    """Unpaired draws (baseline first). A resample is bounded when either median is beyond the
    budget; an end is infinite when the treated median is (upper end), or, for a difference,
    when the baseline median is (lower end: t_lo - inf)."""
    bt = np.array([100.0, 150.0, 200.0, 250.0, 1000.0, 1000.0])
    bo = np.array([True, True, True, True, False, False])
    tt = np.array([80.0, 120.0, 300.0, 1000.0, 1000.0, 1000.0])
    to = np.array([True, True, True, False, False, False])
    n_boot, seed = 400, 11
    _, _, details = bootstrap_median_effect(make_arm("b", bt.tolist(), bo.tolist()),
                                            make_arm("t", tt.tolist(), to.tolist()),
                                            effect, n_boot, seed, 0.9)
    rng = np.random.default_rng(seed)
    bi = rng.integers(0, 6, size=(n_boot, 6))
    ti = rng.integers(0, 6, size=(n_boot, 6))
    b_inf = np.array([math.isinf(km_median_exact(bt[i], bo[i])) for i in bi])
    t_inf = np.array([math.isinf(km_median_exact(tt[i], to[i])) for i in ti])
    assert (b_inf & ~t_inf).sum() > 0 and (t_inf & ~b_inf).sum() > 0  # the data do their job
    infinite = t_inf if effect == "ratio" else (t_inf | b_inf)
    assert {k: details[k] for k in ("n_undefined_resamples", "n_bounded_resamples",
                                    "n_infinite_resamples", "n_base_median_beyond_budget",
                                    "n_treated_median_beyond_budget")} == {
        "n_undefined_resamples": 0,
        "n_bounded_resamples": int((b_inf | t_inf).sum()),
        "n_infinite_resamples": int(infinite.sum()),
        "n_base_median_beyond_budget": int(b_inf.sum()),
        "n_treated_median_beyond_budget": int(t_inf.sum()),
    }


def test_median_bootstrap_drops_a_resample_with_one_undefined_end() -> None:
    """Baseline median 0; treated censored at 0 (median beyond the budget, lower bound 0): the
    lower end 0/0 is undefined (the upper end inf/0 is not), so every resample is dropped."""
    estimate, ci, details = bootstrap_median_effect(
        make_arm("b", [0.0, 0.0]), make_arm("t", [0.0, 0.0], [False, False]), "ratio", 100, 0, 0.95,
        region=("less", 0.8))
    assert math.isnan(ci[0]) and math.isnan(ci[1])
    assert details["n_undefined_resamples"] == 100
    assert "p_support" not in details
    assert estimate == math.inf  # inf / 0 (finite over zero is inf; inf over zero too)


@pytest.mark.parametrize("boot", ["median", "rmst"])
def test_bootstraps_reject_an_empty_arm(boot: str) -> None:
    full, empty = make_arm("x", [100.0, 200.0]), make_arm("y", [])
    for b, t in ((empty, full), (full, empty)):
        with pytest.raises(ValueError, match=r"^both arms need at least one seed$"):
            if boot == "median":
                bootstrap_median_effect(b, t, "ratio", 100, 0, 0.95)
            else:
                bootstrap_rmst_effect(b, t, "ratio", 500.0, 100, 0, 0.95)


@pytest.mark.parametrize("boot", ["median", "rmst"])
def test_paired_bootstraps_reject_unequal_arms(boot: str) -> None:
    b, t = make_arm("b", [100.0, 200.0, 300.0]), make_arm("t", [50.0, 60.0, 70.0, 80.0])
    with pytest.raises(ValueError, match=r"^a paired bootstrap needs aligned arms of equal "
                                         r"length$"):
        if boot == "median":
            bootstrap_median_effect(b, t, "ratio", 100, 0, 0.95, paired=True)
        else:
            bootstrap_rmst_effect(b, t, "ratio", 500.0, 100, 0, 0.95, paired=True)


# ---------------------------------------------------------------- bootstrap of the RMST effect


B_TIMES, B_OBS = [120, 300, 300, 450, 500, 500, 500], [1, 1, 1, 1, 0, 0, 0]
T_TIMES, T_OBS = [100, 200, 260, 300, 380, 500, 420], [1, 1, 1, 1, 1, 0, 1]


@pytest.mark.parametrize("paired", [True, False])
@pytest.mark.parametrize("effect", ["ratio", "difference"])
def test_bootstrap_equals_hand_joint_resampling(paired: bool, effect: str) -> None:
    """Joint (paired) or per-arm resampling of seed indices by hand, and the percentile
    interval at Hesterberg's expanded level for 7 seeds, 1 - 2 Phi(-sqrt(7/6) t_(6, 0.95))."""
    b, t = make_arm("b", B_TIMES, B_OBS), make_arm("t", T_TIMES, T_OBS)
    n_boot, seed, tau = 40, 17, 500.0
    estimate, ci, details = bootstrap_rmst_effect(b, t, effect, tau, n_boot, seed, 0.9,
                                                  region=("less", 0.8), paired=paired)
    rng = np.random.default_rng(seed)
    bi = rng.integers(0, 7, size=(n_boot, 7))
    ti = bi if paired else rng.integers(0, 7, size=(n_boot, 7))
    rb = np.array([ref_rmst(b.values[i], b.observed[i], tau) for i in bi])
    rt = np.array([ref_rmst(t.values[i], t.observed[i], tau) for i in ti])
    eff = np.sort(rt / rb if effect == "ratio" else rt - rb)
    level = hesterberg_level(0.9, 7)
    assert details["bootstrap_level"] == pytest.approx(level, rel=1e-12)

    def interpolated(q: float) -> float:  # linear interpolation between order statistics
        h = q * (n_boot - 1)
        lo = math.floor(h)
        return float(eff[lo] + (h - lo) * (eff[lo + 1] - eff[lo]))

    assert ci[0] == pytest.approx(interpolated((1 - level) / 2), rel=1e-12)
    assert ci[1] == pytest.approx(interpolated((1 + level) / 2), rel=1e-12)
    full_b, full_t = ref_rmst(B_TIMES, B_OBS, tau), ref_rmst(T_TIMES, T_OBS, tau)
    assert estimate == pytest.approx(full_t / full_b if effect == "ratio" else full_t - full_b)
    assert details["n_undefined_resamples"] == 0


def test_bootstrap_needs_two_seeds_per_arm() -> None:
    b, t = make_arm("b", [300.0], [1]), make_arm("t", [200.0, 250.0], [1, 1])
    estimate, ci, details = bootstrap_rmst_effect(b, t, "ratio", 500.0, 50, 1, 0.95)
    assert estimate == pytest.approx(225.0 / 300.0)
    assert math.isnan(ci[0]) and math.isnan(ci[1]) and "2 seeds" in details["no_ci"]


def test_rmst_bootstrap_two_seeds_per_arm_give_a_ci() -> None:
    """Two seeds per arm suffice. Uncensored, τ above every time: each resample's RMST is its
    mean time, the CI the linear quantiles of the ratios at the expanded level for n = 2."""
    bt, tt = np.array([100.0, 300.0]), np.array([50.0, 200.0])
    n_boot, seed = 200, 7
    estimate, ci, details = bootstrap_rmst_effect(make_arm("b", bt), make_arm("t", tt), "ratio",
                                                  400.0, n_boot, seed, 0.9)
    rng = np.random.default_rng(seed)
    bi = rng.integers(0, 2, size=(n_boot, 2))
    ti = rng.integers(0, 2, size=(n_boot, 2))
    ratios = tt[ti].mean(axis=1) / bt[bi].mean(axis=1)
    level = hesterberg_level(0.9, 2)
    assert estimate == pytest.approx(125.0 / 200.0, rel=1e-12)
    assert ci == pytest.approx((np.quantile(ratios, (1 - level) / 2),
                                np.quantile(ratios, (1 + level) / 2)), rel=1e-12)
    assert details["bootstrap_level"] == pytest.approx(level, rel=1e-12)
    assert "no_ci" not in details
    assert "p_support" not in details and "p_refute" not in details  # no region given


def test_rmst_bootstrap_all_effects_undefined() -> None:
    """Every time 0 in both arms: both RMSTs 0, every resample 0/0, so no CI and all dropped."""
    zeros = make_arm("b", [0.0, 0.0]), make_arm("t", [0.0, 0.0])
    estimate, ci, details = bootstrap_rmst_effect(*zeros, "ratio", 10.0, 100, 0, 0.95)
    assert math.isnan(estimate)
    assert math.isnan(ci[0]) and math.isnan(ci[1])
    assert details["n_undefined_resamples"] == 100


def test_rmst_bootstrap_counts_resamples_extended_to_tau() -> None:
    """A resample is extended when its largest time is censored (no event there) and below τ;
    counted over both arms' resamples (unpaired draws, baseline first)."""
    bt, bo = np.array([100.0, 200.0, 300.0]), np.array([True, True, False])
    tt, to = np.array([50.0, 150.0, 250.0]), np.array([True, False, False])
    n_boot, seed, tau = 120, 1, 500.0
    _, _, details = bootstrap_rmst_effect(make_arm("b", bt.tolist(), bo.tolist()),
                                          make_arm("t", tt.tolist(), to.tolist()),
                                          "difference", tau, n_boot, seed, 0.95)
    rng = np.random.default_rng(seed)
    expected = 0
    for times, obs in ((bt, bo), (tt, to)):
        for i in rng.integers(0, 3, size=(n_boot, 3)):
            last = times[i].max()
            expected += int(last < tau and not np.any((times[i] == last) & obs[i]))
    assert expected > 2
    assert details["n_extended_resamples"] == expected


def ends_censored_before(times: np.ndarray, observed: np.ndarray, tau: float) -> bool:
    last = max(times)
    return last < tau and not any(o for t, o in zip(times, observed, strict=True) if t == last)


def test_bootstrap_rmst_counts_resamples_extended_flat_to_tau() -> None:
    """A resample is extended when its largest time is censored (no event tied there) and below
    tau: here 5 or a censored-only 7 in the baseline, 6 or 9 in the treated arm, never a last
    time equal to tau (10) or one with an event."""
    tau, n_boot, seed = 10.0, 300, 7
    base = make_arm("b", [3, 5, 7, 7, 10], [True, False, True, False, False])
    treat = make_arm("t", [4, 6, 9, 10, 10], [True, False, False, True, False])
    bi, ti = draws(base.n, treat.n, n_boot, seed)
    expected = sum(ends_censored_before(a.values[row], a.observed[row], tau)
                   for a, idx in ((base, bi), (treat, ti)) for row in idx)
    per_kind = [sum(ends_censored_before(base.values[r], base.observed[r], tau) for r in bi),
                sum(ends_censored_before(treat.values[r], treat.observed[r], tau) for r in ti)]
    assert 0 < per_kind[0] < n_boot and 0 < per_kind[1] < n_boot  # both kinds occur
    _, _, details = bootstrap_rmst_effect(base, treat, "ratio", tau, n_boot, seed, 0.95)
    assert details["n_extended_resamples"] == expected


# ---------------------------------------------------------------- params


def test_params_valid_and_thresholds() -> None:
    assert survival(min_effect=0.2).threshold == pytest.approx(0.8)
    greater = survival(direction="greater", min_effect=1.5)
    assert greater.threshold == pytest.approx(2.5)
    diff = survival(effect="difference", min_effect=500)
    assert diff.threshold == -500
    assert diff.n_boot == 2000 and diff.ci_level == 0.95


@pytest.mark.parametrize("bad", [
    {"extra_key": 1}, {"treated": "b"}, {"min_effect": 1.0}, {"min_effect": -0.1},
    {"ci_level": 1.0}, {"n_boot": 10}, {"name": "other"}])
def test_params_rejected(bad: dict[str, object]) -> None:
    with pytest.raises(pydantic.ValidationError):
        survival(**{"min_effect": 0.2, **bad})


def test_schema() -> None:
    assert SurvivalCompareParams.model_validate(
        {"name": "survival_compare", "baseline": "b", "treated": "t", "direction": "less",
         "min_effect": 0.2}).summary == "median"
    with pytest.raises(pydantic.ValidationError):
        rmst_params(summary="median", tau=100.0)
    with pytest.raises(pydantic.ValidationError):
        rmst_params(tau=0.0)
    with pytest.raises(pydantic.ValidationError):
        rmst_params(summary="mean")
    assert rmst_params(direction="greater", min_effect=0.3).threshold == pytest.approx(1.3)


# ---------------------------------------------------------------- whole results


# Treated times are exactly half the baseline's: every paired resample has effect 0.5 exactly.
BASE_T = [300.0, 420.0, 500.0, 640.0, 760.0, 880.0]
HALF_T = [x / 2 for x in BASE_T]


def test_median_result_is_pinned_whole() -> None:
    """Paired median comparison with a broken pair: the reason (effect label, the boundary words,
    the broken pair appended once before a single full stop), criterion, test, region, p-value
    (the log-rank of all seeds), and every detail."""
    b = make_arm("b", BASE_T)
    t = make_arm("t", [*HALF_T, 999.0], seeds=(0, 1, 2, 3, 4, 5, 6))  # seed 6: no partner in b
    res = computed(b, t, min_effect=0.2, n_boot=200, bootstrap_seed=3)
    chi2, p = logrank_oracle(b, t)
    assert res.criterion == NAME
    assert res.effect_label == "ratio of KM medians (t / b)"
    assert res.test == f"{TEST}; analysis: paired (6 pairs, within-pair correlation 1)"
    assert res.claimed_region == "ratio <= 0.8 (t at least 20% faster)"
    assert res.ci_level == 0.95
    assert res.threshold == pytest.approx(0.8)
    # KM medians of the pairs: S = 1/2 at 500 exactly -> midpoint (500 + 640) / 2 = 570; 285
    assert res.estimate == 0.5
    assert res.ci == (0.5, 0.5)
    assert res.verdict is Verdict.SUPPORTED
    assert res.reason == Has("95% CI of the ratio of KM medians (t / b), [0.5, 0.5]",
                             "wholly at or below 0.8, the boundary of the claimed effect",
                             "(point estimate 0.5); 1 seed(s) without a partner in the other arm",
                             "left out (t: 1).")
    assert res.reason.count("without a partner") == 1 and res.reason.endswith("(t: 1).")
    assert res.p_value == pytest.approx(p, rel=1e-9)
    assert (res.p_support, res.p_refute) == (0.0, 1.0)
    details = dict(res.details)
    floats = split(details, "within_pair_correlation", "logrank_chi2")
    assert floats == pytest.approx({"within_pair_correlation": 1.0, "logrank_chi2": chi2},
                                   rel=1e-9)
    assert details == {
        "censoring": CENSORING,
        "analysis": "paired (6 pairs, within-pair correlation 1)",
        "paired": True, "n_pairs": 6, "broken_pairs": {"b": 0, "t": 1},
        "within_pair_correlation_method": CORRELATION_METHOD,
        "bootstrap": PAIRED_BOOT,
        "quantile_method": "inverted_cdf (order statistics; infinite bounds kept)",
        "unreached_median_bounds": UNREACHED_BOUNDS,
        "n_boot": 200, "bootstrap_seed": 3,
        "n_undefined_resamples": 0, "n_bounded_resamples": 0, "n_infinite_resamples": 0,
        "n_base_median_beyond_budget": 0, "n_treated_median_beyond_budget": 0,
        "p_support": 0.0, "p_refute": 1.0,
        "interval_fails": Has("6 seeds in an arm, fewer than the 8",
                              "bootstrap of KM medians keeps its level",
                              "(benchmarks/calibration.py, \"few seeds\": false verdicts 0.06 at 4 "
                              "seeds, 0.030-0.034 at 5-7, against 0.025)"),
        **RESULT_DETAILS,
    }
    held = compare(b, t, min_effect=0.2, n_boot=200, bootstrap_seed=3)  # 6 pairs: set aside
    assert held.verdict is Verdict.INCONCLUSIVE and held.details["ci_computed"] == [0.5, 0.5]


def test_rmst_result_is_pinned_whole() -> None:
    """Paired RMST comparison under a non-inferiority margin: τ from the data (880), RMST = mean
    time without censoring, so every paired resample's ratio is 0.5; the margin's boundary words
    in the reason, the expanded level for 6 pairs, and every detail."""
    b, t = make_arm("b", BASE_T), make_arm("t", HALF_T)
    res = computed(b, t, summary="rmst", margin=0.25, n_boot=150, bootstrap_seed=5)
    chi2, p = logrank_oracle(b, t)
    label = "ratio of restricted mean times to threshold up to τ = 880 (t / b)"
    assert res.criterion == NAME
    assert res.effect_label == label
    assert res.test == f"{TEST}; analysis: paired (6 pairs, within-pair correlation 1)"
    assert res.claimed_region == "ratio <= 1.25 (non-inferiority: t at most 25% slower than b)"
    assert res.ci_level == 0.95
    assert res.estimate == 0.5
    assert res.ci == (0.5, 0.5)
    assert res.verdict is Verdict.SUPPORTED
    assert res.reason == Has(f"95% CI of the {label}, [0.5, 0.5]",
                             "wholly at or below 1.25, the non-inferiority bound (margin 25%)",
                             "(point estimate 0.5).")
    assert res.p_value == pytest.approx(p, rel=1e-9)
    assert (res.p_support, res.p_refute) == (0.0, 1.0)
    rmst_b = sum(BASE_T) / 6
    assert [r.columns["RMST (τ = 880)"] for r in res.arms] == pytest.approx(
        [rmst_b, rmst_b / 2], rel=1e-12)
    details = dict(res.details)
    floats = split(details, "within_pair_correlation", "logrank_chi2", "bootstrap_level")
    assert floats == pytest.approx({"within_pair_correlation": 1.0, "logrank_chi2": chi2,
                                    "bootstrap_level": hesterberg_level(0.95, 6)},
                                   rel=1e-9)
    assert details == {
        "censoring": CENSORING, "summary": "rmst", "tau": 880.0, "tau_source": TAU_FROM_DATA,
        "rmst_convention": RMST_CONVENTION,
        "analysis": "paired (6 pairs, within-pair correlation 1)",
        "paired": True, "n_pairs": 6, "broken_pairs": {"b": 0, "t": 0},
        "within_pair_correlation_method": CORRELATION_METHOD,
        "bootstrap": PAIRED_BOOT,
        "quantile_method": "linear interpolation",
        "n_boot": 150, "bootstrap_seed": 5,
        "bootstrap_level_rule": Has(EXPANDED_LEVEL_RULE,
                                    "n = seeds of the smaller arm (pairs when paired)"),
        "n_undefined_resamples": 0, "n_extended_resamples": 0,
        "p_support": 0.0, "p_refute": 1.0, "p_method": P_METHOD,
        "interval_fails": Has("every resampled effect equals 0.5", "no bootstrap interval"),
        **RESULT_DETAILS,
    }
    held = compare(b, t, summary="rmst", margin=0.25, n_boot=150, bootstrap_seed=5)
    assert held.verdict is Verdict.INCONCLUSIVE and held.details["ci_computed"] == [0.5, 0.5]


@pytest.mark.parametrize(("kw", "region"), [
    ({"direction": "greater", "min_effect": 0.2}, "ratio >= 1.2 (t at least 20% slower)"),
    ({"direction": "less", "min_effect": 0.0}, "ratio <= 1 (t at least 0% faster)"),
    ({"direction": "greater", "effect": "difference", "min_effect": 50},
     "difference >= 50 steps (t at least 50 steps slower)"),
    ({"direction": "greater", "margin": 0.1},
     "ratio >= 0.9 (non-inferiority: t at most 10% faster than b)"),
])
@pytest.mark.parametrize("summary", ["median", "rmst"])
def test_claimed_region_words(kw: dict[str, Any], region: str, summary: str) -> None:
    """The claimed region is reported even when no comparison is possible."""
    res = compare(make_arm("b", [], excluded={"diverged": 2}), make_arm("t", [100.0, 200.0]),
                  summary=summary, **kw)
    assert res.claimed_region == region


def _shifted(factor: float, n: int = 16, seed: int = 3) -> dict[str, ArmSample]:
    rng = np.random.default_rng(seed)
    z = rng.normal(size=n)
    budget = 5000.0
    base = np.round(3000 * np.exp(0.4 * z + 0.2 * rng.normal(size=n)))
    treat = np.round(3000 * factor * np.exp(0.4 * z + 0.2 * rng.normal(size=n)))
    return {"b": make_arm("b", np.minimum(base, budget), base < budget),
            "t": make_arm("t", np.minimum(treat, budget), treat < budget)}


def test_rmst_result_shape() -> None:
    arms = _shifted(0.8)
    res = run_survival_compare(rmst_params(), arms)
    tau = max(arms["b"].values.max(), arms["t"].values.max())
    assert res.details["tau"] == tau and res.details["summary"] == "rmst"
    assert res.effect_label == ("ratio of restricted mean times to threshold up to τ = 5000 "
                                "(t / b)")
    for row, a in zip(res.arms, (arms["b"], arms["t"]), strict=True):
        assert "KM median" in row.columns
        assert row.columns["RMST (τ = 5000)"] == pytest.approx(ref_rmst(a.values, a.observed,
                                                                         tau))
    assert res.estimate == pytest.approx(res.arms[1].columns["RMST (τ = 5000)"]
                                         / res.arms[0].columns["RMST (τ = 5000)"])
    given = run_survival_compare(rmst_params(tau=3000.0), arms)
    assert given.details["tau"] == 3000.0 and given.details["tau_source"] == "the claim's tau"
    assert "τ = 3000" in given.effect_label
    diff = run_survival_compare(rmst_params(effect="difference", min_effect=100.0), arms)
    assert diff.effect_label.startswith("difference of restricted mean times")
    assert diff.threshold == -100.0


@pytest.mark.parametrize("paired", [True, False])
@pytest.mark.parametrize(("direction", "effect", "min_effect"), [
    ("less", "ratio", 0.1), ("greater", "ratio", 0.1),
    ("less", "difference", 150.0), ("greater", "difference", 150.0)])
def test_p_coherent_with_the_ci_around_theta(paired: bool, direction: str, effect: str,
                                             min_effect: float) -> None:
    seen = set()
    for factor in np.linspace(0.4, 2.0, 25):
        p = rmst_params(direction=direction, effect=effect, min_effect=min_effect, paired=paired,
                   ci_level=0.9, n_boot=300)
        res = run_survival_compare(p, _shifted(float(factor)))
        alpha = (1 - p.ci_level) / 2
        assert res.p_support is not None and res.p_refute is not None
        assert verdict_from_p(res.p_support, res.p_refute, alpha) == res.verdict
        low, high = res.ci
        inside = high <= p.threshold if direction == "less" else low >= p.threshold
        outside = low > p.threshold if direction == "less" else high < p.threshold
        assert (res.verdict == Verdict.SUPPORTED) == inside
        assert (res.verdict == Verdict.REFUTED) == outside
        seen.add(res.verdict)
    assert {Verdict.SUPPORTED, Verdict.REFUTED, Verdict.INCONCLUSIVE} <= seen


def _censored_pair(rng: np.random.Generator, n: int, ratio: float) -> dict[str, ArmSample]:
    """Correlated log-normal times (rho 0.8), budget at the baseline's 60th percentile (40% of
    the baseline censored in expectation), treated times = ratio x baseline's scale."""
    shared = rng.normal(size=n)
    zb = math.sqrt(0.8) * shared + math.sqrt(0.2) * rng.normal(size=n)
    zt = math.sqrt(0.8) * shared + math.sqrt(0.2) * rng.normal(size=n)
    budget = round(3000 * math.exp(0.4 * 0.2533))
    b = np.round(3000 * np.exp(0.4 * zb))
    t = np.round(3000 * ratio * np.exp(0.4 * zt))
    return {"b": make_arm("b", np.minimum(b, budget), b < budget),
            "t": make_arm("t", np.minimum(t, budget), t < budget)}


def test_heavy_censoring_rmst_refutes_a_false_faster_claim() -> None:
    """Truth: treated 20% slower (time ratio 1.2); 40% of the baseline censored. The RMST ratio's
    CI is finite and refutes "treated at least 20% faster"; the median's CI often starts at 0."""
    rng = np.random.default_rng(2024)
    rmst_refuted = median_low_zero = 0
    censored = []
    for rep in range(6):
        arms = _censored_pair(rng, 20, 1.2)
        censored.append(1 - arms["b"].events / arms["b"].n)
        res = run_survival_compare(rmst_params(n_boot=1000, bootstrap_seed=rep), arms)
        assert all(math.isfinite(x) for x in res.ci)
        assert res.verdict != Verdict.SUPPORTED
        rmst_refuted += res.verdict == Verdict.REFUTED
        median = run_survival_compare(rmst_params(summary="median", n_boot=1000,
                                             bootstrap_seed=rep), arms)
        median_low_zero += median.ci[0] == 0.0
    assert 0.25 <= float(np.mean(censored)) <= 0.55
    assert rmst_refuted >= 5
    assert median_low_zero >= 1


FIXED_B = [4000, 4000, 3604, 1863, 1327, 2639, 4000, 2735, 4000, 4000, 3390, 2129, 1843, 4000]
FIXED_T = [3323, 4000, 3840, 1770, 1438, 3435, 2966, 3740, 4000, 2676, 3950, 1641, 1426, 3292]
# the median summary's known numbers (n_boot 500, bootstrap_seed 3, less): (estimate, CI,
# p_support, p_refute)
MEDIAN_NUMBERS = {
    ("ratio", True): (0.9458106948813269, (0.0, 1.2575362858206178), 0.576, 0.434),
    ("ratio", False): (0.9458106948813269, (0.0, 1.391886862672125), 0.574, 0.45),
    ("difference", True): (-189.5, (-math.inf, 700.0), 0.484, 0.52),
    ("difference", False): (-189.5, (-math.inf, 1051.0), 0.472, 0.542),
}


@pytest.mark.parametrize(("effect", "paired"), list(MEDIAN_NUMBERS))
@pytest.mark.parametrize("explicit", [True, False])
def test_median_summary_is_the_default_with_its_known_numbers(effect: str, paired: bool,
                                                             explicit: bool) -> None:
    arms = {"c1": make_arm("c1", FIXED_B, np.array(FIXED_B) < 4000),
            "c10": make_arm("c10", FIXED_T, np.array(FIXED_T) < 4000)}
    raw: dict[str, Any] = {"name": "survival_compare", "baseline": "c1", "treated": "c10",
                           "effect": effect, "direction": "less", "paired": paired,
                           "min_effect": 0.1 if effect == "ratio" else 200.0, "n_boot": 500,
                           "bootstrap_seed": 3}
    if explicit:
        raw["summary"] = "median"
    res = run_survival_compare(SurvivalCompareParams.model_validate(raw), arms)
    estimate, ci, p_support, p_refute = MEDIAN_NUMBERS[(effect, paired)]
    assert res.estimate == estimate and res.ci == ci
    assert (res.p_support, res.p_refute) == (p_support, p_refute)
    assert res.verdict == Verdict.INCONCLUSIVE
    assert "tau" not in res.details and "RMST" not in str(res.arms[0].columns)
    op = "/" if effect == "ratio" else "-"
    assert res.effect_label == f"{effect} of KM medians (c10 {op} c1)"


# ---------------------------------------------------------------- no usable seeds, wiring errors


def test_arm_with_no_usable_seed_is_inconclusive_not_an_error() -> None:
    params = survival(baseline="a", treated="b", min_effect=0.2)
    empty = make_arm("a", [], excluded={"diverged": 3})
    full = make_arm("b", [10.0, 20.0])
    res = judge(params, {"a": empty, "b": full})
    assert res.verdict == Verdict.INCONCLUSIVE
    assert "arm 'a' has no usable seed" in res.reason and "diverged: 3" in res.reason
    assert res.to_dict()["ci"] == [None, None]


def test_run_missing_arm() -> None:
    arm = lognormal("b", 100, np.random.default_rng(0))
    with pytest.raises(KeyError):
        judge(survival(min_effect=0.2), {"b": arm})


def test_both_arms_without_seeds_named_in_the_reason() -> None:
    b = make_arm("b", [], excluded={"diverged": 3})
    t = make_arm("t", [], excluded={"diverged": 1, "nan_loss": 1})
    res = compare(b, t, min_effect=0.2)
    assert res.verdict is Verdict.INCONCLUSIVE
    assert math.isnan(res.estimate)
    assert res.reason == Has("No comparison is possible",
                             "arm 'b' has no usable seed (left out: diverged: 3); arm 't'",
                             "arm 't' has no usable seed (left out: diverged: 1, nan_loss: 1).")
    assert res.details["censoring"] == CENSORING


def test_rmst_arm_without_seeds_keeps_the_rows() -> None:
    """τ from the treated arm (300); its row carries its RMST (the mean time, no censoring)."""
    res = compare(make_arm("b", [], excluded={"diverged": 3}),
                  make_arm("t", [100.0, 200.0, 300.0]), summary="rmst", min_effect=0.2)
    assert res.verdict is Verdict.INCONCLUSIVE
    assert res.reason == Has("No comparison is possible",
                             "arm 'b' has no usable seed (left out: diverged: 3).")
    assert "'t'" not in res.reason
    assert [(r.name, r.n, r.excluded) for r in res.arms] == [("b", 0, {"diverged": 3}),
                                                               ("t", 3, {})]
    assert math.isnan(res.arms[0].columns["RMST (τ = 300)"])
    assert res.arms[1].columns["RMST (τ = 300)"] == pytest.approx(200.0, rel=1e-12)
    assert res.arms[1].columns["KM median"] == 200.0
    assert (res.details["summary"], res.details["tau"]) == ("rmst", 300.0)


def test_rmst_treated_arm_of_one_seed_is_compared() -> None:
    """One treated seed is a seed: the point estimate is given (RMST 150 / 200), only the CI
    is not (an expanded level needs two seeds per arm)."""
    res = compare(make_arm("b", [100.0, 200.0, 300.0]), make_arm("t", [150.0]), summary="rmst",
                  min_effect=0.2)
    assert res.estimate == pytest.approx(0.75, rel=1e-12)
    assert res.verdict is Verdict.INCONCLUSIVE
    assert res.reason == Has("restricted mean times to threshold up to τ = 300 (t / b), [nan, "
                             "nan], is undefined", "no verdict can be drawn",
                             "(point estimate 0.75).")
    assert res.details["no_ci"] == "an expanded bootstrap level needs at least 2 seeds per arm"


def test_median_treated_arm_of_one_seed_is_compared() -> None:
    """Unpaired (one shared seed number): the treated median is always 150; a baseline
    resample of 3 uncensored times has the middle one as KM median."""
    base = [100.0, 200.0, 300.0]
    res = computed(make_arm("b", base), make_arm("t", [150.0]), min_effect=0.2, n_boot=300,
                   bootstrap_seed=4)
    rng = np.random.default_rng(4)
    idx = rng.integers(0, 3, size=(300, 3))
    ratios = 150.0 / np.sort(np.asarray(base)[idx], axis=1)[:, 1]
    low = np.quantile(ratios, 0.025, method="inverted_cdf")
    high = np.quantile(ratios, 0.975, method="inverted_cdf")
    assert res.estimate == 0.75
    assert res.ci == (low, high)
    assert res.details["bootstrap"] == UNPAIRED_BOOT
    assert res.reason.startswith("The 95% CI of the ratio of KM medians (t / b), ")


def test_missing_arm_and_wrong_kind_are_named() -> None:
    b = make_arm("b", [100.0, 200.0])
    with pytest.raises(KeyError, match=r"survival_compare: no data for arm\(s\) \['t'\]"):
        judge(survival(min_effect=0.2), {"b": b})
    v = make_arm("t", [0.5, 0.7], kind="value")
    with pytest.raises(TypeError, match=r"^survival_compare takes time metrics; arm\(s\) 't' "
                                        r"\(value\) carry another kind$"):
        judge(survival(min_effect=0.2), {"b": b, "t": v})


def test_rmst_without_seeds_is_inconclusive() -> None:
    arms = {"b": make_arm("b", [], []), "t": make_arm("t", [10, 20], [1, 0])}
    res = run_survival_compare(rmst_params(), arms)
    assert res.verdict == Verdict.INCONCLUSIVE and res.p_support is None


# ---------------------------------------------------------------- an estimate that is only a bound


def test_estimate_bound_lower_when_the_treated_median_is_beyond_the_budget() -> None:
    """Baseline median 20 (S = 2/3, 1/3 at 10, 20); treated S stays at 2/3: its median is at
    least its largest time 60, so the ratio is at least 60 / 20 = 3."""
    base = make_arm("b", [10, 20, 30])
    treat = make_arm("t", [15, 40, 60], [True, False, False])
    beyond = "the t median is beyond the budget (60 steps)"
    assert estimate_bound(base, treat, "ratio") == (
        3.0, "lower", Has(f"≥ 3: {beyond}", "only a bound is known"))
    assert estimate_bound(base, treat, "difference") == (
        40.0, "lower", Has(f"≥ 40: {beyond}", "only a bound is known"))


def test_baseline_median_beyond_budget_is_reported_as_a_bound() -> None:
    b = make_arm("b", [800, 3000, 3000, 3000, 3000, 3000], [1, 0, 0, 0, 0, 0])
    t = make_arm("t", [400, 500, 600, 700, 900, 3000], [1, 1, 1, 1, 1, 0])
    res = computed(b, t, min_effect=0.2, n_boot=300)
    t_med = km_median(t.values, t.observed)[0]
    assert res.details["estimate_bound"] == "upper"
    assert res.estimate == pytest.approx(median_effect(3000.0, t_med, "ratio"))
    assert f"point estimate ≤ {res.estimate:.3g}" in res.reason, res.reason
    assert "point estimate 0" not in res.reason


# ---------------------------------------------------------------- verdicts on censored arms


BUDGET = 6000.0


def run_claim(base_median: float, treat_median: float, seed: int, **kw: object) -> CriterionResult:
    """Steps to grok logged every 100 steps, censored at a 6000-step budget, 20 seeds an arm."""
    rng = np.random.default_rng(seed)
    base = lognormal("base", base_median, rng, every=100, budget=BUDGET)
    treat = lognormal("treat", treat_median, rng, every=100, budget=BUDGET)
    result = judge(survival(baseline="base", treated="treat", **{"min_effect": 0.2, **kw}),
                   {"base": base, "treat": treat})
    assert format_ci(result.ci) in result.reason
    assert format_number(result.threshold) in result.reason
    return result


@pytest.mark.parametrize("seed", range(3))
def test_clearly_faster_is_supported(seed: int) -> None:
    result = run_claim(4000, 1500, seed)
    assert result.verdict is Verdict.SUPPORTED
    assert result.ci[1] <= 0.8
    assert result.p_value is not None and result.p_value < 0.01


@pytest.mark.parametrize("seed", range(3))
def test_identical_distributions_not_supported(seed: int) -> None:
    result = run_claim(3000, 3000, seed)
    assert result.verdict in (Verdict.INCONCLUSIVE, Verdict.REFUTED)
    assert result.ci[0] <= 1.0 <= result.ci[1] or result.verdict is Verdict.REFUTED


@pytest.mark.parametrize("seed", range(3))
def test_slower_when_claimed_faster_is_refuted(seed: int) -> None:
    result = run_claim(2500, 6000, seed)
    assert result.verdict is Verdict.REFUTED
    assert result.arms[1].columns["censored"] > 0
    assert result.ci[0] > 0.8


def test_straddling_ci_is_inconclusive() -> None:
    result = run_claim(3000, 2400, 0)
    assert result.ci[0] < 0.8 < result.ci[1]
    assert result.verdict is Verdict.INCONCLUSIVE
    assert "straddles" in result.reason


def test_claimed_slower_is_supported_with_greater() -> None:
    result = run_claim(1500, 4500, 1, direction="greater", min_effect=0.5)
    assert result.threshold == pytest.approx(1.5)
    assert result.verdict is Verdict.SUPPORTED


def test_difference_effect_in_steps() -> None:
    result = run_claim(4000, 1500, 2, effect="difference", min_effect=1000)
    assert result.threshold == -1000
    assert result.verdict is Verdict.SUPPORTED
    assert "difference" in result.effect_label and "steps" in result.claimed_region


def test_fewer_seeds_than_the_median_bootstrap_holds_for_decide_nothing() -> None:
    """From 8 seeds an arm the criterion's CI decides; at 7 it is set aside (calibration:
    false verdicts above 0.03 at 4-7 seeds)."""
    fast = [100.0, 110, 120, 130, 140, 150, 160, 170]
    slow = [1000.0, 1100, 1200, 1300, 1400, 1500, 1600, 1700]
    eight = compare(make_arm("b", slow), make_arm("t", fast), min_effect=0.2, n_boot=200)
    assert eight.verdict is Verdict.SUPPORTED and "interval_fails" not in eight.details
    seven = compare(make_arm("b", slow[:7]), make_arm("t", fast[:7]), min_effect=0.2, n_boot=200)
    assert seven.verdict is Verdict.INCONCLUSIVE
    assert "7 seeds in an arm, fewer than the 8" in seven.reason
    assert seven.details["verdict_if_interval_held"] == "SUPPORTED"
