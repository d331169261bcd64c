"""Group-sequential seeding: looks, spending functions, nominal levels, stopping, error rates."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from grokverify.kinds import CRITERIA
from grokverify.stats import sequential as seq
from grokverify.stats.base import ArmSample, Verdict, judge
from grokverify.stats.simulate import first_seeds, make_arm


def test_looks() -> None:
    assert seq.looks(8, 20, 4) == [8, 12, 16, 20]
    assert seq.looks(8, 18, 4) == [8, 12, 16, 18]  # the last look is always max
    assert seq.looks(5, 5, 1) == [5]
    for bad in ((0, 10, 2), (10, 5, 1), (4, 8, 0)):
        with pytest.raises(ValueError):
            seq.looks(*bad)


def test_information_fractions() -> None:
    assert seq.information_fractions([8, 12, 16, 20]) == [0.4, 0.6, 0.8, 1.0]
    with pytest.raises(ValueError):
        seq.information_fractions([8, 8, 20])
    with pytest.raises(ValueError, match="positive and increasing"):
        seq.information_fractions([2, 3, 8], lambda n: max(n - 3.0, 0.0))


def test_correlation_looks_use_its_fisher_z_information() -> None:
    """A Fisher-z correlation's se is 1/sqrt(n - 3), so its looks' fractions are
    (n_k - 3)/(n_max - 3), and the nominal levels those of the fractions, not of n_k / n_max."""
    info = CRITERIA["correlation"](
        name="correlation", arm="a", x="val_threshold_step", y="train_threshold_step",
        direction="positive", min_effect=0.3).information
    rounds = seq.Rounds.with_spending([8, 12, 16, 20], 0.05, "obrien_fleming", info)
    assert [k.information_fraction for k in rounds.looks] == pytest.approx(
        [5 / 17, 9 / 17, 13 / 17, 1.0])
    assert [k.nominal_alpha for k in rounds.looks] == pytest.approx(
        seq.nominal_levels([5 / 17, 9 / 17, 13 / 17, 1.0], 0.05, "obrien_fleming"))
    # looks below 4 pairs (no CI) still get increasing fractions
    assert seq.information_fractions([2, 3, 4, 8], info) == pytest.approx(
        [0.05, 0.075, 0.2, 1.0])
    assert _value_params().information(12) == 12.0


@pytest.mark.parametrize("kind", ["obrien_fleming", "pocock"])
def test_spending_endpoints_and_monotone(kind: str) -> None:
    t = np.linspace(0, 1, 41)
    a = seq.spending(t, 0.05, kind)
    assert a[0] == pytest.approx(0.0, abs=1e-15)
    assert a[-1] == pytest.approx(0.05)
    assert np.all(np.diff(a) > 0)


def test_spending_formulas() -> None:
    z = sps.norm.isf(0.025)
    assert seq.spending(0.5, 0.05, "obrien_fleming") == pytest.approx(
        2 - 2 * sps.norm.cdf(z / math.sqrt(0.5)))
    assert seq.spending(0.5, 0.05, "pocock") == pytest.approx(0.05 * math.log(1 + (math.e - 1)
                                                                              / 2))
    with pytest.raises(ValueError):
        seq.spending(0.5, 0.05, "haybittle")  # type: ignore[arg-type]


def test_nominal_levels_two_looks_obrien_fleming() -> None:
    """Published (O'Brien & Fleming 1979; Jennison & Turnbull 2000, Table 2.3) nominal levels
    for two equally spaced looks at two-sided 0.05: about 0.0052 and 0.048. The Lan-DeMets
    O'Brien-Fleming-type spending approximates them: its first level is exactly the spent
    2 - 2 Phi(z_0.025 / sqrt(0.5)) = 0.00557."""
    first, second = seq.nominal_levels([0.5, 1.0], 0.05, "obrien_fleming")
    assert first == pytest.approx(seq.spending(0.5, 0.05, "obrien_fleming"), rel=1e-9)
    assert first == pytest.approx(0.0052, abs=0.0005)
    assert second == pytest.approx(0.048, abs=0.001)


def test_nominal_levels_two_looks_pocock() -> None:
    """Pocock's (1977) constant nominal level for two looks at 0.05 is 0.0294; the Lan-DeMets
    Pocock-type spending gives 0.0310 then 0.0277 -- within 0.002 of it."""
    first, second = seq.nominal_levels([0.5, 1.0], 0.05, "pocock")
    assert first == pytest.approx(0.05 * math.log(1 + (math.e - 1) / 2), rel=1e-9)
    assert first == pytest.approx(0.0294, abs=0.002)
    assert second == pytest.approx(0.0294, abs=0.002)
    assert first > second  # spending at t=0.5 is more than half of alpha


@pytest.mark.parametrize(("levels", "fractions"), [
    ([0.0294, 0.0294], [0.5, 1.0]),                          # Pocock, K = 2
    ([0.0221, 0.0221, 0.0221], [1 / 3, 2 / 3, 1.0]),         # Pocock, K = 3
    ([2 * sps.norm.sf(2.797), 2 * sps.norm.sf(1.977)], [0.5, 1.0]),  # O'Brien-Fleming, K = 2
    ([2 * sps.norm.sf(c) for c in (3.471, 2.454, 2.004)], [1 / 3, 2 / 3, 1.0]),  # OBF, K = 3
])
def test_integration_reproduces_published_boundaries(levels: list[float],
                                                     fractions: list[float]) -> None:
    """The recursive integration gives total crossing 0.05 for the classical published
    boundaries (Jennison & Turnbull 2000, Tables 2.1 and 2.3)."""
    assert seq.crossing_probabilities(fractions, levels)[-1] == pytest.approx(0.05, abs=4e-4)


@pytest.mark.parametrize("kind", ["obrien_fleming", "pocock"])
def test_nominal_levels_spend_exactly(kind: str) -> None:
    t = [0.4, 0.6, 0.8, 1.0]
    levels = seq.nominal_levels(t, 0.05, kind)  # type: ignore[arg-type]
    crossing = seq.crossing_probabilities(t, levels)
    assert crossing == pytest.approx([seq.spending(x, 0.05, kind) for x in t], abs=1e-9)
    assert all(0 < a < 0.05 for a in levels)


def test_nominal_levels_match_multivariate_normal() -> None:
    """Independent check with scipy's multivariate normal CDF (Genz), correlation
    sqrt(t_i / t_j): P(no crossing at any look) = 1 - alpha."""
    t = np.array([0.3, 0.55, 0.8, 1.0])
    levels = seq.nominal_levels(list(t), 0.05, "obrien_fleming")
    c = sps.norm.isf(np.array(levels) / 2)
    cov = np.sqrt(np.minimum.outer(t, t) / np.maximum.outer(t, t))
    mvn = sps.multivariate_normal(np.zeros(4), cov)
    inside = mvn.cdf(c, lower_limit=-c, rng=np.random.default_rng(0))
    assert 1 - inside == pytest.approx(0.05, abs=2e-4)


def test_single_look_is_the_fixed_design() -> None:
    assert seq.nominal_levels([1.0], 0.05, "obrien_fleming") == pytest.approx([0.05])
    assert seq.nominal_levels([1.0], 0.1, "pocock") == pytest.approx([0.1])


def test_nominal_levels_are_cached() -> None:
    seq.nominal_levels([0.25, 0.5, 0.75, 1.0], 0.05, "pocock")
    before = seq._nominal_levels_cached.cache_info().hits
    seq.nominal_levels([0.25, 0.5, 0.75, 1.0], 0.05, "pocock")
    assert seq._nominal_levels_cached.cache_info().hits == before + 1


def test_nominal_levels_reject_bad_fractions() -> None:
    for bad in ([], [0.0, 1.0], [0.5, 0.4, 1.0], [0.5, 1.2]):
        with pytest.raises(ValueError):
            seq.nominal_levels(bad)


# ---------------------------------------------------------------- run_sequential


def _value_params(**kw: object):  # type: ignore[no-untyped-def]
    base = {"name": "value", "arm": "arm", "target": 1.0, "tol": 0.2}
    return CRITERIA["value"](**{**base, **kw})


def _values(n: int, centre: float, spread: float) -> dict[str, ArmSample]:
    x = centre + spread * np.linspace(-1, 1, n)
    return {"arm": make_arm("arm", x)}


def test_run_sequential_stops_at_first_decided_look() -> None:
    calls: list[int] = []

    def draw(n: int) -> dict[str, ArmSample]:
        calls.append(n)
        # wide at 8 seeds (INCONCLUSIVE), tight around the target from 12 on (SUPPORTED)
        return _values(n, 1.0, 1.0 if n < 12 else 0.02)

    out = seq.run_sequential(_value_params(), draw, [8, 12, 16, 20])
    assert calls == [8, 12]
    assert [r.n for r in out.rounds] == [8, 12]
    assert [r.verdict for r in out.rounds] == [Verdict.INCONCLUSIVE, Verdict.SUPPORTED]
    assert out.verdict == Verdict.SUPPORTED and out.n_used == 12 and out.stopped_early
    levels = seq.nominal_levels([0.4, 0.6, 0.8, 1.0], 0.05, "obrien_fleming")
    assert out.nominal_levels == pytest.approx(levels)
    assert [r.ci_level for r in out.rounds] == pytest.approx([1 - a for a in levels[:2]])
    assert out.result.ci_level == pytest.approx(1 - levels[1])
    assert out.rounds[1].ci == out.result.ci
    info = out.result.details["sequential"]
    assert info["stopped_at"] == 12 and info["stopped_early"] is True
    assert [r["n"] for r in info["rounds"]] == [8, 12]
    assert len(info["schedule"]) == 4


def test_run_sequential_refuted_also_stops() -> None:
    out = seq.run_sequential(_value_params(), lambda n: _values(n, 3.0, 0.05),
                             [8, 12, 16, 20], kind="pocock")
    assert out.verdict == Verdict.REFUTED and [r.n for r in out.rounds] == [8]


def test_run_sequential_undecided_runs_every_look() -> None:
    out = seq.run_sequential(_value_params(), lambda n: _values(n, 1.2, 1.0),
                             [8, 12, 16, 20])
    assert [r.n for r in out.rounds] == [8, 12, 16, 20]
    assert out.verdict == Verdict.INCONCLUSIVE and not out.stopped_early
    assert out.result.ci_level == pytest.approx(1 - out.nominal_levels[-1])


def test_run_sequential_default_alpha_is_the_criterions_own() -> None:
    out = seq.run_sequential(_value_params(ci_level=0.9),
                             lambda n: _values(n, 1.2, 1.0), [10, 20])
    assert out.alpha == pytest.approx(0.1)
    assert out.nominal_levels == pytest.approx(seq.nominal_levels([0.5, 1.0], 0.1))


def test_at_level_maps_equivalence_alpha() -> None:
    eq = CRITERIA["equivalence"](name="equivalence", baseline="a", treated="b",
                                              margin=0.5)
    assert eq.ci_level == pytest.approx(0.9)
    moved = seq.at_level(eq, 0.99)
    assert moved.alpha == pytest.approx(0.005) and moved.ci_level == pytest.approx(0.99)
    surv = CRITERIA["survival_compare"](
        name="survival_compare", baseline="a", treated="b", direction="less", min_effect=0.2)
    assert seq.at_level(surv, 0.99).ci_level == 0.99
    assert surv.ci_level == 0.95  # a copy, the original is unchanged


def test_run_sequential_equivalence_uses_twice_alpha() -> None:
    eq = CRITERIA["equivalence"](name="equivalence", arm="arm", reference=1.0,
                                              margin=0.2)
    out = seq.run_sequential(eq, lambda n: _values(n, 1.0, 0.01), [5, 10])
    assert out.alpha == pytest.approx(0.1)
    assert out.verdict == Verdict.SUPPORTED and out.n_used == 5
    assert out.rounds[0].ci_level == pytest.approx(1 - out.nominal_levels[0])


def test_run_sequential_wiring_errors() -> None:
    with pytest.raises(ValueError):
        seq.run_sequential(_value_params(), lambda n: {}, [8, 4])


def test_rounds_step_through_the_looks_and_stop_at_the_first_decision() -> None:
    rounds = seq.Rounds.with_spending([4, 8, 12], 0.05, "pocock")
    levels = seq.nominal_levels([1 / 3, 2 / 3, 1.0], 0.05, "pocock")
    assert [k.ci_level for k in rounds.looks] == pytest.approx([1 - a for a in levels])
    assert rounds.next_look() == rounds.looks[0]
    assert rounds.next_look() == rounds.looks[0]  # the same look until a verdict is recorded
    rounds.record(Verdict.INCONCLUSIVE)
    assert rounds.next_look().n == 8 and not rounds.done  # type: ignore[union-attr]
    rounds.record(Verdict.REFUTED)
    assert rounds.decided and rounds.done and rounds.next_look() is None
    with pytest.raises(RuntimeError):
        rounds.record(Verdict.SUPPORTED)


def test_fixed_rounds_judge_once_at_the_criterion_s_own_level() -> None:
    rounds = seq.Rounds.fixed(6)
    look = rounds.next_look()
    assert look is not None and (look.n, look.ci_level) == (6, None)
    params = _value_params()
    assert rounds.params_at(params, look) is params
    rounds.record(Verdict.INCONCLUSIVE)
    assert rounds.done and not rounds.decided


def test_sequential_false_supported_near_nominal_under_null() -> None:
    """The value criterion (t CI of a mean) with the true mean on the region's edge (1.2 for
    [0.8, 1.2]), four looks at 8/12/16/20 seeds: a SUPPORTED verdict is an error, nominally at
    most alpha/2 = 0.025. With O'Brien-Fleming spending the rate stays there; judging each look
    at the fixed 95% (no spending) inflates it (to about 0.05). 1000 simulated claims
    (SE ~0.005)."""
    rng = np.random.default_rng(12345)
    params = _value_params()
    n_sim, look_sizes = 1000, [8, 12, 16, 20]
    run = judge
    seq_supported = naive_supported = 0
    for _ in range(n_sim):
        arms = {"arm": make_arm("arm", 1.2 + 0.3 * rng.standard_normal(20))}
        out = seq.run_sequential(params, lambda n, a=arms: first_seeds(a, n),
                                 look_sizes)
        seq_supported += out.verdict == Verdict.SUPPORTED
        for n in look_sizes:
            v = run(params, first_seeds(arms, n)).verdict
            if v != Verdict.INCONCLUSIVE:
                naive_supported += v == Verdict.SUPPORTED
                break
    seq_rate, naive_rate = seq_supported / n_sim, naive_supported / n_sim
    assert seq_rate <= 0.04  # 0.025 + 3 SE
    assert naive_rate > seq_rate
    assert naive_rate > 0.035  # repeated looks at 95% inflate the error (about 0.05)


@pytest.mark.parametrize("module", ["grokverify.stats.sequential", "grokverify.stats.power",
                                    "grokverify.stats.simulate"])
def test_module_imports_on_its_own(module: str) -> None:
    import subprocess
    import sys

    subprocess.run([sys.executable, "-c", f"import {module}"], check=True)
