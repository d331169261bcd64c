"""The `pca` probe (paper 2's PCA of the token embedding): top-2 variance share and effective
dimension against numpy's eigendecomposition of the covariance, and the circular-order test on
hand-built embeddings (a Fourier circle of any step g, either way round, passes; a shuffled one,
a line and a non-finite E do not)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from grokverify.claim.experiment import ExperimentSpec
from grokverify.claim.probes import PCASpec
from grokverify.claim.tasks import TaskSpec
from grokverify.engine.batched import BatchedModel
from grokverify.engine.models import DataShape
from grokverify.engine.probes import pca_of
from grokverify.kinds import PROBES


def _numpy_pca(e: np.ndarray) -> tuple[float, float]:
    """(top2_share, eff_dim) from the eigenvalues of the centred rows' covariance."""
    x = e - e.mean(axis=0)
    lam = np.clip(np.linalg.eigh(x.T @ x / (len(x) - 1))[0][::-1], 0, None)
    q = lam / lam.sum()
    nz = q[q > 0]
    return float(q[:2].sum()), float(np.exp(-(nz * np.log(nz)).sum()))


def _circle(p: int, g: int, d: int = 6, noise: float = 0.0, seed: int = 0) -> np.ndarray:
    """Token k at angle 2π g k / p in a random plane of R^d, shifted, with optional noise."""
    rng = np.random.default_rng(seed)
    basis = np.linalg.qr(rng.normal(size=(d, 2)))[0]
    k = np.arange(p)
    ring = np.stack([np.cos(2 * np.pi * g * k / p), np.sin(2 * np.pi * g * k / p)], axis=1)
    return ring @ basis.T * 3.0 + rng.normal(size=d) + noise * rng.normal(size=(p, d))


def test_share_and_effective_dimension_equal_numpy() -> None:
    rng = np.random.default_rng(1)
    e = np.stack([rng.normal(size=(13, 9)) * rng.uniform(0.1, 3, size=9) for _ in range(4)])
    got = pca_of(torch.as_tensor(e), 13)
    for s in range(4):
        share, eff = _numpy_pca(e[s])
        assert got["pca.top2_share"][s].item() == pytest.approx(share, rel=1e-10)
        assert got["pca.eff_dim"][s].item() == pytest.approx(eff, rel=1e-10)


def test_effective_dimension_of_known_spectra() -> None:
    """k equal orthogonal directions: exp(ln k) = k; points on a line: 1."""
    p = 8
    equal = np.zeros((p, 5))
    equal[:4, :4] = np.eye(4)
    equal[4:, :4] = -np.eye(4)  # ±e_i: mean 0, variance 2 along each of 4 axes
    line = np.outer(np.arange(p), [1.0, 2.0, 0.0, 0.0, 0.0])
    got = pca_of(torch.as_tensor(np.stack([equal, line])), p)
    np.testing.assert_allclose(got["pca.eff_dim"].numpy(), [4.0, 1.0], rtol=1e-12)
    np.testing.assert_allclose(got["pca.top2_share"].numpy(), [0.5, 1.0], rtol=1e-12)
    assert got["pca.circular"][1].item() == 0.0  # a line spans no plane


@pytest.mark.parametrize(("p", "g"), [(11, 1), (11, 3), (11, 10), (53, 17), (12, 5)])
def test_a_fourier_circle_of_any_step_is_circular(p: int, g: int) -> None:
    """A circle visited k, k + g, k + 2g, ... (g coprime to p; g = p − 1 is the circle of step
    1 traversed the other way), in a random plane of R^6, shifted and slightly noisy."""
    e = np.stack([_circle(p, g), _circle(p, g, noise=0.01, seed=2)])
    got = pca_of(torch.as_tensor(e), p)
    assert got["pca.circular"].tolist() == [1.0, 1.0]
    assert got["pca.top2_share"][0].item() == pytest.approx(1.0)


def test_a_shuffled_or_broken_circle_is_not_circular() -> None:
    p, g = 13, 4
    e = _circle(p, g)
    rng = np.random.default_rng(3)
    shuffled = e[rng.permutation(p)]
    swapped = e.copy()
    swapped[[2, 5]] = swapped[[5, 2]]  # one pair of tokens out of place
    got = pca_of(torch.as_tensor(np.stack([shuffled, swapped])), p)
    assert got["pca.circular"].tolist() == [0.0, 0.0]


def test_no_value_for_a_non_finite_or_constant_embedding_and_only_number_rows_count() -> None:
    p = 7
    good = _circle(p, 2, d=4)
    nan = good.copy()
    nan[0, 0] = np.nan
    const = np.ones((p, 4))
    extra = np.concatenate([good, 100 * np.ones((2, 4))])  # op and "=" rows after the numbers
    got = pca_of(torch.as_tensor(np.stack([nan, const])), p)
    for curve in got.values():
        assert torch.isnan(curve).all()
    with_extra = pca_of(torch.as_tensor(extra[None]), p)
    assert with_extra["pca.circular"].item() == 1.0


def test_the_registered_probe_reads_the_embedding_role() -> None:
    spec = PCASpec(name="pca", every=1)
    assert spec.curves() == ["pca.top2_share", "pca.eff_dim", "pca.circular"]
    assert spec.misfit(TaskSpec(op="add", p=2, train_frac=0.5)) is not None
    model = BatchedModel(ExperimentSpec.model_validate({
        "task": {"op": "add", "p": 7, "train_frac": 0.5},
        "model": {"kind": "transformer", "d": 8, "layers": 1, "heads": 2, "mlp": 8},
        "optimizer": {"name": "adamw", "lr": 0.01}, "training": {"steps": 1,
                                                                 "eval_interval": 1},
        "probes": [{"name": "pca", "every": 1}]}).model, DataShape(7, 9, 7), [0, 1])
    got = PROBES.implementation("pca")(model, spec)  # type: ignore[call-arg]
    want = pca_of(model.param("embed.weight").detach(), 7)
    for k in spec.curves():
        torch.testing.assert_close(got[k], want[k])
    assert math.isfinite(got["pca.eff_dim"][0].item())
