"""Paper 2's effective theory of representation learning (arXiv 2205.10343, §3.2, App. F, Eq. 4).

The toy: samples are unordered pairs (i, j), 0 ≤ i ≤ j < p, with answer i + j. Two distinct
training samples with the same sum imply the parallelogram (i, j, m, n): E_i + E_j = E_m + E_n.
P0(D) is the set of those, one per unordered pair of training samples (the official code's
`P0D_id` counts each pair once; it is the |P0(D)| of Eq. 4). Each parallelogram is a row
v = e_i + e_j − e_m − e_n of the matrix A, so v·E = E_i + E_j − E_m − E_n.

Eq. 4: ℓ_eff = ℓ0 / Z0, ℓ0 = Σ_{P0(D)} |Ẽ_i + Ẽ_j − Ẽ_m − Ẽ_n|² / |P0(D)|, Z0 = Σ_k |Ẽ_k|², on
embeddings normalised per dimension, Ẽ_k = (E_k − μ)/σ (§3.2). The paper does not say which σ;
we use the sample standard deviation (ddof = 1), as the official code does (torch's `.std()`),
so the Z0 of normalised 1-D embeddings is p − 1. An empty P0(D) gives ℓ0 = 0 (no equations).

The Hessian. Per embedding dimension, ℓ0 = ½ Eᵀ H0 E with H0 = 2 AᵀA / |P0(D)|; over all d
dimensions it is H0 ⊗ I_d. The gradient of ℓ_eff is (H0 E − 2 ℓ_eff E) / Z0; Z0 is constant
along the flow, so dE/dt = −H E + (2 ℓ_eff / Z0) E with the constant H = H0 / Z0, and
ℓ_eff = ½ RᵀHR, the form §3.2 uses. The second term scales every mode alike, so relative to the
linear (null) modes the k-th eigenmode decays exactly as e^{−λ_k t} (`exact_flow` is this closed
form). λ1 = λ2 = 0 always (every row of A is orthogonal to the constant vector and to k ↦ k: the
translation and scale modes), and λ3, the third smallest, is the "grokking rate"; gradient
descent with rate η needs n_h = 1 / (λ3 η) steps to shrink that mode by e (the paper: trajectories
take about 3 n_h; in the flow the multiple depends on how linear the start already is). The
constant 2 / (|P0(D)| Z0) is our reading (the H for which ℓ_eff = ½ RᵀHR holds); the official
notebook `effective_linear_eq.ipynb` reports eigenvalues of the raw Gram
AᵀA instead (`ParallelogramSystem.gram`), which differ by exactly that factor and have the same
null space. When the nullity of A exceeds 2 the training set does not pin the representation
down, λ3 = 0 and no time is predicted (n_h = inf).

Conservation (App. F). Euler's identity for the degree-0 homogeneous ℓ_eff gives
Σ_k E_k · ∂ℓ_eff/∂E_k = 0, so the flow conserves Z0 = Σ_k |E_k|² exactly, from any start. For
C = Σ_k E_k, translation invariance of ℓ0 gives dC/dt = 2 ℓ_eff C / Z0: C is conserved when it
starts at 0, i.e. for normalised (centred) embeddings, and grows otherwise (ℓ_eff is not
translation invariant: Z0 is not). The flow is approximated by explicit steps: Euler (plain
gradient descent, the paper's practice and the unit of n_h) keeps C = 0 exactly but raises Z0 by
η² |∇ℓ_eff|² every step, a drift O(η) over a fixed time η·steps; RK4 drifts O(η⁴) over the same
time and is there for when the flow itself is wanted.
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


def all_samples(p: int) -> IntArray:
    """Every sample of the toy, (i, j) with 0 ≤ i ≤ j < p: p (p + 1) / 2 rows."""
    return pg.samples(p)


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


@dataclass(frozen=True)
class EffectiveLoss:
    l0: float  # mean squared parallelogram defect over P0(D)
    z0: float  # Σ_k |E_k|²
    l_eff: float  # ℓ0 / Z0 (Eq. 4)


def l0_hessian(train: Training, p: int) -> FloatArray:
    """H0 = 2 AᵀA / |P0(D)|, with ℓ0 = ½ Eᵀ H0 E per dimension (zero when P0(D) is empty)."""
    system = _system(train, p)
    return 2.0 * system.gram / system.size if system.size else np.zeros((p, p))


def effective_loss(E: ArrayLike, train: Training, *, normalised: bool = True,
                   ddof: int = DDOF) -> EffectiveLoss:
    """ℓ0, Z0 and ℓ_eff of Eq. 4; on Ẽ (`normalised=True`, the paper's definition) or on E as
    given (`normalised=False`: the function the flow descends)."""
    emb = normalise(E, ddof) if normalised else _as_matrix(E)
    system = _system(train, emb.shape[0])
    defects = system.vectors @ emb
    l0 = float(np.sum(defects**2) / system.size) if system.size else 0.0
    z0 = float(np.sum(emb**2))
    if z0 == 0.0:
        raise ValueError("Z0 = 0: the effective loss is undefined at E = 0")
    return EffectiveLoss(l0=l0, z0=z0, l_eff=l0 / z0)


def effective_gradient(E: ArrayLike, train: Training) -> FloatArray:
    """∂ℓ_eff/∂E at E as given, (p, d): (H0 E − 2 ℓ_eff E) / Z0 (no normalisation inside)."""
    emb = _as_matrix(E)
    system = _system(train, emb.shape[0])
    loss = effective_loss(emb, system, normalised=False)
    return (l0_hessian(system, emb.shape[0]) @ emb - 2.0 * loss.l_eff * emb) / loss.z0


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


def predicted_steps(train: Training, p: int, eta: float, *, z0: float | None = None) -> float:
    """n_h = 1 / (λ3 η) (§3.2); inf when λ3 = 0."""
    if eta <= 0:
        raise ValueError(f"eta must be positive, got {eta}")
    rate = grokking_rate(train, p, z0=z0)
    return float("inf") if rate == 0.0 else 1.0 / (rate * eta)


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

    def linearity(self) -> FloatArray:
        """`linearity_residual` of every record (vectorised: the part of the centred E off the
        unit vector along k − k̄)."""
        centred = self.trajectory - self.trajectory.mean(axis=1, keepdims=True)
        k = np.arange(centred.shape[1], dtype=np.float64)
        unit = (k - k.mean()) / np.linalg.norm(k - k.mean())
        along = np.einsum("p,rpd->rd", unit, centred)
        spread = np.sum(centred**2, axis=(1, 2))
        return (spread - np.sum(along**2, axis=1)) / spread


def effective_flow(E0: ArrayLike, train: Training, eta: float, steps: int, *,
                   method: Literal["euler", "rk4"] = "euler", normalised: bool = True,
                   ddof: int = DDOF, record_every: int = 1) -> EffectiveFlow:
    """`steps` explicit steps of size η on dE/dt = −∂ℓ_eff/∂E from E0 (normalised first when
    `normalised`, as the official code starts from the normalised embeddings). Euler is plain
    gradient descent; RK4 follows the flow to O(η⁴). Either refuses η λ_max(H) ≥ 2, where the
    linearised step stops contracting (Euler's bound; RK4's real-axis bound is ≈ 2.79)."""
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
        z = float(np.sum(e**2))
        he = h0 @ e
        l_eff = 0.5 * float(np.sum(e * he)) / z
        return -(he - 2.0 * l_eff * e) / z

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


def exact_flow(E0: ArrayLike, train: Training, times: ArrayLike, *, normalised: bool = True,
               ddof: int = DDOF) -> FloatArray:
    """The flow in closed form at continuous times t (step n of size η is t = n η), (len(times),
    p, d). Z0 is conserved, so along the flow −∂ℓ_eff/∂E = −H E + (2 ℓ_eff / Z0) E with the
    constant H = H0 / Z0: the linear flow e^{−Ht} E0 rescaled onto Z0, E(t) = √Z0 · e^{−Ht} E0 /
    ‖e^{−Ht} E0‖. Each mode relative to the null (linear) modes decays exactly as e^{−λ_k t}."""
    emb = normalise(E0, ddof) if normalised else _as_matrix(E0)
    p = emb.shape[0]
    z0 = float(np.sum(emb**2))
    if z0 == 0.0:
        raise ValueError("Z0 = 0: the effective loss is undefined at E = 0")
    lam, vecs = np.linalg.eigh(l0_hessian(_system(train, p), p) / z0)
    coef = vecs.T @ emb  # (p, d) modal coordinates
    t = np.asarray(times, dtype=np.float64).reshape(-1)
    if np.any(t < 0):
        raise ValueError("times must be non-negative")
    y = np.einsum("pk,tk,kd->tpd", vecs, np.exp(-np.outer(t, lam)), coef)
    return y * np.sqrt(z0 / np.sum(y**2, axis=(1, 2)))[:, None, None]


def linearity_residual(E: ArrayLike) -> float:
    """How far E is from a linear representation E_k = a + k b: the least-squares residual of
    that fit over Σ_k |E_k − Ē|² (0 on a line, at most 1; invariant to translation and scale).
    An RQI-like check without RQI's δ threshold."""
    emb = _as_matrix(E)
    spread = float(np.sum((emb - emb.mean(axis=0)) ** 2))
    if spread == 0.0:
        raise ValueError("all embeddings coincide: the residual is undefined")
    k = np.arange(emb.shape[0], dtype=np.float64)
    design = np.stack([np.ones_like(k), k], axis=1)
    coef = np.linalg.lstsq(design, emb, rcond=None)[0]
    return float(np.sum((emb - design @ coef) ** 2)) / spread


def steps_to_structure(flow: EffectiveFlow, tol: float) -> int | None:
    """The first recorded step whose `linearity_residual` is ≤ tol (the measured time to
    structure, to set beside n_h for claim C5), or None if the flow never gets there."""
    hit = np.flatnonzero(flow.linearity() <= tol)
    return int(flow.steps[hit[0]]) if hit.size else None
