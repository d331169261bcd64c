"""The token_frequency probe (paper 1's update frequencies f_E, f_W): against a hand-worked
split, an explicit enumeration of every minibatch, and scipy's hypergeometric law."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from scipy.stats import hypergeom

from grokverify.claim.experiment import ExperimentSpec
from grokverify.claim.models import EmbedMLPSpec
from grokverify.claim.probes import TokenFrequencySpec
from grokverify.claim.tasks import TaskSpec
from grokverify.engine.batched import BatchedModel
from grokverify.engine.loop import train_seeds
from grokverify.engine.models import DataShape
from grokverify.engine.probes import ProbeContext, token_frequency_of
from grokverify.engine.tasks import build_dataset
from grokverify.kinds import PROBES

probe = PROBES.implementation  # a probe's function by name

SPEC = TokenFrequencySpec(name="token_frequency", every=1)


def _probe(a: list[list[int]], b: list[list[int]], p: int, batch: int) -> dict[str, torch.Tensor]:
    model = BatchedModel(EmbedMLPSpec(kind="embed_mlp", d=4, hidden=6),
                         DataShape(p=p, vocab=p + 2, n_classes=p), list(range(len(a))))
    at, bt = torch.tensor(a), torch.tensor(b)
    return probe("token_frequency")(model, SPEC, ProbeContext((at, bt, at), batch=batch))


def test_a_hand_worked_split() -> None:
    """Rows (0,1), (1,1), (2,2), (1,3), p = 5, batches of 2 of the 4 rows (6 batches): tokens 0,
    2 and 3 are in one row each, so 3 of the 6 batches hold them (1/2); token 1 is in three
    rows, so every batch holds it (1); token 4 never occurs and is left out. f_E = 2.5 / 4."""
    got = _probe([[0, 1, 2, 1]], [[1, 1, 2, 3]], p=5, batch=2)
    assert got["token_frequency.E"].tolist() == pytest.approx([0.625], rel=1e-14)
    assert got["token_frequency.W"].tolist() == [1.0]
    assert got["token_frequency_ratio"].tolist() == pytest.approx([1.6], rel=1e-14)


def _enumerated(a: np.ndarray, b: np.ndarray, batch: int) -> float:
    """Every batch of `batch` distinct rows, each equally likely: the share holding each token
    present, averaged over the tokens."""
    tokens = sorted(set(a.tolist()) | set(b.tolist()))
    batches = list(itertools.combinations(range(len(a)), batch))
    share = [sum(any(t in (a[r], b[r]) for r in rows) for rows in batches) / len(batches)
             for t in tokens]
    return float(np.mean(share))


@pytest.mark.parametrize("batch", [1, 3, 5, 9])
def test_equals_an_explicit_enumeration_of_the_batches(batch: int) -> None:
    rng = np.random.default_rng(7)
    a, b = rng.integers(0, 6, size=(2, 2, 9))  # two seeds, 9 rows each, p = 6
    got = _probe(a.tolist(), b.tolist(), p=6, batch=batch)["token_frequency.E"]
    want = [_enumerated(a[s], b[s], batch) for s in range(2)]
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
    if batch == 9:  # full batch: every token present is in every update
        assert got.tolist() == [1.0, 1.0]


@pytest.mark.parametrize(("p", "train_frac", "batch"), [(31, 0.6, 128), (31, 0.1, 16),
                                                        (97, 0.3, 512), (97, 0.3, 64)])
def test_equals_scipy_hypergeom_on_real_splits(p: int, train_frac: float, batch: int) -> None:
    """Each seed's own split; the batched value of a seed equals its value alone."""
    task = TaskSpec.model_validate({"op": "add", "p": p, "train_frac": train_frac,
                                    "test_frac": 0.2})
    seeds = [0, 1, 2]
    rows = [build_dataset(task, s) for s in seeds]
    a = np.stack([d.a[d.train_idx] for d in rows])
    b = np.stack([d.b[d.train_idx] for d in rows])
    got = token_frequency_of(torch.as_tensor(a), torch.as_tensor(b), p, batch).numpy()
    for s in range(len(seeds)):
        n = a.shape[1]
        counts = [int(np.sum((a[s] == t) | (b[s] == t))) for t in range(p)]
        want = np.mean([1 - hypergeom(n, k, min(batch, n)).pmf(0) for k in counts if k > 0])
        np.testing.assert_allclose(got[s], want, rtol=1e-10)
        alone = token_frequency_of(torch.as_tensor(a[s:s + 1]), torch.as_tensor(b[s:s + 1]),
                                   p, batch)
        assert alone.item() == got[s]


def test_without_the_batch_size_it_refuses_rather_than_guess() -> None:
    model = BatchedModel(EmbedMLPSpec(kind="embed_mlp", d=4, hidden=6),
                         DataShape(p=5, vocab=7, n_classes=5), [0, 1])
    rows = torch.zeros(2, 3, dtype=torch.long)
    with pytest.raises(ValueError, match="batch size"):
        probe("token_frequency")(model, SPEC, ProbeContext((rows, rows, rows)))


def _exp(model: dict) -> ExperimentSpec:
    return ExperimentSpec.model_validate({
        "task": {"op": "add", "p": 7, "train_frac": 0.6, "test_frac": 0.3}, "model": model,
        "optimizer": {"name": "adamw", "lr": 0.01},
        "training": {"steps": 20, "eval_interval": 10, "batch_size": 8, "early_stop": False},
        "probes": [{"name": "token_frequency", "every": 10}]})


def test_a_model_without_an_embedding_is_refused_at_load() -> None:
    with pytest.raises(ValueError, match="needs the token embedding matrix"):
        _exp({"kind": "scalar_mlp", "hidden": 8})


def test_recorded_in_training_as_a_flat_curve_of_the_split() -> None:
    exp = _exp({"kind": "embed_mlp", "d": 8, "hidden": 12})
    for seed, rec in zip([0, 1], train_seeds(exp, [0, 1]), strict=True):
        data = build_dataset(exp.task, seed)
        a, b = (torch.as_tensor(v[data.train_idx])[None] for v in (data.a, data.b))
        want = token_frequency_of(a, b, 7, 8).item()
        curve = rec["curves"]["token_frequency.E"]
        assert curve["steps"] == [0, 10, 20]
        assert curve["values"] == [want] * 3
        assert rec["curves"]["token_frequency_ratio"]["values"] == [1 / want] * 3
