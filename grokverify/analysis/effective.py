"""Paper 2's effective theory of representation learning (arXiv 2205.10343, §3.2, App. F, Eq. 4):
ℓ_eff = ℓ0 / Z0 on embeddings normalised per dimension (sample σ, ddof 1, as the official code),
ℓ0 = ½ EᵀH0E with H0 = 2 AᵀA / |P0(D)|; the flow conserves Z0, its third smallest eigenvalue λ3 is
the grokking rate (n_h = 1 / (λ3 η) steps). Derivations, λ3's normalisation, the conservation laws
and Euler's versus RK4's drift: docs/paper2-algebra.md, "The effective loss and its Hessian".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from grokverify.analysis import parallelogram as pg

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

DDOF = 1  # σ of the normalisation: the official code's torch `.std()` (unbiased)


@dataclass(frozen=True)
class ParallelogramSystem:
    """The linear system a training set implies (§3.2): A E = 0 for its parallelograms."""

    p: int
    samples: IntArray  # (n, 2) the training samples, i ≤ j, unique, sorted
    quads: IntArray  # (q, 4) the parallelograms (i, j, m, n) of P0(D), i + j = m + n
    vectors: FloatArray  # (q, p) A: rows e_i + e_j − e_m − e_n
    gram: FloatArray  # (p, p) AᵀA = Σ v vᵀ (the official notebook's matrix)
    nullity: int  # p − rank(A); ≥ 2 always, = 2 iff the representation is a line a + k b

    @property
    def size(self) -> int:
        """|P0(D)|."""
        return len(self.quads)


Training = ArrayLike | ParallelogramSystem


def parallelogram_system(train: ArrayLike, p: int) -> ParallelogramSystem:
    """P0(D) and its matrix for the training samples `train` ((n, 2) pairs; order within a pair
    and repeats do not matter: the toy's samples are unordered pairs). The parallelograms, their
    rows and the exact nullity are `grokverify.analysis.parallelogram`'s."""
    if p < 2:
        raise ValueError(f"p must be at least 2, got {p}")
    pairs = np.asarray(train, dtype=np.int64).reshape(-1, 2)
    if pairs.size and (pairs.min() < 0 or pairs.max() >= p):
        raise ValueError(f"training samples must lie in 0..{p - 1}")
    i, j = np.sort(pairs, axis=1).T
    mask = pg.as_mask(p, np.unique(i * p - i * (i - 1) // 2 + (j - i)))  # lexicographic index
    keep = mask[pg.parallelogram_samples(p)].all(axis=1)
    vectors = pg.equation_rows(p)[keep].astype(np.float64)
    return ParallelogramSystem(p=p, samples=pg.samples(p)[mask],
                               quads=pg.permissible_parallelograms(p)[keep], vectors=vectors,
                               gram=vectors.T @ vectors, nullity=pg.nullity(p, mask))


def _system(train: Training, p: int) -> ParallelogramSystem:
    if isinstance(train, ParallelogramSystem):
        if train.p != p:
            raise ValueError(f"the system is for p = {train.p}, the embeddings have p = {p}")
        return train
    return parallelogram_system(train, p)


def _as_matrix(E: ArrayLike) -> FloatArray:
    """Embeddings as a (p, d) float64 matrix; a 1-D array is d = 1."""
    arr = np.asarray(E, dtype=np.float64)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2:
        raise ValueError(f"embeddings must be (p,) or (p, d), got shape {arr.shape}")
    return arr


def normalise(E: ArrayLike, ddof: int = DDOF) -> FloatArray:
    """Ẽ_k = (E_k − μ)/σ per dimension (§3.2), as a (p, d) matrix."""
    arr = _as_matrix(E)
    sigma = arr.std(axis=0, ddof=ddof)
    if np.any(sigma == 0):
        raise ValueError("an embedding dimension is constant: it cannot be normalised")
    return (arr - arr.mean(axis=0)) / sigma


def normalised_z0(p: int, d: int = 1, ddof: int = DDOF) -> float:
    """Z0 of normalised embeddings: Σ_k |Ẽ_k|² = d (p − ddof)."""
    return float(d * (p - ddof))


def l0_hessian(train: Training, p: int) -> FloatArray:
    """H0 = 2 AᵀA / |P0(D)|, with ℓ0 = ½ Eᵀ H0 E per dimension (zero when P0(D) is empty)."""
    system = _system(train, p)
    return 2.0 * system.gram / system.size if system.size else np.zeros((p, p))


def effective_gradient(E: FloatArray, h0: FloatArray) -> FloatArray:
    """∂ℓ_eff/∂E at E (p, d) as given, with H0 = `l0_hessian`: (H0 E − 2 ℓ_eff E) / Z0, where
    ℓ_eff = ½ EᵀH0E / Z0 (the flow's velocity, sign flipped)."""
    z = float(np.sum(E**2))
    he = h0 @ E
    l_eff = 0.5 * float(np.sum(E * he)) / z
    return (he - 2.0 * l_eff * E) / z


def effective_hessian(train: Training, p: int, *, z0: float | None = None) -> FloatArray:
    """H = H0 / Z0 = 2 AᵀA / (|P0(D)| Z0): ℓ_eff = ½ RᵀHR at the conserved Z0, per dimension.
    `z0` defaults to that of normalised 1-D embeddings (p − 1); pass the flow's own otherwise."""
    z = normalised_z0(p) if z0 is None else float(z0)
    if z <= 0:
        raise ValueError(f"z0 must be positive, got {z0}")
    return l0_hessian(train, p) / z


def hessian_spectrum(train: Training, p: int, *, z0: float | None = None) -> FloatArray:
    """The eigenvalues of `effective_hessian`, ascending."""
    return np.linalg.eigvalsh(effective_hessian(train, p, z0=z0))


def grokking_rate(train: Training, p: int, *, z0: float | None = None) -> float:
    """λ3, the third smallest eigenvalue of H (§3.2); exactly 0 when the nullity of A exceeds 2
    (the representation is not pinned down; the round-off value is not reported)."""
    system = _system(train, p)
    if system.nullity > 2:
        return 0.0
    return float(hessian_spectrum(system, p, z0=z0)[2])


@dataclass(frozen=True)
class EffectiveFlow:
    """A discretised gradient flow on ℓ_eff, recorded every `record_every` steps and at the end."""

    steps: IntArray  # (r,) step index of each record
    trajectory: FloatArray  # (r, p, d) embeddings
    l_eff: FloatArray  # (r,) ℓ_eff on E as it stands
    c: FloatArray  # (r, d) Σ_k E_k
    z0: FloatArray  # (r,) Σ_k |E_k|²
    eta: float
    method: str


def effective_flow(E0: ArrayLike, train: Training, eta: float, steps: int, *,
                   method: Literal["euler", "rk4"] = "euler", normalised: bool = True,
                   ddof: int = DDOF, record_every: int = 1) -> EffectiveFlow:
    """`steps` explicit steps of size η on dE/dt = −∂ℓ_eff/∂E from E0 (normalised first, as the
    official code starts): Euler is plain gradient descent and raises Z0 by η²|∇ℓ_eff|² a step,
    RK4 drifts O(η⁴). Either refuses η λ_max(H) ≥ 2, where Euler's linearised step diverges."""
    if eta <= 0 or steps < 0 or record_every < 1:
        raise ValueError("need eta > 0, steps ≥ 0 and record_every ≥ 1")
    if method not in ("euler", "rk4"):
        raise ValueError(f"unknown method {method!r}: euler or rk4")
    emb = normalise(E0, ddof) if normalised else _as_matrix(E0).copy()
    p = emb.shape[0]
    system = _system(train, p)
    h0 = l0_hessian(system, p)
    z_start = float(np.sum(emb**2))
    if z_start == 0.0:
        raise ValueError("Z0 = 0: the effective loss is undefined at E = 0")
    lam_max = float(np.linalg.eigvalsh(h0)[-1]) / z_start
    if eta * lam_max >= 2.0:
        raise ValueError(f"eta = {eta} is unstable: eta * lambda_max(H) = {eta * lam_max:.3g} ≥ 2")

    def velocity(e: FloatArray) -> FloatArray:
        return -effective_gradient(e, h0)

    records: list[tuple[int, FloatArray]] = [(0, emb.copy())]
    for step in range(1, steps + 1):
        if method == "euler":
            emb = emb + eta * velocity(emb)
        else:
            k1 = velocity(emb)
            k2 = velocity(emb + 0.5 * eta * k1)
            k3 = velocity(emb + 0.5 * eta * k2)
            k4 = velocity(emb + eta * k3)
            emb = emb + eta / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
        if step % record_every == 0 or step == steps:
            records.append((step, emb.copy()))
    traj = np.stack([e for _, e in records])
    z0 = np.sum(traj**2, axis=(1, 2))
    l_eff = np.einsum("rpd,pq,rqd->r", traj, h0, traj) / (2.0 * z0)
    return EffectiveFlow(steps=np.array([s for s, _ in records], dtype=np.int64),
                         trajectory=traj, l_eff=l_eff, c=traj.sum(axis=1), z0=z0,
                         eta=float(eta), method=method)
