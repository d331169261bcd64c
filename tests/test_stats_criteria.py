"""What every criterion shares: its params class registered under its name (arms, metrics,
information, defaults, refusals), the arms a claim file may name, and an arm without usable
seeds (INCONCLUSIVE) or without data (a wiring error)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pydantic
import pytest
from conftest import lognormal_arm, run_criterion

from grokverify.claim.criteria import CorrelationParams, SurvivalCompareParams, ValueParams
from grokverify.claim.load import load_claim
from grokverify.claim.schema import AnyCriterion
from grokverify.claim.yamlio import SpecError
from grokverify.kinds import CRITERIA
from grokverify.stats.base import ArmSample, Verdict, judge
from grokverify.stats.correlation import run_correlation
from grokverify.stats.scalar import run_value
from grokverify.stats.simulate import make_arm

FIXTURES = Path(__file__).parent / "fixtures"


NAMES = ["cox_hazard_ratio", "scalar_compare", "equivalence", "proportion", "correlation", "value"]
X, Y = "val_threshold_step", "train_threshold_step"


def cox(**kw: Any) -> dict[str, Any]:
    return {"name": "cox_hazard_ratio", "baseline": "b", "treated": "t", "direction": "less",
            **kw}


def scalar(**kw: Any) -> dict[str, Any]:
    return {"name": "scalar_compare", "baseline": "b", "treated": "t", "direction": "less",
            "n_boot": 500, **kw}


def equiv(**kw: Any) -> dict[str, Any]:
    base = {"baseline": "b", "treated": "t"} if "arm" not in kw else {}
    return {"name": "equivalence", "margin": 1.0, **base, **kw}


def prop(**kw: Any) -> dict[str, Any]:
    return {"name": "proportion", "arm": "a", "direction": "greater", "threshold": 0.5, **kw}


def corr(**kw: Any) -> dict[str, Any]:
    return {"name": "correlation", "arm": "a", "x": X, "y": Y, "direction": "positive",
            "min_effect": 0.3, **kw}


def value(**kw: Any) -> dict[str, Any]:
    return {"name": "value", "arm": "a", "target": 3.0, "tol": 2.5, **kw}


# ---------------------------------------------------------------- registry, types


def test_registered_with_discriminated_params() -> None:
    assert set(NAMES) <= set(CRITERIA)
    adapter = pydantic.TypeAdapter(AnyCriterion)
    examples = [cox(), scalar(), equiv(), equiv(arm="a", margin=2), prop(), corr(), value()]
    for example in examples:
        parsed = adapter.validate_python(example)
        assert type(parsed) is CRITERIA[example["name"]]


def test_registry() -> None:
    crit = CRITERIA["survival_compare"]
    assert crit is SurvivalCompareParams
    assert SurvivalCompareParams.model_validate(
        {"name": "survival_compare", "baseline": "b", "treated": "t", "direction": "less",
         "min_effect": 0.2}).arms() == ["b", "t"]
    register = CRITERIA.register(CRITERIA.path("survival_compare"))
    assert register(crit) is crit  # re-registering the same class is harmless

    class Clash(SurvivalCompareParams):
        pass
    with pytest.raises(ValueError, match="already registered"):
        register(Clash)


def test_a_criterion_is_found_from_its_name_with_its_arms_metrics_and_information() -> None:
    """``correlation``: its params class and its run from one name, its arm, its x and y
    metrics, the kinds it accepts and its information n - 3 (1 / se^2 of Fisher's z)."""
    assert CRITERIA["correlation"] is CorrelationParams
    assert CRITERIA.implementation("correlation") is run_correlation
    params = CorrelationParams.model_validate(
        {"name": "correlation", "arm": "a", "x": "val_threshold_step",
         "y": "train_threshold_step", "direction": "positive", "min_effect": 0.3})
    assert params.arms() == ["a"]
    assert [m.name for m in params.metrics_needed()] == ["val_threshold_step",
                                                         "train_threshold_step"]
    assert params.kinds() == ("time", "value")
    assert params.information(10) == 7.0


def test_a_criterion_without_further_metrics_has_information_n_and_runs() -> None:
    """``value``: no further metrics, information n by default, and its run judges a claim
    (all five seeds within 1 ± 0.5: SUPPORTED)."""
    assert CRITERIA["value"] is ValueParams
    assert CRITERIA.implementation("value") is run_value
    params = ValueParams.model_validate({"name": "value", "arm": "a", "target": 1.0, "tol": 0.5,
                                         "statistic": "median"})
    assert params.metrics_needed() == [] and params.information(12) == 12.0
    assert params.arms() == ["a"] and params.kinds() == ("time", "value")
    res = judge(params, {"a": make_arm("a", [1.0, 1.1, 0.9, 1.05, 0.95, 1.02, 0.98], kind="value")})
    assert (res.criterion, res.verdict) == ("value", Verdict.SUPPORTED)


def test_metrics_needed() -> None:
    p = CRITERIA["correlation"].model_validate(corr())
    assert [m.label() for m in p.metrics_needed()] == [X, Y]
    others = [value(), scalar(), cox(), equiv(), prop()]
    assert all(CRITERIA[o["name"]].model_validate(o).metrics_needed() == [] for o in others)


@pytest.mark.parametrize(("params", "arms"), [
    (cox(), ["b", "t"]), (scalar(), ["b", "t"]), (equiv(), ["b", "t"]),
    (equiv(arm="a"), ["a"]), (prop(), ["a"]), (corr(), ["a"]), (value(), ["a"]),
])
def test_arms_of(params: dict[str, Any], arms: list[str]) -> None:
    crit = CRITERIA[params["name"]]
    assert crit.model_validate(params).arms() == arms


# ---------------------------------------------------------------- params validation


BAD_PARAMS = [
    cox(extra_key=1), cox(treated="b"), cox(min_effect=1.0), cox(min_effect=-0.1),
    cox(ci_level=1.0),
    scalar(extra_key=1), scalar(treated="b"), scalar(effect="difference"),  # needs min_effect
    scalar(statistic="mode"), scalar(n_boot=10), scalar(censored="drop"),
    equiv(extra_key=1), equiv(arm="a", baseline="b"), equiv(baseline=None),
    {"name": "equivalence", "margin": 1.0}, equiv(treated="b"), equiv(reference=1.0),
    equiv(margin=0), equiv(margin_kind="relative", margin=1.0),
    equiv(arm="a", margin_kind="relative", margin=0.2),  # reference 0 on a ratio scale
    equiv(alpha=0.5),
    prop(extra_key=1), prop(outcome="value_below"), prop(cut=3.0), prop(threshold=1.5),
    prop(threshold=1.0), prop(direction="less", threshold=0.0), prop(method="normal"),
    corr(extra_key=1), corr(y=X), corr(x="nope"), corr(min_effect=1.0), corr(direction="up"),
    {k: v for k, v in corr().items() if k != "min_effect"},
    value(extra_key=1), value(tol=-1), value(statistic="iqm"), value(target=math.inf),
]


@pytest.mark.parametrize("bad", BAD_PARAMS, ids=[str(i) for i in range(len(BAD_PARAMS))])
def test_params_rejected(bad: dict[str, Any]) -> None:
    with pytest.raises(pydantic.ValidationError):
        CRITERIA[bad["name"]].model_validate(bad)


def test_param_defaults() -> None:
    p = CRITERIA["scalar_compare"].model_validate(scalar())
    assert p.min_effect == 0.2 and p.threshold == pytest.approx(0.8)  # type: ignore[attr-defined]
    p = CRITERIA["cox_hazard_ratio"].model_validate(cox())
    assert p.threshold == pytest.approx(1.25)  # type: ignore[attr-defined]
    p = CRITERIA["cox_hazard_ratio"].model_validate(cox(direction="greater"))
    assert p.threshold == pytest.approx(1 / 1.2)  # type: ignore[attr-defined]
    p = CRITERIA["equivalence"].model_validate(equiv(arm="a"))
    assert p.reference == 0 and p.ci_level == pytest.approx(0.9)  # type: ignore[attr-defined]
    p = CRITERIA["equivalence"].model_validate(
        equiv(margin_kind="relative", margin=0.2))
    assert p.region == pytest.approx((0.8, 1.25))  # type: ignore[attr-defined]


CLAIM_CRITERIA = {
    "cox_hazard_ratio": "{name: cox_hazard_ratio, baseline: c1, treated: %s, direction: less}",
    "scalar_compare": "{name: scalar_compare, baseline: c1, treated: %s, direction: less}",
    "equivalence": "{name: equivalence, arm: %s, margin: 50}",
    "proportion": "{name: proportion, arm: %s, direction: greater, threshold: 0.5}",
    "correlation": "{name: correlation, arm: %s, x: val_threshold_step, "
                   "y: train_threshold_step, direction: positive, min_effect: 0.2}",
    "value": "{name: value, arm: %s, target: 100, tol: 20}",
}


@pytest.mark.parametrize("name", NAMES)
def test_claim_file_arm_references(name: str, tmp_path: Path) -> None:
    text = (FIXTURES / "tiny_claim.yaml").read_text()
    head, _, _ = text.partition("criterion:")
    good = tmp_path / "good.yaml"
    good.write_text(head + "criterion: " + CLAIM_CRITERIA[name] % "c10" + "\n")
    assert load_claim(good).claim.criterion.name == name
    bad = tmp_path / "bad.yaml"
    bad.write_text(head + "criterion: " + CLAIM_CRITERIA[name] % "c99" + "\n")
    with pytest.raises(SpecError, match="criterion refers to arm 'c99'"):
        load_claim(bad)


# ---------------------------------------------------------------- no usable seeds, missing arms


EMPTY = make_arm("b", [], excluded={"diverged": 4})


@pytest.mark.parametrize(("params", "arms"), [
    (cox(), [EMPTY, lognormal_arm("t", 100)]),
    (scalar(), [lognormal_arm("b", 100), make_arm("t", [], excluded={"diverged": 4})]),
    (equiv(), [EMPTY, lognormal_arm("t", 100)]),
    (equiv(arm="b"), [EMPTY]),
    (prop(arm="b"), [EMPTY]),
    (corr(arm="b"), [EMPTY]),
    (value(arm="b"), [EMPTY]),
])
def test_no_usable_seed_is_inconclusive(params: dict[str, Any], arms: list[ArmSample]) -> None:
    res = run_criterion(params, *arms)
    assert res.verdict == Verdict.INCONCLUSIVE
    assert "no usable seed" in res.reason or "no seed whose outcome is known" in res.reason \
        or "0 complete" in res.reason
    assert "diverged: 4" in res.reason
    assert res.to_dict()["ci"] == [None, None] and math.isnan(res.estimate)
    assert any(row.n == 0 and row.excluded == {"diverged": 4} for row in res.arms)


@pytest.mark.parametrize("params", [cox(), scalar(), equiv(), equiv(arm="t"), prop(arm="t"),
                                    corr(arm="t"), value(arm="t")])
def test_missing_arm_is_an_error(params: dict[str, Any]) -> None:
    crit = CRITERIA[params["name"]]
    with pytest.raises(KeyError):
        judge(crit.model_validate(params), {"x": lognormal_arm("x", 10)})
