"""Probes: seed-batched measurements recorded as curves (specs in `grokverify.claim.probes`).
A probe maps (batched model, spec, `ProbeContext`) to {curve: (S,) float64 tensor on the device};
the loop calls it at steps 0, every, 2·every, ... on the parameters after that many updates, on
the gradient taken from that state (`reads == "grads"`) or on the update made from it
(`"update"`). Probes only read: a run with probes trains exactly what one without them trains.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import Tensor

if TYPE_CHECKING:
    from grokverify.analysis.representation import Distance

from grokverify.claim.probes import (
    EffectiveSpec,
    FourierLogitsSpec,
    FourierShareSpec,
    GradNormRatioSpec,
    HessianMaxSpec,
    ImpermissibleSpec,
    ParallelogramNullitySpec,
    ParallelogramSpec,
    PCASpec,
    ProbeSpec,
    RankSpec,
    SampleFractionSpec,
    SigmaMaxSpec,
    TokenFrequencySpec,
    UpdateNormSpec,
)
from grokverify.engine.batched import BatchedModel, per_seed, seed_view
from grokverify.engine.streams import torch_generator


class Spectra:
    """One probe point's float64 copy of each role's parameter and its Gram singular values,
    shared by the probes due there (sigma_max and rank: at paper 1's shapes the eigenvalues are
    nearly all of either's cost). Valid while the parameters stay put: one per probe point."""

    def __init__(self, model: BatchedModel) -> None:
        self._model = model
        self._double: dict[str, tuple[Tensor, Tensor]] = {}
        self._gram: dict[str, Tensor] = {}

    def double(self, role: str) -> tuple[Tensor, Tensor]:
        """`_finite_double` of the role's parameter: (S, ...) float64, (S,) finite mask."""
        if role not in self._double:
            self._double[role] = _finite_double(self._model.role_param(role))
        return self._double[role]

    def gram_values(self, role: str) -> Tensor:
        """`_gram_singular_values` of the role's parameter (zeroed where not finite)."""
        if role not in self._gram:
            self._gram[role] = _gram_singular_values(self.double(role)[0])
        return self._gram[role]


@dataclass(frozen=True)
class ProbeContext:
    """What a probe may read besides the model: each seed's training rows (S, n), an update
    probe's roles before the update, the minibatch size (n for full batch; None: not given) and
    the probe point's shared spectra (None: each probe computes its own)."""

    train: tuple[Tensor, Tensor, Tensor] | None = None
    before: dict[str, Tensor] = field(default_factory=dict)
    batch: int | None = None
    spectra: Spectra | None = None

    def spectra_of(self, model: BatchedModel) -> Spectra:
        return self.spectra if self.spectra is not None else Spectra(model)


ProbeFn = Callable[[BatchedModel, ProbeSpec, ProbeContext], dict[str, Tensor]]
_NO_CONTEXT = ProbeContext()


def _gram_singular_values(w: Tensor) -> Tensor:
    """Singular values of each (S, m, n) float64 matrix, ascending, from the eigenvalues of its
    smaller Gram matrix: half the cost of an SVD at the probes' shapes, accurate to about
    sqrt(min(m, n) · eps) · σmax in absolute terms (the Gram squares the condition number)."""
    gram = w.mT @ w if w.shape[-1] <= w.shape[-2] else w @ w.mT
    return torch.linalg.eigvalsh(gram).clamp_min(0).sqrt()


def sigma_max_of(matrices: Tensor) -> Tensor:
    """Largest singular value of each (S, m, n) matrix, float64, from its Gram matrix: ~1e-15
    relative for the largest, and ~30% cheaper than an SVD (the probe's budget at p = 97)."""
    w, finite = _finite_double(matrices)  # a diverged seed's matrix: NaN, no error
    return _top(_gram_singular_values(w), finite)


def _top(sv: Tensor, finite: Tensor) -> Tensor:
    """The largest of ascending singular values (S, k); NaN where the seed's matrix was not."""
    return torch.where(finite, sv[..., -1], float("nan"))


def _finite_double(matrices: Tensor) -> tuple[Tensor, Tensor]:
    """(S, ...) as float64 with each non-finite seed's matrix zeroed (LAPACK is not handed a
    NaN), and the (S,) mask of finite seeds."""
    w = matrices.detach().double()
    finite = torch.isfinite(w).flatten(1).all(dim=1)
    return torch.where(per_seed(finite, w), w, 0.0), finite


# From this rtol up, the Gram's singular values decide the rank as an SVD's would: their error,
# ~sqrt(min(m, n) · eps) · σmax (≤ 2.4e-7 · σmax up to 512 columns), is far below rtol · σmax,
# so only a singular value within ~1e-6 relative of the cut could be counted differently.
GRAM_MIN_RTOL = 1e-4


def rank_of(matrices: Tensor, rtol: float) -> Tensor:
    """Numerical rank of each (S, m, n) matrix, float64: its singular values > rtol · σmax
    (numpy's `matrix_rank` with tol = rtol · σmax), NaN where not finite; from the Gram matrix
    when rtol ≥ GRAM_MIN_RTOL (the default 1e-3: half the cost), from an SVD below it."""
    w, finite = _finite_double(matrices)
    return _rank_from(w, finite, rtol, lambda: _gram_singular_values(w))


def _rank_from(w: Tensor, finite: Tensor, rtol: float, gram: Callable[[], Tensor]) -> Tensor:
    """`rank_of` of the float64 matrices w (S, m, n) with their finite mask (S,); `gram` gives
    their Gram singular values (asked only when rtol ≥ GRAM_MIN_RTOL, so a probe point's
    shared ones serve)."""
    sv = gram() if rtol >= GRAM_MIN_RTOL else torch.linalg.svdvals(w)
    top = sv.amax(dim=1, keepdim=True)
    rank = (sv > rtol * top).sum(dim=1).double()
    return torch.where(finite, rank, float("nan"))


def ew_of(e: Tensor, w: Tensor) -> Tensor:
    """EW, (S, V, n·hidden): [E W_1ᵀ | ... | E W_nᵀ], W_j the (hidden, d) columns of W reading
    input position j (`RankSpec`): a one-hot token's first-layer pre-activation at each position.
    For references; the probe uses `_ew_core`."""
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
    """R₁R₂ᵀ (at most d × d), with EW's singular values: E = Q₁R₁ and Mᵀ = Q₂R₂ (EW = E M, M =
    `_positions`) give EW = Q₁ (R₁R₂ᵀ) Q₂ᵀ with orthonormal Q₁, Q₂, and neither EW (V/d times
    W's size) nor its Gram (the condition number squared) is formed."""
    r_e = torch.linalg.qr(e, mode="r")[1]
    r_m = torch.linalg.qr(_positions(e, w).mT, mode="r")[1]
    return r_e @ r_m.mT


_NO_POWER = 1e-24  # relative power below which E has no non-DC power to share


def fourier_share_of(e: Tensor, p: int, k: int, exclude_dc: bool) -> Tensor:
    """(S,) share of the power of (S, ≥p, d) embeddings' first p rows in their k strongest
    frequencies (`FourierShareSpec`), f and p - f pooled (rfft: 0 < f < p/2 counts twice); NaN
    where E is not finite or has no power to share."""
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


@lru_cache(maxsize=8)
def _sum_directions(p: int) -> Tensor:
    """(2F, p²) unit vectors cos(w(a + b)), sin(w(a + b)) over the pairs (row a·p + b), F =
    (p - 1) // 2 frequencies, interleaved cos f, sin f (float64)."""
    s = (torch.arange(p).view(-1, 1) + torch.arange(p).view(1, -1)).flatten().double()
    w = 2 * math.pi * torch.arange(1, (p - 1) // 2 + 1, dtype=torch.float64).view(-1, 1) / p
    dirs = torch.stack([torch.cos(w * s), torch.sin(w * s)], dim=1).flatten(0, 1)
    return dirs / torch.linalg.vector_norm(dirs, dim=1, keepdim=True)


def fourier_logits_of(logits: Tensor, train_rows: Tensor, p: int, k: int) -> dict[str, Tensor]:
    """`FourierLogitsSpec`'s curves from (S, p², p) logits over the pairs (row a·p + b) and
    (S, n) training rows: each seed's own k key frequencies."""
    logits = logits.double()
    dirs = _sum_directions(p).to(logits.device)  # (2F, p²)
    coef = torch.einsum("fn,snc->sfc", dirs, logits)  # (S, 2F, p)
    power = coef.square().sum(dim=2).view(logits.shape[0], -1, 2).sum(dim=2)  # (S, F)
    key = torch.zeros_like(power, dtype=torch.bool)
    key.scatter_(1, power.topk(k, dim=1).indices, True)
    keep = key.repeat_interleave(2, dim=1).unsqueeze(2)  # (S, 2F, 1)
    restricted = torch.einsum("fn,sfc->snc", dirs, coef * keep)
    mean = logits.mean(dim=1, keepdim=True)
    labels = (torch.arange(p * p, device=logits.device) // p
              + torch.arange(p * p, device=logits.device) % p) % p

    def loss(z: Tensor, rows: Tensor) -> Tensor:
        logp = torch.log_softmax(z, dim=2)
        picked = logp.gather(2, labels[rows].unsqueeze(2)).squeeze(2)  # (S, rows)
        return -picked.mean(dim=1)

    every = torch.arange(p * p, device=logits.device).expand(logits.shape[0], -1)
    total = (logits - mean).square().sum(dim=(1, 2))
    return {"fourier_logits.restricted_loss": loss(restricted + mean, every),
           "fourier_logits.excluded_loss": loss(torch.gather(
               logits - restricted, 1, train_rows.unsqueeze(2).expand(-1, -1, p)), train_rows),
           "fourier_logits.key_share": torch.where(total > 0, (power * key).sum(1) / total,
                                                   float("nan"))}


def _grad_norm(model: BatchedModel, role: str) -> Tensor:
    grad = model.grad(model.role(role))
    if grad is None:  # a frozen parameter has no gradient: not measured
        return torch.full((model.n_seeds,), float("nan"), dtype=torch.float64,
                          device=model.leaves[0].device)
    return torch.linalg.vector_norm(grad.double().flatten(1), dim=1)


def sigma_max(model: BatchedModel, spec: ProbeSpec,
              ctx: ProbeContext = _NO_CONTEXT) -> dict[str, Tensor]:
    assert isinstance(spec, SigmaMaxSpec)
    spectra = ctx.spectra_of(model)
    return {f"sigma_max.{role}": _top(spectra.gram_values(role), spectra.double(role)[1])
            for role in spec.of}


def grad_norm_ratio(model: BatchedModel, spec: ProbeSpec,
                    ctx: ProbeContext = _NO_CONTEXT) -> dict[str, Tensor]:
    assert isinstance(spec, GradNormRatioSpec)
    g_e, g_w = _grad_norm(model, "E"), _grad_norm(model, "W")
    return {"grad_norm.E": g_e, "grad_norm.W": g_w, "grad_norm_ratio": g_e / g_w}


def rank(model: BatchedModel, spec: ProbeSpec,
         ctx: ProbeContext = _NO_CONTEXT) -> dict[str, Tensor]:
    assert isinstance(spec, RankSpec)
    spectra = ctx.spectra_of(model)
    out: dict[str, Tensor] = {}
    for m in spec.of:
        if m == "EW":
            (e, e_ok), (w, w_ok) = spectra.double("E"), spectra.double("W")
            r = rank_of(_ew_core(e, w), spec.rtol)
            out["rank.EW"] = torch.where(e_ok & w_ok, r, float("nan"))
        else:
            x, finite = spectra.double(m)
            out[f"rank.{m}"] = _rank_from(x, finite, spec.rtol,
                                          lambda m=m: spectra.gram_values(m))
    return out


def fourier_share(model: BatchedModel, spec: ProbeSpec,
                  ctx: ProbeContext = _NO_CONTEXT) -> dict[str, Tensor]:
    assert isinstance(spec, FourierShareSpec)
    # the number tokens are rows 0..p-1 of E (models index them by value; extra tokens follow)
    return {"fourier_share.E": fourier_share_of(model.role_param("E"), model.shape.p, spec.k,
                                                spec.exclude_dc)}


def fourier_logits(model: BatchedModel, spec: ProbeSpec,
                   ctx: ProbeContext = _NO_CONTEXT) -> dict[str, Tensor]:
    assert isinstance(spec, FourierLogitsSpec)
    if ctx.train is None:
        raise ValueError("fourier_logits needs the training rows (ProbeContext.train)")
    p, s = model.shape.p, ctx.train[0].shape[0]
    grid = torch.arange(p * p, device=ctx.train[0].device)
    a, b = (grid // p).expand(s, -1), (grid % p).expand(s, -1)
    with torch.no_grad():
        logits = model(a, b)[..., :p]
    rows = ctx.train[0] * p + ctx.train[1]
    return fourier_logits_of(logits, rows, p, spec.k)


def update_norm(model: BatchedModel, spec: ProbeSpec,
                ctx: ProbeContext = _NO_CONTEXT) -> dict[str, Tensor]:
    assert isinstance(spec, UpdateNormSpec)
    norms = [torch.linalg.vector_norm(
        (model.role_param(r).detach().double() - ctx.before[r].double()).flatten(1), dim=1)
        for r in ("E", "W")]
    return {"update_norm.E": norms[0], "update_norm.W": norms[1],
            "update_norm_ratio": norms[0] / norms[1]}


def _rows(model: BatchedModel, train: tuple[Tensor, Tensor, Tensor],
          batch: int | None) -> tuple[Tensor, ...]:
    """Each seed's `batch` training rows, the same at every probe point: a random subset from
    the seed's own stream (train_idx is sorted, so its first rows would be the small a's)."""
    n = train[0].shape[1]
    if batch is None or batch >= n:
        return train
    pick = torch.stack([torch.randperm(n, generator=torch_generator(s, "hessian_batch"))[:batch]
                        for s in model.members]).to(train[0].device)
    rows = torch.arange(len(model.members), device=pick.device).view(-1, 1)
    return tuple(t[rows, pick] for t in train)


def hessian_max_of(model: BatchedModel, names: list[str], a: Tensor, b: Tensor, y: Tensor,
                   iterations: int) -> dict[str, tuple[Tensor, Tensor]]:
    """Per parameter in `names`: (S,) signed top eigenvalue of each seed's Hessian of its mean
    loss on (a, b, y) in that parameter, by power iteration, and its last relative change. The
    seeds' summed losses have a block-diagonal Hessian: one product serves every seed."""
    leaves = [model.leaf(name) for name in names]
    out: dict[str, tuple[Tensor, Tensor]] = {}
    with torch.enable_grad():
        # the derived forward: a fast path's hand-written backward need not differentiate twice
        loss = model.mean_loss(model.derived_forward(a, b), y).sum()
        grads = torch.autograd.grad(loss, leaves, create_graph=True)
        for name, leaf, grad in zip(names, leaves, grads, strict=True):
            shape = model.shapes[name]
            g = seed_view(grad, shape).flatten(1)
            v = torch.stack([torch.randn(shape[1:].numel(),
                                         generator=torch_generator(m, "hessian_v"),
                                         dtype=torch.float64) for m in model.members])
            v = v.to(device=g.device, dtype=g.dtype)
            lam = prev = torch.zeros(shape[0], dtype=torch.float64, device=g.device)
            for _ in range(iterations):
                v = v / torch.linalg.vector_norm(v, dim=1, keepdim=True)
                (hv,) = torch.autograd.grad(g, leaf, grad_outputs=v, retain_graph=True)
                hv = seed_view(hv, shape).flatten(1).detach()
                prev, lam = lam, (v * hv).sum(dim=1).double()
                v = hv
            finite = torch.isfinite(lam) & torch.isfinite(
                model.param(name).detach()).flatten(1).all(1)
            nan = torch.full_like(lam, float("nan"))
            out[name] = (torch.where(finite, lam, nan),
                         torch.where(finite, (lam - prev).abs() / lam.abs(), nan))
    return out


def hessian_max(model: BatchedModel, spec: ProbeSpec,
                ctx: ProbeContext = _NO_CONTEXT) -> dict[str, Tensor]:
    assert isinstance(spec, HessianMaxSpec)
    if ctx.train is None:
        raise ValueError("hessian_max needs the training rows (ProbeContext.train)")
    a, b, y = _rows(model, ctx.train, spec.batch)
    blocks = hessian_max_of(model, [model.role(role) for role in spec.of], a, b, y,
                            spec.iterations)
    out: dict[str, Tensor] = {}
    for role in spec.of:
        out[f"hessian_max.{role}"], out[f"hessian_max.{role}.change"] = blocks[model.role(role)]
    return out


def token_frequency_of(a: Tensor, b: Tensor, p: int, batch: int) -> Tensor:
    """(S,) f_E of operands a, b (S, N) in 0..p-1 for batches of B rows (`TokenFrequencySpec`):
    the mean over tokens present of 1 - C(N - n_t, B) / C(N, B), through log-gamma (C(N, B)
    overflows at N ~ 3000); 1 where fewer than B rows lack the token."""
    s, n = a.shape
    size = min(int(batch), n)
    ones = torch.ones(a.shape, dtype=torch.float64, device=a.device)
    counts = torch.zeros(s, p, dtype=torch.float64, device=a.device)
    counts.scatter_add_(1, a, ones).scatter_add_(1, b, ones)
    counts.scatter_add_(1, a, -(a == b).double())  # a row with t as both a and b counts once
    lacking = n - counts  # rows without the token
    possible = lacking >= size  # a whole batch can avoid it
    lg = torch.lgamma
    log_miss = (lg(lacking + 1) - lg((lacking - size).clamp_min(0) + 1)
                - math.lgamma(n + 1) + math.lgamma(n - size + 1))
    hit = torch.where(possible, -torch.expm1(log_miss), 1.0)
    present = counts > 0
    return (hit * present).sum(dim=1) / present.sum(dim=1)


def token_frequency(model: BatchedModel, spec: ProbeSpec,
                    ctx: ProbeContext = _NO_CONTEXT) -> dict[str, Tensor]:
    assert isinstance(spec, TokenFrequencySpec)
    if ctx.train is None or ctx.batch is None:
        raise ValueError("token_frequency needs the training rows and the batch size "
                         "(ProbeContext.train, ProbeContext.batch)")
    f_e = token_frequency_of(ctx.train[0], ctx.train[1], model.shape.p, ctx.batch)
    f_w = torch.ones_like(f_e)
    return {"token_frequency.E": f_e, "token_frequency.W": f_w,
            "token_frequency_ratio": f_w / f_e}


def sample_masks(a: Tensor, b: Tensor, p: int) -> np.ndarray:
    """(S, N) bool: each seed's training samples, in `parallelogram.samples(p)` order (i ≤ j,
    lexicographic), from its training rows a, b (S, n); (a, b) and (b, a) are one sample."""
    from grokverify.analysis import parallelogram as pg  # scipy: only where the probe runs

    index = pg.sample_index(p, a.cpu().numpy(), b.cpu().numpy())
    masks = np.zeros((len(index), pg.n_samples(p)), dtype=bool)
    masks[np.arange(len(index))[:, None], index] = True
    return masks


@lru_cache(maxsize=256)
def _implied(p: int, mask: bytes) -> np.ndarray:
    """P(D) of one training set, cached: fixed for a seed's whole run, and far dearer than the
    rest of the probe (an exact rational null space)."""
    from grokverify.analysis import parallelogram as pg
    return pg.implied(p, np.frombuffer(mask, dtype=bool).copy())


PARALLELOGRAM_CURVES = ("rqi", "acc", "acc_test", "unimplied", "unimplied_share")


def parallelogram_of(e: np.ndarray, masks: np.ndarray, delta: float,
                     distance: Distance) -> dict[str, np.ndarray]:
    """Per seed (`ParallelogramSpec`): RQI, Acc^ (all, non-training) and the realised but not
    implied parallelograms (count, share) of embeddings e (S, p, d) and masks (S, N): the
    `representation` measures, from one realised set per seed instead of one per measure."""
    from grokverify.analysis import representation as rep
    n_seeds, p = e.shape[0], e.shape[1]
    out = {c: np.full(n_seeds, np.nan) for c in PARALLELOGRAM_CURVES}
    for s in range(n_seeds):
        if not np.isfinite(e[s]).all():  # diverged
            continue
        x = rep.normalise(e[s])
        if not np.isfinite(x).all():  # a constant dimension: no normalised form
            continue
        real = rep.realised(x, delta, distance, normalised=False)
        mask = masks[s]
        reached = rep.reached_samples(real, mask, p)
        n_test = int((~mask).sum())
        unimplied = real & ~_implied(p, mask.tobytes())
        n_real = int(real.sum())
        out["rqi"][s] = real.mean()
        out["acc"][s] = reached.mean()
        out["acc_test"][s] = (reached & ~mask).sum() / n_test if n_test else np.nan
        out["unimplied"][s] = unimplied.sum()
        out["unimplied_share"][s] = unimplied.sum() / n_real if n_real else np.nan
    return out


def _split_masks(name: str, model: BatchedModel, ctx: ProbeContext) -> np.ndarray:
    """`sample_masks` of the seeds' training rows, for paper 2's probes of the split."""
    if ctx.train is None:
        raise ValueError(f"{name} needs the training rows (ProbeContext.train)")
    return sample_masks(ctx.train[0], ctx.train[1], model.shape.p)


def _number_rows(model: BatchedModel) -> np.ndarray:
    """E's rows of the numbers 0..p-1 (models index them by value), (S, p, d) float64 host."""
    return model.role_param("E").detach()[:, :model.shape.p].double().cpu().numpy()


def _curves(name: str, model: BatchedModel, values: dict[str, np.ndarray]) -> dict[str, Tensor]:
    """Host per-seed values as the probe's float64 curves on the model's device."""
    device = model.leaves[0].device
    return {f"{name}.{c}": torch.as_tensor(v, dtype=torch.float64, device=device)
            for c, v in values.items()}


def _of_rows_and_split(name: str, model: BatchedModel, ctx: ProbeContext,
                      compute: Callable[..., dict[str, np.ndarray]],
                      *options: Any) -> dict[str, Tensor]:
    """The curves of a paper-2 probe computed on the host from E's number rows and each seed's
    training samples: compute(rows (S, p, d), masks (S, N), *options)."""
    return _curves(name, model, compute(_number_rows(model), _split_masks(name, model, ctx),
                                        *options))


def parallelogram(model: BatchedModel, spec: ProbeSpec,
                  ctx: ProbeContext = _NO_CONTEXT) -> dict[str, Tensor]:
    assert isinstance(spec, ParallelogramSpec)
    return _of_rows_and_split("parallelogram", model, ctx, parallelogram_of, spec.delta,
                              spec.distance)


def nullity_of(masks: np.ndarray, p: int) -> np.ndarray:
    """(S,) float64 n0 of each seed's training mask (S, N) (`ParallelogramNullitySpec`), all
    seeds in one batched call (about 2 ms for 200 seeds at p = 10, 6 ms for 8 at p = 60)."""
    from grokverify.analysis import parallelogram as pg
    return pg.nullities(p, masks).astype(np.float64)


def parallelogram_nullity(model: BatchedModel, spec: ProbeSpec,
                          ctx: ProbeContext = _NO_CONTEXT) -> dict[str, Tensor]:
    assert isinstance(spec, ParallelogramNullitySpec)
    masks = _split_masks("parallelogram_nullity", model, ctx)
    n0 = nullity_of(masks, model.shape.p)
    return _curves("parallelogram_nullity", model,
                   {"n0": n0, "is2": (n0 == 2).astype(np.float64)})


def sample_fraction(model: BatchedModel, spec: ProbeSpec,
                    ctx: ProbeContext = _NO_CONTEXT) -> dict[str, Tensor]:
    assert isinstance(spec, SampleFractionSpec)
    masks = _split_masks("sample_fraction", model, ctx)
    return {"sample_fraction": torch.as_tensor(masks.sum(axis=1) / masks.shape[1],
                                               dtype=torch.float64, device=model.leaves[0].device)}


def impermissible_of(e: np.ndarray, masks: np.ndarray, delta: float,
                     distance: Distance) -> dict[str, np.ndarray]:
    """Per seed (`ImpermissibleSpec`): the impermissible pairs of training samples within delta,
    and the smallest distance, from embeddings e (S, p, d) and training masks (S, N)."""
    from grokverify.analysis import representation as rep
    out = {c: np.full(e.shape[0], np.nan) for c in ("count", "min_gap")}
    for s in range(e.shape[0]):
        x = rep.normalise(e[s])
        if not np.isfinite(x).all():  # diverged, or a constant dimension
            continue
        gaps = rep.impermissible_gaps(x, masks[s], distance, normalised=False)
        out["count"][s] = (gaps <= delta).sum()
        out["min_gap"][s] = gaps.min() if gaps.size else np.nan
    return out


def impermissible(model: BatchedModel, spec: ProbeSpec,
                  ctx: ProbeContext = _NO_CONTEXT) -> dict[str, Tensor]:
    assert isinstance(spec, ImpermissibleSpec)
    return _of_rows_and_split("impermissible", model, ctx, impermissible_of, spec.delta,
                              spec.distance)


def effective_of(e: np.ndarray, masks: np.ndarray, eta: float, flow_steps: int,
                 method: str) -> dict[str, np.ndarray]:
    """Per seed (`EffectiveSpec`): λ3, n_h and the flow's drifts of ΣE_k and Z0, from
    embeddings e (S, p, d) and training masks (S, N); NaN for a diverged seed, n_h NaN (no
    prediction) where λ3 = 0, drifts NaN where the flow's step is unstable or E is constant."""
    from grokverify.analysis import effective as eff
    from grokverify.analysis import parallelogram as pg
    n_seeds, p, d = e.shape
    out = {c: np.full(n_seeds, np.nan) for c in ("lambda3", "n_h", "sum_drift", "z0_drift")}
    z0 = eff.normalised_z0(p, d)
    for s in range(n_seeds):
        if not np.isfinite(e[s]).all():
            continue
        system = eff.parallelogram_system(pg.samples(p)[masks[s]], p)
        lam3 = eff.grokking_rate(system, p, z0=z0)
        out["lambda3"][s] = lam3
        out["n_h"][s] = 1.0 / (lam3 * eta) if lam3 > 0 else np.nan
        try:
            flow = eff.effective_flow(e[s], system, eta, flow_steps,
                                      method=method)  # type: ignore[arg-type]
        except ValueError:  # unstable step, or a constant embedding dimension
            continue
        out["sum_drift"][s] = np.abs(flow.c - flow.c[0]).max() / np.sqrt(flow.z0[0])
        out["z0_drift"][s] = np.abs(flow.z0 - flow.z0[0]).max() / flow.z0[0]
    return out


def effective(model: BatchedModel, spec: ProbeSpec,
              ctx: ProbeContext = _NO_CONTEXT) -> dict[str, Tensor]:
    assert isinstance(spec, EffectiveSpec)
    return _of_rows_and_split("effective", model, ctx, effective_of, spec.eta, spec.flow_steps,
                              spec.method)


_NO_PLANE = 1e-12  # λ_2 / λ_1 below which the top two components span no plane


def pca_of(e: Tensor, p: int) -> dict[str, Tensor]:
    """(S,) top2_share, eff_dim and circular of the first p rows of (S, ≥p, d) embeddings
    (`PCASpec`), from the SVD of the centred rows (variances; the tokens' top-2 coordinates);
    NaN where E is not finite or has no variance."""
    w, finite = _finite_double(e[:, :p])
    x = w - w.mean(dim=1, keepdim=True)
    u, sv, _ = torch.linalg.svd(x, full_matrices=False)
    var = sv.square()  # descending
    total = var.sum(dim=1)
    # no variance: the rows equal up to the float64 rounding of their mean (~1e-32 relative)
    ok = finite & (total > _NO_POWER * w.square().sum(dim=(1, 2)))
    q = var / torch.where(ok, total, 1.0).unsqueeze(1)
    entropy = -torch.where(q > 0, q * q.clamp_min(1e-300).log(), 0.0).sum(dim=1)
    nan = torch.full_like(total, float("nan"))
    out = {"pca.top2_share": torch.where(ok, q[:, :2].sum(dim=1), nan),
           "pca.eff_dim": torch.where(ok, entropy.exp(), nan)}
    if var.shape[1] < 2:  # d = 1: no plane
        out["pca.circular"] = torch.where(ok, 0.0, nan)
        return out
    z = u[:, :, :2] * sv[:, None, :2]
    angle = torch.atan2(z[..., 1], z[..., 0])
    order = torch.sort(angle, dim=1, stable=True).indices  # ties: by token index
    steps = (order.roll(-1, dims=1) - order) % p
    same = (steps == steps[:, :1]).all(dim=1)
    plane = var[:, 1] > _NO_PLANE * var[:, 0]
    out["pca.circular"] = torch.where(ok, (same & plane).double(), nan)
    return out


def pca(model: BatchedModel, spec: ProbeSpec,
        ctx: ProbeContext = _NO_CONTEXT) -> dict[str, Tensor]:
    assert isinstance(spec, PCASpec)
    # the number tokens are rows 0..p-1 of E (models index them by value; extra tokens follow)
    return pca_of(model.role_param("E"), model.shape.p)
