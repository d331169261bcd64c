"""Claim × scale → per-(member, arm) seed lists with store keys → trials (chunks still to train)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from grokverify.spec import ExperimentSpec, LoadedClaim
from grokverify.store import Store, process_part, record_key


@dataclass(frozen=True)
class ArmPlan:
    """Every seed one arm of one family member needs at one scale, and the store key of each."""

    member: str  # "" for a claim without a family
    arm: str
    experiment: ExperimentSpec
    seeds: tuple[int, ...]
    keys: tuple[str, ...]


@dataclass(frozen=True)
class Trial:
    """One unit of work: a chunk of seeds of one arm, trained as one batched model."""

    claim_id: str
    member: str
    arm: str
    experiment: ExperimentSpec
    seeds: tuple[int, ...]
    keys: tuple[str, ...]
    environment: tuple[tuple[str, str], ...]  # the keys' process part (store.process_part), as
    # items: the worker must have the same

    @property
    def label(self) -> str:
        return f"{self.member}/{self.arm}" if self.member else self.arm

    @property
    def seed_steps(self) -> int:
        return len(self.seeds) * self.experiment.training.steps


def plan_arms(loaded: LoadedClaim, scale: str, device_type: str,
              n_seeds: int | None = None) -> list[ArmPlan]:
    """Every arm's seeds and store keys; `device_type` "cpu" or "cuda" ("cuda:1" is "cuda")."""
    device_type = device_type.split(":")[0]
    n = n_seeds or loaded.scale_seeds(scale)
    seeds = tuple(range(n))
    plans = []
    for member, arms in loaded.members(scale).items():
        for arm, exp in arms.items():
            keys = tuple(record_key(exp, s, device_type) for s in seeds)
            plans.append(ArmPlan(member, arm, exp, seeds, keys))
    return plans


def pending_trials(claim_id: str, plans: list[ArmPlan], store: Store, chunk_size: int,
                   device_type: str) -> list[Trial]:
    """Seeds without a sound record (missing, or damaged: `Store.has` checks each record's
    digest), in chunks of at most chunk_size per arm. Arms with the same resolved experiment
    share records, so a seed is scheduled once."""
    trials: list[Trial] = []
    scheduled: set[str] = set()
    for plan in plans:
        env = tuple(process_part(plan.experiment, device_type).items())
        todo = [(s, k) for s, k in zip(plan.seeds, plan.keys, strict=True)
                if k not in scheduled and not store.has(k)]
        scheduled.update(k for _, k in todo)
        for i in range(0, len(todo), chunk_size):
            part = todo[i:i + chunk_size]
            trials.append(Trial(claim_id, plan.member, plan.arm, plan.experiment,
                                tuple(s for s, _ in part), tuple(k for _, k in part), env))
    return trials


def spread(trials: list[Trial], slots: int) -> list[Trial]:
    """The trials cut so that `slots` workers all have one when the seeds allow: the largest
    trial is halved while there are fewer trials than slots. A seed's record does not depend on
    the chunk it trains in (docs/determinism.md), so this changes the wall time only: a
    one-arm claim of 10 seeds trains on both cores of a 2-core machine, not on one."""
    out = list(trials)
    while len(out) < slots:
        big = max(range(len(out)), key=lambda i: len(out[i].seeds), default=None)
        if big is None or len(out[big].seeds) < 2:
            break
        t = out.pop(big)
        half = (len(t.seeds) + 1) // 2
        out[big:big] = [replace(t, seeds=t.seeds[:half], keys=t.keys[:half]),
                        replace(t, seeds=t.seeds[half:], keys=t.keys[half:])]
    return out

