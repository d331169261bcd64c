"""Interventions: changes to training at declared points (specs in
`grokverify.claim.interventions`), as hooks the loop calls; the loop knows none by name.

Hooks (all optional): `after_init(shard)` once the seeds are initialised, before the optimizer
exists; `after_step(shard, step)` after each update (`step` = updates so far);
`on_eval(shard, step, values)` at each evaluation with each seed's evaluation figures
(name -> host array over seeds). An intervention acting on a seed records the step in that
seed's `events`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import numpy as np
import torch

from grokverify.claim.interventions import (
    AdaptiveLRRatioSpec,
    FreezeEmbeddingsSpec,
    GradientSamplingSpec,
    InterventionSpec,
    RescaleEmbeddingSpec,
)
from grokverify.engine.batched import BatchedModel
from grokverify.engine.probes import sigma_max_of, token_frequency_of
from grokverify.engine.record import SeedRecord
from grokverify.engine.sampling import (
    Sampler,
    WeightedBatches,
    example_grad_sq_norms,
    sampling_weights,
    weight_summary,
)

if TYPE_CHECKING:  # the schema must not load before extensions register (docs/extending.md)
    from grokverify.claim.experiment import ExperimentSpec
    from grokverify.engine.data import SeedData


class Shard(Protocol):
    """What a hook sees of the loop's shard: its batched model, its optimizer (absent in
    `after_init`, which runs before it is built) and one record per seed in it; its data, the
    minibatch size and the sampler of minibatch positions (None: full batch), which an
    intervention may replace in `after_init`; its experiment; `note` records per-seed values as
    curves."""

    model: BatchedModel
    optimizer: torch.optim.Optimizer
    records: list[SeedRecord]
    data: SeedData
    batch: int
    batches: Sampler | None
    exp: ExperimentSpec
    interventions: list[Intervention]  # in their declared order

    def note(self, step: int, values: dict[str, torch.Tensor]) -> None: ...


class Intervention:
    def __init__(self, spec: InterventionSpec):
        self.spec = spec

    def after_init(self, shard: Shard) -> None:
        pass

    def after_step(self, shard: Shard, step: int) -> None:
        pass

    def on_eval(self, shard: Shard, step: int, values: dict[str, np.ndarray]) -> None:
        pass





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


class GradientSampling(Intervention):
    """Minibatches drawn with replacement from p_i ∝ exp(L_i²/γ) (`GradientSamplingSpec`): a
    `WeightedBatches` sampler replaces the shard's uniform one before training, and recomputes
    each seed's p from its exact per-example gradient norms at steps 0, every, 2·every, ...
    (`grokverify.engine.sampling`), noting how far p is from uniform each time."""

    spec: GradientSamplingSpec

    def after_init(self, shard: Shard) -> None:
        if isinstance(shard.batches, WeightedBatches):
            raise ValueError("gradient_sampling is declared twice: declare it once")

        def refresh(step: int) -> torch.Tensor:
            sq = example_grad_sq_norms(shard.model, *shard.data.train)
            p = sampling_weights(sq, self.spec.gamma, self.spec.gamma_relative)
            shard.note(step, {f"{self.spec.name}.{k}": v
                              for k, v in weight_summary(p).items()})
            return p

        shard.batches = WeightedBatches(shard.model.members, shard.batch,
                                        shard.exp.task.canonical(),
                                        shard.model.leaves[0].device, self.spec.every, refresh)
        for rec in shard.records:
            rec.events[self.spec.name] = 0


class AdaptiveLRRatio(Intervention):
    """Per-seed embedding learning rates in the one seed-batched optimizer (paper 1's Prop. 4.1
    recomputed every `every` steps; `AdaptiveLRRatioSpec`). The optimizer keeps its embedding
    lr, c0 times W's; after each step a seed's change of E is scaled by c_s / c0:
    E ← E_prev + (c_s / c0) · (E_stepped - E_prev), E_prev being E before the step. Adam's, AdamW's
    and SGD's (momentum, weight decay) updates are linear in lr and their state does not depend
    on lr, so this is the run with the embedding's lr at c_s times W's
    (tests/test_adaptive_lr_ratio.py). c0 is read from the optimizer at each step (a change of
    the groups' lrs is followed). A seed whose c_s is not finite (diverged) keeps c0."""

    spec: AdaptiveLRRatioSpec
    curve = "adaptive_lr_ratio.c"

    def __init__(self, spec: AdaptiveLRRatioSpec):
        super().__init__(spec)
        self.freq_ratio: torch.Tensor | None = None  # (S,) f_W / f_E, float64
        self.c: torch.Tensor | None = None  # (S,) c_s in force, float64
        self.prev: torch.Tensor | None = None  # (S, ...) E before the coming step
        self.pending: list[tuple[int, torch.Tensor]] = []  # (step, c) not yet noted

    def after_init(self, shard: Shard) -> None:
        at = next(i for i, iv in enumerate(shard.interventions) if iv is self)
        later = [iv.spec.name for iv in shard.interventions[at + 1:]  # type: ignore[attr-defined]
                 if "E" in iv.spec.roles_needed()]
        if later:
            raise ValueError(f"adaptive_lr_ratio rescales each step's change of the embedding, "
                             f"so it must be listed after {', '.join(later)}, which writes it")
        model = shard.model
        a, b, _ = shard.data.train
        self.freq_ratio = 1.0 / token_frequency_of(a, b, model.shape.p, shard.batch)
        self._recompute(model, 0)
        self.prev = model.param(model.role("E")).detach().clone()
        for rec in shard.records:
            rec.events[self.spec.name] = 0

    def _recompute(self, model: BatchedModel, step: int) -> None:
        sigma_e = sigma_max_of(model.param(model.role("E")))
        sigma_w = sigma_max_of(model.param(model.role("W")))
        c = self.spec.k * sigma_e / sigma_w * self.freq_ratio
        if self.spec.c_min is not None or self.spec.c_max is not None:
            c = c.clamp(min=self.spec.c_min, max=self.spec.c_max)
        self.c = c
        self.pending.append((step, c))

    def _note(self, shard: Shard) -> None:
        """Hand the c_s computed so far to the shard's curves (`after_init` runs before the
        shard can take them)."""
        for step, c in self.pending:
            shard.note(step, {self.curve: c})
        self.pending.clear()

    @staticmethod
    def _optimizer_c(shard: Shard) -> float:
        """c0: the lr of E's parameter group over that of W's (1 when they share one)."""
        e, w = (shard.model.leaf(shard.model.role(r)) for r in ("E", "W"))
        lr = {id(param): float(group["lr"]) for group in shard.optimizer.param_groups
              for param in group["params"]}
        return lr[id(e)] / lr[id(w)]

    def after_step(self, shard: Shard, step: int) -> None:
        assert self.c is not None and self.prev is not None
        emb = shard.model.param(shard.model.role("E"))
        ratio = torch.where(torch.isfinite(self.c), self.c / self._optimizer_c(shard), 1.0)
        ratio = ratio.to(emb.dtype).view(-1, *([1] * (emb.dim() - 1)))
        with torch.no_grad():
            # three separately rounded elementwise ops (no fused multiply-add), so a seed's
            # elements round alike wherever they fall in the tensor
            emb.copy_(self.prev + (emb - self.prev) * ratio)
            if step % self.spec.every == 0:
                self._recompute(shard.model, step)
            self.prev.copy_(emb)
        if self.pending:
            self._note(shard)

    def on_eval(self, shard: Shard, step: int, values: dict[str, np.ndarray]) -> None:
        assert self.prev is not None
        with torch.no_grad():  # in step with E (a diverged seed's was just reset to zero)
            self.prev.copy_(shard.model.param(shard.model.role("E")))
        self._note(shard)
