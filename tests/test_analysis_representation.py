"""Representation probes of paper 2's toy (grokverify.analysis.representation): RQI, predicted
accuracy Acc^, realised-but-not-implied parallelograms (C9) and impermissible training
parallelograms (C1, Proposition 1), on hand-counted embeddings, at the δ boundary, under affine
changes of the embedding, with both distances, batched and on invalid embeddings; and the C1
probe per seed on each seed's own split, and in a claim that trains it."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
import torch
from reference import predicted_accuracy, unimplied_realised

from grokverify.analysis import parallelogram as P
from grokverify.analysis import representation as R
from grokverify.claim.load import load_claim
from grokverify.claim.models import ToySumSpec
from grokverify.claim.probes import ImpermissibleSpec
from grokverify.claim.tasks import TaskSpec
from grokverify.engine.batched import BatchedModel
from grokverify.engine.loop import train_seeds
from grokverify.engine.models import DataShape
from grokverify.engine.probes import ProbeContext
from grokverify.engine.tasks import build_dataset
from grokverify.kinds import PROBES


def idx(p: int) -> dict[tuple[int, int], int]:
    return {tuple(s): k for k, s in enumerate(P.samples(p).tolist())}


def line(p: int, d: int = 1) -> np.ndarray:
    a, b = np.arange(1, d + 1) * 0.3, np.linspace(1.0, 2.0, d)
    return a + np.arange(p)[:, None] * b  # E_k = a + k b


def ref_defects(E: np.ndarray) -> dict[tuple[int, int, int, int], float]:
    """Euclidean defect of every permissible parallelogram, from the definition, on the
    normalised embedding (population mean, sample std), with its own loops."""
    p, d = E.shape
    En = (E - E.mean(axis=0)) / E.std(axis=0, ddof=1)
    pairs = [(i, j) for i in range(p) for j in range(i, p)]
    out = {}
    for (i, j), (m, n) in itertools.combinations(pairs, 2):
        if i + j == m + n:
            out[(i, j, m, n)] = float(np.sqrt(sum((En[i, c] + En[j, c] - En[m, c] - En[n, c]) ** 2
                                                  for c in range(d))))
    return out


# ------------------------------------------------------------------ RQI


@pytest.mark.parametrize("d", [1, 2, 5])
def test_a_line_has_rqi_one(d: int) -> None:
    for distance in ("norm", "mean_sq"):
        assert R.rqi(line(10, d), distance=distance) == 1.0
    assert R.rqi(np.arange(10.0)) == 1.0  # a 1-D array is (p, 1)


def test_defects_match_the_definition() -> None:
    rng = np.random.default_rng(0)
    for p, d in ((4, 1), (7, 3)):
        E = rng.normal(size=(p, d))
        ref = ref_defects(E)
        got = R.defects(E)
        quads = [tuple(q) for q in P.permissible_parallelograms(p).tolist()]
        assert sorted(ref) == sorted(quads)
        np.testing.assert_allclose(got, [ref[q] for q in quads], rtol=1e-12)
        np.testing.assert_allclose(R.defects(E, "mean_sq"), got ** 2 / d, rtol=1e-12)


def test_one_token_moved_p4_by_hand() -> None:
    """p = 4: P0 = {(0,2,1,1), (0,3,1,2), (1,3,2,2)}. Moving token 3 (E = 0, 1, 2, 10) breaks
    the two that contain it: RQI = 1/3, for both distances, in 1-D and 2-D."""
    E = np.array([0.0, 1.0, 2.0, 10.0])
    assert R.rqi(E) == pytest.approx(1 / 3)
    assert R.rqi(E, distance="mean_sq") == pytest.approx(1 / 3)
    assert R.realised(E).tolist() == [True, False, False]
    E2 = np.stack([E, 3 * E + 1], axis=1)
    assert R.rqi(E2) == pytest.approx(1 / 3)


@pytest.mark.parametrize("t", [0, 4, 9])
def test_one_token_moved_p10_counts(t: int) -> None:
    """Every parallelogram that contains token t has E_t with coefficient ±1 or ±2 (t cannot be
    on both sides: that would make the two samples equal), so moving t far breaks exactly
    those: RQI = (|P0| − #containing t) / |P0|, counted here by direct enumeration."""
    p = 10
    pairs = [(i, j) for i in range(p) for j in range(i, p)]
    quads = [(a, b) for a, b in itertools.combinations(pairs, 2) if sum(a) == sum(b)]
    with_t = sum(1 for a, b in quads if t in a + b)
    E = np.arange(p, dtype=float)
    E[t] += 50.0
    assert R.rqi(E) == pytest.approx((len(quads) - with_t) / len(quads))
    assert len(quads) == 70


def test_delta_boundary_counts_as_realised() -> None:
    """Raw (normalised=False) dyadic embedding: defects 0, 0.25, 0.25 exactly."""
    E = np.array([0.0, 1.0, 2.0, 3.25])
    assert R.defects(E, normalised=False).tolist() == [0.0, 0.25, 0.25]
    assert R.rqi(E, 0.25, normalised=False) == 1.0
    assert R.rqi(E, np.nextafter(0.25, 0.0), normalised=False) == pytest.approx(1 / 3)
    assert R.rqi(E, 0.0625, "mean_sq", normalised=False) == 1.0
    assert R.rqi(E, np.nextafter(0.0625, 0.0), "mean_sq", normalised=False) == pytest.approx(1 / 3)
    # 2-D: defect vector (3, 4): norm 5, mean square 12.5, exactly.
    E2 = np.array([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0], [6.0, 7.0]])
    assert R.defects(E2, normalised=False).tolist() == [0.0, 5.0, 5.0]
    assert R.defects(E2, "mean_sq", normalised=False).tolist() == [0.0, 12.5, 12.5]
    assert R.rqi(E2, 5.0, normalised=False) == 1.0
    assert R.rqi(E2, 12.5, "mean_sq", normalised=False) == 1.0
    assert R.rqi(E2, 12.4, "mean_sq", normalised=False) == pytest.approx(1 / 3)
    # Normalised: δ equal to a computed defect realises it, the next float below does not.
    En = np.array([0.0, 1.0, 2.05, 3.0])
    dv = R.defects(En)
    k = int(np.argmax(dv))
    assert R.realised(En, float(dv[k]))[k]
    assert not R.realised(En, float(np.nextafter(dv[k], 0.0)))[k]


def test_affine_change_of_the_embedding_leaves_rqi_unchanged() -> None:
    rng = np.random.default_rng(1)
    E = line(10, 3) + rng.normal(scale=0.02, size=(10, 3))
    base = R.defects(E)
    delta = float(np.sort(base)[len(base) // 2] + np.sort(base)[len(base) // 2 + 1]) / 2
    r0 = R.rqi(E, delta)
    assert 0.0 < r0 < 1.0
    for scale, shift in (([2.0, -0.5, 7.0], [3.0, -1.0, 0.0]), ([-1e3, 1e-3, 1.0], [5.0] * 3)):
        E2 = E * np.array(scale) + np.array(shift)  # per-dimension affine, sign flips included
        np.testing.assert_allclose(R.defects(E2), base, rtol=1e-9, atol=1e-12)
        assert R.rqi(E2, delta) == r0
    # Not normalised: the same change does change the count.
    assert R.rqi(E * 100.0, delta, normalised=False) != R.rqi(E, delta, normalised=False)


def test_the_two_distances() -> None:
    """1-D: mean_sq ≤ δ² ⟺ norm ≤ δ; the official threshold (mean square < 0.01) is the
    paper's norm test at δ = 0.1, looser than δ = 0.01."""
    rng = np.random.default_rng(2)
    E = np.arange(10.0) + rng.normal(scale=0.02, size=10)
    for delta in (0.01, 0.03, 0.1):
        assert R.rqi(E, delta, "norm") == R.rqi(E, delta ** 2, "mean_sq")
    assert R.rqi(E, 0.01, "mean_sq") == R.rqi(E, 0.1, "norm")
    assert R.rqi(E, 0.01, "mean_sq") > R.rqi(E, 0.01, "norm")
    with pytest.raises(ValueError, match="distance"):
        R.rqi(E, 0.01, "l1")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="delta"):
        R.rqi(E, -1.0)


def test_normalise_centres_and_scales_each_dimension() -> None:
    E = np.random.default_rng(6).normal(loc=3.0, scale=[1.0, 5.0], size=(9, 2))
    En = R.normalise(E)
    np.testing.assert_allclose(En.mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(En.std(axis=0, ddof=1), 1.0, rtol=1e-12)  # the official σ


def test_ddof_scales_the_normalised_defects() -> None:
    E = np.random.default_rng(3).normal(size=(8, 2))
    ratio = R.defects(E, ddof=0) / R.defects(E, ddof=1)
    np.testing.assert_allclose(ratio, np.sqrt(8 / 7), rtol=1e-12)


def test_invalid_embeddings_give_nan() -> None:
    E = np.arange(10.0)[:, None] * np.array([1.0, 0.0])  # second dimension constant
    assert np.isnan(R.rqi(E))
    bad = np.arange(10.0)
    bad[3] = np.nan
    assert np.isnan(R.rqi(bad))
    assert np.isnan(predicted_accuracy(bad, [0, 1]).acc_all)
    with pytest.raises(ValueError, match="normalised form"):
        unimplied_realised(bad, [0, 1])
    with pytest.raises(ValueError, match="p ≥ 2"):
        R.rqi(np.zeros((1, 3)))


def test_batched_rqi_equals_one_at_a_time() -> None:
    rng = np.random.default_rng(4)
    E = np.arange(10.0)[None, :, None] + rng.normal(scale=0.03, size=(6, 10, 2))
    got = R.rqi(E)
    assert got.shape == (6,)
    assert got.tolist() == [R.rqi(e) for e in E]
    assert len(set(got.tolist())) > 1


# ------------------------------------------------------------------ predicted accuracy Acc^


def test_predicted_accuracy_by_hand_p4() -> None:
    """p = 4, D = {02, 03, 22}. Line: 11 (from 02), 12 (from 03), 13 (from 22) are reached;
    00, 01, 23, 33 are alone in their class: Acc^ = 6/10, 3/7 off the training set. Token 3
    moved: only (0,2,1,1) is realised, so only 11: 4/10 and 1/7."""
    i = idx(4)
    train = [i[(0, 2)], i[(0, 3)], i[(2, 2)]]
    acc = predicted_accuracy(np.arange(4.0), train)
    assert acc.acc_all == pytest.approx(0.6) and acc.acc_test == pytest.approx(3 / 7)
    want = {(0, 2), (0, 3), (2, 2), (1, 1), (1, 2), (1, 3)}
    assert {tuple(s) for s in P.samples(4)[acc.reached].tolist()} == want
    acc = predicted_accuracy(np.array([0.0, 1.0, 2.0, 10.0]), train)
    assert acc.acc_all == pytest.approx(0.4) and acc.acc_test == pytest.approx(1 / 7)


def test_predicted_accuracy_is_one_for_a_line_when_every_class_is_trained() -> None:
    p = 10
    s = P.samples(p)
    first = {}
    for k, (a, b) in enumerate(s.tolist()):
        first.setdefault(a + b, k)
    train = sorted(first.values())  # one sample per class: 19 of 55
    acc = predicted_accuracy(line(p, 2), train)
    assert acc.acc_all == 1.0 and acc.acc_test == 1.0
    acc = predicted_accuracy(line(p), train[1:])  # class 0 untrained: (0,0) unreachable
    assert acc.acc_all == pytest.approx(54 / 55)
    full = predicted_accuracy(line(p), np.ones(55, dtype=bool))
    assert full.acc_all == 1.0 and np.isnan(full.acc_test)


def test_predicted_accuracy_is_single_step() -> None:
    """p = 5, raw E = (0, 1, 2, 3.2, 4.4), δ = 0.3: class 4 = {04, 13, 22} has defects
    (1,3,2,2) = 0.2, (0,4,1,3) = 0.2 (realised) and (0,4,2,2) = 0.4 (not). Trained on 22 alone,
    13 is reached in one step; 04 only through 13, a non-training sample, so (as in the official
    `calculate_Dbar`) it is not reached."""
    i = idx(5)
    E = np.array([0.0, 1.0, 2.0, 3.2, 4.4])
    quads = [tuple(q) for q in P.permissible_parallelograms(5).tolist()]
    d = dict(zip(quads, R.defects(E, normalised=False).tolist(), strict=True))
    assert d[(1, 3, 2, 2)] == pytest.approx(0.2) and d[(0, 4, 1, 3)] == pytest.approx(0.2)
    assert d[(0, 4, 2, 2)] == pytest.approx(0.4)
    acc = predicted_accuracy(E, [i[(2, 2)]], 0.3, normalised=False)
    assert {tuple(s) for s in P.samples(5)[acc.reached].tolist()} == {(2, 2), (1, 3)}
    assert acc.acc_all == pytest.approx(2 / 15) and acc.acc_test == pytest.approx(1 / 14)


def test_batched_predicted_accuracy_equals_one_at_a_time() -> None:
    rng = np.random.default_rng(5)
    p = 10
    E = np.arange(p)[None, :, None] + rng.normal(scale=0.02, size=(5, p, 1))
    masks = rng.random((5, P.n_samples(p))) < 0.4
    got = predicted_accuracy(E, masks)
    assert len(set(got.acc_test.tolist())) > 1 and 0 < got.acc_test.min() < 1
    for s in range(5):
        one = predicted_accuracy(E[s], masks[s])
        assert got.acc_all[s] == one.acc_all and got.acc_test[s] == one.acc_test
        np.testing.assert_array_equal(got.reached[s], one.reached)
    shared = predicted_accuracy(E, masks[0])  # one training set for every embedding
    assert shared.reached.shape == (5, P.n_samples(p))


# ------------------------------------------------------------------ C9: realised, not implied


def test_unimplied_realised_hand_example() -> None:
    """p = 5, D = {03, 12, 14, 23}, a line realises all 7 of P0. Implied directly: (0,3,1,2),
    (1,4,2,3); with chaining also (0,4,2,2). Not implied: 5 and 4."""
    i = idx(5)
    train = [i[(0, 3)], i[(1, 2)], i[(1, 4)], i[(2, 3)]]
    direct = unimplied_realised(np.arange(5.0), train, chaining=False)
    chained = unimplied_realised(np.arange(5.0), train)
    assert (direct.realised, direct.implied, direct.count) == (7, 2, 5)
    assert (chained.realised, chained.implied, chained.count) == (7, 3, 4)
    assert chained.share == pytest.approx(4 / 7)
    quads = [tuple(q) for q in P.permissible_parallelograms(5).tolist()]
    assert (0, 4, 2, 2) in [quads[k] for k in np.flatnonzero(direct.mask & ~chained.mask)]
    # A random embedding realises nothing: share is undefined.
    none = unimplied_realised(np.random.default_rng(0).normal(size=(5, 3)), train)
    assert (none.realised, none.count) == (0, 0) and np.isnan(none.share)
    with pytest.raises(ValueError, match="one embedding"):
        unimplied_realised(np.zeros((2, 5, 1)), train)


# ------------------------------------------------------------------ C1: impermissible gaps


def brute_gaps(e: np.ndarray, train: list[int]) -> list[float]:
    """Every two training samples with different sums, one by one, normalised per dimension
    with the sample standard deviation."""
    x = (e - e.mean(axis=0)) / e.std(axis=0, ddof=1)
    pairs = [tuple(P.samples(len(e))[k]) for k in train]
    return sorted(float(np.linalg.norm(x[i] + x[j] - x[m] - x[n]))
                  for (i, j), (m, n) in itertools.combinations(pairs, 2) if i + j != m + n)


def test_gaps_equal_a_loop_over_the_training_samples() -> None:
    rng = np.random.default_rng(5)
    for p, d in ((5, 1), (7, 2), (9, 3)):
        e = rng.normal(size=(p, d))
        train = sorted(rng.choice(P.n_samples(p), size=P.n_samples(p) // 2, replace=False))
        got = np.sort(R.impermissible_gaps(e, train))
        np.testing.assert_allclose(got, brute_gaps(e, train), rtol=1e-12)


def test_a_number_line_keeps_different_sums_one_step_apart() -> None:
    """E_k = k: sums differ by whole steps, so the smallest gap is one normalised step
    (1 / std(0..4) = 1/sqrt(2.5)); squashing 3 onto 4 makes (0, 4) and (0, 3) coincide."""
    line = np.arange(5.0)[:, None]
    every = list(range(P.n_samples(5)))
    assert R.impermissible_gaps(line, every).min() == pytest.approx(1 / np.sqrt(2.5))
    folded = line.copy()
    folded[3] = 4.0
    gaps = R.impermissible_gaps(folded, every)
    assert (gaps <= 1e-12).sum() > 0
    assert R.impermissible_gaps(line, [0]).size == 0  # one sample: no pair
    assert np.isnan(R.impermissible_gaps(np.ones((5, 1)), every)).all()


def test_the_probe_gives_each_seed_its_own_splits_gaps() -> None:
    p, seeds, delta = 8, [0, 1, 2], 0.3
    task = TaskSpec.model_validate({"op": "add", "p": p, "modular": False, "unordered": True,
                                    "train_frac": 0.5})
    data = [build_dataset(task, s) for s in seeds]
    model = BatchedModel(ToySumSpec(kind="toy_sum", hidden=8, emb_dim=2),
                         DataShape(p=p, vocab=p + 2, n_classes=data[0].n_classes), seeds)
    rows = tuple(torch.as_tensor(np.stack([getattr(d, k)[d.train_idx] for d in data]))
                 for k in ("a", "b", "y"))
    spec = ImpermissibleSpec(name="impermissible", every=1, delta=delta)
    got = PROBES.implementation("impermissible")(model, spec, ProbeContext(rows))
    assert sorted(got) == sorted(spec.curves())
    for s in seeds:
        e = model.param("embed.weight")[s].detach().double().numpy()
        train = sorted({int(P.sample_index(p, np.array(a), np.array(b)))
                        for a, b in zip(data[s].a[data[s].train_idx],
                                        data[s].b[data[s].train_idx], strict=True)})
        gaps = brute_gaps(e, train)
        assert got["impermissible.count"][s].item() == sum(g <= delta for g in gaps)
        assert got["impermissible.min_gap"][s].item() == pytest.approx(min(gaps), rel=1e-12)
    assert got["impermissible.count"].sum() > 0  # delta wide enough to count something


CLAIM = """\
id: impermissible_tiny
title: Tiny C1 claim
statement: test fixture.
source: {arxiv: "2205.10343", where: test fixture, role: inference, quote: test fixture}
base:
  task: {op: add, p: 6, modular: false, unordered: true, train_frac: 0.7, test_frac: null}
  model: {kind: toy_sum, hidden: 8, emb_dim: 1, output: regression, target_dim: 4}
  optimizer: {name: adamw, lr: 0.01}
  training: {steps: 6, eval_interval: 3}
  probes: [{name: impermissible, every: 3}]
arms: {}
grid:
  name: "f{f}"
  axes:
    f: {path: task.train_frac, values: [0.5, 0.7]}
scales: {quick: {description: tiny}}
seeds: 2
metric: {name: final_value, curve: impermissible.min_gap}
criterion: {name: value, arm: f0.5, target: 1, tol: 1}
"""


def test_a_claim_records_the_gaps_during_training(tmp_path: Path) -> None:
    path = tmp_path / "claim.yaml"
    path.write_text(CLAIM, encoding="utf-8")
    exp = load_claim(path).resolved["quick"]["f0.5"]
    for rec in train_seeds(exp, [0, 1]):
        gaps = rec["curves"]["impermissible.min_gap"]
        assert gaps["steps"] == [0, 3, 6]
        assert all(g is not None and g > 0 for g in gaps["values"])
