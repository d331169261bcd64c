"""What the criteria share (grokverify/stats/common.py): the per-arm table and censoring words
of a two-arm result, the refusals and the lower-bound rule, `determined`, `statistic_of`,
seed pairing and `take_seeds`, Hesterberg's expanded level and the BCa bootstrap with its p's."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from conftest import (
    AS_BUDGET,
    LEVEL_RULE,
    P_METHOD,
    REFUSE,
    SPEARMAN_PAIRS,
    Has,
    hesterberg_level,
    run_criterion,
)
from scipy import stats as sps
from scipy.special import ndtr, ndtri

from grokverify.claim.criteria import ScalarCompareParams
from grokverify.stats.base import ArmSample, CriterionResult, Verdict, judge
from grokverify.stats.common import (
    bca_p_values,
    bootstrap_ci,
    broken_pairs_words,
    censoring_details,
    determined,
    expanded_level,
    expanded_p,
    lower_bound_rule,
    mean_bootstrap_t_ci,
    no_spread,
    pair_arms,
    require_arms,
    restriction,
    statistic_of,
    take_seeds,
    too_few_seeds,
)
from grokverify.stats.simulate import make_arm

UNPAIRED = "scipy.stats.bootstrap, arms resampled independently (paired=False)"
BCA_UNDEFINED = Has("the BCa interval is undefined (0 of 200 resampled statistics are not "
                    "finite, or the jackknife is degenerate)")


def scalar(**kw: Any) -> ScalarCompareParams:
    return ScalarCompareParams(**{"name": "scalar_compare", "baseline": "b", "treated": "t",
                                  "direction": "less", "min_effect": 0.2, "paired": False,
                                  "statistic": "median", "n_boot": 200, **kw})


def run(params: ScalarCompareParams, b: ArmSample, t: ArmSample) -> CriterionResult:
    return judge(params, {"b": b, "t": t})


def scipy_bootstrap(data: tuple[np.ndarray, ...], statistic: Callable[..., Any], level: float,
                    n_boot: int, seed: int, method: str = "BCa") -> Any:
    """The oracle: scipy.stats.bootstrap as the module documents it runs, same seed."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return sps.bootstrap(data, statistic, n_resamples=n_boot, confidence_level=level,
                             method=method, paired=False, vectorized=True,
                             rng=np.random.default_rng(seed))


# ---------------------------------------------------------------- what a two-arm result says


# Baseline: 8 seeds, 2 censored at the budget 2000; treated: 8 seeds, 1 censored at 2000.
BASE = make_arm("b", [900, 1000, 1100, 1200, 1300, 1500, 2000, 2000], [1, 1, 1, 1, 1, 1, 0, 0])
TREAT = make_arm("t", [400, 450, 500, 520, 600, 650, 700, 2000], [1, 1, 1, 1, 1, 1, 1, 0])


def _ratio_of_medians(b: np.ndarray, t: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.median(t, axis=axis) / np.median(b, axis=axis)


@pytest.mark.parametrize("direction", ["less", "greater"])
def test_scalar_compare_reports_counts_censoring_and_bootstrap(direction: str) -> None:
    """A reader relies on the per-arm table (seeds, median, how many seeds entered at the
    budget, whether the median is determined), on the details that say how censored values
    entered and how the CI was computed, and on the CI, the verdict and its p's: the BCa
    interval of scipy.stats.bootstrap with the stated seed."""
    res = run(scalar(direction=direction), BASE, TREAT)
    d = res.to_dict()
    assert d["arms"] == [
        {"name": "b", "n": 8, "excluded": {},
         "columns": {"seeds": 8, "median": 1250.0, "censored (as budget)": 2,
                     "determined": "yes"}},
        {"name": "t", "n": 8, "excluded": {},
         "columns": {"seeds": 8, "median": 560.0, "censored (as budget)": 1,
                     "determined": "yes"}},
    ]
    assert res.estimate == pytest.approx(560 / 1250)
    oracle = scipy_bootstrap((BASE.values, TREAT.values), _ratio_of_medians, 0.95, 200, 0)
    low, high = (float(x) for x in oracle.confidence_interval)
    assert res.ci == pytest.approx((low, high), rel=1e-12)
    assert 0.29 < low < high < 0.79  # wholly below 0.8 and 1.2: SUPPORTED / REFUTED
    details = {k: v for k, v in d["details"].items()
               if k not in ("p_support", "p_refute", "within_pair_correlation")}
    assert details == {
        "censoring": AS_BUDGET, "censored_policy": "as_budget",
        "censored_seeds": {"b": 2, "t": 1}, "statistic": "median", "analysis": "unpaired",
        "paired": False, "n_pairs": 8, "broken_pairs": {"b": 0, "t": 0},
        "within_pair_correlation_method": SPEARMAN_PAIRS, "bootstrap": UNPAIRED, "n_boot": 200,
        "bootstrap_seed": 0, "ci_method": "BCa", "p_method": P_METHOD,
        "withheld_by_lower_bound_rule": []}
    if direction == "less":
        assert res.claimed_region == "ratio <= 0.8"
        assert res.verdict == Verdict.SUPPORTED
        assert res.reason == Has("95% CI of the ratio of medians (t / b), [0.294, 0.781]",
                                 "wholly at or below 0.8, the boundary of the claimed effect",
                                 "(point estimate 0.448).")
        small = res.p_support  # the level at which the CI's upper end reaches 0.8
    else:
        assert res.claimed_region == "ratio >= 1.2"
        assert res.verdict == Verdict.REFUTED
        assert res.reason == Has("95% CI of the ratio of medians (t / b), [0.294, 0.781]",
                                 "wholly below 1.2, excluding the claimed region bounded by 1.2",
                                 "(point estimate 0.448).")
        small = res.p_refute  # the level at which the CI's upper end reaches 1.2
    assert res.p_support is not None and res.p_refute is not None
    assert res.p_support + res.p_refute == pytest.approx(1.0)
    assert small is not None and 0 < small < 0.025
    at = scipy_bootstrap((BASE.values, TREAT.values), _ratio_of_medians, 1 - 2 * small, 200, 0)
    assert float(at.confidence_interval.high) == pytest.approx(res.threshold, rel=1e-7)


def test_refusal_names_every_censored_arm() -> None:
    """Under ``censored: refuse`` the reason names each arm with censored seeds and how many."""
    res = run(scalar(censored="refuse"), BASE, TREAT)
    assert res.verdict == Verdict.INCONCLUSIVE
    assert res.reason == Has("No verdict is possible", "arm 'b' has 2 of 8 seeds censored and",
                             "arm 't' has 1 of 8 seeds censored", "`censored: refuse`",
                             "only a lower bound")
    assert res.details["censoring"] == REFUSE
    assert res.details["censored_policy"] == "refuse"
    assert res.details["censored_seeds"] == {"b": 2, "t": 1}


def test_refute_withheld_when_baseline_median_is_undetermined() -> None:
    """4 of baseline's 8 seeds censored at 1000 leave its median undetermined; a REFUTED that
    this low median could have produced is withheld, and the reason says so."""
    b = make_arm("b", [100, 110, 120, 130, 1000, 1000, 1000, 1000], [1, 1, 1, 1, 0, 0, 0, 0])
    t = make_arm("t", [800, 850, 900, 950, 980, 990, 1000, 1000], [1, 1, 1, 1, 1, 1, 0, 0])
    res = run(scalar(), b, t)
    assert res.verdict == Verdict.INCONCLUSIVE
    assert [a.columns["determined"] for a in res.arms] == ["no", "yes"]
    assert res.reason == Has("wholly above 0.8, excluding the claimed region bounded by 0.8",
                             "(point estimate 1.71), which would refute the claim",
                             "arm 'b' has 4 censored seed(s) entered at the budget",
                             "leaves its median undetermined, so no verdict is drawn.")
    assert res.details["withheld_by_lower_bound_rule"] == ["b"]


def test_lower_bound_rule_sentence_with_two_arms() -> None:
    """Both arms at risk are named, joined by "and", after the reason without its period."""
    b = make_arm("b", [1.0, 2.0, 5.0], [1, 1, 0])
    t = make_arm("t", [1.0, 5.0, 5.0], [1, 0, 0])
    verdict, reason, who = lower_bound_rule(Verdict.REFUTED, "The CI lies above 2 (x 1.5).",
                                            [b, t], "mean")
    assert verdict == Verdict.INCONCLUSIVE
    assert who == ["b", "t"]
    assert reason == Has("The CI lies above 2 (x 1.5), which would refute the claim, but",
                         "arm 'b' has 1 censored seed(s)", "its mean undetermined and arm 't'",
                         "arm 't' has 2 censored seed(s)", "so no verdict is drawn.")


# ---------------------------------------------------------------- too few seeds


def test_too_few_seeds_reason_and_rows() -> None:
    """An arm with one usable seed and one with none: the reason counts them and lists what was
    left out (or "none"); the table still shows the lone seed's median, NaN for the empty arm."""
    b = make_arm("b", [700.0], excluded={"diverged": 2, "no crossing": 1})
    t = make_arm("t", [])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an empty arm's statistic is NaN, without a warning
        res = run(scalar(), b, t)
    assert res.verdict == Verdict.INCONCLUSIVE
    assert res.reason == Has("No verdict is possible", "arm 'b' has 1 usable seed(s)",
                             "fewer than the 2", "(left out: diverged: 2, no crossing: 1); arm 't'",
                             "arm 't' has no usable seed (left out: none).")
    cols = [a.columns for a in res.arms]
    assert cols[0] == {"seeds": 1, "median": 700.0, "censored (as budget)": 0, "determined": "yes"}
    assert cols[1]["seeds"] == 0 and math.isnan(cols[1]["median"])


def test_enough_seeds_is_not_refused() -> None:
    """Exactly as many seeds as needed is enough."""
    assert too_few_seeds([make_arm("b", [1.0, 2.0]), make_arm("t", [3.0, 4.0])], 2) is None


# ---------------------------------------------------------------- determined, statistic_of


@pytest.mark.parametrize(("n_cens", "statistic", "expected"), [
    (0, "mean", True), (1, "mean", False), (4, "median", True), (5, "median", False),
    (2, "iqm", True), (3, "iqm", False)])
def test_determined(n_cens: int, statistic: Any, expected: bool) -> None:
    n = 10  # median: at most (n - 1) // 2 = 4 censored; IQM: int(0.25 n) = 2
    values = np.r_[np.arange(n - n_cens), np.full(n_cens, 99.0)]
    observed = np.r_[np.ones(n - n_cens, bool), np.zeros(n_cens, bool)]
    assert determined(values, observed, statistic) is expected


def test_determined_needs_censored_on_top() -> None:
    assert not determined(np.array([1.0, 5.0, 9.0]), np.array([True, False, True]), "median")


def test_determined_counts_censored_seeds_at_a_common_budget() -> None:
    """The median of n seeds is determined while at most (n - 1) // 2 are censored at a budget
    that no observed value exceeds -- a seed censored at the last observed time included."""
    assert determined(np.array([1.0, 2.0, 3.0, 3.0]), np.array([1, 1, 1, 0], bool), "median")
    assert determined(np.array([1.0, 2.0, 3.0, 9.0, 9.0]), np.array([1, 1, 1, 0, 0], bool),
                      "median")
    assert not determined(np.array([1.0, 2.0, 9.0, 9.0, 9.0]),
                          np.array([1, 1, 0, 0, 0], bool), "median")


def test_determined_reads_a_0_1_event_indicator() -> None:
    """An observed mask given as 0/1 integers (the usual event indicator) reads as booleans."""
    assert not determined(np.array([1.0, 2.0, 9.0, 9.0]), np.array([1, 1, 0, 0]), "median")
    assert determined(np.array([1.0, 2.0, 3.0, 9.0]), np.array([1, 1, 1, 0]), "median")


@pytest.mark.parametrize("statistic", ["mean", "median", "iqm"])
def test_statistic_of_one_and_no_seed(statistic: Any) -> None:
    """One seed's statistic is its value; an arm without seeds has NaN, quietly."""
    assert statistic_of(np.array([5.0]), statistic) == 5.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert math.isnan(statistic_of(np.array([]), statistic))


# ---------------------------------------------------------------- seed pairing


def test_repeated_seed_numbers_leave_the_arms_unpaired_with_the_reason() -> None:
    """A seed number repeated within an arm cannot be matched: the arms come back as given,
    unpaired, with 0 pairs, NaN correlation, the broken counts of the seed numbers the other arm
    lacks, and the reason when pairing was asked for (none when it was not)."""
    base = make_arm("b", [1.0, 2.0, 3.0], seeds=(0, 0, 1))
    treat = make_arm("t", [4.0, 5.0, 6.0], seeds=(0, 1, 2))
    asked = pair_arms(base, treat, True)
    assert (asked.paired, asked.n_pairs, asked.broken) == (False, 0, {"b": 1, "t": 1})
    assert asked.base is base and asked.treat is treat
    assert math.isnan(asked.correlation)
    assert asked.why_unpaired == Has("seed numbers repeat within arm(s) ['b']",
                                     "seeds cannot be matched")
    assert asked.details()["n_pairs"] == 0
    assert asked.analysis.startswith("unpaired (")
    assert asked.analysis == Has("seed numbers repeat within arm(s) ['b']", "cannot be matched)")
    declared = pair_arms(base, treat, False)
    assert (declared.paired, declared.n_pairs, declared.why_unpaired) == (False, 0, "")
    assert declared.analysis == "unpaired" and "unpaired_reason" not in declared.details()


def test_too_few_shared_seeds_declared_unpaired_has_no_reason() -> None:
    """One shared seed number: no paired analysis; with ``paired: false`` no reason either."""
    base, treat = make_arm("b", [1.0, 2.0], seeds=(0, 1)), make_arm("t", [3.0, 4.0], seeds=(1, 2))
    asked, declared = pair_arms(base, treat, True), pair_arms(base, treat, False)
    assert asked.why_unpaired == Has("the arms share 1 seed number(s) (different seed sets)",
                                     "fewer than the 2 pairs a paired analysis needs")
    assert (declared.paired, declared.n_pairs, declared.why_unpaired) == (False, 0, "")
    assert math.isnan(declared.correlation) and declared.broken == {"b": 1, "t": 1}


def test_two_shared_seeds_are_enough_to_pair() -> None:
    """Exactly two seed numbers in common is the smallest paired analysis: the arms are
    restricted to those seeds, in seed order; the third seed of each is a broken pair."""
    base = make_arm("b", [10.0, 20.0, 30.0], seeds=(5, 0, 9))
    treat = make_arm("t", [1.0, 2.0, 3.0], seeds=(0, 7, 5))
    p = pair_arms(base, treat, True)
    assert (p.paired, p.n_pairs, p.broken) == (True, 2, {"b": 1, "t": 1})
    assert p.base.seeds == (0, 5) and p.treat.seeds == (0, 5)
    assert list(p.base.values) == [20.0, 10.0] and list(p.treat.values) == [1.0, 3.0]
    assert p.correlation == pytest.approx(-1.0)  # two pairs in opposite order
    assert p.analysis == "paired (2 pairs, within-pair correlation -1)"


def test_within_pair_correlation_of_values_spanning_exactly_one() -> None:
    """An arm whose values span exactly 1 is not constant: rho by hand from the ranks
    x (1, 4, 3, 2) vs y (1, 2, 3, 4): d^2 sums to 8, rho = 1 - 6*8/(4*15) = 0.2, whichever
    arm has the unit span."""
    unit = [0.0, 1.0, 0.5, 0.25]
    wide = [10.0, 11.0, 12.0, 13.0]
    for b, t in ((unit, wide), (wide, unit)):
        assert pair_arms(make_arm("b", b), make_arm("t", t), True).correlation == \
            pytest.approx(0.2)


def test_constant_arm_gives_nan_correlation_without_a_warning() -> None:
    """A constant arm has no ranks to correlate: the correlation is NaN, decided before scipy is
    asked (which would warn about constant input)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for b, t in (([5.0, 5.0, 5.0], [1.0, 2.0, 3.0]), ([1.0, 2.0, 3.0], [5.0, 5.0, 5.0])):
            p = pair_arms(make_arm("b", b), make_arm("t", t), True)
            assert p.paired and math.isnan(p.correlation)


def test_within_pair_correlation_is_spearman_with_censored_at_budget() -> None:
    b = make_arm("b", [100, 200, 300, 900, 900], [1, 1, 1, 0, 0])
    t = make_arm("t", [50, 150, 250, 400, 900], [1, 1, 1, 1, 0])
    pairing = pair_arms(b, t, True)
    # ranks (1, 2, 3, 4.5, 4.5) and (1, .., 5): deviations (-2, -1, 0, 1.5, 1.5), (-2, .., 2)
    assert pairing.correlation == pytest.approx(9.5 / math.sqrt(9.5 * 10.0))
    assert pairing.n_pairs == 5 and pairing.broken == {"b": 0, "t": 0}


def test_broken_pairs_words_list_every_arm_with_a_lost_seed() -> None:
    """b has seeds 0-3, t 0-1 and 5-7: pairs 0, 1; b loses 2 and 3, t loses 5, 6 and 7."""
    base = make_arm("b", [1.0, 2.0, 3.0, 4.0])
    treat = make_arm("t", [1.0, 2.0, 3.0, 4.0, 5.0], seeds=(0, 1, 5, 6, 7))
    words = broken_pairs_words(pair_arms(base, treat, True))
    assert words.startswith("; ")
    assert words == Has("5 seed(s) without a partner in the other arm", "left out (b: 2, t: 3)")


# ---------------------------------------------------------------- take_seeds, require_arms


SOURCE = make_arm("a", [10.0, 20.0, 30.0], [True, False, True], {"acc": np.array([0.1, 0.2, 0.3])},
                  seeds=(4, 8, 6), excluded={"diverged": 2})


def test_take_seeds_keeps_seed_numbers_by_default() -> None:
    """Without ``renumber`` the taken seeds keep their numbers, values, masks, extra metrics and
    the arm's excluded counts; a float index array (e.g. from arithmetic) is taken as integers."""
    for index in ([2, 0], np.array([2.0, 0.0])):
        got = take_seeds(SOURCE, index)
        assert got.seeds == (6, 4)
        assert list(got.values) == [30.0, 10.0] and list(got.observed) == [True, True]
        assert list(got.extra["acc"]) == [0.3, 0.1]
        assert got.excluded == {"diverged": 2} and got.name == "a" and got.kind == "time"


def test_take_seeds_renumbers_a_resample() -> None:
    """With ``renumber`` a resample that repeats a seed gets seeds 0..len-1."""
    got = take_seeds(SOURCE, np.array([1, 1, 0]), renumber=True)
    assert got.seeds == (0, 1, 2) and list(got.values) == [20.0, 20.0, 10.0]
    assert list(got.observed) == [False, False, True]
    assert got.excluded == {"diverged": 2}


def test_require_arms_names_every_accepted_kind_and_every_wrong_arm() -> None:
    """The wiring error lists the accepted kinds joined by " or " and the wrong arms by ", "."""
    arms = {"a": make_arm("a", [1.0, 2.0]), "b": make_arm("b", [3.0, 4.0])}
    with pytest.raises(TypeError) as info:
        require_arms("crit", ["a", "b"], arms, ("value",))
    assert str(info.value) == Has("crit takes value metrics;",
                                  "arm(s) 'a' (time), 'b' (time) carry another kind")
    with pytest.raises(TypeError) as info:
        require_arms("crit", ["a"], arms, ("value", "share"))
    assert str(info.value) == Has("crit takes value or share metrics;",
                                  "arm(s) 'a' (time) carry another kind")


# ---------------------------------------------------------------- Hesterberg's expansion


def test_expanded_level_from_two_seeds() -> None:
    assert expanded_level(0.9, 2) == pytest.approx(hesterberg_level(0.9, 2), rel=1e-12)
    assert expanded_level(0.9, 3) == pytest.approx(hesterberg_level(0.9, 3), rel=1e-12)
    with pytest.raises(ValueError) as err:
        expanded_level(0.9, 1)
    assert str(err.value) == "the expanded level needs at least 2 observations"


def test_expanded_p_is_the_t_quantile_inverse() -> None:
    """Under the expansion, z for a one-sided level p is sqrt(n/(n-1)) t_(n-1, 1-p)."""
    for n, z in ((4, 0.7), (6, -1.2), (3, 2.5)):
        p = expanded_p(n)(z)
        assert math.sqrt(n / (n - 1)) * sps.t.ppf(1 - p, n - 1) == pytest.approx(z, rel=1e-9)


# ---------------------------------------------------------------- the BCa bootstrap CI


# skewed, on a small scale (the jackknife's sum of squares is far below 1), of unequal sizes
SMALL_B = np.array([0.011, 0.012, 0.014, 0.02, 0.05])
SMALL_T = np.array([0.004, 0.005, 0.0055, 0.006, 0.007, 0.009, 0.016, 0.03])
SKEWED = np.array([3.0, 4.0, 4.5, 5.0, 7.0, 9.0, 16.0])


def _difference_of_means(b: np.ndarray, t: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(t, axis=axis) - np.mean(b, axis=axis)


def _between(dist: np.ndarray, q: float) -> float:
    """A threshold halfway between two neighbouring distinct values of the bootstrap
    distribution near its quantile q (so that the interval's end can sit exactly on it)."""
    x = np.unique(dist)
    i = int(np.searchsorted(x, np.quantile(dist, q)))
    return float((x[i] + x[i + 1]) / 2)


CASES: dict[str, tuple[tuple[np.ndarray, ...], Callable[..., Any], bool]] = {
    "two arms, difference of means": ((SMALL_B, SMALL_T), _difference_of_means, False),
    "one sample, median (ties)": ((SKEWED,), np.median, False),
    "one sample, mean, expanded": ((SKEWED,), np.mean, True),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bootstrap_ci_is_scipys_bca_and_its_p_inverts_it(case: str) -> None:
    """The CI is scipy's BCa interval at the stated level (Hesterberg's expanded level with
    `expand`); each one-sided p is the alpha/2 at which that very interval's end sits on the
    threshold, both directions, support and refute (p_support + p_refute = 1)."""
    data, stat, expand = CASES[case]
    n = min(len(d) for d in data)
    level = hesterberg_level(0.9, n) if expand else 0.9
    ci, details = bootstrap_ci(data, stat, 0.9, 400, 7, expand=expand) if expand \
        else bootstrap_ci(data, stat, 0.9, 400, 7)
    oracle = scipy_bootstrap(data, stat, level, 400, 7)
    assert ci == pytest.approx(tuple(float(x) for x in oracle.confidence_interval), rel=1e-12)
    expected: dict[str, Any] = {"bootstrap": UNPAIRED, "n_boot": 400, "bootstrap_seed": 7,
                                "ci_method": "BCa"}
    if expand:
        assert details.pop("bootstrap_level") == pytest.approx(level, rel=1e-12)
        expected["bootstrap_level_rule"] = LEVEL_RULE
    assert details == expected
    dist = np.asarray(oracle.bootstrap_distribution)
    for direction in ("less", "greater"):
        for q in (0.15, 0.85):
            thr = _between(dist, q)
            _, d = bootstrap_ci(data, stat, 0.9, 400, 7, expand=expand, region=(direction, thr))
            assert d["p_method"] == P_METHOD
            p_s, p_r = d["p_support"], d["p_refute"]
            assert p_s + p_r == pytest.approx(1.0, rel=1e-9)
            # the smaller p: the level at which one end of the interval reaches thr
            p, end = min((p_s, "s"), (p_r, "r"))
            assert 0 < p < 0.5
            upper = (direction == "less") == (end == "s")
            at = 1 - 2 * p
            res = scipy_bootstrap(data, stat, hesterberg_level(at, n) if expand else at, 400, 7)
            got = res.confidence_interval.high if upper else res.confidence_interval.low
            assert float(got) == pytest.approx(thr, rel=1e-7, abs=1e-12), (direction, q)


def _mean_along(x: np.ndarray, *, axis: int) -> np.ndarray:
    """A vectorized statistic that, as scipy's contract allows, requires `axis`."""
    return np.mean(x, axis=axis)


def test_bootstrap_ci_calls_a_vectorized_statistic_with_its_axis() -> None:
    """Any statistic that scipy.stats.bootstrap takes vectorized (called with ``axis``) works,
    with the same CI and p's as the numpy function it wraps."""
    want = bootstrap_ci((SKEWED,), np.mean, 0.9, 300, 1, region=("less", 9.0))
    got = bootstrap_ci((SKEWED,), _mean_along, 0.9, 300, 1, region=("less", 9.0))
    assert got[0] == pytest.approx(want[0], rel=1e-12)
    assert got[1]["p_support"] == pytest.approx(want[1]["p_support"], rel=1e-9)


@pytest.mark.parametrize(("resampled", "words"), [
    ([2.5] * 3, "every resampled effect equals 2.5: with no spread no bootstrap interval holds, "
                "and a single value is no CI"),
    ([7.0], "every resampled effect equals 7: "),
    ([1.0, 1.0, 2.0], None), ([], None), ([1.0, np.inf], None), ([np.nan] * 2, None)])
def test_no_spread_speaks_only_for_finite_equal_resamples(resampled: list[float],
                                                          words: str | None) -> None:
    got = no_spread(np.asarray(resampled, dtype=float), "effect")
    assert (got is None) if words is None else (got == Has(words) and got.endswith("no CI"))


def test_all_values_equal_fall_back_to_percentile() -> None:
    """All values equal: BCa is undefined, the percentile CI (the value itself) is used and the
    details say why, and that no interval holds (`judge` then decides nothing)."""
    ci, details = bootstrap_ci((np.full(4, 5.0),), np.mean, 0.9, 200, 0, region=("less", 6.0))
    assert ci == (5.0, 5.0)
    assert details == {
        "bootstrap": UNPAIRED, "n_boot": 200, "bootstrap_seed": 0, "ci_method": "percentile",
        "bca_fallback_reason": Has("every resampled statistic equals 5 (all values equal), so "
                                   "BCa's bias correction and acceleration are undefined"),
        "p_support": 0.0, "p_refute": 1.0, "p_method": P_METHOD,
        "interval_fails": Has("every resampled statistic equals 5", "no bootstrap interval "
                              "holds")}


def test_degenerate_jackknife_falls_back_to_percentile() -> None:
    """The median of 1, 2, 2, 2, 3 has a constant jackknife (BCa's acceleration is 0/0) though
    its resamples vary: scipy's percentile interval of the same resamples is used, and its p's
    invert that percentile interval (no bias correction, no acceleration)."""
    data = (np.array([1.0, 2.0, 2.0, 2.0, 3.0]),)
    ci, details = bootstrap_ci(data, np.median, 0.9, 200, 0, region=("less", 2.5))
    pct = scipy_bootstrap(data, np.median, 0.9, 200, 0, method="percentile")
    assert ci == (float(pct.confidence_interval.low), float(pct.confidence_interval.high))
    assert ci == (1.0, 3.0)
    assert details["ci_method"] == "percentile"
    assert details["bca_fallback_reason"] == BCA_UNDEFINED
    p_s, p_r = details["p_support"], details["p_refute"]
    assert p_s + p_r == pytest.approx(1.0)
    dist = np.asarray(pct.bootstrap_distribution)
    # the percentile interval at level 1 - 2 p_support ends exactly at 2.5
    assert float(np.quantile(dist, 1 - p_s)) == pytest.approx(2.5, rel=1e-9)


def test_one_undefined_bca_bound_falls_back_to_percentile(monkeypatch: pytest.MonkeyPatch) -> None:
    """A BCa interval with one NaN bound (scipy's quantile next to an infinite resampled
    statistic can give one) is undefined as a whole: the percentile interval replaces it."""
    real = sps.bootstrap
    data = (SKEWED,)

    def half_nan(*args: Any, **kw: Any) -> Any:
        res = real(*args, **kw)
        if str(kw["method"]).lower() != "bca":
            return res
        low = float(res.confidence_interval.low)
        return SimpleNamespace(confidence_interval=(low, math.nan),
                               bootstrap_distribution=res.bootstrap_distribution)

    pct = scipy_bootstrap(data, np.mean, 0.9, 200, 0, method="percentile")
    monkeypatch.setattr(sps, "bootstrap", half_nan)
    ci, details = bootstrap_ci(data, np.mean, 0.9, 200, 0)
    assert ci == (float(pct.confidence_interval.low), float(pct.confidence_interval.high))
    assert details["ci_method"] == "percentile"
    assert details["bca_fallback_reason"] == BCA_UNDEFINED


# ---------------------------------------------------------------- bca_p_values by hand


DIST = np.array([7.0, 1.0, 11.0, 4.0, 2.0])  # sorted: 1 2 4 7 11 (positions 0, .25, ..., 1)


def bca_end_percentile(p: float, z0: float, a: float, upper: bool) -> float:
    """BCa's forward formula: the percentile of the bootstrap distribution at which the upper
    (lower) end of the interval at level 1 - 2p sits."""
    z = -float(ndtri(p)) if upper else float(ndtri(p))
    num = z0 + z
    return float(ndtr(z0 + num / (1 - a * num)))


@pytest.mark.parametrize("z0, a", [(0.0, 0.0), (0.2, 0.05), (-0.3, -0.08), (-3.6, 1 / 6)])
@pytest.mark.parametrize("thr, q", [(1.5, 0.5 / 4), (5.0, (2 + 1 / 3) / 4), (9.0, 3.5 / 4),
                                    (10.9, 3.975 / 4)])
def test_bca_p_values_invert_the_interval(z0: float, a: float, thr: float, q: float) -> None:
    """p_support / p_refute are the alpha/2 at which the interval's end sits at the threshold:
    the upper end for "less" support and "greater" refute, the lower end otherwise."""
    assert float(np.quantile(DIST, q)) == pytest.approx(thr)  # q: the threshold's position
    less = bca_p_values(DIST, z0, a, ("less", thr))
    greater = bca_p_values(DIST, z0, a, ("greater", thr))
    assert less["p_method"] == greater["p_method"] == P_METHOD
    for d, support_end_upper in ((less, True), (greater, False)):
        p_s, p_r = d["p_support"], d["p_refute"]
        assert 0 < p_s < 1 and p_s + p_r == pytest.approx(1.0, rel=1e-12)
        # the smaller p (the larger one's z is too close to the edge for the formula's floats)
        p, upper = (p_s, support_end_upper) if p_s <= p_r else (p_r, not support_end_upper)
        assert bca_end_percentile(p, z0, a, upper) == pytest.approx(q, rel=1e-9)


def test_bca_p_values_with_ties_at_the_threshold() -> None:
    """A threshold equal to a tied resampled value (common for a median): the boundary belongs
    to the region, so "less" is supported from the last tied position (3/4) and "greater" from
    the first (1/4) -- p_support 1/4 for both with z0 = a = 0."""
    dist = np.array([2.0, 1.0, 2.0, 3.0, 2.0])
    less = bca_p_values(dist, 0.0, 0.0, ("less", 2.0))
    greater = bca_p_values(dist, 0.0, 0.0, ("greater", 2.0))
    assert float(np.quantile(dist, 0.75)) == float(np.quantile(dist, 0.25)) == 2.0
    assert less["p_support"] == pytest.approx(0.25) and less["p_refute"] == pytest.approx(0.75)
    assert greater["p_support"] == pytest.approx(0.25)
    assert greater["p_refute"] == pytest.approx(0.75)


def test_bca_p_values_beyond_the_distribution() -> None:
    """A threshold outside the resamples: every interval lies on one side of it (p 0 or 1)."""
    for z0, a in ((0.0, 0.0), (0.4, 0.1)):
        for thr, less_support in ((0.5, 1.0), (11.0, 0.0), (12.0, 0.0)):
            d = bca_p_values(DIST, z0, a, ("less", thr))
            assert (d["p_support"], d["p_refute"]) == (less_support, 1 - less_support)
            d = bca_p_values(DIST, z0, a, ("greater", thr))
            assert (d["p_support"], d["p_refute"]) == (1 - less_support, less_support)
    one = bca_p_values(np.array([5.0]), 0.0, 0.0, ("less", 6.0))
    assert (one["p_support"], one["p_refute"]) == (0.0, 1.0)


def test_bca_p_values_beyond_bcas_reach() -> None:
    """With a negative acceleration BCa's adjusted percentile is bounded: a threshold beyond
    that bound is never reached by the upper end, which lies below it at every level."""
    for z0, a, thr in ((-3.6, -1 / 6, 10.9), (0.0, -1.0, 9.0)):
        d = bca_p_values(DIST, z0, a, ("less", thr))
        assert (d["p_support"], d["p_refute"]) == (0.0, 1.0)
    g = float(ndtri(3.5 / 4))  # at the bound itself: 1 + a g == 0
    a = -1 / g
    assert 1 + a * g == 0.0
    d = bca_p_values(DIST, 0.0, a, ("less", 9.0))
    assert (d["p_support"], d["p_refute"]) == (0.0, 1.0)


def test_bca_p_values_under_the_expansion() -> None:
    """With Hesterberg's t mapping the p is the t tail of the rescaled z (n = 4)."""
    d = bca_p_values(DIST, 0.0, 0.0, ("less", 5.0), expanded_p(4))
    z = float(ndtri((2 + 1 / 3) / 4))  # the upper end's nominal z at the threshold
    assert math.sqrt(4 / 3) * sps.t.ppf(1 - d["p_support"], 3) == pytest.approx(z, rel=1e-9)


def test_bca_p_values_need_a_finite_distribution() -> None:
    assert bca_p_values(np.array([1.0, math.inf, 3.0]), 0.0, 0.0, ("less", 2.0)) == {}
    assert bca_p_values(np.array([]), 0.0, 0.0, ("less", 2.0)) == {}


# ---------------------------------------------------------------- censored: restricted


def test_restricted_policy_clips_every_time_at_the_smallest_censoring_step() -> None:
    """`censored: restricted` judges min(T, τ): the same result as the arms clipped by hand and
    fully observed, τ in the details and the test's words; no lower-bound rule withholds it."""
    b = make_arm("b", [300, 500, 700, 5000, 5000], observed=[1, 1, 1, 0, 0])
    t = make_arm("t", [200, 4200, 4500, 900, 4800], observed=[1, 0, 1, 1, 1])
    res = run(scalar(censored="restricted", statistic="mean"), b, t)
    clipped = run(scalar(statistic="mean"), make_arm("b", [300, 500, 700, 4200, 4200]),
                  make_arm("t", [200, 4200, 4200, 900, 4200]))
    assert (res.estimate, res.ci, res.verdict) == (clipped.estimate, clipped.ci, clipped.verdict)
    assert res.details["restricted_tau"] == 4200.0
    assert res.details["censored_seeds"] == {"b": 2, "t": 1}
    assert res.details["censoring"] == Has("censored: restricted", "min(T, τ)", "τ the smallest",
                                           "censoring step, which is exact for censored seeds "
                                           "too (no lower-bound rule)")
    assert "on restricted times min(T, τ = 4200)" in res.test
    assert not res.details["withheld_by_lower_bound_rule"]


def test_restricted_policy_clips_a_value_criterions_arm() -> None:
    """`value` under `censored: restricted` judges the mean of min(T, τ): every seed observed, so
    the mean is determined and its p's are given; the test's words name τ."""
    arm = make_arm("a", [100, 150, 200, 250, 300, 400], observed=[1, 1, 1, 1, 0, 1])
    res = run_criterion({"name": "value", "arm": "a", "target": 200, "tol": 100,
                         "censored": "restricted", "n_boot": 300}, arm)
    clipped = run_criterion({"name": "value", "arm": "a", "target": 200, "tol": 100,
                             "n_boot": 300}, make_arm("a", [100, 150, 200, 250, 300, 300]))
    assert res.estimate == pytest.approx(1300 / 6)
    assert (res.ci, res.verdict, res.p_support) == (clipped.ci, clipped.verdict,
                                                    clipped.p_support)
    assert res.p_support is not None and res.p_refute is not None
    assert res.test == Has("bootstrap-t CI of the mean",
                           "on restricted times min(T, τ = 300)")


def test_the_censoring_details_name_the_policy_and_count_each_arms_censored_seeds() -> None:
    b = make_arm("b", [300, 5000], observed=[1, 0])
    refuse = censoring_details([b], "refuse")
    assert refuse == {"censoring": Has("censored: refuse -- any censored value withholds the "
                                       "verdict (INCONCLUSIVE)"),
                      "censored_policy": "refuse", "censored_seeds": {"b": 1}}
    assert censoring_details([b], "as_budget")["censoring"] == AS_BUDGET


def test_the_restriction_is_the_smallest_censoring_time_of_the_time_arms_only() -> None:
    """τ over every time arm's censored seeds; no censored time, or no time arm: no τ."""
    b = make_arm("b", [300, 5000], observed=[1, 0])
    t = make_arm("t", [4200, 900], observed=[0, 1])
    value = make_arm("v", [0.5, 1.0], kind="value")
    assert restriction([b, t, value]) == 4200.0 and restriction([b]) == 5000.0
    assert restriction([make_arm("u", [1.0, 2.0])]) is None
    assert restriction([value]) is None and restriction([]) is None


def test_restricted_policy_changes_nothing_without_censoring() -> None:
    b, t = make_arm("b", [300.0, 500, 700, 900]), make_arm("t", [200.0, 400, 450, 650])
    res = run(scalar(censored="restricted"), b, t)
    plain = run(scalar(), b, t)
    assert (res.estimate, res.ci, res.verdict, res.test) == (plain.estimate, plain.ci,
                                                             plain.verdict, plain.test)
    assert "restricted_tau" not in res.details


# ---------------------------------------------------------------- bootstrap-t of a mean


def test_bootstrap_t_refuses_when_more_than_half_alpha_of_resamples_are_flat() -> None:
    """Four equal values and one apart: a third of the resamples draw no spread. The interval
    fails when their count exceeds α/2 of n_boot, and holds at exactly α/2."""
    x = np.array([1.0, 1.0, 1.0, 1.0, 2.0])
    idx = np.random.default_rng(3).integers(0, 5, size=(200, 5))
    flat = int((x[idx].std(axis=1) == 0).sum())
    assert flat == 79
    at = 1 - flat / 100  # alpha / 2 * 200 == flat
    _, held = mean_bootstrap_t_ci(x, at, 200, 3)
    assert held["no_spread_resamples"] == flat and "interval_fails" not in held
    _, fails = mean_bootstrap_t_ci(x, at + 0.005, 200, 3)  # alpha / 2 * 200 == flat - 0.5
    assert fails["interval_fails"] == Has(
        "79 of 200 bootstrap resamples have no spread (more than α/2 = 0.393 of them)",
        "studentized ends are infinite or undefined",
        "the values are too near constant for this interval")


def test_bootstrap_t_of_equal_values_is_the_value() -> None:
    ci, details = mean_bootstrap_t_ci(np.full(4, 2.5), 0.9, 200, 0)
    assert ci == (2.5, 2.5) and details["degenerate"] == Has("all values equal")
    assert details["interval_fails"] == Has(
        "all 4 values equal 2.5: a mean's interval has no spread to estimate, and a single value "
        "is no CI")
