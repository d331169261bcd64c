"""Pieces shared by the criteria: arm look-up, per-arm rows, INCONCLUSIVE results, the
censoring policies and their lower-bound rule, statistics of a per-seed scalar, and the BCa
bootstrap with its percentile fallback.

Censoring (time metrics only; a value metric is never censored). A censored seed's value is its
censoring value (the budget): a *lower bound* on the true value. Criteria that compare values
offer ``censored: as_budget`` (use the lower bound) or ``refuse`` (no verdict while any value is
censored). Under ``as_budget`` the *lower-bound rule*
applies: mean, median and IQM never decrease when a value rises, so a censored value can only
have pulled its arm's statistic down. A verdict that this pull favours stands only when the
statistic of every arm whose pull favours it is *determined* despite censoring (`determined`);
otherwise the verdict is withheld (INCONCLUSIVE) with the reason. The bootstrap resamples are not
re-checked: the rule is applied to the arms as observed.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats as sps

from grokverify import verdict as verdict_rules
from grokverify.catalog.criteria import CensoredPolicy, Statistic
from grokverify.stats.base import ArmSample, ArmSummary, CriterionResult, Verdict

IQM_CUT = 0.25  # rliable's interquartile mean: scipy.stats.trim_mean(x, 0.25)


def require_arms(criterion: str, names: Sequence[str], arms: dict[str, ArmSample],
                 kinds: Sequence[str] = ("time",)) -> list[ArmSample]:
    """The named arms' data. A missing arm, or an arm whose metric kind the criterion does not
    accept, is a wiring error (KeyError, TypeError), not a verdict: claims are checked for both
    when they are loaded."""
    missing = [a for a in names if a not in arms]
    if missing:
        raise KeyError(f"{criterion}: no data for arm(s) {missing}")
    wrong = [f"{a!r} ({arms[a].kind})" for a in names if arms[a].kind not in kinds]
    if wrong:
        raise TypeError(f"{criterion} takes {' or '.join(kinds)} metrics; arm(s) "
                        f"{', '.join(wrong)} carry another kind")
    return [arms[a] for a in names]


def is_value(arms: Sequence[ArmSample]) -> bool:
    """Whether the arms carry a value metric (signed, never censored)."""
    return any(a.kind == "value" for a in arms)


def excluded_words(arm: ArmSample) -> str:
    return ", ".join(f"{k}: {v}" for k, v in arm.excluded.items()) or "none"


def too_few_seeds(arms: Sequence[ArmSample], need: int) -> str | None:
    """Why some arm cannot be analysed (fewer than `need` usable seeds), or None."""
    parts = []
    for a in arms:
        if a.n == 0:
            parts.append(f"arm {a.name!r} has no usable seed (left out: {excluded_words(a)})")
        elif a.n < need:
            parts.append(f"arm {a.name!r} has {a.n} usable seed(s), fewer than the {need} this "
                         f"criterion needs (left out: {excluded_words(a)})")
    return "; ".join(parts) or None


def arm_row(arm: ArmSample, columns: dict[str, Any]) -> ArmSummary:
    """An arm's report row: its counts and the criterion's columns, in the order given."""
    return ArmSummary(arm.name, arm.n, dict(arm.excluded), dict(columns))


def censored_count(arm: ArmSample) -> int:
    return int(arm.n - arm.events)


def censored_column(arm: ArmSample) -> dict[str, Any]:
    """The "censored (as budget)" column of a time metric's row; none for a value metric."""
    return {} if arm.kind == "value" else {"censored (as budget)": censored_count(arm)}


@dataclass
class Frame:
    """The fixed parts of a criterion's result, so that every exit path reports them alike."""

    criterion: str
    effect_label: str
    test: str
    threshold: float
    claimed_region: str
    ci_level: float
    details: dict[str, Any] = field(default_factory=dict)

    def result(self, estimate: float, ci: tuple[float, float], p_value: float | None,
               verdict: Verdict, reason: str, arms: list[ArmSummary],
               details: dict[str, Any] | None = None) -> CriterionResult:
        p = None if p_value is None or math.isnan(float(p_value)) else float(p_value)
        return CriterionResult(
            criterion=self.criterion, effect_label=self.effect_label, estimate=float(estimate),
            ci=(float(ci[0]), float(ci[1])), ci_level=self.ci_level, p_value=p, test=self.test,
            threshold=float(self.threshold), claimed_region=self.claimed_region,
            verdict=verdict, reason=reason, arms=arms,
            details={**self.details, **(details or {})})

    def inconclusive(self, why: str, arms: list[ArmSummary],
                     details: dict[str, Any] | None = None) -> CriterionResult:
        """No estimate: the reason says why no comparison is possible."""
        reason = f"No verdict is possible: {why}."
        return self.result(math.nan, (math.nan, math.nan), None, Verdict.INCONCLUSIVE, reason,
                           arms, details)


# ---------------------------------------------------------------- censoring


NOT_CENSORED = ("none: a value metric is never censored (diverged seeds and seeds whose value is "
                "undefined are left out and counted)")


def censoring_details(arms: Sequence[ArmSample], policy: CensoredPolicy) -> dict[str, Any]:
    """What the details say about censoring under a policy, with the per-arm counts."""
    if is_value(arms):
        return {"censoring": NOT_CENSORED}
    how = {
        "as_budget": "censored values enter as their censoring value (the budget), a lower bound "
                     "on the true value; the lower-bound rule withholds any verdict that this "
                     "could have produced (see docs/verdicts.md)",
        "refuse": "censored: refuse -- any censored value withholds the verdict (INCONCLUSIVE)",
    }[policy]
    return {"censoring": how, "censored_policy": policy,
            "censored_seeds": {a.name: censored_count(a) for a in arms}}


def refusal(arms: Sequence[ArmSample], policy: CensoredPolicy) -> str | None:
    """The reason to refuse under ``censored: refuse`` when any arm has a censored value."""
    if policy != "refuse":
        return None
    bad = [a for a in arms if censored_count(a)]
    if not bad:
        return None
    who = " and ".join(f"arm {a.name!r} has {censored_count(a)} of {a.n} seeds censored"
                       for a in bad)
    return f"{who}, and the claim sets `censored: refuse` (a censored value is only a lower bound)"


def determined(values: np.ndarray, observed: np.ndarray, statistic: Statistic) -> bool:
    """Whether the statistic of an arm is fixed whatever the censored seeds' true values are.

    True values of censored seeds are above their censoring values. When every censoring value
    is >= every observed value (a common budget), the censored seeds are the top order
    statistics, and the median is determined while at most ``(n - 1) // 2`` of them are censored
    and the IQM while at most ``int(0.25 n)`` are (its trimmed top); the mean never is.
    """
    cens = ~np.asarray(observed, dtype=bool)
    c = int(cens.sum())
    if c == 0:
        return True
    values = np.asarray(values, dtype=float)
    if (~cens).any() and values[cens].min() < values[~cens].max():
        return False
    n = values.size
    if statistic == "median":
        return c <= (n - 1) // 2
    if statistic == "iqm":
        return c <= int(IQM_CUT * n)
    return False


def lower_bound_rule(verdict: Verdict, reason: str, at_risk: Sequence[ArmSample],
                     statistic: str) -> tuple[Verdict, str, list[str]]:
    """Withhold `verdict` when an arm whose lower-bound pull favours it is undetermined.

    `at_risk` are the undetermined arms whose censored values could have produced `verdict`.
    Returns the (possibly withheld) verdict, its reason and the names of the arms that withheld.
    """
    if not at_risk or verdict == Verdict.INCONCLUSIVE:
        return verdict, reason, []
    who = " and ".join(f"arm {a.name!r} has {censored_count(a)} censored seed(s) entered at "
                       f"the budget, a lower bound that leaves its {statistic} undetermined"
                       for a in at_risk)
    word = {"SUPPORTED": "support", "REFUTED": "refute"}[verdict.value]
    base = reason.rstrip(".")
    return (Verdict.INCONCLUSIVE,
            f"{base}, which would {word} the claim, but {who}, so no verdict is drawn.",
            [a.name for a in at_risk])


def lower_bound_details(arms: Sequence[ArmSample], withheld: list[str]) -> dict[str, Any]:
    """The lower-bound rule's outcome for the details; none for a value metric (no bound)."""
    return {} if is_value(arms) else {"withheld_by_lower_bound_rule": withheld}


# ---------------------------------------------------------------- statistics


def _iqm(x: np.ndarray, axis: int = -1) -> np.ndarray:
    return sps.trim_mean(x, IQM_CUT, axis=axis)


STATISTICS: dict[str, Callable[..., Any]] = {"mean": np.mean, "median": np.median, "iqm": _iqm}
STATISTIC_WORDS = {"mean": "mean", "median": "median",
                   "iqm": "interquartile mean (25% trimmed each side, as rliable)"}


def statistic_of(values: np.ndarray, statistic: Statistic) -> float:
    """The statistic of one arm's values (NaN for an arm without seeds)."""
    if np.size(values) == 0:
        return math.nan
    return float(STATISTICS[statistic](np.asarray(values, dtype=float), axis=-1))


def expanded_level(ci_level: float, n: int) -> float:
    """Hesterberg's (2015) expanded bootstrap level for `n` seeds:
    ``1 - 2 Phi(-sqrt(n / (n - 1)) t_{n-1, 1 - alpha/2})`` with ``alpha = 1 - ci_level``. It
    corrects the narrowness of bootstrap intervals with few observations (the plug-in variance
    is (n-1)/n of the unbiased one, and normal rather than t quantiles are implied)."""
    if n < 2:
        raise ValueError("the expanded level needs at least 2 observations")
    alpha = 1.0 - ci_level
    z = math.sqrt(n / (n - 1)) * float(sps.t.ppf(1 - alpha / 2, n - 1))
    return float(1.0 - 2.0 * sps.norm.cdf(-z))


def bootstrap_ci(data: tuple[np.ndarray, ...], statistic: Callable[..., Any], ci_level: float,
                 n_boot: int, seed: int, expand: bool = False,
                 ) -> tuple[tuple[float, float], dict[str, Any]]:
    """BCa CI by scipy.stats.bootstrap (unpaired samples, resampled independently), seeded with
    ``np.random.default_rng(seed)``; when BCa is undefined (a NaN bound: a degenerate bootstrap
    distribution, e.g. all values equal, or undefined resampled statistics) the percentile CI of
    the same resamples (same seed) is used, and the details say why.

    With ``expand`` (for the mean and the IQM, not the median) the bootstrap is run at
    Hesterberg's expanded level `expanded_level` for n = the smallest sample, so that the
    interval has its nominal coverage with few seeds; the details give the level used."""
    level = expanded_level(ci_level, min(len(d) for d in data)) if expand else ci_level

    def run(method: str) -> Any:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            return sps.bootstrap(data, statistic, n_resamples=n_boot, confidence_level=level,
                                 method=method, paired=False, vectorized=True,
                                 rng=np.random.default_rng(seed))

    res = run("BCa")
    low, high = (float(x) for x in res.confidence_interval)
    details: dict[str, Any] = {
        "bootstrap": "scipy.stats.bootstrap, arms resampled independently (paired=False)",
        "n_boot": int(n_boot), "bootstrap_seed": int(seed), "ci_method": "BCa"}
    if expand:
        details.update(bootstrap_level=level, bootstrap_level_rule=(
            "Hesterberg's expanded level 1 - 2 Phi(-sqrt(n/(n-1)) t_(n-1, 1-alpha/2)), "
            "n = smallest arm, for the stated CI level with few seeds"))
    if not (math.isnan(low) or math.isnan(high)):
        return (low, high), details
    dist = np.asarray(res.bootstrap_distribution, dtype=float)
    finite = dist[np.isfinite(dist)]
    if finite.size == dist.size and np.ptp(dist) == 0:
        why = (f"every resampled statistic equals {verdict_rules.format_number(dist[0])} (all "
               "values equal), so BCa's bias correction and acceleration are undefined")
    else:
        why = (f"the BCa interval is undefined ({dist.size - finite.size} of {dist.size} "
               "resampled statistics are not finite, or the jackknife is degenerate)")
    pct = run("percentile")
    details.update(ci_method="percentile", bca_fallback_reason=why)
    return (float(pct.confidence_interval[0]), float(pct.confidence_interval[1])), details
