"""`grokverify pilot`: a few seeds of each arm at the scale's budget (stored under the real
run's keys, so `run` reuses them) and at a longer one, then each arm's regime and the budget and
seeds a decidable run would need (docs/pilot.md)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from statistics import median
from typing import Any

from rich.console import Console

from grokverify.claim.load import LoadedClaim, arm_label
from grokverify.run.outcome import ClaimRun, RunOptions
from grokverify.run.pipeline import run_claims
from grokverify.stats.checks import CheckResult
from grokverify.stats.power import plan_seeds
from grokverify.store import Store

PLAN_CANDIDATES = (4, 8, 16, 32)
PLAN_SIMS = 40


@dataclass
class Regime:
    """One arm at one budget: how many of its seeds fit and generalised, and when."""

    arm: str
    budget: int
    seeds: int
    fit: int
    generalised: int
    fit_step: float  # median over the seeds that fit (NaN: none)
    val_step: float  # median over the seeds that generalised (NaN: none)

    def words(self) -> str:
        def at(step: float) -> str:
            return "—" if math.isnan(step) else f"median step {step:g}"
        return (f"{self.arm} at {self.budget} steps: {self.fit}/{self.seeds} fit "
                f"({at(self.fit_step)}), {self.generalised}/{self.seeds} generalise "
                f"({at(self.val_step)})")


@dataclass
class Pilot:
    """What the pilot found and what it proposes."""

    at_budget: list[Regime]
    stretched: list[Regime]
    checks: list[CheckResult]
    verdict: str
    proposal: list[str] = field(default_factory=list)


def stretched(loaded: LoadedClaim, scale: str, factor: int) -> LoadedClaim:
    """The claim with every experiment of `scale` trained `factor` times as long."""
    def longer(exp: Any) -> Any:
        training = exp.training.model_copy(update={"steps": exp.training.steps * factor})
        return exp.model_copy(update={"training": training})
    by_scale = {**loaded.by_scale, scale: {m: {a: longer(e) for a, e in arms.items()}
                                           for m, arms in loaded.by_scale[scale].items()}}
    return LoadedClaim(loaded.claim, loaded.path, by_scale, loaded.lines)


def _regimes(run: ClaimRun, store: Store) -> list[Regime]:
    out = []
    for plan in run.plans:
        summaries = [store.get(k)["result"]["summary"] for k in plan.keys]  # type: ignore[index]
        fit = [s["train_step"] for s in summaries if s["train_step"] is not None]
        gen = [s["val_step"] for s in summaries if s["val_step"] is not None]
        out.append(Regime(arm_label(plan.member, plan.arm), plan.experiment.training.steps,
                          len(summaries), len(fit), len(gen),
                          float(median(fit)) if fit else math.nan,
                          float(median(gen)) if gen else math.nan))
    return out


def _budget_proposal(at: list[Regime], longer: list[Regime], budget: int,
                     interval: int) -> list[str]:
    """A budget at which every arm's median seed generalises, from the longer pilot."""
    short = [r for r in at if 2 * r.generalised < r.seeds]
    if not short:
        return [f"Every arm generalises in at least half its seeds within the budget "
                f"({budget} steps)."]
    names = ", ".join(r.arm for r in short)
    if not longer:
        return [f"{names} generalise in fewer than half their seeds within {budget} steps; "
                "run the pilot with --stretch to see what budget they need."]
    late = [r for r in longer if r.arm in {s.arm for s in short}]
    never = [r.arm for r in late if 2 * r.generalised < r.seeds]
    if never:
        return [f"{names} generalise in fewer than half their seeds within {budget} steps, "
                f"and {', '.join(never)} still do at {late[0].budget} steps: at this scale the "
                "regime the claim needs may be out of reach; a much longer budget, or the "
                f"paper's setting, may be needed: try --stretch {4 * longer[0].budget // budget} "
                "(a claim whose arm cannot generalise here is NOT TESTED by an event_share "
                "check)."]
    need = 1.5 * max(r.val_step for r in late)
    need = int(math.ceil(need / interval) * interval)
    return [f"{names} generalise in fewer than half their seeds within {budget} steps; in the "
            f"longer pilot ({late[0].budget} steps) their median seed does by step "
            f"{max(r.val_step for r in late):g}: a budget of about {need} steps (1.5 times "
            "that) would let the criterion see the event."]


def _seed_proposal(loaded: LoadedClaim, run: ClaimRun) -> list[str]:
    if run.family is not None or not run.samples:
        return []
    try:
        plan = plan_seeds(loaded.claim.criterion, run.samples[next(iter(run.samples))],
                          candidates=PLAN_CANDIDATES, n_sim=PLAN_SIMS)
    except ValueError as exc:
        return [f"Seeds: not estimated ({exc})."]
    power = ", ".join(f"{n}: {p:.2f}" for n, p in zip(plan.candidates, plan.power, strict=True))
    rec = (f"{plan.recommended} seeds per arm reach {plan.target_power:.0%} power"
           if plan.recommended else f"no candidate up to {PLAN_CANDIDATES[-1]} seeds per arm "
                                    f"reaches {plan.target_power:.0%} power at this budget")
    return [f"Seeds, from this pilot by resampling ({PLAN_SIMS} simulations a size): "
            f"P(SUPPORTED) {power}; {rec}."]


def run_pilot(loaded: LoadedClaim, opts: RunOptions, seeds: int, factor: int,
              console: Console) -> Pilot:
    """Train the pilot (what the store lacks), then read each arm's regime and propose."""
    opts = replace(opts, seeds=seeds)
    (run,) = run_claims([loaded], opts, console, write=False)
    store = Store(opts.store)
    at = _regimes(run, store)
    longer: list[Regime] = []
    if factor > 1:
        (long_run,) = run_claims([stretched(loaded, opts.scale, factor)], opts, console,
                                 write=False)
        longer = _regimes(long_run, store)
    exp = run.plans[0].experiment
    budget, interval = exp.training.steps, exp.training.eval_interval
    proposal = (_budget_proposal(at, longer, budget, interval) + _seed_proposal(loaded, run))
    checks = [c for member in run.checks.values() for c in member]
    return Pilot(at, longer, checks, run.verdict.value, proposal)
