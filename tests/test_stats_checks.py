"""Validity checks measured from records, and the NOT TESTED verdict a failed one gives."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
import torch
from conftest import ADD7, make_exp, seed_result

from grokverify.claim.checks import (
    EventShareSpec,
    InitSigmaRatioSpec,
    ProbeResolutionSpec,
    RareValueCoverageSpec,
    ReachableSplitSpec,
    ValueWithinSpec,
)
from grokverify.claim.tasks import TaskSpec
from grokverify.stats.base import CriterionResult
from grokverify.stats.checks import (
    event_share,
    init_sigma_ratio,
    not_tested,
    probe_resolution,
    rare_value_coverage,
    reachable_split,
    run_checks,
    value_within,
)
from grokverify.stats.verdict import Verdict


def _record(seed: int = 0, curves: Any = None, **summary: Any) -> dict[str, Any]:
    result = seed_result(curves, **summary)
    result["seed"] = result["summary"]["seed"] = seed
    return {"result": result}


class _Exp:
    def __init__(self, task: Any = None) -> None:
        self.task = task


def test_event_share_counts_the_seeds_that_reach_the_event() -> None:
    records = [_record(val_step=100), _record(val_step=None), _record(val_step=300),
               _record(val_step=None, train_step=50)]
    spec = EventShareSpec(kind="event_share", event="generalise", at_least=0.6)
    assert event_share(spec, records, _Exp()) == 0.5
    assert not spec.passes(0.5) and spec.passes(0.6)
    fit = EventShareSpec(kind="event_share", event="fit", at_most=0.3)
    assert event_share(fit, records, _Exp()) == 0.25 and fit.passes(0.25)


def test_value_within_reads_the_median_first_or_last_value() -> None:
    records = [_record(curves={"c": ([0, 10, 20], [None, 2.0, 5.0])}),
               _record(curves={"c": ([0, 10, 20], [4.0, 1.0, 3.0])}),
               _record(curves={"c": ([0, 10], [6.0, 9.0])})]
    first = ValueWithinSpec(kind="value_within", curve="c", at="first", at_most=4.5)
    last = ValueWithinSpec(kind="value_within", curve="c", at="last", at_least=6.0)
    assert value_within(first, records, _Exp()) == 4.0  # median of 2, 4, 6
    assert value_within(last, records, _Exp()) == 5.0  # median of 5, 3, 9
    assert first.passes(4.0) and not last.passes(5.0)
    assert math.isnan(value_within(first, [_record(curves={"c": ([0], [None])})], _Exp()))


def test_probe_resolution_is_the_interval_over_the_median_event_step() -> None:
    curve = {"p": ([0, 50, 100, 150], [1.0, 1.0, 1.0, 1.0])}
    records = [_record(curves=curve, val_step=s) for s in (100, 200, 400)]
    spec = ProbeResolutionSpec(kind="probe_resolution", curve="p", at_most=0.2)
    assert probe_resolution(spec, records, _Exp()) == 0.25  # 50 / median 200
    assert not spec.passes(0.25)
    never = [_record(curves=curve, val_step=None)]
    assert math.isnan(probe_resolution(spec, never, _Exp())) and not spec.passes(math.nan)


def test_rare_value_coverage_tells_a_skewed_split_from_a_random_one() -> None:
    spec = RareValueCoverageSpec(kind="rare_value_coverage", at_most=0.15)
    records = [_record(seed=s) for s in range(3)]
    skewed = TaskSpec(op="add", p=31, train_frac=0.3, split="skewed", skew=3.0)
    mild = TaskSpec(op="add", p=31, train_frac=0.6, split="skewed", skew=3.0)
    random = TaskSpec(op="add", p=31, train_frac=0.3)
    starved = rare_value_coverage(spec, records, _Exp(skewed))
    assert starved < 0.15 and spec.passes(starved)
    # the same skew at 60% training keeps about a quarter of the rare values' pairs
    assert rare_value_coverage(spec, records, _Exp(mild)) > 0.15
    assert rare_value_coverage(spec, records, _Exp(random)) > 0.15


def test_reachable_split_counts_the_splits_that_can_reach_the_validation_threshold() -> None:
    """Paper 2's toy at 45 of 55 pairs: 9 of seeds 0-23 (4, 7, 8, 9, 11, 12, 16, 20, 23) hold
    out every pair of some sum, capping validation at 0.6-0.8 < 0.9
    (claims/p2_appg_small_decoder_init_comprehends.yaml's notes); p = 31 modular: none."""
    class Exp:
        def __init__(self, task: TaskSpec, tau: float) -> None:
            self.task = task
            self.training = type("T", (), {"val_threshold": tau})()

    toy = TaskSpec(op="add", p=10, modular=False, unordered=True, train_frac=0.82,
                   test_frac=None)
    spec = ReachableSplitSpec(kind="reachable_split", at_least=0.9)
    records = [_record(seed=s) for s in range(24)]
    assert reachable_split(spec, records, Exp(toy, 0.9)) == pytest.approx(15 / 24)
    assert not spec.passes(15 / 24)
    bad = [_record(seed=s) for s in (4, 7, 8, 9, 11, 12, 16, 20, 23)]
    assert reachable_split(spec, bad, Exp(toy, 0.9)) == 0.0
    assert reachable_split(spec, bad, Exp(toy, 0.6)) == 1.0  # every ceiling is >= 0.6
    modular = TaskSpec(op="add", p=31, train_frac=0.6, test_frac=0.2)
    assert reachable_split(spec, records[:4], Exp(modular, 0.95)) == 1.0


def test_init_sigma_ratio_measures_each_seeds_model_at_step_0() -> None:
    """Known answer: σmax(E)/σmax(W) of the seeds' models as built; a σmax-matched E gives 1,
    a factor scales the ratio by it."""
    from grokverify.engine.batched import BatchedModel
    from grokverify.engine.data import SeedData
    from grokverify.engine.fast import fast_path_for
    from grokverify.engine.probes import sigma_max_of

    def exp(*interventions: dict[str, Any]) -> Any:
        return make_exp(ADD7, {"kind": "embed_mlp", "d": 8, "hidden": 16},
                        {"name": "adamw", "lr": 1e-3}, {"steps": 10, "eval_interval": 5},
                        interventions=list(interventions))

    spec = InitSigmaRatioSpec(kind="init_sigma_ratio", at_least=0.99, at_most=1.01)
    records = [_record(seed=s) for s in (3, 5, 9)]
    plain = exp()
    model = BatchedModel(plain.model, SeedData(plain.task, [3, 5, 9], torch.device("cpu")).shape,
                         [3, 5, 9], torch.float32, fast_path_for(plain.model, True))
    want = float(np.median((sigma_max_of(model.role_param("E"))
                            / sigma_max_of(model.role_param("W"))).tolist()))
    assert init_sigma_ratio(spec, records, plain) == pytest.approx(want, rel=1e-6)
    assert want > 2 and not spec.passes(want)
    matched = init_sigma_ratio(spec, records, exp({"name": "rescale_embedding",
                                                   "sigma_max": "W"}))
    assert matched == pytest.approx(1.0, abs=1e-5) and spec.passes(matched)
    doubled = exp({"name": "rescale_embedding", "factor": 2.0})
    assert init_sigma_ratio(spec, records, doubled) == pytest.approx(2 * want, rel=1e-5)
    assert init_sigma_ratio(spec, records[:1], plain) == pytest.approx(
        float((sigma_max_of(model.role_param("E")) / sigma_max_of(model.role_param("W")))[0]),
        rel=1e-6)


def _criterion(verdict: Verdict = Verdict.REFUTED) -> CriterionResult:
    return CriterionResult(
        criterion="survival_compare", effect_label="x", estimate=1.2, ci=(1.1, 1.3),
        ci_level=0.95, p_value=0.01, test="t", threshold=0.8, claimed_region="r",
        verdict=verdict, reason="the CI lies above", arms=[], details={"n_boot": 9},
        p_support=0.99, p_refute=0.001)


def test_a_failed_check_makes_the_verdict_not_tested_and_keeps_the_criterions() -> None:
    checks = [EventShareSpec(kind="event_share", arm="b", at_least=0.5, why="the baseline "
                             "must generalise.\n"),
              EventShareSpec(kind="event_share", event="fit", at_least=1.0)]
    arms = {"b": (_Exp(), [_record(val_step=None), _record(val_step=10)] + [_record()] * 2),
            "t": (_Exp(), [_record(val_step=5, train_step=1)] * 4)}
    results = run_checks(checks, "", arms)
    assert [(r.arm, r.measured, r.passes) for r in results] == [
        ("b", 0.25, False), ("b", 0.0, False), ("t", 1.0, True)]
    out = not_tested(_criterion(), results)
    assert out.verdict == Verdict.NOT_TESTED and out.verdict.value == "NOT TESTED"
    for phrase in ("Not tested", "event_share on b: 0.25", "needed ≥ 0.5",
                   "the baseline must generalise", "would say REFUTED"):
        assert phrase in out.reason
    assert "generalise;" in out.reason and ". ." not in out.reason  # a why's own full stop
    assert out.details["verdict_if_tested"] == "REFUTED" and out.details["n_boot"] == 9
    assert out.estimate == 1.2 and out.ci == (1.1, 1.3)


def test_checks_that_pass_leave_the_result_alone_and_members_are_labelled() -> None:
    checks = [EventShareSpec(kind="event_share", at_least=0.5)]
    results = run_checks(checks, "add", {"b": (_Exp(), [_record(val_step=3)])})
    assert results[0].arm == "add/b" and results[0].passes
    result = _criterion(Verdict.SUPPORTED)
    assert not_tested(result, results) is result


@pytest.mark.parametrize("fields, problem", [
    ({}, "needs at_least, at_most or both"),
    ({"at_least": 0.9, "at_most": 0.1}, "exceeds at_most"),
])
def test_a_check_needs_bounds_in_order(fields: dict[str, Any], problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        EventShareSpec(kind="event_share", **fields)


def test_rare_value_coverage_refuses_an_unordered_task() -> None:
    spec = RareValueCoverageSpec(kind="rare_value_coverage", at_most=0.15)
    unordered = TaskSpec(op="add", p=10, modular=False, unordered=True, train_frac=0.7,
                         split="skewed")
    assert "rare by construction" in spec.cannot_measure(_Exp(unordered))
    assert spec.cannot_measure(_Exp(TaskSpec(op="add", p=31, train_frac=0.3))) is None


def test_arms_failing_a_check_alike_are_named_together() -> None:
    """Five arms failing one check with one value read as one clause, its why once; an arm
    with another value keeps its own."""
    spec = EventShareSpec(kind="event_share", at_least=0.5, why="The baseline must grok.")
    failing = [_record(val_step=None)] * 3 + [_record(val_step=5)]
    arms = {name: (_Exp(), failing) for name in ("a", "b", "c")}
    arms["d"] = (_Exp(), [_record(val_step=None)] * 4)
    out = not_tested(_criterion(), run_checks([spec], "", arms))
    assert "event_share on a, b, c: 0.25" in out.reason and "event_share on d: 0" in out.reason
    assert out.reason.count("The baseline must grok") == 2
