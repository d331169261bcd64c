"""Paper 2's S3 toy (App. H): the task composes the six permutations of three things, and the
model multiplies two learnable 3 × 3 matrix embeddings by hand before its decoder. Checked
against the group's own rules and a hand computation of the forward pass."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from pydantic import ValidationError

from grokverify.claim.models import ToyMatrixSpec
from grokverify.claim.tasks import TaskSpec
from grokverify.engine.models import DataShape
from grokverify.engine.tasks import S3, S3_TABLE, build_dataset
from grokverify.kinds import MODELS


def compose(f: tuple[int, ...], g: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(f[g[i]] for i in range(3))


def test_the_table_is_the_symmetric_group() -> None:
    """Every product by hand, identity 0, each element's inverse in its row, associativity,
    and not commutative (S3 is the smallest non-abelian group)."""
    for a, b in itertools.product(range(6), repeat=2):
        assert S3[S3_TABLE[a, b]] == compose(S3[a], S3[b])
    assert (S3_TABLE[0] == np.arange(6)).all() and (S3_TABLE[:, 0] == np.arange(6)).all()
    assert all((S3_TABLE[a] == 0).sum() == 1 for a in range(6))
    for a, b, c in itertools.product(range(6), repeat=3):
        assert S3_TABLE[S3_TABLE[a, b], c] == S3_TABLE[a, S3_TABLE[b, c]]
    assert (S3_TABLE != S3_TABLE.T).any()


def test_the_task_keeps_all_36_ordered_pairs_and_labels_them_by_the_product() -> None:
    task = TaskSpec.model_validate({"op": "s3", "p": 6, "train_frac": 0.5})
    data = build_dataset(task, 0)
    assert len(data.a) == 36 and data.n_classes == 6
    assert (data.y == S3_TABLE[data.a, data.b]).all()
    assert len(data.train_idx) == 18 and len(data.val_idx) == 18


@pytest.mark.parametrize("bad", [{"p": 5}, {"unordered": True}])
def test_s3_needs_six_elements_in_order(bad: dict[str, object]) -> None:
    with pytest.raises(ValidationError, match="op 's3'"):
        TaskSpec.model_validate({"op": "s3", "p": 6, "train_frac": 0.5, **bad})


def test_the_forward_pass_multiplies_the_two_matrices_before_decoding() -> None:
    spec = ToyMatrixSpec(kind="toy_matrix", hidden=5, output="regression", target_dim=4)
    model = MODELS.implementation("toy_matrix").for_seed(spec, DataShape(p=6, vocab=8,
                                                                         n_classes=6), 3)
    model = model.double()
    a, b = torch.tensor([1, 4, 5]), torch.tensor([2, 2, 0])
    e = model.embed.weight.detach().numpy().reshape(6, 3, 3)
    x = np.stack([(e[i] @ e[j]).reshape(-1) for i, j in zip(a.tolist(), b.tolist(),
                                                             strict=True)])
    for layer in (model.fc1, model.fc2):
        x = np.tanh(x @ layer.weight.detach().numpy().T + layer.bias.detach().numpy())
    want = x @ model.fc3.weight.detach().numpy().T + model.fc3.bias.detach().numpy()
    np.testing.assert_allclose(model(a, b).detach().numpy(), want, rtol=1e-12)
    assert model.embed.weight.shape == (6, 9)
    assert float(model.embed.weight.detach().abs().max()) <= 0.5  # U[-s/2, s/2], s = 1
