"""The simulators with known truths (grokverify/stats/simulate.py): censoring budgets, rounding to
the evaluation grid and the observed median, Weibull hazard ratios, correlation truths, two-arm
draws, and the first seeds of a sequential design."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import spearmanr

from grokverify.stats import simulate as sim


def test_budget_and_censored_fraction_agree() -> None:
    b = sim.budget_for_censoring(1000.0, 0.5, 0.3)
    assert sim.censored_fraction(1000.0, 0.5, b) == pytest.approx(0.3)
    assert sim.budget_for_censoring(1000.0, 0.5, 0.0) == math.inf
    t, o = sim.censored_lognormal(np.random.default_rng(0), 20000, 1000.0, 0.5, b)
    assert (~o).mean() == pytest.approx(0.3, abs=0.015)
    assert np.all(t[~o] == b) and np.all(t <= b)


def test_rounding_and_observed_median() -> None:
    t, o = sim.censored_lognormal(np.random.default_rng(1), 20001, 1240.0, 0.5,
                                  eval_interval=50.0)
    assert np.all(t % 50 == 0) and o.all()
    assert sim.observed_median(1240.0, 50.0) == 1250.0
    # on the grid: S(1250) is exactly 0.5, so the KM convention takes the midpoint with 1300
    assert sim.observed_median(1250.0, 50.0) == 1275.0
    assert sim.observed_median(1240.0, 50.0, budget=1200.0) == math.inf
    # the first grid point with S < 0.5, as the Kaplan-Meier convention
    assert np.mean(t > 1250.0) < 0.5 < np.mean(t > 1200.0)
    assert sim.true_median_ratio(1240.0, 0.8, 50.0) == pytest.approx(1000.0 / 1250.0)


def test_weibull_hazard_ratio_and_median() -> None:
    r = sim.weibull_median_ratio_for_hr(1.25, 2.0)
    assert r == pytest.approx(1.25 ** -0.5)
    t, _ = sim.weibull_times(np.random.default_rng(2), 40000, 800.0, 2.0)
    assert np.median(t) == pytest.approx(800.0, rel=0.02)


def test_correlation_truths() -> None:
    rho = sim.pearson_for_spearman(0.3)
    assert sim.spearman_of_pearson(rho) == pytest.approx(0.3)
    x, y = sim.correlated_pair(np.random.default_rng(1), 200_000, rho)
    assert spearmanr(x, y).statistic == pytest.approx(0.3, abs=0.008)  # SE ~0.002
    arm = sim.correlation_arm("arm", x[:10], y[:10], "grokking_lag", "delay_ratio")
    assert np.all(arm.values >= 0) and np.array_equal(arm.extra["delay_ratio"], y[:10])


def test_two_arm_null_and_alternative() -> None:
    rng = np.random.default_rng(4)
    null = sim.two_arm_times(rng, 5000, 1000.0, 1.0)
    alt = sim.two_arm_times(rng, 5000, 1000.0, 0.5)
    assert np.median(null["treated"].values) == pytest.approx(1000.0, rel=0.05)
    ratio = np.median(alt["treated"].values) / np.median(alt["baseline"].values)
    assert ratio == pytest.approx(0.5, rel=0.05)


def test_first_seeds_keeps_extra() -> None:
    arm = sim.correlation_arm("arm", np.arange(6.0), np.arange(6.0) * 2, "grokking_lag",
                              "delay_ratio")
    head = sim.first_seeds({"arm": arm}, 4)["arm"]
    assert head.n == 4 and head.seeds == (0, 1, 2, 3)
    assert np.array_equal(head.extra["delay_ratio"], [0.0, 2.0, 4.0, 6.0])
