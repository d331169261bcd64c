"""``cox_hazard_ratio``: a Cox proportional-hazards comparison of two arms' times to threshold
(statsmodels ``PHReg``, Efron ties), judged by its Wald CI; HR > 1 means the treated arm reaches
the threshold sooner (docs/verdicts.md, "`cox_hazard_ratio`")."""

from __future__ import annotations

import math
import warnings
from typing import Literal

import numpy as np
from pydantic import BaseModel
from scipy import stats as sps
from statsmodels.duration.hazard_regression import PHReg
from statsmodels.tools.sm_exceptions import ConvergenceWarning

from grokverify.claim.criteria import (
    TIME_ONLY,
    CoxHazardRatioParams,
    boundary_words,
    effect_words,
    expect_params,
)
from grokverify.stats import verdict as verdict_rules
from grokverify.stats.base import ArmSample, CriterionResult, wald_p
from grokverify.stats.common import Frame, arm_row, require_arms, too_few_seeds
from grokverify.stats.survival import km_columns, logrank

NAME = "cox_hazard_ratio"
CENSORING = ("seeds that never reach the threshold are right-censored at their budget and stay "
             "in the risk sets until then; ties in time handled by Efron's method")


def _label(p: CoxHazardRatioParams) -> str:
    return f"Cox hazard ratio ({p.treated} / {p.baseline})"


def _region(p: CoxHazardRatioParams) -> str:
    """E.g. "HR >= 1.25 (t at least 20% faster)", or under a non-inferiority margin
    "HR >= 0.8 (non-inferiority: t at most 25% slower than b)" (the words are in time)."""
    thr = verdict_rules.format_number(p.threshold)
    op = ">=" if p.direction == "less" else "<="
    better, worse = ("faster", "slower") if p.direction == "less" else ("slower", "faster")
    words = effect_words("ratio", float(p.min_effect or 0.0), p.margin, p.treated, p.baseline,
                         worse, better)
    return f"HR {op} {thr} ({words})"


def fit_cox(base: ArmSample, treat: ArmSample, ci_level: float) -> dict[str, float]:
    """beta, se, HR, its Wald CI and p from PHReg (Efron ties); raises on non-convergence."""
    time = np.concatenate([base.values, treat.values])
    status = np.concatenate([base.observed, treat.observed]).astype(float)
    arm = np.repeat([0.0, 1.0], [base.n, treat.n])[:, None]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = PHReg(time, arm, status=status, ties="efron").fit()
    failed = [str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning)]
    if failed:
        raise FloatingPointError(f"the Cox fit did not converge: {failed[0]}")
    beta, se, p = float(res.params[0]), float(res.bse[0]), float(res.pvalues[0])
    if not all(math.isfinite(v) for v in (beta, se)):
        raise FloatingPointError(f"non-finite Cox estimate (beta={beta}, se={se})")
    z = float(sps.norm.ppf(0.5 + ci_level / 2))
    return {"beta": beta, "se": se, "p": p, "hr": math.exp(beta),
            "low": math.exp(beta - z * se), "high": math.exp(beta + z * se)}


def run_cox(params: BaseModel, arms: dict[str, ArmSample]) -> CriterionResult:
    """Cox PH hazard ratio of treated vs baseline; the Wald CI decides (its one-sided tests
    against log θ are p_support/p_refute), the Wald p of no effect informs."""
    p = expect_params(params, CoxHazardRatioParams)
    base, treat = require_arms(NAME, [p.baseline, p.treated], arms, TIME_ONLY)
    frame = Frame(NAME, _label(p), "Wald test of the arm coefficient (statsmodels PHReg, Efron "
                  "ties)", p.threshold, _region(p), p.ci_level,
                  {"censoring": CENSORING, "min_effect_to_hr": "less: 1/(1-m); greater: 1/(1+m)",
                   **({"margin_to_hr": "less: 1/(1+margin); greater: 1/(1-margin)"}
                      if p.margin > 0 else {})})
    rows = [arm_row(a, km_columns(a, p.ci_level)) for a in (base, treat)]
    if why := too_few_seeds((base, treat), 1):
        return frame.inconclusive(why, rows)
    chisq, lr_p = logrank(base, treat)
    lr = {"logrank_chi2": chisq, "logrank_p": lr_p}
    no_event = [a for a in (base, treat) if a.events == 0]
    if no_event:
        who = " and ".join(f"arm {a.name!r} has no event in {a.n} seeds" for a in no_event)
        return frame.inconclusive(f"{who}, so the hazard ratio has no finite estimate "
                                  "(monotone partial likelihood)", rows, lr)
    try:
        fit = fit_cox(base, treat, p.ci_level)
    except (FloatingPointError, np.linalg.LinAlgError, ValueError) as exc:
        return frame.inconclusive(f"the Cox fit did not give a finite estimate, as when the "
                                  f"arms' times are completely separated ({exc})", rows,
                                  {**lr, "fit_error": str(exc)})
    ci = (fit["low"], fit["high"])
    region_dir: Literal["less", "greater"] = "greater" if p.direction == "less" else "less"
    verdict, reason = verdict_rules.decide(ci, p.threshold, region_dir, fit["hr"], _label(p),
                                           p.ci_level, boundary_words(p.margin, "ratio"))
    result = frame.result(fit["hr"], ci, fit["p"], verdict, reason, rows,
                          {**lr, "beta": fit["beta"], "se_beta": fit["se"],
                           "ci": "Wald: exp(beta -/+ z se)", "arm_coding": "treated=1",
                           "p_against_threshold": "one-sided Wald z = (beta - log θ) / se"})
    result.p_support, result.p_refute = wald_p(fit["beta"], fit["se"], math.log(p.threshold),
                                               region_dir)
    return result


