"""Paired analysis of arms that share seeds (issue 13): the joint bootstrap by hand, coverage with
independent and with correlated arms, the gain in width, broken pairs, ``paired: false`` as the
analysis always was, p-values coherent with the CI, the KM median at S = 1/2 exactly, bounds
for an estimate when a median is beyond the budget, and paired seed planning."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from grokverify.claim.criteria import (
    EquivalenceParams,
    ScalarCompareParams,
    SurvivalCompareParams,
)
from grokverify.stats.base import ArmSample, CriterionResult, Verdict, judge
from grokverify.stats.common import pair_arms
from grokverify.stats.power import plan_seeds
from grokverify.stats.simulate import correlated_pair, lognormal_times, make_arm
from grokverify.stats.survival import (
    bootstrap_median_effect,
    km_median,
    km_median_batch,
    median_effect,
)

INF = math.inf


def survival(**kw: Any) -> SurvivalCompareParams:
    return SurvivalCompareParams(**{"name": "survival_compare", "baseline": "b", "treated": "t",
                                    "direction": "less", "min_effect": 0.2, **kw})


def scalar(**kw: Any) -> ScalarCompareParams:
    return ScalarCompareParams(**{"name": "scalar_compare", "baseline": "b", "treated": "t",
                                  "direction": "less", **kw})


def equiv(**kw: Any) -> EquivalenceParams:
    return EquivalenceParams(**{"name": "equivalence", "baseline": "b", "treated": "t", **kw})


def run(params: Any, b: ArmSample, t: ArmSample) -> CriterionResult:
    return judge(params, {"b": b, "t": t})


def correlated_arms(rng: np.random.Generator, n: int, rho: float, ratio: float = 0.7,
                    sigma: float = 0.5, budget: float = INF) -> tuple[ArmSample, ArmSample]:
    """Log-normal times, seed i's log times correlated at rho across the arms (seeds 0..n-1)."""
    zb, zt = correlated_pair(rng, n, rho)
    b, t = (lognormal_times(z, m, sigma, budget) for z, m in ((zb, 1000.0), (zt, 1000 * ratio)))
    return make_arm("b", *b), make_arm("t", *t)


# ---------------------------------------------------------------- the joint bootstrap by hand


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


def test_paired_criterion_aligns_seeds_by_number() -> None:
    # the same pairs given in another order give the same result
    rng = np.random.default_rng(3)
    b, t = correlated_arms(rng, 10, 0.8)
    order = rng.permutation(10)
    shuffled = ArmSample("t", t.values[order], t.observed[order], tuple(np.array(t.seeds)[order]))
    one, two = run(survival(n_boot=400), b, t), run(survival(n_boot=400), b, shuffled)
    assert one.ci == two.ci and one.estimate == two.estimate
    assert one.details["analysis"].startswith("paired (10 pairs, within-pair correlation")


# ---------------------------------------------------------------- coverage and width

N_REP = 200  # Monte Carlo error of a coverage near 0.95: sqrt(.95 * .05 / 200) = 0.015


@pytest.mark.parametrize("rho", [0.0, 0.8])
def test_paired_ci_keeps_coverage(rho: float) -> None:
    """The 95% CIs cover the true ratio 0.7 in >= 0.9 of 200 experiments (n = 12 pairs), arms
    independent or correlated at 0.8; 0.9 is more than 3 Monte Carlo errors below 0.95."""
    rng = np.random.default_rng(2024)
    hits = {"survival": 0, "scalar": 0}
    for i in range(N_REP):
        b, t = correlated_arms(rng, 12, rho)
        s = run(survival(n_boot=400, bootstrap_seed=i), b, t)
        g = run(scalar(statistic="mean", n_boot=400, bootstrap_seed=i), b, t)  # geometric mean
        assert s.details["paired"] and g.details["paired"]
        hits["survival"] += s.ci[0] <= 0.7 <= s.ci[1]
        hits["scalar"] += g.ci[0] <= 0.7 <= g.ci[1]
    for name, h in hits.items():
        assert h / N_REP >= 0.9, (name, rho, h / N_REP)


def test_paired_ci_is_narrower_on_correlated_arms() -> None:
    rng = np.random.default_rng(5)
    width = {True: [], False: []}
    for i in range(30):
        b, t = correlated_arms(rng, 12, 0.8)
        for paired in (True, False):
            ci = run(survival(n_boot=400, bootstrap_seed=i, paired=paired), b, t).ci
            width[paired].append(math.log(ci[1] / ci[0]))
    assert np.median(width[True]) < 0.75 * np.median(width[False])


# ---------------------------------------------------------------- pairs and fallbacks


def test_broken_pairs_are_counted_and_reported() -> None:
    rng = np.random.default_rng(6)
    b, t = correlated_arms(rng, 10, 0.8)
    keep = [i for i in range(10) if i != 4]  # seed 4 left out of treated (diverged)
    t9 = ArmSample("t", t.values[keep], t.observed[keep], tuple(keep), {"diverged": 1})
    for params in (survival(), scalar(), equiv(margin=0.5, margin_kind="relative")):
        res = run(params, b, t9)
        assert res.details["n_pairs"] == 9 and res.details["broken_pairs"] == {"b": 1, "t": 0}
        assert "1 seed(s) without a partner" in res.reason, res.reason
        assert res.details["analysis"].startswith("paired (9 pairs")


def test_different_seed_sets_fall_back_to_unpaired() -> None:
    b = make_arm("b", [500, 600, 700, 800])
    t = ArmSample("t", np.array([400.0, 450, 500, 550]), np.ones(4, bool), (10, 11, 12, 13))
    res = run(survival(n_boot=200), b, t)
    assert not res.details["paired"] and res.details["analysis"].startswith("unpaired (")
    assert "different seed sets" in res.details["unpaired_reason"]
    assert "unpaired" in res.test
    declared = run(survival(n_boot=200, paired=False), b, make_arm("t", t.values))
    assert declared.details["analysis"] == "unpaired"
    assert declared.test == "log-rank (statsmodels survdiff)"


def test_within_pair_correlation_is_spearman_with_censored_at_budget() -> None:
    b = make_arm("b", [100, 200, 300, 900, 900], [1, 1, 1, 0, 0])
    t = make_arm("t", [50, 150, 250, 400, 900], [1, 1, 1, 1, 0])
    pairing = pair_arms(b, t, True)
    # ranks (1, 2, 3, 4.5, 4.5) and (1, .., 5): deviations (-2, -1, 0, 1.5, 1.5), (-2, .., 2)
    assert pairing.correlation == pytest.approx(9.5 / math.sqrt(9.5 * 10.0))
    assert pairing.n_pairs == 5 and pairing.broken == {"b": 0, "t": 0}


# ---------------------------------------------------------------- paired: false is the old analysis

# baseline seeds 1 and 10 censored at 1150; computed with the code before pairing existed
OLD_B = make_arm("b", [1114, 1150, 660, 635, 981, 407, 898, 1105, 531, 422, 1150],
                 [1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 0])
OLD_T = make_arm("t", [479, 882, 640, 424, 262, 363, 711, 1415, 346, 445, 667])


@pytest.mark.parametrize(("params", "expected"), [
    (survival(n_boot=500, paired=False),
     (0.5334075723830735, (0.37003058103975534, 1.1196850393700788), 0.12479076542502654)),
    (scalar(statistic="mean", n_boot=500, paired=False),
     (0.7327957583121617, (0.5142348432562523, 1.2165324258897336), None)),
    (scalar(statistic="median", effect="difference", min_effect=100, n_boot=500, paired=False),
     (-419.0, (-707.7338415759145, 7.0), None)),
    (equiv(margin=0.3, margin_kind="relative", censored="as_budget", paired=False),
     (0.702460103086841, (0.5064894593301041, 0.9742556085598012), 0.49270444319125806)),
])
def test_unpaired_reproduces_the_old_numbers(params: Any, expected: tuple[Any, ...]) -> None:
    res = run(params, OLD_B, OLD_T)
    assert (res.estimate, res.ci, res.p_value) == expected
    assert res.verdict == Verdict.INCONCLUSIVE and res.details["analysis"] == "unpaired"


# ---------------------------------------------------------------- p-values against theta


@pytest.mark.parametrize("params", [
    scalar(statistic="mean", n_boot=500), scalar(statistic="median", n_boot=500),
    scalar(statistic="iqm", effect="difference", min_effect=150, n_boot=500),
    scalar(statistic="mean", n_boot=500, paired=False),
    scalar(statistic="median", n_boot=500, direction="greater", min_effect=0.1),
    survival(n_boot=500), survival(n_boot=500, paired=False),
])
def test_p_values_are_coherent_with_the_ci(params: Any) -> None:
    """SUPPORTED <=> p_support <= alpha/2 and REFUTED <=> p_refute <= alpha/2, at the CI level."""
    rng = np.random.default_rng(8)
    seen = set()
    for i, ratio in enumerate(np.linspace(0.3, 1.4, 24)):
        b, t = correlated_arms(rng, 12, 0.7, ratio=float(ratio))
        res = run(params.model_copy(update={"bootstrap_seed": i}), b, t)
        half = (1 - res.ci_level) / 2
        assert (res.verdict == Verdict.SUPPORTED) == (res.p_support <= half), res.reason
        assert (res.verdict == Verdict.REFUTED) == (res.p_refute <= half), res.reason
        seen.add(res.verdict)
    assert seen == {Verdict.SUPPORTED, Verdict.REFUTED, Verdict.INCONCLUSIVE}


@pytest.mark.parametrize("paired", [True, False])
def test_equivalence_p_values_match_the_tost(paired: bool) -> None:
    rng = np.random.default_rng(9)
    seen = set()
    for ratio in np.linspace(0.5, 1.6, 30):
        b, t = correlated_arms(rng, 12, 0.8, ratio=float(ratio), sigma=0.3)
        res = run(equiv(margin=0.2, margin_kind="relative", paired=paired), b, t)
        assert res.p_support == pytest.approx(res.p_value, rel=1e-9)
        assert (res.verdict == Verdict.SUPPORTED) == (res.p_support <= 0.05)
        assert (res.verdict == Verdict.REFUTED) == (res.p_refute < 0.05)
        seen.add(res.verdict)
    assert seen == {Verdict.SUPPORTED, Verdict.REFUTED, Verdict.INCONCLUSIVE}


def test_paired_equivalence_is_a_one_sample_tost_of_differences() -> None:
    b = make_arm("b", [10.2, 9.8, 10.5, 9.9, 10.1, 10.4, 9.7, 10.0], kind="value")
    t = make_arm("t", [10.3, 10.0, 10.6, 10.0, 10.1, 10.6, 9.8, 10.2], kind="value")
    res = run(equiv(margin=0.3), b, t)
    d = t.values - b.values
    se = d.std(ddof=1) / math.sqrt(d.size)
    from scipy import stats as sps
    half = sps.t.ppf(0.95, d.size - 1) * se
    assert res.ci == pytest.approx((d.mean() - half, d.mean() + half), rel=1e-12)
    assert res.verdict == Verdict.SUPPORTED and "paired" in res.test


# ---------------------------------------------------------------- KM median at S = 1/2


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


# ---------------------------------------------------------------- an estimate that is a bound


def test_baseline_median_beyond_budget_is_reported_as_a_bound() -> None:
    b = make_arm("b", [800, 3000, 3000, 3000, 3000, 3000], [1, 0, 0, 0, 0, 0])
    t = make_arm("t", [400, 500, 600, 700, 900, 3000], [1, 1, 1, 1, 1, 0])
    res = run(survival(n_boot=300), b, t)
    t_med = km_median(t.values, t.observed)[0]
    assert res.details["estimate_bound"] == "upper"
    assert res.estimate == pytest.approx(median_effect(3000.0, t_med, "ratio"))
    assert f"point estimate ≤ {res.estimate:.3g}" in res.reason, res.reason
    assert "point estimate 0" not in res.reason


# ---------------------------------------------------------------- planning


def test_plan_uses_pairs_and_needs_fewer_seeds() -> None:
    rng = np.random.default_rng(10)
    b, t = correlated_arms(rng, 12, 0.9, ratio=0.6, sigma=0.5)
    pilot = {"b": b, "t": t}
    kw: dict[str, Any] = {"candidates": (4, 8, 12), "n_sim": 40, "seed": 1}
    paired = plan_seeds(survival(n_boot=300), pilot, **kw)
    unpaired = plan_seeds(survival(n_boot=300, paired=False), pilot, **kw)
    assert paired.assumptions["paired"] and "pilot's pairs" in paired.explanation
    assert sum(paired.power) > sum(unpaired.power) + 0.3, (paired.power, unpaired.power)
    declared = plan_seeds(survival(n_boot=300), pilot, effect=0.6, **kw)
    assert declared.assumptions["correlation"] > 0.7 and "copula" in declared.explanation
