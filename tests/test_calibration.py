"""Simulators with known truths, and a reduced run of benchmarks/calibration.py.

The reduced calibration simulates 150 claims per setting (instead of 1000) for
``survival_compare`` (ties and ~25% censoring, 20 seeds per arm; fixed and group-sequential)
and ``scalar_compare`` (median, 8 seeds per arm), each with the true effect on the boundary of
the claimed region. With 150 claims the Monte Carlo SE of a coverage near 0.95 is ~0.018 and of
a rate near 0.025 ~0.013, so the bounds are loose: coverage >= 0.88 and false SUPPORTED <= 0.10
(the full benchmark's targets are 0.93 and 0.06).
"""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from grokverify.stats import simulate as sim

REPO = Path(__file__).parent.parent


@pytest.fixture(scope="module")
def calibration() -> ModuleType:
    path = REPO / "benchmarks" / "calibration.py"
    spec = importlib.util.spec_from_file_location("grokverify_calibration_benchmark", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


# ---------------------------------------------------------------- simulators


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
    assert sim.observed_median(1250.0, 50.0) == 1300.0  # on the grid: S(1250) is exactly 0.5
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
    from scipy.stats import spearmanr

    assert spearmanr(x, y).statistic == pytest.approx(0.3, abs=0.008)  # SE ~0.002
    arm = sim.correlation_arm("arm", x[:10], y[:10], "grokking_lag", "delay_ratio")
    assert np.all(arm.values >= 0) and np.array_equal(arm.extra["delay_ratio"], y[:10])


def test_two_arm_null_and_alternative() -> None:
    rng = np.random.default_rng(4)
    null = sim.null_two_arm(rng, 5000, 1000.0)
    alt = sim.alternative_two_arm(rng, 5000, 1000.0, 0.5)
    assert np.median(null["treated"].values) == pytest.approx(1000.0, rel=0.05)
    ratio = np.median(alt["treated"].values) / np.median(alt["baseline"].values)
    assert ratio == pytest.approx(0.5, rel=0.05)


def test_first_seeds_keeps_extra() -> None:
    arm = sim.correlation_arm("arm", np.arange(6.0), np.arange(6.0) * 2, "grokking_lag",
                              "delay_ratio")
    head = sim.first_seeds({"arm": arm}, 4)["arm"]
    assert head.n == 4 and head.seeds == (0, 1, 2, 3)
    assert np.array_equal(head.extra["delay_ratio"], [0.0, 2.0, 4.0, 6.0])


# ---------------------------------------------------------------- reduced calibration


def _index(settings: list, criterion: str, n: int, label_part: str) -> int:
    hits = [i for i, s in enumerate(settings)
            if s.criterion == criterion and s.n == n and label_part in s.label and s.null]
    assert hits, (criterion, n, label_part)
    return hits[0]


def test_reduced_calibration(calibration: ModuleType) -> None:
    """150 claims per setting; loose bounds for the reduced size (see the module docstring)."""
    settings = calibration.build_settings(500)
    cases = [(_index(settings, "survival_compare", 20, "ties, censored"), "fixed"),
             (_index(settings, "survival_compare", 20, "ties, censored"), "sequential"),
             (_index(settings, "scalar_compare", 8, "median"), "fixed")]
    for index, design in cases:
        tally = calibration.run_task(index, design, 150, 11, 500, settings=settings)
        label = f"{settings[index].criterion} {settings[index].label} {design}"
        assert tally.claims == 150
        assert tally.coverage >= 0.88, label
        assert tally.supported_rate <= 0.10, label
        if design == "sequential":
            assert tally.mean_seeds <= 20


def test_benchmark_runs_end_to_end(calibration: ModuleType,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    """A tiny full pass (3 claims per setting, one process): every registered criterion is
    simulated, and the last line has the documented form."""
    assert calibration.main(["--claims", "3", "--n-boot", "200", "--workers", "1"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert out[-1].startswith("coverage_min=") and " false_supported_max=" in out[-1]
    assert not any("NO CALIBRATION SETTING" in line for line in out)
    from grokverify.stats import CRITERIA

    for name in CRITERIA:
        assert f"{name}:" in out
