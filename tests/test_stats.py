"""Tests of the survival statistics: KM medians, log-rank, bootstrap, params and registry."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pydantic
import pytest
from statsmodels.duration.survfunc import SurvfuncRight, survdiff

from grokverify.kinds import CRITERIA
from grokverify.stats.base import ArmSample, CriterionResult, Verdict, judge
from grokverify.stats.survival import (
    SurvivalCompareParams,
    bootstrap_median_effect,
    km_median,
    km_median_batch,
    logrank,
    median_effect,
)

INF = math.inf


def make_arm(
    name: str,
    rng: np.random.Generator,
    median: float,
    n: int = 20,
    budget: float = INF,
    sigma: float = 0.5,
    eval_every: float = 1.0,
) -> ArmSample:
    """Lognormal steps-to-threshold, rounded up to the eval interval, censored at the budget."""
    raw = np.exp(rng.normal(math.log(median), sigma, n))
    steps = np.ceil(raw / eval_every) * eval_every
    observed = steps <= budget
    return ArmSample(name, np.minimum(steps, budget), observed, tuple(range(n)))


def random_censored(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Integer times with many ties; some censored at the budget, some events exactly at it."""
    budget = float(rng.integers(2, 15))
    times = rng.integers(0, int(budget) + 1, size=n).astype(float)
    observed = rng.random(n) < rng.uniform(0.2, 1.0)
    at_budget = rng.random(n) < 0.25
    times[at_budget] = budget
    observed[at_budget] = rng.random(int(at_budget.sum())) < 0.5
    return times, observed


# --- km_median -----------------------------------------------------------------------------


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


# --- km_median_batch -----------------------------------------------------------------------


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


# --- log-rank ------------------------------------------------------------------------------


def test_logrank_matches_survdiff() -> None:
    rng = np.random.default_rng(7)
    a = make_arm("a", rng, 1000, budget=2000, eval_every=100)
    b = make_arm("b", rng, 1300, n=15, budget=2000, eval_every=100)
    chisq, p = survdiff(
        np.concatenate([a.values, b.values]),
        np.concatenate([a.observed, b.observed]).astype(float),
        np.repeat([0, 1], [a.n, b.n]),
    )
    assert logrank(a, b) == pytest.approx((chisq, p), rel=1e-12)


def test_logrank_identical_arms_p_near_one() -> None:
    a = make_arm("a", np.random.default_rng(1), 1000, budget=1500)
    b = ArmSample("b", a.values.copy(), a.observed.copy(), a.seeds)
    chisq, p = logrank(a, b)
    assert chisq == pytest.approx(0.0, abs=1e-12)
    assert p == pytest.approx(1.0, abs=1e-9)


def test_logrank_very_different_arms() -> None:
    rng = np.random.default_rng(2)
    _, p = logrank(make_arm("a", rng, 300, budget=5000), make_arm("b", rng, 3000, budget=5000))
    assert p < 0.01


def test_logrank_without_events_is_undefined() -> None:
    a = ArmSample("a", np.full(3, 10.0), np.zeros(3, bool), (0, 1, 2))
    assert all(math.isnan(x) for x in logrank(a, a))


# --- bootstrap -----------------------------------------------------------------------------


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


def test_bootstrap_reproducible() -> None:
    rng = np.random.default_rng(3)
    a, b = make_arm("a", rng, 1000, budget=1800), make_arm("b", rng, 700, budget=1800)
    first = bootstrap_median_effect(a, b, "ratio", 500, seed=11, ci_level=0.95)
    assert first == bootstrap_median_effect(a, b, "ratio", 500, seed=11, ci_level=0.95)
    assert first[1] != bootstrap_median_effect(a, b, "ratio", 500, seed=12, ci_level=0.95)[1]


def test_bootstrap_recovers_true_ratio() -> None:
    rng = np.random.default_rng(4)
    base, treat = make_arm("base", rng, 2000), make_arm("treat", rng, 1000)
    estimate, (low, high), details = bootstrap_median_effect(
        base, treat, "ratio", 2000, seed=0, ci_level=0.95
    )
    assert low < 0.5 < high < 1.0
    assert low <= estimate <= high
    assert details["n_undefined_resamples"] == 0
    assert details["n_boot"] == 2000


def test_bootstrap_difference_effect() -> None:
    rng = np.random.default_rng(5)
    base, treat = make_arm("base", rng, 2000, sigma=0.2), make_arm("treat", rng, 1000, sigma=0.2)
    _, (low, high), _ = bootstrap_median_effect(base, treat, "difference", 1000, 0, 0.95)
    assert low < -1000 < high < 0


def test_bootstrap_heavy_censoring_gives_inf_not_nan() -> None:
    rng = np.random.default_rng(6)
    base = make_arm("base", rng, 1000, budget=3000)
    treat = make_arm("treat", rng, 3000, budget=3000)  # about half censored at the budget
    estimate, (low, high), details = bootstrap_median_effect(base, treat, "ratio", 2000, 0, 0.95)
    assert high == INF
    assert not math.isnan(low) and not math.isnan(estimate)
    assert details["n_treated_median_beyond_budget"] > 0
    assert not any(isinstance(v, float) and math.isnan(v) for v in details.values())


def _exact_km_median(times: np.ndarray, observed: np.ndarray) -> float:
    """KM median in exact (rational) arithmetic: the first event time with S < 1/2; where S is
    exactly 1/2 the midpoint of that event time and the next one (or the largest time)."""
    t, o = np.asarray(times, float), np.asarray(observed, bool)
    surv, half_at = Fraction(1), None
    for u in np.unique(t):
        d = int(o[t == u].sum())
        if not d:
            continue
        if half_at is not None:
            return (half_at + float(u)) / 2
        surv *= 1 - Fraction(d, int((t >= u).sum()))
        if surv < Fraction(1, 2):
            return float(u)
        if surv == Fraction(1, 2):
            half_at = float(u)
    return INF if half_at is None else (half_at + float(t.max())) / 2


def _bounded_effects(base: ArmSample, treat: ArmSample, effect: str, n_boot: int,
                     seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Each resample's effect interval, computed resample by resample with an exact KM median
    (`_exact_km_median`): an unreached median lies in [largest time of the resample, inf)."""
    rng = np.random.default_rng(seed)
    idx_b = rng.integers(0, base.n, size=(n_boot, base.n))
    idx_t = rng.integers(0, treat.n, size=(n_boot, treat.n))
    lows, highs = [], []
    for ib, it in zip(idx_b, idx_t, strict=True):
        ends = []
        for arm_, i in ((base, ib), (treat, it)):
            med = _exact_km_median(arm_.values[i], arm_.observed[i])
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
    base = make_arm("base", rng, 2500, budget=3000)  # the median is often not reached
    treat = make_arm("treat", rng, 2000, budget=3000)
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


def test_bootstrap_finite_medians_unchanged() -> None:
    rng = np.random.default_rng(9)
    base, treat = make_arm("base", rng, 1000), make_arm("treat", rng, 700)
    _, (low, high), details = bootstrap_median_effect(base, treat, "ratio", 300, 1, 0.95)
    lows, highs = _bounded_effects(base, treat, "ratio", 300, 1)
    assert np.array_equal(lows, highs)  # every median reached: a point per resample
    assert (low, high) == tuple(np.quantile(lows, [0.025, 0.975], method="inverted_cdf"))
    assert details["n_bounded_resamples"] == 0


def test_bootstrap_all_censored_is_unbounded() -> None:
    # no median is reached anywhere: each is only known to be >= 100, so the ratio is (0, inf)
    arm = ArmSample("a", np.full(5, 100.0), np.zeros(5, bool), tuple(range(5)))
    estimate, (low, high), details = bootstrap_median_effect(arm, arm, "ratio", 200, 0, 0.95)
    assert math.isnan(estimate) and (low, high) == (0.0, INF)
    assert details["n_bounded_resamples"] == 200 and details["n_undefined_resamples"] == 0


# --- params, registry, results -------------------------------------------------------------


def params(**kw: object) -> dict[str, object]:
    base = {"name": "survival_compare", "baseline": "b", "treated": "t", "direction": "less"}
    return base | {"min_effect": 0.2} | kw


def test_params_valid_and_thresholds() -> None:
    assert SurvivalCompareParams.model_validate(params()).threshold == pytest.approx(0.8)
    greater = SurvivalCompareParams.model_validate(params(direction="greater", min_effect=1.5))
    assert greater.threshold == pytest.approx(2.5)
    diff = SurvivalCompareParams.model_validate(params(effect="difference", min_effect=500))
    assert diff.threshold == -500
    assert diff.n_boot == 2000 and diff.ci_level == 0.95


@pytest.mark.parametrize(
    "bad",
    [
        params(extra_key=1),
        params(treated="b"),
        params(min_effect=1.0),
        params(min_effect=-0.1),
        params(ci_level=1.0),
        params(n_boot=10),
        params(name="other"),
    ],
)
def test_params_rejected(bad: dict[str, object]) -> None:
    with pytest.raises(pydantic.ValidationError):
        SurvivalCompareParams.model_validate(bad)


def test_registry() -> None:
    crit = CRITERIA["survival_compare"]
    assert crit is SurvivalCompareParams
    assert SurvivalCompareParams.model_validate(params()).arms() == ["b", "t"]
    register = CRITERIA.register(CRITERIA.path("survival_compare"))
    assert register(crit) is crit  # re-registering the same class is harmless

    class Clash(SurvivalCompareParams):
        pass
    with pytest.raises(ValueError, match="already registered"):
        register(Clash)


def test_run_missing_arm() -> None:
    arm = make_arm("b", np.random.default_rng(0), 100)
    with pytest.raises(KeyError):
        judge(SurvivalCompareParams.model_validate(params()), {"b": arm})


def test_result_to_dict_is_json_with_inf_strings() -> None:
    rng = np.random.default_rng(6)
    arms = {
        "b": make_arm("b", rng, 1000, budget=3000),
        "t": make_arm("t", rng, 3000, budget=3000),
    }
    arms["t"] = ArmSample("t", arms["t"].values, arms["t"].observed, arms["t"].seeds, {"nan": 1})
    result = judge(SurvivalCompareParams.model_validate(params()), arms)
    assert isinstance(result, CriterionResult)
    assert isinstance(result.verdict, Verdict)
    out = json.loads(json.dumps(result.to_dict(), allow_nan=False))
    assert out["ci"][1] == "inf"
    assert out["verdict"] == result.verdict.value
    assert out["arms"][1]["excluded"] == {"nan": 1}
    assert out["arms"][0]["n"] == 20


def test_arm_sample_validation() -> None:
    with pytest.raises(ValueError):
        ArmSample("a", np.ones(3), np.ones(2, bool), (0, 1, 2))
    with pytest.raises(ValueError):
        ArmSample("a", np.ones(3), np.ones(3, bool), (0, 1))
    with pytest.raises(ValueError):
        ArmSample("a", np.array([1.0, np.inf]), np.ones(2, bool), (0, 1))


@pytest.mark.parametrize("module", ["grokverify.stats.verdict", "grokverify.stats.survival"])
def test_import_order_has_no_cycle(module: str) -> None:
    subprocess.run([sys.executable, "-c", f"import {module}"], check=True)


def test_arm_with_no_usable_seed_is_inconclusive_not_an_error() -> None:
    import numpy as np

    from grokverify.stats.base import ArmSample, Verdict
    from grokverify.stats.survival import SurvivalCompareParams

    params = SurvivalCompareParams(name="survival_compare", baseline="a", treated="b",
                                   direction="less", min_effect=0.2)
    empty = ArmSample("a", np.array([]), np.array([], dtype=bool), (), {"diverged": 3})
    full = ArmSample("b", np.array([10.0, 20.0]), np.array([True, True]), (0, 1))
    res = judge(params, {"a": empty, "b": full})
    assert res.verdict == Verdict.INCONCLUSIVE
    assert "arm 'a' has no usable seed" in res.reason and "diverged: 3" in res.reason
    assert res.to_dict()["ci"] == [None, None]
