"""Probes: seed-batched measurements recorded as named curves (specs in
`grokverify.catalog.probes`). A probe is a function of the batched model and its spec returning
{curve name: tensor (S,)}; the loop calls it at steps 0, every, 2·every, ... on the parameters
after that many updates, or (a probe that reads gradients) on the gradient of the minibatch
loss taken from that state, before the update. Probes only read: a run with probes trains
exactly what a run without them trains (tests/test_probes.py). Values are float64 on the
device; the loop moves them to the host at the next evaluation."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from grokverify.catalog.probes import GradNormRatioSpec, ProbeSpec, SigmaMaxSpec
from grokverify.engine.batched import BatchedModel
from grokverify.registry import registrar

ProbeFn = Callable[[BatchedModel, ProbeSpec], dict[str, Tensor]]
PROBES: dict[str, ProbeFn] = {}


probe = registrar(PROBES, "probe")  # @probe("name"): register under its spec's name


def sigma_max_of(matrices: Tensor) -> Tensor:
    """Largest singular value of each (S, m, n) matrix, in float64: the square root of the
    largest eigenvalue of its smaller Gram matrix (accurate to ~1e-15 relative for the largest
    singular value, and ~30% cheaper than a full SVD, which the probe's budget needs at
    p = 97)."""
    w = matrices.detach().double()
    finite = torch.isfinite(w).flatten(1).all(dim=1)  # a diverged seed's matrix: NaN, no error
    w = torch.where(finite.view(-1, 1, 1), w, 0.0)
    gram = w.mT @ w if w.shape[-1] <= w.shape[-2] else w @ w.mT
    sigma = torch.linalg.eigvalsh(gram)[..., -1].clamp_min(0).sqrt()
    return torch.where(finite, sigma, float("nan"))


def _grad_norm(model: BatchedModel, role: str) -> Tensor:
    grad = model.grad(model.role(role))
    if grad is None:  # a frozen parameter has no gradient: not measured
        return torch.full((model.n_seeds,), float("nan"), dtype=torch.float64,
                          device=model.leaves[0].device)
    return torch.linalg.vector_norm(grad.double().flatten(1), dim=1)


@probe("sigma_max")
def sigma_max(model: BatchedModel, spec: ProbeSpec) -> dict[str, Tensor]:
    assert isinstance(spec, SigmaMaxSpec)
    return {f"sigma_max.{role}": sigma_max_of(model.param(model.role(role)))
            for role in spec.of}


@probe("grad_norm_ratio")
def grad_norm_ratio(model: BatchedModel, spec: ProbeSpec) -> dict[str, Tensor]:
    assert isinstance(spec, GradNormRatioSpec)
    g_e, g_w = _grad_norm(model, "E"), _grad_norm(model, "W")
    return {"grad_norm.E": g_e, "grad_norm.W": g_w, "grad_norm_ratio": g_e / g_w}
