"""Tests that pin what a second mutation run of ``grokverify/stats`` (mutmut) found unpinned in
``common.py`` (seed pairing, `take_seeds`, `require_arms`' message, the broken-pairs words),
``cox.py`` (the non-inferiority words and details), ``scalar.py`` (the non-inferiority words of
``scalar_compare``; the exact 2^-n rule of the Kaplan-Meier ``value`` at its boundary),
``equivalence.py`` (the TOST p is statsmodels' own) and ``sequential.py`` (the nominal levels of
a design with a short step between looks, and the messages of `Rounds`).

How the expected values were derived:

* pairing: by hand from the seed numbers (pairs = seed numbers both arms have, broken = the
  rest), Spearman's rho by hand from the ranks, 1 - 6 sum d^2 / (n (n^2 - 1));
* words (claimed regions, reasons, details, messages): from the documented wording, with the
  thresholds worked out by hand (Cox: 1 / (1 - margin) for ``greater``, 1 / (1 + margin) for
  ``less``; scalar_compare: 1 -/+ margin);
* the TOST p: statsmodels' ``ttost_ind`` called here on the same data (the module documents it
  as the source of p); the data were chosen so that the t-formula of the one-sided p's differs
  from it in the last bits;
* the Kaplan-Meier ``value`` with no event: 2^-4 = 0.0625 = (1 - 0.875) / 2 exactly, the
  boundary at which the rule "REFUTED only when 2^-n <= alpha/2" still refutes;
* the nominal levels: the defining property (the null probability of crossing by look k equals
  the spent alpha) checked with an independent brute-force quadrature (Simpson's rule on a fine
  grid of the Brownian-motion densities), not with the module's own integration.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pytest
from scipy import stats as sps
from statsmodels.stats.weightstats import ttost_ind

from grokverify.kinds import CRITERIA
from grokverify.stats import sequential
from grokverify.stats.base import ArmSample, CriterionResult, Verdict, judge
from grokverify.stats.common import broken_pairs_words, pair_arms, require_arms, take_seeds
from grokverify.stats.sequential import Look, Rounds, nominal_levels, spending


def arm(name: str, values: list[float], seeds: tuple[int, ...] | None = None,
        observed: list[bool] | None = None, **kw: Any) -> ArmSample:
    """An arm (time metric unless `kind` says otherwise), seeds 0..n-1 unless given."""
    v = np.asarray(values, dtype=float)
    o = np.ones(v.size, bool) if observed is None else np.asarray(observed, bool)
    return ArmSample(name, v, o, tuple(range(v.size)) if seeds is None else seeds, **kw)


def run(criterion: str, arms: list[ArmSample], **kw: Any) -> CriterionResult:
    params = CRITERIA[criterion].model_validate({"name": criterion, **kw})
    return judge(params, {a.name: a for a in arms})


# ---------------------------------------------------------------- common: pairing


def test_repeated_seed_numbers_leave_the_arms_unpaired_with_the_reason() -> None:
    """A seed number repeated within an arm cannot be matched: the arms come back as given,
    unpaired, with 0 pairs, NaN correlation, the broken counts of the seed numbers the other arm
    lacks, and the reason when pairing was asked for (none when it was not)."""
    base = arm("b", [1.0, 2.0, 3.0], seeds=(0, 0, 1))
    treat = arm("t", [4.0, 5.0, 6.0], seeds=(0, 1, 2))
    asked = pair_arms(base, treat, True)
    assert (asked.paired, asked.n_pairs, asked.broken) == (False, 0, {"b": 1, "t": 1})
    assert asked.base is base and asked.treat is treat
    assert math.isnan(asked.correlation)
    assert asked.why_unpaired == ("seed numbers repeat within arm(s) ['b'], so seeds cannot be "
                                  "matched")
    assert asked.details()["n_pairs"] == 0
    assert asked.analysis == ("unpaired (seed numbers repeat within arm(s) ['b'], so seeds "
                              "cannot be matched)")
    declared = pair_arms(base, treat, False)
    assert (declared.paired, declared.n_pairs, declared.why_unpaired) == (False, 0, "")
    assert declared.analysis == "unpaired" and "unpaired_reason" not in declared.details()


def test_too_few_shared_seeds_declared_unpaired_has_no_reason() -> None:
    """One shared seed number: no paired analysis; with ``paired: false`` no reason either."""
    base, treat = arm("b", [1.0, 2.0], seeds=(0, 1)), arm("t", [3.0, 4.0], seeds=(1, 2))
    asked, declared = pair_arms(base, treat, True), pair_arms(base, treat, False)
    assert asked.why_unpaired == ("the arms share 1 seed number(s) (different seed sets), fewer "
                                  "than the 2 pairs a paired analysis needs")
    assert (declared.paired, declared.n_pairs, declared.why_unpaired) == (False, 0, "")
    assert math.isnan(declared.correlation) and declared.broken == {"b": 1, "t": 1}


def test_two_shared_seeds_are_enough_to_pair() -> None:
    """Exactly two seed numbers in common is the smallest paired analysis: the arms are
    restricted to those seeds, in seed order; the third seed of each is a broken pair."""
    base = arm("b", [10.0, 20.0, 30.0], seeds=(5, 0, 9))
    treat = arm("t", [1.0, 2.0, 3.0], seeds=(0, 7, 5))
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
    assert pair_arms(arm("b", unit), arm("t", wide), True).correlation == pytest.approx(0.2)
    assert pair_arms(arm("b", wide), arm("t", unit), True).correlation == pytest.approx(0.2)


def test_constant_arm_gives_nan_correlation_without_a_warning() -> None:
    """A constant arm has no ranks to correlate: the correlation is NaN, decided before scipy is
    asked (which would warn about constant input)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for b, t in (([5.0, 5.0, 5.0], [1.0, 2.0, 3.0]), ([1.0, 2.0, 3.0], [5.0, 5.0, 5.0])):
            p = pair_arms(arm("b", b), arm("t", t), True)
            assert p.paired and math.isnan(p.correlation)


def test_broken_pairs_words_list_every_arm_with_a_lost_seed() -> None:
    """b has seeds 0-3, t 0-1 and 5-7: pairs 0, 1; b loses 2 and 3, t loses 5, 6 and 7."""
    base = arm("b", [1.0, 2.0, 3.0, 4.0])
    treat = arm("t", [1.0, 2.0, 3.0, 4.0, 5.0], seeds=(0, 1, 5, 6, 7))
    words = broken_pairs_words(pair_arms(base, treat, True))
    assert words == "; 5 seed(s) without a partner in the other arm, left out (b: 2, t: 3)"


# ---------------------------------------------------------------- common: take_seeds, require_arms


SOURCE = ArmSample("a", np.array([10.0, 20.0, 30.0]), np.array([True, False, True]), (4, 8, 6),
                   excluded={"diverged": 2}, extra={"acc": np.array([0.1, 0.2, 0.3])})


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
    arms = {"a": arm("a", [1.0, 2.0]), "b": arm("b", [3.0, 4.0])}
    with pytest.raises(TypeError) as info:
        require_arms("crit", ["a", "b"], arms, ("value",))
    assert str(info.value) == ("crit takes value metrics; arm(s) 'a' (time), 'b' (time) carry "
                               "another kind")
    with pytest.raises(TypeError) as info:
        require_arms("crit", ["a"], arms, ("value", "share"))
    assert str(info.value) == "crit takes value or share metrics; arm(s) 'a' (time) carry " \
                              "another kind"


# ---------------------------------------------------------------- cox_hazard_ratio

BUDGET = 1000.0
BASE = arm("b", [400, 520, 610, 700, 780, 850, 930, BUDGET, BUDGET, BUDGET],
           observed=[True] * 7 + [False] * 3)
TREAT = arm("t", [150, 200, 260, 310, 380, 450, 540, 600, 720, BUDGET],
            observed=[True] * 9 + [False])
COX = {"baseline": "b", "treated": "t"}
MARGIN_TO_HR = "less: 1/(1+margin); greater: 1/(1-margin)"


def test_cox_non_inferiority_words_and_details() -> None:
    """Treated is much faster (HR about 3): "at most 25% slower" (HR >= 1/1.25 = 0.8) is
    SUPPORTED, the reason names the non-inferiority bound with the margin as a percentage, and
    the details say how the margin became an HR boundary."""
    res = run("cox_hazard_ratio", [BASE, TREAT], **COX, direction="less", margin=0.25)
    assert res.claimed_region == "HR >= 0.8 (non-inferiority: t at most 25% slower than b)"
    assert res.verdict == Verdict.SUPPORTED
    assert res.reason.startswith("The 95% CI of the Cox hazard ratio (t / b), [")
    assert "lies wholly at or above 0.8, the non-inferiority bound (margin 25%) (point " \
           "estimate 3.03)." in res.reason
    assert res.details["margin_to_hr"] == MARGIN_TO_HR


def test_cox_non_inferiority_greater_words() -> None:
    """``greater`` (treated slower) with margin 0.25: HR <= 1/(1 - 0.25) = 1.33, and the
    tolerated worse direction is "faster"."""
    res = run("cox_hazard_ratio", [BASE, TREAT], **COX, direction="greater", margin=0.25)
    assert res.claimed_region == "HR <= 1.33 (non-inferiority: t at most 25% faster than b)"
    assert res.details["margin_to_hr"] == MARGIN_TO_HR


def test_cox_superiority_has_no_margin_detail_and_zero_effect_words() -> None:
    """Without a margin there is no margin_to_hr detail; an explicit min_effect 0 claims HR >= 1,
    "at least 0% faster"."""
    res = run("cox_hazard_ratio", [BASE, TREAT], **COX, direction="less", min_effect=0.0)
    assert res.claimed_region == "HR >= 1 (t at least 0% faster)"
    assert "margin_to_hr" not in res.details
    assert "the boundary of the claimed effect" in res.reason


# ---------------------------------------------------------------- scalar_compare

S_BASE = arm("b", [100.0, 110, 120, 130, 140, 150, 160, 170, 180, 190])
S_TREAT = arm("t", [90.0, 99, 108, 117, 126, 135, 144, 153, 162, 171])  # 0.9 x baseline


@pytest.mark.parametrize(("direction", "region"), [
    ("less", "ratio <= 1.25 (non-inferiority: t at most 25% higher than b)"),
    ("greater", "ratio >= 0.75 (non-inferiority: t at most 25% lower than b)"),
])
def test_scalar_non_inferiority_region_words(direction: str, region: str) -> None:
    res = run("scalar_compare", [S_BASE, S_TREAT], baseline="b", treated="t",
              direction=direction, margin=0.25, statistic="median")
    assert res.claimed_region == region


def test_scalar_non_inferiority_reason_names_the_margin_as_a_percentage() -> None:
    """Every per-seed ratio is 0.9: the paired median's exact CI is [0.9, 0.9], wholly at or
    below 1.25, the non-inferiority bound of a ratio margin of 25%."""
    res = run("scalar_compare", [S_BASE, S_TREAT], baseline="b", treated="t", direction="less",
              margin=0.25, statistic="median")
    assert res.verdict == Verdict.SUPPORTED
    assert res.reason.endswith("lies wholly at or below 1.25, the non-inferiority bound "
                               "(margin 25%) (point estimate 0.9).")


# ---------------------------------------------------------------- value: Kaplan-Meier, no event


@pytest.mark.parametrize(("n", "verdict"), [(4, Verdict.REFUTED), (3, Verdict.INCONCLUSIVE)])
def test_no_event_bound_equal_to_alpha_half_still_refutes(n: int, verdict: Verdict) -> None:
    """At 87.5% alpha/2 = 0.0625 = 2^-4: four seeds all censored refute a region below the
    budget (2^-4 <= alpha/2), three (2^-3 = 0.125 > 0.0625) do not."""
    never = arm("never", [BUDGET] * n, observed=[False] * n)
    res = run("value", [never], arm="never", target=300, tol=100, statistic="median",
              censored="as_budget", ci_level=0.875)
    assert res.verdict == verdict
    assert (res.p_support, res.p_refute) == (1.0, 0.5 ** n)
    if verdict == Verdict.REFUTED:
        assert res.reason.startswith("The 87.5% CI of the Kaplan-Meier median of never lies "
                                     "beyond the budget")


# ---------------------------------------------------------------- equivalence

# two arms of different sizes (Welch), for which the one-sided t formula and statsmodels'
# ttost_ind differ in the last bits
E_BASE = arm("b", [1.809, 2.331, 1.666, 1.394, 2.864, 1.488])
E_TREAT = arm("t", [1.294, 1.56, 1.679, 1.45, 2.073, 2.874, 1.252, 1.83])


def test_equivalence_p_is_statsmodels_ttost_ind() -> None:
    """The reported TOST p is statsmodels' ``ttost_ind`` p itself (as documented), not a
    recomputation."""
    res = run("equivalence", [E_BASE, E_TREAT], baseline="b", treated="t", margin=1.0,
              paired=False)
    expected = ttost_ind(E_TREAT.values, E_BASE.values, -1.0, 1.0, usevar="unequal")[0]
    assert res.p_value == float(expected)
    assert res.p_support == pytest.approx(float(expected), rel=1e-12)


# ---------------------------------------------------------------- sequential


def _simpson(n: int, h: float) -> np.ndarray:
    w = np.ones(n)
    w[1:-1:2], w[2:-1:2] = 4.0, 2.0
    return w * h / 3.0


def _oracle_crossings(fractions: tuple[float, ...], levels: list[float],
                      points: int = 2001) -> list[float]:
    """Cumulative null probability of crossing |B(t_k)| >= b_k by each look (B a standard
    Brownian motion, b_k = z_(alpha_k/2) sqrt(t_k)) by brute force: the sub-density of B on
    each continuation interval on a fine Simpson grid, pushed forward by the Gaussian kernel."""
    bounds = [float(sps.norm.isf(a / 2.0)) * math.sqrt(t)
              for a, t in zip(levels, fractions, strict=True)]
    out, total = [], 0.0
    x, w, f, t_prev = np.zeros(1), np.ones(1), np.ones(1), 0.0
    for t, b in zip(fractions, bounds, strict=True):
        s = math.sqrt(t - t_prev)
        tails = sps.norm.cdf((-b - x) / s) + sps.norm.cdf((x - b) / s)
        total += float(np.sum(w * f * tails))
        out.append(total)
        y = np.linspace(-b, b, points)
        kernel = sps.norm.pdf((y[:, None] - x[None, :]) / s) / s
        f, x, w, t_prev = kernel @ (w * f), y, _simpson(points, 2 * b / (points - 1)), t
    return out


@pytest.fixture
def fresh_levels() -> None:
    """The levels are cached per design: computed afresh here, so that the test checks the
    computation and not an earlier test's result (or, under mutmut, the parent process's)."""
    sequential._nominal_levels_cached.cache_clear()


@pytest.mark.usefixtures("fresh_levels")
def test_nominal_levels_spend_alpha_exactly_with_a_short_step() -> None:
    """Two looks close together (t = 0.5 and 0.51: the Gaussian kernel between them has sd 0.1,
    so the continuation density must be integrated on fine panels): the O'Brien-Fleming nominal
    levels still make the null crossing probability by each look equal the alpha spent."""
    fractions = (0.5, 0.51, 1.0)
    levels = nominal_levels(fractions, 0.05, "obrien_fleming")
    got = _oracle_crossings(fractions, levels)
    spent = [float(spending(t, 0.05, "obrien_fleming")) for t in fractions]
    assert got == pytest.approx(spent, rel=0, abs=1e-9)


def test_rounds_messages() -> None:
    """A design without looks, and a verdict recorded after the rounds are done, are errors
    with their messages."""
    with pytest.raises(ValueError) as error:
        Rounds([])
    assert str(error.value) == "a seeding design needs at least one look"
    rounds = Rounds([Look(4, None), Look(8, None)])
    rounds.record(Verdict.SUPPORTED)
    with pytest.raises(RuntimeError) as info:
        rounds.record(Verdict.REFUTED)
    assert str(info.value) == "every look has been judged or a verdict is final already"
