"""Plain per-seed training, the way peer code trains: the reference the engine is checked
against (tests/test_engine_equivalence.py) and timed against (benchmarks/throughput.py).

One plain model (the engine's own definition, `grokverify.engine.models`, not seed-batched) and
torch's default optimizer implementation per seed, one step at a time; the same split, initial
weights and minibatch order as the engine, so the two must agree to float tolerance. Its
evaluation, threshold steps and divergence check are written here, independently of the engine's
record-keeping.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from grokverify.analysis import parallelogram as P
from grokverify.analysis import representation as R
from grokverify.claim.experiment import ExperimentSpec
from grokverify.engine.data import Batches
from grokverify.engine.datasets import load
from grokverify.engine.models import DataShape, Model, example_losses_of, mean_loss_of
from grokverify.engine.optimizers import OPTIMIZERS, param_groups
from grokverify.engine.tasks import build_dataset, image_split
from grokverify.kinds import MODELS


@dataclass
class PlainRecord:
    seed: int
    steps: list[int] = field(default_factory=list)
    train_acc: list[float] = field(default_factory=list)
    val_acc: list[float] = field(default_factory=list)
    train_loss: list[float] = field(default_factory=list)
    val_loss: list[float] = field(default_factory=list)
    train_step: int | None = None
    val_step: int | None = None


class PlainTrainer:
    """One seed, one plain model, torch's default optimizer."""

    def __init__(self, exp: ExperimentSpec, seed: int, device: str | torch.device = "cpu",
                 dtype: torch.dtype = torch.float32, frozen_embedding: bool = False):
        self.exp, self.seed, self.device = exp, seed, torch.device(device)
        shape, (train_set, val_set) = _plain_data(exp.task, seed, self.device, dtype)
        model = MODELS.implementation(exp.model.kind).for_seed(exp.model, shape, seed)
        self.model: Model = model.to(device=self.device, dtype=dtype)
        emb = [self.model.get_parameter(n) for n in self.model.embedding]
        for param in emb if frozen_embedding else []:
            param.requires_grad_(False)  # the peer's way to freeze a layer
        rest = [p for n, p in self.model.named_parameters() if n not in self.model.embedding]
        groups = {"embedding": emb, "decoder": rest} if emb else {"decoder": rest}
        self.optimizer = OPTIMIZERS[exp.optimizer.name](
            param_groups(exp.optimizer, groups), exp.optimizer, {})
        self.train_set, self.val_set = train_set, val_set
        tr, n_train = exp.training, len(train_set[2])
        full_batch = tr.batch_size is None or tr.batch_size >= n_train
        self.batches = None if full_batch else Batches(
            [seed], n_train, int(tr.batch_size), exp.task.canonical(), self.device)
        self.step = 0
        self.record_ = PlainRecord(seed)

    def train(self, n_steps: int) -> None:
        a, b, y = self.train_set
        pos = None if self.batches is None else self.batches.take(n_steps)[:, 0]
        for k in range(n_steps):
            rows = slice(None) if pos is None else pos[k]
            loss = mean_loss_of(self.model, self.model(a[rows], b[rows]), y[rows])
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
        self.step += n_steps

    @torch.no_grad()
    def evaluate(self) -> tuple[float, float, float, float]:
        out = []
        for a, b, y in (self.train_set, self.val_set):
            losses, correct = example_losses_of(self.model, self.model(a, b), y)
            out.append((correct.double().mean().item(), losses.double().mean().item()))
        (train_acc, train_loss), (val_acc, val_loss) = out
        return train_acc, val_acc, train_loss, val_loss

    def record(self) -> bool:
        tr, rec = self.exp.training, self.record_
        train_acc, val_acc, train_loss, val_loss = self.evaluate()
        assert math.isfinite(train_loss), "the reference diverged"
        rec.steps.append(self.step)
        for name, value in zip(("train_acc", "val_acc", "train_loss", "val_loss"),
                               (train_acc, val_acc, train_loss, val_loss), strict=True):
            getattr(rec, name).append(value)
        if rec.train_step is None and train_acc >= tr.train_threshold:
            rec.train_step = self.step
        if rec.val_step is None and val_acc >= tr.val_threshold:
            rec.val_step = self.step
        return tr.early_stop and rec.train_step is not None and rec.val_step is not None


Rows = tuple[torch.Tensor, torch.Tensor, torch.Tensor]


def _plain_data(task: Any, seed: int, device: torch.device,
                dtype: torch.dtype) -> tuple[DataShape, tuple[Rows, Rows]]:
    """One seed's training and validation rows, built apart from the engine's `SeedData`: an
    image task gets its own table (this seed's training images, then its validation images),
    not the engine's table shared by a batch of seeds."""
    if task.inputs == "images":
        data = load(task.dataset)
        train, val = image_split(task, seed, data.rows("train"), data.rows("test"))
        x = np.concatenate([data.parts["train"][0][train], data.parts["test"][0][val]])
        labels = np.concatenate([data.parts["train"][1][train], data.parts["test"][1][val]])
        table = torch.as_tensor(x / 255.0, device=device, dtype=torch.float32)
        shape = DataShape(p=x.shape[1], vocab=x.shape[1], n_classes=task.classes(), table=table)
        rows = torch.arange(len(labels), device=device)
        y = torch.as_tensor(labels.astype(np.int64), device=device)
        n = len(train)
        return shape, ((rows[:n], torch.zeros_like(rows[:n]), y[:n]),
                       (rows[n:], torch.zeros_like(rows[n:]), y[n:]))
    data_ = build_dataset(task, seed)
    shape = DataShape(p=task.p, vocab=data_.vocab, n_classes=data_.n_classes)
    a, b, y = (torch.as_tensor(v, device=device) for v in (data_.a, data_.b, data_.y))
    train_i = torch.as_tensor(data_.train_idx, device=device)
    val_i = torch.as_tensor(data_.val_idx, device=device)
    return shape, ((a[train_i], b[train_i], y[train_i]), (a[val_i], b[val_i], y[val_i]))


def train_plain(exp: ExperimentSpec, seed: int, dtype: torch.dtype = torch.float32,
                frozen_embedding: bool = False) -> PlainRecord:
    """One seed trained the peer way to the budget, evaluated as the engine evaluates."""
    from grokverify.engine.loop import run_to_budget

    trainer = PlainTrainer(exp, seed, dtype=dtype, frozen_embedding=frozen_embedding)
    run_to_budget(trainer, exp.training)
    return trainer.record_


# ---------------------------------------------------------------- paper 2's measures, one embedding
# at a time in numpy: the definitions the batched probes are checked against


@dataclass(frozen=True)
class PredictedAccuracy:
    """Acc^ over all samples and over the non-training samples, and which samples count."""

    acc_all: np.ndarray | float
    acc_test: np.ndarray | float  # NaN when there are no non-training samples
    reached: np.ndarray  # (..., N) bool: training samples and those one realised step away


def predicted_accuracy(E: np.ndarray, train: np.ndarray | list[int], delta: float = R.DELTA,
                       distance: R.Distance = "norm", normalised: bool = True,
                       ddof: int = 1) -> PredictedAccuracy:
    """Acc^ (App. D; the official `calculate_Dbar` on the realised set, one step), over all
    samples and over the non-training ones (paper 2's validation set). `train`: sample indices
    or a bool mask (N,); a mask (..., N) gives each embedding of a batch its own training set."""
    E = R._as_embedding(E)
    p = E.shape[-2]
    n = P.n_samples(p)
    t = np.asarray(train)
    mask = t if t.dtype == bool and t.ndim > 1 else P.as_mask(p, t)
    if mask.shape[-1] != n:
        raise ValueError(f"a training mask for p = {p} has {n} entries, got {mask.shape[-1]}")
    reached = R.reached_samples(R.realised(E, delta, distance, normalised, ddof), mask, p)
    valid = R._valid(E, normalised, ddof)
    acc_all = np.where(valid, reached.mean(axis=-1), np.nan)
    n_test = (~mask).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        acc_test = np.where(valid & (n_test > 0), (reached & ~mask).sum(axis=-1) / n_test, np.nan)

    def scalar(x: np.ndarray) -> np.ndarray | float:
        return float(x) if np.ndim(x) == 0 else x

    return PredictedAccuracy(acc_all=scalar(acc_all), acc_test=scalar(acc_test), reached=reached)


@dataclass(frozen=True)
class Unimplied:
    """C9: realised parallelograms that the training set does not imply."""

    count: int  # realised and not implied
    realised: int  # realised in all
    implied: int  # implied in all (realised or not)
    share: float  # count / realised (NaN when nothing is realised)
    mask: np.ndarray  # (Q,) bool over P0: realised and not implied


def unimplied_realised(E: np.ndarray, train: np.ndarray | list[int], delta: float = R.DELTA,
                       distance: R.Distance = "norm", chaining: bool = True,
                       normalised: bool = True, ddof: int = 1) -> Unimplied:
    """C9, the "Alexander principle" (Fig. 10): realised parallelograms outside the implied set
    (the paper's P(D) with chaining, P0(D) without), for one embedding (p, d) and its training
    set. Raises on an invalid embedding."""
    E = R._as_embedding(E)
    if E.ndim != 2:
        raise ValueError(f"one embedding (p, d) at a time, got {E.shape}")
    if not bool(R._valid(E, normalised, ddof)):
        raise ValueError("the embedding has no normalised form (a constant dimension or NaN)")
    p = E.shape[0]
    real = R.realised(E, delta, distance, normalised, ddof)
    imp = P.implied(p, train, chaining=chaining)
    out = real & ~imp
    n_real = int(real.sum())
    return Unimplied(count=int(out.sum()), realised=n_real, implied=int(imp.sum()),
                     share=float(out.sum() / n_real) if n_real else float("nan"), mask=out)
