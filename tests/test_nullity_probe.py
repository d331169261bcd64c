"""The parallelogram_nullity probe (paper 2's n0 of each seed's training set, and n0 == 2): per
seed against the exact `parallelogram.nullity` and against a brute-force rank of A(D) built by
enumeration, on each seed's own split; read at step 0 of a zero-step run; refused where paper
2's algebra does not apply; and the shipped claim validates."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
import torch

from grokverify.analysis import parallelogram as P
from grokverify.claim.load import load_claim
from grokverify.claim.models import ToySumSpec
from grokverify.claim.probes import ParallelogramNullitySpec, SampleFractionSpec
from grokverify.claim.tasks import TaskSpec
from grokverify.claim.yamlio import SpecError
from grokverify.cli import main
from grokverify.engine.batched import BatchedModel
from grokverify.engine.loop import train_seeds
from grokverify.engine.models import DataShape
from grokverify.engine.probes import ProbeContext
from grokverify.engine.tasks import build_dataset
from grokverify.kinds import PROBES

CLAIMS = Path(__file__).resolve().parent.parent / "claims"
CURVES = ["parallelogram_nullity.n0", "parallelogram_nullity.is2"]


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


def _task(p: int, frac: float, unordered: bool = True) -> TaskSpec:
    return TaskSpec.model_validate({"op": "add", "p": p, "modular": False,
                                    "unordered": unordered, "train_frac": frac})


def _probe(task: TaskSpec, seeds: list[int]) -> tuple[dict[str, np.ndarray], list[set]]:
    data = [build_dataset(task, s) for s in seeds]
    model = BatchedModel(ToySumSpec(kind="toy_sum", hidden=4, emb_dim=1),
                         DataShape(p=task.p, vocab=task.p + 2, n_classes=data[0].n_classes),
                         seeds)
    rows = tuple(torch.as_tensor(np.stack([getattr(d, k)[d.train_idx] for d in data]))
                 for k in ("a", "b", "y"))
    spec = ParallelogramNullitySpec(name="parallelogram_nullity", every=1)
    got = PROBES.implementation("parallelogram_nullity")(model, spec, ProbeContext(rows))
    assert sorted(got) == sorted(spec.curves()) == sorted(CURVES)
    fraction = SampleFractionSpec(name="sample_fraction", every=1)
    got.update(PROBES.implementation("sample_fraction")(model, fraction, ProbeContext(rows)))
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
    got, samples = _probe(_task(p, frac, unordered), seeds)
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
    got, _ = _probe(_task(10, 0.4), list(range(40)))
    n0 = got["parallelogram_nullity.n0"]
    assert (n0 >= 2).all() and (n0 == 2).any() and (n0 > 2).any()
    np.testing.assert_array_equal(got["parallelogram_nullity.is2"], (n0 == 2).astype(float))


CLAIM = """\
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
    path = tmp_path / "claim.yaml"
    path.write_text(CLAIM, encoding="utf-8")
    exp = load_claim(path).resolved["quick"]["f0.5"]
    seeds = [0, 1, 2, 3]
    records = train_seeds(exp, seeds)
    got, samples = _probe(exp.task, seeds)
    for s, rec in enumerate(records):
        for curve in CURVES:
            assert rec["curves"][curve]["steps"] == [0]
            assert rec["curves"][curve]["values"] == [got[curve][s]]
        assert rec["curves"]["parallelogram_nullity.n0"]["values"][0] == brute_nullity(
            10, samples[s])


@pytest.mark.parametrize(("old", "new", "words"), [
    ("modular: false", "modular: true",
     "base: parallelogram_nullity: needs paper 2's sum task (op add, modular false), got op "
     "'add', modular true"),
    ("op: add", "op: mul", "parallelogram_nullity: needs paper 2's sum task"),
    ("p: 10,", "p: 2,", "base: parallelogram_nullity: needs 3 <= p <= 64, got p = 2"),
    ("every: 1}", "every: 1, delta: 0.1}", "base.probes[0].delta: unknown key 'delta'"),
    ("curve: parallelogram_nullity.is2", "curve: parallelogram_nullity.is_2",
     "metric.curve: unknown curve 'parallelogram_nullity.is_2' (did you mean "
     "'parallelogram_nullity.is2'?)"),
])
def test_a_bad_claim_is_refused_naming_the_field(tmp_path: Path, old: str, new: str,
                                                 words: str) -> None:
    assert CLAIM.count(old) == 1
    path = tmp_path / "claim.yaml"
    path.write_text(CLAIM.replace(old, new), encoding="utf-8")
    with pytest.raises(SpecError) as info:
        load_claim(path)
    found = [f"{p.path}: {p.message}" for p in info.value.problems]
    assert any(words in f for f in found), found


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
