"""Paper 2's probes of each seed's training set and embedding (`grokverify.engine.probes`,
computed on the host by `grokverify.analysis`): parallelogram (RQI, Acc^, realised but not
implied parallelograms) against `representation`, hand counts and an enumeration;
parallelogram_nullity and sample_fraction against the exact and a brute-force nullity;
effective (λ3, n_h, the flow's drifts) against `effective`; each on every seed's own split, in a
claim that loads and trains (zero steps included), and refused where paper 2's algebra does not
apply."""

from __future__ import annotations

import itertools
import math
from pathlib import Path
from typing import Any

import numpy as np
import pydantic
import pytest
import torch
from conftest import Has, problems, train_rows
from reference import predicted_accuracy, unimplied_realised

from grokverify.analysis import effective as eff
from grokverify.analysis import parallelogram as P
from grokverify.analysis import representation as R
from grokverify.claim.load import load_claim
from grokverify.claim.metrics import CurveReaches
from grokverify.claim.models import ToySumSpec
from grokverify.claim.probes import (
    EffectiveSpec,
    ParallelogramNullitySpec,
    ParallelogramSpec,
    SampleFractionSpec,
)
from grokverify.claim.tasks import TaskSpec
from grokverify.cli import main
from grokverify.engine.batched import BatchedModel
from grokverify.engine.loop import train_seeds
from grokverify.engine.models import DataShape
from grokverify.engine.probes import ProbeContext, parallelogram_of, sample_masks
from grokverify.engine.tasks import build_dataset
from grokverify.kinds import PROBES
from grokverify.stats.metrics import observe

probe = PROBES.implementation  # a probe's function by name

CLAIMS = Path(__file__).resolve().parent.parent / "claims"


def _sum_task(p: int, frac: float, unordered: bool = True) -> TaskSpec:
    """Paper 2's sum task: a + b, not reduced."""
    return TaskSpec.model_validate({"op": "add", "p": p, "modular": False,
                                    "unordered": unordered, "train_frac": frac})


def _toy(task: TaskSpec, seeds: list[int], emb_dim: int = 1, hidden: int = 4) -> BatchedModel:
    n_classes = build_dataset(task, seeds[0]).n_classes
    return BatchedModel(ToySumSpec(kind="toy_sum", hidden=hidden, emb_dim=emb_dim),
                        DataShape(p=task.p, vocab=task.p + 2, n_classes=n_classes), seeds)


def _claim(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "claim.yaml"
    path.write_text(text, encoding="utf-8")
    return path


# ---------------------------------------------------------------- parallelogram

PARALLELOGRAM_CURVES = ["parallelogram.rqi", "parallelogram.acc", "parallelogram.acc_test",
                        "parallelogram.unimplied", "parallelogram.unimplied_share"]


def _index(p: int) -> dict[tuple[int, int], int]:
    return {(int(i), int(j)): k for k, (i, j) in enumerate(P.samples(p))}


def _train_samples(p: int, a: np.ndarray, b: np.ndarray) -> list[int]:
    """Sample indices of training rows, (a, b) and (b, a) one sample, by lookup in the
    analysis's own sample list."""
    index = _index(p)
    return sorted({index[(min(x, y), max(x, y))] for x, y in zip(a.tolist(), b.tolist(),
                                                                  strict=True)})


def _parallelogram(model: BatchedModel, train: tuple[torch.Tensor, ...],
                   **options: Any) -> dict[str, np.ndarray]:
    spec = ParallelogramSpec(name="parallelogram", every=1, **options)
    got = probe("parallelogram")(model, spec, ProbeContext(train))
    assert sorted(got) == sorted(spec.curves()) == sorted(PARALLELOGRAM_CURVES)
    return {k: v.numpy() for k, v in got.items()}


def test_sample_masks_follow_the_analysis_sample_order() -> None:
    rng = np.random.default_rng(3)
    p = 7
    a, b = rng.integers(0, p, size=(2, 3, 12))
    masks = sample_masks(torch.as_tensor(a), torch.as_tensor(b), p)
    for s in range(3):
        assert np.flatnonzero(masks[s]).tolist() == _train_samples(p, a[s], b[s])


@pytest.mark.parametrize(("unordered", "delta", "distance"), [
    (True, 0.01, "norm"), (True, 3.0, "norm"), (False, 0.1, "mean_sq")])
def test_equals_representation_on_each_seeds_own_split(unordered: bool, delta: float,
                                                       distance: str) -> None:
    """Three seeds of toy_sum (2-D embedding), each with its own split; an ordered task's
    (a, b) and (b, a) are one sample. A wide δ makes realised sets non-trivial."""
    p, seeds = 8, [0, 1, 2]
    task = _sum_task(p, 0.5, unordered)
    data = [build_dataset(task, s) for s in seeds]
    model = _toy(task, seeds, emb_dim=2, hidden=8)
    got = _parallelogram(model, train_rows(task, seeds), delta=delta, distance=distance)
    for s in range(len(seeds)):
        e = model.param("embed.weight")[s].detach().double().numpy()
        train = _train_samples(p, data[s].a[data[s].train_idx], data[s].b[data[s].train_idx])
        acc = predicted_accuracy(e, train, delta, distance)
        un = unimplied_realised(e, train, delta, distance)
        want = [R.rqi(e, delta, distance), acc.acc_all, acc.acc_test, un.count, un.share]
        np.testing.assert_allclose([got[c][s] for c in PARALLELOGRAM_CURVES], want, rtol=1e-12)
    if delta == 3.0:  # the comparison above was not between empty sets
        assert (got["parallelogram.rqi"] > 0).all() and (got["parallelogram.unimplied"] > 0).any()


# p = 5: one training sample per class (every class has one), some rows given reversed or
# twice; no class has two training samples, so the training set implies no parallelogram
P5_ROWS = [(0, 0), (1, 0), (1, 1), (0, 3), (3, 0), (2, 2), (4, 1), (2, 4), (4, 3), (4, 4)]
P5_TEST = [(0, 2), (1, 2), (0, 4), (1, 3), (2, 3), (3, 3)]  # the 6 other samples


def _p5_model(embeddings: list[np.ndarray]) -> tuple[BatchedModel, tuple[torch.Tensor, ...]]:
    model = BatchedModel(ToySumSpec(kind="toy_sum", hidden=4, emb_dim=2),
                         DataShape(p=5, vocab=7, n_classes=9), list(range(len(embeddings))))
    with torch.no_grad():
        for s, e in enumerate(embeddings):
            model.param("embed.weight")[s].copy_(torch.as_tensor(e))
    a, b = (torch.tensor([[r[k] for r in P5_ROWS]] * len(embeddings)) for k in (0, 1))
    return model, (a, b, a + b)


def test_hand_made_embeddings_against_hand_counts() -> None:
    """p = 5 has |P0| = 7 parallelograms (classes 2, 3, 5, 6 one each, class 4 three); the
    expected values of each seed are worked out in the comments."""
    # seed 0, E_i = i·v (exact linear structure): all 7 realised, RQI = 1; every test sample
    # shares a parallelogram with its class's training sample, Acc^ = 1 (all and test); none is
    # implied, so all 7 are not implied (share 1).
    # seed 1, token 4 moved (E = 0, 1, 2, 3, 10 along v): the parallelograms with a 4 break,
    # leaving (0,2)-(1,1), (0,3)-(1,2), (1,3)-(2,2): RQI = 3/7; test samples reached: (0,2),
    # (1,2), (1,3), so Acc^_test = 3/6 and Acc^ = (9 + 3)/15; 3 not implied, share 1.
    # seed 2 diverged (inf), seed 3 has a constant dimension: NaN everywhere.
    v = np.array([0.5, -2.0])
    moved = np.array([0.0, 1.0, 2.0, 3.0, 10.0])
    constant = np.stack([np.arange(5.0), np.ones(5)], axis=1)
    model, train = _p5_model([np.arange(5.0)[:, None] * v, moved[:, None] * v,
                              np.full((5, 2), np.inf), constant])
    assert P.parallelogram_samples(5).shape[0] == 7
    assert sample_masks(train[0], train[1], 5)[0].sum() == 15 - len(P5_TEST)
    got = _parallelogram(model, train)
    want = {"parallelogram.rqi": [1.0, 3 / 7], "parallelogram.acc": [1.0, 12 / 15],
            "parallelogram.acc_test": [1.0, 0.5], "parallelogram.unimplied": [7.0, 3.0],
            "parallelogram.unimplied_share": [1.0, 1.0]}
    for curve, values in want.items():
        np.testing.assert_allclose(got[curve][:2], values, rtol=1e-12, err_msg=curve)
        assert np.isnan(got[curve][2:]).all(), curve


def _enumerated(e: np.ndarray, train: set[tuple[int, int]], delta: float) -> list[float]:
    """The four measures from the definitions, with loops: normalised E (sample std), every
    pair of distinct samples of one class, Euclidean defect <= δ; the training set here
    implies nothing (one training sample per class), so every realised one is not implied."""
    p = len(e)
    x = (e - e.mean(axis=0)) / e.std(axis=0, ddof=1)
    samples = [(i, j) for i in range(p) for j in range(i, p)]
    real = [(s, t) for s, t in itertools.combinations(samples, 2) if sum(s) == sum(t)
            and np.linalg.norm(x[s[0]] + x[s[1]] - x[t[0]] - x[t[1]]) <= delta]
    n_p0 = sum(1 for s, t in itertools.combinations(samples, 2) if sum(s) == sum(t))
    reached = set(train) | {s for s, t in real if t in train} | {t for s, t in real if s in train}
    test = [s for s in samples if s not in train]
    return [len(real) / n_p0, len(reached) / len(samples),
            sum(s in reached for s in test) / len(test), float(len(real))]


def test_a_random_embedding_against_an_enumeration() -> None:
    rng = np.random.default_rng(11)
    e = rng.normal(size=(5, 2))
    e[3] = e[1] + e[2] - e[0] + 0.001  # (0,3)-(1,2) realised at δ = 0.05, most others not
    model, train = _p5_model([e, e])
    got = _parallelogram(model, train, delta=0.05)
    train_set = {(min(a, b), max(a, b)) for a, b in P5_ROWS}
    want = _enumerated(e, train_set, 0.05)
    assert want[0] > 0
    np.testing.assert_allclose([got[c][0] for c in PARALLELOGRAM_CURVES[:4]], want,
                               rtol=1e-12)


def test_values_do_not_depend_on_the_other_seeds() -> None:
    rng = np.random.default_rng(5)
    e = rng.normal(size=(3, 6, 1))
    masks = rng.random((3, P.n_samples(6))) < 0.5
    together = parallelogram_of(e, masks, 0.3, "norm")
    for s in range(3):
        alone = parallelogram_of(e[s:s + 1], masks[s:s + 1], 0.3, "norm")
        for c in together:
            np.testing.assert_array_equal(alone[c], together[c][s:s + 1])


PARALLELOGRAM_CLAIM = """\
id: parallelogram_tiny
title: Tiny parallelogram claim
statement: RQI reaches 0.5 sooner with c = 10 (test fixture).
source: {arxiv: "2205.10343", where: test fixture, role: inference, quote: test fixture}
base:
  task: {op: add, p: 6, modular: false, unordered: true, train_frac: 0.6}
  model: {kind: toy_sum, hidden: 8, emb_dim: 1}
  optimizer: {name: adamw, lr: 0.01}
  training: {steps: 6, eval_interval: 3, early_stop: false}
  probes:
    - {name: parallelogram, every: 3, delta: 0.2, distance: mean_sq}
arms:
  c1: {}
  c10: {optimizer: {emb_lr_mult: 10}}
scales:
  quick: {description: test scale}
seeds: 2
metric: {name: curve_reaches, curve: parallelogram.rqi, level: 0.5}
criterion: {name: survival_compare, baseline: c1, treated: c10, direction: less,
            min_effect: 0.2, n_boot: 200}
"""


def test_a_claim_with_the_probe_and_the_metric_loads_and_trains(tmp_path: Path) -> None:
    exp = load_claim(_claim(tmp_path, PARALLELOGRAM_CLAIM)).resolved["quick"]["c10"]
    records = train_seeds(exp, [0, 1])
    metric = CurveReaches.model_validate({"name": "curve_reaches",
                                          "curve": "parallelogram.rqi", "level": 0.5})
    shape = DataShape(p=6, vocab=8, n_classes=11)
    start = probe("parallelogram")(BatchedModel(exp.model, shape, [0, 1]), exp.probes[0],
                                    ProbeContext(train_rows(exp.task, [0, 1])))
    for s, rec in enumerate(records):
        for curve in PARALLELOGRAM_CURVES:
            assert rec["curves"][curve]["steps"] == [0, 3, 6]
            first = rec["curves"][curve]["values"][0]
            want = start[curve][s].item()
            assert first == want or (first is None and math.isnan(want))
        rqi = rec["curves"]["parallelogram.rqi"]
        expected = next(((float(t), True) for t, v in zip(rqi["steps"], rqi["values"],
                                                          strict=True) if v >= 0.5), (6.0, False))
        assert observe(metric, rec) == expected


@pytest.mark.parametrize(("old", "new", "words"), [
    ("model: {kind: toy_sum, hidden: 8, emb_dim: 1}", "model: {kind: scalar_mlp, hidden: 8}",
     ("base: parallelogram ", "token embedding matrix (E)", "'scalar_mlp'")),
    ("distance: mean_sq}", "distance: mean_sq, chaining: false}",
     ("base.probes[0].chaining: unknown key 'chaining'",)),
    ("distance: mean_sq}", "distance: cosine}", ("base.probes[0].distance: ",)),
    ("delta: 0.2", "delta: -0.1", ("base.probes[0].delta: ",)),
    ("modular: false", "modular: true",
     ("base: parallelogram: ", "paper 2's sum task", "got op 'add', modular true")),
    ("p: 6,", "p: 2,", ("base: parallelogram: ", "3 <= p <= 64", "got p = 2")),
    ("level: 0.5}", "level: 0.5, above: true}", ("metric.above: unknown key 'above'",)),
    ("curve: parallelogram.rqi", "curve: parallelogram.RQI",
     ("metric.curve: ", "unknown curve 'parallelogram.RQI'", "did you mean 'parallelogram.rqi'")),
])
def test_a_bad_parallelogram_claim_is_refused_naming_the_field(
        tmp_path: Path, old: str, new: str, words: tuple[str, ...]) -> None:
    assert PARALLELOGRAM_CLAIM.count(old) == 1
    found = problems(tmp_path, PARALLELOGRAM_CLAIM.replace(old, new))
    assert Has(*words) in found, found


# ---------------------------------------------------------------- parallelogram_nullity

NULLITY_CURVES = ["parallelogram_nullity.n0", "parallelogram_nullity.is2"]


def brute_nullity(p: int, pairs: set[tuple[int, int]]) -> int:
    """p - rank of the rows e_i + e_j - e_m - e_n over every two training samples of one
    class, enumerated (numpy's SVD rank: the integer matrix is tiny and well scaled)."""
    rows = []
    for (i, j), (m, n) in itertools.combinations(sorted(pairs), 2):
        if i + j == m + n:
            r = np.zeros(p)
            np.add.at(r, [i, j], 1)  # E_i + E_i counts twice
            np.add.at(r, [m, n], -1)
            rows.append(r)
    return p - (int(np.linalg.matrix_rank(np.array(rows))) if rows else 0)


def _nullity(task: TaskSpec, seeds: list[int]) -> tuple[dict[str, np.ndarray], list[set]]:
    """The nullity and sample-fraction probes' values per seed, and each seed's samples."""
    data = [build_dataset(task, s) for s in seeds]
    model = _toy(task, seeds)
    rows = train_rows(task, seeds)
    spec = ParallelogramNullitySpec(name="parallelogram_nullity", every=1)
    got = probe("parallelogram_nullity")(model, spec, ProbeContext(rows))
    assert sorted(got) == sorted(spec.curves()) == sorted(NULLITY_CURVES)
    fraction = SampleFractionSpec(name="sample_fraction", every=1)
    got.update(probe("sample_fraction")(model, fraction, ProbeContext(rows)))
    assert fraction.curves() == ["sample_fraction"]
    samples = [{(min(x, y), max(x, y)) for x, y in zip(d.a[d.train_idx].tolist(),
                                                       d.b[d.train_idx].tolist(), strict=True)}
               for d in data]
    return {k: v.numpy() for k, v in got.items()}, samples


@pytest.mark.parametrize(("p", "frac", "unordered"), [
    (5, 0.6, True), (6, 0.5, True), (10, 0.4, True), (10, 0.55, True), (7, 0.5, False)])
def test_equals_the_exact_and_brute_nullity_of_each_seeds_split(p: int, frac: float,
                                                                unordered: bool) -> None:
    """An ordered task's (a, b) and (b, a) are one sample, as for the parallelogram probe."""
    seeds = list(range(12))
    got, samples = _nullity(_sum_task(p, frac, unordered), seeds)
    index = {(int(i), int(j)): k for k, (i, j) in enumerate(P.samples(p))}
    for s, pairs in enumerate(samples):
        exact = P.nullity(p, sorted(index[q] for q in pairs))
        assert exact == brute_nullity(p, pairs)
        assert got["parallelogram_nullity.n0"][s] == exact
        assert got["parallelogram_nullity.is2"][s] == float(exact == 2)
        # the realised training fraction: k of the p(p + 1)/2 samples (unordered: k is
        # round(frac · N); ordered rows count their distinct samples)
        n = p * (p + 1) // 2
        assert len(pairs) == round(frac * n) or not unordered
        assert got["sample_fraction"][s] == len(pairs) / n


def test_both_outcomes_occur_near_the_critical_fraction() -> None:
    """p = 10 at 40% of the 55 samples: some splits pin the embedding (n0 = 2), some not."""
    got, _ = _nullity(_sum_task(10, 0.4), list(range(40)))
    n0 = got["parallelogram_nullity.n0"]
    assert (n0 >= 2).all() and (n0 == 2).any() and (n0 > 2).any()
    np.testing.assert_array_equal(got["parallelogram_nullity.is2"], (n0 == 2).astype(float))


NULLITY_CLAIM = """\
id: nullity_tiny
title: Tiny nullity claim
statement: test fixture.
source: {arxiv: "2205.10343", where: test fixture, role: inference, quote: test fixture}
base:
  task: {op: add, p: 10, modular: false, unordered: true, train_frac: 0.4, test_frac: null}
  model: {kind: toy_sum, hidden: 4, emb_dim: 1}
  optimizer: {name: adamw, lr: 0.001}
  training: {steps: 0, eval_interval: 1}
  probes: [{name: parallelogram_nullity, every: 1}]
arms:
  f0.4: {}
  f0.5: {task: {train_frac: 0.5}}
scales:
  quick: {description: test scale}
seeds: 4
metric: {name: curve_at, curve: parallelogram_nullity.is2, step: 0}
criterion: {name: crossing, points: {f0.4: 0.4, f0.5: 0.5}, region: [0.35, 0.45]}
"""


def test_a_zero_step_run_records_the_nullity_at_step_zero(tmp_path: Path) -> None:
    exp = load_claim(_claim(tmp_path, NULLITY_CLAIM)).resolved["quick"]["f0.5"]
    seeds = [0, 1, 2, 3]
    records = train_seeds(exp, seeds)
    got, samples = _nullity(exp.task, seeds)
    for s, rec in enumerate(records):
        for curve in NULLITY_CURVES:
            assert rec["curves"][curve]["steps"] == [0]
            assert rec["curves"][curve]["values"] == [got[curve][s]]
        assert rec["curves"]["parallelogram_nullity.n0"]["values"][0] == brute_nullity(
            10, samples[s])


@pytest.mark.parametrize(("old", "new", "words"), [
    ("modular: false", "modular: true",
     ("base: parallelogram_nullity: ", "paper 2's sum task", "got op 'add', modular true")),
    ("op: add", "op: mul", ("parallelogram_nullity: needs paper 2's sum task",)),
    ("p: 10,", "p: 2,", ("base: parallelogram_nullity: ", "3 <= p <= 64", "got p = 2")),
    ("every: 1}", "every: 1, delta: 0.1}", ("base.probes[0].delta: unknown key 'delta'",)),
    ("curve: parallelogram_nullity.is2", "curve: parallelogram_nullity.is_2",
     ("metric.curve: ", "unknown curve 'parallelogram_nullity.is_2'",
      "did you mean 'parallelogram_nullity.is2'")),
])
def test_a_bad_nullity_claim_is_refused_naming_the_field(tmp_path: Path, old: str, new: str,
                                                        words: tuple[str, ...]) -> None:
    assert NULLITY_CLAIM.count(old) == 1
    found = problems(tmp_path, NULLITY_CLAIM.replace(old, new))
    assert Has(*words) in found, found


def test_the_shipped_claim_validates(capsys: pytest.CaptureFixture[str]) -> None:
    path = CLAIMS / "p2_nullity_threshold_p10.yaml"
    assert main(["validate", str(path)]) == 0
    assert "ok" in capsys.readouterr().out
    loaded = load_claim(path)
    assert len(loaded.claim.arms) == 9
    sizes = []
    for name, x in loaded.claim.criterion.points.items():  # type: ignore[union-attr]
        exp = loaded.resolved["quick"][name]
        assert exp.training.steps == 0
        k = round(exp.task.train_frac * 55)
        sizes.append(k)
        assert x == pytest.approx(k / 55, abs=1e-6)  # x is the realised fraction k / 55
    assert sizes == [11, 14, 16, 19, 22, 25, 28, 30, 33]


# ---------------------------------------------------------------- effective

EFFECTIVE_CURVES = ["effective.lambda3", "effective.n_h", "effective.sum_drift",
                    "effective.z0_drift"]


def _effective_spec(**kw) -> EffectiveSpec:
    return EffectiveSpec.model_validate({"name": "effective", "every": 1, "eta": 1e-3, **kw})


def _effective(frac: float, seeds: list[int], spec: EffectiveSpec, emb_dim: int = 1):
    """The probe's values on p = 10 at training fraction `frac`, the model, each seed's pairs."""
    task = _sum_task(10, frac)
    data = [build_dataset(task, s) for s in seeds]
    model = _toy(task, seeds, emb_dim=emb_dim)
    values = probe("effective")(model, spec, ProbeContext(train_rows(task, seeds)))
    got = {k: v.numpy() for k, v in values.items()}
    pairs = [np.stack([d.a[d.train_idx], d.b[d.train_idx]], axis=1) for d in data]
    return got, model, pairs


@pytest.mark.parametrize("emb_dim", [1, 2])
def test_equals_the_analysis_of_each_seeds_training_set_and_embedding(emb_dim: int) -> None:
    spec = _effective_spec(flow_steps=200)
    got, model, pairs = _effective(0.6, list(range(6)), spec, emb_dim)
    assert sorted(got) == sorted(spec.curves()) == sorted(EFFECTIVE_CURVES)
    e = model.param(model.role("E")).detach().double().numpy()[:, :10]
    for s in range(6):
        system = eff.parallelogram_system(pairs[s], 10)
        lam3 = eff.grokking_rate(system, 10, z0=eff.normalised_z0(10, emb_dim))
        assert got["effective.lambda3"][s] == pytest.approx(lam3, rel=1e-12)
        if system.nullity == 2:
            assert got["effective.n_h"][s] == pytest.approx(1 / (lam3 * 1e-3), rel=1e-12)
        flow = eff.effective_flow(e[s], system, 1e-3, 200, method="rk4")
        assert got["effective.z0_drift"][s] == pytest.approx(
            np.abs(flow.z0 - flow.z0[0]).max() / flow.z0[0], abs=1e-18)
        # App. F: RK4 conserves both to rounding over 200 steps
        assert got["effective.z0_drift"][s] < 1e-12 and got["effective.sum_drift"][s] < 1e-12
    assert (got["effective.lambda3"] > 0).any()


def test_euler_drifts_z0_by_its_known_amount_and_keeps_the_sum() -> None:
    """Plain gradient descent raises Z0 by η² |∇ℓ_eff|² a step (analysis.effective) and keeps a
    centred sum exactly; the drift is far above RK4's."""
    euler, _, _ = _effective(0.6, [0, 1], _effective_spec(flow_steps=500, method="euler"))
    rk4, _, _ = _effective(0.6, [0, 1], _effective_spec(flow_steps=500))
    assert (euler["effective.z0_drift"] > 1e3 * rk4["effective.z0_drift"]).all()
    assert (euler["effective.sum_drift"] < 1e-12).all()


def test_an_unpinned_set_has_no_prediction_and_a_diverged_seed_is_nan() -> None:
    got, model, pairs = _effective(0.2, [0, 1, 2], _effective_spec(flow_steps=10))
    unpinned = [s for s in range(3) if P.nullity(10, P.sample_index(
        10, pairs[s][:, 0], pairs[s][:, 1])) > 2]
    assert unpinned  # 11 of 55 samples never pin the embedding
    for s in unpinned:
        assert got["effective.lambda3"][s] == 0 and math.isnan(got["effective.n_h"][s])
    with torch.no_grad():
        model.param(model.role("E"))[1, 3] = float("nan")
    rows = train_rows(_sum_task(10, 0.2), [0, 1, 2])
    again = probe("effective")(model, _effective_spec(flow_steps=10), ProbeContext(rows))
    assert all(math.isnan(again[c][1].item()) for c in EFFECTIVE_CURVES)
    assert math.isfinite(again["effective.z0_drift"][0].item())


@pytest.mark.parametrize("bad", [{"eta": 0}, {"eta": -1.0}, {"flow_steps": -1},
                                 {"method": "heun"}, {"delta": 0.1}])
def test_bad_effective_fields_are_refused(bad: dict) -> None:
    with pytest.raises(pydantic.ValidationError):
        _effective_spec(**bad)


EFFECTIVE_CLAIM = """\
id: effective_tiny
title: Tiny effective-theory claim
statement: test fixture.
source: {arxiv: "2205.10343", where: test fixture, role: inference, quote: test fixture}
base:
  task: {op: add, p: 10, modular: false, unordered: true, train_frac: 0.6, test_frac: null}
  model: {kind: toy_sum, hidden: 4, emb_dim: 1}
  optimizer: {name: adamw, lr: 0.001}
  training: {steps: 0, eval_interval: 1}
  probes: [{name: effective, every: 1, eta: 0.001, flow_steps: 50}]
arms:
  f0.6: {}
scales:
  quick: {description: test scale}
seeds: 4
metric: {name: curve_at, curve: effective.z0_drift, step: 0}
criterion: {name: value, arm: f0.6, target: 0, tol: 1.0e-9}
"""


def test_a_zero_step_run_records_the_effective_theory_at_step_zero(tmp_path: Path) -> None:
    path = _claim(tmp_path, EFFECTIVE_CLAIM)
    exp = load_claim(path).resolved["quick"]["f0.6"]
    records = train_seeds(exp, [0, 1, 2, 3])
    got, _, _ = _effective(0.6, [0, 1, 2, 3], _effective_spec(flow_steps=50))
    for s, rec in enumerate(records):
        for curve in EFFECTIVE_CURVES:
            assert rec["curves"][curve]["steps"] == [0]
            value = rec["curves"][curve]["values"][0]
            want = got[curve][s]
            assert (value is None and math.isnan(want)) or value == pytest.approx(want)
    bad = EFFECTIVE_CLAIM.replace("modular: false", "modular: true")
    path.write_text(bad, encoding="utf-8")
    with pytest.raises(Exception, match="effective: needs paper 2's sum task"):
        load_claim(path)
