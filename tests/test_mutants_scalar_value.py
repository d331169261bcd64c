"""Tests that pin what the mutation run of ``grokverify/stats/scalar.py`` found unpinned in the
``value`` criterion (plain and Kaplan-Meier paths), in the per-arm table of ``scalar_compare``
and in its lower-bound rule (which arm's censoring can withhold which verdict, paired and
unpaired).

Each test fixes what a user reads for a small, hand-checked case: the estimate and CI against
independent oracles (order statistics and sign-test sums by hand, a bootstrap-t written from its
definition, a Kaplan-Meier curve with Greenwood's variance by hand, statsmodels' quantile_ci),
the verdict and its reason, the claimed region, the method named, the per-arm table's columns
and the details, the one-sided p's (present, or absent where the lower-bound rule would withhold
that side), and the messages of the refusals.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pytest
from scipy import stats as sps
from statsmodels.duration.survfunc import SurvfuncRight

from grokverify.kinds import CRITERIA
from grokverify.stats.base import ArmSample, CriterionResult, Verdict, judge, verdict_from_p

NOT_CENSORED = ("none: a value metric is never censored (diverged seeds and seeds whose value is "
                "undefined are left out and counted)")
AS_BUDGET = ("censored values enter as their censoring value (the budget), a lower bound on the "
             "true value; the lower-bound rule withholds any verdict that this could have "
             "produced (see docs/verdicts.md)")
REFUSE = "censored: refuse -- any censored value withholds the verdict (INCONCLUSIVE)"
ORDER_CI = ("order statistics: [x_(k), x_(n+1-k)], k the largest with P(Bin(n, 1/2) <= k-1) <= "
            "alpha/2 (exact, distribution-free)")
BOOT_T_CI = "bootstrap-t (studentized): mean - t*_(1-alpha/2) se, mean - t*_(alpha/2) se"
MEAN_TEST = "bootstrap-t CI of the mean (no test)"
MEDIAN_TEST = "order-statistic (binomial) CI of the median (no test)"
KM_TEST = ("Kaplan-Meier median, Brookmeyer-Crowley CI (statsmodels quantile_ci, cloglog); "
           "p against the region's ends: the tests of S(b) = 1/2 that CI inverts")
KM_DETAILS = {
    "censoring": "right-censored (Kaplan-Meier): a censored seed counts as 'not yet' up to its "
                 "censoring value and drops out of the risk set after it, not entered as a value",
    "censored_policy": "as_budget",
    "estimator": "Kaplan-Meier median",
    "km_median_convention": "first event time with S(t) < 0.5; where S(t) = 0.5 (within "
                            "sqrt(machine eps)) the midpoint of that event time and the next (or "
                            "the largest time when no event follows), as R survival's "
                            "quantile.survfit",
    "ci_method": "Brookmeyer-Crowley: the event times t whose z-test of S(t) = 1/2 (cloglog "
                 "transform, Greenwood variance) is not rejected, from the first to the event "
                 "time after the last (statsmodels SurvfuncRight.quantile_ci(0.5, alpha, "
                 "'cloglog')); inf above when the last event time is not rejected",
    "p_method": "the smallest alpha/2 at which that CI's end passes b: max over the event times "
                "t_i the CI end needs rejected of norm.sf(|r_i|), r_i the cloglog z-statistic at "
                "t_i -- where r rises with t (the usual case) the one-sided test of S(b-) = 1/2 "
                "(p_ge, p_lt: just below b) or of S(b) = 1/2 (p_le, p_gt) against one side",
}
BC_UNDEFINED = ("no event time passes the test of S(t) = 1/2 at this level, so statsmodels' CI is "
                "undefined; the table's CI replaces it and the verdict comes from that; p_support "
                "is 1 and p_refute the largest norm.sf(|r_i|) where REFUTED, else 1 (with no "
                "event at all, a region below the largest time has p_refute = 2^-n exactly)")
BEYOND = ("lies beyond the budget (the KM survival stays significantly above 1/2 up to the "
          "largest time, 1000 steps)")
BEYOND_ESTIMATE = ("(point estimate: beyond the budget, the KM survival never falls to 1/2 by "
                   "1000 steps).")


def arm(name: str, values: list[float], observed: list[int] | None = None,
        kind: str = "time") -> ArmSample:
    v = np.asarray(values, dtype=float)
    o = np.ones(v.size, bool) if observed is None else np.asarray(observed, bool)
    return ArmSample(name, v, o, tuple(range(v.size)), {}, {}, kind=kind)  # type: ignore[arg-type]


def value(a: ArmSample, **params: Any) -> CriterionResult:
    crit = CRITERIA["value"]
    res = judge(crit.model_validate({"name": "value", "arm": a.name, **params}),
                   {a.name: a})
    json.dumps(res.to_dict(), allow_nan=False)
    return res


def compare(b: ArmSample, t: ArmSample, **params: Any) -> CriterionResult:
    crit = CRITERIA["scalar_compare"]
    p = crit.model_validate({"name": "scalar_compare", "baseline": b.name,
                                          "treated": t.name, **params})
    return judge(p, {b.name: b, t.name: t})


def approx(x: float) -> Any:
    return pytest.approx(x, rel=1e-9, abs=1e-12)


def sign_cdf(k: int, n: int) -> float:
    """P(Bin(n, 1/2) <= k), summed by hand."""
    return sum(math.comb(n, j) for j in range(k + 1)) / 2 ** n


def bootstrap_t(x: list[float], level: float, n_boot: int, seed: int,
                lower: float, upper: float) -> tuple[tuple[float, float], float, float]:
    """The bootstrap-t CI of the mean from its definition (resamples drawn with
    ``default_rng(seed).integers(0, n, (n_boot, n))``, inverted-CDF quantiles of
    t* = (m* - m) / s*), and p_support / p_refute against [lower, upper]: the share of t*
    beyond (m - b) / se on the side that moves the CI's end past b."""
    v = np.asarray(x, dtype=float)
    n = v.size
    m, se = v.mean(), v.std(ddof=1) / math.sqrt(n)
    xb = v[np.random.default_rng(seed).integers(0, n, size=(n_boot, n))]
    with np.errstate(all="ignore"):
        t = (xb.mean(axis=1) - m) / (xb.std(axis=1, ddof=1) / math.sqrt(n))
    t = t[~np.isnan(t)]
    a = 1 - level
    q_lo, q_hi = np.quantile(t, [a / 2, 1 - a / 2], method="inverted_cdf")
    c_lo, c_hi = (m - lower) / se, (m - upper) / se
    p_support = max(float(np.mean(t > c_lo)), float(np.mean(t < c_hi)))
    p_refute = min(float(np.mean(t <= c_lo)), float(np.mean(t >= c_hi)))
    return (float(m - q_hi * se), float(m - q_lo * se)), p_support, p_refute


# ---------------------------------------------------------------- value: mean and median


def test_value_median_of_a_value_metric_whole_result() -> None:
    """A signed value metric, ``statistic: median``: 9 seeds, target 0.4 +/- 0.1. The user relies
    on the median, the exact order-statistic CI [x_(2), x_(8)] (k = 2 at 95% for n = 9), the
    method named, the claimed region, the sentence of the SUPPORTED verdict, a table of seeds and
    median only (no censoring columns for a value metric) and the sign-test p's."""
    x = [0.31, 0.42, 0.38, 0.45, 0.40, 0.36, 0.44, 0.39, 0.41]
    xs = sorted(x)
    assert sign_cdf(1, 9) <= 0.025 < sign_cdf(2, 9)  # so k = 2
    res = value(arm("probe", x, kind="value"), target=0.4, tol=0.1, statistic="median")
    assert res.to_dict() == {
        "criterion": "value", "effect_label": "median of probe", "estimate": 0.4,
        "ci": [xs[1], xs[7]], "ci_level": 0.95, "p_value": None, "test": MEDIAN_TEST,
        "threshold": 0.4, "claimed_region": "median within [0.3, 0.5] (0.4 +/- 0.1)",
        "verdict": "SUPPORTED",
        "reason": "The 95% CI of the median of probe, [0.36, 0.44], lies wholly within the "
                  "claimed region [0.3, 0.5] (point estimate 0.4).",
        "arms": [{"name": "probe", "n": 9, "excluded": {},
                  "columns": {"seeds": 9, "median": 0.4}}],
        "details": {"censoring": NOT_CENSORED, "ci_method": ORDER_CI, "order_statistic_k": 2,
                    "achieved_level": approx(1 - 2 * sign_cdf(1, 9)),
                    "tolerance_region": [0.4 - 0.1, 0.4 + 0.1]},
        # inside needs "no value below 0.3" and "no value above 0.5": P(Bin(9, 1/2) <= 0) each
        "p_support": approx(sign_cdf(0, 9)), "p_refute": 1.0,
        "p_value_label": "no-effect test p"}


def test_value_mean_of_an_uncensored_time_metric_whole_result() -> None:
    """A time metric without censored seeds, ``statistic: mean`` (default ``censored: refuse``).
    The user relies on the mean, the bootstrap-t CI and p's (oracle from the definition), the
    method named, and a table with the censored count 0 and the mean "determined"."""
    x = [100.0, 110, 120, 130, 140, 150]
    ci, p_support, p_refute = bootstrap_t(x, 0.95, 200, 0, 80, 180)
    res = value(arm("fast", x), target=130, tol=50, statistic="mean", n_boot=200)
    out = res.to_dict()
    assert out == {
        "criterion": "value", "effect_label": "mean of fast", "estimate": 125.0,
        "ci": [approx(ci[0]), approx(ci[1])], "ci_level": 0.95, "p_value": None,
        "test": MEAN_TEST, "threshold": 130.0,
        "claimed_region": "mean within [80, 180] (130 +/- 50)", "verdict": "SUPPORTED",
        "reason": "The 95% CI of the mean of fast, [102, 143], lies wholly within the claimed "
                  "region [80, 180] (point estimate 125).",
        "arms": [{"name": "fast", "n": 6, "excluded": {},
                  "columns": {"seeds": 6, "mean": 125.0, "censored (as budget)": 0,
                              "determined": "yes"}}],
        "details": {"censoring": REFUSE, "censored_policy": "refuse",
                    "censored_seeds": {"fast": 0}, "ci_method": BOOT_T_CI, "n_boot": 200,
                    "bootstrap_seed": 0, "n_dropped_resamples": 0,
                    "tolerance_region": [80.0, 180.0], "withheld_by_lower_bound_rule": []},
        "p_support": approx(p_support), "p_refute": approx(p_refute),
        "p_value_label": "no-effect test p"}
    assert list(out["arms"][0]["columns"]) == ["seeds", "mean", "censored (as budget)",
                                               "determined"]


def test_value_mean_with_a_censored_seed_below_the_region_is_withheld() -> None:
    """``censored: as_budget``, mean of 6 seeds, one censored at 150: the CI lies wholly below
    [500, 600]. A censored value only pulls the mean down, so a CI *below* the region could be
    that pull: the REFUTED verdict is withheld, the reason names the arm, its censored count
    and its undetermined mean, the table says "determined: no", the details name the withholding
    arm, and no p is given (the mean is only a lower bound)."""
    x = [100.0, 110, 120, 130, 140, 150]
    ci, _, _ = bootstrap_t(x, 0.95, 200, 0, 500, 600)
    res = value(arm("slow", x, [1, 1, 1, 1, 1, 0]), target=550, tol=50, statistic="mean",
                censored="as_budget", n_boot=200)
    assert res.to_dict() == {
        "criterion": "value", "effect_label": "mean of slow", "estimate": 125.0,
        "ci": [approx(ci[0]), approx(ci[1])], "ci_level": 0.95, "p_value": None,
        "test": MEAN_TEST, "threshold": 550.0,
        "claimed_region": "mean within [500, 600] (550 +/- 50)", "verdict": "INCONCLUSIVE",
        "reason": "The 95% CI of the mean of slow, [102, 143], lies wholly below the claimed "
                  "region [500, 600], excluding it (point estimate 125), which would refute the "
                  "claim, but arm 'slow' has 1 censored seed(s) entered at the budget, a lower "
                  "bound that leaves its mean undetermined, so no verdict is drawn.",
        "arms": [{"name": "slow", "n": 6, "excluded": {},
                  "columns": {"seeds": 6, "mean": 125.0, "censored (as budget)": 1,
                              "determined": "no"}}],
        "details": {"censoring": AS_BUDGET, "censored_policy": "as_budget",
                    "censored_seeds": {"slow": 1}, "ci_method": BOOT_T_CI, "n_boot": 200,
                    "bootstrap_seed": 0, "n_dropped_resamples": 0,
                    "tolerance_region": [500.0, 600.0], "withheld_by_lower_bound_rule": ["slow"]},
        "p_support": None, "p_refute": None, "p_value_label": "no-effect test p"}


def test_value_needs_two_seeds_and_an_existing_arm() -> None:
    """Two seeds are enough for an estimate (the median of 2 values, whose order-statistic CI at
    95% is unbounded); one seed is refused with the count in the message; an arm with no data is
    a wiring error that names the criterion."""
    two = value(arm("two", [1.0, 2.0], kind="value"), target=1.5, tol=1, statistic="median")
    assert (two.estimate, two.ci, two.verdict) == (1.5, (-math.inf, math.inf),
                                                   Verdict.INCONCLUSIVE)
    assert two.reason == ("The 95% CI of the median of two, [-inf, inf], overlaps the claimed "
                          "region [0.5, 2.5] without lying within it, so the data neither support "
                          "nor refute the claim (point estimate 1.5).")
    assert two.details["order_statistic_k"] == 0
    one = value(arm("one", [0.5], kind="value"), target=0.5, tol=0.1)
    assert one.verdict == Verdict.INCONCLUSIVE and math.isnan(one.estimate)
    assert one.reason == ("No verdict is possible: arm 'one' has 1 usable seed(s), fewer than "
                          "the 2 this criterion needs (left out: none).")
    crit = CRITERIA["value"]
    p = crit.model_validate({"name": "value", "arm": "a", "target": 1, "tol": 1})
    with pytest.raises(KeyError) as err:
        judge(p, {"b": arm("b", [1.0, 2.0])})
    assert err.value.args[0] == "value: no data for arm(s) ['a']"


# ---------------------------------------------------------------- value: Kaplan-Meier median


def test_value_km_median_with_a_defined_brookmeyer_crowley_ci() -> None:
    """12 seeds, 3 censored (two stopped early, one at the budget): the median is the KM median
    (2000: S falls from 7/12 to 7/12 * 5/6 < 1/2 there), the CI statsmodels' Brookmeyer-Crowley
    interval. The user relies on the method named, the label, the reason's sentence, the KM table
    row and the details (no "bc_ci_undefined" note, since the CI is defined)."""
    values = [900.0, 1100, 1300, 1500, 1700, 2000, 2200, 2600, 3100, 1800, 2400, 10000]
    observed = [1] * 9 + [0] * 3
    low, high = SurvfuncRight(np.array(values), np.array(observed, float)).quantile_ci(
        0.5, alpha=0.05, method="cloglog")
    assert (low, high) == (1100.0, 3100.0)
    res = value(arm("a", values, observed), target=2000, tol=1000, statistic="median",
                censored="as_budget")
    out = res.to_dict()
    p_support, p_refute = out.pop("p_support"), out.pop("p_refute")
    assert out == {
        "criterion": "value", "effect_label": "Kaplan-Meier median of a", "estimate": 2000.0,
        "ci": [1100.0, 3100.0], "ci_level": 0.95, "p_value": None, "test": KM_TEST,
        "threshold": 2000.0, "claimed_region": "median within [1000, 3000] (2000 +/- 1000)",
        "verdict": "INCONCLUSIVE",
        "reason": "The 95% CI of the Kaplan-Meier median of a, [1100, 3100], overlaps the claimed "
                  "region [1000, 3000] without lying within it, so the data neither support nor "
                  "refute the claim (point estimate 2000).",
        "arms": [{"name": "a", "n": 12, "excluded": {},
                  "columns": {"seeds": 12, "events": 9, "censored": 3, "KM median": 2000.0,
                              "95% CI": [1100.0, 3100.0]}}],
        "details": {**KM_DETAILS, "censored_seeds": {"a": 3},
                    "tolerance_region": [1000.0, 3000.0], "median_beyond_budget": False,
                    "largest_time": 10000.0, "bc_ci_defined": True},
        "p_value_label": "no-effect test p"}
    assert verdict_from_p(p_support, p_refute, 0.025) == Verdict.INCONCLUSIVE


def km_tail_p(times: list[float], observed: list[int]) -> list[float]:
    """norm.sf(|r|) at each event time, r the cloglog z-statistic of S(t) = 1/2 with the KM
    curve and Greenwood's variance computed by hand (distinct times)."""
    t, d = np.asarray(times, float), np.asarray(observed, bool)
    order = np.argsort(t, kind="stable")
    t, d = t[order], d[order]
    s, green, out = 1.0, 0.0, []
    for i in range(t.size):
        at_risk = t.size - i
        if d[i]:
            s *= 1 - 1 / at_risk
            green += 1 / (at_risk * (at_risk - 1))
            se = s * math.sqrt(green)
            r = (math.log(-math.log(s)) - math.log(math.log(2))) / (se / (s * -math.log(s)))
            out.append(float(sps.norm.sf(abs(r))))
    return out


LATE = ([100.0, 200.0] + [1000.0] * 18, [1, 1] + [0] * 18)  # 2 events in 20, then the budget


def test_value_km_median_beyond_the_budget_refutes_a_region_below_it() -> None:
    """2 of 20 seeds reached the event (at 100 and 200), 18 censored at the budget 1000: S stays
    significantly above 1/2 at both event times, so the median lies beyond 1000 and the CI is
    (inf, inf). A region below 1000 is REFUTED with the beyond-the-budget sentence, p_support 1
    and p_refute the largest norm.sf(|r_i|) (hand KM + Greenwood), and the details say why the
    CI is the table's."""
    q = km_tail_p(*LATE)
    assert max(q) < 0.025  # no event time passes the test at 95%: the CI is undefined
    res = value(arm("late", *LATE), target=300, tol=100, statistic="median",
                censored="as_budget")
    assert res.to_dict() == {
        "criterion": "value", "effect_label": "Kaplan-Meier median of late", "estimate": "inf",
        "ci": ["inf", "inf"], "ci_level": 0.95, "p_value": None, "test": KM_TEST,
        "threshold": 300.0, "claimed_region": "median within [200, 400] (300 +/- 100)",
        "verdict": "REFUTED",
        "reason": f"The 95% CI of the Kaplan-Meier median of late {BEYOND}, wholly above the "
                  f"claimed region [200, 400], excluding it {BEYOND_ESTIMATE}",
        "arms": [{"name": "late", "n": 20, "excluded": {},
                  "columns": {"seeds": 20, "events": 2, "censored": 18, "KM median": "inf",
                              "95% CI": ["inf", "inf"]}}],
        "details": {**KM_DETAILS, "censored_seeds": {"late": 18},
                    "tolerance_region": [200.0, 400.0], "median_beyond_budget": True,
                    "largest_time": 1000.0, "bc_ci_defined": False,
                    "bc_ci_undefined": BC_UNDEFINED},
        "p_support": 1.0, "p_refute": approx(max(q)), "p_value_label": "no-effect test p"}


def test_value_km_median_beyond_the_budget_with_a_region_reaching_the_budget() -> None:
    """The same arm against [800, 1000] (at 90%): the region reaches the largest time, so the
    median beyond it may still lie in it: INCONCLUSIVE with its own sentence, both p's 1."""
    res = value(arm("late", *LATE), target=900, tol=100, statistic="median",
                censored="as_budget", ci_level=0.9)
    assert (res.verdict, res.p_support, res.p_refute) == (Verdict.INCONCLUSIVE, 1.0, 1.0)
    assert res.reason == (f"The 90% CI of the Kaplan-Meier median of late {BEYOND}, and the "
                          "claimed region [800, 1000] reaches that far, so the data neither "
                          f"support nor refute the claim {BEYOND_ESTIMATE}")
    assert res.details["bc_ci_undefined"] == BC_UNDEFINED


def test_value_km_median_of_an_arm_without_any_event() -> None:
    """20 seeds all censored at the budget (no event time at all): the median lies beyond the
    budget, a region below it is REFUTED, and the p's agree with that verdict (p_refute at most
    the exact sign-test bound 2^-20 of 20 of 20 seeds beyond the region)."""
    res = value(arm("never", [1000.0] * 20, [0] * 20), target=300, tol=100, statistic="median",
                censored="as_budget")
    assert res.verdict == Verdict.REFUTED and res.p_support == 1.0
    assert res.p_refute == 2.0 ** -20
    assert verdict_from_p(res.p_support, res.p_refute, 0.025) == Verdict.REFUTED
    assert res.details["bc_ci_undefined"] == BC_UNDEFINED


@pytest.mark.parametrize(("n", "level", "verdict"), [
    (2, 0.95, Verdict.INCONCLUSIVE),  # 1/4 > 0.025
    (5, 0.95, Verdict.INCONCLUSIVE),  # 1/32 > 0.025
    (6, 0.95, Verdict.REFUTED),  # 1/64 <= 0.025
    (6, 0.99, Verdict.INCONCLUSIVE),  # 1/64 > 0.005
    (8, 0.99, Verdict.REFUTED),  # 1/256 <= 0.005
])
def test_no_event_refutes_only_when_the_exact_bound_allows(n: int, level: float,
                                                           verdict: Verdict) -> None:
    """No seed reached the event: a median inside a region below the budget leaves all n seeds
    censored with probability up to 2^-n, so REFUTED needs 2^-n <= alpha/2 (the KM variance is
    0 here and would refute with certainty at any n); the p's agree with the verdict."""
    res = value(arm("never", [1000.0] * n, [0] * n), target=300, tol=100, statistic="median",
                censored="as_budget", ci_level=level)
    assert res.verdict == verdict
    assert (res.p_support, res.p_refute) == (1.0, 0.5 ** n)
    assert verdict_from_p(res.p_support, res.p_refute, (1 - level) / 2) == verdict
    if verdict == Verdict.INCONCLUSIVE:
        assert res.reason == (
            f"No seed reached the event by 1000 steps, but with {n} seed(s) a median inside the "
            f"claimed region [200, 400] leaves every seed censored with probability up to "
            f"2^-{n} = {0.5 ** n:.3g}, more than {(1 - level) / 2:.3g}: too few seeds to refute "
            f"it (point estimate: beyond the budget, the KM survival never falls to 1/2 by 1000 "
            f"steps).")


def test_no_event_with_a_region_reaching_the_budget_stays_inconclusive() -> None:
    res = value(arm("never", [1000.0] * 10, [0] * 10), target=900, tol=100, statistic="median",
                censored="as_budget")
    assert res.verdict == Verdict.INCONCLUSIVE and (res.p_support, res.p_refute) == (1.0, 1.0)


# ---------------------------------------------------------------- scalar_compare: lower-bound rule

B = 3000.0  # the budget of the scalar_compare arms
BASE = arm("base", [1000.0, 1050, 1100, 1150, 1200, 1250, 1300, 1350])
BASE_ROW = {"seeds": 8, "median": 1175.0, "censored (as budget)": 0, "determined": "yes"}
# 5 of 8 treated seeds censored at the budget: the treated median (3000) is only a lower bound
HIGH = arm("treat", [2600.0, 2700, 2800, B, B, B, B, B], [1, 1, 1, 0, 0, 0, 0, 0])
HIGH_ROW = {"seeds": 8, "median": 3000.0, "censored (as budget)": 5, "determined": "no"}


def test_unpaired_censored_treated_arm_withholds_only_the_side_it_favours() -> None:
    """Unpaired, median ratio, treated mostly censored (its median undetermined). A censored
    treated value can only have pulled the ratio *down*: with ``less`` it favours support, so
    no p_support is given while the REFUTED verdict (ratio ~2.55 > 0.8) stands with its p; with
    ``greater`` it favours refutation, so no p_refute while SUPPORTED (>= 1.2) stands. The
    table shows the censored count and whether each median is determined."""
    less = compare(BASE, HIGH, statistic="median", direction="less", paired=False, n_boot=200)
    greater = compare(BASE, HIGH, statistic="median", direction="greater", paired=False,
                      n_boot=200)
    for res in (less, greater):
        assert res.estimate == approx(3000 / 1175)
        assert [a.columns for a in res.arms] == [BASE_ROW, HIGH_ROW]
        assert res.details["withheld_by_lower_bound_rule"] == []
    assert less.verdict == Verdict.REFUTED and less.claimed_region == "ratio <= 0.8"
    assert less.p_support is None and less.p_refute is not None
    assert greater.verdict == Verdict.SUPPORTED and greater.claimed_region == "ratio >= 1.2"
    assert greater.p_support is not None and greater.p_refute is None


def test_unpaired_support_withheld_by_a_seed_censored_early() -> None:
    """Unpaired, ``less``: treated is ~10x faster but one of its seeds was censored at 105,
    below observed values, so its median is undetermined and the SUPPORTED verdict is withheld
    with a reason naming the arm; p_support is absent."""
    early = arm("treat", [100.0, 110, 120, 130, 105, 140, 150, 160], [1, 1, 1, 1, 0, 1, 1, 1])
    res = compare(BASE, early, statistic="median", direction="less", paired=False, n_boot=200)
    assert res.verdict == Verdict.INCONCLUSIVE and res.ci[1] <= 0.8
    assert res.reason.startswith("The 95% CI of the ratio of medians (treat / base), [")
    assert res.reason.endswith(
        "], lies wholly at or below 0.8, the boundary of the claimed effect (point estimate "
        "0.106), which would support the claim, but arm 'treat' has 1 censored seed(s) entered "
        "at the budget, a lower bound that leaves its median undetermined, so no verdict is "
        "drawn.")
    assert res.details["withheld_by_lower_bound_rule"] == ["treat"]
    assert res.p_support is None and res.p_refute is not None
    assert res.arms[1].columns == {"seeds": 8, "median": 125.0, "censored (as budget)": 1,
                                   "determined": "no"}


def test_unpaired_support_stands_when_the_censored_median_is_determined() -> None:
    """Unpaired, ``less``: one treated seed censored at the budget 200, above every observed
    value, with 8 seeds leaves the median determined: SUPPORTED stands, both p's are given,
    and the table says "determined: yes" despite the censored seed."""
    det = arm("treat", [100.0, 110, 120, 130, 140, 150, 160, 200], [1, 1, 1, 1, 1, 1, 1, 0])
    res = compare(BASE, det, statistic="median", direction="less", paired=False, n_boot=200)
    assert res.verdict == Verdict.SUPPORTED and res.estimate == approx(135 / 1175)
    assert res.details["withheld_by_lower_bound_rule"] == []
    assert res.p_support is not None and res.p_refute is not None
    assert [a.columns for a in res.arms] == [
        BASE_ROW, {"seeds": 8, "median": 135.0, "censored (as budget)": 1, "determined": "yes"}]


def paired_median_ci(d: list[float]) -> tuple[float, float]:
    """The 95% order-statistic CI of the median of 8 per-pair effects: k = 1 (P(Bin(8, 1/2) <=
    0) = 1/256 <= 0.025 < P(<= 1) = 9/256), so [min, max]."""
    assert sign_cdf(0, 8) <= 0.025 < sign_cdf(1, 8)
    return min(d), max(d)


def test_paired_censored_treated_arm_withholds_p_refute_for_greater() -> None:
    """Paired median ratio, ``greater``: pairs with a censored treated value have per-pair
    ratios that can only be larger than entered, which favours refutation: p_refute is absent,
    SUPPORTED stands with the exact order-statistic CI and the sign-test p_support."""
    ratios = [h / b for h, b in zip(HIGH.values, BASE.values, strict=True)]
    low, high = paired_median_ci(ratios)
    res = compare(BASE, HIGH, statistic="median", direction="greater")
    srt = sorted(ratios)
    assert res.estimate == approx(math.sqrt(srt[3] * srt[4]))  # exp of the median log ratio
    assert res.ci == (approx(low), approx(high))
    assert res.verdict == Verdict.SUPPORTED and res.p_refute is None
    assert res.p_support == approx(sign_cdf(0, 8))  # no ratio below 1.2
    assert [a.columns for a in res.arms] == [BASE_ROW, HIGH_ROW]


def test_paired_censored_baseline_value_keeps_refutation() -> None:
    """Paired median ratio, ``less``: one baseline seed censored at the budget 200. That pair's
    ratio can only be smaller than entered (here the smallest, 2.5), which favours support, not
    refutation: the REFUTED verdict (every ratio >= 2.5 > 0.8) stands with its sign-test p."""
    base = arm("base", [100.0, 110, 120, 130, 140, 150, 160, 200], [1, 1, 1, 1, 1, 1, 1, 0])
    treat = arm("treat", [300.0, 330, 360, 390, 420, 450, 480, 500])
    res = compare(base, treat, statistic="median", direction="less")
    assert res.ci == (approx(2.5), approx(3.0)) and res.estimate == approx(3.0)
    assert res.verdict == Verdict.REFUTED
    assert res.details["withheld_by_lower_bound_rule"] == []
    assert res.p_refute == approx(sign_cdf(0, 8)) and res.p_support is not None
    assert res.arms[0].columns == {"seeds": 8, "median": 135.0, "censored (as budget)": 1,
                                   "determined": "yes"}


def test_paired_difference_judges_determinedness_on_differences() -> None:
    """Paired median difference, ``less`` (claim: treated - base <= -10). The censored treated
    pair (40 -> 120 at the budget) has the largest difference (80) but not the largest ratio
    (3 < 50/10), so for a difference the median of the per-pair effects is determined despite
    it: p_support is given, and REFUTED stands on the exact CI [40, 80] of the differences."""
    base = arm("base", [10.0, 20, 30, 40, 50, 60, 70, 40])
    treat = arm("treat", [50.0, 65, 70, 85, 90, 105, 110, 120], [1, 1, 1, 1, 1, 1, 1, 0])
    d = [t - b for t, b in zip(treat.values, base.values, strict=True)]
    res = compare(base, treat, statistic="median", direction="less", effect="difference",
                  min_effect=10)
    assert res.estimate == float(np.median(d)) == 42.5
    assert res.ci == paired_median_ci(d) == (40.0, 80.0)
    assert res.verdict == Verdict.REFUTED and res.claimed_region == "difference <= -10"
    assert res.p_support == 1.0 and res.p_refute == approx(sign_cdf(0, 8))
    assert res.arms[1].columns == {"seeds": 8, "median": 87.5, "censored (as budget)": 1,
                                   "determined": "yes"}
