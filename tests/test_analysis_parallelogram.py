"""Parallelogram algebra of paper 2's toy (grokverify.analysis.parallelogram): P0 and A(D)
against their definitions, the exact and the vectorised nullity against an independent rational
rank on every training set of p ≤ 5 and on random sets up to p = 60, the implied parallelograms,
and paper 2's Fig. 4a from them: P(n0 = 2) crossing ½ near r_c ≈ 0.4 at p = 10."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import pytest
from scipy.stats import binomtest
from statsmodels.stats.proportion import proportion_confint

from grokverify.analysis import parallelogram as P
from grokverify.engine.streams import numpy_rng
from grokverify.stats.crossing import crossings

# ------------------------------------------------------------------ independent references


def ref_samples(p: int) -> list[tuple[int, int]]:
    return [(i, j) for i in range(p) for j in range(i, p)]


def ref_system(p: int, train: list[tuple[int, int]]) -> list[list[int]]:
    """A(D) straight from the definition: every two distinct training samples of equal sum."""
    rows = []
    for (i, j), (m, n) in itertools.combinations(train, 2):
        if i + j == m + n:
            r = [0] * p
            r[i] += 1
            r[j] += 1
            r[m] -= 1
            r[n] -= 1
            rows.append(r)
    return rows


def ref_rank(rows: list[list[int]]) -> int:
    """Gaussian elimination over the rationals (Fractions)."""
    m = [[Fraction(x) for x in r] for r in rows]
    rank, width = 0, len(m[0]) if m else 0
    for c in range(width):
        piv = next((r for r in range(rank, len(m)) if m[r][c] != 0), None)
        if piv is None:
            continue
        m[rank], m[piv] = m[piv], m[rank]
        for r in range(len(m)):
            if r != rank and m[r][c] != 0:
                f = m[r][c] / m[rank][c]
                m[r] = [x - f * y for x, y in zip(m[r], m[rank], strict=True)]
        rank += 1
    return rank


def mask_of(p: int, members: tuple[int, ...] | list[int]) -> np.ndarray:
    m = np.zeros(P.n_samples(p), dtype=bool)
    m[list(members)] = True
    return m


def all_subsets(n: int, k: int) -> np.ndarray:
    combos = np.array(list(itertools.combinations(range(n), k)), dtype=np.int64).reshape(-1, k)
    masks = np.zeros((len(combos), n), dtype=bool)
    np.put_along_axis(masks, combos, True, axis=1)
    return masks


def random_training_sets(p: int, k: int, n_sets: int, rng: np.random.Generator) -> np.ndarray:
    """(n_sets, N) bool: n_sets training sets of k samples, each uniform without replacement."""
    n = P.n_samples(p)
    if not 0 <= k <= n:
        raise ValueError(f"training-set size must be in [0, {n}], got {k}")
    masks = np.zeros((n_sets, n), dtype=bool)
    if k == 0 or n_sets == 0:
        return masks
    keys = rng.random((n_sets, n))
    chosen = np.argpartition(keys, k - 1, axis=1)[:, :k] if k < n else np.arange(n)[None]
    np.put_along_axis(masks, np.broadcast_to(chosen, (n_sets, k)), True, axis=1)
    return masks


def ideal_accuracy(p: int, train: np.ndarray | list[int]) -> tuple[float, float]:
    """Acc-bar over all samples and over the non-training ones (NaN for the full set): a sample
    is right when it is a training sample or shares an implied (chained) parallelogram with one
    (the official code's `calculate_Dbar` on P(D), one step)."""
    mask = P.as_mask(p, train)
    pairs = P.parallelogram_samples(p)
    use = P.implied(p, mask, chaining=True)
    reach = mask.copy()
    a, b = pairs[use, 0], pairs[use, 1]
    reach[a[mask[b]]] = True
    reach[b[mask[a]]] = True
    n_test = int((~mask).sum())
    test = float((reach & ~mask).sum() / n_test) if n_test else float("nan")
    return float(reach.mean()), test


def exact_ci(counts: np.ndarray, n: int, level: float) -> tuple[np.ndarray, np.ndarray]:
    """Clopper-Pearson intervals of counts out of n (statsmodels, vectorised)."""
    return proportion_confint(counts, n, alpha=1 - level, method="beta")


def nullity2_counts(p: int, sizes: range, n_sets: int, rng: np.random.Generator) -> np.ndarray:
    """Per size k, how many of n_sets random k-sample training sets have n0 = 2 (Fig. 4a)."""
    return np.array([int((P.nullities(p, random_training_sets(p, k, n_sets, rng)) == 2).sum())
                     for k in sizes])


@dataclass(frozen=True)
class CriticalFraction:
    k_c: float
    r_c: float
    ci_low: float  # of r_c
    ci_high: float
    unresolved: int  # bootstrap replicates with no crossing inside the size grid (clamped)


def critical_fraction(p: int, sizes: np.ndarray, counts: np.ndarray, n_sets: int,
                      rng: np.random.Generator, level: float = 0.95,
                      n_boot: int = 2000) -> CriticalFraction:
    """r_c = k_c / N where the share of n0 = 2 first rises through ½ (the crossing criterion's
    interpolation); CI: percentile bootstrap, each size's count redrawn Binomial(n_sets, share),
    a replicate without a crossing in the grid clamped to its first or last size."""
    sizes = np.asarray(sizes, dtype=float)
    if len(sizes) < 2:
        raise ValueError("need at least two training-set sizes to locate the crossing")
    share = counts / n_sets
    k_c = float(crossings(sizes, share[None], 0.5, rising=True)[0])
    if np.isinf(k_c):
        raise ValueError("P(n0 = 2) does not cross ½ inside the size grid")
    ks = crossings(sizes, rng.binomial(n_sets, share, size=(n_boot, len(sizes))) / n_sets, 0.5,
                   rising=True)
    lo, hi = np.quantile(np.clip(ks, sizes[0], sizes[-1]), [(1 - level) / 2, (1 + level) / 2])
    n = P.n_samples(p)
    return CriticalFraction(k_c, k_c / n, float(lo) / n, float(hi) / n, int(np.isinf(ks).sum()))


# ------------------------------------------------------------------ combinatorics


@pytest.mark.parametrize("p", [2, 3, 5, 10])
def test_samples_and_p0_match_their_definitions(p: int) -> None:
    s = ref_samples(p)
    assert P.samples(p).tolist() == [list(x) for x in s]
    assert P.n_samples(p) == len(s) == p * (p + 1) // 2
    want = {(a, b) for a, b in itertools.combinations(range(len(s)), 2)
            if sum(s[a]) == sum(s[b])}
    pairs = P.parallelogram_samples(p)
    assert {tuple(x) for x in pairs.tolist()} == want and len(pairs) == len(want)
    assert np.all(pairs[:, 0] < pairs[:, 1])
    # each sample's index, from either order of its two numbers (a row (a, b) of a split)
    idx = {pair: k for k, pair in enumerate(s)}
    i, j = np.array([x for x, _ in s]), np.array([y for _, y in s])
    assert P.sample_index(p, i, j).tolist() == [idx[pair] for pair in s]
    assert P.sample_index(p, j, i).tolist() == [idx[pair] for pair in s]
    quads = P.permissible_parallelograms(p)
    assert [tuple(q) for q in quads.tolist()] == [s[a] + s[b] for a, b in pairs.tolist()]
    # The official code's own enumeration: i < j ≤ m < n with i + n = j + m, one per quad.
    official = {(i, j, m, n) for i in range(p) for j in range(i + 1, p) for m in range(j, p)
                for n in range(m + 1, p) if i + n == j + m}
    assert len(official) == len(quads)


def test_p0_count_for_p10_and_row_properties() -> None:
    # Σ over sums s of C(n_s, 2), n_s = number of samples with sum s.
    n_s = [sum(1 for i, j in ref_samples(10) if i + j == s) for s in range(19)]
    assert len(P.permissible_parallelograms(10)) == sum(n * (n - 1) // 2 for n in n_s) == 70
    rows = P.equation_rows(10).astype(int)
    assert rows.min() >= -2 and rows.max() <= 2 and (rows.sum(axis=1) == 0).all()
    assert (rows @ np.arange(10) == 0).all()  # a line satisfies every equation
    assert (np.abs(rows).sum(axis=1) > 0).all()
    # (0, 2, 1, 1) is the row e0 − 2 e1 + e2: E_1 + E_1 counts 2.
    k = [tuple(q) for q in P.permissible_parallelograms(10).tolist()].index((0, 2, 1, 1))
    assert rows[k].tolist() == [1, -2, 1, 0, 0, 0, 0, 0, 0, 0]


def test_system_rows_are_the_definitions() -> None:
    rng = np.random.default_rng(3)
    for p in (4, 7):
        for _ in range(20):
            mask = rng.random(P.n_samples(p)) < 0.5
            train = [tuple(x) for x in P.samples(p)[mask].tolist()]
            got = sorted(P.system(p, mask).astype(int).tolist())
            assert got == sorted(ref_system(p, train))


def test_bad_training_sets_are_refused() -> None:
    with pytest.raises(ValueError, match="repeated"):
        P.as_mask(4, [1, 1])
    with pytest.raises(ValueError, match="lie in"):
        P.as_mask(4, [10])
    with pytest.raises(ValueError, match="shape"):
        P.as_mask(4, np.ones(9, dtype=bool))
    with pytest.raises(ValueError, match="p must be"):
        P.samples(1)
    with pytest.raises(ValueError, match="size"):
        random_training_sets(4, 11, 3, np.random.default_rng(0))


# ------------------------------------------------------------------ nullity: exact and vectorised


@pytest.mark.parametrize("p", [3, 4, 5])
def test_every_training_set_of_small_p_against_rational_rank(p: int) -> None:
    """Brute force: every training set of every size (2^N of them)."""
    n = P.n_samples(p)
    s = ref_samples(p)
    masks = np.array(list(itertools.product([False, True], repeat=n)), dtype=bool)
    fast = P.nullities(p, masks)
    cache: dict[tuple[int, ...], int] = {}
    stride = 1 if p < 5 else 7  # the exact module on every 7th set of p = 5 (4,682 sets)
    for t, m in enumerate(masks):
        train = [s[k] for k in np.flatnonzero(m)]
        rows = ref_system(p, train)
        key = tuple(sorted(map(tuple, rows)))
        if key not in cache:
            cache[key] = p - ref_rank(rows) if rows else p
        want = cache[key]
        assert fast[t] == want, (p, train)
        if t % stride == 0:
            assert P.nullity(p, m) == want, (p, train)
    assert fast.min() >= 2 and fast[-1] == 2  # the last mask is the full set


def test_nullity_is_at_least_two_and_two_for_the_full_set() -> None:
    rng = np.random.default_rng(5)
    for p in range(2, 13):
        full = np.ones(P.n_samples(p), dtype=bool)
        assert P.nullity(p, full) == 2 and P.nullities(p, full[None])[0] == 2
        assert P.nullity(p, []) == p
        masks = rng.random((50, P.n_samples(p))) < rng.random((50, 1))
        assert P.nullities(p, masks).min() >= 2


def test_null_space_is_exact_and_contains_translation_and_scale() -> None:
    rng = np.random.default_rng(11)
    for p in (5, 8, 12):
        for _ in range(15):
            mask = rng.random(P.n_samples(p)) < 0.4
            ns = P.null_space(p, mask)
            a = P.system(p, mask).astype(np.int64).astype(object)
            assert ns.shape == (p, P.nullity(p, mask))
            assert not a.size or np.all(a @ ns == 0)
            assert ref_rank(ns.T.tolist()) == ns.shape[1]  # a basis: independent columns
            for v in (np.ones(p, dtype=np.int64), np.arange(p)):  # in the span of the basis
                assert ref_rank([*ns.T.tolist(), v.tolist()]) == ns.shape[1]


@pytest.mark.parametrize(("p", "ks", "n_sets"), [
    (6, (6, 8, 10, 14), 150), (10, (15, 20, 22, 25, 30), 150), (15, (25, 35, 45, 60), 60),
    (20, (40, 55, 70), 40), (30, (60, 80, 100), 15), (60, (150, 200, 260), 6),
])
def test_vectorised_nullity_agrees_with_exact_on_random_sets(p: int, ks: tuple[int, ...],
                                                             n_sets: int) -> None:
    """Sizes around each p's crossing, where nullity 2 and 3+ both occur."""
    rng = np.random.default_rng(p)
    seen = set()
    for k in ks:
        masks = random_training_sets(p, k, n_sets, rng)
        fast = P.nullities(p, masks)
        exact = np.array([P.nullity(p, m) for m in masks])
        np.testing.assert_array_equal(fast, exact)
        seen |= set(exact.tolist())
    assert 2 in seen and max(seen) > 2  # both outcomes were exercised


def test_gram_is_a_transpose_a() -> None:
    rng = np.random.default_rng(2)
    for p in (4, 9):
        masks = rng.random((10, P.n_samples(p))) < 0.5
        g = P.gram(p, masks)
        for m, gm in zip(masks, g, strict=True):
            a = P.system(p, m).astype(np.float64)
            np.testing.assert_array_equal(gm, a.T @ a)


# ------------------------------------------------------------------ App. C (p = 6)


def test_app_c_p6_eight_samples_fix_the_structure_and_six_is_the_minimum() -> None:
    """App. C: 8 well-chosen samples of the 21 fix the linear structure (n0 = 2). Exhaustively,
    no set of 5 does, 3 sets of 6 do (two full classes of three), and many sets of 8 do."""
    p, n = 6, 21
    assert not (P.nullities(p, all_subsets(n, 5)) == 2).any()
    six = all_subsets(n, 6)
    hits = six[P.nullities(p, six) == 2]
    got = sorted(tuple(map(tuple, P.samples(p)[h].tolist())) for h in hits)
    assert got == sorted([
        ((0, 4), (0, 5), (1, 3), (1, 4), (2, 2), (2, 3)),
        ((0, 4), (1, 3), (1, 5), (2, 2), (2, 4), (3, 3)),
        ((0, 5), (1, 4), (1, 5), (2, 3), (2, 4), (3, 3)),
    ])
    for h in hits:
        assert p - ref_rank(ref_system(p, [tuple(x) for x in P.samples(p)[h].tolist()])) == 2
    # An 8-sample set found by search (and confirmed by the independent rank).
    rng = np.random.default_rng(6)
    eight = random_training_sets(p, 8, 2000, rng)
    found = eight[P.nullities(p, eight) == 2]
    assert len(found) > 0
    train = [tuple(x) for x in P.samples(p)[found[0]].tolist()]
    assert p - ref_rank(ref_system(p, train)) == 2


# ------------------------------------------------------------------ implied parallelograms


def test_implied_by_chaining_hand_example() -> None:
    """p = 5, D = {03, 12, 14, 23}: P0(D) = {(0,3,1,2), (1,4,2,3)}; their sum is
    E0 + E4 − 2 E2, so chaining adds (0,4,2,2) and nothing else."""
    p = 5
    idx = {tuple(s): k for k, s in enumerate(P.samples(p).tolist())}
    train = [idx[(0, 3)], idx[(1, 2)], idx[(1, 4)], idx[(2, 3)]]
    quads = [tuple(q) for q in P.permissible_parallelograms(p).tolist()]
    direct = {quads[k] for k in np.flatnonzero(P.implied(p, train, chaining=False))}
    chained = {quads[k] for k in np.flatnonzero(P.implied(p, train, chaining=True))}
    assert direct == {(0, 3, 1, 2), (1, 4, 2, 3)}
    assert chained == {(0, 3, 1, 2), (1, 4, 2, 3), (0, 4, 2, 2)}


def test_implied_is_row_space_membership() -> None:
    rng = np.random.default_rng(8)
    p = 6
    rows = P.equation_rows(p).astype(int).tolist()
    for _ in range(25):
        mask = rng.random(P.n_samples(p)) < 0.35
        a = P.system(p, mask).astype(int).tolist()
        base = ref_rank(a) if a else 0
        want = [(ref_rank([*a, r]) if a else ref_rank([r])) == base for r in rows]
        got = P.implied(p, mask)
        assert got.tolist() == want
        assert np.all(got >= P.implied(p, mask, chaining=False))
    assert P.implied(p, np.ones(21, dtype=bool)).all()


def test_ideal_accuracy_hand_example() -> None:
    """p = 5, D = {03, 12, 14, 23, 22}: 22 is alone in its class, but chaining implies
    (0,4,2,2), which reaches 04 from 22; nothing else is reached (the other classes' implied
    parallelograms join training samples only): Acc-bar = 6/15 overall, 1/10 off it.
    Without 22 the same parallelogram is implied but joins two non-training samples."""
    idx = {tuple(s): k for k, s in enumerate(P.samples(5).tolist())}
    base = [idx[(0, 3)], idx[(1, 2)], idx[(1, 4)], idx[(2, 3)]]
    acc_all, acc_test = ideal_accuracy(5, [*base, idx[(2, 2)]])
    assert acc_all == pytest.approx(6 / 15) and acc_test == pytest.approx(1 / 10)
    acc_all, acc_test = ideal_accuracy(5, [*base, idx[(0, 4)]])  # reached the other way
    assert acc_all == pytest.approx(6 / 15) and acc_test == pytest.approx(1 / 10)
    acc_all, acc_test = ideal_accuracy(5, base)
    assert acc_all == pytest.approx(4 / 15) and acc_test == 0.0
    acc_all, acc_test = ideal_accuracy(5, np.ones(15, dtype=bool))
    assert acc_all == 1.0 and np.isnan(acc_test)


# ------------------------------------------------------------------ Monte Carlo and CIs


def test_random_training_sets_have_size_k_and_uniform_inclusion() -> None:
    rng = np.random.default_rng(0)
    m = random_training_sets(10, 22, 20000, rng)
    assert (m.sum(axis=1) == 22).all()
    incl = m.mean(axis=0)  # each sample is in a set with probability 22/55 = 0.4
    assert np.abs(incl - 0.4).max() < 5 * np.sqrt(0.4 * 0.6 / 20000)
    assert len({r.tobytes() for r in m[:500]}) == 500
    assert random_training_sets(10, 55, 3, rng).all()
    assert not random_training_sets(10, 0, 3, rng).any()


def test_clopper_pearson_matches_scipy_binomtest() -> None:
    n = 37
    for level in (0.9, 0.95):
        xs = np.arange(n + 1)
        lo, hi = exact_ci(xs, n, level)
        for x in xs:
            ci = binomtest(int(x), n).proportion_ci(confidence_level=level, method="exact")
            assert lo[x] == pytest.approx(ci.low, abs=1e-12)
            assert hi[x] == pytest.approx(ci.high, abs=1e-12)


def test_p10_crossing_near_forty_percent_and_reproducible() -> None:
    """Paper 2, Fig. 4a: P(n0 = 2) crosses ½ near r_c ≈ 0.4 of the 55 pairs (the official
    notebook: 4,270/10,000 at k = 22, 5,795 at k = 23)."""
    sizes = range(14, 33)
    counts = nullity2_counts(10, sizes, 2000, numpy_rng(0, "test", "nullity2"))
    share = counts / 2000
    ci_low, ci_high = exact_ci(counts, 2000, 0.95)
    assert (ci_low <= share).all() and (share <= ci_high).all()
    i22 = list(sizes).index(22)
    assert ci_low[i22] - 0.03 < 0.427 < ci_high[i22] + 0.03
    cf = critical_fraction(10, np.array(sizes), counts, 2000, numpy_rng(0, "test", "boot"))
    assert 0.3 < cf.r_c < 0.5 and 0.38 < cf.r_c < 0.44
    assert cf.ci_low <= cf.r_c <= cf.ci_high and cf.ci_high - cf.ci_low < 0.05
    again = nullity2_counts(10, sizes, 2000, numpy_rng(0, "test", "nullity2"))
    np.testing.assert_array_equal(counts, again)
    assert critical_fraction(10, np.array(sizes), again, 2000,
                             numpy_rng(0, "test", "boot")) == cf
    other = nullity2_counts(10, sizes, 2000, numpy_rng(1, "test", "nullity2"))
    assert not np.array_equal(counts, other)
    # λ3 of AᵀA is 0 exactly when n0 > 2: its mean rises with k.
    rng = numpy_rng(0, "test", "lambda3")
    lam3 = [P.gram_eigenvalues(10, random_training_sets(10, k, 2000, rng))[:, 2].mean()
            for k in (sizes[0], sizes[-1])]
    assert lam3[0] < lam3[-1]


def _curve(sizes: list[int], share: list[float], n_sets: int,
           rng: np.random.Generator, **kw: int) -> CriticalFraction:
    counts = np.round(np.array(share) * n_sets).astype(np.int64)
    return critical_fraction(10, np.array(sizes), counts, n_sets, rng, **kw)


def test_critical_fraction_interpolates_and_bootstraps() -> None:
    cf = _curve([10, 20, 30, 40], [0.2, 0.4, 0.6, 0.8], 100_000, np.random.default_rng(0),
                n_boot=500)
    assert cf.k_c == pytest.approx(25.0) and cf.r_c == pytest.approx(25 / 55)
    assert cf.ci_low < 25 / 55 < cf.ci_high and cf.ci_high - cf.ci_low < 0.01
    assert cf.unresolved == 0
    # A noisy non-monotone curve: the first upward crossing counts.
    cf = _curve([1, 2, 3, 4], [0.1, 0.55, 0.45, 0.9], 100_000, np.random.default_rng(0),
                n_boot=200)
    assert cf.k_c == pytest.approx(1 + 0.4 / 0.45)
    # A grid point exactly at ½ is the crossing.
    cf = _curve([1, 2, 3, 4], [0.2, 0.5, 0.5, 0.8], 100_000, np.random.default_rng(0),
                n_boot=50)
    assert cf.k_c == 2.0
    # Few sets: some replicates do not cross inside the grid, and are clamped and counted.
    cf = _curve([1, 2], [0.45, 0.55], 20, np.random.default_rng(1), n_boot=400)
    assert cf.unresolved > 0 and cf.ci_low == pytest.approx(1 / 55)
    assert cf.ci_high == pytest.approx(2 / 55)


def test_critical_fraction_refuses_a_curve_that_does_not_cross() -> None:
    with pytest.raises(ValueError, match="does not cross"):
        _curve([1, 2, 3], [0.1, 0.2, 0.3], 100, np.random.default_rng(0))
    with pytest.raises(ValueError, match="does not cross"):
        _curve([1, 2, 3], [0.6, 0.7, 0.9], 100, np.random.default_rng(0))
    with pytest.raises(ValueError, match="two"):
        _curve([1], [0.6], 100, np.random.default_rng(0))
