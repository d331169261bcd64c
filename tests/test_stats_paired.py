"""The paired analysis of arms sharing seed numbers in survival_compare, scalar_compare and
equivalence: seeds aligned by number, coverage, the narrower CI, broken pairs, the unpaired
fallback and ``paired: false``, and p's coherent with the CI."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from conftest import correlated_arms

from grokverify.claim.criteria import (
    EquivalenceParams,
    ScalarCompareParams,
    SurvivalCompareParams,
)
from grokverify.stats.base import ArmSample, CriterionResult, Verdict, judge
from grokverify.stats.simulate import make_arm


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


# ---------------------------------------------------------------- seeds aligned by number


def test_paired_criterion_aligns_seeds_by_number() -> None:
    # the same pairs given in another order give the same result
    rng = np.random.default_rng(3)
    b, t = correlated_arms(rng, 10, 0.8)
    order = rng.permutation(10)
    shuffled = make_arm("t", t.values[order], t.observed[order], seeds=np.array(t.seeds)[order])
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
    t9 = make_arm("t", t.values[keep], t.observed[keep], seeds=keep, excluded={"diverged": 1})
    for params in (survival(), scalar(), equiv(margin=0.5, margin_kind="relative")):
        res = run(params, b, t9)
        assert res.details["n_pairs"] == 9 and res.details["broken_pairs"] == {"b": 1, "t": 0}
        assert "1 seed(s) without a partner" in res.reason, res.reason
        assert res.details["analysis"].startswith("paired (9 pairs")


def test_different_seed_sets_fall_back_to_unpaired() -> None:
    b = make_arm("b", [500, 600, 700, 800])
    t = make_arm("t", [400.0, 450, 500, 550], seeds=(10, 11, 12, 13))
    res = run(survival(n_boot=200), b, t)
    assert not res.details["paired"] and res.details["analysis"].startswith("unpaired (")
    assert "different seed sets" in res.details["unpaired_reason"]
    assert "unpaired" in res.test
    declared = run(survival(n_boot=200, paired=False), b, make_arm("t", t.values))
    assert declared.details["analysis"] == "unpaired"
    assert declared.test == "log-rank (statsmodels survdiff)"


# baseline seeds 1 and 10 censored at 1150; the known numbers of each criterion's unpaired
# analysis are pinned below
UNPAIRED_B = make_arm("b", [1114, 1150, 660, 635, 981, 407, 898, 1105, 531, 422, 1150],
                 [1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 0])
UNPAIRED_T = make_arm("t", [479, 882, 640, 424, 262, 363, 711, 1415, 346, 445, 667])


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
def test_paired_false_gives_the_unpaired_numbers(params: Any, expected: tuple[Any, ...]) -> None:
    res = run(params, UNPAIRED_B, UNPAIRED_T)
    assert (res.estimate, res.ci, res.p_value) == expected
    assert res.verdict == Verdict.INCONCLUSIVE and res.details["analysis"] == "unpaired"


# ---------------------------------------------------------------- p-values against θ


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
