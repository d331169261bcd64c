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
from grokverify.engine.batched import BatchedModel, per_seed
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
    """What a hook sees of the loop's shard. `optimizer` does not exist yet in `after_init`,
    where an intervention may replace `batches` (None: full batch); `note` records per-seed
    values as curves."""

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

    def _mark(self, shard: Shard) -> None:
        """Record in every seed's events that this intervention acts from step 0."""
        for rec in shard.records:
            rec.events[self.spec.name] = 0


class FreezeEmbeddings(Intervention):
    """From a step, E stops training for every seed (`requires_grad` off, as a plain model's
    frozen layer). From a per-seed condition, a seed's E is restored after every update to its
    value at the evaluation where the condition held (its batch-mates' updates never read it)."""

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
            emb = shard.model.role_param("E")
            with torch.no_grad():
                emb.copy_(torch.where(self.frozen, self.saved, emb))

    def on_eval(self, shard: Shard, step: int, values: dict[str, np.ndarray]) -> None:
        when = self.spec.when
        if when is None:
            return
        curve = values[when.curve]
        holds = curve >= when.at_least if when.at_least is not None else curve <= when.at_most
        emb = shard.model.role_param("E")
        new = [i for i, rec in enumerate(shard.records)
               if holds[i] and self.spec.name not in rec.events and not rec.finished]
        if not new:
            return
        mask = torch.zeros(emb.shape[0], dtype=torch.bool, device=emb.device)
        mask[new] = True
        mask = per_seed(mask, emb)
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
        emb = model.role_param("E")
        with torch.no_grad():
            if self.spec.factor is not None:
                scale = torch.full((emb.shape[0],), self.spec.factor, dtype=torch.float64,
                                   device=emb.device)
            else:
                target = sigma_max_of(model.role_param("W")) \
                    if self.spec.sigma_max == "W" else float(self.spec.sigma_max)  # type: ignore[arg-type]
                scale = target / sigma_max_of(emb)
            emb.mul_(per_seed(scale.to(emb.dtype), emb))
        self._mark(shard)


class GradientSampling(Intervention):
    """Minibatches drawn with replacement from p_i ∝ exp(L_i²/γ) (`GradientSamplingSpec`) by a
    `WeightedBatches` in place of the uniform sampler, p recomputed from exact per-example
    gradient norms at steps 0, every, 2·every, ..., with a note of how far it is from uniform."""

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
        self._mark(shard)


class AdaptiveLRRatio(Intervention):
    """Per-seed embedding lrs c_s × W's (paper 1's Prop. 4.1) in one optimizer at c0: E ← E_prev
    + (c_s / c0)(E_stepped - E_prev) after each step is exact, since Adam's, AdamW's and SGD's
    updates are linear in lr and their state is free of it; a non-finite c_s keeps c0."""

    spec: AdaptiveLRRatioSpec

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
        self.prev = model.role_param("E").detach().clone()
        self._mark(shard)

    def _recompute(self, model: BatchedModel, step: int) -> None:
        sigma_e = sigma_max_of(model.role_param("E"))
        sigma_w = sigma_max_of(model.role_param("W"))
        c = self.spec.k * sigma_e / sigma_w * self.freq_ratio
        if self.spec.c_min is not None or self.spec.c_max is not None:
            c = c.clamp(min=self.spec.c_min, max=self.spec.c_max)
        self.c = c
        self.pending.append((step, c))

    def _note(self, shard: Shard) -> None:
        """Hand the c_s computed so far to the shard's curves (`after_init` runs before the
        shard can take them)."""
        for step, c in self.pending:
            shard.note(step, {self.spec.curves()[0]: c})
        self.pending.clear()

    @staticmethod
    def _optimizer_c(shard: Shard) -> float:
        """c0: the lr of E's parameter group over W's (1 when they share one), read at each step
        so that a change of the groups' lrs is followed."""
        e, w = (shard.model.leaf(shard.model.role(r)) for r in ("E", "W"))
        lr = {id(param): float(group["lr"]) for group in shard.optimizer.param_groups
              for param in group["params"]}
        return lr[id(e)] / lr[id(w)]

    def after_step(self, shard: Shard, step: int) -> None:
        assert self.c is not None and self.prev is not None
        emb = shard.model.role_param("E")
        ratio = torch.where(torch.isfinite(self.c), self.c / self._optimizer_c(shard), 1.0)
        ratio = per_seed(ratio.to(emb.dtype), emb)
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
            self.prev.copy_(shard.model.role_param("E"))
        self._note(shard)
