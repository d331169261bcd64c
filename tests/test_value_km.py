"""`value` with `statistic: median` on a time metric with censored seeds: the Kaplan-Meier median
and its Brookmeyer-Crowley CI, the same as the arm table's (issue 13, "Smaller"), with p's
against the region's ends that invert that CI. Uncensored samples and the mean keep their
numbers from before the change (captured from the previous code)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from scipy.stats import norm
from statsmodels.duration.survfunc import SurvfuncRight

from grokverify.kinds import CRITERIA
from grokverify.stats.base import ArmSample, CriterionResult, Verdict, judge, verdict_from_p
from grokverify.stats.scalar import _bc_sides, _bc_tail_p
from grokverify.stats.survival import km_columns

BUDGET = 10000.0


def arm(values: Any, observed: Any = None, kind: str = "time") -> ArmSample:
    v = np.asarray(values, dtype=float)
    o = np.ones(v.size, bool) if observed is None else np.asarray(observed, bool)
    return ArmSample("a", v, o, tuple(range(v.size)), {}, {}, kind=kind)  # type: ignore[arg-type]


def run(a: ArmSample, **params: Any) -> CriterionResult:
    crit = CRITERIA["value"]
    p = crit.model_validate({"name": "value", "arm": "a", "statistic": "median",
                                          "censored": "as_budget", **params})
    return judge(p, {"a": a})


def table(a: ArmSample, level: float = 0.95) -> tuple[float, tuple[float, float]]:
    cols = km_columns(a, level)
    return cols["KM median"], cols[f"{level * 100:.4g}% CI"]


# 12 seeds, three censored below some event times (seeds stopped early): the plain median with
# the censored values at their censoring steps is 1900, the KM median 2000
EARLY = arm([900, 1100, 1300, 1500, 1700, 2000, 2200, 2600, 3100, 1800, 2400, BUDGET],
            [True] * 9 + [False] * 3)


def lognormal(median: float, sd: float, n: int, seed: int,
              budget: float = BUDGET) -> ArmSample:
    raw = np.ceil(np.exp(np.random.default_rng(seed).normal(math.log(median), sd, n)))
    return arm(np.minimum(raw, budget), raw <= budget)


def test_estimate_and_ci_are_the_tables_km_median_and_ci() -> None:
    for a in (EARLY, lognormal(9000, 0.5, 24, 3), lognormal(2000, 0.6, 12, 5, budget=2500)):
        assert (~a.observed).any()
        for level in (0.9, 0.95):
            res = run(a, target=2000, tol=500, ci_level=level)
            median, ci = table(a, level)
            assert res.estimate == median and res.ci == ci
            row = res.arms[0].columns
            assert row["KM median"] == median and row[f"{level * 100:.4g}% CI"] == ci
            assert res.effect_label == "Kaplan-Meier median of a"
            assert "Brookmeyer-Crowley" in res.details["ci_method"]
    res = run(EARLY, target=2000, tol=1000)
    assert res.estimate == 2000.0 != float(np.median(EARLY.values)) == 1900.0
    assert res.ci == (1100.0, 3100.0)
    # before: [1300, 2600], SUPPORTED withheld by the lower-bound rule, no p
    assert res.verdict == Verdict.INCONCLUSIVE and res.p_support is not None


def test_many_seeds_censored_at_the_budget_no_longer_give_the_budget_as_median() -> None:
    a = lognormal(20000, 0.5, 24, 4)  # 20 of 24 censored
    assert (~a.observed).sum() > a.n / 2 and np.median(a.values) == BUDGET
    below = run(a, target=6000, tol=1000)
    assert math.isinf(below.estimate) and below.ci == table(a)[1] == (math.inf, math.inf)
    assert below.verdict == Verdict.REFUTED and "beyond the budget" in below.reason
    assert below.p_refute is not None and below.p_refute < 0.025 and below.p_support == 1.0
    reaching = run(a, target=11000, tol=2000)  # the median may lie anywhere past the budget
    assert reaching.verdict == Verdict.INCONCLUSIVE and "beyond the budget" in reaching.reason
    assert (reaching.p_support, reaching.p_refute) == (1.0, 1.0)


def test_a_median_beyond_the_budget_with_a_bounded_ci_start() -> None:
    a = lognormal(11000, 0.5, 24, 0)  # KM never reaches 1/2, yet the CI starts at an event
    median, (low, high) = table(a)
    assert math.isinf(median) and math.isfinite(low) and math.isinf(high)
    res = run(a, target=3000, tol=500)
    assert res.verdict == Verdict.REFUTED and res.ci == (low, high)
    assert "beyond the budget" in res.reason and "point estimate inf" not in res.reason
    near = run(a, target=low, tol=500)
    assert near.verdict == Verdict.INCONCLUSIVE  # never SUPPORTED: the CI is unbounded
    for r in (res, near):
        assert verdict_from_p(r.p_support, r.p_refute, 0.025) == r.verdict


# (sample, statistic, target, tol) -> (estimate, CI, verdict, p_support, p_refute), captured
# from the code before the KM change
BEFORE = [
    ("t12", "median", 2000, 600, 1897.0, (1561.0, 2307.0), "SUPPORTED", 0.003173828125,
     0.999755859375),
    ("t12", "median", 1500, 200, 1897.0, (1561.0, 2307.0), "INCONCLUSIVE", 0.80615234375,
     0.38720703125),
    ("t12", "median", 3500, 300, 1897.0, (1561.0, 2307.0), "REFUTED", 0.999755859375,
     0.003173828125),
    ("t12", "mean", 2000, 600, 1989.5833333333333, (1693.0665409727098, 2469.0073429207387),
     "SUPPORTED", 0.012, 0.988),
    ("t12", "mean", 1500, 200, 1989.5833333333333, (1693.0665409727098, 2469.0073429207387),
     "INCONCLUSIVE", 0.968, 0.032),
    ("t12", "mean", 3500, 300, 1989.5833333333333, (1693.0665409727098, 2469.0073429207387),
     "REFUTED", 0.998, 0.002),
    ("t9", "median", 1500, 200, 1135.0, (864.0, 1549.0), "INCONCLUSIVE", 0.74609375, 0.5),
    ("t9", "mean", 1500, 200, 1229.0, (993.3648460301654, 1535.7498105443442), "INCONCLUSIVE",
     0.71, 0.29),
    ("v15", "median", 0.4, 0.1, 0.35222467239660693, (0.3021480921943361, 0.4113308986003308),
     "SUPPORTED", 0.017578125, 0.996307373046875),
    ("v15", "mean", 0.4, 0.1, 0.3480401394084353, (0.29707421156824526, 0.3958105690577902),
     "INCONCLUSIVE", 0.032, 0.968),
]


def _uncensored() -> dict[str, ArmSample]:
    rng = np.random.default_rng(7)
    t12 = np.ceil(np.exp(rng.normal(math.log(2000), 0.4, 12)))
    t9 = np.ceil(np.exp(rng.normal(math.log(1500), 0.3, 9)))
    v15 = rng.normal(0.4, 0.1, 15)
    return {"t12": arm(t12), "t9": arm(t9), "v15": arm(v15, kind="value")}


@pytest.mark.parametrize("case", BEFORE, ids=lambda c: f"{c[0]}-{c[1]}-{c[2]}")
def test_uncensored_samples_keep_todays_numbers(case: tuple[Any, ...]) -> None:
    name, statistic, target, tol, estimate, ci, verdict, p_support, p_refute = case
    res = run(_uncensored()[name], target=target, tol=tol, statistic=statistic, n_boot=500)
    assert (res.estimate, res.ci, res.verdict.value) == (estimate, ci, verdict)
    assert (res.p_support, res.p_refute) == (p_support, p_refute)
    assert res.effect_label == f"{statistic} of a"


def test_the_mean_with_censored_values_keeps_the_lower_bound_rule() -> None:
    ci = (1525.4073239360835, 6824.437120077736)  # captured before the change
    for target, tol, verdict in ((2500, 1500, "INCONCLUSIVE"), (400, 100, "REFUTED")):
        res = run(EARLY, target=target, tol=tol, statistic="mean", n_boot=500)
        assert (res.estimate, res.ci, res.verdict.value) == (2550.0, ci, verdict)
        assert res.p_support is None and res.p_refute is None
    # withheld: the CI within the region would support, but the mean is only a lower bound
    wide = run(EARLY, target=4000, tol=3000, statistic="mean", n_boot=500)
    assert wide.verdict == Verdict.INCONCLUSIVE and "lower bound" in wide.reason


def test_refuse_still_refuses() -> None:
    res = run(EARLY, target=2000, tol=500, censored="refuse")
    assert res.verdict == Verdict.INCONCLUSIVE and math.isnan(res.estimate)


def _censored_samples() -> list[ArmSample]:
    out = []
    for seed in range(40):
        rng = np.random.default_rng(seed)
        n = int(rng.choice([6, 8, 12, 16, 24, 40]))
        raw = np.ceil(np.exp(rng.normal(math.log(1000), rng.uniform(0.2, 0.8), n)))
        if seed % 3 == 0:  # a common budget, sometimes below the median
            cens = np.full(n, float(rng.choice([900, 1200, 1600, 3000])))
        else:  # seeds stopped early at various steps
            cens = np.ceil(rng.uniform(300, 3000, n))
            cens[rng.random(n) < 0.5] = 2500
        obs = raw <= cens
        obs[np.argmax(raw)] = False
        cens[np.argmax(raw)] = min(cens[np.argmax(raw)], raw.max())
        out.append(arm(np.where(obs, raw, cens), obs))
    # most seeds censored at a budget below the median: the KM median beyond the budget
    return out + [lognormal(1000, 0.4, n, seed, budget=600) for n, seed in ((12, 1), (24, 2))]


def test_p_against_the_region_gives_the_ci_verdict_on_a_grid() -> None:
    """SUPPORTED <=> p_support <= α/2, REFUTED <=> p_refute < α/2, on censored samples with
    regions from below through the median to above, narrow and wide, at three levels."""
    seen: set[tuple[str, bool]] = set()
    for a in _censored_samples():
        for target in np.linspace(300, 3000, 12):
            for tol in (50.0, 500.0):
                for level in (0.9, 0.95):
                    res = run(a, target=float(target), tol=tol, ci_level=level)
                    where = f"{a.values}, {a.observed}, [{target - tol}, {target + tol}]"
                    assert res.ci == table(a, level)[1], where
                    assert res.p_support is not None and res.p_refute is not None, where
                    assert 0.0 <= res.p_support <= 1.0 and 0.0 <= res.p_refute <= 1.0, where
                    alpha = (1.0 - level) / 2
                    assert verdict_from_p(res.p_support, res.p_refute, alpha) == res.verdict, \
                        f"{where}: {res.verdict} p {res.p_support}, {res.p_refute}"
                    seen.add((res.verdict.value, res.details["bc_ci_defined"]))
    assert {("SUPPORTED", True), ("REFUTED", True), ("INCONCLUSIVE", True),
            ("REFUTED", False), ("INCONCLUSIVE", False)} <= seen, seen


def test_the_p_is_the_one_sided_test_of_s_at_b_where_r_rises() -> None:
    """Where the cloglog z-statistic r(t) rises through the event times an end needs rejected
    (r_k at the event time next to b is the one nearest 0 among them), each p is the one-sided
    test of S(t) = 1/2 at t = b (just below b for the low end's sides), against the side the
    data point to. r is not monotone everywhere (it dips after the first event times), which is
    why the p's take the largest of those tail areas, as the CI does."""
    a = lognormal(2000, 0.5, 40, 11, budget=3000)
    with np.errstate(all="ignore"):
        sf = SurvfuncRight(a.values, a.observed.astype(float))
        s, se = sf.surv_prob, sf.surv_prob_se
        r = (np.log(-np.log(s)) - np.log(math.log(2))) / (-1 / (s * np.log(s)) * se)
    ts, q, defined = _bc_tail_p(a.values, a.observed, 0.05)
    assert defined and np.array_equal(ts, sf.surv_times) and np.all(np.isfinite(r))
    checked = 0
    for b in np.linspace(500, 3500, 61):
        sides = _bc_sides(ts, q, float(b))
        below = int(np.searchsorted(ts, b, side="left")) - 1  # the event time just below b
        at = int(np.searchsorted(ts, b, side="right")) - 1  # the last at or below b
        for k, low_side, high_side in ((below, sides.ge, sides.lt), (at, sides.gt, sides.le)):
            if k < 0:  # before the first event time: S = 1 there, the low end is past b
                assert low_side == 0.0
                continue
            # low_side's event times: up to k; high_side's: from k on
            if abs(r[k]) == np.abs(r[: k + 1]).min() and r[k] < 0:
                assert low_side == pytest.approx(norm.cdf(r[k]))
                checked += 1
            if abs(r[k]) == np.abs(r[k:]).min() and r[k] > 0:
                assert high_side == pytest.approx(norm.sf(r[k]))
                checked += 1
    assert checked >= 80
