"""``correlation``: Spearman or Pearson correlation between two per-seed metrics of one arm,
judged by its Fisher-z CI (docs/verdicts.md, "`correlation`")."""

from __future__ import annotations

import math
import warnings
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel
from scipy import stats as sps

from grokverify.claim.criteria import (
    ANY_KIND,
    MIN_PAIRS,
    CorrelationParams,
    expect_params,
)
from grokverify.stats import verdict as verdict_rules
from grokverify.stats.base import (
    OBSERVED_SUFFIX,
    ArmSample,
    CriterionResult,
    wald_p,
)
from grokverify.stats.common import NOT_CENSORED, Frame, arm_row, excluded_words, require_arms

NAME = "correlation"


def fisher_ci(r: float, n: int, ci_level: float, method: str) -> tuple[float, float]:
    """Fisher-z CI of a correlation: Pearson se 1/sqrt(n-3), Spearman Bonett-Wright."""
    z, se = _fisher_z(r, n, method)
    zc = float(sps.norm.ppf(0.5 + ci_level / 2))
    return math.tanh(z - zc * se), math.tanh(z + zc * se)


def _fisher_z(r: float, n: int, method: str) -> tuple[float, float]:
    """The centre on Fisher's z scale and its se, shared by the CI and the p's against θ so that
    they agree: Pearson's centre less atanh(r)'s bias (Fisher 1921), Spearman's plain, whose
    smaller bias the Bonett-Wright se covers."""
    se = (math.sqrt((1 + r * r / 2) / (n - 3)) if method == "spearman"
          else 1 / math.sqrt(n - 3))
    with np.errstate(divide="ignore"):
        z = float(np.arctanh(r))
    if method == "pearson" and math.isfinite(z):
        z -= r / (2 * (n - 1))
    return z, se


def _metric(arm: ArmSample, name: str, fallback: bool) -> tuple[np.ndarray, np.ndarray]:
    if name in arm.extra:
        values = arm.extra[name]
        observed = arm.extra.get(name + OBSERVED_SUFFIX, np.ones(arm.n, dtype=bool))
        return values, observed
    if fallback or arm.n == 0:  # an arm with no usable seed is INCONCLUSIVE, not an error
        return arm.values, arm.observed
    raise KeyError(f"correlation: arm {arm.name!r} carries no values of metric {name!r} "
                   f"(ArmSample.extra has {sorted(arm.extra)})")


def run_correlation(params: BaseModel, arms: dict[str, ArmSample]) -> CriterionResult:
    """Correlation of y with x in one arm: the Fisher-z CI decides (its one-sided tests against
    atanh(θ) are p_support/p_refute), scipy's p of no correlation informs."""
    p = expect_params(params, CorrelationParams)
    (arm,) = require_arms(NAME, [p.arm], arms, ANY_KIND)
    x_name, y_name = p.x.label(), p.y.label()
    x, ox = _metric(arm, x_name, fallback=True)
    y, oy = _metric(arm, y_name, fallback=False)
    pair = ~(np.isnan(x) | np.isnan(y))
    x, y, ox, oy = x[pair], y[pair], ox[pair], oy[pair]
    n = int(pair.sum())
    cens = {x_name: int((~ox).sum()), y_name: int((~oy).sum())}
    if p.censored == "restricted":
        (x, ox), (y, oy) = _restricted(x, ox), _restricted(y, oy)
    times = [m.label() for m in (p.x, p.y) if m.kind == "time"]
    op = ">=" if p.direction == "positive" else "<="
    word = {"spearman": "Spearman", "pearson": "Pearson"}[p.method]
    se_words = {"spearman": "Fisher z with Bonett-Wright se sqrt((1 + r^2/2)/(n-3))",
                "pearson": "Fisher z, bias-corrected centre atanh(r) - r/(2(n-1)), "
                            "se 1/sqrt(n-3)"}[p.method]
    frame = Frame(NAME, f"{word} correlation of {y_name} with {x_name} in {arm.name}",
                  f"scipy {p.method}r (two-sided, "
                  "H0: no correlation)", p.threshold,
                  f"r {op} {verdict_rules.format_number(p.threshold)}", p.ci_level,
                  {"ci_method": se_words, "pairs_used": n,
                   "pairs_dropped_undefined": int(arm.n - n), "censored_values": cens,
                   "censoring": _censoring_words(p.censored, times)})
    columns: dict[str, Any] = {"pairs": n, **{f"censored {k}": cens[k] for k in times}}
    rows = [arm_row(arm, columns)]
    if n < MIN_PAIRS:
        return frame.inconclusive(
            f"arm {arm.name!r} has {n} complete (x, y) pair(s), fewer than the {MIN_PAIRS} a "
            f"Fisher-z CI needs ({arm.n - n} undefined; left out: {excluded_words(arm)})", rows)
    if p.censored == "refuse" and any(cens.values()):
        parts = " and ".join(f"{v} censored value(s) of {k}" for k, v in cens.items() if v)
        return frame.inconclusive(f"arm {arm.name!r} has {parts}, and the claim sets "
                                  "`censored: refuse`", rows)
    constant = [name for name, v in ((x_name, x), (y_name, y)) if np.ptp(v) == 0]
    if constant:
        verb = "is" if len(constant) == 1 else "are"
        return frame.inconclusive(f"{' and '.join(constant)} {verb} constant over the {n} seeds of "
                                  f"arm {arm.name!r}, so the correlation is undefined", rows)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = sps.spearmanr(x, y) if p.method == "spearman" else sps.pearsonr(x, y)
    r, pval = float(res.statistic), float(res.pvalue)
    ci = fisher_ci(r, n, p.ci_level, p.method)
    region_dir: Literal["less", "greater"] = "greater" if p.direction == "positive" else "less"
    verdict, reason = verdict_rules.decide(ci, p.threshold, region_dir, r, frame.effect_label,
                                           p.ci_level)
    rows[0].columns["r"] = r
    result = frame.result(r, ci, pval, verdict, reason, rows,
                          {"p_against_threshold": "one-sided z = (atanh(r) - atanh(θ)) / se, "
                                                  "the CI's se"})
    z, se = _fisher_z(r, n, p.method)
    result.p_support, result.p_refute = wald_p(z, se, math.atanh(p.threshold), region_dir)
    return result


def _restricted(values: np.ndarray, observed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """min(T, τ), τ the metric's smallest censoring value: exact for every seed."""
    if observed.all():
        return values, observed
    return np.minimum(values, values[~observed].min()), np.ones_like(observed)


def _censoring_words(policy: str, times: list[str]) -> str:
    if not times:
        return NOT_CENSORED
    if policy == "refuse":
        return "censored: refuse -- any censored value withholds the verdict"
    if policy == "restricted":
        return ("censored: restricted -- each time metric enters as min(T, τ), τ its smallest "
                "censoring value (exact for every seed)")
    return ("censored values enter at their censoring value (Spearman: tied above observed ones "
            "under a common budget); no lower-bound rule")


