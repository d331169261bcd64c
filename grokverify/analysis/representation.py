"""Representation probes of paper 2's toy (arXiv 2205.10343, §3.1, App. D) on an embedding
E (p × d, any d ≥ 1; leading batch axes, e.g. seeds, are allowed: (..., p, d)): RQI, predicted
accuracy Acc^, impermissible training parallelograms (C1) and realised parallelograms that the
training set does not imply (C9), over the samples and P0 of `grokverify.analysis.parallelogram`.
The probes work on E normalised per dimension (§3.1, the official toy/train_add.py) unless
`normalised=False`; a parallelogram (i, j, m, n) is *realised* when the distance of its defect
Ẽ_i + Ẽ_j − Ẽ_m − Ẽ_n is ≤ δ (the official code's strict < differs only on a null set).
Definitions and where they follow the official code: docs/paper2-algebra.md, "Representation
measures".
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from grokverify.analysis.parallelogram import (
    as_mask,
    parallelogram_samples,
    permissible_parallelograms,
    samples,
)

Distance = Literal["norm", "mean_sq"]
DELTA = 0.01  # paper 2, §3.1 (and the official code's threshold_P)


def _as_embedding(E: np.ndarray) -> np.ndarray:
    E = np.asarray(E, dtype=np.float64)
    if E.ndim == 1:
        E = E[:, None]
    if E.shape[-2] < 2 or E.shape[-1] < 1:
        raise ValueError(f"an embedding is (..., p, d) with p ≥ 2, d ≥ 1; got {E.shape}")
    return E


def normalise(E: np.ndarray, ddof: int = 1) -> np.ndarray:
    """(E − mean) / std per dimension, over the token axis (−2), with the official code's
    unbiased std (torch's default); NaN where a dimension has zero spread or E is not finite,
    so that every probe of a diverged seed is NaN, not "0 parallelograms"."""
    E = _as_embedding(E)
    mean = E.mean(axis=-2, keepdims=True)
    std = E.std(axis=-2, ddof=ddof, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = (E - mean) / std
    return np.where(np.isfinite(std) & (std > 0), out, np.nan)


def defects(E: np.ndarray, distance: Distance = "norm", normalised: bool = True,
            ddof: int = 1) -> np.ndarray:
    """(..., Q): the distance of each permissible parallelogram's defect D (order of P0): "norm"
    |D| (the paper's δ-parallelogram, §3.1) or "mean_sq", the mean over dimensions of D² (the
    official code, compared there with 0.01: in 1-D |D| < 0.1, ten times looser)."""
    if distance not in ("norm", "mean_sq"):
        raise ValueError(f"distance must be 'norm' or 'mean_sq', got {distance!r}")
    E = normalise(E, ddof) if normalised else _as_embedding(E)
    p = E.shape[-2]
    q = permissible_parallelograms(p)
    d = E[..., q[:, 0], :] + E[..., q[:, 1], :] - E[..., q[:, 2], :] - E[..., q[:, 3], :]
    if distance == "norm":
        return np.sqrt((d * d).sum(axis=-1))
    return (d * d).mean(axis=-1)


def realised(E: np.ndarray, delta: float = DELTA, distance: Distance = "norm",
             normalised: bool = True, ddof: int = 1) -> np.ndarray:
    """(..., Q) bool: distance ≤ δ (False where the distance is NaN; see `_valid`)."""
    if not delta >= 0:
        raise ValueError(f"delta must be ≥ 0, got {delta!r}")
    return defects(E, distance, normalised, ddof) <= delta


def _valid(E: np.ndarray, normalised: bool, ddof: int) -> np.ndarray:
    """(...,) bool: the embedding (normalised if asked) is finite everywhere."""
    X = normalise(E, ddof) if normalised else _as_embedding(E)
    return np.isfinite(X).all(axis=(-2, -1))


def rqi(E: np.ndarray, delta: float = DELTA, distance: Distance = "norm",
        normalised: bool = True, ddof: int = 1) -> np.ndarray | float:
    """RQI (§3.1): the share of permissible parallelograms realised within δ (NaN for an
    invalid embedding)."""
    share = realised(E, delta, distance, normalised, ddof).mean(axis=-1)
    out = np.where(_valid(E, normalised, ddof), share, np.nan)
    return float(out) if out.ndim == 0 else out


def reached_samples(real: np.ndarray, mask: np.ndarray, p: int) -> np.ndarray:
    """(..., N) bool: the training samples (mask, (..., N)) and every sample that shares a
    realised parallelogram (real, (..., Q) over P0) with one: Acc^'s one step (App. D)."""
    pairs = parallelogram_samples(p)
    a, b = pairs[:, 0], pairs[:, 1]
    batch = np.broadcast_shapes(real.shape[:-1], mask.shape[:-1])
    real = np.broadcast_to(real, batch + real.shape[-1:]).reshape(-1, len(a))
    mask = np.broadcast_to(mask, batch + mask.shape[-1:]).reshape(-1, mask.shape[-1])
    out = mask.copy()
    for near, far in ((a, b), (b, a)):  # sample `near` reached from training sample `far`
        rows, q = np.nonzero(real & mask[:, far])
        out[rows, near[q]] = True
    return out.reshape(batch + mask.shape[-1:])


def impermissible_gaps(E: np.ndarray, train: np.ndarray | list[int],
                       distance: Distance = "norm", normalised: bool = True,
                       ddof: int = 1) -> np.ndarray:
    """(K,) C1 (Proposition 1): the distance between the embedding sums of every two training
    samples of different classes, for one embedding (p, d); none should be within δ at zero
    training loss. NaN everywhere for an embedding without a normalised form."""
    E = _as_embedding(E)
    if E.ndim != 2:
        raise ValueError(f"one embedding (p, d) at a time, got {E.shape}")
    p = E.shape[0]
    X = normalise(E, ddof) if normalised else E
    pairs = samples(p)[as_mask(p, np.asarray(train))]
    sums = X[pairs[:, 0]] + X[pairs[:, 1]]  # (n, d)
    a, b = np.triu_indices(len(pairs), k=1)
    keep = pairs[a].sum(axis=1) != pairs[b].sum(axis=1)
    d = sums[a[keep]] - sums[b[keep]]
    return np.sqrt((d * d).sum(axis=-1)) if distance == "norm" else (d * d).mean(axis=-1)
