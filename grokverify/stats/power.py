"""Seed planning: P(SUPPORTED) at each candidate seed count, from the claim's own criterion run on
``n_sim`` simulated experiments (the real run's CI and verdict rule). Without ``effect`` each
arm's pilot seeds are resampled (the pilot taken as the truth, optimistic after a lucky draw);
a declared ``effect`` (a ratio of medians, `TIME_CRITERIA`) draws log-normal times with a
common sigma fitted to the pilot. Paired criteria are planned paired. Everything derives from
``seed``; methods, defaults and Monte Carlo error: docs/verdicts.md, "Seed planning".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pydantic
from scipy import optimize
from scipy import stats as sps

from grokverify.claim.criteria import CriterionSpec
from grokverify.stats.base import ArmSample, Verdict, judge
from grokverify.stats.common import Pairing, pair_arms, take_seeds
from grokverify.stats.simulate import (
    censored_lognormal,
    correlated_pair,
    lognormal_times,
    make_arm,
    pearson_for_spearman,
)

TIME_CRITERIA = ("survival_compare", "cox_hazard_ratio", "scalar_compare", "equivalence")
DEFAULT_SIGMA = 0.5
DEFAULT_BASELINE_MEDIAN = 1000.0


@dataclass
class PowerPlan:
    """Estimated P(SUPPORTED) per candidate seed count, and the smallest adequate one."""

    criterion: str
    method: str  # "pilot_resampling" | "declared_effect"
    candidates: list[int]
    power: list[float]
    mc_se: list[float]
    target_power: float
    n_sim: int
    seed: int
    recommended: int | None
    assumptions: dict[str, Any] = field(default_factory=dict)
    explanation: str = ""
    refuted: list[float] = field(default_factory=list)  # P(REFUTED) per candidate

    @property
    def curve(self) -> list[tuple[int, float]]:
        """(seeds per arm, estimated power) pairs."""
        return list(zip(self.candidates, self.power, strict=True))


def fit_censored_lognormal(arms: Sequence[ArmSample]) -> tuple[list[float], float]:
    """Maximum-likelihood log-normal fit to right-censored times: one log-median per arm and a
    common log-scale sd. Raises ValueError when the data cannot identify them (an arm without an
    event, or fewer than two distinct observed values overall)."""
    logs = [np.log(np.maximum(a.values, 1e-9)) for a in arms]
    obs = [a.observed for a in arms]
    if not arms or any(not o.any() for o in obs):
        raise ValueError("the pilot needs an event in every arm to fit a log-normal")
    observed_logs = np.concatenate([y[o] for y, o in zip(logs, obs, strict=True)])
    if np.unique(observed_logs).size < 2:
        raise ValueError("the pilot needs two distinct event times to fit a log-normal")
    start_sd = max(float(np.std(observed_logs, ddof=1)), 0.05)
    start = [float(np.mean(y[o])) for y, o in zip(logs, obs, strict=True)] + [math.log(start_sd)]

    def nll(theta: np.ndarray) -> float:
        s = math.exp(theta[-1])
        total = 0.0
        for mu, y, o in zip(theta[:-1], logs, obs, strict=True):
            z = (y - mu) / s
            total -= float(np.sum(sps.norm.logpdf(z[o]) - math.log(s)))
            total -= float(np.sum(sps.norm.logsf(z[~o])))
        return total

    res = optimize.minimize(nll, np.asarray(start), method="Nelder-Mead",
                            options={"xatol": 1e-6, "fatol": 1e-9, "maxiter": 4000})
    mus, sigma = [float(m) for m in res.x[:-1]], float(math.exp(res.x[-1]))
    if not (res.success and math.isfinite(sigma) and all(map(math.isfinite, mus))):
        raise ValueError(f"the censored log-normal fit did not converge ({res.message})")
    return mus, sigma


def is_paired(params: pydantic.BaseModel, arm_names: Sequence[str]) -> bool:
    """Whether the criterion compares two arms paired by seed (its ``paired`` param)."""
    return len(arm_names) == 2 and bool(getattr(params, "paired", False))


def _pilot_pairing(pilot: dict[str, ArmSample] | None,
                   arm_names: Sequence[str]) -> Pairing | None:
    """The pilot's two arms paired by seed, or None (no pilot, or no pairs)."""
    if pilot is None or any(a not in pilot for a in arm_names):
        return None
    pairing = pair_arms(pilot[arm_names[0]], pilot[arm_names[1]], True)
    return pairing if pairing.paired else None


def _vary_seed(params: pydantic.BaseModel, value: int) -> pydantic.BaseModel:
    if "bootstrap_seed" in type(params).model_fields:
        return params.model_copy(update={"bootstrap_seed": int(value)})
    return params


def _budget_of(pilot: dict[str, ArmSample]) -> float:
    cens = [a.values[~a.observed] for a in pilot.values() if (~a.observed).any()]
    return float(max(c.max() for c in cens)) if cens else math.inf


def plan_seeds(params: CriterionSpec,
               pilot: dict[str, ArmSample] | None = None, effect: float | None = None,
               candidates: Sequence[int] = (4, 8, 12, 16, 20), target_power: float = 0.8,
               n_sim: int = 200, seed: int = 0, *, sigma: float | None = None,
               baseline_median: float | None = None, budget: float | None = None,
               eval_interval: float | None = None, correlation: float | None = None,
               ) -> PowerPlan:
    """P(SUPPORTED) at each candidate seed count (per arm) and the smallest that reaches
    `target_power`: from a declared ``effect`` (`sigma`, ..., `correlation` override what the
    pilot or the defaults give), else by resampling the pilot (whole seed pairs when paired)."""
    sizes = [int(n) for n in candidates]
    if not sizes or min(sizes) < 1:
        raise ValueError("candidates must be positive seed counts")
    if not 0 < target_power < 1:
        raise ValueError("target_power must be in (0, 1)")
    if n_sim < 1:
        raise ValueError("n_sim must be >= 1")
    arm_names = params.arms()
    paired = is_paired(params, arm_names)
    pairing = _pilot_pairing(pilot, arm_names) if paired else None
    if effect is not None:
        if not effect > 0:
            raise ValueError("effect is a ratio of medians and must be > 0")
        if paired and correlation is None:
            correlation = (pearson_for_spearman(pairing.correlation) if pairing is not None
                           and math.isfinite(pairing.correlation) else 0.0)
        draw, assumptions = _declared_effect(params.name, arm_names, pilot, float(effect),
                                             sigma, baseline_median, budget, eval_interval,
                                             correlation if paired else None)
        method = "declared_effect"
    elif pilot is not None:
        missing = [a for a in arm_names if a not in pilot or pilot[a].n == 0]
        if missing:
            raise ValueError(f"the pilot has no seeds for arm(s) {missing}")
        draw, assumptions = (_pair_resampling(arm_names, pairing) if pairing is not None
                             else _pilot_resampling(arm_names, pilot))
        method = "pilot_resampling"
    else:
        raise ValueError("give a pilot (to resample) or a declared effect (to simulate)")

    power, se, refuted = [], [], []
    for n in sizes:
        rng = np.random.default_rng([int(seed), n])
        batches = draw(rng, n, n_sim)
        boot_seeds = rng.integers(0, 2**31 - 1, size=n_sim)
        hits = against = 0
        for i in range(n_sim):
            arms = {name: batch[i] for name, batch in batches.items()}
            res = judge(_vary_seed(params, int(boot_seeds[i])), arms)
            hits += res.verdict == Verdict.SUPPORTED
            against += res.verdict == Verdict.REFUTED
        p = hits / n_sim
        power.append(p)
        refuted.append(against / n_sim)
        se.append(math.sqrt(p * (1 - p) / n_sim))
    recommended = next((n for n, p in zip(sizes, power, strict=True) if p >= target_power), None)
    plan = PowerPlan(params.name, method, sizes, power, se, float(target_power), int(n_sim),
                     int(seed), recommended, assumptions, refuted=refuted)
    plan.explanation = _explain(plan)
    return plan


Draw = Any  # Callable[[np.random.Generator, int, int], dict[str, list[ArmSample]]]


def _pilot_resampling(arm_names: list[str], pilot: dict[str, ArmSample],
                      ) -> tuple[Draw, dict[str, Any]]:
    def draw(rng: np.random.Generator, n: int, n_sim: int) -> dict[str, list[ArmSample]]:
        out = {}
        for name in arm_names:
            arm = pilot[name]
            idx = rng.integers(0, arm.n, size=(n_sim, n))
            out[name] = [take_seeds(arm, row, renumber=True) for row in idx]
        return out

    assumptions = {"pilot_seeds": {a: pilot[a].n for a in arm_names},
                   "pilot_events": {a: pilot[a].events for a in arm_names}}
    return draw, assumptions


def _pair_resampling(arm_names: list[str], pairing: Pairing) -> tuple[Draw, dict[str, Any]]:
    """Whole seeds of the pilot resampled, each keeping its values in both arms."""
    def draw(rng: np.random.Generator, n: int, n_sim: int) -> dict[str, list[ArmSample]]:
        idx = rng.integers(0, pairing.n_pairs, size=(n_sim, n))
        return {a.name: [take_seeds(a, row, renumber=True) for row in idx]
                for a in (pairing.base, pairing.treat)}

    assumptions = {"pilot_seeds": {a: pairing.n_pairs for a in arm_names},
                   "pilot_events": {a.name: a.events for a in (pairing.base, pairing.treat)},
                   "paired": True, "pilot_pairs": pairing.n_pairs,
                   "within_pair_correlation": pairing.correlation}
    return draw, assumptions


def _declared_effect(criterion_name: str, arm_names: list[str],
                     pilot: dict[str, ArmSample] | None, effect: float, sigma: float | None,
                     baseline_median: float | None, budget: float | None,
                     eval_interval: float | None, correlation: float | None,
                     ) -> tuple[Draw, dict[str, Any]]:
    """Log-normal arms; independent, or (`correlation` given: a paired criterion) seed i's log
    times in the two arms from a Gaussian copula with that correlation."""
    if criterion_name not in TIME_CRITERIA or len(arm_names) != 2:
        raise ValueError(f"a declared effect applies to two-arm time-to-threshold criteria "
                         f"({', '.join(TIME_CRITERIA)}), not {criterion_name!r} with arms "
                         f"{arm_names}; resample a pilot instead")
    base_name, treat_name = arm_names
    source = "defaults"
    fit_note = None
    med, sd = DEFAULT_BASELINE_MEDIAN, DEFAULT_SIGMA
    if pilot is not None and base_name in pilot and pilot[base_name].n:
        fit_arms = [pilot[a] for a in arm_names if a in pilot and pilot[a].n]
        try:
            mus, sd = fit_censored_lognormal(fit_arms)
            med = math.exp(mus[0])
            source = "pilot (censored log-normal MLE)"
        except ValueError as exc:
            fit_note = f"pilot fit failed ({exc}); defaults used"
            med, sd = DEFAULT_BASELINE_MEDIAN, DEFAULT_SIGMA
    if sigma is not None:
        sd = float(sigma)
    if baseline_median is not None:
        med = float(baseline_median)
    cap = float(budget) if budget is not None else (
        _budget_of(pilot) if pilot is not None else math.inf)

    arms = ((base_name, med), (treat_name, med * effect))

    def draw(rng: np.random.Generator, n: int, n_sim: int) -> dict[str, list[ArmSample]]:
        if correlation is None:
            times = [censored_lognormal(rng, (n_sim, n), m, sd, cap, eval_interval)
                     for _, m in arms]
        else:
            zs = correlated_pair(rng, (n_sim, n), correlation)
            times = [lognormal_times(z, m, sd, cap, eval_interval)
                     for z, (_, m) in zip(zs, arms, strict=True)]
        return {name: [make_arm(name, t[i], o[i]) for i in range(n_sim)]
                for (name, _), (t, o) in zip(arms, times, strict=True)}

    assumptions: dict[str, Any] = {
        "effect": effect, "baseline_median": med, "treated_median": med * effect,
        "sigma": sd, "budget": cap, "eval_interval": eval_interval, "source": source,
        "paired": correlation is not None, "correlation": correlation}
    if fit_note:
        assumptions["note"] = fit_note
    return draw, assumptions


def _explain(plan: PowerPlan) -> str:
    a = plan.assumptions
    curve = ", ".join(f"n={n}: {p:.2f}" for n, p in plan.curve)
    if plan.method == "pilot_resampling":
        seeds = ", ".join(f"{k}: {v}" for k, v in a["pilot_seeds"].items())
        what = ("whole seeds of the pilot's pairs were resampled with replacement to n seeds "
                "per arm, each keeping its values in both arms (paired analysis, within-pair "
                f"correlation {a['within_pair_correlation']:.2f})"
                if a.get("paired") else
                f"each arm's pilot seeds ({seeds}) were resampled with replacement to n seeds")
        how = (f"{what}, taking the pilot's own effect, spread, censoring and ties as the truth "
               "(optimistic when the pilot's effect is a lucky draw)")
    else:
        budget = "no budget" if math.isinf(a["budget"]) else f"censoring at {a['budget']:g} steps"
        how = (f"log-normal times with log-scale sd {a['sigma']:.3g} (from the {a['source']}), "
               f"baseline median {a['baseline_median']:.4g} steps and treated median = "
               f"baseline x {a['effect']:g}, {budget}"
               + (f", rounded up to every {a['eval_interval']:g} steps" if a["eval_interval"]
                  else "")
               + (f", seed i's log times in the two arms correlated at {a['correlation']:.2f} "
                  "(Gaussian copula; paired analysis)" if a.get("paired") else "")
               + (f"; {a['note']}" if a.get("note") else ""))
    pick = (f"the smallest candidate reaching {plan.target_power:.0%} is n={plan.recommended} "
            "seeds per arm" if plan.recommended is not None else
            f"no candidate reaches {plan.target_power:.0%}: more seeds, a larger effect or a "
            "less demanding claim are needed")
    return (f"Power is the probability that {plan.criterion} returns SUPPORTED, estimated by "
            f"running the criterion itself on {plan.n_sim} simulated experiments per candidate "
            f"seed count (seed {plan.seed}), where {how}. Estimated power: {curve} (Monte Carlo "
            f"standard error up to {max(plan.mc_se):.2f}); {pick}.")
