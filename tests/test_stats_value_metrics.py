"""Value metrics (signed per-seed numbers, never censored) through the criteria that take them,
hand-checked on synthetic arms, and the load-time checks that keep them from the criteria that
do not (a Kaplan-Meier median of signed values would mean nothing)."""

from __future__ import annotations

import math
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import run_criterion as run
from scipy import stats as sps

from grokverify.claim.load import load_claim
from grokverify.claim.yamlio import SpecError
from grokverify.stats.base import Verdict
from grokverify.stats.simulate import make_arm

FIXTURES = Path(__file__).parent / "fixtures"
# a signed spread around 0, mean 0.0125, median 0
NOISE = np.array([-0.5, 0.1, -0.2, 0.3, -0.1, 0.0, 0.2, -0.3, 0.4, 0.2])
value_arm = partial(make_arm, kind="value")


def scalar(**kw: Any) -> dict[str, Any]:
    return {"name": "scalar_compare", "baseline": "b", "treated": "t", "n_boot": 500,
            "bootstrap_seed": 1, **kw}


# ---------------------------------------------------------------- scalar_compare


def test_scalar_compare_difference_on_signed_values() -> None:
    """treated = baseline - 5 seed by seed: the difference of medians is exactly -5, and its CI
    lies far below -1 (SUPPORTED for "less by at least 1"; REFUTED for "greater by 1")."""
    b, t = value_arm("b", NOISE), value_arm("t", NOISE - 5.0)
    less = run(scalar(direction="less", effect="difference", min_effect=1.0), b, t)
    assert less.estimate == pytest.approx(-5.0)
    assert less.ci[1] < -1.0 and less.verdict == Verdict.SUPPORTED
    greater = run(scalar(direction="greater", effect="difference", min_effect=1.0), b, t)
    assert greater.verdict == Verdict.REFUTED
    assert "withheld_by_lower_bound_rule" not in less.details  # no lower bound for values
    assert "never censored" in less.details["censoring"]
    assert [list(row.columns) for row in less.arms] == [["seeds", "median"]] * 2
    assert less.arms[1].columns["median"] == pytest.approx(float(np.median(NOISE)) - 5.0)


def test_scalar_compare_ratio_of_signed_values_is_inconclusive_with_the_reason() -> None:
    res = run(scalar(direction="less"), value_arm("b", NOISE + 1.0), value_arm("t", NOISE))
    assert res.verdict == Verdict.INCONCLUSIVE and math.isnan(res.estimate)
    assert "arm 't' has 5 value(s) <= 0" in res.reason
    assert "use effect: difference" in res.reason


def test_scalar_compare_ratio_of_positive_values_is_judged() -> None:
    """A value metric positive by construction (a norm, a σmax) keeps its ratio."""
    b, t = value_arm("b", NOISE + 10.0), value_arm("t", (NOISE + 10.0) / 2)
    res = run(scalar(direction="less", statistic="median"), b, t)
    assert res.estimate == pytest.approx(0.5)
    assert res.verdict == Verdict.SUPPORTED  # every resample's ratio is exactly 0.5 <= 0.8


# ---------------------------------------------------------------- the one-arm criteria, equivalence


def test_equivalence_one_arm_on_signed_values_matches_the_t_interval() -> None:
    res = run({"name": "equivalence", "arm": "a", "reference": 0.0, "margin": 0.5},
              value_arm("a", NOISE))
    n, m, sd = NOISE.size, NOISE.mean(), NOISE.std(ddof=1)
    half = sps.t.ppf(0.95, n - 1) * sd / math.sqrt(n)  # 90% CI: alpha 0.05 each side
    assert res.estimate == pytest.approx(m)
    assert res.ci == pytest.approx((m - half, m + half))
    assert res.ci[0] >= -0.5 and res.ci[1] <= 0.5 and res.verdict == Verdict.SUPPORTED
    assert list(res.arms[0].columns) == ["seeds", "mean", "sd"]  # no censoring column


def test_equivalence_two_arms_refutes_a_large_signed_difference() -> None:
    res = run({"name": "equivalence", "baseline": "b", "treated": "t", "margin": 0.5},
              value_arm("b", NOISE), value_arm("t", NOISE[::-1] - 3.0))
    assert res.estimate == pytest.approx(-3.0) and res.verdict == Verdict.REFUTED


@pytest.mark.parametrize(("target", "expected"), [(-2.0, Verdict.SUPPORTED),
                                                   (2.0, Verdict.REFUTED)])
def test_value_criterion_on_a_negative_quantity(target: float, expected: Verdict) -> None:
    res = run({"name": "value", "arm": "a", "target": target, "tol": 0.5,
               "statistic": "median"}, value_arm("a", NOISE - 2.0))
    # 10 seeds at 95%: the order-statistic CI is [x_(2), x_(9)] = [-2.3, -1.7]
    assert res.ci == pytest.approx((-2.3, -1.7))
    assert res.verdict == expected


def test_proportion_counts_a_value_metric_beyond_a_cut() -> None:
    res = run({"name": "proportion", "arm": "a", "outcome": "value_above", "cut": 0.0,
               "direction": "greater", "threshold": 0.2}, value_arm("a", NOISE))
    assert res.estimate == pytest.approx(6 / 10)  # 0.1, 0.3, 0.0, 0.2, 0.4, 0.2
    assert "undetermined (censored)" not in res.arms[0].columns


def test_correlation_of_two_value_metrics() -> None:
    x = np.arange(8, dtype=float) - 4.0
    arm = value_arm("a", x, extra={"final_value(curve=val_loss)": -x ** 3})
    params = {"name": "correlation", "arm": "a", "direction": "negative", "min_effect": 0.5,
              "x": {"name": "curve_at", "curve": "val_loss", "step": 0},
              "y": {"name": "final_value", "curve": "val_loss"}}
    res = run(params, arm)  # x is the claim's own metric here: read from the arm's values
    assert res.estimate == pytest.approx(-1.0) and res.verdict == Verdict.SUPPORTED
    assert list(res.arms[0].columns) == ["pairs", "r"]


def test_time_only_criteria_refuse_value_arms_at_run_time() -> None:
    b, t = value_arm("b", NOISE), value_arm("t", NOISE)
    for params in ({"name": "survival_compare", "baseline": "b", "treated": "t",
                    "direction": "less", "min_effect": 0.2},
                   {"name": "cox_hazard_ratio", "baseline": "b", "treated": "t",
                    "direction": "less"}):
        with pytest.raises(TypeError, match="takes time metrics"):
            run(params, b, t)


# ---------------------------------------------------------------- load time


def _claim(tmp_path: Path, metric: str, criterion: str) -> Path:
    text = (FIXTURES / "tiny_claim.yaml").read_text()
    text = text.replace("metric: {name: val_threshold_step}", f"metric: {metric}")
    text = text[:text.index("criterion:")] + f"criterion: {criterion}\n"
    path = tmp_path / "claim.yaml"
    path.write_text(text)
    return path


def _problem(path: Path) -> str:
    with pytest.raises(SpecError) as err:
        load_claim(path)
    (problem,) = err.value.problems
    return f"{problem.file}:{problem.line}: {problem.path}: {problem.message}"


CURVE_MEAN = "{name: curve_mean, curve: val_loss, start: 0, end: 100}"


def test_value_metric_with_scalar_compare_loads(tmp_path: Path) -> None:
    path = _claim(tmp_path, CURVE_MEAN, "{name: scalar_compare, baseline: c1, treated: c10, "
                  "direction: less, effect: difference, min_effect: 0.1}")
    claim = load_claim(path).claim
    assert claim.metric.kind == "value" and claim.metric.curve == "val_loss"


def test_survival_compare_refuses_a_value_metric(tmp_path: Path) -> None:
    path = _claim(tmp_path, CURVE_MEAN, "{name: survival_compare, baseline: c1, treated: c10, "
                  "direction: less, min_effect: 0.2}")
    problem = _problem(path)
    line = path.read_text().splitlines().index(f"metric: {CURVE_MEAN}") + 1
    assert problem.startswith(f"{path}:{line}: metric.name: criterion 'survival_compare' takes "
                              "a time metric")
    assert "'curve_mean' is a value metric" in problem


def test_proportion_observed_needs_a_time_metric_but_a_cut_takes_values(tmp_path: Path) -> None:
    observed = "{name: proportion, arm: c10, direction: greater, threshold: 0.5}"
    problem = _problem(_claim(tmp_path, CURVE_MEAN, observed))
    assert "metric.name: criterion 'proportion' takes a time metric" in problem
    assert "(value metrics with outcome value_below or value_above only)" in problem
    cut = ("{name: proportion, arm: c10, direction: greater, threshold: 0.5, "
           "outcome: value_below, cut: 1.0}")
    assert load_claim(_claim(tmp_path, CURVE_MEAN, cut)).claim.metric.name == "curve_mean"


def test_a_correlation_metric_reading_an_unrecorded_curve_is_refused(tmp_path: Path) -> None:
    corr = ("{name: correlation, arm: c10, x: val_threshold_step, direction: positive, "
            "min_effect: 0.1, y: {name: final_value, curve: sigma_max.W}}")
    problem = _problem(_claim(tmp_path, "{name: val_threshold_step}", corr))
    assert "criterion.y.curve: unknown curve 'sigma_max.W'" in problem
    assert "the experiment records: train_acc, train_loss, val_acc, val_loss" in problem


def test_plan_refuses_a_declared_effect_for_a_value_metric(tmp_path: Path) -> None:
    """A declared effect simulates times to an event; for a value metric only a pilot serves."""
    from grokverify.run.plan import plan_claim
    from grokverify.store import Store

    path = _claim(tmp_path, CURVE_MEAN, "{name: scalar_compare, baseline: c1, treated: c10, "
                  "direction: less, effect: difference, min_effect: 0.1}")
    with pytest.raises(ValueError, match="is a value metric; run a pilot"):
        plan_claim(load_claim(path), "quick", Store(tmp_path / "store"), "cpu", 0.5, 0.8,
                   [4, 8], 20)


def test_a_probe_curve_must_be_recorded_by_every_arm_the_criterion_reads(tmp_path: Path) -> None:
    """A probe declared in one arm records its curves there only: a metric on them is refused
    for a comparison with an arm that lacks it, and accepted for a claim about that arm alone."""
    text = (FIXTURES / "tiny_claim.yaml").read_text().replace(
        "c10: {optimizer: {emb_lr_mult: 10}}",
        "c10: {optimizer: {emb_lr_mult: 10}, probes: [{name: sigma_max, every: 10}]}")
    path = tmp_path / "probe.yaml"
    sigma = "{name: curve_mean, curve: sigma_max.E, start: 0, end: 100}"
    for criterion, refused in (
            ("{name: scalar_compare, baseline: c1, treated: c10, direction: less, "
             "effect: difference, min_effect: 0.1}", True),
            ("{name: value, arm: c10, target: 1.0, tol: 0.5}", False)):
        body = text.replace("metric: {name: val_threshold_step}", f"metric: {sigma}")
        path.write_text(body[:body.index("criterion:")] + f"criterion: {criterion}\n")
        if refused:
            problem = _problem(path)
            assert "metric.curve: curve 'sigma_max.E' is not recorded by arm 'c1' at scale " \
                   "'quick'" in problem
            assert "it records: train_acc, train_loss, val_acc, val_loss" in problem
        else:
            assert load_claim(path).claim.metric.curve == "sigma_max.E"
