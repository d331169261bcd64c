"""survival_compare with ``summary: rmst``: the restricted mean time to threshold up to τ (area
under the KM curve), its bootstrap CI and p-values, and that the median path is unchanged."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from pydantic import ValidationError
from scipy import stats as sps

from grokverify.stats.base import ArmSample, verdict_from_p
from grokverify.stats.survival import (
    SurvivalCompareParams,
    bootstrap_rmst_effect,
    rmst,
    rmst_batch,
    rmst_tau,
    run_survival_compare,
)
from grokverify.stats.verdict import Verdict


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


def arm(name: str, times: Any, observed: Any, seeds: Any = None) -> ArmSample:
    t = np.asarray(times, dtype=float)
    return ArmSample(name, t, np.asarray(observed, dtype=bool),
                     tuple(range(t.size)) if seeds is None else tuple(seeds))


def params(**kw: Any) -> SurvivalCompareParams:
    base = {"name": "survival_compare", "baseline": "b", "treated": "t", "summary": "rmst",
            "direction": "less", "min_effect": 0.2, "n_boot": 400}
    return SurvivalCompareParams.model_validate({**base, **kw})


# ---------------------------------------------------------------- the RMST itself


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
    b, t = arm("b", [5, 9, 12], [1, 1, 0]), arm("t", [3, 4, 7], [1, 1, 1])
    assert rmst_tau([b, t], None)[0] == 12.0
    assert rmst_tau([b, t], 10.0) == (10.0, "the claim's tau")
    with pytest.raises(ValueError):
        rmst_batch(np.ones((2, 3)), np.ones((2, 3), dtype=bool), 0.0)


# ---------------------------------------------------------------- the bootstrap


def _order_stat(x: np.ndarray, q: float) -> float:
    """The inverted-CDF quantile by hand: the ceil(q B)-th smallest value."""
    return float(np.sort(x)[math.ceil(q * x.size - 1e-9) - 1])


B_TIMES, B_OBS = [120, 300, 300, 450, 500, 500, 500], [1, 1, 1, 1, 0, 0, 0]
T_TIMES, T_OBS = [100, 200, 260, 300, 380, 500, 420], [1, 1, 1, 1, 1, 0, 1]


@pytest.mark.parametrize("paired", [True, False])
@pytest.mark.parametrize("effect", ["ratio", "difference"])
def test_bootstrap_equals_hand_joint_resampling(paired: bool, effect: str) -> None:
    """Joint (paired) or per-arm resampling of seed indices by hand, and the percentile
    interval at Hesterberg's expanded level for 7 seeds, 1 - 2 Phi(-sqrt(7/6) t_(6, 0.95))."""
    b, t = arm("b", B_TIMES, B_OBS), arm("t", T_TIMES, T_OBS)
    n_boot, seed, tau = 40, 17, 500.0
    estimate, ci, details = bootstrap_rmst_effect(b, t, effect, tau, n_boot, seed, 0.9,
                                                  region=("less", 0.8), paired=paired)
    rng = np.random.default_rng(seed)
    bi = rng.integers(0, 7, size=(n_boot, 7))
    ti = bi if paired else rng.integers(0, 7, size=(n_boot, 7))
    rb = np.array([ref_rmst(b.values[i], b.observed[i], tau) for i in bi])
    rt = np.array([ref_rmst(t.values[i], t.observed[i], tau) for i in ti])
    eff = np.sort(rt / rb if effect == "ratio" else rt - rb)
    level = 1 - 2 * sps.norm.cdf(-math.sqrt(7 / 6) * sps.t.ppf(0.95, 6))
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
    b, t = arm("b", [300.0], [1]), arm("t", [200.0, 250.0], [1, 1])
    estimate, ci, details = bootstrap_rmst_effect(b, t, "ratio", 500.0, 50, 1, 0.95)
    assert estimate == pytest.approx(225.0 / 300.0)
    assert math.isnan(ci[0]) and math.isnan(ci[1]) and "2 seeds" in details["no_ci"]


def _shifted(factor: float, n: int = 16, seed: int = 3) -> dict[str, ArmSample]:
    rng = np.random.default_rng(seed)
    z = rng.normal(size=n)
    budget = 5000.0
    base = np.round(3000 * np.exp(0.4 * z + 0.2 * rng.normal(size=n)))
    treat = np.round(3000 * factor * np.exp(0.4 * z + 0.2 * rng.normal(size=n)))
    return {"b": arm("b", np.minimum(base, budget), base < budget),
            "t": arm("t", np.minimum(treat, budget), treat < budget)}


@pytest.mark.parametrize("paired", [True, False])
@pytest.mark.parametrize(("direction", "effect", "min_effect"), [
    ("less", "ratio", 0.1), ("greater", "ratio", 0.1),
    ("less", "difference", 150.0), ("greater", "difference", 150.0)])
def test_p_coherent_with_the_ci_around_theta(paired: bool, direction: str, effect: str,
                                             min_effect: float) -> None:
    seen = set()
    for factor in np.linspace(0.4, 2.0, 25):
        p = params(direction=direction, effect=effect, min_effect=min_effect, paired=paired,
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
    return {"b": arm("b", np.minimum(b, budget), b < budget),
            "t": arm("t", np.minimum(t, budget), t < budget)}


def test_heavy_censoring_rmst_refutes_a_false_faster_claim() -> None:
    """Truth: treated 20% slower (time ratio 1.2); 40% of the baseline censored. The RMST ratio's
    CI is finite and refutes "treated at least 20% faster"; the median's CI often starts at 0."""
    rng = np.random.default_rng(2024)
    rmst_refuted = median_low_zero = 0
    censored = []
    for rep in range(6):
        arms = _censored_pair(rng, 20, 1.2)
        censored.append(1 - arms["b"].events / arms["b"].n)
        res = run_survival_compare(params(n_boot=1000, bootstrap_seed=rep), arms)
        assert all(math.isfinite(x) for x in res.ci)
        assert res.verdict != Verdict.SUPPORTED
        rmst_refuted += res.verdict == Verdict.REFUTED
        median = run_survival_compare(params(summary="median", n_boot=1000,
                                             bootstrap_seed=rep), arms)
        median_low_zero += median.ci[0] == 0.0
    assert 0.25 <= float(np.mean(censored)) <= 0.55
    assert rmst_refuted >= 5
    assert median_low_zero >= 1


# ---------------------------------------------------------------- the criterion


def test_rmst_result_shape() -> None:
    arms = _shifted(0.8)
    res = run_survival_compare(params(), arms)
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
    given = run_survival_compare(params(tau=3000.0), arms)
    assert given.details["tau"] == 3000.0 and given.details["tau_source"] == "the claim's tau"
    assert "τ = 3000" in given.effect_label
    diff = run_survival_compare(params(effect="difference", min_effect=100.0), arms)
    assert diff.effect_label.startswith("difference of restricted mean times")
    assert diff.threshold == -100.0


def test_rmst_without_seeds_is_inconclusive() -> None:
    arms = {"b": arm("b", [], []), "t": arm("t", [10, 20], [1, 0])}
    res = run_survival_compare(params(), arms)
    assert res.verdict == Verdict.INCONCLUSIVE and res.p_support is None


def test_schema() -> None:
    assert SurvivalCompareParams.model_validate(
        {"name": "survival_compare", "baseline": "b", "treated": "t", "direction": "less",
         "min_effect": 0.2}).summary == "median"
    with pytest.raises(ValidationError):
        params(summary="median", tau=100.0)
    with pytest.raises(ValidationError):
        params(tau=0.0)
    with pytest.raises(ValidationError):
        params(summary="mean")
    assert params(direction="greater", min_effect=0.3).threshold == pytest.approx(1.3)


# ---------------------------------------------------------------- the median path is unchanged

FIXED_B = [4000, 4000, 3604, 1863, 1327, 2639, 4000, 2735, 4000, 4000, 3390, 2129, 1843, 4000]
FIXED_T = [3323, 4000, 3840, 1770, 1438, 3435, 2966, 3740, 4000, 2676, 3950, 1641, 1426, 3292]
# Computed with the code before `summary` existed (n_boot 500, bootstrap_seed 3, less).
BEFORE = {
    ("ratio", True): (0.9458106948813269, (0.0, 1.2575362858206178), 0.576, 0.434),
    ("ratio", False): (0.9458106948813269, (0.0, 1.391886862672125), 0.574, 0.45),
    ("difference", True): (-189.5, (-math.inf, 700.0), 0.484, 0.52),
    ("difference", False): (-189.5, (-math.inf, 1051.0), 0.472, 0.542),
}


@pytest.mark.parametrize(("effect", "paired"), list(BEFORE))
@pytest.mark.parametrize("explicit", [True, False])
def test_median_results_unchanged(effect: str, paired: bool, explicit: bool) -> None:
    arms = {"c1": arm("c1", FIXED_B, np.array(FIXED_B) < 4000),
            "c10": arm("c10", FIXED_T, np.array(FIXED_T) < 4000)}
    raw: dict[str, Any] = {"name": "survival_compare", "baseline": "c1", "treated": "c10",
                           "effect": effect, "direction": "less", "paired": paired,
                           "min_effect": 0.1 if effect == "ratio" else 200.0, "n_boot": 500,
                           "bootstrap_seed": 3}
    if explicit:
        raw["summary"] = "median"
    res = run_survival_compare(SurvivalCompareParams.model_validate(raw), arms)
    estimate, ci, p_support, p_refute = BEFORE[(effect, paired)]
    assert res.estimate == estimate and res.ci == ci
    assert (res.p_support, res.p_refute) == (p_support, p_refute)
    assert res.verdict == Verdict.INCONCLUSIVE
    assert "tau" not in res.details and "RMST" not in str(res.arms[0].columns)
    op = "/" if effect == "ratio" else "-"
    assert res.effect_label == f"{effect} of KM medians (c10 {op} c1)"
