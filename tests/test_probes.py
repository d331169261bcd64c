"""Probes: each against an independent reference, recorded at the declared steps, and never
changing what training produces."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from grokverify.claim.experiment import ExperimentSpec
from grokverify.claim.models import EmbedMLPSpec, ToySumSpec
from grokverify.claim.probes import GradNormRatioSpec, SigmaMaxSpec
from grokverify.engine.batched import BatchedModel, plain_copy
from grokverify.engine.loop import SeedTrainer, train_seeds
from grokverify.engine.models import DataShape, mean_loss_of
from grokverify.kinds import PROBES

probe = PROBES.implementation  # a probe's function by name

MLP_SPEC = EmbedMLPSpec(kind="embed_mlp", d=8, hidden=12)
MLP_SHAPE = DataShape(p=7, vocab=9, n_classes=7)
TASK = {"op": "add", "p": 7, "train_frac": 0.6, "test_frac": 0.3}
TRAIN = {"steps": 30, "eval_interval": 10, "batch_size": 8, "early_stop": False}


def _exp(probes: list[dict], interventions: list[dict] | None = None,
         training: dict | None = None) -> ExperimentSpec:
    return ExperimentSpec.model_validate({
        "task": TASK, "model": {"kind": "embed_mlp", "d": 8, "hidden": 12},
        "optimizer": {"name": "adamw", "lr": 0.01, "weight_decay": 0.1},
        "training": training or TRAIN, "probes": probes, "interventions": interventions or []})


@pytest.mark.parametrize(("spec", "shape"), [
    (MLP_SPEC, MLP_SHAPE),
    (ToySumSpec(kind="toy_sum", hidden=9, emb_dim=3), DataShape(p=6, vocab=8, n_classes=11))])
def test_sigma_max_equals_numpy_svd(spec, shape) -> None:
    model = BatchedModel(spec, shape, [0, 1, 2])
    got = probe("sigma_max")(model, SigmaMaxSpec(name="sigma_max", every=1))
    for role in ("E", "W"):
        matrices = model.param(model.role(role)).detach().double().numpy()
        want = np.linalg.svd(matrices, compute_uv=False)[:, 0]
        np.testing.assert_allclose(got[f"sigma_max.{role}"].numpy(), want, rtol=1e-12)
    assert set(got) == {"sigma_max.E", "sigma_max.W"}


def test_sigma_max_of_a_diverged_seed_is_nan_not_an_error() -> None:
    model = BatchedModel(MLP_SPEC, MLP_SHAPE, [0, 1])
    with torch.no_grad():
        model.param("fc1.weight")[1].fill_(float("inf"))
    got = probe("sigma_max")(model, SigmaMaxSpec(name="sigma_max", every=1, of=["W"]))
    assert math.isfinite(got["sigma_max.W"][0]) and math.isnan(got["sigma_max.W"][1])


def test_grad_norm_ratio_equals_autograd_on_the_plain_model() -> None:
    """The batched step's gradients, seed by seed, against autograd of each seed's plain module
    on the same minibatch (float64)."""
    model = BatchedModel(MLP_SPEC, MLP_SHAPE, [3, 4, 5], dtype=torch.float64)
    gen = torch.Generator().manual_seed(0)
    a, b = torch.randint(0, 7, (2, 3, 10), generator=gen)
    y = (a + b) % 7
    model.loss_and_grads(a, b, y, torch.ones(3, dtype=torch.float64))
    got = probe("grad_norm_ratio")(model, GradNormRatioSpec(name="grad_norm_ratio", every=1))
    for i in range(3):
        plain = plain_copy(model, i)
        mean_loss_of(plain, plain(a[i], b[i]), y[i]).backward()
        g_e = plain.embed.weight.grad.norm().item()
        g_w = plain.fc1.weight.grad.norm().item()
        assert got["grad_norm.E"][i].item() == pytest.approx(g_e, rel=1e-12)
        assert got["grad_norm.W"][i].item() == pytest.approx(g_w, rel=1e-12)
        assert got["grad_norm_ratio"][i].item() == pytest.approx(g_e / g_w, rel=1e-12)


def test_probes_are_recorded_at_their_steps_and_change_nothing_else() -> None:
    """A parameter probe at step t measures the parameters after t updates (checked against a
    trainer stopped there), a gradient probe the gradient taken from that state; the budget is
    included when it is a multiple; every other part of the record equals a run without
    probes, bit for bit."""
    probes = [{"name": "sigma_max", "every": 4}, {"name": "grad_norm_ratio", "every": 10}]
    with_probes = train_seeds(_exp(probes), [0, 1])
    without = train_seeds(_exp([]), [0, 1])
    for rec, plain in zip(with_probes, without, strict=True):
        assert rec["curves"]["sigma_max.E"]["steps"] == [0, 4, 8, 12, 16, 20, 24, 28]
        assert rec["curves"]["grad_norm.W"]["steps"] == [0, 10, 20]  # none at the budget
        assert {k: v for k, v in rec["curves"].items() if "." not in k and "ratio" not in k} \
            == plain["curves"]
        assert rec["summary"] == plain["summary"]
    with SeedTrainer(_exp([]), [0, 1], workers=1) as trainer:
        trainer.train(12)
        direct = probe("sigma_max")(trainer.shards[0].model,
                                     SigmaMaxSpec(name="sigma_max", every=1))
    for i, rec in enumerate(with_probes):
        curve = rec["curves"]["sigma_max.W"]
        assert curve["values"][curve["steps"].index(12)] == direct["sigma_max.W"][i].item()


def test_a_frozen_embedding_has_no_gradient_norm() -> None:
    recs = train_seeds(_exp([{"name": "grad_norm_ratio", "every": 10}],
                            [{"name": "freeze_embeddings", "from_step": 0}]), [0])
    curves = recs[0]["curves"]
    assert curves["grad_norm.E"]["values"] == [None, None, None]
    assert all(v > 0 for v in curves["grad_norm.W"]["values"])
