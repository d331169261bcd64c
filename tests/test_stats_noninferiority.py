"""Non-inferiority (`margin`) in survival_compare, scalar_compare and cox_hazard_ratio: the
boundary moves across no effect (ratio <= 1 + m / >= 1 - m, difference <= +m / >= -m), on arms
whose every paired resample has one effect (CI and verdict known by hand); words, refusals."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pydantic
import pytest
from conftest import Has, run_criterion

from grokverify.claim.criteria import (
    CoxHazardRatioParams,
    ScalarCompareParams,
    SurvivalCompareParams,
)
from grokverify.claim.load import load_claim
from grokverify.claim.yamlio import SpecError
from grokverify.stats.base import ArmSample, CriterionResult, Verdict, verdict_from_p
from grokverify.stats.simulate import make_arm

BASE = np.array([410.0, 520, 600, 700, 760, 830, 900, 980, 1100, 1240, 1390, 1600])


def run(params: dict[str, Any], base: ArmSample, treat: ArmSample) -> CriterionResult:
    """`params` judged on baseline 'b' and treated 't'; their p's must restate the verdict."""
    res = run_criterion(params, base, treat)
    if res.p_support is not None and res.p_refute is not None:  # the p's restate the verdict
        alpha = (1 - res.ci_level) / 2
        assert verdict_from_p(res.p_support, res.p_refute, alpha) == res.verdict
    return res


def survival(**kw: Any) -> dict[str, Any]:
    return {"name": "survival_compare", "baseline": "b", "treated": "t", "n_boot": 500} | kw


def scalar(**kw: Any) -> dict[str, Any]:
    return {"name": "scalar_compare", "baseline": "b", "treated": "t",
            "statistic": "median"} | kw


def cox(**kw: Any) -> dict[str, Any]:
    return {"name": "cox_hazard_ratio", "baseline": "b", "treated": "t", "direction": "less"} | kw


@pytest.mark.parametrize(("kw", "threshold"), [
    ({"direction": "less", "margin": 0.25}, 1.25),
    ({"direction": "greater", "margin": 0.25}, 0.75),
    ({"direction": "less", "effect": "difference", "margin": 300}, 300.0),
    ({"direction": "greater", "effect": "difference", "margin": 300}, -300.0),
    ({"direction": "less", "min_effect": 0.2}, 0.8),  # superiority
    ({"direction": "less", "min_effect": 0.0, "margin": 0.25}, 1.25),  # min_effect 0 written
])
# ---------------------------------------------------------------- thresholds


def test_a_margin_moves_the_boundary_across_no_effect(kw: dict[str, Any],
                                                      threshold: float) -> None:
    for params in (survival(**kw), scalar(**kw)):
        cls = SurvivalCompareParams if params["name"] == "survival_compare" else \
            ScalarCompareParams
        p = cls.model_validate(params)
        assert p.threshold == pytest.approx(threshold)
        assert p.min_effect == kw.get("min_effect", 0.0 if "margin" in kw else None)


@pytest.mark.parametrize(("kw", "hr"), [
    ({"direction": "less", "margin": 0.25}, 1 / 1.25),    # time <= 1.25x: HR >= 0.8
    ({"direction": "greater", "margin": 0.25}, 1 / 0.75),  # time >= 0.75x: HR <= 4/3
    ({"direction": "less"}, 1 / 0.8),                      # default min_effect 0.2
    ({"direction": "greater", "min_effect": 0.5}, 1 / 1.5),
])
def test_cox_turns_the_margin_into_a_hazard_ratio(kw: dict[str, Any], hr: float) -> None:
    p = CoxHazardRatioParams.model_validate(
        {"name": "cox_hazard_ratio", "baseline": "b", "treated": "t"} | kw)
    assert p.threshold == pytest.approx(hr)


@pytest.mark.parametrize(("ratio", "direction", "verdict"), [
    (1.20, "less", Verdict.SUPPORTED),     # at most 25% slower: 1.2 <= 1.25
    (1.30, "less", Verdict.REFUTED),       # 1.3 > 1.25
    (0.70, "less", Verdict.SUPPORTED),     # faster is not worse
    (0.80, "greater", Verdict.SUPPORTED),  # at most 25% faster: 0.8 >= 0.75
    (0.70, "greater", Verdict.REFUTED),
])
# ---------------------------------------------------------------- known-answer verdicts


def test_survival_ratio_on_each_side_of_the_margin(ratio: float, direction: str,
                                                   verdict: Verdict) -> None:
    """treated_i = ratio * baseline_i: every paired resample's KM-median ratio is `ratio`
    (the KM median is scale-equivariant), so the CI is [ratio, ratio]."""
    res = run(survival(direction=direction, margin=0.25), make_arm("b", BASE),
              make_arm("t", ratio * BASE))
    assert res.ci == pytest.approx((ratio, ratio))
    assert res.verdict == verdict


def test_the_same_arms_refute_superiority_and_support_non_inferiority() -> None:
    """1.2x slower: not "at least 20% faster" (superiority, REFUTED) but "at most 25% slower"
    (non-inferiority, SUPPORTED): only the boundary differs."""
    b, t = make_arm("b", BASE), make_arm("t", 1.2 * BASE)
    assert run(survival(direction="less", min_effect=0.2), b, t).verdict == Verdict.REFUTED
    assert run(survival(direction="less", margin=0.25), b, t).verdict == Verdict.SUPPORTED


@pytest.mark.parametrize(("shift", "verdict"), [(240.0, Verdict.SUPPORTED),
                                                (360.0, Verdict.REFUTED)])
def test_survival_difference_on_each_side_of_the_margin(shift: float, verdict: Verdict) -> None:
    res = run(survival(direction="less", effect="difference", margin=300),
              make_arm("b", BASE), make_arm("t", BASE + shift))
    assert res.ci == pytest.approx((shift, shift))
    assert res.verdict == verdict


def test_survival_ci_across_the_margin_is_inconclusive() -> None:
    """Per-seed ratios 1 and 1.6 alternating: resampled median ratios spread across 1.25."""
    t = BASE * np.where(np.arange(BASE.size) % 2 == 0, 1.0, 1.6)
    res = run(survival(direction="less", margin=0.25), make_arm("b", BASE), make_arm("t", t))
    assert res.ci[0] < 1.25 < res.ci[1]
    assert res.verdict == Verdict.INCONCLUSIVE


@pytest.mark.parametrize(("ratio", "verdict"), [(1.2, Verdict.SUPPORTED),
                                                (1.3, Verdict.REFUTED)])
def test_scalar_paired_ratio_on_each_side_of_the_margin(ratio: float, verdict: Verdict) -> None:
    """Per-seed ratios all `ratio`: the order-statistic CI of their median is [ratio, ratio]."""
    res = run(scalar(direction="less", margin=0.25), make_arm("b", BASE),
              make_arm("t", ratio * BASE))
    assert res.ci == pytest.approx((ratio, ratio))
    assert res.verdict == verdict


@pytest.mark.parametrize(("shift", "verdict"), [(-0.4, Verdict.SUPPORTED),
                                                (-0.6, Verdict.REFUTED)])
def test_scalar_difference_greater_on_each_side_of_the_margin(shift: float,
                                                              verdict: Verdict) -> None:
    """Claim: treated is at most 0.5 lower (direction greater): difference >= -0.5."""
    base = np.linspace(1.0, 3.0, 10)
    res = run(scalar(direction="greater", effect="difference", margin=0.5),
              make_arm("b", base), make_arm("t", base + shift))
    assert res.ci == pytest.approx((shift, shift))
    assert res.verdict == verdict


def test_cox_non_inferiority_of_identical_arms() -> None:
    """Identical arms: by symmetry the Cox estimate is HR = 1 exactly; with 300 seeds per arm
    the Wald CI is about exp(+/-1.96 sqrt(2/300)) = [0.85, 1.17]: within "at most 25% slower"
    (HR >= 0.8) and wholly below "at least 20% faster" (HR >= 1.25)."""
    times = np.sort(np.random.default_rng(0).exponential(1000.0, 300)).round()
    b, t = make_arm("b", times), make_arm("t", times.copy())
    ni = run(cox(margin=0.25), b, t)
    assert ni.estimate == pytest.approx(1.0, abs=1e-9)
    assert 0.8 < ni.ci[0] < 1 < ni.ci[1] < 1.25
    assert ni.verdict == Verdict.SUPPORTED
    superiority = run(cox(), b, t)
    assert superiority.ci == pytest.approx(ni.ci)  # the margin moves only the boundary
    assert superiority.verdict == Verdict.REFUTED
    slower = run(cox(margin=0.25), b, make_arm("t", 2 * times))  # HR about 0.5
    assert slower.ci[1] < 0.8 and slower.verdict == Verdict.REFUTED


# ---------------------------------------------------------------- words


def test_the_words_of_a_non_inferiority_claim() -> None:
    b, t = make_arm("b", BASE), make_arm("t", 1.2 * BASE)
    res = run(survival(direction="less", margin=0.25), b, t)
    assert res.claimed_region == "ratio <= 1.25 (non-inferiority: t at most 25% slower than b)"
    assert "lies wholly at or below 1.25, the non-inferiority bound (margin 25%)" in res.reason
    refuted = run(survival(direction="less", margin=0.25), b, make_arm("t", 1.3 * BASE))
    assert "lies wholly above 1.25, excluding the claimed region bounded by 1.25" in \
        refuted.reason
    diff = run(survival(direction="greater", effect="difference", margin=300), b, t)
    assert diff.claimed_region == ("difference >= -300 steps (non-inferiority: t at most 300 "
                                   "steps faster than b)")
    sc = run(scalar(direction="less", margin=0.25), b, t)
    assert sc.claimed_region == "ratio <= 1.25 (non-inferiority: t at most 25% higher than b)"
    hr = run(cox(margin=0.25), b, t)
    assert hr.claimed_region == "HR >= 0.8 (non-inferiority: t at most 25% slower than b)"


def test_superiority_words_name_the_claimed_effect() -> None:
    b, t = make_arm("b", BASE), make_arm("t", 0.7 * BASE)
    res = run(survival(direction="less", min_effect=0.2), b, t)
    assert res.claimed_region == "ratio <= 0.8 (t at least 20% faster)"
    assert "the boundary of the claimed effect" in res.reason
    assert run(scalar(direction="less"), b, t).claimed_region == "ratio <= 0.8"


BUDGET = 1000.0
COX_BASE = make_arm("b", [400, 520, 610, 700, 780, 850, 930, BUDGET, BUDGET, BUDGET],
                    observed=[True] * 7 + [False] * 3)
COX_TREAT = make_arm("t", [150, 200, 260, 310, 380, 450, 540, 600, 720, BUDGET],
                     observed=[True] * 9 + [False])
MARGIN_TO_HR = "less: 1/(1+margin); greater: 1/(1-margin)"


def test_cox_non_inferiority_words_and_details() -> None:
    """Treated is much faster (HR about 3): "at most 25% slower" (HR >= 1/1.25 = 0.8) is
    SUPPORTED, the reason names the non-inferiority bound with the margin as a percentage, and
    the details say how the margin became an HR boundary."""
    res = run(cox(direction="less", margin=0.25), COX_BASE, COX_TREAT)
    assert res.claimed_region == "HR >= 0.8 (non-inferiority: t at most 25% slower than b)"
    assert res.verdict == Verdict.SUPPORTED
    assert res.reason.startswith("The 95% CI of the Cox hazard ratio (t / b), [")
    assert res.reason == Has("wholly at or above 0.8, the non-inferiority bound (margin 25%)",
                             "(point estimate 3.03).")
    assert res.details["margin_to_hr"] == MARGIN_TO_HR


def test_cox_non_inferiority_greater_words() -> None:
    """``greater`` (treated slower) with margin 0.25: HR <= 1/(1 - 0.25) = 1.33, and the
    tolerated worse direction is "faster"."""
    res = run(cox(direction="greater", margin=0.25), COX_BASE, COX_TREAT)
    assert res.claimed_region == "HR <= 1.33 (non-inferiority: t at most 25% faster than b)"
    assert res.details["margin_to_hr"] == MARGIN_TO_HR


def test_cox_superiority_has_no_margin_detail_and_zero_effect_words() -> None:
    """Without a margin there is no margin_to_hr detail; an explicit min_effect 0 claims HR >= 1,
    "at least 0% faster"."""
    res = run(cox(direction="less", min_effect=0.0), COX_BASE, COX_TREAT)
    assert res.claimed_region == "HR >= 1 (t at least 0% faster)"
    assert "margin_to_hr" not in res.details
    assert "the boundary of the claimed effect" in res.reason


S_BASE = make_arm("b", [100.0, 110, 120, 130, 140, 150, 160, 170, 180, 190])
S_TREAT = make_arm("t", [90.0, 99, 108, 117, 126, 135, 144, 153, 162, 171])  # 0.9 x baseline


@pytest.mark.parametrize(("direction", "region"), [
    ("less", "ratio <= 1.25 (non-inferiority: t at most 25% higher than b)"),
    ("greater", "ratio >= 0.75 (non-inferiority: t at most 25% lower than b)"),
])
def test_scalar_non_inferiority_region_words(direction: str, region: str) -> None:
    res = run(scalar(direction=direction, margin=0.25), S_BASE, S_TREAT)
    assert res.claimed_region == region


def test_scalar_non_inferiority_reason_names_the_margin_as_a_percentage() -> None:
    """Every per-seed ratio is 0.9: the paired median's exact CI is [0.9, 0.9], wholly at or
    below 1.25, the non-inferiority bound of a ratio margin of 25%."""
    res = run(scalar(direction="less", margin=0.25), S_BASE, S_TREAT)
    assert res.verdict == Verdict.SUPPORTED
    assert res.reason == Has("[0.9, 0.9]", "wholly at or below 1.25",
                             "the non-inferiority bound (margin 25%)", "(point estimate 0.9).")


# ---------------------------------------------------------------- refusals


@pytest.mark.parametrize(("model", "params", "words"), [
    (SurvivalCompareParams, survival(direction="less", min_effect=0.1, margin=0.25),
     "give min_effect (superiority"),
    (ScalarCompareParams, scalar(direction="less", min_effect=0.1, margin=0.25),
     "not both: min_effect is 0.1 and margin 0.25"),
    (CoxHazardRatioParams, {"name": "cox_hazard_ratio", "baseline": "b", "treated": "t",
                            "direction": "less", "min_effect": 0.2, "margin": 0.1}, "not both"),
    (SurvivalCompareParams, survival(direction="greater", margin=1.0),
     "non-inferiority margin must be < 1"),
    (CoxHazardRatioParams, {"name": "cox_hazard_ratio", "baseline": "b", "treated": "t",
                            "direction": "greater", "margin": 1.0},
     "non-inferiority margin must be < 1"),
    (SurvivalCompareParams, survival(direction="less"), "needs min_effect"),
    (ScalarCompareParams, scalar(direction="less", effect="difference"), "needs min_effect"),
    (SurvivalCompareParams, survival(direction="less", margin=-0.1), "greater than or equal"),
])
def test_bad_combinations_are_refused(model: type[pydantic.BaseModel], params: dict[str, Any],
                                      words: str) -> None:
    with pytest.raises(pydantic.ValidationError) as info:
        model.model_validate(params)
    assert words in str(info.value)


CLAIM = """\
id: ni_claim
title: A claim
statement: frozen is not much slower than trained.
source: {arxiv: "2505.15624", where: Fig. 6, role: inference, quote: a quote}
base:
  task: {op: add, p: 31, train_frac: 0.5}
  model: {kind: embed_mlp, d: 16, hidden: 32}
  optimizer: {name: adamw, lr: 0.001}
  training: {steps: 100, eval_interval: 10}
arms:
  trained: {}
  frozen: {interventions: [{name: freeze_embeddings, from_step: 0}]}
scales:
  quick: {description: small}
seeds: 3
metric: {name: val_threshold_step}
criterion:
  name: survival_compare
  baseline: trained
  treated: frozen
  direction: less
  margin: 0.25
"""


def test_a_claim_with_a_margin_loads(tmp_path: Path) -> None:
    path = tmp_path / "claim.yaml"
    path.write_text(CLAIM, encoding="utf-8")
    crit = load_claim(path, limits=None).claim.criterion
    assert isinstance(crit, SurvivalCompareParams) and crit.threshold == pytest.approx(1.25)


def test_a_claim_with_both_is_refused_naming_the_criterion(tmp_path: Path) -> None:
    path = tmp_path / "claim.yaml"
    path.write_text(CLAIM + "  min_effect: 0.2\n", encoding="utf-8")
    with pytest.raises(SpecError) as info:
        load_claim(path, limits=None)
    messages = [f"{p.path}: {p.message}" for p in info.value.problems]
    assert any(m.startswith("criterion") and "not both" in m for m in messages), messages
