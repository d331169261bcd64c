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
from grokverify.tasks import build_dataset

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
        self.n_train, self.batch, self.device = n_train, batch, torch.device(device)
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
        out = out.view(len(self.gens), n_steps, self.batch).transpose(0, 1).contiguous()
        if self.device.type == "cuda":
            return out.pin_memory().to(self.device, non_blocking=True)
        return out.to(self.device)


# Encoded minibatches are prepared this many elements at a time (a block of steps at once).
_BLOCK_ELEMENTS = 1 << 21


class BatchedTrainer:
    """The seeds of one experiment as one batched model, between evaluations.

    Everything that does not change during a run is computed once: the training and validation
    inputs of every seed, encoded by the model (embedding rows with per-seed offsets); full-batch
    training uses them as they are, minibatch training selects a whole block of steps' rows with
    one index operation. A step is forward, per-seed loss, backward (weighted by 1 for a seed that
    trains, 0 for one that diverged), one fused optimizer step; nothing waits for the device. The
    per-step losses stay on the device until `evaluate`, which finds the first non-finite one.
    """

    def __init__(self, exp: ExperimentSpec, seeds: list[int], device: str | torch.device = "cpu"):
        self.exp, self.seeds = exp, list(seeds)
        self.device = device = torch.device(device)
        tr = exp.training
        datasets = [build_dataset(exp.task, s) for s in seeds]
        ref = datasets[0]
        shape = DataShape(p=exp.task.p, vocab=ref.vocab, n_classes=ref.n_classes)
        self.model: BatchedModel = build_model(exp.model, shape, self.seeds).to(device)
        self.optimizer = build_optimizer(exp.optimizer, self.model.param_groups(), device)
        a, b, y = (torch.as_tensor(v, device=device) for v in (ref.a, ref.b, ref.y))
        train_rows = torch.as_tensor(np.stack([d.train_idx for d in datasets]), device=device)
        val_rows = torch.as_tensor(np.stack([d.val_idx for d in datasets]), device=device)
        with torch.no_grad():
            self.train_x, self.train_y = self.model.encode(a[train_rows], b[train_rows]), \
                y[train_rows]
            self.val_x, self.val_y = self.model.encode(a[val_rows], b[val_rows]), y[val_rows]
        s, n_train = train_rows.shape
        full_batch = tr.batch_size is None or tr.batch_size >= n_train
        self.batch = n_train if full_batch else tr.batch_size
        self.batches = None if full_batch else _Batches(
            self.seeds, n_train, self.batch, exp.task.canonical(), device)
        self.seed_index = torch.arange(s, device=device).view(s, 1)
        self.loss_weight = torch.ones(s, device=device)  # 1: trains; 0: diverged, frozen at 0
        self.step = 0
        self._losses: list[Tensor] = []  # per-seed training loss of every step since last eval

    def train(self, n_steps: int) -> None:
        """n_steps optimizer steps for every seed, with no host synchronisation."""
        width = self.train_x[0, 0].numel() or 1
        block = max(1, _BLOCK_ELEMENTS // (len(self.seeds) * self.batch * width))
        done = 0
        while done < n_steps:
            n = min(block, n_steps - done)
            if self.batches is None:
                self._steps(n, None, None)
            else:
                pos = self.batches.take(n)  # (n, S, batch) positions in each seed's train rows
                self._steps(n, self.train_x[self.seed_index, pos],
                            self.train_y[self.seed_index, pos])
            done += n

    def _steps(self, n: int, xs: Tensor | None, ys: Tensor | None) -> None:
        model, optimizer, weight, losses = self.model, self.optimizer, self.loss_weight, \
            self._losses
        x, y = self.train_x, self.train_y
        for k in range(n):
            if xs is not None:
                x, y = xs[k], ys[k]
            loss = model.train_loss(model.forward_encoded(x), y)
            loss.backward(weight)  # d(sum of active seeds' losses): one seed's own gradient
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            losses.append(loss.detach())
        self.step += n

    @torch.no_grad()
    def _metrics(self, x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
        """Per-seed (accuracy, loss) over the given encoded rows (S, n, ...)."""
        loss, correct = self.model.loss(self.model.forward_encoded(x), y)
        return correct.float().mean(dim=1), loss

    @torch.no_grad()
    def evaluate(self) -> np.ndarray:
        """(5, S) on the host, one transfer: train acc, val acc, train loss, val loss, and the
        first step since the last evaluation whose training loss was not finite (-1: none)."""
        train_acc, train_loss = self._metrics(self.train_x, self.train_y)
        val_acc, val_loss = self._metrics(self.val_x, self.val_y)
        if self._losses:
            bad = ~torch.isfinite(torch.stack(self._losses))  # (steps, S)
            first = bad.to(torch.uint8).argmax(dim=0) + (self.step - len(self._losses) + 1)
            first_bad = torch.where(bad.any(dim=0), first, -1)
        else:
            first_bad = torch.full_like(self.loss_weight, -1)
        self._losses.clear()
        return torch.stack([train_acc, val_acc, train_loss, val_loss,
                            first_bad.to(train_acc.dtype)]).cpu().numpy()

    def freeze(self, i: int) -> None:
        """Stop seed i (diverged): zero its parameters and optimizer state, no more gradient."""
        self.loss_weight[i] = 0.0
        reset_seed_state(self.optimizer, i)

    def record(self, results: list[SeedResult]) -> bool:
        """Evaluate, update every seed's record; True when no seed needs more training."""
        tr, step = self.exp.training, self.step
        host = self.evaluate()
        for i, res in enumerate(results):
            if res.done or res.diverged:
                continue
            bad = int(host[4, i])
            if bad >= 0 or not (math.isfinite(host[2, i]) and math.isfinite(host[3, i])):
                res.diverged, res.diverged_step = True, bad if bad >= 0 else step
                res.stopped_step = step
                self.freeze(i)
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


def train_seeds(exp: ExperimentSpec, seeds: list[int], device: str | torch.device = "cpu",
                progress: ProgressFn | None = None) -> list[SeedResult]:
    """Train every seed of one experiment as one batched model; one SeedResult per seed."""
    tr = exp.training
    trainer = BatchedTrainer(exp, seeds, device)
    results = [SeedResult(seed=seed, budget=tr.steps) for seed in seeds]
    trainer.model.train()
    finished = trainer.record(results)
    while trainer.step < tr.steps and not finished:
        step = trainer.step
        trainer.train(min(tr.eval_interval - step % tr.eval_interval, tr.steps - step))
        if trainer.step % tr.eval_interval == 0 or trainer.step == tr.steps:
            finished = trainer.record(results)
        if progress is not None:
            progress(trainer.step, tr.steps)
    return results


def timed_train(exp: ExperimentSpec, seeds: list[int], device: str = "cpu",
                progress: ProgressFn | None = None) -> tuple[list[SeedResult], float]:
    start = time.perf_counter()
    results = train_seeds(exp, seeds, device, progress)
    return results, time.perf_counter() - start
