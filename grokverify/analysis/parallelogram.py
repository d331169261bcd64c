"""Parallelogram algebra of paper 2's toy (arXiv 2205.10343, §3.2, App. C): which embedding
equations a training set implies, and whether they pin the embedding to a line. Samples are the
pairs i <= j in lexicographic order (`grokverify.engine.tasks.pairs_for`'s, the official
`D0_id`'s); A(D) has a row e_i + e_j − e_m − e_n per permissible parallelogram within D, and
n0 = p − rank A(D) = 2 means E_k = a + k·b is the only solution. Proposition 2 and the ranks:
docs/paper2-algebra.md, "Rank: exact and vectorised".
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache
from math import gcd, lcm

import numpy as np
from scipy import sparse

_REL_TOL = 1e-10  # eigenvalue > _REL_TOL · p · λ_max counts towards the rank (float eps ~2e-16)
_CHUNK = 4096  # training sets per vectorised block (bounds memory at p = 60: ~120 MB)


# ------------------------------------------------------------------ the task's combinatorics


def _frozen(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


def _check_p(p: int) -> None:
    if int(p) != p or p < 2:
        raise ValueError(f"p must be an integer ≥ 2, got {p!r}")


@lru_cache(maxsize=32)
def samples(p: int) -> np.ndarray:
    """(N, 2) int64: the samples (i, j), i ≤ j, lexicographic; N = p(p+1)/2."""
    _check_p(p)
    i, j = np.triu_indices(p)
    return _frozen(np.stack([i, j], axis=1).astype(np.int64))


def n_samples(p: int) -> int:
    return p * (p + 1) // 2


def sample_index(p: int, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """Index in `samples(p)` of the sample {i, j} (either order), elementwise: rows before
    min(i, j) hold p, p - 1, ... samples."""
    lo, hi = np.minimum(i, j).astype(np.int64), np.maximum(i, j).astype(np.int64)
    return lo * p - lo * (lo - 1) // 2 + (hi - lo)


@lru_cache(maxsize=32)
def _p0(p: int) -> tuple[np.ndarray, np.ndarray]:
    s = samples(p)
    cls = s.sum(axis=1)
    a, b = np.triu_indices(len(s), k=1)
    keep = cls[a] == cls[b]
    pairs = np.stack([a[keep], b[keep]], axis=1).astype(np.int64)
    quads = np.concatenate([s[pairs[:, 0]], s[pairs[:, 1]]], axis=1)
    return _frozen(pairs), _frozen(quads)


def parallelogram_samples(p: int) -> np.ndarray:
    """(Q, 2): the sample indices (a, b), a < b, of each permissible parallelogram (P0)."""
    return _p0(p)[0]


def permissible_parallelograms(p: int) -> np.ndarray:
    """(Q, 4): the quadruple (i, j, m, n) of each permissible parallelogram, i + j = m + n, with
    (i, j) the earlier sample; same order as `parallelogram_samples`."""
    return _p0(p)[1]


@lru_cache(maxsize=32)
def equation_rows(p: int) -> np.ndarray:
    """(Q, p) int8: e_i + e_j − e_m − e_n for each parallelogram of P0 (the official code's A;
    entries in −2..2, since E_i + E_i counts 2)."""
    quads = permissible_parallelograms(p)
    rows = np.zeros((len(quads), p), dtype=np.int8)
    r = np.arange(len(quads))
    for col, sign in zip(range(4), (1, 1, -1, -1), strict=True):
        np.add.at(rows, (r, quads[:, col]), sign)
    return _frozen(rows)


def as_mask(p: int, train: np.ndarray | list[int]) -> np.ndarray:
    """A training set as a boolean mask over the samples: a bool array of length N is taken as
    it is, anything else as sample indices (repeats are an error)."""
    n = n_samples(p)
    t = np.asarray(train)
    if t.dtype == bool:
        if t.shape != (n,):
            raise ValueError(f"a training mask for p = {p} has shape ({n},), got {t.shape}")
        return t.copy()
    t = t.astype(np.int64).ravel()
    if t.size and (t.min() < 0 or t.max() >= n):
        raise ValueError(f"sample indices must lie in [0, {n}), got {t.min()}…{t.max()}")
    if len(np.unique(t)) != len(t):
        raise ValueError("repeated sample index in a training set")
    mask = np.zeros(n, dtype=bool)
    mask[t] = True
    return mask


def system(p: int, train: np.ndarray | list[int]) -> np.ndarray:
    """A(D): the rows of `equation_rows` whose two samples are both in the training set."""
    mask = as_mask(p, train)
    pairs = parallelogram_samples(p)
    return equation_rows(p)[mask[pairs[:, 0]] & mask[pairs[:, 1]]]


# ------------------------------------------------------------------ exact rank and null space


def _echelon(rows: np.ndarray) -> list[list[int]]:
    """Integer row-echelon basis of the rows' span (fraction-free; each row divided by its
    content so entries stay small). Rows are returned by increasing leading column."""
    basis: dict[int, list[int]] = {}  # leading column → row
    width = rows.shape[1] if rows.ndim == 2 else 0
    for raw in rows:
        r = [int(x) for x in raw]
        for c in sorted(basis):
            if r[c]:
                b = basis[c]
                f, g = b[c], r[c]
                r = [f * x - g * y for x, y in zip(r, b, strict=True)]
        lead = next((c for c in range(width) if r[c]), None)
        if lead is None:
            continue
        content = 0
        for x in r:
            content = gcd(content, x)
        if r[lead] < 0:
            content = -content
        basis[lead] = [x // content for x in r]
        if len(basis) == width:
            break
    return [basis[c] for c in sorted(basis)]


def _reduced_rows(p: int, mask: np.ndarray) -> np.ndarray:
    """Rows spanning the same space as A(D) but at most |D| of them: within each class, the
    first training sample's sum vector minus each other's (every row of A(D) is a difference of
    two of these, and each of these is a row of A(D))."""
    s = samples(p)[mask]
    cls = s.sum(axis=1)
    v = np.zeros((len(s), p), dtype=np.int64)
    np.add.at(v, (np.arange(len(s)), s[:, 0]), 1)
    np.add.at(v, (np.arange(len(s)), s[:, 1]), 1)
    out = []
    for c in np.unique(cls):
        members = v[cls == c]
        out.extend(members[0] - members[1:])
    return np.array(out, dtype=np.int64).reshape(-1, p)


def rank(p: int, train: np.ndarray | list[int]) -> int:
    """Exact rank of A(D) over the rationals (integer elimination on Python ints: no rounding,
    no overflow)."""
    return len(_echelon(_reduced_rows(p, as_mask(p, train))))


def nullity(p: int, train: np.ndarray | list[int]) -> int:
    """Exact n0 = p − rank A(D)."""
    return p - rank(p, train)


def null_space(p: int, train: np.ndarray | list[int]) -> np.ndarray:
    """(p, n0) object array of Python ints: an exact integer basis of {E : A(D) E = 0}."""
    basis = _echelon(_reduced_rows(p, as_mask(p, train)))
    leads = [next(c for c, x in enumerate(r) if x) for r in basis]
    # Reduced row-echelon form over the rationals (back substitution).
    rref = [[Fraction(x, r[lead]) for x in r] for r, lead in zip(basis, leads, strict=True)]
    for k in range(len(rref) - 1, -1, -1):
        for h in range(k):
            f = rref[h][leads[k]]
            if f:
                rref[h] = [x - f * y for x, y in zip(rref[h], rref[k], strict=True)]
    free = [c for c in range(p) if c not in set(leads)]
    cols = []
    for f in free:
        x = [Fraction(0)] * p
        x[f] = Fraction(1)
        for row, lead in zip(rref, leads, strict=True):
            x[lead] = -row[f]
        scale = lcm(*(q.denominator for q in x))
        cols.append([int(q * scale) for q in x])
    out = np.empty((p, len(cols)), dtype=object)
    for k, col in enumerate(cols):
        out[:, k] = col
    return out


def implied(p: int, train: np.ndarray | list[int], chaining: bool = True) -> np.ndarray:
    """(Q,) bool over P0: the parallelograms the training set implies: with chaining (the paper's
    P(D), as the official toy/train_add.py) every one in the row space of A(D), tested exactly
    against an integer null-space basis; without, P0(D) (both samples in training)."""
    mask = as_mask(p, train)
    pairs = parallelogram_samples(p)
    direct = mask[pairs[:, 0]] & mask[pairs[:, 1]]
    if not chaining:
        return direct
    ns = null_space(p, mask)
    prod = equation_rows(p).astype(np.int64).astype(object) @ ns
    return np.all(prod == 0, axis=1) if ns.shape[1] else np.ones(len(pairs), dtype=bool)


# ------------------------------------------------------------------ vectorised Gram and rank


@lru_cache(maxsize=16)
def _gram_parts(p: int) -> tuple[sparse.csr_matrix, sparse.csr_matrix, sparse.csr_matrix]:
    """Sparse maps from a training mask (N,) to: Σ w_k v_k v_kᵀ (flattened p²), the per-class
    sums Σ v_k (flattened (2p−1)·p) and the per-class counts (2p−1)."""
    s = samples(p)
    n = len(s)
    cls = s.sum(axis=1)
    k = np.arange(n)
    i, j = s[:, 0], s[:, 1]
    # v_k v_kᵀ has +1 at (i,i), (j,j), (i,j), (j,i): 4 at (i,i) when i = j (duplicates sum).
    rows = np.repeat(k, 4)
    cols = np.stack([i * p + i, j * p + j, i * p + j, j * p + i], axis=1).ravel()
    outer = sparse.csr_matrix((np.ones(4 * n), (rows, cols)), shape=(n, p * p))
    rows2 = np.repeat(k, 2)
    cols2 = np.stack([cls * p + i, cls * p + j], axis=1).ravel()
    sums = sparse.csr_matrix((np.ones(2 * n), (rows2, cols2)), shape=(n, (2 * p - 1) * p))
    count = sparse.csr_matrix((np.ones(n), (k, cls)), shape=(n, 2 * p - 1))
    return outer, sums, count


def gram(p: int, masks: np.ndarray) -> np.ndarray:
    """(S, p, p) float64: A(D)ᵀA(D) for each training mask (S, N), in closed form per class
    (n_s Σ v_k v_kᵀ − (Σ v_k)(Σ v_k)ᵀ over its n_s training sum vectors); integers, exact."""
    masks = np.atleast_2d(np.asarray(masks, dtype=bool))
    if masks.shape[1] != n_samples(p):
        raise ValueError(f"masks for p = {p} have {n_samples(p)} columns, got {masks.shape[1]}")
    outer, sums, count = _gram_parts(p)
    cls = samples(p).sum(axis=1)
    x = masks.astype(np.float64)
    n_cls = (count.T @ x.T).T  # (S, 2p−1)
    w = x * n_cls[:, cls]
    term1 = (outer.T @ w.T).T.reshape(-1, p, p)
    s_cls = (sums.T @ x.T).T.reshape(-1, 2 * p - 1, p)
    return term1 - np.einsum("scp,scq->spq", s_cls, s_cls)


def gram_eigenvalues(p: int, masks: np.ndarray) -> np.ndarray:
    """(S, p): eigenvalues of A(D)ᵀA(D), ascending, per training mask."""
    masks = np.atleast_2d(np.asarray(masks, dtype=bool))
    out = np.empty((len(masks), p))
    for start in range(0, len(masks), _CHUNK):
        out[start:start + _CHUNK] = np.linalg.eigvalsh(gram(p, masks[start:start + _CHUNK]))
    return out


def nullities(p: int, masks: np.ndarray) -> np.ndarray:
    """(S,) int: n0 of each training mask (S, N), the count of Gram eigenvalues at round-off
    level; the Monte-Carlo counterpart of the exact `nullity` (the tests check they agree)."""
    eigs = gram_eigenvalues(p, masks)
    tol = _REL_TOL * p * np.maximum(eigs[:, -1], 1.0)
    return (eigs <= tol[:, None]).sum(axis=1)
