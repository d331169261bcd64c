"""The seed-batched training loop.

All seeds of one arm train as one batched model. Each seed has its own split, initialisation
and minibatch order (from its own named random streams), so seed i's curve does not depend on
which other seeds share its batch. Nothing syncs with the host between evaluations: divergence
is tracked on the device and acted on at the next evaluation.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import torch
from torch import Tensor

from grokverify.models import BatchedModel, DataShape, build_model
from grokverify.optim import build_optimizer, reset_seed_state
from grokverify.rng import torch_generator
from grokverify.spec import ExperimentSpec
from grokverify.tasks import Dataset, build_dataset

ProgressFn = Callable[[int, int], None]


@dataclass
class SeedResult:
    """One seed's curves and summary: the payload of a store record."""

    seed: int
    budget: int
    steps: list[int] = field(default_factory=list)
    train_acc: list[float] = field(default_factory=list)
    val_acc: list[float] = field(default_factory=list)
    train_loss: list[float | None] = field(default_factory=list)
    val_loss: list[float | None] = field(default_factory=list)
    train_step: int | None = None  # first eval step with train accuracy >= τ_train
    val_step: int | None = None  # first eval step with val accuracy >= τ_val
    diverged: bool = False
    diverged_step: int | None = None  # first step whose loss was NaN/inf
    stopped_step: int = 0  # last recorded step (budget, early stop or divergence)
    done: bool = False  # both thresholds reached (early stop froze the record here)

    @property
    def gap(self) -> int | None:
        if self.train_step is None or self.val_step is None:
            return None
        return self.val_step - self.train_step

    def summary(self) -> dict[str, Any]:
        return {
            "seed": self.seed, "budget": self.budget, "train_step": self.train_step,
            "val_step": self.val_step, "gap": self.gap, "diverged": self.diverged,
            "diverged_step": self.diverged_step, "stopped_step": self.stopped_step,
            "final_train_acc": self.train_acc[-1] if self.train_acc else None,
            "final_val_acc": self.val_acc[-1] if self.val_acc else None,
            "final_train_loss": self.train_loss[-1] if self.train_loss else None,
            "final_val_loss": self.val_loss[-1] if self.val_loss else None,
        }

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "summary": self.summary()}


def _finite_or_none(x: float) -> float | None:
    return x if math.isfinite(x) else None


class _Batches:
    """Per-seed minibatch positions: a stream of concatenated random permutations of each seed's
    training rows, cut into consecutive batches (batches may straddle epochs)."""

    def __init__(self, seeds: list[int], n_train: int, batch: int, context: str, device: Any):
        self.gens = [torch_generator(s, "order", context) for s in seeds]
        self.n_train, self.batch, self.device = n_train, batch, device
        self.buffer = torch.empty((len(seeds), 0), dtype=torch.long)
        self.epochs_per_refill = max(1, math.ceil(64 * batch / n_train))

    def take(self, n_steps: int) -> Tensor:
        """Positions for the next n_steps steps: (n_steps, S, batch) on the device."""
        need = n_steps * self.batch
        while self.buffer.shape[1] < need:
            fresh = torch.stack([
                torch.cat([torch.randperm(self.n_train, generator=g)
                           for _ in range(self.epochs_per_refill)]) for g in self.gens])
            self.buffer = torch.cat([self.buffer, fresh], dim=1)
        out, self.buffer = self.buffer[:, :need], self.buffer[:, need:]
        return out.view(len(self.gens), n_steps, self.batch).transpose(0, 1).to(self.device)


@dataclass
class _Data:
    a: Tensor  # (N,) all pairs
    b: Tensor
    y: Tensor
    train_rows: Tensor  # (S, n_train) per-seed training rows
    val_rows: Tensor  # (S, n_val)


def _stack_data(datasets: list[Dataset], device: torch.device) -> _Data:
    ref = datasets[0]
    return _Data(
        a=torch.as_tensor(ref.a, device=device), b=torch.as_tensor(ref.b, device=device),
        y=torch.as_tensor(ref.y, device=device),
        train_rows=torch.as_tensor(np.stack([d.train_idx for d in datasets]), device=device),
        val_rows=torch.as_tensor(np.stack([d.val_idx for d in datasets]), device=device))


@torch.no_grad()
def _evaluate(model: BatchedModel, data: _Data, rows: Tensor) -> tuple[Tensor, Tensor]:
    """Per-seed (accuracy, loss) over the given rows (S, n)."""
    out = model(data.a[rows], data.b[rows])
    loss, correct = model.loss(out, data.y[rows])
    return correct.float().mean(dim=1), loss


def train_seeds(exp: ExperimentSpec, seeds: list[int], device: str | torch.device = "cpu",
                progress: ProgressFn | None = None) -> list[SeedResult]:
    """Train every seed of one experiment as one batched model; one SeedResult per seed."""
    device = torch.device(device)
    tr = exp.training
    datasets = [build_dataset(exp.task, s) for s in seeds]
    ref = datasets[0]
    shape = DataShape(p=exp.task.p, vocab=ref.vocab, n_classes=ref.n_classes)
    model = build_model(exp.model, shape, seeds).to(device)
    optimizer = build_optimizer(exp.optimizer, model.param_groups(), device)
    data = _stack_data(datasets, device)
    n_train = data.train_rows.shape[1]
    full_batch = tr.batch_size is None or tr.batch_size >= n_train
    batch = n_train if full_batch else tr.batch_size
    batches = None if full_batch else _Batches(seeds, n_train, batch, exp.task.canonical(), "cpu")

    s = len(seeds)
    results = [SeedResult(seed=seed, budget=tr.steps) for seed in seeds]
    active = torch.ones(s, dtype=torch.bool, device=device)  # not diverged
    first_bad = torch.full((s,), -1, dtype=torch.long, device=device)

    def record(step: int) -> bool:
        """Evaluate, update every seed's record; True when no seed needs more training."""
        train_acc, train_loss = _evaluate(model, data, data.train_rows)
        val_acc, val_loss = _evaluate(model, data, data.val_rows)
        host = torch.stack([train_acc, val_acc, train_loss, val_loss,
                            first_bad.to(train_acc.dtype)]).cpu().numpy()
        for i, res in enumerate(results):
            if res.done or res.diverged:
                continue
            bad = int(host[4, i])
            if bad >= 0 or not (math.isfinite(host[2, i]) and math.isfinite(host[3, i])):
                res.diverged, res.diverged_step = True, bad if bad >= 0 else step
                res.stopped_step = step
                active[i] = False
                reset_seed_state(optimizer, i)
                continue
            res.steps.append(step)
            res.train_acc.append(float(host[0, i]))
            res.val_acc.append(float(host[1, i]))
            res.train_loss.append(_finite_or_none(float(host[2, i])))
            res.val_loss.append(_finite_or_none(float(host[3, i])))
            res.stopped_step = step
            if res.train_step is None and host[0, i] >= tr.train_threshold:
                res.train_step = step
            if res.val_step is None and host[1, i] >= tr.val_threshold:
                res.val_step = step
            res.done = tr.early_stop and res.train_step is not None and res.val_step is not None
        return all(r.done or r.diverged for r in results)

    model.train()
    finished = record(0)
    step = 0
    while step < tr.steps and not finished:
        chunk = min(tr.eval_interval - step % tr.eval_interval, tr.steps - step)
        positions = batches.take(chunk) if batches is not None else None
        for k in range(chunk):
            if positions is None:
                rows = data.train_rows
            else:
                rows = torch.gather(data.train_rows, 1, positions[k])
            out = model(data.a[rows], data.b[rows])
            loss, _ = model.loss(out, data.y[rows])
            bad_now = ~torch.isfinite(loss) & active & (first_bad < 0)
            first_bad = torch.where(bad_now, step + k + 1, first_bad)
            total = torch.where(active, loss, torch.zeros_like(loss)).sum()
            optimizer.zero_grad(set_to_none=True)
            total.backward()
            optimizer.step()
        step += chunk
        if step % tr.eval_interval == 0 or step == tr.steps:
            finished = record(step)
        if progress is not None:
            progress(step, tr.steps)
    return results


def timed_train(exp: ExperimentSpec, seeds: list[int], device: str = "cpu",
                progress: ProgressFn | None = None) -> tuple[list[SeedResult], float]:
    start = time.perf_counter()
    results = train_seeds(exp, seeds, device, progress)
    return results, time.perf_counter() - start
