"""``correlation``: Spearman or Pearson correlation between two per-seed metrics of one arm.

x is ``ArmSample.extra[x]`` when present, else ``ArmSample.times`` (the claim's own metric); y is
``ArmSample.extra[y]``. Seeds where either value is NaN (undefined) are dropped pairwise and
counted. Observed masks come from ``extra["<name>.observed"]`` (for x read from ``times``:
``ArmSample.observed``); without one every value counts as observed.

CI on Fisher's z scale, ``tanh(atanh(r) -/+ z_crit * se)``:

* Pearson: ``se = 1 / sqrt(n - 3)`` (Fisher 1921; the interval of scipy's
  ``pearsonr(...).confidence_interval``);
* Spearman: ``se = sqrt((1 + r^2 / 2) / (n - 3))`` (Bonett & Wright 2000, Psychometrika 65:23-28),
  chosen over Fieller et al.'s constant ``sqrt(1.06 / (n - 3))``, which is too narrow for strong
  correlations.

Both need n >= 4 complete pairs. p: scipy ``pearsonr`` / ``spearmanr`` (two-sided, H0: no
correlation). With |r| = 1 the interval collapses to [r, r].

Censoring: ``as_budget`` (default) keeps censored values at their censoring value; for Spearman
with a common budget above every observed value this ranks censored seeds (tied) above every
observed one, which is their true order; Pearson uses the value itself. The lower-bound rule does
not apply (a correlation is not monotone in one value); the details count the censored values.
``refuse``: INCONCLUSIVE when any used value is censored.
"""

from __future__ import annotations

import math
import warnings
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from scipy import stats as sps

from grokverify import verdict as verdict_rules
from grokverify.stats.base import OBSERVED_SUFFIX, ArmSample, Criterion, CriterionResult
from grokverify.stats.common import (
    CensoredPolicy,
    Frame,
    excluded_words,
    expect_params,
    require_arms,
    summarize,
)

NAME = "correlation"
MIN_PAIRS = 4


class CorrelationParams(BaseModel):
    """Claim: in ``arm``, metric ``y`` rises (``positive``: r >= min_effect) or falls
    (``negative``: r <= -min_effect) with metric ``x`` across seeds. ``min_effect`` is the
    smallest |r| the claim commits to (required; 0 = any correlation of that sign). The boundary
    belongs to the claimed region. ``x``/``y`` name per-seed metrics; `metrics_needed` tells the
    pipeline which to compute."""

    model_config = ConfigDict(extra="forbid")

    name: Literal["correlation"]
    arm: str
    x: str
    y: str
    method: Literal["spearman", "pearson"] = "spearman"
    direction: Literal["positive", "negative"]
    min_effect: float = Field(ge=0, lt=1)
    ci_level: float = Field(0.95, gt=0, lt=1)
    censored: CensoredPolicy = "as_budget"

    @field_validator("x", "y")
    @classmethod
    def _known_metric(cls, v: str) -> str:
        from grokverify.metrics import METRICS

        if v not in METRICS:
            raise ValueError(f"unknown metric {v!r}; known: {', '.join(sorted(METRICS))}")
        return v

    @model_validator(mode="after")
    def _distinct(self) -> CorrelationParams:
        if self.x == self.y:
            raise ValueError("x and y must be different metrics")
        return self

    def metrics_needed(self) -> list[str]:
        """The per-seed metrics the pipeline must compute for this claim: [x, y]."""
        return [self.x, self.y]

    @property
    def threshold(self) -> float:
        return self.min_effect if self.direction == "positive" else -self.min_effect


def fisher_ci(r: float, n: int, ci_level: float, method: str) -> tuple[float, float]:
    """Fisher-z CI of a correlation: Pearson se 1/sqrt(n-3), Spearman Bonett-Wright."""
    se = (math.sqrt((1 + r * r / 2) / (n - 3)) if method == "spearman"
          else 1 / math.sqrt(n - 3))
    zc = float(sps.norm.ppf(0.5 + ci_level / 2))
    with np.errstate(divide="ignore"):
        z = float(np.arctanh(r))
    return math.tanh(z - zc * se), math.tanh(z + zc * se)


def _metric(arm: ArmSample, name: str, fallback: bool) -> tuple[np.ndarray, np.ndarray]:
    if name in arm.extra:
        values = arm.extra[name]
        observed = arm.extra.get(name + OBSERVED_SUFFIX, np.ones(arm.n, dtype=bool))
        return values, observed
    if fallback or arm.n == 0:  # an arm with no usable seed is INCONCLUSIVE, not an error
        return arm.times, arm.observed
    raise KeyError(f"correlation: arm {arm.name!r} carries no values of metric {name!r} "
                   f"(ArmSample.extra has {sorted(arm.extra)})")


def run_correlation(params: BaseModel, arms: dict[str, ArmSample]) -> CriterionResult:
    """Correlation of y with x in one arm, Fisher-z CI, scipy p."""
    p = expect_params(params, CorrelationParams)
    (arm,) = require_arms(NAME, [p.arm], arms)
    x, ox = _metric(arm, p.x, fallback=True)
    y, oy = _metric(arm, p.y, fallback=False)
    pair = ~(np.isnan(x) | np.isnan(y))
    x, y, ox, oy = x[pair], y[pair], ox[pair], oy[pair]
    n = int(pair.sum())
    cens = {p.x: int((~ox).sum()), p.y: int((~oy).sum())}
    op = ">=" if p.direction == "positive" else "<="
    word = {"spearman": "Spearman", "pearson": "Pearson"}[p.method]
    se_words = {"spearman": "Fisher z with Bonett-Wright se sqrt((1 + r^2/2)/(n-3))",
                "pearson": "Fisher z with se 1/sqrt(n-3)"}[p.method]
    frame = Frame(NAME, f"{word} correlation of {p.y} with {p.x} in {arm.name}",
                  f"scipy {p.method}r (two-sided, "
                  "H0: no correlation)", p.threshold,
                  f"r {op} {verdict_rules.format_number(p.threshold)}", p.ci_level,
                  {"ci_method": se_words, "pairs_used": n,
                   "pairs_dropped_undefined": int(arm.n - n), "censored_values": cens,
                   "censoring": ("censored values enter at their censoring value (Spearman: "
                                 "tied above observed ones under a common budget); no "
                                 "lower-bound rule" if p.censored == "as_budget" else
                                 "censored: refuse -- any censored value withholds the verdict")})
    stats: dict[str, Any] = {"pairs": n, f"censored_{p.x}": cens[p.x],
                             f"censored_{p.y}": cens[p.y]}
    rows = [summarize(arm, p.ci_level, stats)]
    if n < MIN_PAIRS:
        return frame.inconclusive(
            f"arm {arm.name!r} has {n} complete (x, y) pair(s), fewer than the {MIN_PAIRS} a "
            f"Fisher-z CI needs ({arm.n - n} undefined; left out: {excluded_words(arm)})", rows)
    if p.censored == "refuse" and any(cens.values()):
        parts = " and ".join(f"{v} censored value(s) of {k}" for k, v in cens.items() if v)
        return frame.inconclusive(f"arm {arm.name!r} has {parts}, and the claim sets "
                                  "`censored: refuse`", rows)
    constant = [name for name, v in ((p.x, x), (p.y, y)) if np.ptp(v) == 0]
    if constant:
        return frame.inconclusive(f"{' and '.join(constant)} is constant over the {n} seeds of "
                                  f"arm {arm.name!r}, so the correlation is undefined", rows)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = sps.spearmanr(x, y) if p.method == "spearman" else sps.pearsonr(x, y)
    r, pval = float(res.statistic), float(res.pvalue)
    ci = fisher_ci(r, n, p.ci_level, p.method)
    region_dir: Literal["less", "greater"] = "greater" if p.direction == "positive" else "less"
    verdict, reason = verdict_rules.decide(ci, p.threshold, region_dir, r, frame.effect_label,
                                           p.ci_level)
    rows[0].stats["r"] = r
    return frame.result(r, ci, pval, verdict, reason, rows)


def correlation_arms(params: BaseModel) -> list[str]:
    """[arm]."""
    return [expect_params(params, CorrelationParams).arm]


def correlation_metrics(params: BaseModel) -> list[str]:
    """[x, y]: the per-seed metrics the pipeline must compute."""
    return expect_params(params, CorrelationParams).metrics_needed()


CORRELATION = Criterion(NAME, CorrelationParams, run_correlation, correlation_arms,
                        correlation_metrics)
