"""Claim × scale → per-(member, arm) seed lists with store keys → trials (chunks still to train)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from grokverify.claim.budget import estimate
from grokverify.claim.experiment import ExperimentSpec
from grokverify.claim.load import LoadedClaim, arm_label
from grokverify.store import Store, process_part, record_keys


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
        return arm_label(self.member, self.arm)

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
            keys = record_keys(exp, seeds, device_type)
            plans.append(ArmPlan(member, arm, exp, seeds, keys))
    return plans


# Work sizing (docs/cluster.md, "Work sizing"): a task lasts at least TASK_MIN_S, so that Ray's
# own cost of a task is noise, and a chunk grows until a step's fixed cost is at most
# BATCH_FIXED_SHARE of it. Durations come from budget.estimate's flops and STEP_COST.
TASK_MIN_S = 30.0
BATCH_FIXED_SHARE = 0.1
# device type -> (fixed seconds a training step, flop/s of its arithmetic per CPU thread or per
# GPU), for sizing only (within ~2x): fitted to the engine on a loaded 2-core EPYC (the toy and
# the p = 31 MLP, 1-16 seeds: 0-1.2 ms and 3-7e10 flop/s) and to the H200 table in
# benchmarks/README.md (paper 1's MLP, 8-512 seeds: ~1.8 ms, ~5e13 flop/s).
STEP_COST: dict[str, tuple[float, float]] = {"cpu": (1e-3, 4e10), "cuda": (1.8e-3, 5e13)}


def shards(device_type: str, threads: int) -> int:
    """Batched models a trial trains side by side: one per CPU thread, one on a GPU."""
    return max(1, threads) if device_type == "cpu" else 1


def _step_cost(device_type: str, threads: int) -> tuple[float, float, int]:
    """(fixed seconds a step, flop/s a shard, shards) of a trial."""
    fixed, rate = STEP_COST["cpu" if device_type == "cpu" else "cuda"]
    return fixed, rate, shards(device_type, threads)


def expected_seconds(exp: ExperimentSpec, n_seeds: int, device_type: str,
                     threads: int = 1) -> float:
    """A trial's expected duration at its full step budget (early stopping only shortens it):
    the steps' fixed cost plus `budget.estimate`'s flops at the device's rate, shards side by
    side."""
    fixed, rate, n_shards = _step_cost(device_type, threads)
    return (exp.training.steps * fixed
            + estimate(exp, n_seeds, n_shards).flops / (rate * n_shards))


def chunk_seeds(exp: ExperimentSpec, most: int, device_type: str, threads: int = 1) -> int:
    """Seeds per trial: the fewest that make a task last at least TASK_MIN_S with the steps'
    fixed cost at most BATCH_FIXED_SHARE of it, at least two a shard (a lone seed trains beside
    a ghost copy) and at most `most` (--chunk-size); docs/cluster.md, "Work sizing"."""
    fixed, _, n_shards = _step_cost(device_type, threads)
    fixed *= exp.training.steps
    for n in range(min(most, 2 * n_shards), most):
        seconds = expected_seconds(exp, n, device_type, threads)
        if seconds >= TASK_MIN_S and fixed <= BATCH_FIXED_SHARE * seconds:
            return n
    return max(1, most)


def pending_trials(claim_id: str, plans: list[ArmPlan], store: Store, chunk_size: int,
                   device_type: str, threads: int = 1) -> list[Trial]:
    """Seeds without a sound record (`Store.has` checks each record's digest), in even chunks
    of at most `chunk_seeds` seeds per arm. Arms with the same resolved experiment share records,
    so a seed is scheduled once."""
    trials: list[Trial] = []
    scheduled: set[str] = set()
    for plan in plans:
        env = tuple(process_part(plan.experiment, device_type).items())
        todo = [(s, k) for s, k in zip(plan.seeds, plan.keys, strict=True)
                if k not in scheduled and not store.has(k)]
        scheduled.update(k for _, k in todo)
        size = chunk_seeds(plan.experiment, chunk_size, device_type, threads) if todo else 1
        for part in _even_parts(todo, -(-len(todo) // size)):
            trials.append(Trial(claim_id, plan.member, plan.arm, plan.experiment,
                                tuple(s for s, _ in part), tuple(k for _, k in part), env))
    return trials


def _even_parts(items: list[tuple[int, str]], n: int) -> list[list[tuple[int, str]]]:
    """`items` in `n` consecutive parts whose sizes differ by at most one (8 seeds at 7 a chunk
    are 4 + 4, not 7 + 1: a lone seed trains beside a ghost copy, at the cost of two)."""
    small, extra = divmod(len(items), max(1, n))
    out, i = [], 0
    for j in range(n):
        size = small + (j < extra)
        out.append(items[i:i + size])
        i += size
    return [part for part in out if part]


def spread(trials: list[Trial], slots: int) -> list[Trial]:
    """The trials cut so that `slots` workers all have one when the seeds allow: the largest
    trial is halved while there are fewer trials than slots. A seed's record does not depend on
    its chunk (docs/determinism.md), so this changes the wall time only."""
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

