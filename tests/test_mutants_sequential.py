"""Tests that pin what the mutation run of ``grokverify/stats/sequential.py`` found unpinned.

mutmut left mutants of group-sequential seeding alive: the refusal messages of a bad seeding
design (looks, information, fractions, alpha, spending kind, params without a CI level), the
edges of the accepted inputs (a first look at one seed, fractions a rounding error above 1, the
clipping of t to [0, 1], spending exactly alpha at the last look), the accuracy of the nominal
levels for unevenly spaced looks, and the record of a sequential run that reports read (the
``details["sequential"]`` dict: design sentence, schedule, rounds, where it stopped). Each test
below pins one behaviour a user relies on; the numbers are checked against oracles computed here
(the spending formulas by hand, the two-look crossing probability by 1-D quadrature of the
bivariate normal, means with numpy, each round's CI by running the criterion itself at
the oracle's level), never against the module's own output.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pydantic
import pytest
from scipy import integrate, optimize, special
from scipy import stats as sps

from grokverify.kinds import CRITERIA
from grokverify.stats import sequential as seq
from grokverify.stats.base import ArmSample, Verdict, judge
from grokverify.stats.simulate import first_seeds, make_arm

X, Y = "val_threshold_step", "train_threshold_step"
OBF, POCOCK = "obrien_fleming", "pocock"


# ---------------------------------------------------------------- oracles


def spent(t: float, alpha: float, kind: str) -> float:
    """The Lan-DeMets spending functions, by hand (t in [0, 1])."""
    if kind == OBF:
        return 2.0 * (1.0 - float(special.ndtr(float(sps.norm.isf(alpha / 2)) / math.sqrt(t))))
    return alpha * math.log(1.0 + (math.e - 1.0) * t)


def second_level(t1: float, alpha: float, kind: str) -> float:
    """Nominal two-sided level of the second of two looks at fractions (t1, 1): the first look
    crosses |Z1| >= c1 with probability spent(t1); c2 is such that P(|Z1| < c1, |Z2| < c2) =
    1 - alpha with corr(Z1, Z2) = sqrt(t1), by quadrature of the bivariate normal over z1."""
    c1 = float(sps.norm.isf(spent(t1, alpha, kind) / 2))
    rho, sd = math.sqrt(t1), math.sqrt(1.0 - t1)

    def inside(c2: float) -> float:
        def f(z: float) -> float:
            return float(sps.norm.pdf(z) * (special.ndtr((c2 - rho * z) / sd)
                                            - special.ndtr((-c2 - rho * z) / sd)))
        c = min(c1, 40.0)
        return integrate.quad(f, -c, c, epsabs=1e-14, epsrel=1e-13, limit=500)[0]

    c2 = optimize.brentq(lambda c: 1.0 - inside(c) - alpha, 0.5, 10.0, xtol=1e-14)
    return float(2.0 * sps.norm.sf(c2))


def criterion_ci(values: np.ndarray, level: float) -> tuple[float, float]:
    """The ``value`` criterion's own CI (bootstrap-t of the mean) of these seeds at `level`,
    from the criterion run directly with its ``ci_level`` set to `level`."""
    params = value_params().model_copy(update={"ci_level": level})
    ci = judge(params, {"arm": make_arm("arm", values, kind="value")}).ci
    return float(ci[0]), float(ci[1])


def value_params(**kw: Any) -> pydantic.BaseModel:
    """A ``value`` claim: the mean of arm within [0.8, 1.2]."""
    return CRITERIA["value"](**{"name": "value", "arm": "arm", "target": 1.0,
                                             "tol": 0.2, **kw})


def draw_from(values: np.ndarray | list[float]) -> Callable[[int], dict[str, ArmSample]]:
    """The arm's first n seeds of a fixed series of per-seed values (a value metric)."""
    arms = {"arm": make_arm("arm", np.asarray(values, float), kind="value")}
    return lambda n: first_seeds(arms, n)


# ---------------------------------------------------------------- looks and information


def test_looks_may_start_at_one_seed_and_refuse_a_bad_design_by_name() -> None:
    """``seeds: {min: 1, ...}`` is a valid design; a bad one is refused with the numbers the user
    wrote."""
    assert seq.looks(1, 3, 1) == [1, 2, 3]
    with pytest.raises(ValueError) as err:
        seq.looks(0, 10, 2)
    assert str(err.value) == ("seeds needs 1 <= min <= max and step >= 1, got min=0, max=10, "
                              "step=2")


def test_information_fractions_of_small_designs() -> None:
    """A first look at one seed and a single look are valid (t = n_k / n_max)."""
    assert seq.information_fractions([1, 2]) == [0.5, 1.0]
    assert seq.information_fractions([1, 4]) == [0.25, 1.0]
    assert seq.information_fractions([5]) == [1.0]


@pytest.mark.parametrize("sizes", [[], [0, 5], [8, 8, 20], [5, 4, 10], [4, 8, 6, 12]])
def test_information_fractions_refuse_looks_that_do_not_increase(sizes: list[int]) -> None:
    """Seed counts that are empty, start below 1 or do not strictly increase are refused with
    the looks as written (not a later, misleading complaint about the information)."""
    with pytest.raises(ValueError) as err:
        seq.information_fractions(sizes)
    assert str(err.value) == f"looks must be strictly increasing positive seed counts, got {sizes}"


@pytest.mark.parametrize(("sizes", "information", "info"), [
    ([3, 4, 8], lambda n: n - 3.0, [0.0, 1.0, 5.0]),            # no information at the 1st look
    ([8, 12, 16], lambda n: min(n, 10.0), [8.0, 10.0, 10.0]),   # information that plateaus
    ([1, 2, 3], lambda n: {1: 5.0, 2: 4.0, 3: 10.0}[n], [5.0, 4.0, 10.0]),  # dips, then rises
])
def test_information_fractions_refuse_information_that_is_not_positive_and_increasing(
        sizes: list[int], information: Callable[[int], float], info: list[float]) -> None:
    """A criterion's information must be positive at the first look and strictly increase;
    otherwise the design is refused naming the looks and the information they have."""
    with pytest.raises(ValueError) as err:
        seq.information_fractions(sizes, information)
    assert str(err.value) == (f"the information at looks {sizes} must be positive and "
                              f"increasing, got {info}")


# ---------------------------------------------------------------- spending


@pytest.mark.parametrize("kind", [OBF, POCOCK])
@pytest.mark.parametrize("alpha", [0.05, 0.1, 0.2])
def test_spending_is_exactly_alpha_at_the_last_look(kind: str, alpha: float) -> None:
    """By t = 1 the whole alpha is spent, exactly (the O'Brien-Fleming formula alone rounds to
    0.049999999999999954), also for t clipped down to 1 and inside an array."""
    assert seq.spending(1.0, alpha, kind) == alpha  # type: ignore[arg-type]
    assert seq.spending(1.5, alpha, kind) == alpha  # type: ignore[arg-type]
    out = seq.spending(np.array([0.5, 1.0]), alpha, kind)  # type: ignore[arg-type]
    assert out[1] == alpha
    assert out[0] == pytest.approx(spent(0.5, alpha, kind), rel=1e-12)


@pytest.mark.parametrize("kind", [OBF, POCOCK])
def test_spending_before_the_start_is_nothing(kind: str) -> None:
    """t below 0 is clipped to 0: nothing spent (not a negative amount or NaN)."""
    assert seq.spending(-0.5, 0.05, kind) == 0.0  # type: ignore[arg-type]
    assert list(seq.spending(np.array([-1.0, 0.0]), 0.05, kind)) == [0.0, 0.0]  # type: ignore[arg-type]


def test_spending_at_zero_raises_no_warning() -> None:
    """O'Brien-Fleming at t = 0 divides by sqrt(0); the user sees 0 spent and no warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert seq.spending(0.0, 0.05, OBF) == 0.0
        assert list(seq.spending(np.array([0.0, 1.0]), 0.05, OBF)) == [0.0, 0.05]


@pytest.mark.parametrize("kind", [OBF, POCOCK])
def test_spending_of_single_precision_fractions_is_computed_in_double(kind: str) -> None:
    """Fractions given as float32 (or float16) are spent in double precision: the result is the
    formula at the same values in float64, not a single-precision approximation."""
    t32 = np.array([0.3, 0.7], dtype=np.float32)
    out = seq.spending(t32, 0.05, kind)  # type: ignore[arg-type]
    assert out.dtype == np.float64
    for got, t in zip(out, t32, strict=True):
        assert got == pytest.approx(spent(float(t), 0.05, kind), rel=1e-13)
    t16 = np.float16(0.3)
    assert seq.spending(t16, 0.05, kind) == pytest.approx(  # type: ignore[arg-type]
        spent(float(t16), 0.05, kind), rel=1e-13)


@pytest.mark.parametrize("alpha", [0.0, 1.0, 1.5])
def test_spending_refuses_an_alpha_outside_0_1(alpha: float) -> None:
    with pytest.raises(ValueError) as err:
        seq.spending(0.5, alpha, OBF)
    assert str(err.value) == f"alpha must be in (0, 1), got {alpha}"


def test_spending_refuses_an_unknown_kind_listing_the_known_ones() -> None:
    with pytest.raises(ValueError) as err:
        seq.spending(0.5, 0.05, "haybittle")  # type: ignore[arg-type]
    assert str(err.value) == "unknown spending kind 'haybittle'; known: obrien_fleming, pocock"


# ---------------------------------------------------------------- nominal levels


@pytest.mark.parametrize("kind", [OBF, POCOCK])
@pytest.mark.parametrize("sizes", [[1, 100], [10, 20], [19, 20]])
def test_two_look_levels_match_the_bivariate_normal(kind: str, sizes: list[int]) -> None:
    """Two looks -- a very early one (1 of 100 seeds), halfway, and a late one (19 of 20): the
    first level is the amount spent at t1, the second makes the total crossing probability
    exactly alpha (an independent quadrature of the bivariate normal), to 1e-9."""
    t = seq.information_fractions(sizes)
    first, second = seq.nominal_levels(t, 0.05, kind)  # type: ignore[arg-type]
    assert first == pytest.approx(spent(t[0], 0.05, kind), rel=1e-9)
    assert second == pytest.approx(second_level(t[0], 0.05, kind), rel=1e-9)


def test_nominal_levels_default_to_obrien_fleming_at_0_05() -> None:
    first, second = seq.nominal_levels([0.5, 1.0])
    assert first == pytest.approx(spent(0.5, 0.05, OBF), rel=1e-9)
    assert second == pytest.approx(second_level(0.5, 0.05, OBF), rel=1e-9)


def test_nominal_levels_accept_fractions_a_rounding_error_above_one() -> None:
    """Fractions computed in floats may end a hair above 1 (up to 1e-12): still the full design."""
    assert seq.nominal_levels([0.5, 1.0 + 1e-12], 0.05, OBF) == pytest.approx(
        [spent(0.5, 0.05, OBF), second_level(0.5, 0.05, OBF)], rel=1e-9)
    assert seq.crossing_probabilities([0.5, 1.0 + 1e-12], [0.01, 0.05])[0] == pytest.approx(
        0.01, rel=1e-12)


@pytest.mark.parametrize("fractions", [[0.5, 0.5, 1.0], [0.5, 0.4, 1.0], [0.6, 0.4, 0.5, 1.0],
                                       [0.0, 1.0], [0.5, 1.2]])
def test_nominal_levels_refuse_bad_fractions_by_name(fractions: list[float]) -> None:
    """Repeated, decreasing or out-of-range fractions are refused with this message (not a
    math-domain or division error from the integration)."""
    for call in (lambda: seq.nominal_levels(fractions, 0.05, OBF),
                 lambda: seq.crossing_probabilities(fractions, [0.01] * len(fractions))):
        with pytest.raises(ValueError) as err:
            call()
        assert str(err.value) == ("information fractions must increase within (0, 1], got "
                                  f"{fractions}")


def test_crossing_probabilities_want_one_level_per_look() -> None:
    with pytest.raises(ValueError) as err:
        seq.crossing_probabilities([0.5, 1.0], [0.05])
    assert str(err.value) == "one level per look"


# ---------------------------------------------------------------- the design object


def test_with_spending_defaults_to_obrien_fleming_and_records_its_alpha() -> None:
    """A design built without a kind is O'Brien-Fleming; it keeps its kind and overall alpha,
    and each look the alpha spent by then (the formula at its fraction)."""
    design = seq.Rounds.with_spending([10, 20, 40], 0.05)
    assert design.kind == OBF and design.alpha == 0.05 and design.sequential
    assert [k.alpha_spent for k in design.looks] == pytest.approx(
        [spent(0.25, 0.05, OBF), spent(0.5, 0.05, OBF), 0.05], rel=1e-12)
    assert design.looks[-1].alpha_spent == 0.05
    assert [k.information_fraction for k in design.looks] == [0.25, 0.5, 1.0]


# ---------------------------------------------------------------- params at a level


class NoLevel(pydantic.BaseModel):
    """Params with neither a CI level nor an alpha."""

    x: int = 1


class AlphaOnly(pydantic.BaseModel):
    """Params with an alpha but no ``ci_level`` to check it by."""

    alpha: float = 0.05


class OneSided(pydantic.BaseModel):
    """Params whose CI level is 1 - alpha (not the TOST 1 - 2 alpha `at_level` assumes)."""

    alpha: float = 0.05

    @property
    def ci_level(self) -> float:
        return 1.0 - self.alpha


class RoundedLevel(pydantic.BaseModel):
    """Params that report their CI level rounded to 9 digits."""

    alpha: float = 0.05

    @property
    def ci_level(self) -> float:
        return round(1.0 - 2.0 * self.alpha, 9)


def test_own_alpha_refuses_params_without_a_ci_level() -> None:
    with pytest.raises(ValueError) as err:
        seq.own_alpha(NoLevel())
    assert str(err.value) == "NoLevel has no ci_level; pass alpha explicitly"


def test_at_level_refuses_params_it_cannot_set_to_the_level() -> None:
    """`at_level` refuses params it cannot move to the asked CI level, naming them and the
    level: no field to set, no level to check, a level off by a different convention, or one
    off by more than float rounding."""
    cases: list[tuple[pydantic.BaseModel, str]] = [
        (NoLevel(), "NoLevel has neither ci_level nor alpha"),
        (AlphaOnly(), "could not set the CI level of AlphaOnly to 0.99"),
        (OneSided(), "could not set the CI level of OneSided to 0.99"),
    ]
    for params, message in cases:
        with pytest.raises(ValueError) as err:
            seq.at_level(params, 0.99)
        assert str(err.value) == message
    level = 0.9944254033192156  # the first of two O'Brien-Fleming looks at 0.05
    with pytest.raises(ValueError) as err:
        seq.at_level(RoundedLevel(), level)
    assert str(err.value) == f"could not set the CI level of RoundedLevel to {level}"


def test_at_level_accepts_a_level_within_float_rounding() -> None:
    """equivalence sets alpha = (1 - c) / 2; where 1 - 2 alpha rounds to a neighbour of c
    (c = 0.1 gives 0.09999999999999998) the level is still accepted."""
    eq = CRITERIA["equivalence"](name="equivalence", arm="arm", reference=1.0,
                                              margin=0.2)
    moved = seq.at_level(eq, 0.1)
    assert moved.alpha == pytest.approx(0.45) and moved.ci_level == pytest.approx(0.1)  # type: ignore[attr-defined]


# ---------------------------------------------------------------- run_sequential's record


# 20 seeds: the first 10 spread widely around 1 (no decision at 10 seeds; mean 1.005 by
# hand), the next 10 tight (mean of all 20: 1.0025)
SERIES = np.r_[1.0 + 0.5 * np.array([-0.9, 0.7, -0.5, 0.3, 0.1, -0.1, 0.5, -0.3, 0.9, -0.6]),
               1.0 + 0.02 * np.array([1, -1, 2, -2, 0.5, -0.5, 1.5, -1.5, 0, 0])]


def test_run_sequential_record_when_the_last_look_decides() -> None:
    """Two O'Brien-Fleming looks at 10 and 20 seeds; 10 seeds leave the verdict open, 20
    support it. The user reads the design sentence, the schedule of looks (fraction, alpha spent,
    nominal level, CI level), each round's CI level, estimate, CI and verdict, and that the run
    stopped at 20 seeds -- the last look, so not early."""
    out = seq.run_sequential(value_params(ci_level=0.95), draw_from(SERIES), [10, 20])
    a1, a2 = spent(0.5, 0.05, OBF), second_level(0.5, 0.05, OBF)
    total = 1.0 - 0.95  # the criterion's own alpha, 0.050000000000000044 in floats
    ci1, ci2 = criterion_ci(SERIES[:10], 1 - a1), criterion_ci(SERIES, 1 - a2)
    schedule = [
        {"n": 10, "information_fraction": 0.5, "alpha_spent": pytest.approx(a1, rel=1e-9),
         "nominal_alpha": pytest.approx(a1, rel=1e-9), "ci_level": pytest.approx(1 - a1)},
        {"n": 20, "information_fraction": 1.0, "alpha_spent": total,
         "nominal_alpha": pytest.approx(a2, rel=1e-9), "ci_level": pytest.approx(1 - a2)},
    ]
    assert out.result.details["sequential"] == {
        "design": "group-sequential, Lan-DeMets obrien-fleming-type alpha spending, two-sided "
                  "alpha 0.05 (both verdict sides), information fractions [0.5, 1.0]",
        "looks": [10, 20],
        "schedule": schedule,
        "rounds": [
            {"n": 10, "ci_level": pytest.approx(1 - a1), "estimate": pytest.approx(1.005),
             "ci": pytest.approx(list(ci1), rel=1e-9), "verdict": "INCONCLUSIVE"},
            {"n": 20, "ci_level": pytest.approx(1 - a2), "estimate": pytest.approx(1.0025),
             "ci": pytest.approx(list(ci2), rel=1e-9), "verdict": "SUPPORTED"},
        ],
        "stopped_at": 20,
        "stopped_early": False,
    }
    assert (out.criterion, out.kind, out.alpha, out.looks) == ("value", OBF, total, [10, 20])
    assert out.schedule == schedule
    assert out.nominal_levels == pytest.approx([a1, a2], rel=1e-9)
    assert [(r.n, r.information_fraction, r.verdict) for r in out.rounds] == [
        (10, 0.5, Verdict.INCONCLUSIVE), (20, 1.0, Verdict.SUPPORTED)]
    assert [r.estimate for r in out.rounds] == pytest.approx([np.mean(SERIES[:10]),
                                                              np.mean(SERIES)])
    assert out.verdict == Verdict.SUPPORTED and out.n_used == 20 and not out.stopped_early
    assert out.result.ci == pytest.approx(ci2, rel=1e-9)


def test_run_sequential_record_when_the_first_look_refutes_at_an_explicit_alpha() -> None:
    """Pocock looks at 5 and 15 seeds at an explicit two-sided alpha 0.1 (not the criterion's own
    0.05): a mean far outside [0.8, 1.2] is refuted at 5 seeds and the run stops there, early.
    The design sentence names pocock, alpha 0.1 and the fractions to 4 digits."""
    series = 3.0 + 0.1 * np.sin(np.arange(15))
    out = seq.run_sequential(value_params(), draw_from(series), [5, 15], alpha=0.1,
                             kind=POCOCK)
    a1 = spent(1 / 3, 0.1, POCOCK)
    info = out.result.details["sequential"]
    assert info["design"] == ("group-sequential, Lan-DeMets pocock-type alpha spending, two-sided "
                              "alpha 0.1 (both verdict sides), information fractions [0.3333, 1.0]")
    assert (info["looks"], info["stopped_at"], info["stopped_early"]) == ([5, 15], 5, True)
    assert info["rounds"] == [{"n": 5, "ci_level": pytest.approx(1 - a1, rel=1e-12),
                               "estimate": pytest.approx(float(np.mean(series[:5]))),
                               "ci": pytest.approx(list(criterion_ci(series[:5], 1 - a1)),
                                                   rel=1e-9),
                               "verdict": "REFUTED"}]
    assert [k["alpha_spent"] for k in info["schedule"]] == pytest.approx([a1, 0.1], rel=1e-12)
    assert (out.criterion, out.kind, out.alpha) == ("value", POCOCK, 0.1)
    assert out.nominal_levels[0] == pytest.approx(a1, rel=1e-9)
    assert out.rounds[0].information_fraction == pytest.approx(1 / 3)
    assert out.verdict == Verdict.REFUTED and out.n_used == 5 and out.stopped_early


def test_run_sequential_correlation_looks_use_its_fisher_z_information() -> None:
    """A correlation's looks at 8 and 20 pairs carry information n - 3: fractions 5/17 and 1 in
    the schedule and the design sentence, and the first level is the amount spent at 5/17."""
    x = 100.0 + 10.0 * np.arange(20)
    y = x + 7.0 * np.sin(np.arange(20))
    arms = {"a": ArmSample("a", x, np.ones(20, bool), tuple(range(20)), extra={Y: y})}
    params = CRITERIA["correlation"](name="correlation", arm="a", x=X, y=Y,
                                                  direction="positive", min_effect=0.3)
    out = seq.run_sequential(params, lambda n: first_seeds(arms, n), [8, 20])
    info = out.result.details["sequential"]
    assert info["design"].endswith("information fractions [0.2941, 1.0]")
    assert [k["information_fraction"] for k in info["schedule"]] == pytest.approx([5 / 17, 1.0])
    assert out.nominal_levels[0] == pytest.approx(spent(5 / 17, out.alpha, OBF), rel=1e-9)


def test_run_sequential_a_look_too_early_to_spend_has_nominal_level_zero() -> None:
    """At 1 of 400 seeds O'Brien-Fleming spends nothing (2 - 2 Phi(39.2) underflows to 0): that
    look's nominal level is 0 (a 100% CI, it cannot decide), and the last look gets all of alpha."""
    series = 1.0 + np.linspace(-0.1, 0.1, 400)
    out = seq.run_sequential(value_params(), draw_from(series), [1, 400])
    assert out.nominal_levels[0] == 0.0
    assert out.nominal_levels[1] == pytest.approx(0.05, rel=1e-12)
    assert out.rounds[0].ci_level == 1.0 and out.rounds[0].verdict == Verdict.INCONCLUSIVE
    assert out.verdict == Verdict.SUPPORTED and out.n_used == 400
