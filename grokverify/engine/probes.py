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

from grokverify.catalog.probes import (
    FourierShareSpec,
    GradNormRatioSpec,
    ProbeSpec,
    RankSpec,
    SigmaMaxSpec,
)
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


def _finite_double(matrices: Tensor) -> tuple[Tensor, Tensor]:
    """(S, ...) as float64 with each non-finite seed's matrix zeroed (LAPACK is not handed a
    NaN), and the (S,) mask of finite seeds."""
    w = matrices.detach().double()
    finite = torch.isfinite(w).flatten(1).all(dim=1)
    return torch.where(finite.view(-1, *[1] * (w.dim() - 1)), w, 0.0), finite


def rank_of(matrices: Tensor, rtol: float) -> Tensor:
    """Numerical rank of each (S, m, n) matrix, float64: its singular values > rtol · σmax
    (numpy's `matrix_rank` with tol = rtol · σmax); NaN for a non-finite seed's matrix."""
    w, finite = _finite_double(matrices)
    sv = torch.linalg.svdvals(w)  # (S, min(m, n)), descending
    rank = (sv > rtol * sv[:, :1]).sum(dim=1).double()
    return torch.where(finite, rank, float("nan"))


def ew_of(e: Tensor, w: Tensor) -> Tensor:
    """EW, (S, V, n·hidden): [E W_1ᵀ | ... | E W_nᵀ], W_j the (hidden, d) columns of W that read
    input position j (`RankSpec`), the map from a one-hot token to the first layer's
    pre-activation at each position. For references; the probe uses `_ew_core`."""
    return e @ _positions(e, w)


def _positions(e: Tensor, w: Tensor) -> Tensor:
    """W (S, hidden, n·d) as (S, d, n·hidden), column block j = W_jᵀ."""
    s, hidden, n_d = w.shape
    d = e.shape[-1]
    if n_d % d:
        raise ValueError(f"EW is undefined: the first weight matrix reads {n_d} inputs, not a "
                         f"multiple of the embedding width {d}")
    return w.view(s, hidden, n_d // d, d).permute(0, 3, 2, 1).reshape(s, d, -1)


def _ew_core(e: Tensor, w: Tensor) -> Tensor:
    """A small matrix with EW's singular values: with E = Q₁R₁ and Mᵀ = Q₂R₂ (M = `_positions`,
    so EW = E M), EW = Q₁ (R₁R₂ᵀ) Q₂ᵀ and Q₁, Q₂ have orthonormal columns, so R₁R₂ᵀ (at most
    d × d) has EW's singular values without EW (V × n·hidden: V/d times W's size) or its
    Gram (which would square its condition number) being formed."""
    r_e = torch.linalg.qr(e, mode="r")[1]
    r_m = torch.linalg.qr(_positions(e, w).mT, mode="r")[1]
    return r_e @ r_m.mT


_NO_POWER = 1e-24  # relative power below which E has no non-DC power to share


def fourier_share_of(e: Tensor, p: int, k: int, exclude_dc: bool) -> Tensor:
    """(S,) share of the power of (S, ≥p, d) embeddings' first p rows in their k strongest
    frequencies (`FourierShareSpec`): rfft along the tokens gives frequencies 0..p//2; each
    f with 0 < f < p/2 stands for itself and p - f (twice the power); NaN for a non-finite
    seed's matrix, and where there is no power to share."""
    if e.shape[1] < p:
        raise ValueError(f"the embedding has {e.shape[1]} rows, fewer than the p = {p} numbers")
    w, finite = _finite_double(e[:, :p])
    power = torch.fft.rfft(w, dim=1).abs().square().sum(dim=2)  # (S, p // 2 + 1)
    pairs = torch.ones(power.shape[1], dtype=power.dtype, device=power.device)
    pairs[1:(p + 1) // 2] = 2  # f and p - f; DC and (even p) p/2 are their own conjugates
    power = power * pairs
    full = power.sum(dim=1)
    if exclude_dc:
        power = power[:, 1:]
    top = power.topk(min(k, power.shape[1]), dim=1).values.sum(dim=1)
    total = power.sum(dim=1)
    # no power to share: E zero, or (DC left out) the same for every token up to the FFT's
    # float64 rounding (~1e-30 of the power); float32 rows that differ at all are far above
    shared = finite & (total > _NO_POWER * full)
    return torch.where(shared, top / total, float("nan"))


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


@probe("rank")
def rank(model: BatchedModel, spec: ProbeSpec) -> dict[str, Tensor]:
    assert isinstance(spec, RankSpec)
    out: dict[str, Tensor] = {}
    for m in spec.of:
        if m == "EW":
            e, e_ok = _finite_double(model.param(model.role("E")))
            w, w_ok = _finite_double(model.param(model.role("W")))
            r = rank_of(_ew_core(e, w), spec.rtol)
            out["rank.EW"] = torch.where(e_ok & w_ok, r, float("nan"))
        else:
            out[f"rank.{m}"] = rank_of(model.param(model.role(m)), spec.rtol)
    return out


@probe("fourier_share")
def fourier_share(model: BatchedModel, spec: ProbeSpec) -> dict[str, Tensor]:
    assert isinstance(spec, FourierShareSpec)
    # the number tokens are rows 0..p-1 of E (models index them by value; extra tokens follow)
    return {"fourier_share.E": fourier_share_of(model.param(model.role("E")), model.shape.p,
                                                spec.k, spec.exclude_dc)}
