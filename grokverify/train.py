"""The seed-batched training loop.

All seeds of one arm train as one batched model. Each seed has its own split, initialisation
and minibatch order (from its own named random streams), so seed i's curve does not depend on
which other seeds share its batch. Nothing syncs with the host between evaluations: divergence
is tracked on the device and acted on at the next evaluation.

Where the time goes, and what is done about it (benchmarks/README.md has the figures):
- data: every seed's training/validation inputs are encoded once (models.BatchedModel.encode);
  full-batch training reuses them every step, minibatch training gathers a whole block of
  steps' rows with one index operation (positions from the seeds' own generators);
- a step: `model.loss_and_grads` (forward, per-seed loss, backward weighted 1 per training
  seed and 0 per diverged one: no masking ops; gradients set, not accumulated, so no
  zero_grad), one fused optimizer kernel per parameter group, called directly for Adam/AdamW
  (optim.Stepper: no per-step bookkeeping in Python); the per-step losses stay on the device
  and are checked for NaN/inf at the next evaluation;
- evaluation: all seeds in one forward over the encoded rows, one transfer to the host;
- CPU threads: with n torch threads the seeds are split into n shards trained side by side by
  single-threaded workers (`SeedTrainer`): small per-seed operations do not split well across
  threads, and a thread waiting at a barrier for a core another process holds stalls them all;
- memory: glibc is told to keep freed blocks, so reallocated activations do not page-fault.

`PlainTrainer` / `train_plain` train one seed the way peer code does (plain nn.Module, torch's
default optimizer), as the reference for tests/test_engine_equivalence.py and the benchmarks.
"""

from __future__ import annotations

import ctypes
import math
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import Tensor

from grokverify.models import BatchedModel, DataShape, build_model, plain_model
from grokverify.optim import Stepper, build_optimizer, build_plain_optimizer, reset_seed_state
from grokverify.rng import torch_generator
from grokverify.spec import ExperimentSpec, TrainingSpec
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
        """The record's result: named curves (each with its own steps) and the summary."""
        curves = {name: {"steps": list(self.steps), "values": list(getattr(self, name))}
                  for name in ("train_acc", "val_acc", "train_loss", "val_loss")}
        return {"seed": self.seed, "budget": self.budget, "curves": curves,
                "summary": {**self.summary(), "done": self.done}}


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

_METRIC_ROWS = 5  # train acc, val acc, train loss, val loss, first non-finite step (-1: none)
_EVAL_ROWS = 1 << 12  # rows per seed evaluated in one forward pass (the same for any S)


def _update_result(res: SeedResult, step: int, m: np.ndarray, tr: TrainingSpec) -> bool:
    """Record one evaluation (a column of `_METRIC_ROWS` values) into a seed's result; False
    when the seed diverged (a non-finite training loss since the last evaluation, or a
    non-finite loss now): it is then marked diverged and nothing else is recorded."""
    bad = int(m[4])
    if bad >= 0 or not (math.isfinite(m[2]) and math.isfinite(m[3])):
        res.diverged, res.diverged_step = True, bad if bad >= 0 else step
        res.stopped_step = step
        return False
    res.steps.append(step)
    res.train_acc.append(float(m[0]))
    res.val_acc.append(float(m[1]))
    res.train_loss.append(_finite_or_none(float(m[2])))
    res.val_loss.append(_finite_or_none(float(m[3])))
    res.stopped_step = step
    if res.train_step is None and m[0] >= tr.train_threshold:
        res.train_step = step
    if res.val_step is None and m[1] >= tr.val_threshold:
        res.val_step = step
    res.done = tr.early_stop and res.train_step is not None and res.val_step is not None
    return True


class BatchedTrainer:
    """Some seeds of one experiment as one batched model (one shard of a `SeedTrainer`).

    Everything that does not change during a run is computed once: the training and validation
    inputs of every seed, encoded by the model; full-batch training uses them as they are,
    minibatch training selects a whole block of steps' rows with one index operation. A step is
    `model.loss_and_grads` (forward, per-seed loss, backward weighted by 1 for a seed that
    trains, 0 for one that diverged), one fused optimizer step; nothing waits for the device. The
    per-step losses stay on the device until `evaluate`, which finds the first non-finite one.
    """

    def __init__(self, exp: ExperimentSpec, seeds: list[int], device: str | torch.device = "cpu"):
        self.exp, self.seeds = exp, list(seeds)
        self.device = device = torch.device(device)
        if device.type == "cpu":
            _keep_freed_memory()
        tr = exp.training
        datasets = [build_dataset(exp.task, s) for s in seeds]
        ref = datasets[0]
        shape = DataShape(p=exp.task.p, vocab=ref.vocab, n_classes=ref.n_classes)
        self.model: BatchedModel = build_model(exp.model, shape, self.seeds).to(device)
        self.optimizer = build_optimizer(exp.optimizer, self.model.param_groups(), device)
        self.optimizer_step = Stepper(self.optimizer)
        a, b, y = (torch.as_tensor(v, device=device) for v in (ref.a, ref.b, ref.y))
        train_rows = torch.as_tensor(np.stack([d.train_idx for d in datasets]), device=device)
        val_rows = torch.as_tensor(np.stack([d.val_idx for d in datasets]), device=device)
        with torch.no_grad():
            self.train_x = self.model.encode(a[train_rows], b[train_rows])
            self.train_y = y[train_rows]
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
        self.results = [SeedResult(seed=seed, budget=tr.steps) for seed in self.seeds]
        self.model.train()

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
        model, step, weight, losses = self.model, self.optimizer_step, self.loss_weight, \
            self._losses
        x, y = self.train_x, self.train_y
        for k in range(n):
            if xs is not None and ys is not None:
                x, y = xs[k], ys[k]
            # .grad = d(sum of active seeds' losses): each seed its own gradient, set (not
            # accumulated) by loss_and_grads, so no zero_grad
            losses.append(model.loss_and_grads(x, y, weight))
            step()
        self.step += n

    @torch.no_grad()
    def _metrics(self, x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
        """Per-seed (accuracy, loss) over the given encoded rows (S, n, ...), all seeds in one
        forward pass per block of `_EVAL_ROWS` rows (bounding the activations). Neither the
        blocks nor the averaging depends on S: a seed's figures are the same in any batch."""
        model, n = self.model, y.shape[1]
        parts = [model.example_losses(model.forward_encoded(x[:, i:i + _EVAL_ROWS]),
                                      y[:, i:i + _EVAL_ROWS]) for i in range(0, n, _EVAL_ROWS)]
        losses, correct = (torch.cat(part, dim=1) for part in zip(*parts, strict=True))
        return correct.float().mean(dim=1), losses.mean(dim=1)

    @torch.no_grad()
    def evaluate(self) -> np.ndarray:
        """(_METRIC_ROWS, S) on the host in one transfer: train acc, val acc, train loss, val
        loss, and the first step since the last evaluation whose training loss was not finite."""
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
        reset_seed_state(self.optimizer, i, self.model.seed_shapes)

    def record(self) -> bool:
        """Evaluate, update every seed's record; True when no seed needs more training."""
        host = self.evaluate()
        for i, res in enumerate(self.results):
            if not (res.done or res.diverged) and \
                    not _update_result(res, self.step, host[:, i], self.exp.training):
                self.freeze(i)
        return all(r.done or r.diverged for r in self.results)


def cpu_workers(device: str | torch.device, n_seeds: int) -> int:
    """How many shards of seeds train side by side: on a CPU, one per intra-op thread torch was
    given (each shard then runs single-threaded), so the cores work on separate seeds instead of
    splitting every small operation; on a GPU, one."""
    if torch.device(device).type != "cpu":
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
    """Every seed of one experiment: one `BatchedTrainer` per shard of seeds.

    On a CPU with n torch threads the seeds are split into up to n shards trained side by side
    by single-threaded workers (each core on its own seeds; no thread waits at a barrier for a
    core another process holds). A lone shard runs single-threaded too: a multi-threaded kernel
    may split a reduction or a matmul differently, and seed i's results must be bit-identical
    whichever seeds share its chunk (tests/test_train.py). `close` restores the thread count.
    One shard on a GPU.
    """

    def __init__(self, exp: ExperimentSpec, seeds: list[int], device: str | torch.device = "cpu",
                 workers: int | None = None):
        device = torch.device(device)
        n = cpu_workers(device, len(seeds)) if workers is None else max(1, workers)
        shards = [[int(s) for s in part] for part in np.array_split(np.asarray(seeds), n)]
        shards = [s for s in shards if s]
        self._threads = torch.get_num_threads()
        self._pool: ThreadPoolExecutor | None = None
        if device.type == "cpu":
            torch.set_num_threads(1)  # also for one shard: see the class docstring
        if len(shards) > 1:
            self._pool = ThreadPoolExecutor(len(shards), initializer=torch.set_num_threads,
                                            initargs=(1,))
        try:
            self.shards = [BatchedTrainer(exp, shard, device) for shard in shards]
        except BaseException:
            self.close()
            raise

    @property
    def results(self) -> list[SeedResult]:
        return [r for shard in self.shards for r in shard.results]

    def _each(self, fn: Callable[[BatchedTrainer], Any]) -> list[Any]:
        if self._pool is None:
            return [fn(shard) for shard in self.shards]
        return list(self._pool.map(fn, self.shards))

    def train(self, n_steps: int) -> None:
        self._each(lambda shard: shard.train(n_steps))

    def record(self) -> bool:
        return all(self._each(BatchedTrainer.record))

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None
        torch.set_num_threads(self._threads)

    def __enter__(self) -> SeedTrainer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class PlainTrainer:
    """One seed trained the way peer code does it: a plain `nn.Module` (nn.Embedding +
    nn.Linear) and torch's default optimizer, one step at a time; the reference the engine is
    checked (tests/test_engine_equivalence.py) and timed (benchmarks/throughput.py) against.
    Same split, initial weights (seed i of a batched model) and minibatch order as the engine."""

    def __init__(self, exp: ExperimentSpec, seed: int, device: str | torch.device = "cpu"):
        self.exp, self.seed, self.device = exp, seed, torch.device(device)
        tr = exp.training
        data = build_dataset(exp.task, seed)
        shape = DataShape(p=exp.task.p, vocab=data.vocab, n_classes=data.n_classes)
        self.model = plain_model(build_model(exp.model, shape, [seed]), 0).to(self.device)
        self.optimizer = build_plain_optimizer(exp.optimizer, self.model.param_groups())
        a, b, y = (torch.as_tensor(v, device=self.device) for v in (data.a, data.b, data.y))
        tr_rows, va_rows = (torch.as_tensor(r, device=self.device)
                            for r in (data.train_idx, data.val_idx))
        self.train_abY = a[tr_rows], b[tr_rows], y[tr_rows]
        self.val_abY = a[va_rows], b[va_rows], y[va_rows]
        n_train = len(tr_rows)
        full_batch = tr.batch_size is None or tr.batch_size >= n_train
        self.batches = None if full_batch else _Batches(
            [seed], n_train, tr.batch_size, exp.task.canonical(), self.device)
        self.step = 0
        self.results = [SeedResult(seed=seed, budget=tr.steps)]

    def train(self, n_steps: int) -> None:
        model, optimizer = self.model, self.optimizer
        a, b, y = self.train_abY
        pos = None if self.batches is None else self.batches.take(n_steps)[:, 0]
        for k in range(n_steps):
            if pos is None:
                loss = model.loss(model(a, b), y)
            else:
                rows = pos[k]
                loss = model.loss(model(a[rows], b[rows]), y[rows])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        self.step += n_steps

    @torch.no_grad()
    def evaluate(self) -> np.ndarray:
        out = []
        for a, b, y in (self.train_abY, self.val_abY):
            logits = self.model(a, b)
            out.append(((self.model.predict(logits) == y).float().mean().item(),
                        self.model.loss(logits, y).item()))
        (train_acc, train_loss), (val_acc, val_loss) = out
        return np.array([train_acc, val_acc, train_loss, val_loss, -1.0])

    def record(self) -> bool:
        res = self.results[0]
        if not (res.done or res.diverged):
            _update_result(res, self.step, self.evaluate(), self.exp.training)
        return res.done or res.diverged


def _run(trainer: SeedTrainer | PlainTrainer, tr: TrainingSpec,
         progress: ProgressFn | None) -> None:
    """Train to the budget, evaluating every eval_interval steps, until every seed is done."""
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
                progress: ProgressFn | None = None) -> list[SeedResult]:
    """Train every seed of one experiment as one batched model (one per CPU worker, see
    `SeedTrainer`); one SeedResult per seed, in the order of `seeds`."""
    with SeedTrainer(exp, seeds, device) as trainer:
        _run(trainer, exp.training, progress)
        return trainer.results


def train_plain(exp: ExperimentSpec, seed: int, device: str | torch.device = "cpu",
                progress: ProgressFn | None = None) -> SeedResult:
    """One seed the peer way (`PlainTrainer`), recorded exactly as `train_seeds` records it."""
    trainer = PlainTrainer(exp, seed, device)
    _run(trainer, exp.training, progress)
    return trainer.results[0]

