"""`grokverify plan`: how many seeds a claim needs for the target power, from the seeds already in
the store (a pilot) or from a declared effect."""

from __future__ import annotations

from dataclasses import dataclass

from grokverify.claim.load import LoadedClaim
from grokverify.run.trials import plan_arms
from grokverify.stats.arms import arm_sample
from grokverify.stats.base import ArmSample
from grokverify.stats.decidable import budget_bound
from grokverify.stats.power import PowerPlan, plan_seeds
from grokverify.store import Store

MAX_PILOT_SEEDS = 256


@dataclass
class ClaimPlan:
    pilot_seeds: int  # seeds per arm found in the store (0 without a pilot)
    members: dict[str, PowerPlan]  # "" for a claim without a family
    bounds: dict[str, str]  # member -> why its budget bounds it short of its region


def pilot_samples(loaded: LoadedClaim, scale: str, store: Store,
                  device: str) -> tuple[int, dict[str, dict[str, ArmSample]]]:
    """The longest run of seeds 0..n-1 that every arm of every member has in the store."""
    plans = plan_arms(loaded, scale, device, MAX_PILOT_SEEDS)
    n = min((next((i for i, k in enumerate(p.keys) if not store.has(k)), len(p.keys))
             for p in plans), default=0)
    extra = loaded.claim.criterion.metrics_needed()
    samples: dict[str, dict[str, ArmSample]] = {}
    if n == 0:
        return 0, samples
    for p in plans:
        records = [store.get(k) for k in p.keys[:n]]
        samples.setdefault(p.member, {})[p.arm] = arm_sample(
            p.arm, records, loaded.claim.metric, extra)  # type: ignore[arg-type]
    return n, samples


def plan_claim(loaded: LoadedClaim, scale: str, store: Store, device: str,
               effect: float | None, target_power: float, candidates: list[int],
               n_sim: int, seed: int = 0) -> ClaimPlan:
    if effect is not None and loaded.claim.metric.kind != "time":
        raise ValueError(f"{loaded.claim.id}: a declared effect simulates times to an event, "
                         f"but metric {loaded.claim.metric.name!r} is a {loaded.claim.metric.kind}"
                         " metric; run a pilot and plan from the store instead (no --effect)")
    n, pilot = pilot_samples(loaded, scale, store, device)
    if n == 0 and effect is None:
        raise ValueError(f"{loaded.claim.id}: no pilot seeds in the store at scale {scale!r}; "
                         "run the claim first or pass --effect")
    members = list(pilot) if pilot else list(loaded.members(scale))
    exp = next(iter(next(iter(loaded.members(scale).values())).values()))
    plans = {}
    for member in members:
        plans[member] = plan_seeds(
            loaded.claim.criterion, pilot.get(member), effect,
            candidates, target_power, n_sim, seed, budget=float(exp.training.steps),
            eval_interval=float(exp.training.eval_interval))
    bounds = {m: why for m in members
              if (why := budget_bound(loaded.claim.criterion, pilot.get(m, {})))}
    return ClaimPlan(n, plans, bounds)
