"""``proportion``: the share of an arm's seeds with an outcome (``observed``, ``value_below`` or
``value_above`` a cut) against a claimed share, judged by its Clopper-Pearson or Wilson CI
(docs/verdicts.md, "`proportion`"; censored seeds: "Censoring and divergence")."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from pydantic import BaseModel
from scipy.stats import binom, binomtest, norm
from statsmodels.stats.proportion import proportion_confint

from grokverify.claim.criteria import (
    ProportionParams,
    expect_params,
)
from grokverify.stats import verdict as verdict_rules
from grokverify.stats.base import ArmSample, CriterionResult, Region
from grokverify.stats.common import NOT_CENSORED, Frame, arm_row, require_arms

NAME = "proportion"


def outcomes(arm: ArmSample, p: ProportionParams) -> tuple[np.ndarray, np.ndarray]:
    """(success, determined) per seed: a censored seed is decided by a cut only when its
    censoring value is at or past it (its true value lies above)."""
    x, obs = arm.values, arm.observed
    if p.outcome == "observed":
        return obs.copy(), np.ones(arm.n, dtype=bool)
    cut = float(p.cut if p.cut is not None else math.nan)
    known = obs | (x >= cut)
    if p.outcome == "value_below":
        return obs & (x <= cut), known
    return (x >= cut), known


def _outcome_words(p: ProportionParams) -> str:
    if p.outcome == "observed":
        return "reached the threshold within the budget"
    fmt = verdict_rules.format_number(float(p.cut or 0.0))
    return f"value {'<=' if p.outcome == 'value_below' else '>='} {fmt}"


def run_proportion(params: BaseModel, arms: dict[str, ArmSample]) -> CriterionResult:
    """Share of seeds with the outcome, its Wilson/Clopper-Pearson CI and an exact binomial p."""
    p = expect_params(params, ProportionParams)
    (arm,) = require_arms(NAME, [p.arm], arms, p.kinds())
    success, known = outcomes(arm, p)
    k, n = int(success[known].sum()), int(known.sum())
    undetermined = int(arm.n - n)
    op = ">=" if p.direction == "greater" else "<="
    method_words = {"wilson": "Wilson score", "beta": "Clopper-Pearson"}[p.method]
    link = "that" if p.outcome == "observed" else "with"
    frame = Frame(NAME, f"share of {arm.name} seeds {link} {_outcome_words(p)}",
                  f"exact binomial test against {verdict_rules.format_number(p.threshold)} "
                  "(scipy binomtest, "
                  f"alternative={p.direction})", p.threshold,
                  f"share {op} {verdict_rules.format_number(p.threshold)}", p.ci_level,
                  {"outcome": _outcome_words(p), "ci_method": f"{method_words} "
                   "(statsmodels proportion_confint)",
                   "censoring": _censoring_words(p, arm), "undetermined_seeds": undetermined,
                   "successes": k, "counted_seeds": n})
    columns: dict[str, Any] = {"seeds": arm.n, "counted": n, "successes": k,
                               "share": k / n if n else math.nan}
    if arm.kind == "time" and p.outcome != "observed":
        columns["undetermined (censored)"] = undetermined
    rows = [arm_row(arm, columns)]
    if n == 0:
        left = ", ".join(f"{a}: {b}" for a, b in arm.excluded.items()) or "none"
        return frame.inconclusive(f"arm {arm.name!r} has no seed whose outcome is known "
                                  f"({arm.n} usable, {undetermined} undetermined by censoring; "
                                  f"left out: {left})", rows)
    low, high = proportion_confint(k, n, alpha=1 - p.ci_level, method=p.method)
    ci = (float(low), float(high))
    pval = float(binomtest(k, n, p.threshold, alternative=p.direction).pvalue)
    verdict, reason = verdict_rules.decide(ci, p.threshold, p.direction, k / n, frame.effect_label,
                                           p.ci_level)
    reason = reason.removesuffix(".") + f", from {k} of {n} seeds."
    result = frame.result(k / n, ci, pval, verdict, reason, rows,
                          {"p_against_threshold": _P_WORDS[p.method]})
    result.p_support, result.p_refute = p_against(k, n, p.threshold, p.direction, p.method)
    result.p_value_label = "one-sided exact binomial test p against θ"
    return result


def _exact_tails(k: int, n: int, theta: float) -> tuple[float, float]:
    """P(X >= k | θ), P(X <= k | θ): what Clopper-Pearson's bounds invert."""
    return float(binom.sf(k - 1, n, theta)), float(binom.cdf(k, n, theta))


def _score_tails(k: int, n: int, theta: float) -> tuple[float, float]:
    """One-sided p's of the score test, which Wilson's interval inverts."""
    z = (k / n - theta) / math.sqrt(theta * (1 - theta) / n)
    return float(norm.sf(z)), float(norm.cdf(z))


# method -> (p of "share above θ", p of "share below θ"), each inverting that method's CI
_TAILS = {"beta": _exact_tails, "wilson": _score_tails}
_P_WORDS = {"beta": "exact binomial tails P(X >= k | θ), P(X <= k | θ) (inverting "
                    "Clopper-Pearson)",
            "wilson": "one-sided score test z = (k/n - θ) / sqrt(θ(1-θ)/n) (inverting Wilson)"}


def p_against(k: int, n: int, theta: float, region: Region, method: str) -> tuple[float, float]:
    """(p_support, p_refute) of k successes in n against θ, coherent with `method`'s CI."""
    if (region, theta) in (("greater", 0.0), ("less", 1.0)):
        return 0.0, 1.0  # the claimed region is all of [0, 1]: every CI lies in it
    above, below = _TAILS[method](k, n, theta)
    return (above, below) if region == "greater" else (below, above)


def _censoring_words(p: ProportionParams, arm: ArmSample) -> str:
    if arm.kind == "value":
        return NOT_CENSORED
    if p.outcome == "observed":
        return "a censored seed did not reach the threshold within its budget: a failure"
    return ("a censored seed's true value exceeds its censoring value c: it is decided when "
            "c >= cut (value_below: failure; value_above: success), else left out as "
            "undetermined and counted")


