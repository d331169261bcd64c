"""cox_hazard_ratio (grokverify/stats/cox.py): the hazard ratio, its Wald CI and p's against a
hand-solved Efron fit and statsmodels, the claimed region in words, and the refusals."""

from __future__ import annotations

import math
import re
import warnings
from typing import Any

import numpy as np
import pytest
from conftest import Has, lognormal_arm, logrank_oracle, run_criterion
from scipy import optimize
from scipy import stats as sps
from statsmodels.duration.hazard_regression import PHReg
from statsmodels.tools.sm_exceptions import ConvergenceWarning

from grokverify.stats import cox as cox_module
from grokverify.stats.base import ArmSample, CriterionResult, Verdict
from grokverify.stats.simulate import make_arm

NAME = "cox_hazard_ratio"
BUDGET = 1000.0
CENSORING = Has("seeds that never reach the threshold are right-censored at their budget",
                "stay in the risk sets", "Efron's method")
FRAME_DETAILS = {"censoring": CENSORING, "min_effect_to_hr": "less: 1/(1-m); greater: 1/(1+m)"}
FIT_DETAILS = {"ci": "Wald: exp(beta -/+ z se)", "arm_coding": "treated=1",
               "p_against_threshold": "one-sided Wald z = (beta - log θ) / se"}
TEST = "Wald test of the arm coefficient (statsmodels PHReg, Efron ties)"


def run(arms: list[ArmSample], **kw: Any) -> CriterionResult:
    """"t faster than b" unless `kw` says otherwise."""
    return run_criterion({"name": NAME, "baseline": "b", "treated": "t", "direction": "less",
                          **kw}, *arms)


# Baseline: 7 events, 3 seeds censored at the budget (and one diverged seed left out);
# treated: 9 events, 1 censored. No two event times tie.
BASE = make_arm("b", [400, 520, 610, 700, 780, 850, 930, BUDGET, BUDGET, BUDGET],
           [True] * 7 + [False] * 3, excluded={"diverged": 1})
TREAT = make_arm("t", [150, 200, 260, 310, 380, 450, 540, 600, 720, BUDGET], [True] * 9 + [False])


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


def approx(x: float) -> Any:
    return pytest.approx(x, rel=1e-7)


# ---------------------------------------------------------------- known answers


def test_cox_hand_computed_golden_ratio() -> None:
    # Baseline events at 1 and 4, treated at 2 and 3: the score equation reduces to
    # u^2 - u - 1 = 0 for u = exp(beta), so HR = (1 + sqrt 5) / 2.
    res = run([make_arm("b", [1, 4]), make_arm("t", [2, 3])])
    assert res.estimate == pytest.approx((1 + math.sqrt(5)) / 2, rel=1e-6)
    assert res.verdict == Verdict.INCONCLUSIVE  # 4 seeds: a wide CI


def test_cox_matches_statsmodels() -> None:
    b = lognormal_arm("b", 1000, seed=1, budget=1500)
    t = lognormal_arm("t", 700, seed=2, budget=1500)
    res = run([b, t], ci_level=0.9)
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
    res = run([lognormal_arm("b", 1000, n=25, seed=1, sigma=0.6),
               lognormal_arm("t", t_median, n=25, seed=2, sigma=0.6)], direction=direction)
    assert res.verdict == expected, res.reason


def test_cox_p_against_theta_is_the_wald_test_of_log_theta() -> None:
    base = lognormal_arm("b", 1000, 0, 16, sigma=0.35, budget=2200)
    treat = lognormal_arm("t", 400, 1, 16, sigma=0.35, budget=2200)
    res = run([base, treat])
    z = (res.details["beta"] - math.log(1.25)) / res.details["se_beta"]
    assert res.p_support == pytest.approx(sps.norm.sf(z))
    assert res.p_refute == pytest.approx(sps.norm.cdf(z))


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
        "reason": Has("90% CI of the Cox hazard ratio (t / b), [1.29, 7.14]",
                      "wholly at or above 1.25, the boundary of the claimed effect",
                      "(point estimate 3.03)."),
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
        "reason": Has("95% CI of the Cox hazard ratio (t / b), [1.09, 8.42]",
                      "wholly above 0.8, excluding the claimed region bounded by 0.8",
                      "(point estimate 3.03)."),
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
    base = make_arm("b", [300])
    treat = make_arm("t", [100, 200, 400, 500, BUDGET], [True] * 4 + [False])
    beta, se = cox_oracle(base, treat)
    res = run([base, treat])
    assert res.estimate == approx(math.exp(beta))
    assert res.details["se_beta"] == approx(se)
    assert res.verdict.value == "INCONCLUSIVE" and "straddles 1.25" in res.reason


# ---------------------------------------------------------------- refusals


def test_cox_zero_events_is_inconclusive() -> None:
    b = lognormal_arm("b", 100, seed=3)
    t = make_arm("t", [500] * 6, [False] * 6)
    res = run([b, t])
    assert res.verdict == Verdict.INCONCLUSIVE
    assert "arm 't' has no event in 6 seeds" in res.reason and "no finite estimate" in res.reason
    assert res.details["logrank_p"] < 0.05


def test_cox_separated_arms_are_inconclusive() -> None:
    res = run([make_arm("b", [10, 11, 12, 13]), make_arm("t", [1, 2, 3, 4])])
    assert res.verdict == Verdict.INCONCLUSIVE and "completely separated" in res.reason


def test_no_event_in_either_arm_names_both() -> None:
    """With no event in either arm the reason names both arms and their seed counts; the log-rank
    statistic is undefined (null), and the fixed details are still reported."""
    d = run([make_arm("b", [BUDGET] * 3, [False] * 3),
             make_arm("t", [BUDGET] * 4, [False] * 4)]).to_dict()
    assert d["verdict"] == "INCONCLUSIVE" and d["estimate"] is None and d["p_support"] is None
    assert d["reason"] == Has("No verdict is possible", "arm 'b' has no event in 3 seeds and",
                              "arm 't' has no event in 4 seeds", "no finite estimate",
                              "(monotone partial likelihood).")
    assert d["details"] == {**FRAME_DETAILS, "logrank_chi2": None, "logrank_p": None}
    assert d["claimed_region"] == "HR >= 1.25 (t at least 20% faster)" and d["test"] == TEST


def test_no_event_in_one_arm_keeps_the_logrank_test() -> None:
    """With no event in one arm the log-rank test is still reported, equal to its hand sums."""
    base = make_arm("b", [100, 150, 230, 300])
    treat = make_arm("t", [BUDGET] * 5, [False] * 5)
    chi2, lr_p = logrank_oracle(base, treat)
    d = run([base, treat]).to_dict()
    assert d["reason"] == Has("No verdict is possible", "arm 't' has no event in 5 seeds",
                              "no finite estimate (monotone partial likelihood).")
    assert "'b'" not in d["reason"]
    assert d["details"] == {**FRAME_DETAILS, "logrank_chi2": approx(chi2),
                            "logrank_p": approx(lr_p)}


def test_separated_arms_quote_the_convergence_failure() -> None:
    """Completely separated arms: statsmodels' fit does not converge; the reason and the
    ``fit_error`` detail quote its warning, next to the log-rank test."""
    base, treat = make_arm("b", [10, 11, 12, 13]), make_arm("t", [1, 2, 3, 4])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        PHReg(np.r_[base.values, treat.values], np.r_[np.zeros(4), np.ones(4)][:, None],
              status=np.ones(8), ties="efron").fit()
    message = next(str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning))
    error = f"the Cox fit did not converge: {message}"
    chi2, lr_p = logrank_oracle(base, treat)
    d = run([base, treat]).to_dict()
    assert d["reason"] == Has("No verdict is possible", "did not give a finite estimate",
                              f"times are completely separated ({error}).")
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
        run([BASE, make_arm("t", [0.5, -1.0, 2.0], kind="value")])
