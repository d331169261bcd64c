"""Interventions: each does what its spec says, per seed, and nothing else."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from reference import train_plain

from grokverify.claim.experiment import ExperimentSpec
from grokverify.engine.batched import BatchedModel
from grokverify.engine.loop import SeedTrainer, train_seeds
from grokverify.engine.probes import sigma_max_of

TASK = {"op": "add", "p": 7, "train_frac": 0.6, "test_frac": 0.3}
MLP = {"kind": "embed_mlp", "d": 8, "hidden": 12}
TRAIN = {"steps": 40, "eval_interval": 10, "batch_size": 8, "early_stop": False}


def _exp(interventions: list[dict], model: dict | None = None,
         training: dict | None = None) -> ExperimentSpec:
    optimizer = {"name": "adamw", "lr": 0.02, "weight_decay": 0.1}
    if model is None:
        optimizer["emb_lr_mult"] = 3
    return ExperimentSpec.model_validate({
        "task": TASK, "model": model or MLP, "training": training or TRAIN,
        "optimizer": optimizer, "interventions": interventions})


def _embedding(trainer: SeedTrainer) -> torch.Tensor:
    return torch.cat([s.model.param("embed.weight")[:s.n_real].detach().clone()
                      for s in trainer.shards])


def test_frozen_from_the_start_trains_like_a_plain_model_with_a_frozen_embedding() -> None:
    exp = _exp([{"name": "freeze_embeddings", "from_step": 0}])
    initial = BatchedModel(exp.model, _shape(), [0, 1]).param("embed.weight").detach()
    with SeedTrainer(exp, [0, 1], workers=1) as trainer:
        trainer.train(15)
        assert torch.equal(_embedding(trainer), initial)  # never moved, weight decay included
    engine = train_seeds(exp, [0, 1], dtype=torch.float64)
    for seed, rec in enumerate(engine):
        plain = train_plain(exp, seed, dtype=torch.float64, frozen_embedding=True)
        np.testing.assert_allclose(rec["curves"]["train_loss"]["values"], plain.train_loss,
                                   rtol=1e-9)
        assert rec["events"] == {"freeze_embeddings": 0}


def _shape():
    from grokverify.engine.models import DataShape

    return DataShape(p=7, vocab=9, n_classes=7)


def test_frozen_from_a_step_keeps_the_embedding_of_that_step() -> None:
    exp = _exp([{"name": "freeze_embeddings", "from_step": 12}])
    free = _exp([])
    with SeedTrainer(exp, [0, 1], workers=1) as trainer, \
            SeedTrainer(free, [0, 1], workers=1) as reference:
        trainer.train(12)
        reference.train(12)
        at_12 = _embedding(trainer)
        assert torch.equal(at_12, _embedding(reference))  # the same run until the freeze
        trainer.train(20)
        assert torch.equal(_embedding(trainer), at_12)
        w = trainer.shards[0].model.param("fc1.weight").detach().clone()
        trainer.train(1)
        assert not torch.equal(trainer.shards[0].model.param("fc1.weight"), w)  # W trains on


def test_frozen_by_a_condition_freezes_each_seed_at_its_own_evaluation() -> None:
    """Each seed's E is kept from the first evaluation at which its train accuracy reached τ;
    the event says when; seeds that have not reached it train their E on."""
    tau = 0.6
    exp = _exp([{"name": "freeze_embeddings", "when": {"curve": "train_acc", "at_least": tau}}],
               training={**TRAIN, "steps": 60})
    with SeedTrainer(exp, [1, 0, 3], workers=1) as trainer:  # seed 0 stays below τ
        snapshots = {}
        trainer.record()
        for step in range(10, 61, 10):
            trainer.train(10)
            trainer.record()
            snapshots[step] = _embedding(trainer)
        records = trainer.results()
    frozen = 0
    for i, rec in enumerate(records):
        acc = rec["curves"]["train_acc"]
        reached = [s for s, v in zip(acc["steps"], acc["values"], strict=True) if v >= tau]
        at = rec["events"].get("freeze_embeddings")
        assert at == (reached[0] if reached else None)
        for step in range(10, 61, 10):
            if at is not None and step > at:  # held at its value of the freezing evaluation
                assert torch.equal(snapshots[step][i], snapshots[max(at, 10)][i]), (i, step)
            elif step > 10:  # still training
                assert not torch.equal(snapshots[step][i], snapshots[step - 10][i]), (i, step)
        frozen += at is not None and at < 60
    assert 0 < frozen < 3, "the test needs a seed that freezes mid-run and one that does not"


def test_rescale_embedding_by_a_factor_and_to_a_sigma_max() -> None:
    base = BatchedModel(_exp([]).model, _shape(), [0, 1, 2])
    e0, w0 = base.param("embed.weight").detach(), base.param("fc1.weight").detach()
    cases = {
        "factor": ({"name": "rescale_embedding", "factor": 0.25}, None),
        "number": ({"name": "rescale_embedding", "sigma_max": 3.0}, torch.full((3,), 3.0)),
        "W": ({"name": "rescale_embedding", "sigma_max": "W"}, sigma_max_of(w0).float()),
    }
    for name, (spec, target) in cases.items():
        with SeedTrainer(_exp([spec]), [0, 1, 2], workers=1) as trainer:
            e = _embedding(trainer)
            events = [r["events"] for r in trainer.results()]
        assert events == [{"rescale_embedding": 0}] * 3
        if target is None:
            assert torch.equal(e, e0 * torch.tensor(0.25))
        else:
            torch.testing.assert_close(sigma_max_of(e).float(), target, rtol=1e-6, atol=0,
                                       msg=name)
            ratio = e / e0  # a rescaling: one factor per seed
            assert torch.allclose(ratio, ratio[:, :1, :1], rtol=1e-5), name


@pytest.mark.parametrize("intervention", [{"name": "freeze_embeddings", "from_step": 3},
                                          {"name": "rescale_embedding", "factor": 2.0}])
def test_an_intervention_on_the_embedding_is_refused_for_a_model_without_one(
        intervention: dict) -> None:
    with pytest.raises(ValueError, match="needs the token embedding matrix"):
        _exp([intervention], model={"kind": "scalar_mlp", "hidden": 8})
