"""Paper 2's Proposition 1 as a probe (C1): the distances between the embedding sums of two
training samples with different sums, against a brute-force loop over the samples and hand
values on a number line; the probe per seed on each seed's own split; a claim that trains it."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
import torch

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
