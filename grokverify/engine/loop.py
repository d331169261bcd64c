"""The seed-batched training loop: the seeds of one experiment train as one batched model per
CPU worker (`Shard`), each from its own streams, so a seed's record does not depend on its
batch-mates (docs/determinism.md). Between evaluations nothing syncs with the host (losses and
probe values wait on the device) but a `sampling.WeightedBatches` recomputing its weights.

A step: loss and gradients (weight 1 per training seed, 0 per diverged or ghost seed), gradient
probes, the optimizer step, interventions' `after_step`, update probes, parameter probes. With n
torch threads the seeds train as n single-threaded shards side by side: small per-seed kernels
split badly across threads, and one thread sums a seed's numbers the same way in any chunk.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import torch
from torch import Tensor

from grokverify.claim.budget import EVAL_ROWS
from grokverify.claim.experiment import ExperimentSpec, TrainingSpec
from grokverify.engine import numerics
from grokverify.engine.batched import BatchedModel, batch_members
from grokverify.engine.data import Batches, SeedData
from grokverify.engine.fast import fast_path_for
from grokverify.engine.interventions import Intervention
from grokverify.engine.optimizers import build_optimizer, reset_seed_state
from grokverify.engine.probes import ProbeContext, Spectra
from grokverify.engine.record import EVAL_CURVES, SeedRecord
from grokverify.engine.sampling import Sampler
from grokverify.kinds import INTERVENTIONS, PROBES

ProgressFn = Callable[[int, int], None]

_BLOCK_ELEMENTS = 1 << 21  # minibatch operands gathered this many elements at a time
_EVAL_ROWS = EVAL_ROWS  # rows per seed evaluated in one forward pass (the same for any S)


class Shard:
    """Some seeds of one experiment as one batched model, with their data, optimizer, records,
    probes and interventions (see the module docstring)."""

    def __init__(self, exp: ExperimentSpec, seeds: list[int], device: torch.device,
                 dtype: torch.dtype = torch.float32, fast: bool = True):
        self.exp, self.device = exp, device
        tr = exp.training
        members = batch_members(seeds)
        self.n_real = len(seeds)
        self.data = SeedData(exp.task, members, device)
        self.model = BatchedModel(exp.model, self.data.shape, seeds, dtype,
                                  fast_path_for(exp.model, fast)).to(device)
        s = self.model.n_seeds
        self.records = [SeedRecord(seed, tr.steps, tr.train_threshold, tr.val_threshold,
                                   tr.early_stop) for seed in members]
        n_train = self.data.n_train
        full_batch = tr.batch_size is None or tr.batch_size >= n_train
        self.batch = n_train if full_batch else int(tr.batch_size)  # type: ignore[arg-type]
        self.batches: Sampler | None = None if full_batch else Batches(
            members, n_train, self.batch, exp.task.canonical(), device)
        self.seed_index = torch.arange(s, device=device).view(s, 1)
        self.loss_weight = torch.ones(s, device=device, dtype=dtype)
        self.loss_weight[self.n_real:] = 0.0  # the ghost never trains
        self.step = 0
        self._losses: list[Tensor] = []  # per-seed training loss of every step since last eval
        self.interventions: list[Intervention] = [INTERVENTIONS.of(iv)(iv)
                                                  for iv in exp.interventions]
        for iv in self.interventions:
            iv.after_init(self)
        self.optimizer = build_optimizer(exp.optimizer, self.model.param_groups())
        self._after_step = [iv for iv in self.interventions
                            if type(iv).after_step is not Intervention.after_step]
        self._param_probes = [p for p in exp.probes if p.reads == "params"]
        self._grad_probes = [p for p in exp.probes if p.reads == "grads"]
        self._update_probes = [p for p in exp.probes if p.reads == "update"]
        self._points: list[tuple[int, dict[str, Tensor]]] = []
        self._measure(self._param_probes, 0)
        self.model.train()

    # ------------------------------------------------------------ training

    def train(self, n_steps: int) -> None:
        """n_steps optimizer steps for every seed. Minibatch positions are taken a block of steps
        at a time, never past the next multiple of a sampler's `horizon` h, so weights it
        recomputes at steps 0, h, 2h, ... come from the parameters after that many updates."""
        block = max(1, _BLOCK_ELEMENTS // (self.model.n_seeds * self.batch * 3))
        done = 0
        while done < n_steps:
            n = min(block, n_steps - done)
            if self.batches is not None and self.batches.horizon:
                n = min(n, self.batches.horizon - self.step % self.batches.horizon)
            if self.batches is None:
                a, b, y = self.data.train
                for _ in range(n):
                    self._step(a, b, y)
            else:
                pos = self.batches.take(n)  # (n, S, batch) positions in each seed's rows
                a, b, y = (t[self.seed_index, pos] for t in self.data.train)
                for k in range(n):
                    self._step(a[k], b[k], y[k])
            done += n

    def _step(self, a: Tensor, b: Tensor, y: Tensor) -> None:
        state = self.step
        self._losses.append(self.model.loss_and_grads(a, b, y, self.loss_weight))
        if self._grad_probes:
            self._measure(self._grad_probes, state)
        before = self._before_update(state)
        self.optimizer.step()
        self.step = state + 1
        for iv in self._after_step:
            iv.after_step(self, self.step)
        if before:
            self._measure(self._update_probes, state, before)
        if self._param_probes:
            self._measure(self._param_probes, self.step)

    def note(self, step: int, values: dict[str, Tensor]) -> None:
        """Per-seed values, (S,) each, recorded as curves at `step` the way probe points are
        (moved to the records at the next evaluation, up to each seed's last good step)."""
        self._points.append((step, values))

    def _before_update(self, state: int) -> dict[str, Tensor]:
        """The parameters an update probe due at `state` compares with (empty: none due)."""
        roles = {r for p in self._update_probes if state % p.every == 0 for r in p.roles_needed()}
        return {r: self.model.role_param(r).detach().clone() for r in roles}

    def _measure(self, probes: list[Any], step: int,
                 before: dict[str, Tensor] | None = None) -> None:
        due = [p for p in probes if step % p.every == 0]
        if due:
            ctx = ProbeContext(self.data.train, before or {}, self.batch, Spectra(self.model))
            with torch.no_grad():
                values: dict[str, Tensor] = {}
                for spec in due:
                    got = PROBES.of(spec)(self.model, spec, ctx)
                    if sorted(got) != sorted(spec.curves()):
                        raise RuntimeError(f"probe {spec.name} returned curves {sorted(got)}, "
                                           f"its spec declares {sorted(spec.curves())}")
                    values.update(got)
            self._points.append((step, values))

    # ------------------------------------------------------------ evaluation

    @torch.no_grad()
    def _metrics(self, a: Tensor, b: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
        """Per-seed (accuracy, loss) over the given rows (S, n), in blocks of `_EVAL_ROWS` rows
        per seed; neither the blocks nor the averaging depends on S."""
        model, n = self.model, y.shape[1]
        parts = [model.example_losses(model(a[:, i:i + _EVAL_ROWS], b[:, i:i + _EVAL_ROWS]),
                                      y[:, i:i + _EVAL_ROWS]) for i in range(0, n, _EVAL_ROWS)]
        losses, correct = (torch.cat(part, dim=1) for part in zip(*parts, strict=True))
        # accuracy as a count over n in float64: 19/20 must reach a threshold of 0.95 (in
        # float32 the mean is 0.94999999)
        return correct.sum(dim=1).double() / n, losses.mean(dim=1)

    @torch.no_grad()
    def evaluate(self) -> dict[str, np.ndarray]:
        """Each seed's evaluation figures on the host, in one transfer: the four evaluation
        curves and the first step since the last evaluation whose training loss was not
        finite (-1: none)."""
        train_acc, train_loss = self._metrics(*self.data.train)
        val_acc, val_loss = self._metrics(*self.data.val)
        if self._losses:
            bad = ~torch.isfinite(torch.stack(self._losses))  # (steps, S)
            first = bad.to(torch.uint8).argmax(dim=0) + (self.step - len(self._losses) + 1)
            first_bad = torch.where(bad.any(dim=0), first, -1)
        else:
            first_bad = torch.full_like(train_acc, -1)
        self._losses.clear()
        host = torch.stack([train_acc, val_acc, train_loss.double(), val_loss.double(),
                            first_bad.double()]).cpu().numpy()
        return {**dict(zip(EVAL_CURVES, host[:4], strict=True)), "first_bad": host[4]}

    def record(self) -> bool:
        """Evaluate and update every seed's record; True when no real seed needs training."""
        values = self.evaluate()
        for i, rec in enumerate(self.records):
            if rec.finished:
                continue
            good = rec.evaluation(self.step, *(float(values[k][i]) for k in EVAL_CURVES),
                                  int(values["first_bad"][i]))
            if not good:
                self.loss_weight[i] = 0.0
                reset_seed_state(self.optimizer, i, self.model.seed_shapes)
        for iv in self.interventions:
            iv.on_eval(self, self.step, values)
        self._flush_points()
        return all(rec.finished for rec in self.records[:self.n_real])

    def _flush_points(self) -> None:
        """Move probe points to the records (one transfer), up to each seed's last good step."""
        if not self._points:
            return
        points = [(step, name, value) for step, values in self._points
                  for name, value in values.items()]
        self._points.clear()
        table = torch.stack([value.double() for _, _, value in points]).cpu().numpy()
        for i, rec in enumerate(self.records):
            limit = rec.last_good_step()
            for j, (step, name, _) in enumerate(points):
                if step <= limit:
                    rec.add(name, step, float(table[j, i]))

    def results(self) -> list[dict[str, Any]]:
        return [rec.to_dict() for rec in self.records[:self.n_real]]


def cpu_workers(device: torch.device, n_seeds: int) -> int:
    """Shards trained side by side: one per torch thread on a CPU (each single-threaded), one
    on a GPU."""
    if device.type != "cpu":
        return 1
    return max(1, min(torch.get_num_threads(), n_seeds))


def _keep_freed_memory() -> None:
    """Let glibc keep freed blocks instead of returning them to the OS: a step frees and
    reallocates the same activation buffers, and with the default trimming every step pays
    thousands of page faults for them (~5-10% of a p = 97 step). Process-wide, set once."""
    global _MALLOC_TUNED
    if _MALLOC_TUNED:
        return
    _MALLOC_TUNED = True
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-1, 1 << 30)  # M_TRIM_THRESHOLD: keep up to 1 GiB free at the heap top
        libc.mallopt(-3, 1 << 25)  # M_MMAP_THRESHOLD: blocks up to 32 MiB come from the heap
    except (OSError, AttributeError):  # not glibc: nothing to tune
        pass


_MALLOC_TUNED = False


class SeedTrainer:
    """Every seed of one experiment: one `Shard` per CPU worker (see the module docstring).
    `close` restores torch's thread count."""

    def __init__(self, exp: ExperimentSpec, seeds: list[int], device: str | torch.device = "cpu",
                 workers: int | None = None, dtype: torch.dtype = torch.float32,
                 fast: bool = True):
        device = torch.device(device)
        if device.type == "cpu":
            numerics.pin()
            _keep_freed_memory()
        n = cpu_workers(device, len(seeds)) if workers is None else max(1, workers)
        shards = [[int(s) for s in part] for part in np.array_split(np.asarray(seeds), n)]
        shards = [s for s in shards if s]
        self._threads = torch.get_num_threads()
        self._pool: ThreadPoolExecutor | None = None
        if device.type == "cpu":
            torch.set_num_threads(1)
        if len(shards) > 1:
            self._pool = ThreadPoolExecutor(len(shards), initializer=torch.set_num_threads,
                                            initargs=(1,))
        try:
            self.shards = self._each_of(
                lambda part: Shard(exp, part, device, dtype, fast), shards)
        except BaseException:
            self.close()
            raise

    def _each_of(self, fn: Callable[[Any], Any], items: list[Any]) -> list[Any]:
        if self._pool is None:
            return [fn(item) for item in items]
        return list(self._pool.map(fn, items))

    def train(self, n_steps: int) -> None:
        self._each_of(lambda shard: shard.train(n_steps), self.shards)

    def record(self) -> bool:
        return all(self._each_of(Shard.record, self.shards))

    def results(self) -> list[dict[str, Any]]:
        return [r for shard in self.shards for r in shard.results()]

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None
        torch.set_num_threads(self._threads)

    def __enter__(self) -> SeedTrainer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def run_to_budget(trainer: Any, tr: TrainingSpec, progress: ProgressFn | None = None) -> None:
    """Drive a trainer (`train(n)`, `record() -> all finished`; the engine's, or a test's
    reference) to the budget, evaluating at step 0, every eval_interval steps and at the budget,
    until every seed is done."""
    finished = trainer.record()
    step = 0
    while step < tr.steps and not finished:
        chunk = min(tr.eval_interval - step % tr.eval_interval, tr.steps - step)
        trainer.train(chunk)
        step += chunk
        if step % tr.eval_interval == 0 or step == tr.steps:
            finished = trainer.record()
        if progress is not None:
            progress(step, tr.steps)


def train_seeds(exp: ExperimentSpec, seeds: list[int], device: str | torch.device = "cpu",
                progress: ProgressFn | None = None, dtype: torch.dtype = torch.float32,
                fast: bool = True) -> list[dict[str, Any]]:
    """Train every seed of one experiment; one record result per seed, in the order of
    `seeds`."""
    with SeedTrainer(exp, seeds, device, dtype=dtype, fast=fast) as trainer:
        run_to_budget(trainer, exp.training, progress)
        return trainer.results()
