"""Every criterion's one-sided p's against θ give its CI's verdict (SUPPORTED <=> p_support <=
α/2, REFUTED <=> p_refute < α/2, `verdict_from_p`), on data from clearly inside its claimed
region through the boundary to clearly outside: what a family's correction relies on."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from conftest import lognormal_arm, normal_arm, run_criterion, share_arm

from grokverify.kinds import CRITERIA
from grokverify.stats.base import ArmSample, Verdict, verdict_from_p
from grokverify.stats.simulate import make_arm

Y = "train_threshold_step"
Case = tuple[dict[str, Any], list[ArmSample]]


def times(name: str, median: float, seed: int, budget: float = math.inf) -> ArmSample:
    return lognormal_arm(name, median, seed, 16, sigma=0.35, budget=budget)


def _two(effects: tuple[float, ...], make: Callable[[str, float, int], ArmSample],
         params: list[dict[str, Any]], base: float) -> list[Case]:
    """Every params x effect x seed, baseline `base`, treated `base * effect` (or + effect)."""
    return [(p, [make("b", base, 2 * seed), make("t", effect, 2 * seed + 1)])
            for p in params for effect in effects for seed in range(2)]


def _survival() -> list[Case]:
    params = [{"name": "survival_compare", "baseline": "b", "treated": "t", "direction": d,
               "min_effect": m, "n_boot": 400} for d, m in (("less", 0.2), ("greater", 0.1))]
    return _two((400, 650, 800, 950, 1300, 2000),
                lambda n, med, s: times(n, med, s, budget=1800), params, 1000)


def _cox() -> list[Case]:
    params = [{"name": "cox_hazard_ratio", "baseline": "b", "treated": "t", "direction": d}
              for d in ("less", "greater")]
    return _two((450, 600, 800, 1000, 1250, 2200),
                lambda n, med, s: times(n, med, s, budget=2200), params, 1000)


def _scalar() -> list[Case]:
    params = [{"name": "scalar_compare", "baseline": "b", "treated": "t", "direction": d,
               "statistic": st, "n_boot": 400}
              for d, st in (("less", "median"), ("greater", "mean"))]
    return _two((450, 700, 800, 900, 1200, 1800), times, params, 1000)


def _equivalence() -> list[Case]:
    two = [({"name": "equivalence", "baseline": "b", "treated": "t", "margin": 0.6},
            [normal_arm("b", 5.0, 2 * s), normal_arm("t", 5.0 + d, 2 * s + 1)])
           for d in (0.0, 0.3, 0.6, 0.9, 2.0) for s in range(2)]
    one = [({"name": "equivalence", "arm": "a", "reference": 3.0, "margin": 0.5},
            [normal_arm("a", 3.0 + d, s)]) for d in (0.0, 0.4, 0.5, 0.7, 2.0) for s in range(2)]
    return two + one


def _proportion() -> list[Case]:
    n = 20
    cases = []
    for method in ("beta", "wilson"):
        for direction, threshold in (("greater", 0.5), ("less", 0.3), ("greater", 0.0),
                                     ("less", 1.0)):
            params = {"name": "proportion", "arm": "a", "direction": direction,
                      "threshold": threshold, "method": method}
            cases += [(params, [make_arm("a", np.arange(n) + 1.0, np.arange(n) < k)])
                      for k in (0, 2, 4, 6, 10, 14, 16, 20)]
    return cases


def _correlation() -> list[Case]:
    cases = []
    for method in ("spearman", "pearson"):
        params = {"name": "correlation", "arm": "a", "x": "val_threshold_step", "y": Y,
                  "direction": "positive", "min_effect": 0.3, "method": method}
        for noise in (0.1, 0.5, 0.9, 1.5, 4.0):
            for slope in (1.0, -1.0):
                rng = np.random.default_rng(int(noise * 10) + (slope > 0))
                x = rng.uniform(0.0, 1.0, 30)
                y = slope * x + noise * rng.normal(0.0, 0.3, 30)
                cases.append((params, [make_arm("a", x, extra={Y: y})]))
    return cases


def _value() -> list[Case]:
    return [({"name": "value", "arm": "a", "target": 3.0, "tol": 0.5, "statistic": st,
              "n_boot": 400}, [normal_arm("a", 3.0 + d, s)])
            for st in ("mean", "median") for d in (0.0, 0.3, 0.5, 0.8, 2.5) for s in range(2)]


def _crossing() -> list[Case]:
    """Shares 0.1, 0.45, 0.9 at x 0.2, 0.3, 0.4 (crossing near 0.31) against regions from
    wholly inside to wholly outside; a lone arm past the level has no crossing."""
    cases = []
    for seed in range(2):
        arms = [share_arm(k, q, 3 * seed + i) for i, (k, q) in enumerate(
            zip("abc", (0.1, 0.45, 0.9), strict=True))]
        for region in ([0.28, 0.36], [0.3, 0.32], [0.31, 0.4], [0.34, 0.5], [0.2, 0.27]):
            cases.append(({"name": "crossing", "points": {"a": 0.2, "b": 0.3, "c": 0.4},
                           "region": region, "n_boot": 400}, arms))
    return cases


def _phase_order() -> list[Case]:
    """Three cells along x, each led by its own phase (family_ok=False: no p's against θ)."""
    arms = [make_arm(k, [c] * 8 + [(c + 1) % 3] * 2, kind="value")
            for k, c in zip("abc", (0, 1, 2), strict=True)]
    return [({"name": "phase_order", "cells": {"a": [1, 0], "b": [2, 0], "c": [3, 0]},
              "n_boot": 400}, arms)]


# criterion -> datasets spanning its claimed region's boundary; a new criterion must add its own
CASES: dict[str, Callable[[], list[Case]]] = {
    "survival_compare": _survival, "cox_hazard_ratio": _cox, "scalar_compare": _scalar,
    "equivalence": _equivalence, "proportion": _proportion, "correlation": _correlation,
    "value": _value, "crossing": _crossing, "phase_order": _phase_order,
}


def test_every_criterion_has_cases() -> None:
    assert set(CASES) == set(CRITERIA)


@pytest.mark.parametrize("name", sorted(CRITERIA))
def test_p_against_theta_gives_the_ci_verdict(name: str) -> None:
    if not CRITERIA[name].family_ok:
        params, arms = CASES[name]()[0]
        assert run_criterion(params, *arms).p_support is None, \
            (f"{name} now gives p-values against θ: set family_ok=True for it in "
             "grokverify/claim/criteria.py")
        pytest.skip(f"{name} declares family_ok=False: it gives no p-values against θ yet, so "
                    "a family of it is refused at load (see test_stats_family.py)")
    verdicts = []
    for params, arms in CASES[name]():
        res = run_criterion(params, *arms)
        where = f"{name} {params} -> {res.verdict.value}, CI {res.ci}"
        if math.isnan(res.estimate):  # no estimate (e.g. separated arms): no p either
            assert res.verdict == Verdict.INCONCLUSIVE and res.p_support is None, where
            continue
        assert res.p_support is not None and res.p_refute is not None, \
            f"{where}: no p against θ although the schema says family_ok"
        assert 0.0 <= res.p_support <= 1.0 and 0.0 <= res.p_refute <= 1.0, where
        alpha = (1.0 - res.ci_level) / 2.0
        assert verdict_from_p(res.p_support, res.p_refute, alpha) == res.verdict, \
            f"{where}: p_support {res.p_support}, p_refute {res.p_refute} at {alpha}"
        verdicts.append(res.verdict)
    assert {Verdict.SUPPORTED, Verdict.REFUTED, Verdict.INCONCLUSIVE} <= set(verdicts), \
        f"{name}: the datasets should reach every verdict, got {set(verdicts)}"
