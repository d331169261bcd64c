"""A batch of seeds' data on the device: each seed's training and validation pairs (its own
split), and the stream of minibatch positions (its own order): by default random permutations
(`Batches`; an intervention may replace it with another `grokverify.engine.sampling.Sampler`)."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import torch
from torch import Tensor

from grokverify.claim.tasks import AnyTask, ImageTaskSpec, TaskSpec
from grokverify.engine.datasets import load
from grokverify.engine.models import DataShape
from grokverify.engine.streams import to_device, torch_generator
from grokverify.engine.tasks import build_dataset, image_split

Pairs = tuple[Tensor, Tensor, Tensor]  # a, b, y, each (S, n)


class SeedData:
    """Operands and labels of every seed's training and validation rows, (S, n) each. For an
    image task the first "operand" is a row of the images every seed shares (`DataShape.table`,
    held once, not once per seed) and the second is 0."""

    def __init__(self, task: AnyTask, seeds: list[int], device: torch.device):
        self.shape, self.train, self.val = _BUILDERS[task.inputs](task, seeds, device)

    @property
    def n_train(self) -> int:
        return int(self.train[0].shape[1])


def _pairs(task: TaskSpec, seeds: list[int],
           device: torch.device) -> tuple[DataShape, Pairs, Pairs]:
    datasets = [build_dataset(task, s) for s in seeds]
    ref = datasets[0]
    shape = DataShape(p=task.p, vocab=ref.vocab, n_classes=ref.n_classes)
    a, b, y = (torch.as_tensor(v, device=device) for v in (ref.a, ref.b, ref.y))
    train = torch.as_tensor(np.stack([d.train_idx for d in datasets]), device=device)
    val = torch.as_tensor(np.stack([d.val_idx for d in datasets]), device=device)
    return shape, (a[train], b[train], y[train]), (a[val], b[val], y[val])


def _images(task: ImageTaskSpec, seeds: list[int],
            device: torch.device) -> tuple[DataShape, Pairs, Pairs]:
    """The images any of the seeds uses, once, as float32 in [0, 1] (pixel / 255), and each
    seed's rows of that table."""
    data = load(task.dataset)
    splits = [image_split(task, s, data.rows("train"), data.rows("test")) for s in seeds]
    used = {part: np.unique(np.concatenate([split[i] for split in splits]))
            for i, part in enumerate(("train", "test"))}
    x = np.concatenate([data.parts[part][0][used[part]] for part in used])
    labels = np.concatenate([data.parts[part][1][used[part]] for part in used]).astype(np.int64)
    offset = {"train": 0, "test": len(used["train"])}
    table = torch.as_tensor(x, device=device).float().div_(255.0)
    shape = DataShape(p=table.shape[1], vocab=table.shape[1], n_classes=task.classes(),
                      table=table)
    y = torch.as_tensor(labels, device=device)

    def rows(part: str, i: int) -> Pairs:
        pos = torch.as_tensor(np.stack([offset[part] + np.searchsorted(used[part], split[i])
                                        for split in splits]), device=device)
        return pos, torch.zeros_like(pos), y[pos]

    return shape, rows("train", 0), rows("test", 1)


_BUILDERS: dict[str, Callable[..., tuple[DataShape, Pairs, Pairs]]] = {
    "pairs": _pairs,
    "images": _images,
}


class Batches:
    """Per-seed minibatch positions: a stream of concatenated random permutations of each seed's
    training rows, cut into consecutive batches (batches may straddle epochs)."""

    horizon: int | None = None  # a `Sampler` whose draws never depend on training

    def __init__(self, seeds: list[int], n_train: int, batch: int, context: str,
                 device: torch.device):
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
        out = out.view(len(self.gens), n_steps, self.batch).transpose(0, 1).contiguous()
        return to_device(out, self.device)
