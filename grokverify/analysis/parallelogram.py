"""Parallelogram algebra of paper 2's toy (arXiv 2205.10343, §3.2, App. C): which embedding
equations a training set implies, and how often a random training set pins the embedding down.

The toy's samples are the unordered pairs (i, j), 0 ≤ i ≤ j < p, in lexicographic order (the
order of `grokverify.engine.tasks.pairs_for` for an unordered task and of the official
code's `D0_id`);
a sample's answer is i + j, its *class*. A permissible parallelogram (the set P0) is an unordered
pair of distinct samples (i, j), (m, n) with i + j = m + n; `permissible_parallelograms` lists
each once, as the sample pair (a, b) with a < b in sample order, and its quadruple (i, j, m, n).

Proposition 2: an ideal model (zero training loss, injective decoder) that trains on two samples
of one class has E_i + E_j = E_m + E_n. The system A(D) has one row e_i + e_j − e_m − e_n (entries
in −2..2; E_i + E_i counts 2) for every parallelogram whose two samples are both in the training
set D, in the order of P0. The all-ones vector and (0, 1, …, p−1) solve every row (translation
and scale), so the nullity n0 = p − rank A(D) is ≥ 2 (p ≥ 2), and = 2 for the full set; n0 = 2
means E_k = a + k·b is the only solution.

Two rank computations: `nullity` is exact (fraction-free elimination over the integers, Python
ints: no rounding, no overflow); `nullities` is the vectorised one for Monte Carlo: the Gram
matrix A(D)ᵀA(D), built per set in closed form (per class s with n_s training samples of sum
vectors v_k = e_i + e_j: n_s Σ v_k v_kᵀ − (Σ v_k)(Σ v_k)ᵀ; integers, exact in float64), and
its rank from `numpy.linalg.eigvalsh` with the tolerance `_REL_TOL`·p·λ_max. tests/
test_parallelogram.py checks that the two agree on every training set of p ≤ 5 and on random sets
up to p = 60. The same Gram matrix is the official notebook's (phase_diagram_plot/
effective_linear_eq.ipynb), whose third-smallest eigenvalue is paper 2's λ3 up to the
normalisation 1/|P0(D)| of ℓ0 (§3.2, Fig. 5a): `Nullity2Curve.lambda3_mean` reports it.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from math import gcd, lcm

import numpy as np
from scipy import sparse
from scipy.stats import beta

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
    """(Q, p) int8: e_i + e_j − e_m − e_n for each parallelogram of P0 (the official code's A)."""
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
    """Exact rank of A(D) over the rationals."""
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
    """(Q,) bool over P0: the parallelograms the training set implies. Without chaining, those
    whose two samples are both training samples (P0(D), Proposition 2 directly); with chaining
    (the paper's P(D), as in the official toy/train_add.py), every parallelogram whose equation
    is a linear consequence of A(D), i.e. lies in its row space — tested exactly, as orthogonality
    to an integer basis of the null space."""
    mask = as_mask(p, train)
    pairs = parallelogram_samples(p)
    direct = mask[pairs[:, 0]] & mask[pairs[:, 1]]
    if not chaining:
        return direct
    ns = null_space(p, mask)
    prod = equation_rows(p).astype(np.int64).astype(object) @ ns
    return np.all(prod == 0, axis=1) if ns.shape[1] else np.ones(len(pairs), dtype=bool)


def ideal_accuracy(p: int, train: np.ndarray | list[int]) -> tuple[float, float]:
    """(over all samples, over the non-training samples) of the ideal accuracy Acc-bar: a sample
    is right when it is a training sample or shares an implied (chained) parallelogram with one
    (the official code's `calculate_Dbar` on P(D); single step, as there). The second is NaN when
    the training set is the full set."""
    mask = as_mask(p, train)
    pairs = parallelogram_samples(p)
    use = implied(p, mask, chaining=True)
    reach = mask.copy()
    a, b = pairs[use, 0], pairs[use, 1]
    reach[a[mask[b]]] = True
    reach[b[mask[a]]] = True
    n_test = int((~mask).sum())
    test = float((reach & ~mask).sum() / n_test) if n_test else float("nan")
    return float(reach.mean()), test


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
    """(S, p, p) float64: A(D)ᵀA(D) for each training mask (S, N); integer-valued and exact."""
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


def _nullities_from_eigs(p: int, eigs: np.ndarray) -> np.ndarray:
    tol = _REL_TOL * p * np.maximum(eigs[:, -1], 1.0)
    return (eigs <= tol[:, None]).sum(axis=1)


def nullities(p: int, masks: np.ndarray) -> np.ndarray:
    """(S,) int: n0 of each training mask (S, N), from the Gram eigenvalues."""
    return _nullities_from_eigs(p, gram_eigenvalues(p, masks))


def random_training_sets(p: int, k: int, n_sets: int, rng: np.random.Generator) -> np.ndarray:
    """(n_sets, N) bool: n_sets training sets of k samples, each uniform without replacement."""
    n = n_samples(p)
    if not 0 <= k <= n:
        raise ValueError(f"training-set size must be in [0, {n}], got {k}")
    masks = np.zeros((n_sets, n), dtype=bool)
    if k == 0 or n_sets == 0:
        return masks
    keys = rng.random((n_sets, n))
    chosen = np.argpartition(keys, k - 1, axis=1)[:, :k] if k < n else np.arange(n)[None]
    np.put_along_axis(masks, np.broadcast_to(chosen, (n_sets, k)), True, axis=1)
    return masks


# ------------------------------------------------------------------ P(n0 = 2) and r_c


def clopper_pearson(x: np.ndarray, n: int, level: float) -> tuple[np.ndarray, np.ndarray]:
    """Two-sided exact (Clopper–Pearson) interval for x successes out of n, vectorised; equals
    scipy.stats.binomtest(x, n).proportion_ci(level, method='exact')."""
    x = np.asarray(x, dtype=np.float64)
    alpha = 1.0 - level
    with np.errstate(invalid="ignore"):
        lo = np.where(x > 0, beta.ppf(alpha / 2, x, n - x + 1), 0.0)
        hi = np.where(x < n, beta.ppf(1 - alpha / 2, x + 1, n - x), 1.0)
    return lo, hi


@dataclass(frozen=True)
class Nullity2Curve:
    """P(n0 = 2) against training-set size k, from n_sets random sets per size."""

    p: int
    sizes: np.ndarray  # (K,) training-set sizes, ascending
    n_sets: int
    counts: np.ndarray  # (K,) sets with n0 = 2
    share: np.ndarray  # (K,) counts / n_sets
    ci_low: np.ndarray  # (K,) Clopper–Pearson at `level`
    ci_high: np.ndarray
    level: float
    lambda3_mean: np.ndarray  # (K,) mean third-smallest eigenvalue of A(D)ᵀA(D)

    @property
    def fractions(self) -> np.ndarray:
        """Training fractions k / N."""
        return self.sizes / n_samples(self.p)


def p_nullity2(p: int, sizes: list[int] | np.ndarray, n_sets: int, rng: np.random.Generator,
               level: float = 0.95) -> Nullity2Curve:
    """For each size k (sorted ascending), the share of n_sets uniformly random k-sample
    training sets whose n0 is exactly 2, with a Clopper–Pearson interval at `level` (paper 2,
    Fig. 4a; the official notebook uses 10,000 sets per size). Sizes are drawn in ascending
    order from `rng`, so the curve is reproducible from the caller's seed."""
    _check_p(p)
    if n_sets < 1:
        raise ValueError("n_sets must be ≥ 1")
    ks = np.array(sorted({int(k) for k in sizes}), dtype=np.int64)
    if ks.size == 0:
        raise ValueError("no training-set sizes given")
    counts = np.zeros(len(ks), dtype=np.int64)
    lam3 = np.zeros(len(ks))
    for t, k in enumerate(ks):
        done = 0
        while done < n_sets:
            m = min(_CHUNK, n_sets - done)
            eigs = gram_eigenvalues(p, random_training_sets(p, int(k), m, rng))
            counts[t] += int((_nullities_from_eigs(p, eigs) == 2).sum())
            lam3[t] += float(eigs[:, 2].sum()) if p > 2 else 0.0
            done += m
    lo, hi = clopper_pearson(counts, n_sets, level)
    return Nullity2Curve(p=p, sizes=ks, n_sets=n_sets, counts=counts, share=counts / n_sets,
                         ci_low=lo, ci_high=hi, level=level, lambda3_mean=lam3 / n_sets)


@dataclass(frozen=True)
class CriticalFraction:
    """r_c = k_c / N, where P(n0 = 2) first reaches ½, with a percentile bootstrap CI."""

    p: int
    k_c: float
    r_c: float
    ci_low: float  # of r_c
    ci_high: float
    level: float
    n_boot: int
    unresolved: int  # bootstrap replicates with no crossing inside the size grid (clamped)
    method: str = ("linear interpolation of the first upward crossing of ½; CI: percentile "
                   "bootstrap, each size's count redrawn Binomial(n_sets, share)")


def _crossing(sizes: np.ndarray, share: np.ndarray) -> np.ndarray:
    """(B,) k where each row of share (B, K) first reaches ½, linearly interpolated from the
    size before; NaN where no row value reaches ½ or the first size already does."""
    above = share >= 0.5
    t = np.argmax(above, axis=1)
    ok = above.any(axis=1) & (t > 0)
    t0 = np.where(ok, t - 1, 0)
    t1 = np.where(ok, t, 1)
    rows = np.arange(len(share))
    s0, s1 = share[rows, t0], share[rows, t1]
    with np.errstate(divide="ignore", invalid="ignore"):  # rows without a crossing: masked
        k = sizes[t0] + (0.5 - s0) * (sizes[t1] - sizes[t0]) / (s1 - s0)
    return np.where(ok, k, np.nan)


def critical_fraction(curve: Nullity2Curve, rng: np.random.Generator, level: float = 0.95,
                      n_boot: int = 2000) -> CriticalFraction:
    """Estimate r_c from a P(n0 = 2) curve: k_c is the first size grid point where the share
    reaches ½, interpolated linearly from the grid point before it (P(n0 = 2) is nondecreasing
    in k, since a random (k+1)-set contains a random k-set, so the first crossing is the
    crossing up to Monte-Carlo noise). CI: percentile bootstrap over the Monte-Carlo sets —
    resampling the n_sets indicator values of each size with replacement is the same as
    redrawing its count Binomial(n_sets, share) — and recomputing k_c. A replicate that does not
    cross inside the grid (it starts at or above ½, or never reaches it) is clamped to the
    grid's first or last size and counted in `unresolved`. Raises if the curve itself does not
    cross ½ between two grid points."""
    if len(curve.sizes) < 2:
        raise ValueError("need at least two training-set sizes to locate the crossing")
    k_c = float(_crossing(curve.sizes, curve.share[None])[0])
    if np.isnan(k_c):
        raise ValueError("P(n0 = 2) does not cross ½ inside the size grid "
                         f"(shares {curve.share.min():.3f}…{curve.share.max():.3f})")
    boot = rng.binomial(curve.n_sets, curve.share, size=(n_boot, len(curve.sizes))) / curve.n_sets
    ks = _crossing(curve.sizes, boot)
    bad = np.isnan(ks)
    starts_above = boot[:, 0] >= 0.5  # crossed before the grid: clamp to its first size
    ks[bad & starts_above] = curve.sizes[0]
    ks[bad & ~starts_above] = curve.sizes[-1]  # never reaches ½: clamp to its last size
    alpha = 1.0 - level
    lo, hi = np.quantile(ks, [alpha / 2, 1 - alpha / 2])
    n = n_samples(curve.p)
    return CriticalFraction(p=curve.p, k_c=k_c, r_c=k_c / n, ci_low=float(lo) / n,
                            ci_high=float(hi) / n, level=level, n_boot=n_boot,
                            unresolved=int(bad.sum()))
