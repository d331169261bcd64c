"""Tests that pin what the mutation run of ``grokverify/stats/cox.py`` (mutmut) found unpinned.

Each group says what a user of ``cox_hazard_ratio`` relies on: the numbers of the result (HR,
its Wald CI, the p-values, beta and its se, the log-rank statistic) against an oracle computed
here with numpy/scipy (Efron partial likelihood solved with ``brentq``, log-rank by its
hypergeometric sums), and the words a reader sees (claimed region, test named, reasons of
refusals, the keys and values of the details) for small concrete cases.
"""

from __future__ import annotations

import math
import re
import warnings
from typing import Any

import numpy as np
import pytest
from scipy import optimize
from scipy import stats as sps
from statsmodels.duration.hazard_regression import PHReg
from statsmodels.tools.sm_exceptions import ConvergenceWarning

from grokverify.claim.metrics import Kind
from grokverify.kinds import CRITERIA
from grokverify.stats import cox as cox_module
from grokverify.stats.base import ArmSample, CriterionResult, judge

NAME = "cox_hazard_ratio"
BUDGET = 1000.0
CENSORING = ("seeds that never reach the threshold are right-censored at their budget and stay "
             "in the risk sets until then; ties in time handled by Efron's method")
FRAME_DETAILS = {"censoring": CENSORING, "min_effect_to_hr": "less: 1/(1-m); greater: 1/(1+m)"}
FIT_DETAILS = {"ci": "Wald: exp(beta -/+ z se)", "arm_coding": "treated=1",
               "p_against_threshold": "one-sided Wald z = (beta - log θ) / se"}
TEST = "Wald test of the arm coefficient (statsmodels PHReg, Efron ties)"


def arm(name: str, values: list[float], observed: list[bool] | None = None,
        excluded: dict[str, int] | None = None, kind: Kind = "time") -> ArmSample:
    v = np.asarray(values, dtype=float)
    o = np.ones(v.size, bool) if observed is None else np.asarray(observed, bool)
    return ArmSample(name, v, o, tuple(range(v.size)), excluded or {}, kind=kind)


def params(**kw: Any) -> Any:
    return CRITERIA[NAME].model_validate(
        {"name": NAME, "baseline": "b", "treated": "t", "direction": "less", **kw})


def run(arms: list[ArmSample], **kw: Any) -> CriterionResult:
    return judge(params(**kw), {a.name: a for a in arms})


# Baseline: 7 events, 3 seeds censored at the budget (and one diverged seed left out);
# treated: 9 events, 1 censored. No two event times tie.
BASE = arm("b", [400, 520, 610, 700, 780, 850, 930, BUDGET, BUDGET, BUDGET],
           [True] * 7 + [False] * 3, excluded={"diverged": 1})
TREAT = arm("t", [150, 200, 260, 310, 380, 450, 540, 600, 720, BUDGET], [True] * 9 + [False])


# ---------------------------------------------------------------- oracles


def cox_oracle(base: ArmSample, treat: ArmSample) -> tuple[float, float]:
    """(beta, se) of the Cox model with an arm indicator (treated = 1), Efron ties: the root of
    the partial-likelihood score and 1 / sqrt(information) there, summed by hand."""
    time = np.r_[base.values, treat.values]
    event = np.r_[base.observed, treat.observed]
    x = np.r_[np.zeros(base.n), np.ones(treat.n)]

    def score_info(beta: float) -> tuple[float, float]:
        u = info = 0.0
        w = np.exp(beta * x)
        for t in np.unique(time[event]):
            risk, dead = time >= t, (time == t) & event
            d = int(dead.sum())
            s0, s1 = w[risk].sum(), (w * x)[risk].sum()
            d0, d1 = w[dead].sum(), (w * x)[dead].sum()
            u += x[dead].sum()
            for k in range(d):
                m = (s1 - k / d * d1) / (s0 - k / d * d0)
                u -= m
                info += m - m * m  # x is 0/1, so the second moment equals the first
        return u, info

    beta = optimize.brentq(lambda b: score_info(b)[0], -20, 20, xtol=1e-14)
    return beta, 1 / math.sqrt(score_info(beta)[1])


def logrank_oracle(base: ArmSample, treat: ArmSample) -> tuple[float, float]:
    """Log-rank chi2 (1 df) and p: (O - E)^2 / V of the baseline arm over the event times."""
    time = np.r_[base.values, treat.values]
    event = np.r_[base.observed, treat.observed]
    group0 = np.r_[np.ones(base.n, bool), np.zeros(treat.n, bool)]
    o_minus_e = var = 0.0
    for t in np.unique(time[event]):
        risk = time >= t
        n, n0 = risk.sum(), (risk & group0).sum()
        d = ((time == t) & event).sum()
        o_minus_e += ((time == t) & event & group0).sum() - d * n0 / n
        var += d * (n0 / n) * (1 - n0 / n) * (n - d) / max(n - 1, 1)
    chi2 = o_minus_e ** 2 / var
    return chi2, float(sps.chi2.sf(chi2, 1))


def approx(x: float) -> Any:
    return pytest.approx(x, rel=1e-7)


# ---------------------------------------------------------------- whole results


def test_less_supported_result_is_pinned_whole() -> None:
    """A reader of a "treated faster" claim relies on the HR, its 90% Wald CI and p (equal to
    the hand-solved Efron fit, censored seeds kept in the risk sets), the claimed region
    "HR >= 1.25 (t at least 20% faster)", the verdict sentence, the test named, the per-arm
    counts of censored seeds, and the details (log-rank, beta, se, the conventions)."""
    beta, se = cox_oracle(BASE, TREAT)
    chi2, lr_p = logrank_oracle(BASE, TREAT)
    z = sps.norm.ppf(0.95)
    zt = (beta - math.log(1.25)) / se
    res = run([BASE, TREAT], ci_level=0.9)
    d = res.to_dict()
    arms = d.pop("arms")
    assert d == {
        "criterion": NAME,
        "effect_label": "Cox hazard ratio (t / b)",
        "estimate": approx(math.exp(beta)),
        "ci": [approx(math.exp(beta - z * se)), approx(math.exp(beta + z * se))],
        "ci_level": 0.9,
        "p_value": approx(2 * sps.norm.sf(abs(beta / se))),
        "test": TEST,
        "threshold": 1.25,
        "claimed_region": "HR >= 1.25 (t at least 20% faster)",
        "verdict": "SUPPORTED",
        "reason": "The 90% CI of the Cox hazard ratio (t / b), [1.29, 7.14], lies wholly at or "
                  "above 1.25, the boundary of the claimed effect (point estimate 3.03).",
        "details": {**FRAME_DETAILS, "logrank_chi2": approx(chi2), "logrank_p": approx(lr_p),
                    "beta": approx(beta), "se_beta": approx(se), **FIT_DETAILS},
        "p_support": approx(sps.norm.sf(zt)),
        "p_refute": approx(sps.norm.cdf(zt)),
        "p_value_label": "no-effect test p",
    }
    assert [(a["name"], a["n"], a["excluded"]) for a in arms] == [
        ("b", 10, {"diverged": 1}), ("t", 10, {})]
    # KM medians by hand: b's S(t) is 0.5 on [780, 850), t's on [380, 450): midpoints.
    assert [{k: a["columns"][k] for k in ("seeds", "events", "censored", "KM median")}
            for a in arms] == [{"seeds": 10, "events": 7, "censored": 3, "KM median": 815.0},
                               {"seeds": 10, "events": 9, "censored": 1, "KM median": 415.0}]


def test_greater_refuted_result_is_pinned_whole() -> None:
    """The same data read against "treated slower by at least 25%": the claimed region is
    "HR <= 0.8 (t at least 25% slower)", the 95% CI lies above it (REFUTED) and the one-sided
    p's swap roles."""
    beta, se = cox_oracle(BASE, TREAT)
    chi2, lr_p = logrank_oracle(BASE, TREAT)
    z = sps.norm.ppf(0.975)
    zt = (beta - math.log(0.8)) / se
    res = run([BASE, TREAT], direction="greater", min_effect=0.25)
    d = res.to_dict()
    d.pop("arms")
    assert d == {
        "criterion": NAME,
        "effect_label": "Cox hazard ratio (t / b)",
        "estimate": approx(math.exp(beta)),
        "ci": [approx(math.exp(beta - z * se)), approx(math.exp(beta + z * se))],
        "ci_level": 0.95,
        "p_value": approx(2 * sps.norm.sf(abs(beta / se))),
        "test": TEST,
        "threshold": 0.8,
        "claimed_region": "HR <= 0.8 (t at least 25% slower)",
        "verdict": "REFUTED",
        "reason": "The 95% CI of the Cox hazard ratio (t / b), [1.09, 8.42], lies wholly above "
                  "0.8, excluding the claimed region bounded by 0.8 (point estimate 3.03).",
        "details": {**FRAME_DETAILS, "logrank_chi2": approx(chi2), "logrank_p": approx(lr_p),
                    "beta": approx(beta), "se_beta": approx(se), **FIT_DETAILS},
        "p_support": approx(sps.norm.cdf(zt)),
        "p_refute": approx(sps.norm.sf(zt)),
        "p_value_label": "no-effect test p",
    }


@pytest.mark.parametrize(("kw", "region"), [
    ({"min_effect": 0.5}, "HR >= 2 (t at least 50% faster)"),
    ({"direction": "greater", "min_effect": 1.5}, "HR <= 0.4 (t at least 150% slower)"),
])
def test_claimed_region_words(kw: dict[str, Any], region: str) -> None:
    """The claimed region names the HR boundary and the time change m as a percentage."""
    assert run([BASE, TREAT], **kw).claimed_region == region


def test_one_seed_arm_is_enough() -> None:
    """One usable seed in an arm still gives a Cox estimate (the criterion needs one seed per
    arm), equal to the hand-solved fit."""
    base = arm("b", [300])
    treat = arm("t", [100, 200, 400, 500, BUDGET], [True] * 4 + [False])
    beta, se = cox_oracle(base, treat)
    res = run([base, treat])
    assert res.estimate == approx(math.exp(beta))
    assert res.details["se_beta"] == approx(se)
    assert res.verdict.value == "INCONCLUSIVE" and "straddles 1.25" in res.reason


# ---------------------------------------------------------------- refusals


def test_no_event_in_either_arm_names_both() -> None:
    """With no event in either arm the reason names both arms and their seed counts; the log-rank
    statistic is undefined (null), and the fixed details are still reported."""
    res = run([arm("b", [BUDGET] * 3, [False] * 3), arm("t", [BUDGET] * 4, [False] * 4)])
    d = res.to_dict()
    assert d["verdict"] == "INCONCLUSIVE" and d["estimate"] is None and d["p_support"] is None
    assert d["reason"] == ("No verdict is possible: arm 'b' has no event in 3 seeds and arm 't' "
                           "has no event in 4 seeds, so the hazard ratio has no finite estimate "
                           "(monotone partial likelihood).")
    assert d["details"] == {**FRAME_DETAILS, "logrank_chi2": None, "logrank_p": None}
    assert d["claimed_region"] == "HR >= 1.25 (t at least 20% faster)" and d["test"] == TEST


def test_no_event_in_one_arm_keeps_the_logrank_test() -> None:
    """With no event in one arm the log-rank test is still reported, equal to its hand sums."""
    base = arm("b", [100, 150, 230, 300])
    treat = arm("t", [BUDGET] * 5, [False] * 5)
    chi2, lr_p = logrank_oracle(base, treat)
    d = run([base, treat]).to_dict()
    assert d["reason"] == ("No verdict is possible: arm 't' has no event in 5 seeds, so the "
                           "hazard ratio has no finite estimate (monotone partial likelihood).")
    assert d["details"] == {**FRAME_DETAILS, "logrank_chi2": approx(chi2),
                            "logrank_p": approx(lr_p)}


def test_separated_arms_quote_the_convergence_failure() -> None:
    """Completely separated arms: statsmodels' fit does not converge; the reason and the
    ``fit_error`` detail quote its warning, next to the log-rank test."""
    base, treat = arm("b", [10, 11, 12, 13]), arm("t", [1, 2, 3, 4])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        PHReg(np.r_[base.values, treat.values], np.r_[np.zeros(4), np.ones(4)][:, None],
              status=np.ones(8), ties="efron").fit()
    message = next(str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning))
    error = f"the Cox fit did not converge: {message}"
    chi2, lr_p = logrank_oracle(base, treat)
    d = run([base, treat]).to_dict()
    assert d["reason"] == ("No verdict is possible: the Cox fit did not give a finite estimate, "
                           f"as when the arms' times are completely separated ({error}).")
    assert d["details"] == {**FRAME_DETAILS, "logrank_chi2": approx(chi2),
                            "logrank_p": approx(lr_p), "fit_error": error}
    assert d["estimate"] is None and d["ci"] == [None, None]


class _NanFit:
    """A converged fit whose se is NaN (a singular information matrix)."""

    params, bse, pvalues = np.array([0.5]), np.array([math.nan]), np.array([math.nan])


def test_non_finite_fit_is_refused_with_its_numbers(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fit that converges to a non-finite beta or se is refused, and the reason gives both."""

    class FakePHReg:
        def __init__(self, *args: Any, **kw: Any) -> None:
            pass

        def fit(self) -> _NanFit:
            return _NanFit()

    monkeypatch.setattr(cox_module, "PHReg", FakePHReg)
    d = run([BASE, TREAT]).to_dict()
    error = "non-finite Cox estimate (beta=0.5, se=nan)"
    assert d["reason"].endswith(f"completely separated ({error}).")
    assert d["details"]["fit_error"] == error


def test_missing_or_wrong_kind_arm_is_a_named_wiring_error() -> None:
    """A missing arm or an arm of a value metric is an error naming the criterion."""
    with pytest.raises(KeyError, match=re.escape("cox_hazard_ratio: no data for arm(s) ['t']")):
        run([BASE])
    with pytest.raises(TypeError, match=re.escape(
            "cox_hazard_ratio takes time metrics; arm(s) 't' (value) carry another kind")):
        run([BASE, arm("t", [0.5, -1.0, 2.0], kind="value")])
