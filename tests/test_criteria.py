"""Tests of the criteria beyond survival_compare, against known answers: hand-computed cases,
scipy/statsmodels called directly on the same inputs, verdict boundaries, params validation and
arms without usable seeds."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pydantic
import pytest
from scipy import stats as sps
from statsmodels.duration.hazard_regression import PHReg
from statsmodels.stats.proportion import proportion_confint
from statsmodels.stats.weightstats import CompareMeans, DescrStatsW, ttost_ind

from grokverify.claim.load import load_claim
from grokverify.claim.schema import AnyCriterion
from grokverify.claim.yamlio import SpecError
from grokverify.kinds import CRITERIA
from grokverify.stats.base import ArmSample, CriterionResult, Verdict, judge
from grokverify.stats.common import determined
from grokverify.stats.verdict import decide_interval

FIXTURES = Path(__file__).parent / "fixtures"
NEW = ["cox_hazard_ratio", "scalar_compare", "equivalence", "proportion", "correlation", "value"]
X, Y = "val_threshold_step", "train_threshold_step"


def arm(name: str, values: Any, observed: Any = None, extra: dict[str, Any] | None = None,
        excluded: dict[str, int] | None = None) -> ArmSample:
    v = np.asarray(values, dtype=float)
    o = np.ones(v.size, bool) if observed is None else np.asarray(observed, bool)
    return ArmSample(name, v, o, tuple(range(v.size)), excluded or {}, extra or {})


def lognormal(name: str, median: float, n: int = 20, seed: int = 0, sigma: float = 0.3,
              budget: float = math.inf) -> ArmSample:
    raw = np.ceil(np.exp(np.random.default_rng(seed).normal(math.log(median), sigma, n)))
    return arm(name, np.minimum(raw, budget), raw <= budget)


def run(params: dict[str, Any], *arms: ArmSample) -> CriterionResult:
    crit = CRITERIA[params["name"]]
    result = judge(crit.model_validate(params), {a.name: a for a in arms})
    json.dumps(result.to_dict(), allow_nan=False)  # NaN-safe, always
    assert result.reason.endswith(".")
    return result


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
    assert set(NEW) <= set(CRITERIA)
    adapter = pydantic.TypeAdapter(AnyCriterion)
    examples = [cox(), scalar(), equiv(), equiv(arm="a", margin=2), prop(), corr(), value()]
    for example in examples:
        parsed = adapter.validate_python(example)
        assert type(parsed) is CRITERIA[example["name"]]


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


def test_arm_sample_extra() -> None:
    a = arm("a", [1, 2], extra={"m": [1, 2], "m.observed": [1, 0]})
    assert a.extra["m"].dtype == float and a.extra["m.observed"].dtype == bool
    assert arm("a", [1]).extra == {}
    with pytest.raises(ValueError, match="extra metric 'm' has 3 values for 2 seeds"):
        arm("a", [1, 2], extra={"m": [1, 2, 3]})


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


@pytest.mark.parametrize("name", NEW)
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


EMPTY = arm("b", [], excluded={"diverged": 4})


@pytest.mark.parametrize(("params", "arms"), [
    (cox(), [EMPTY, lognormal("t", 100)]),
    (scalar(), [lognormal("b", 100), arm("t", [], excluded={"diverged": 4})]),
    (equiv(), [EMPTY, lognormal("t", 100)]),
    (equiv(arm="b"), [EMPTY]),
    (prop(arm="b"), [EMPTY]),
    (corr(arm="b"), [EMPTY]),
    (value(arm="b"), [EMPTY]),
])
def test_no_usable_seed_is_inconclusive(params: dict[str, Any], arms: list[ArmSample]) -> None:
    res = run(params, *arms)
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
        judge(crit.model_validate(params), {"x": lognormal("x", 10)})


# ---------------------------------------------------------------- cox_hazard_ratio


def test_cox_hand_computed_golden_ratio() -> None:
    # Baseline events at 1 and 4, treated at 2 and 3: the score equation reduces to
    # u^2 - u - 1 = 0 for u = exp(beta), so HR = (1 + sqrt 5) / 2.
    res = run(cox(), arm("b", [1, 4]), arm("t", [2, 3]))
    assert res.estimate == pytest.approx((1 + math.sqrt(5)) / 2, rel=1e-6)
    assert res.verdict == Verdict.INCONCLUSIVE  # 4 seeds: a wide CI


def test_cox_matches_statsmodels() -> None:
    b = lognormal("b", 1000, seed=1, budget=1500)
    t = lognormal("t", 700, seed=2, budget=1500)
    res = run(cox(ci_level=0.9), b, t)
    fit = PHReg(np.r_[b.values, t.values], np.r_[np.zeros(b.n), np.ones(t.n)][:, None],
                status=np.r_[b.observed, t.observed].astype(float), ties="efron").fit()
    assert res.estimate == pytest.approx(math.exp(fit.params[0]), rel=1e-9)
    assert res.ci == pytest.approx(tuple(np.exp(fit.conf_int(alpha=0.1)[0])), rel=1e-9)
    assert res.p_value == pytest.approx(fit.pvalues[0], rel=1e-9)
    assert res.ci_level == 0.9 and res.threshold == pytest.approx(1.25)
    assert res.arms[0].columns["censored"] == int((~b.observed).sum())


@pytest.mark.parametrize(("t_median", "direction", "expected"), [
    (300, "less", Verdict.SUPPORTED),     # treated much faster: HR >> 1.25
    (3000, "less", Verdict.REFUTED),      # treated much slower: HR << 1.25
    (1000, "less", Verdict.INCONCLUSIVE),  # same distribution: CI straddles 1.25
    (3000, "greater", Verdict.SUPPORTED),
    (300, "greater", Verdict.REFUTED),
])
def test_cox_verdicts(t_median: float, direction: str, expected: Verdict) -> None:
    res = run(cox(direction=direction), lognormal("b", 1000, n=25, seed=1, sigma=0.6),
              lognormal("t", t_median, n=25, seed=2, sigma=0.6))
    assert res.verdict == expected, res.reason


def test_cox_zero_events_is_inconclusive() -> None:
    b = lognormal("b", 100, seed=3)
    t = arm("t", [500] * 6, [False] * 6)
    res = run(cox(), b, t)
    assert res.verdict == Verdict.INCONCLUSIVE
    assert "arm 't' has no event in 6 seeds" in res.reason and "no finite estimate" in res.reason
    assert res.details["logrank_p"] < 0.05


# ---------------------------------------------------------------- scalar_compare


def test_iqm_and_statistics_hand_computed() -> None:
    b = arm("b", [1, 2, 3, 4, 5, 6, 7, 8])  # IQM: mean of 3..6 = 4.5
    t = arm("t", [2, 4, 6, 8, 10, 12, 14, 16])  # IQM 9
    assert run(scalar(statistic="iqm", direction="greater"), b, t).estimate == pytest.approx(2)
    res = run(scalar(statistic="median", effect="difference", min_effect=1), b, t)
    assert res.estimate == pytest.approx(9 - 4.5)
    assert res.arms[0].columns["median"] == 4.5


def test_scalar_bca_matches_scipy() -> None:
    b, t = lognormal("b", 1000, seed=4), lognormal("t", 600, seed=5)
    res = run(scalar(statistic="mean", n_boot=999, bootstrap_seed=7, paired=False), b, t)

    def ratio(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.mean(y, axis=axis) / np.mean(x, axis=axis)

    # Hesterberg's expanded level for n = 20 seeds per arm, computed here by hand
    n = 20
    level = 1 - 2 * sps.norm.cdf(-math.sqrt(n / (n - 1)) * sps.t.ppf(0.975, n - 1))
    assert 0.965 < level < 0.97  # z = 1.026 * 2.093 = 2.147
    ref = sps.bootstrap((b.values, t.values), ratio, n_resamples=999, method="BCa",
                        paired=False, vectorized=True, rng=np.random.default_rng(7),
                        confidence_level=level)
    assert res.ci == pytest.approx(tuple(ref.confidence_interval), rel=1e-12)
    assert res.details["bootstrap_level"] == pytest.approx(level, rel=1e-12)
    assert res.estimate == pytest.approx(t.values.mean() / b.values.mean())
    assert res.details["ci_method"] == "BCa" and res.p_value is None


def test_scalar_median_bca_is_not_expanded() -> None:
    b, t = lognormal("b", 1000, n=12, seed=4), lognormal("t", 600, n=9, seed=5)
    res = run(scalar(statistic="median", n_boot=999, bootstrap_seed=7, paired=False), b, t)

    def ratio(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.median(y, axis=axis) / np.median(x, axis=axis)

    ref = sps.bootstrap((b.values, t.values), ratio, n_resamples=999, method="BCa",
                        paired=False, vectorized=True, rng=np.random.default_rng(7))
    assert res.ci == pytest.approx(tuple(ref.confidence_interval), rel=1e-12)
    assert "bootstrap_level" not in res.details


def test_scalar_iqm_expanded_level_uses_smallest_arm() -> None:
    b, t = lognormal("b", 1000, n=12, seed=4), lognormal("t", 600, n=9, seed=5)
    res = run(scalar(statistic="iqm", n_boot=999, bootstrap_seed=7, paired=False), b, t)

    def ratio(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
        return sps.trim_mean(y, 0.25, axis=axis) / sps.trim_mean(x, 0.25, axis=axis)

    n = 9  # the smaller arm
    level = 1 - 2 * sps.norm.cdf(-math.sqrt(n / (n - 1)) * sps.t.ppf(0.975, n - 1))
    ref = sps.bootstrap((b.values, t.values), ratio, n_resamples=999, method="BCa",
                        paired=False, vectorized=True, rng=np.random.default_rng(7),
                        confidence_level=level)
    assert res.ci == pytest.approx(tuple(ref.confidence_interval), rel=1e-12)
    assert res.details["bootstrap_level"] == pytest.approx(level, rel=1e-12)


def test_scalar_degenerate_falls_back_to_percentile() -> None:
    """The two-sample BCa is undefined when every value is equal: the percentile CI of the same
    resamples stands in (the paired median's order-statistic CI needs no fallback)."""
    res = run(scalar(paired=False), arm("b", [100] * 5), arm("t", [100] * 5))
    assert res.details["ci_method"] == "percentile"
    assert "all values equal" in res.details["bca_fallback_reason"]
    assert res.ci == (1.0, 1.0) and res.verdict == Verdict.REFUTED
    # paired, the median of 5 per-pair ratios has no order-statistic CI at 95% (the sign
    # test's smallest two-sided p with 5 pairs is 1/16): unbounded, INCONCLUSIVE
    paired = run(scalar(), arm("b", [100] * 5), arm("t", [100] * 5))
    assert paired.ci == (0.0, math.inf) and paired.verdict == Verdict.INCONCLUSIVE
    assert paired.details["ci_method"].startswith("order statistics")


@pytest.mark.parametrize(("t_median", "expected"), [
    (500, Verdict.SUPPORTED), (1200, Verdict.REFUTED), (800, Verdict.INCONCLUSIVE)])
def test_scalar_verdicts(t_median: float, expected: Verdict) -> None:
    res = run(scalar(statistic="iqm"), lognormal("b", 1000, seed=8, sigma=0.2),
              lognormal("t", t_median, seed=9, sigma=0.2))
    assert res.verdict == expected, res.reason


def test_scalar_censoring() -> None:
    budget = 1500.0
    b = arm("b", [budget] * 10, [False] * 10)  # never reaches the threshold
    t = lognormal("t", 300, n=10, seed=10)
    res = run(scalar(), b, t)  # baseline's lower bounds work against "less": the verdict stands
    assert res.verdict == Verdict.SUPPORTED
    assert res.details["censored_seeds"] == {"b": 10, "t": 0}
    assert "lower bound" in res.details["censoring"]
    refused = run(scalar(censored="refuse"), b, t)
    assert refused.verdict == Verdict.INCONCLUSIVE and "10 of 10 seeds censored" in refused.reason
    both = run(scalar(), b, arm("t", [budget] * 10, [False] * 10))  # nothing known: no REFUTED
    assert both.verdict == Verdict.INCONCLUSIVE and "undetermined" in both.reason
    assert both.details["withheld_by_lower_bound_rule"] == ["b"]
    # treated half censored: its mean is a lower bound that favours "less"
    half = arm("t", [100] * 5 + [budget] * 5, [True] * 5 + [False] * 5)
    slow = lognormal("b", 5000, n=10, seed=11)
    assert run(scalar(statistic="mean"), slow, half).verdict == Verdict.INCONCLUSIVE
    one = arm("t", [100] * 9 + [budget], [True] * 9 + [False])  # one censored: median determined
    assert run(scalar(statistic="median"), slow, one).verdict == Verdict.SUPPORTED


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


# ---------------------------------------------------------------- equivalence


B_EQ = arm("b", [10.2, 9.8, 10.5, 9.9, 10.1, 10.4, 9.7, 10.0])
T_EQ = arm("t", [10.3, 10.1, 9.6, 10.2, 10.0, 9.9, 10.4, 10.6])


@pytest.mark.parametrize("usevar", ["unequal", "pooled"])
def test_equivalence_matches_ttost_ind(usevar: str) -> None:
    res = run(equiv(margin=0.5, usevar=usevar, paired=False), B_EQ, T_EQ)
    assert res.p_value == pytest.approx(
        ttost_ind(T_EQ.values, B_EQ.values, -0.5, 0.5, usevar=usevar)[0], rel=1e-12)
    cm = CompareMeans(DescrStatsW(T_EQ.values), DescrStatsW(B_EQ.values))
    assert res.ci == pytest.approx(cm.tconfint_diff(alpha=0.1, usevar=usevar), rel=1e-12)
    assert res.ci_level == pytest.approx(0.9) and "1 - 2 alpha" in res.details["ci_convention"]
    assert res.estimate == pytest.approx(T_EQ.values.mean() - B_EQ.values.mean())
    assert res.verdict == Verdict.SUPPORTED
    assert (res.p_value < 0.05) == (res.verdict == Verdict.SUPPORTED)


def test_equivalence_relative_matches_ttost_ind_log() -> None:
    res = run(equiv(margin=0.2, margin_kind="relative", paired=False), B_EQ, T_EQ)
    ref = ttost_ind(T_EQ.values, B_EQ.values, 0.8, 1.25, usevar="unequal", transform=np.log)[0]
    assert res.p_value == pytest.approx(ref, rel=1e-12)
    gm = np.exp(np.log(T_EQ.values).mean() - np.log(B_EQ.values).mean())
    assert res.estimate == pytest.approx(gm) and res.verdict == Verdict.SUPPORTED


def test_equivalence_one_arm_hand_computed() -> None:
    a = arm("a", [1, 2, 3, 4, 5])  # mean 3, se sqrt(0.5), t_{0.95, 4} = 2.131847
    res = run(equiv(arm="a", reference=3, margin=1.6), a)
    half = 2.131847 * math.sqrt(0.5)
    assert res.ci == pytest.approx((3 - half, 3 + half), rel=1e-6)
    assert res.p_value == pytest.approx(DescrStatsW(a.values).ttost_mean(1.4, 4.6)[0], rel=1e-12)
    assert res.verdict == Verdict.SUPPORTED  # [1.49, 4.51] within [1.4, 4.6]
    assert run(equiv(arm="a", reference=3, margin=1.4), a).verdict == Verdict.INCONCLUSIVE
    assert run(equiv(arm="a", reference=0, margin=1.0), a).verdict == Verdict.REFUTED
    rel = run(equiv(arm="a", reference=3, margin=0.2, margin_kind="relative"), a)
    assert rel.estimate == pytest.approx(sps.gmean(a.values))


@pytest.mark.parametrize(("shift", "expected"), [
    (0.0, Verdict.SUPPORTED), (3.0, Verdict.REFUTED), (-3.0, Verdict.REFUTED),
    (0.9, Verdict.INCONCLUSIVE)])
def test_equivalence_verdicts(shift: float, expected: Verdict) -> None:
    t = arm("t", T_EQ.values + shift)
    assert run(equiv(margin=1.0), B_EQ, t).verdict == expected


def test_equivalence_censoring_and_logs() -> None:
    t = arm("t", [10.0] * 7 + [12.0], [True] * 7 + [False])
    res = run(equiv(margin=5.0), B_EQ, t)
    assert res.verdict == Verdict.INCONCLUSIVE and "censored: refuse" in res.reason
    res = run(equiv(margin=5.0, censored="as_budget"), B_EQ, t)  # would be SUPPORTED
    assert res.verdict == Verdict.INCONCLUSIVE and "would support" in res.reason
    zero = arm("t", [0.0, 1.0, 2.0])
    res = run(equiv(margin=0.2, margin_kind="relative"), B_EQ, zero)
    assert res.verdict == Verdict.INCONCLUSIVE and "value(s) <= 0" in res.reason


# ---------------------------------------------------------------- proportion


def wilson(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


def test_proportion_hand_computed_and_statsmodels() -> None:
    a = arm("a", range(10), [True] * 8 + [False] * 2)
    res = run(prop(threshold=0.4, method="wilson"), a)
    assert res.estimate == 0.8 and res.ci == pytest.approx(wilson(8, 10), rel=1e-9)
    assert res.ci == pytest.approx(proportion_confint(8, 10, 0.05, "wilson"), rel=1e-12)
    assert res.p_value == pytest.approx(sps.binomtest(8, 10, 0.4, "greater").pvalue)
    # the default is Clopper-Pearson: the beta quantiles at alpha/2 = 0.025
    default = run(prop(threshold=0.4), a)
    assert default.ci[0] == pytest.approx(sps.beta.ppf(0.025, 8, 3), rel=1e-9)
    assert default.ci[1] == pytest.approx(sps.beta.ppf(0.975, 9, 2), rel=1e-9)
    assert default.details["ci_method"].startswith("Clopper-Pearson")
    beta = run(prop(threshold=0.4, method="beta", ci_level=0.9), a)
    assert beta.ci == pytest.approx(proportion_confint(8, 10, 0.1, "beta"), rel=1e-12)
    # Clopper-Pearson by hand: the beta quantiles
    assert beta.ci[0] == pytest.approx(sps.beta.ppf(0.05, 8, 3))
    assert beta.ci[1] == pytest.approx(sps.beta.ppf(0.95, 9, 2))


@pytest.mark.parametrize(("k", "direction", "threshold", "expected"), [
    (19, "greater", 0.5, Verdict.SUPPORTED), (2, "greater", 0.5, Verdict.REFUTED),
    (10, "greater", 0.5, Verdict.INCONCLUSIVE), (1, "less", 0.3, Verdict.SUPPORTED),
    (15, "less", 0.3, Verdict.REFUTED)])
def test_proportion_verdicts(k: int, direction: str, threshold: float,
                             expected: Verdict) -> None:
    a = arm("a", range(20), [True] * k + [False] * (20 - k))
    res = run(prop(direction=direction, threshold=threshold), a)
    assert res.verdict == expected and f"{k} of 20 seeds" in res.reason


def test_proportion_value_outcomes_with_censoring() -> None:
    # values 100, 200, 300 observed; censored at 150 (below the cut: unknown) and at 1000
    a = arm("a", [100, 200, 300, 150, 1000], [True, True, True, False, False])
    below = run(prop(outcome="value_below", cut=250), a)
    assert below.details["successes"] == 2 and below.details["counted_seeds"] == 4
    assert below.details["undetermined_seeds"] == 1
    above = run(prop(outcome="value_above", cut=200), a)  # 200, 300, 1000+ above; 150+ unknown
    assert above.details["successes"] == 3 and above.details["counted_seeds"] == 4
    reached = run(prop(), a)
    assert reached.details["successes"] == 3 and reached.details["counted_seeds"] == 5
    unknown = run(prop(outcome="value_below", cut=2000), arm("a", [1000] * 3, [False] * 3))
    assert unknown.verdict == Verdict.INCONCLUSIVE and "3 undetermined" in unknown.reason


# ---------------------------------------------------------------- correlation


def corr_arm(x: Any, y: Any, **extra: Any) -> ArmSample:
    return arm("a", x, extra={Y: y, **extra})


def test_spearman_hand_computed() -> None:
    res = run(corr(min_effect=0.0), corr_arm([1, 2, 3, 4, 5], [2, 1, 4, 3, 5]))
    assert res.estimate == pytest.approx(0.8)  # 1 - 6 * 4 / (5 * 24)
    se = math.sqrt((1 + 0.64 / 2) / 2)
    z = math.atanh(0.8)
    assert res.ci == pytest.approx((math.tanh(z - 1.959964 * se), math.tanh(z + 1.959964 * se)),
                                   rel=1e-6)
    assert res.p_value == pytest.approx(sps.spearmanr([1, 2, 3, 4, 5], [2, 1, 4, 3, 5]).pvalue)


def test_pearson_is_scipys_interval_less_the_fisher_z_bias() -> None:
    """r and p are scipy's; the CI is scipy's Fisher-z interval with its centre moved down by
    atanh(r)'s bias r / (2 (n - 1)), the same width on the z scale."""
    rng = np.random.default_rng(12)
    x = rng.uniform(100, 200, 25)
    y = x + rng.normal(0, 30, 25)
    res = run(corr(method="pearson", ci_level=0.9), corr_arm(x, y))
    ref = sps.pearsonr(x, y)
    r = float(ref.statistic)
    assert res.estimate == pytest.approx(r)
    assert res.p_value == pytest.approx(ref.pvalue)
    shift = r / (2 * 24)
    scipy_z = np.arctanh(ref.confidence_interval(0.9))
    assert np.arctanh(res.ci) == pytest.approx(scipy_z - shift, rel=1e-9)
    half = 1.6448536 / math.sqrt(22)
    assert np.arctanh(res.ci) == pytest.approx(
        (math.atanh(r) - shift - half, math.atanh(r) - shift + half), rel=1e-6)


@pytest.mark.parametrize(("slope", "noise", "direction", "expected"), [
    (1.0, 5.0, "positive", Verdict.SUPPORTED), (-1.0, 5.0, "positive", Verdict.REFUTED),
    (1.0, 60.0, "positive", Verdict.INCONCLUSIVE), (-1.0, 5.0, "negative", Verdict.SUPPORTED)])
def test_correlation_verdicts(slope: float, noise: float, direction: str,
                              expected: Verdict) -> None:
    rng = np.random.default_rng(13)
    x = np.arange(100.0, 130.0)
    y = 500 + slope * x + rng.normal(0, noise, x.size)
    assert run(corr(direction=direction), corr_arm(x, y)).verdict == expected


def test_correlation_data_handling() -> None:
    x = [1, 2, 3, 4, 5, 6]
    y = [1, 3, 2, 5, 4, math.nan]
    res = run(corr(min_effect=0.0), corr_arm(x, y))
    assert res.details["pairs_used"] == 5 and res.details["pairs_dropped_undefined"] == 1
    assert res.estimate == pytest.approx(sps.spearmanr(x[:5], y[:5]).statistic)
    few = run(corr(), corr_arm([1, 2, 3, 4], [1, 2, math.nan, 4]))
    assert few.verdict == Verdict.INCONCLUSIVE and "3 complete" in few.reason
    const = run(corr(), corr_arm([1, 2, 3, 4, 5], [7, 7, 7, 7, 7]))
    assert const.verdict == Verdict.INCONCLUSIVE and "constant" in const.reason
    with pytest.raises(KeyError, match=Y):
        run(corr(), arm("a", x))
    # x read from extra when present; y's observed mask from "<y>.observed"
    cens = arm("a", [0] * 6, extra={X: x, Y: [1, 3, 2, 5, 4, 6], Y + ".observed": [1] * 5 + [0]})
    assert run(corr(min_effect=0.0), cens).details["censored_values"] == {X: 0, Y: 1}
    refused = run(corr(censored="refuse"), cens)
    assert refused.verdict == Verdict.INCONCLUSIVE and "1 censored value(s) of" in refused.reason


# ---------------------------------------------------------------- value


def _hand_bootstrap_t(values: list[float], n_boot: int, seed: int) -> tuple[float, float]:
    """The bootstrap-t 95% CI of the mean by hand, resample by resample: t* = (mean* - m) / se*
    (a resample with se* = 0 gives +/-inf, or is dropped when mean* = m), CI m - q_hi se ..
    m - q_lo se with inverted-CDF quantiles."""
    x = np.asarray(values, dtype=float)
    n, m = x.size, float(x.mean())
    idx = np.random.default_rng(seed).integers(0, n, size=(n_boot, n))
    tstars = []
    for row in idx:
        xb = x[row]
        se_b = math.sqrt(sum((v - xb.mean()) ** 2 for v in xb) / (n - 1) / n)
        if se_b == 0:
            if xb.mean() != m:
                tstars.append(math.copysign(math.inf, xb.mean() - m))
            continue
        tstars.append((xb.mean() - m) / se_b)
    tstars.sort()
    k = len(tstars)
    q_lo, q_hi = tstars[math.ceil(0.025 * k) - 1], tstars[math.ceil(0.975 * k) - 1]
    se = float(x.std(ddof=1)) / math.sqrt(n)
    return m - q_hi * se, m - q_lo * se


def test_value_mean_hand_computed() -> None:
    a = arm("a", [1, 2, 3, 4, 5])
    res = run(value(n_boot=999, bootstrap_seed=5), a)
    idx = np.random.default_rng(5).integers(0, 5, size=(999, 5))
    k = sum(not (np.ptp(a.values[row]) == 0 and a.values[row].mean() == 3) for row in idx)
    assert res.estimate == 3
    assert res.ci == pytest.approx(_hand_bootstrap_t([1, 2, 3, 4, 5], 999, 5), rel=1e-12)
    assert res.details["n_dropped_resamples"] == 999 - k
    assert res.details["ci_method"].startswith("bootstrap-t")
    # all values equal: the CI is that value
    const = run(value(target=7, tol=0), arm("a", [7, 7, 7]))
    assert const.ci == (7.0, 7.0) and const.verdict == Verdict.SUPPORTED


# The bootstrap-t 95% CI of the mean of 1..5 (the criterion's default 2000 resamples, seed 0),
# computed by hand, is wider than the t interval (1.04, 4.96) with 5 seeds: it lies inside
# [0.5, 5.5] and straddles [1.5, 4.5].
@pytest.mark.parametrize(("target", "tol", "expected"), [
    (3.0, 2.5, Verdict.SUPPORTED), (3.0, 1.5, Verdict.INCONCLUSIVE),
    (10.0, 1.0, Verdict.REFUTED), (-3.0, 1.0, Verdict.REFUTED)])
def test_value_verdicts(target: float, tol: float, expected: Verdict) -> None:
    res = run(value(target=target, tol=tol), arm("a", [1, 2, 3, 4, 5]))
    hand = _hand_bootstrap_t([1, 2, 3, 4, 5], 2000, 0)
    assert res.ci == pytest.approx(hand, rel=1e-12)
    assert 0.5 < hand[0] < 1.5 and 4.5 < hand[1] < 5.5
    assert res.verdict == expected


def test_value_median_order_statistic_ci() -> None:
    a = lognormal("a", 400, n=15, seed=14)
    res = run(value(target=400, tol=100, statistic="median", n_boot=800, bootstrap_seed=3), a)
    # n = 15: P(Bin(15, 1/2) <= 3) = 576/32768 = 0.0176 <= 0.025 < P(<= 4) = 1941/32768, so
    # k = 4: the 4th and 12th smallest values, coverage 1 - 2 * 576/32768
    xs = np.sort(a.values)
    assert res.ci == (xs[3], xs[11])
    assert res.details["order_statistic_k"] == 4
    assert res.details["achieved_level"] == pytest.approx(1 - 2 * 576 / 32768)
    assert res.estimate == np.median(a.values)
    # n = 5 at 95%: even the extremes cover only 1 - 2/32 < 0.95, so the CI is unbounded
    few = run(value(target=3, tol=1, statistic="median"), arm("a", [1, 2, 3, 4, 5]))
    assert few.ci == (-math.inf, math.inf) and few.verdict == Verdict.INCONCLUSIVE
    # n = 6: 1 - 2/64 >= 0.95, so [min, max]
    six = run(value(target=3, tol=10, statistic="median"), arm("a", [6, 1, 5, 2, 4, 3]))
    assert six.ci == (1.0, 6.0) and six.verdict == Verdict.SUPPORTED


def test_value_censoring() -> None:
    a = arm("a", [1, 2, 3, 4, 9], [True] * 4 + [False])
    assert run(value(), a).verdict == Verdict.INCONCLUSIVE  # refuse by default
    high = run(value(target=-10, tol=1, censored="as_budget"), a)  # above the region: stands
    assert high.verdict == Verdict.REFUTED
    inside = run(value(target=3, tol=10, censored="as_budget"), a)
    assert inside.verdict == Verdict.INCONCLUSIVE and "would support" in inside.reason


# ---------------------------------------------------------------- decide_interval


@pytest.mark.parametrize(("ci", "expected"), [
    ((0.5, 1.5), Verdict.SUPPORTED), ((0.0, 2.0), Verdict.SUPPORTED),  # ends belong to region
    ((-0.1, 1.0), Verdict.INCONCLUSIVE), ((1.5, 2.5), Verdict.INCONCLUSIVE),
    ((2.0, 3.0), Verdict.INCONCLUSIVE), ((-1.0, 0.0), Verdict.INCONCLUSIVE),  # touch from outside
    ((2.01, 3.0), Verdict.REFUTED), ((-3.0, -0.01), Verdict.REFUTED),
    ((-math.inf, math.inf), Verdict.INCONCLUSIVE), ((math.nan, 1.0), Verdict.INCONCLUSIVE),
    ((1.5, 0.5), Verdict.INCONCLUSIVE)])
def test_decide_interval(ci: tuple[float, float], expected: Verdict) -> None:
    verdict, reason = decide_interval(ci, 0.0, 2.0, 1.0, "difference", 0.9)
    assert verdict == expected and reason.endswith(".") and "90% CI" in reason


def test_decide_interval_reasons_name_the_region_and_the_side() -> None:
    words = {ci: decide_interval(ci, 0.0, 2.0, 1.0, "difference", 0.9)[1] for ci in (
        (0.5, 1.5), (2.01, 3.0), (-3.0, -0.01), (1.5, 2.5), (math.nan, 1.0), (1.0, math.nan))}
    assert all("[0, 2]" in w for ci, w in words.items() if not any(map(math.isnan, ci)))
    assert "wholly within the claimed region [0, 2]" in words[(0.5, 1.5)]
    assert "wholly above the claimed region [0, 2]" in words[(2.01, 3.0)]
    assert "wholly below the claimed region [0, 2]" in words[(-3.0, -0.01)]
    assert "overlaps the claimed region [0, 2]" in words[(1.5, 2.5)]
    assert "is undefined" in words[(math.nan, 1.0)] and "is undefined" in words[(1.0, math.nan)]


@pytest.mark.parametrize(("lower", "upper"), [(2.0, 1.0), (math.nan, 1.0), (0.0, math.nan)])
def test_decide_interval_rejects_bad_region(lower: float, upper: float) -> None:
    with pytest.raises(ValueError, match=r"the claimed region \[.*\] is not an interval"):
        decide_interval((0, 1), lower, upper, 0.5, "x", 0.95)


def test_cox_separated_arms_are_inconclusive() -> None:
    res = run(cox(), arm("b", [10, 11, 12, 13]), arm("t", [1, 2, 3, 4]))
    assert res.verdict == Verdict.INCONCLUSIVE and "completely separated" in res.reason

