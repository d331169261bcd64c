"""Pieces shared by the criteria: arm look-up, per-arm rows, INCONCLUSIVE results, the pairing
of two arms by seed, the censoring policies and their lower-bound rule, statistics of a per-seed
scalar, and the BCa and bootstrap-t intervals with their one-sided p-values. The rules they
implement are docs/verdicts.md's "Paired analysis" and "Censoring and divergence"."""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from scipy import stats as sps
from scipy.special import ndtr, ndtri

from grokverify.claim.criteria import CensoredPolicy, Statistic
from grokverify.stats import verdict as verdict_rules
from grokverify.stats.base import INTERVAL_FAILS, ArmSample, ArmSummary, CriterionResult, Verdict

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


def take_seeds(arm: ArmSample, index: np.ndarray, renumber: bool = False) -> ArmSample:
    """The arm's seeds at `index` (repeats allowed: a resample), with their extra metrics.

    ``renumber`` gives the result seeds 0..len-1 (needed when `index` repeats a seed)."""
    idx = np.asarray(index, dtype=int)
    seeds = tuple(range(idx.size)) if renumber else tuple(arm.seeds[i] for i in idx)
    return ArmSample(arm.name, arm.values[idx], arm.observed[idx], seeds,
                     excluded=dict(arm.excluded),
                     extra={k: v[idx] for k, v in arm.extra.items()}, kind=arm.kind)


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


# ---------------------------------------------------------------- pairing

CORRELATION_METHOD = ("Spearman rank correlation of the paired seeds' values; a censored time "
                      "enters at its censoring value (the budget), tied with the other censored "
                      "seeds (ranks: the same on log times)")


@dataclass(frozen=True)
class Pairing:
    """How two arms are analysed: paired, `base` and `treat` restricted to the seed numbers both
    have (pair i = position i); unpaired, the arms as given and `why_unpaired`. `correlation` is
    the within-pair Spearman correlation (NaN without two pairs or with constant values)."""

    paired: bool
    base: ArmSample
    treat: ArmSample
    n_pairs: int
    broken: dict[str, int]  # per arm, its seeds whose partner is missing
    correlation: float
    why_unpaired: str = ""

    @property
    def analysis(self) -> str:
        """"paired (n pairs, within-pair correlation r)" or "unpaired" (with the fallback's
        reason when pairing was asked for)."""
        if self.paired:
            return (f"paired ({self.n_pairs} pairs, within-pair correlation "
                    f"{verdict_rules.format_number(self.correlation)})")
        return f"unpaired ({self.why_unpaired})" if self.why_unpaired else "unpaired"

    def details(self) -> dict[str, Any]:
        out: dict[str, Any] = {"analysis": self.analysis, "paired": self.paired,
                               "n_pairs": self.n_pairs, "broken_pairs": dict(self.broken),
                               "within_pair_correlation": self.correlation,
                               "within_pair_correlation_method": CORRELATION_METHOD}
        if self.why_unpaired:
            out["unpaired_reason"] = self.why_unpaired
        return out


def pair_arms(base: ArmSample, treat: ArmSample, paired: bool) -> Pairing:
    """Pair two arms by seed number; unpaired when `paired` is False or when they cannot be
    paired (fewer than 2 shared seed numbers, or a seed number repeated), keeping the reason."""
    common = sorted(set(base.seeds) & set(treat.seeds))
    broken = {base.name: base.n - len(common), treat.name: treat.n - len(common)}
    repeats = [a.name for a in (base, treat) if len(set(a.seeds)) != a.n]
    why = ""
    if repeats:
        why = f"seed numbers repeat within arm(s) {repeats}, so seeds cannot be matched"
    elif len(common) < 2:
        why = (f"the arms share {len(common)} seed number(s) (different seed sets), fewer than "
               "the 2 pairs a paired analysis needs")
    if repeats or len(common) < 2:
        return Pairing(False, base, treat, 0, broken, math.nan, why if paired else "")
    pb, pt = ({s: i for i, s in enumerate(a.seeds)} for a in (base, treat))
    b = take_seeds(base, np.array([pb[s] for s in common]))
    t = take_seeds(treat, np.array([pt[s] for s in common]))
    r = _spearman(b.values, t.values)
    if not paired:
        return Pairing(False, base, treat, len(common), broken, r)
    return Pairing(True, b, t, len(common), broken, r)


def _spearman(x: np.ndarray, y: np.ndarray) -> float:
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return math.nan
    return float(sps.spearmanr(x, y).statistic)


def paired_effects(pairing: Pairing, effect: str) -> np.ndarray:
    """Per-pair effects: treated - baseline, or log(treated / baseline) for a ratio (the caller
    checks that every value is > 0)."""
    b, t = pairing.base.values, pairing.treat.values
    return t - b if effect == "difference" else np.log(t) - np.log(b)


def with_analysis(test: str, pairing: Pairing) -> str:
    """The test string naming the analysis; a declared unpaired analysis (``paired: false``)
    keeps the plain test string."""
    if not pairing.paired and not pairing.why_unpaired:
        return test
    return f"{test}; analysis: {pairing.analysis}"


def broken_pairs_words(pairing: Pairing) -> str:
    """", N seed(s) without a partner (left out in the other arm)" or ""."""
    lost = sum(pairing.broken.values())
    if not pairing.paired or not lost:
        return ""
    who = ", ".join(f"{k}: {v}" for k, v in pairing.broken.items() if v)
    return f"; {lost} seed(s) without a partner in the other arm, left out ({who})"


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
        "restricted": "censored: restricted -- every time enters as min(T, τ), τ the smallest "
                      "censoring step, which is exact for censored seeds too (no lower-bound rule)",
    }[policy]
    tau = restriction(arms) if policy == "restricted" else None
    return {"censoring": how, "censored_policy": policy,
            "censored_seeds": {a.name: censored_count(a) for a in arms},
            **({"restricted_tau": tau} if tau is not None else {})}


def restriction(arms: Sequence[ArmSample]) -> float | None:
    """τ of ``censored: restricted``: the smallest censoring step of any arm (None: none)."""
    cens = [a.values[~a.observed] for a in arms if a.kind == "time"]
    steps = np.concatenate(cens) if cens else np.array([])
    return float(steps.min()) if steps.size else None


def restricted(arms: Sequence[ArmSample], policy: CensoredPolicy) -> list[ArmSample]:
    """The arms under ``censored: restricted``: times clipped at τ, where min(T, τ) is known for
    every seed, so all are observed; unchanged under another policy or without censoring."""
    tau = restriction(arms) if policy == "restricted" else None
    if tau is None:
        return list(arms)
    return [replace(a, values=np.minimum(a.values, tau), observed=np.ones(a.n, dtype=bool))
            for a in arms]


def restricted_words(arms: Sequence[ArmSample], policy: CensoredPolicy) -> str:
    """", on restricted times min(T, τ = 4000)" for a test's description, or ""."""
    tau = restriction(arms) if policy == "restricted" else None
    if tau is None:
        return ""
    return f", on restricted times min(T, τ = {verdict_rules.format_number(tau)})"


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
    """Whether the arm's statistic is fixed whatever the censored seeds' true values (above
    their censoring values) are: when the censored seeds are the top order statistics, for a
    median while at most (n - 1) // 2 are censored, for the IQM its trimmed top; never a mean."""
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
    """(verdict, reason, names of the arms that withheld it): `verdict` withheld when `at_risk`
    holds undetermined arms whose censored values could have produced it."""
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


EXPANDED_LEVEL_RULE = "Hesterberg's expanded level 1 - 2 Phi(-sqrt(n/(n-1)) t_(n-1, 1-alpha/2))"


def expanded_level(ci_level: float, n: int) -> float:
    """Hesterberg's (2015) expanded bootstrap level for `n` seeds (`EXPANDED_LEVEL_RULE`), which
    corrects the narrowness of bootstrap intervals with few seeds: the plug-in variance is
    (n-1)/n of the unbiased one, and normal rather than t quantiles are implied."""
    if n < 2:
        raise ValueError("the expanded level needs at least 2 observations")
    alpha = 1.0 - ci_level
    z = math.sqrt(n / (n - 1)) * float(sps.t.ppf(1 - alpha / 2, n - 1))
    return float(1.0 - 2.0 * sps.norm.cdf(-z))


UNPAIRED_BOOTSTRAP = "scipy.stats.bootstrap, arms resampled independently (paired=False)"
Region = tuple[str, float]  # (direction "less" | "greater", threshold)


def no_spread(resampled: np.ndarray, what: str) -> str | None:
    """Why no bootstrap interval holds when every resampled `what` (all finite) is the same
    value: the `interval_fails` words (docs/verdicts.md, "Intervals that do not hold")."""
    if resampled.size == 0 or not np.all(np.isfinite(resampled)) or np.ptp(resampled) != 0:
        return None
    return (f"every resampled {what} equals {verdict_rules.format_number(float(resampled[0]))}: "
            "with no spread no bootstrap interval holds, and a single value is no CI")


def bootstrap_ci(data: tuple[np.ndarray, ...], statistic: Callable[..., Any], ci_level: float,
                 n_boot: int, seed: int, expand: bool = False,
                 region: Region | None = None, how: str = UNPAIRED_BOOTSTRAP,
                 ) -> tuple[tuple[float, float], dict[str, Any]]:
    """BCa CI by scipy.stats.bootstrap from ``default_rng(seed)``, at `expanded_level` for the
    smallest sample with ``expand``; where BCa is undefined (a NaN bound) the percentile CI of the
    same resamples, saying why. With `region`, details get the p's that invert it."""
    n = min(len(d) for d in data)
    level = expanded_level(ci_level, n) if expand else ci_level

    def run(method: str) -> Any:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            return sps.bootstrap(data, statistic, n_resamples=n_boot, confidence_level=level,
                                 method=method, paired=False, vectorized=True,
                                 rng=np.random.default_rng(seed))

    res = run("BCa")
    low, high = (float(x) for x in res.confidence_interval)
    details: dict[str, Any] = {"bootstrap": how, "n_boot": int(n_boot),
                               "bootstrap_seed": int(seed), "ci_method": "BCa"}
    if expand:
        details.update(bootstrap_level=level, bootstrap_level_rule=(
            f"{EXPANDED_LEVEL_RULE}, n = smallest arm, for the stated CI level with few seeds"))
    dist = np.asarray(res.bootstrap_distribution, dtype=float)
    bca = not (math.isnan(low) or math.isnan(high))
    if not bca:
        finite = dist[np.isfinite(dist)]
        if finite.size == dist.size and np.ptp(dist) == 0:
            why = (f"every resampled statistic equals {verdict_rules.format_number(dist[0])} "
                   "(all values equal), so BCa's bias correction and acceleration are undefined")
            details[INTERVAL_FAILS] = no_spread(dist, "statistic")
        else:
            why = (f"the BCa interval is undefined ({dist.size - finite.size} of {dist.size} "
                   "resampled statistics are not finite, or the jackknife is degenerate)")
        pct = run("percentile")
        details.update(ci_method="percentile", bca_fallback_reason=why)
        low, high = float(pct.confidence_interval[0]), float(pct.confidence_interval[1])
    if region is not None:
        z0, a = _bca_constants(data, statistic, dist) if bca else (0.0, 0.0)
        to_p = expanded_p(n) if expand else _normal_p
        details.update(bca_p_values(dist, z0, a, region, to_p))
    return (low, high), details


def _bca_constants(data: tuple[np.ndarray, ...], statistic: Callable[..., Any],
                   dist: np.ndarray) -> tuple[float, float]:
    """BCa's bias correction z0 and acceleration a as scipy.stats.bootstrap computes them
    (Efron and Tibshirani 14.3, 15.36; the jackknife of each sample, summed over samples)."""
    theta = float(statistic(*data, axis=-1))
    z0 = float(ndtri((np.count_nonzero(dist < theta) + np.count_nonzero(dist <= theta))
                     / (2 * dist.size)))
    nums, dens = 0.0, 0.0
    for j, sample in enumerate(data):
        n = len(sample)
        jack = np.stack([np.delete(sample, i) for i in range(n)])  # (n, n - 1)
        others = [np.broadcast_to(d, (n, len(d))) for d in data]
        others[j] = jack
        with np.errstate(all="ignore"):
            theta_i = np.asarray(statistic(*others, axis=-1), dtype=float)
        u = (n - 1) * (theta_i.mean() - theta_i)
        nums += float(np.sum(u ** 3)) / n ** 3
        dens += float(np.sum(u ** 2)) / n ** 2
    with np.errstate(all="ignore"):
        a = nums / dens ** 1.5 / 6 if dens > 0 else 0.0
    return z0, float(a)


def _normal_p(z: float) -> float:
    return float(ndtr(-z))


def expanded_p(n: int) -> Callable[[float], float]:
    """The one-sided p for a bootstrap-scale z under Hesterberg's expansion, whose z for a
    one-sided level p is ``sqrt(n / (n - 1)) t_(n-1, 1-p)``."""
    def to_p(z: float) -> float:
        return float(sps.t.sf(z * math.sqrt((n - 1) / n), n - 1))
    return to_p


def _percentile_position(sorted_dist: np.ndarray, threshold: float, side: str) -> float:
    """Inverse of the linear-interpolation quantile (numpy's and scipy's default) of a sorted
    sample: the largest (``side="max"``) or smallest (``"min"``) q in [0, 1] whose quantile is
    at most / at least `threshold`; -inf / inf when none is."""
    x, last = sorted_dist, sorted_dist.size - 1
    if side == "max":
        k = int(np.searchsorted(x, threshold, side="right"))  # x[:k] <= threshold
        if k == 0:
            return -math.inf
        if k > last:
            return 1.0
        h = (k - 1) + (threshold - x[k - 1]) / (x[k] - x[k - 1])
    else:
        k = int(np.searchsorted(x, threshold, side="left"))  # x[k:] >= threshold
        if k > last:
            return math.inf
        if k == 0:
            return 0.0
        h = k - (x[k] - threshold) / (x[k] - x[k - 1])
    return h / last if last else float(k > 0)


def bca_p_values(dist: np.ndarray, z0: float, a: float, region: Region,
                 to_p: Callable[[float], float] = _normal_p) -> dict[str, Any]:
    """The smallest alpha/2 at which the BCa interval (z0 = a = 0: the percentile one) lies
    wholly inside / outside the claimed region, with its quantiles and constants; `to_p` maps a
    z to a p (t under Hesterberg's expansion). Empty when the distribution is not finite."""
    if dist.size == 0 or not np.all(np.isfinite(dist)):
        return {}
    direction, threshold = region
    x = np.sort(dist)

    def z_at(q: float, upper: bool) -> float:
        """The nominal z whose BCa upper (lower) end sits at percentile q of the bootstrap."""
        g = float(ndtri(min(max(q, 0.0), 1.0))) - z0
        # BCa's adjusted percentile is bounded when a != 0: beyond the bound no level reaches q
        w = g / (1 + a * g) if math.isfinite(g) and 1 + a * g > 0 else math.copysign(math.inf, g)
        return w - z0 if upper else z0 - w

    if direction == "less":  # support: upper end <= thr; refute: lower end > thr
        q = _percentile_position(x, threshold, "max")
        p_support, p_refute = to_p(z_at(q, True)), to_p(z_at(q, False))
    else:  # support: lower end >= thr; refute: upper end < thr
        q = _percentile_position(x, threshold, "min")
        p_support, p_refute = to_p(z_at(q, False)), to_p(z_at(q, True))
    return {"p_support": p_support, "p_refute": p_refute,
            "p_method": "inversion of the bootstrap interval: the smallest one-sided level at "
                        "which it lies wholly inside (support) / outside (refute) the claimed "
                        "region"}


@dataclass(frozen=True)
class Sides:
    """One-sided p-values of a statistic against a boundary b, each the smallest alpha/2 at
    which the CI's end passes b: ``ge``/``le`` that it is >= b / <= b (supporting: a CI end at b
    is inside), ``gt``/``lt`` that it is > b / < b (refuting: strictly outside)."""

    ge: float
    le: float
    gt: float
    lt: float


def mean_bootstrap_t_ci(x: np.ndarray, ci_level: float, n_boot: int,
                        seed: int) -> tuple[tuple[float, float], dict[str, Any]]:
    """Bootstrap-t (studentized) CI of the mean, ``(m - q_hi s, m - q_lo s)`` from the inverted-
    CDF quantiles of ``t* = (m* - m) / s*`` (docs/verdicts.md, "`value`"); unlike the t interval
    it follows skewness."""
    x = np.asarray(x, dtype=float)
    n = x.size
    m, se = float(x.mean()), float(x.std(ddof=1) / math.sqrt(n))
    details: dict[str, Any] = {
        "ci_method": "bootstrap-t (studentized): mean - t*_(1-alpha/2) se, mean - t*_(alpha/2) se",
        "n_boot": int(n_boot), "bootstrap_seed": int(seed)}
    if se == 0:
        details["degenerate"] = "all values equal: the CI is the single value"
        details[INTERVAL_FAILS] = (f"all {n} values equal {verdict_rules.format_number(m)}: a "
                                   "mean's interval has no spread to estimate, and a single "
                                   "value is no CI")
        details["sides"] = lambda b: Sides(float(m < b), float(m > b), float(m <= b),
                                           float(m >= b))
        return (m, m), details
    idx = np.random.default_rng(seed).integers(0, n, size=(n_boot, n))
    xb = x[idx]
    mb = xb.mean(axis=1)
    sb = xb.std(axis=1, ddof=1) / math.sqrt(n)
    with np.errstate(all="ignore"):
        t = (mb - m) / sb
    t = t[~np.isnan(t)]
    alpha = 1.0 - ci_level
    flat = int((sb == 0).sum())
    if flat:
        details["no_spread_resamples"] = flat
    if flat > alpha / 2 * n_boot:
        details[INTERVAL_FAILS] = (
            f"{flat} of {n_boot} bootstrap resamples have no spread (more than α/2 = "
            f"{verdict_rules.format_number(alpha / 2)} of them), so the bootstrap-t's "
            "studentized ends are infinite or undefined: the values are too near constant for "
            "this interval")
    q_lo, q_hi = np.quantile(t, [alpha / 2, 1 - alpha / 2], method="inverted_cdf")
    details["n_dropped_resamples"] = int(n_boot - t.size)
    details["sides"] = functools.partial(_bootstrap_t_sides, np.sort(t), m, se)
    return (float(m - q_hi * se), float(m - q_lo * se)), details


def _bootstrap_t_sides(t: np.ndarray, m: float, se: float, b: float) -> Sides:
    """`Sides` of the bootstrap-t against `b` (`t` sorted), read off its inverted-CDF quantiles:
    the CI's low end ``m - q_(1-a) se`` is >= b when a share of at most a of the t* lies above
    ``(m - b) / se``, and its high end ``m - q_a se`` is <= b when a share below a lies under."""
    c, n = (m - b) / se, t.size
    under, through = np.searchsorted(t, c, side="left"), np.searchsorted(t, c, side="right")
    return Sides(ge=(n - through) / n, le=under / n, gt=(n - under) / n, lt=through / n)
