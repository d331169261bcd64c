"""Paper 2's effective theory (grokverify.analysis.effective) against references built here by
brute force: P0(D) by a double loop over samples, H as a sum of outer products of parallelogram
vectors, the loss as an explicit sum, null spaces by scipy, the flow by its closed form."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from numpy.typing import ArrayLike
from scipy.linalg import null_space
from scipy.stats import spearmanr

from grokverify.analysis.effective import (
    EffectiveFlow,
    Training,
    effective_flow,
    effective_gradient,
    effective_hessian,
    grokking_rate,
    hessian_spectrum,
    l0_hessian,
    normalise,
    normalised_z0,
    parallelogram_system,
)
from grokverify.analysis.parallelogram import samples
from grokverify.engine.streams import numpy_rng

P = 10
FULL = samples(P)


def rng(name: str, seed: int = 0) -> np.random.Generator:
    return numpy_rng(seed, "test-effective", name)


def random_training(p: int, n: int, gen: np.random.Generator) -> np.ndarray:
    full = samples(p)
    return full[np.sort(gen.permutation(len(full))[:n])]


def brute_quads(train: np.ndarray) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """Every unordered pair of distinct training samples with the same sum."""
    samples = sorted({(min(int(a), int(b)), max(int(a), int(b))) for a, b in train})
    return [(s, t) for x, s in enumerate(samples) for t in samples[x + 1:] if sum(s) == sum(t)]


def brute_vectors(train: np.ndarray, p: int) -> np.ndarray:
    rows = []
    for (i, j), (m, n) in brute_quads(train):
        v = np.zeros(p)
        v[i] += 1
        v[j] += 1
        v[m] -= 1
        v[n] -= 1
        rows.append(v)
    return np.array(rows).reshape(-1, p)


def brute_h(train: np.ndarray, p: int, z0: float) -> np.ndarray:
    """H = (2 / (|P0| Z0)) Σ v vᵀ, one outer product per parallelogram."""
    vs = brute_vectors(train, p)
    h = np.zeros((p, p))
    for v in vs:
        h += np.outer(v, v)
    return 2.0 * h / (len(vs) * z0)


# ------------------------------------------------------------ the theory's closed forms


@dataclass(frozen=True)
class EffectiveLoss:
    l0: float  # mean squared parallelogram defect over P0(D)
    z0: float  # Σ_k |E_k|²
    l_eff: float  # ℓ0 / Z0 (Eq. 4)


def _as_matrix(E: ArrayLike) -> np.ndarray:
    arr = np.asarray(E, dtype=np.float64)
    return arr[:, None] if arr.ndim == 1 else arr


def effective_loss(E: ArrayLike, train: ArrayLike, *, normalised: bool = True) -> EffectiveLoss:
    """ℓ0, Z0 and ℓ_eff of Eq. 4 from the parallelograms' defects, on Ẽ (the paper's
    definition) or on E as given (the function the flow descends)."""
    emb = normalise(E) if normalised else _as_matrix(E)
    system = parallelogram_system(train, emb.shape[0])
    defects = system.vectors @ emb
    l0 = float(np.sum(defects**2) / system.size) if system.size else 0.0
    z0 = float(np.sum(emb**2))
    if z0 == 0.0:
        raise ValueError("Z0 = 0: the effective loss is undefined at E = 0")
    return EffectiveLoss(l0=l0, z0=z0, l_eff=l0 / z0)


def predicted_steps(train: Training, p: int, eta: float) -> float:
    """n_h = 1 / (λ3 η) (§3.2); inf when λ3 = 0."""
    if eta <= 0:
        raise ValueError(f"eta must be positive, got {eta}")
    rate = grokking_rate(train, p)
    return float("inf") if rate == 0.0 else 1.0 / (rate * eta)


def exact_flow(E0: ArrayLike, train: Training, times: ArrayLike, *,
               normalised: bool = True) -> np.ndarray:
    """The flow in closed form at times t (step n of size η is t = n η), (len(times), p, d):
    Z0 is conserved, so E(t) is the linear flow e^{−Ht} E0 rescaled onto Z0."""
    emb = normalise(E0) if normalised else _as_matrix(E0)
    p = emb.shape[0]
    z0 = float(np.sum(emb**2))
    lam, vecs = np.linalg.eigh(l0_hessian(train, p) / z0)
    t = np.asarray(times, dtype=np.float64).reshape(-1)
    if np.any(t < 0):
        raise ValueError("times must be non-negative")
    y = np.einsum("pk,tk,kd->tpd", vecs, np.exp(-np.outer(t, lam)), vecs.T @ emb)
    return y * np.sqrt(z0 / np.sum(y**2, axis=(1, 2)))[:, None, None]


def linearity_residual(E: ArrayLike) -> float:
    """The least-squares residual of a line fit E_k = a + k b over Σ_k |E_k − Ē|²: 0 on a line,
    at most 1, invariant to translation and scale (RQI-like, without its δ)."""
    emb = _as_matrix(E)
    spread = float(np.sum((emb - emb.mean(axis=0)) ** 2))
    if spread == 0.0:
        raise ValueError("all embeddings coincide: the residual is undefined")
    k = np.arange(emb.shape[0], dtype=np.float64)
    design = np.stack([np.ones_like(k), k], axis=1)
    coef = np.linalg.lstsq(design, emb, rcond=None)[0]
    return float(np.sum((emb - design @ coef) ** 2)) / spread


def linearity(flow: EffectiveFlow) -> np.ndarray:
    """`linearity_residual` of every record, vectorised: the part of the centred E off the unit
    vector along k − k̄."""
    centred = flow.trajectory - flow.trajectory.mean(axis=1, keepdims=True)
    k = np.arange(centred.shape[1], dtype=np.float64)
    unit = (k - k.mean()) / np.linalg.norm(k - k.mean())
    along = np.einsum("p,rpd->rd", unit, centred)
    spread = np.sum(centred**2, axis=(1, 2))
    return (spread - np.sum(along**2, axis=1)) / spread


def steps_to_structure(flow: EffectiveFlow, tol: float) -> int | None:
    """The first recorded step whose linearity residual is ≤ tol (the measured time to
    structure, to set beside n_h for claim C5), or None if the flow never gets there."""
    hit = np.flatnonzero(linearity(flow) <= tol)
    return int(flow.steps[hit[0]]) if hit.size else None


# ------------------------------------------------------------ P0(D) and its system


def test_full_set_has_the_hand_counted_parallelograms() -> None:
    # n_s samples have sum s: min(s, 2p - 2 - s) // 2 + 1; each pair of them is one parallelogram
    counts = [min(s, 2 * P - 2 - s) // 2 + 1 for s in range(2 * P - 1)]
    system = parallelogram_system(FULL, P)
    assert len(FULL) == 55
    assert system.size == sum(c * (c - 1) // 2 for c in counts) == 70


@pytest.mark.parametrize("p,n", [(7, 12), (10, 20), (10, 40)])
def test_parallelograms_match_brute_force(p: int, n: int) -> None:
    train = random_training(p, n, rng(f"quads{p}-{n}"))
    system = parallelogram_system(train, p)
    got = {frozenset([(q[0], q[1]), (q[2], q[3])]) for q in system.quads.tolist()}
    assert got == {frozenset(pair) for pair in brute_quads(train)}
    assert system.size == len(brute_quads(train))
    quads = system.quads
    assert np.all(quads[:, 0] + quads[:, 1] == quads[:, 2] + quads[:, 3])
    np.testing.assert_allclose(system.gram, brute_vectors(train, p).T @ brute_vectors(train, p))
    assert system.nullity == null_space(brute_vectors(train, p)).shape[1]


def test_pair_order_and_repeats_do_not_matter() -> None:
    train = random_training(P, 30, rng("order"))
    shuffled = np.concatenate([train[:, ::-1], train[:5]])[rng("perm").permutation(35)]
    a, b = parallelogram_system(train, P), parallelogram_system(shuffled, P)
    np.testing.assert_array_equal(a.quads, b.quads)
    np.testing.assert_array_equal(a.samples, b.samples)


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="0..9"):
        parallelogram_system([[0, 10]], P)
    with pytest.raises(ValueError, match="0..9"):
        parallelogram_system([[-1, 3]], P)
    with pytest.raises(ValueError, match="p = 10"):
        effective_flow(np.arange(7.0), parallelogram_system(FULL, P), 0.1, 1)
    with pytest.raises(ValueError, match="constant"):
        normalise(np.ones(P))
    with pytest.raises(ValueError, match="Z0 = 0"):
        effective_loss(np.zeros(P), FULL, normalised=False)


# ------------------------------------------------------------ loss and gradient


@pytest.mark.parametrize("d", [1, 3])
def test_loss_matches_its_definition(d: int) -> None:
    train = random_training(P, 35, rng("loss"))
    emb = rng("emb").uniform(-0.5, 0.5, (P, d))
    tilde = (emb - emb.mean(axis=0)) / np.sqrt(((emb - emb.mean(axis=0)) ** 2).sum(0) / (P - 1))
    quads = brute_quads(train)
    l0 = sum(np.sum((tilde[i] + tilde[j] - tilde[m] - tilde[n]) ** 2)
             for (i, j), (m, n) in quads) / len(quads)
    got = effective_loss(emb, train)
    assert got.l0 == pytest.approx(l0, rel=1e-12)
    assert got.z0 == pytest.approx(normalised_z0(P, d)) == pytest.approx(d * (P - 1))
    assert got.l_eff == pytest.approx(l0 / (d * (P - 1)), rel=1e-12)
    # Ẽ removes translation and scale; on raw E, ℓ_eff is scale invariant and ℓ0 translation
    # invariant, but ℓ_eff is not (Z0 is not)
    assert effective_loss(3.0 * emb - 2.0, train).l_eff == pytest.approx(got.l_eff, rel=1e-12)
    raw = effective_loss(emb, train, normalised=False)
    assert effective_loss(7.0 * emb, train, normalised=False).l_eff == pytest.approx(raw.l_eff)
    shifted = effective_loss(emb + 1.0, train, normalised=False)
    assert shifted.l0 == pytest.approx(raw.l0)
    assert shifted.l_eff < raw.l_eff


def test_empty_training_system_has_no_loss_and_no_rate() -> None:
    train = [[0, 1], [2, 5], [3, 3]]  # all sums differ: P0(D) is empty
    system = parallelogram_system(train, P)
    assert system.size == 0 and system.nullity == P
    assert effective_loss(np.arange(P), train).l0 == 0.0
    assert np.all(l0_hessian(system, P) == 0.0)
    assert grokking_rate(system, P) == 0.0
    assert predicted_steps(system, P, 1e-3) == float("inf")


def test_gradient_matches_finite_differences() -> None:
    train = random_training(P, 40, rng("fd-set"))
    emb = rng("fd").normal(size=(P, 2))
    grad = effective_gradient(emb, l0_hessian(train, P))
    fd = np.zeros_like(emb)
    h = 1e-6
    for idx in np.ndindex(emb.shape):
        up, down = emb.copy(), emb.copy()
        up[idx] += h
        down[idx] -= h
        fd[idx] = (effective_loss(up, train, normalised=False).l_eff
                   - effective_loss(down, train, normalised=False).l_eff) / (2 * h)
    np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-10)


def test_gradient_obeys_the_conservation_identities() -> None:
    """App. F: Σ_k E_k·∂ℓ_eff/∂E_k = 0 (Euler) and Σ_k ∂ℓ_eff/∂E_k = −2 ℓ_eff C / Z0."""
    emb = rng("id").normal(size=(P, 2)) + 0.7
    grad = effective_gradient(emb, l0_hessian(FULL, P))
    loss = effective_loss(emb, FULL, normalised=False)
    assert np.sum(emb * grad) == pytest.approx(0.0, abs=1e-14)
    np.testing.assert_allclose(grad.sum(axis=0), -2 * loss.l_eff * emb.sum(axis=0) / loss.z0,
                               rtol=1e-10)


# ------------------------------------------------------------ Hessian and λ3


@pytest.mark.parametrize("n", [25, 40, 55])
def test_hessian_and_spectrum_match_an_independent_build(n: int) -> None:
    train = random_training(P, n, rng(f"h{n}"))
    z0 = 5.5
    reference = brute_h(train, P, z0)
    np.testing.assert_allclose(effective_hessian(train, P, z0=z0), reference, atol=1e-14)
    np.testing.assert_allclose(hessian_spectrum(train, P, z0=z0), np.linalg.eigvalsh(reference),
                               atol=1e-12)
    # default z0: normalised 1-D embeddings; ℓ0 = ½ Eᵀ H0 E
    np.testing.assert_allclose(effective_hessian(train, P), brute_h(train, P, P - 1), atol=1e-14)
    emb = rng("quad").normal(size=P)
    assert effective_loss(emb, train, normalised=False).l0 == pytest.approx(
        0.5 * emb @ (brute_h(train, P, 1.0) @ emb), rel=1e-12)
    nullity = null_space(brute_vectors(train, P)).shape[1]
    expected = np.linalg.eigvalsh(reference)[2] if nullity == 2 else 0.0
    assert grokking_rate(train, P, z0=z0) == pytest.approx(expected, abs=1e-14)


def test_full_set_pins_the_line_down() -> None:
    system = parallelogram_system(FULL, P)
    h = effective_hessian(system, P)
    k = np.arange(P, dtype=float)
    assert system.nullity == 2
    np.testing.assert_allclose(h @ np.ones(P), 0.0, atol=1e-14)  # translation mode
    np.testing.assert_allclose(h @ k, 0.0, atol=1e-14)  # scale mode
    spectrum = hessian_spectrum(system, P)
    assert abs(spectrum[:2]).max() < 1e-12
    lam3 = grokking_rate(system, P)
    assert lam3 == pytest.approx(spectrum[2]) and lam3 > 1e-3
    assert predicted_steps(system, P, 1e-3) == pytest.approx(1.0 / (lam3 * 1e-3))
    # raw Gram eigenvalues (the official notebook's) differ by 2 / (|P0| Z0) exactly
    assert np.linalg.eigvalsh(system.gram)[2] * 2 / (70 * (P - 1)) == pytest.approx(lam3)


def test_tiny_training_sets_predict_no_time() -> None:
    one = [[0, 3], [1, 2]]  # one parallelogram: E0 + E3 = E1 + E2 leaves p − 1 free
    assert parallelogram_system(one, P).nullity == P - 1
    assert grokking_rate(one, P) == 0.0
    assert predicted_steps(one, P, 1e-3) == float("inf")
    gen = rng("tiny")
    for _ in range(10):
        train = random_training(P, 8, gen)
        assert null_space(brute_vectors(train, P)).shape[1] > 2
        assert grokking_rate(train, P) == 0.0
    with pytest.raises(ValueError, match="eta"):
        predicted_steps(FULL, P, 0.0)


# ------------------------------------------------------------ the flow


def test_euler_conservation_error_scales_with_eta() -> None:
    """Euler raises Z0 by η²|∇ℓ_eff|² a step: the drift over a fixed time halves with η; C stays 0
    for a centred start. RK4's drift falls ~16-fold per halving."""
    e0 = rng("cons").uniform(-0.5, 0.5, P)
    t_end = 40.0
    drifts: dict[str, list[float]] = {"euler": [], "rk4": []}
    for method in drifts:
        for eta in (0.4, 0.2, 0.1):
            flow = effective_flow(e0, FULL, eta, round(t_end / eta), method=method)
            assert np.abs(flow.c).max() < 1e-12
            drifts[method].append(abs(flow.z0[-1] - flow.z0[0]) / flow.z0[0])
    euler, rk4 = np.array(drifts["euler"]), np.array(drifts["rk4"])
    assert np.all((euler[:-1] / euler[1:] > 1.8) & (euler[:-1] / euler[1:] < 2.2))
    assert np.all(rk4[:-1] / rk4[1:] > 10)
    assert euler[2] < 0.01  # a practical η (η λ_max ≈ 0.015): Z0 within 1 % over ~4 n_h
    assert rk4[0] < 1e-7


@pytest.mark.parametrize("d", [1, 2])
def test_discrete_flows_converge_to_the_closed_form(d: int) -> None:
    train = random_training(P, 45, rng("conv-set"))
    e0 = rng("conv").uniform(-0.5, 0.5, (P, d))
    t_end = 30.0
    exact = exact_flow(e0, train, [0.0, t_end])
    assert np.sum(exact[-1] ** 2) == pytest.approx(d * (P - 1))
    np.testing.assert_allclose(exact[-1].sum(axis=0), 0.0, atol=1e-12)
    errors = []
    for eta in (0.4, 0.2, 0.1):
        flow = effective_flow(e0, train, eta, round(t_end / eta))
        errors.append(np.abs(flow.trajectory[-1] - exact[-1]).max())
    assert 1.8 < errors[0] / errors[1] < 2.2 and 1.8 < errors[1] / errors[2] < 2.2
    rk4 = effective_flow(e0, train, 0.2, round(t_end / 0.2), method="rk4")
    np.testing.assert_allclose(rk4.trajectory[-1], exact[-1], atol=1e-8)
    np.testing.assert_allclose(rk4.l_eff, [effective_loss(e, train, normalised=False).l_eff
                                           for e in rk4.trajectory], rtol=1e-10)


def test_sum_is_conserved_only_from_a_centred_start() -> None:
    """dC/dt = 2 ℓ_eff C / Z0: from an uncentred start the flow itself moves C (RK4 and the closed
    form agree), while Z0 is still conserved."""
    e0 = normalise(rng("unc").uniform(-0.5, 0.5, P)) + 1.0
    exact = exact_flow(e0, FULL, [0.0, 20.0], normalised=False)
    rk4 = effective_flow(e0, FULL, 0.1, 200, method="rk4", normalised=False)
    c0, c1 = exact[0].sum(), exact[-1].sum()
    assert c1 > 1.1 * c0
    assert rk4.c[-1, 0] == pytest.approx(c1, rel=1e-8)
    assert rk4.z0[-1] == pytest.approx(rk4.z0[0], rel=1e-8)


def test_modes_decay_at_the_hessian_eigenvalues() -> None:
    """Relative to the linear mode, the k-th eigenmode of an independently built H decays as
    e^{−λ_k t} along the flow (here followed by RK4, not the closed form)."""
    train = random_training(P, 50, rng("modes-set"))
    assert parallelogram_system(train, P).nullity == 2
    lam, vecs = np.linalg.eigh(brute_h(train, P, P - 1))
    line = np.arange(P) - (P - 1) / 2
    line /= np.linalg.norm(line)
    eta, steps = 0.1, 400
    flow = effective_flow(rng("modes").uniform(-0.5, 0.5, P), train, eta, steps, method="rk4")
    traj = flow.trajectory[:, :, 0]
    ratio = np.log(np.abs(traj @ vecs[:, 2:])) - np.log(np.abs(traj @ line))[:, None]
    slopes = (ratio[-1] - ratio[0]) / (steps * eta)
    np.testing.assert_allclose(slopes, -lam[2:], rtol=1e-6)


def test_flow_reaches_a_line_in_a_few_n_h() -> None:
    """The paper: trajectories take about 3 n_h. Over 12 random starts on the full set, the
    residual of the best line fit falls below 0.05 after 1-5 n_h (median), always by 8 n_h."""
    eta = 0.5
    n_h = predicted_steps(FULL, P, eta)
    ratios = []
    for seed in range(12):
        flow = effective_flow(rng("line", seed).uniform(-0.5, 0.5, P), FULL, eta, round(8 * n_h))
        residuals = linearity(flow)
        assert residuals[0] > 0.3 and residuals[-1] < 0.05
        ratios.append(steps_to_structure(flow, 0.05) / n_h)
    assert 1.0 < np.median(ratios) < 5.0


def test_time_to_structure_tracks_n_h_across_training_sets() -> None:
    """C5 inside the theory: over 20 training sets of nullity 2, the measured steps to a line
    (median over 5 starts) rank with n_h (Spearman ≥ 0.5), and dividing by n_h shrinks their
    relative spread. (From one start close to a line the ranking can fail: the multiple of n_h
    depends on how linear the start already is.)"""
    starts = [rng("c5-start", seed).uniform(-0.5, 0.5, P) for seed in range(5)]
    gen = rng("c5-sets")
    eta = 0.5
    n_hs, measured = [], []
    while len(n_hs) < 20:
        system = parallelogram_system(random_training(P, int(gen.integers(30, 56)), gen), P)
        if system.nullity != 2:
            continue
        n_h = predicted_steps(system, P, eta)
        steps = [steps_to_structure(effective_flow(e0, system, eta, round(12 * n_h)), 0.05)
                 for e0 in starts]
        assert None not in steps
        n_hs.append(n_h)
        measured.append(float(np.median(steps)))
    assert spearmanr(n_hs, measured).statistic >= 0.5
    ratio = np.array(measured) / np.array(n_hs)
    assert ratio.std() / ratio.mean() < np.std(measured) / np.mean(measured)


def test_flow_refuses_bad_arguments() -> None:
    e0 = rng("bad").uniform(-0.5, 0.5, P)
    lam_max = hessian_spectrum(FULL, P)[-1]
    with pytest.raises(ValueError, match="unstable"):
        effective_flow(e0, FULL, 2.0 / lam_max, 10)
    effective_flow(e0, FULL, 1.9 / lam_max, 10)  # just inside the bound runs
    with pytest.raises(ValueError, match="unknown method"):
        effective_flow(e0, FULL, 0.1, 10, method="leapfrog")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="eta"):
        effective_flow(e0, FULL, 0.1, -1)
    with pytest.raises(ValueError, match="Z0 = 0"):
        effective_flow(np.zeros(P), FULL, 0.1, 1, normalised=False)
    with pytest.raises(ValueError, match="non-negative"):
        exact_flow(e0, FULL, [-1.0])


def test_records_keep_the_requested_steps() -> None:
    flow = effective_flow(rng("rec").uniform(-0.5, 0.5, P), FULL, 0.5, 25, record_every=10)
    assert flow.steps.tolist() == [0, 10, 20, 25]
    full = effective_flow(rng("rec").uniform(-0.5, 0.5, P), FULL, 0.5, 25)
    np.testing.assert_allclose(flow.trajectory, full.trajectory[[0, 10, 20, 25]])


# ------------------------------------------------------------ line-fit residual


def test_linearity_residual_against_polyfit() -> None:
    k = np.arange(P)
    line = np.stack([0.3 - 1.7 * k, 2.0 + 0.5 * k], axis=1)
    assert linearity_residual(line) == pytest.approx(0.0, abs=1e-20)
    emb = rng("lin").normal(size=P)
    fit = np.polyval(np.polyfit(k, emb, 1), k)
    expected = np.sum((emb - fit) ** 2) / np.sum((emb - emb.mean()) ** 2)
    assert linearity_residual(emb) == pytest.approx(expected, rel=1e-10)
    assert linearity_residual(5 * emb + 3) == pytest.approx(expected, rel=1e-10)
    with pytest.raises(ValueError, match="coincide"):
        linearity_residual(np.full(P, 2.0))


def test_flow_linearity_equals_the_residual_per_record() -> None:
    flow = effective_flow(rng("lin-flow").uniform(-0.5, 0.5, (P, 2)), FULL, 0.5, 40,
                          record_every=5, normalised=False)
    np.testing.assert_allclose(linearity(flow), [linearity_residual(e) for e in flow.trajectory],
                               rtol=1e-9)


def test_steps_to_structure_edge_cases() -> None:
    line_start = effective_flow(np.arange(P, dtype=float), FULL, 0.5, 3)
    assert steps_to_structure(line_start, 1e-12) == 0
    random_start = effective_flow(rng("edge").uniform(-0.5, 0.5, P), FULL, 0.5, 3)
    assert steps_to_structure(random_start, 1e-6) is None
