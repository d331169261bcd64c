"""Minibatch samplers beyond the default permutations (`grokverify.engine.data.Batches`), and
paper 1's Appendix A rule over training rows, p_i ∝ exp(L_i²/γ), L_i the norm of the gradient of
row i's loss with respect to all of a seed's parameters (the `gradient_sampling` intervention
draws minibatches from it through a `WeightedBatches`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import torch
from torch import Tensor
from torch.func import functional_call, grad, vmap

from grokverify.engine.batched import BatchedModel
from grokverify.engine.streams import to_device, torch_generator

_GRAD_ELEMENTS = 1 << 22  # per-example gradient elements held at once, per seed


class Sampler(Protocol):
    """Where the loop takes minibatch positions from. `horizon` h (None: any number of steps
    ahead): the loop never asks past the next multiple of h in one call, so weights that depend
    on the model can be recomputed at steps 0, h, 2h, ... after exactly that many updates."""

    horizon: int | None

    def take(self, n_steps: int) -> Tensor:
        """Positions for the next n_steps steps: (n_steps, S, batch) on the device."""
        ...


class WeightedBatches:
    """Positions drawn with replacement from weights `refresh(step)` -> (S, n), recomputed every
    `horizon` steps; one multinomial call per step and seed from its "sample" stream, so a
    seed's rows never depend on its batch-mates or on how many steps are asked for at once."""

    def __init__(self, seeds: list[int], batch: int, context: str, device: torch.device,
                 horizon: int, refresh: Callable[[int], Tensor]):
        self.gens = [torch_generator(s, "sample", context) for s in seeds]
        self.batch, self.device, self.horizon, self.refresh = batch, device, horizon, refresh
        self.step = 0  # steps whose positions have been drawn
        self.weights = torch.empty(0, dtype=torch.float64)

    def take(self, n_steps: int) -> Tensor:
        """Positions for the next n_steps steps: (n_steps, S, batch) on the device."""
        offset = self.step % self.horizon
        if not 0 < n_steps <= self.horizon - offset:
            raise ValueError(f"asked for {n_steps} steps at step {self.step}: at most "
                             f"{self.horizon - offset}, up to the next recomputation of the "
                             f"weights (every {self.horizon} steps)")
        if offset == 0:
            self.weights = self.refresh(self.step).detach().to("cpu", torch.float64)
        out = torch.stack([torch.stack([
            torch.multinomial(w, self.batch, replacement=True, generator=g)
            for w, g in zip(self.weights, self.gens, strict=True)]) for _ in range(n_steps)])
        self.step += n_steps
        return to_device(out, self.device)


def example_grad_sq_norms(model: BatchedModel, a: Tensor, b: Tensor, y: Tensor) -> Tensor:
    """(S, n) float64: L_i² = ‖∇θ ℓ_i‖² for every seed and row of (a, b, y) (S, n), θ all of the
    seed's parameters, ℓ_i row i's loss alone: exact per-example gradients of the derived form,
    vmapped over rows and seeds, each reduced to its squared norm as soon as it is made."""
    params = {k: v.detach() for k, v in model.params().items()}
    buffers = model.buffers_by_name()
    skeleton, head = model.skeleton, model.head
    # blocks of rows sized by the model alone, so a seed's values are the same in any batch
    rows = max(1, _GRAD_ELEMENTS // sum(v[0].numel() for v in params.values()))

    def row_loss(p: dict[str, Tensor], bufs: dict[str, Tensor], a1: Tensor, b1: Tensor,
                 y1: Tensor) -> Tensor:
        out = functional_call(skeleton, (p, bufs), (a1.view(1), b1.view(1)))
        return head.mean_loss(out, y1.view(1), bufs.get("targets"))

    def row_sq_norm(p: dict[str, Tensor], bufs: dict[str, Tensor], a1: Tensor, b1: Tensor,
                    y1: Tensor) -> Tensor:
        g = grad(row_loss)(p, bufs, a1, b1, y1)
        return torch.stack([(v * v).sum().double() for v in g.values()]).sum()

    each = vmap(vmap(row_sq_norm, in_dims=(None, None, 0, 0, 0)))
    with torch.no_grad():
        return torch.cat([each(params, buffers, a[:, i:i + rows], b[:, i:i + rows],
                               y[:, i:i + rows]) for i in range(0, a.shape[1], rows)], dim=1)


def sampling_weights(sq_norms: Tensor, gamma: float | None = None,
                     gamma_relative: float | None = None) -> Tensor:
    """(S, n) float64 p_i ∝ exp(L_i²/γ) per seed (row of `sq_norms`), γ = `gamma` or
    `gamma_relative` × the seed's mean L_i²; uniform for a seed with a non-finite L_i² (it no
    longer trains) or a relative γ of 0 (every L_i = 0, where the rule is uniform anyway)."""
    if (gamma is None) == (gamma_relative is None):
        raise ValueError("give exactly one of gamma, gamma_relative")
    sq = sq_norms.double()
    if gamma is not None:
        z = sq / gamma
    else:
        scale = gamma_relative * sq.mean(dim=1, keepdim=True)
        z = torch.where(scale > 0, sq / scale, torch.zeros_like(sq))
    z = torch.where(torch.isfinite(z).all(dim=1, keepdim=True), z, torch.zeros_like(z))
    w = torch.exp(z - z.max(dim=1, keepdim=True).values)
    return w / w.sum(dim=1, keepdim=True)


def weight_summary(p: Tensor) -> dict[str, Tensor]:
    """How far each seed's weights (S, n) are from uniform: the effective sample size as a
    share of n, 1 / (n Σ p_i²) (1: uniform; 1/n: one row), and n · max p_i (1: uniform)."""
    n = p.shape[1]
    return {"ess_share": 1.0 / (n * (p * p).sum(dim=1)), "max_weight": n * p.max(dim=1).values}
