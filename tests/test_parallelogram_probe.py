"""The parallelogram probe (paper 2's RQI, predicted accuracy Acc^ and realised-but-not-implied
parallelograms, recorded per seed) and the curve_reaches time metric: the probe against
`grokverify.analysis.representation` on each seed's own split and against hand counts; the
metric on synthetic records; both in a claim that loads and trains, and refused where they do
not apply."""

from __future__ import annotations

import itertools
import math
from pathlib import Path
from typing import Any

import numpy as np
import pydantic
import pytest
import torch
from test_mutants_spec import problems

from grokverify.analysis import parallelogram as P
from grokverify.analysis import representation as R
from grokverify.claim.load import load_claim
from grokverify.claim.metrics import CurveReached, CurveReaches, FinalDifference
from grokverify.claim.models import ToySumSpec
from grokverify.claim.probes import ParallelogramSpec
from grokverify.claim.tasks import TaskSpec
from grokverify.engine.batched import BatchedModel
from grokverify.engine.loop import train_seeds
from grokverify.engine.models import DataShape
from grokverify.engine.probes import ProbeContext, parallelogram_of, sample_masks
from grokverify.engine.tasks import build_dataset
from grokverify.kinds import PROBES
from grokverify.stats.arms import DIVERGED, seed_value
from grokverify.stats.metrics import observe

probe = PROBES.implementation  # a probe's function by name

CURVES = ["parallelogram.rqi", "parallelogram.acc", "parallelogram.acc_test",
          "parallelogram.unimplied", "parallelogram.unimplied_share"]


def _index(p: int) -> dict[tuple[int, int], int]:
    return {(int(i), int(j)): k for k, (i, j) in enumerate(P.samples(p))}


def _train_samples(p: int, a: np.ndarray, b: np.ndarray) -> list[int]:
    """Sample indices of training rows, (a, b) and (b, a) one sample, by lookup in the
    analysis's own sample list."""
    index = _index(p)
    return sorted({index[(min(x, y), max(x, y))] for x, y in zip(a.tolist(), b.tolist(),
                                                                  strict=True)})


def _probe(model: BatchedModel, train: tuple[torch.Tensor, ...],
           **options: Any) -> dict[str, np.ndarray]:
    spec = ParallelogramSpec(name="parallelogram", every=1, **options)
    got = probe("parallelogram")(model, spec, ProbeContext(train))
    assert sorted(got) == sorted(spec.curves()) == sorted(CURVES)
    return {k: v.numpy() for k, v in got.items()}


# ---------------------------------------------------------------- the probe


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
    task = TaskSpec.model_validate({"op": "add", "p": p, "modular": False,
                                    "unordered": unordered, "train_frac": 0.5})
    data = [build_dataset(task, s) for s in seeds]
    model = BatchedModel(ToySumSpec(kind="toy_sum", hidden=8, emb_dim=2),
                         DataShape(p=p, vocab=p + 2, n_classes=data[0].n_classes), seeds)
    rows = [torch.as_tensor(np.stack([getattr(d, k)[d.train_idx] for d in data]))
            for k in ("a", "b", "y")]
    got = _probe(model, tuple(rows), delta=delta, distance=distance)
    for s in range(len(seeds)):
        e = model.param("embed.weight")[s].detach().double().numpy()
        train = _train_samples(p, data[s].a[data[s].train_idx], data[s].b[data[s].train_idx])
        acc = R.predicted_accuracy(e, train, delta, distance)
        un = R.unimplied_realised(e, train, delta, distance)
        want = [R.rqi(e, delta, distance), acc.acc_all, acc.acc_test, un.count, un.share]
        np.testing.assert_allclose([got[c][s] for c in CURVES], want, rtol=1e-12)
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
    """p = 5 has |P0| = 7 parallelograms (classes 2, 3, 5, 6 one each, class 4 three).

    Seed 0, E_i = i·v (exact linear structure): all 7 realised, RQI = 1; every test sample
    shares a parallelogram with its class's training sample, Acc^ = 1 (all and test); none is
    implied, so all 7 are not implied (share 1).
    Seed 1, token 4 moved (E = 0, 1, 2, 3, 10 along v): the parallelograms with a 4 break,
    leaving (0,2)-(1,1), (0,3)-(1,2), (1,3)-(2,2): RQI = 3/7; test samples reached: (0,2),
    (1,2), (1,3), so Acc^_test = 3/6 and Acc^ = (9 + 3)/15; 3 not implied, share 1.
    Seed 2, a diverged seed (inf) and seed 3, a constant dimension: NaN everywhere."""
    v = np.array([0.5, -2.0])
    moved = np.array([0.0, 1.0, 2.0, 3.0, 10.0])
    constant = np.stack([np.arange(5.0), np.ones(5)], axis=1)
    model, train = _p5_model([np.arange(5.0)[:, None] * v, moved[:, None] * v,
                              np.full((5, 2), np.inf), constant])
    assert P.parallelogram_samples(5).shape[0] == 7
    assert sample_masks(train[0], train[1], 5)[0].sum() == 15 - len(P5_TEST)
    got = _probe(model, train)
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
    got = _probe(model, train, delta=0.05)
    train_set = {(min(a, b), max(a, b)) for a, b in P5_ROWS}
    want = _enumerated(e, train_set, 0.05)
    assert want[0] > 0
    np.testing.assert_allclose([got[c][0] for c in CURVES[:4]], want, rtol=1e-12)


def test_values_do_not_depend_on_the_other_seeds() -> None:
    rng = np.random.default_rng(5)
    e = rng.normal(size=(3, 6, 1))
    masks = rng.random((3, P.n_samples(6))) < 0.5
    together = parallelogram_of(e, masks, 0.3, "norm")
    for s in range(3):
        alone = parallelogram_of(e[s:s + 1], masks[s:s + 1], 0.3, "norm")
        for c in together:
            np.testing.assert_array_equal(alone[c], together[c][s:s + 1])


# ---------------------------------------------------------------- the metric


def _reaches(**fields: Any) -> CurveReaches:
    return CurveReaches.model_validate({"name": "curve_reaches", "curve": "parallelogram.rqi",
                                        "level": 0.95, **fields})


def _record(values: list[float | None], budget: int = 100, done: bool = False,
            diverged: bool = False) -> dict[str, Any]:
    steps = [10 * k for k in range(len(values))]
    return {"curves": {"parallelogram.rqi": {"steps": steps, "values": values}},
            "summary": {"budget": budget, "done": done, "diverged": diverged,
                        "stopped_step": steps[-1]}}


def test_curve_reaches_the_first_step_at_or_past_the_level() -> None:
    assert observe(_reaches(), _record([0.1, 0.9, 0.95, 0.97])) == (20.0, True)  # equal counts
    assert observe(_reaches(), _record([0.1, 0.96, 0.9, 0.99])) == (10.0, True)  # the first
    assert observe(_reaches(), _record([0.97, 0.1])) == (0.0, True)
    below = _reaches(direction="below", level=0.2)
    assert observe(below, _record([0.9, 0.5, 0.2, 0.1])) == (20.0, True)


def test_curve_reaches_skips_null_and_nan_values() -> None:
    """A null (a non-finite value as the record stores it) or a NaN is no value: neither
    reaching the level nor ending the search."""
    assert observe(_reaches(), _record([0.1, None, math.nan, 0.99])) == (30.0, True)
    assert observe(_reaches(direction="below", level=0.5),
                   _record([None, math.nan, 0.9])) == (100.0, False)


def test_curve_reaches_is_censored_when_never_reached() -> None:
    """At the budget; at the last recorded step of a record early stopping froze (nothing was
    measured after it); a diverged seed at the budget, or left out under on_diverged
    exclude."""
    assert observe(_reaches(), _record([0.1, 0.5, 0.94], budget=500)) == (500.0, False)
    assert observe(_reaches(), _record([0.1, 0.5, 0.94], budget=500, done=True)) == (20.0, False)
    diverged = {"result": _record([0.1, 0.5], budget=500, diverged=True)}
    assert seed_value(_reaches(), diverged) == (500.0, False)
    assert seed_value(_reaches(on_diverged="exclude"), diverged) == DIVERGED
    assert seed_value(_reaches(), {"result": _record([0.1, 0.99], diverged=True)}) == (10.0, True)


@pytest.mark.parametrize("bad", [{"level": "0.9"}, {"level": True}, {"level": math.inf},
                                 {"direction": "up"}, {"curve": None}, {"threshold": 0.9}])
def test_bad_curve_reaches_fields_are_refused(bad: dict[str, Any]) -> None:
    with pytest.raises(pydantic.ValidationError):
        _reaches(**bad)


def _reached(**fields: Any) -> CurveReached:
    return CurveReached.model_validate({"name": "curve_reached", "curve": "parallelogram.rqi",
                                        "level": 0.95, **fields})


def test_curve_reached_is_one_when_the_level_is_reached_in_time() -> None:
    """1 at or past the level (equal counts) by the budget or by `by`; 0 when not; nulls and
    NaNs are no value; left out when early stopping froze the record before `by` unreached."""
    assert observe(_reached(), _record([0.1, 0.9, 0.95])) == (1.0, True)
    assert observe(_reached(), _record([0.1, None, math.nan, 0.94])) == (0.0, True)
    assert observe(_reached(by=10), _record([0.1, 0.5, 0.99])) == (0.0, True)  # too late
    assert observe(_reached(by=20), _record([0.1, 0.5, 0.99])) == (1.0, True)
    assert observe(_reached(direction="below", level=0.2), _record([0.9, 0.2])) == (1.0, True)
    assert observe(_reached(), _record([0.1, 0.5], budget=500, done=True)) is None
    assert observe(_reached(by=10), _record([0.1, 0.5], budget=500, done=True)) == (0.0, True)
    assert seed_value(_reached(), {"result": _record([0.1], diverged=True)}) == DIVERGED
    spec = _reached(by=300)
    assert spec.kind == "value" and spec.curves() == ["parallelogram.rqi"]
    assert spec.describe().startswith("1 when parallelogram.rqi is >= 0.95 at a recorded step "
                                      "by step 300, else 0")


def test_final_difference_is_taken_at_the_last_step_both_curves_have() -> None:
    """Acc^ against the measured accuracy: the last step where both are recorded and finite."""
    rec = {"curves": {"parallelogram.acc_test": {"steps": [0, 10, 20],
                                                 "values": [0.2, 0.9, None]},
                      "val_acc": {"steps": [0, 10, 20], "values": [0.1, 0.7, 0.8]}},
           "summary": {"budget": 20, "done": False, "diverged": False, "stopped_step": 20}}
    spec = FinalDifference.model_validate({"name": "final_difference",
                                           "curve": "parallelogram.acc_test",
                                           "minus": "val_acc"})
    got = observe(spec, rec)
    assert got is not None and got[0] == pytest.approx(0.2) and got[1]
    flipped = spec.model_copy(update={"curve": "val_acc", "minus": "parallelogram.acc_test"})
    assert observe(flipped, rec)[0] == pytest.approx(-0.2)  # type: ignore[index]
    assert observe(flipped.model_copy(update={"absolute": True}), rec)[0] == pytest.approx(0.2)  # type: ignore[index]
    rec["curves"]["val_acc"]["values"] = [None, math.nan, 0.8]
    assert observe(spec, rec) is None  # no step with both
    assert spec.curves() == ["parallelogram.acc_test", "val_acc"] and spec.kind == "value"
    with pytest.raises(pydantic.ValidationError, match="different curves"):
        FinalDifference.model_validate({"name": "final_difference", "curve": "val_acc",
                                        "minus": "val_acc"})


def test_curve_reaches_words() -> None:
    spec = _reaches()
    assert spec.kind == "time" and spec.on_diverged == "budget"
    assert spec.curves() == ["parallelogram.rqi"]
    assert spec.label() == ("curve_reaches(curve=parallelogram.rqi, level=0.95, "
                            "direction=above)")
    assert "parallelogram.rqi is first >= 0.95" in spec.describe()


# ---------------------------------------------------------------- in a claim

CLAIM = """\
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
    path = tmp_path / "claim.yaml"
    path.write_text(CLAIM, encoding="utf-8")
    exp = load_claim(path).resolved["quick"]["c10"]
    records = train_seeds(exp, [0, 1])
    metric = CurveReaches.model_validate({"name": "curve_reaches",
                                          "curve": "parallelogram.rqi", "level": 0.5})
    shape = DataShape(p=6, vocab=8, n_classes=11)
    start = probe("parallelogram")(BatchedModel(exp.model, shape, [0, 1]), exp.probes[0],
                                    _context(exp, [0, 1]))
    for s, rec in enumerate(records):
        for curve in CURVES:
            assert rec["curves"][curve]["steps"] == [0, 3, 6]
            first = rec["curves"][curve]["values"][0]
            want = start[curve][s].item()
            assert first == want or (first is None and math.isnan(want))
        rqi = rec["curves"]["parallelogram.rqi"]
        expected = next(((float(t), True) for t, v in zip(rqi["steps"], rqi["values"],
                                                          strict=True) if v >= 0.5), (6.0, False))
        assert observe(metric, rec) == expected


def _context(exp: Any, seeds: list[int]) -> ProbeContext:
    data = [build_dataset(exp.task, s) for s in seeds]
    return ProbeContext(tuple(torch.as_tensor(np.stack([getattr(d, k)[d.train_idx]
                                                        for d in data]))
                              for k in ("a", "b", "y")))


@pytest.mark.parametrize(("old", "new", "words"), [
    ("model: {kind: toy_sum, hidden: 8, emb_dim: 1}", "model: {kind: scalar_mlp, hidden: 8}",
     "base: parallelogram needs the token embedding matrix (E), which model 'scalar_mlp' does "
     "not have"),
    ("distance: mean_sq}", "distance: mean_sq, chaining: false}",
     "base.probes[0].chaining: unknown key 'chaining'"),
    ("distance: mean_sq}", "distance: cosine}", "base.probes[0].distance: "),
    ("delta: 0.2", "delta: -0.1", "base.probes[0].delta: "),
    ("modular: false", "modular: true",
     "base: parallelogram: needs paper 2's sum task (op add, modular false), got op 'add', "
     "modular true"),
    ("p: 6,", "p: 2,", "base: parallelogram: needs 3 <= p <= 64, got p = 2"),
    ("level: 0.5}", "level: 0.5, above: true}", "metric.above: unknown key 'above'"),
    ("curve: parallelogram.rqi", "curve: parallelogram.RQI",
     "metric.curve: unknown curve 'parallelogram.RQI' (did you mean 'parallelogram.rqi'?)"),
])
def test_a_bad_claim_is_refused_naming_the_field(tmp_path: Path, old: str, new: str,
                                                 words: str) -> None:
    assert CLAIM.count(old) == 1
    found = problems(tmp_path, CLAIM.replace(old, new))
    assert any(words in p for p in found), found
