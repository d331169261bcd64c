"""Interventions: changes to training at declared points (specs in
`grokverify.catalog.interventions`), as hooks the loop calls; the loop knows none by name.

Hooks (all optional): `after_init(shard)` once the seeds are initialised, before the optimizer
exists; `after_step(shard, step)` after each update (`step` = updates so far);
`on_eval(shard, step, values)` at each evaluation with each seed's evaluation figures
(name -> host array over seeds). An intervention acting on a seed records the step in that
seed's `events`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import numpy as np
import torch

from grokverify.catalog.interventions import (
    FreezeEmbeddingsSpec,
    InterventionSpec,
    RescaleEmbeddingSpec,
)
from grokverify.engine.batched import BatchedModel
from grokverify.engine.probes import sigma_max_of
from grokverify.engine.record import SeedRecord
from grokverify.registry import registrar


class Shard(Protocol):
    """What a hook sees of the loop's shard: its batched model, its optimizer (absent in
    `after_init`, which runs before it is built) and one record per seed in it."""

    model: BatchedModel
    optimizer: torch.optim.Optimizer
    records: list[SeedRecord]


class Intervention:
    def __init__(self, spec: InterventionSpec):
        self.spec = spec

    def after_init(self, shard: Shard) -> None:
        pass

    def after_step(self, shard: Shard, step: int) -> None:
        pass

    def on_eval(self, shard: Shard, step: int, values: dict[str, np.ndarray]) -> None:
        pass


INTERVENTIONS: dict[str, Callable[[Any], Intervention]] = {}


intervention = registrar(INTERVENTIONS, "intervention")  # @intervention("name") on a class


@intervention("freeze_embeddings")
class FreezeEmbeddings(Intervention):
    """From a step, E stops training for every seed (`requires_grad` off: no gradient, no
    update, as a plain model with a frozen embedding). From a per-seed condition, a seed's E is
    kept at its value from the evaluation at which the condition held: restored after every
    update (its neighbours in the batch train on; their updates never depend on it)."""

    spec: FreezeEmbeddingsSpec

    def __init__(self, spec: FreezeEmbeddingsSpec):
        super().__init__(spec)
        self.frozen: torch.Tensor | None = None  # (S, 1, ...) mask of seeds held fixed
        self.saved: torch.Tensor | None = None

    def _freeze_all(self, shard: Shard, step: int) -> None:
        shard.model.leaf(shard.model.role("E")).requires_grad_(False)
        for rec in shard.records:
            rec.events.setdefault(self.spec.name, step)

    def after_init(self, shard: Shard) -> None:
        if self.spec.from_step == 0:
            self._freeze_all(shard, 0)

    def after_step(self, shard: Shard, step: int) -> None:
        if self.spec.from_step is not None and step == self.spec.from_step:
            self._freeze_all(shard, step)
        elif self.frozen is not None:
            emb = shard.model.param(shard.model.role("E"))
            with torch.no_grad():
                emb.copy_(torch.where(self.frozen, self.saved, emb))

    def on_eval(self, shard: Shard, step: int, values: dict[str, np.ndarray]) -> None:
        when = self.spec.when
        if when is None:
            return
        curve = values[when.curve]
        holds = curve >= when.at_least if when.at_least is not None else curve <= when.at_most
        emb = shard.model.param(shard.model.role("E"))
        new = [i for i, rec in enumerate(shard.records)
               if holds[i] and self.spec.name not in rec.events and not rec.finished]
        if not new:
            return
        mask = torch.zeros(emb.shape[0], dtype=torch.bool, device=emb.device)
        mask[new] = True
        mask = mask.view(-1, *([1] * (emb.dim() - 1)))
        with torch.no_grad():
            if self.frozen is None:
                self.frozen, self.saved = mask, emb.detach().clone()
            else:
                self.saved = torch.where(mask, emb.detach(), self.saved)
                self.frozen = self.frozen | mask
        for i in new:
            shard.records[i].events[self.spec.name] = step


@intervention("rescale_embedding")
class RescaleEmbedding(Intervention):
    """E ← factor · E, or E ← E · target / σmax(E) per seed (target a number, or the seed's own
    σmax(W): paper 1's σmax-matched initialisation), before training."""

    spec: RescaleEmbeddingSpec

    def after_init(self, shard: Shard) -> None:
        model = shard.model
        emb = model.param(model.role("E"))
        s = emb.shape[0]
        with torch.no_grad():
            if self.spec.factor is not None:
                scale = torch.full((s,), self.spec.factor, dtype=torch.float64,
                                   device=emb.device)
            else:
                target = sigma_max_of(model.param(model.role("W"))) \
                    if self.spec.sigma_max == "W" else float(self.spec.sigma_max)  # type: ignore[arg-type]
                scale = target / sigma_max_of(emb)
            emb.mul_(scale.to(emb.dtype).view(s, *([1] * (emb.dim() - 1))))
        for rec in shard.records:
            rec.events[self.spec.name] = 0
