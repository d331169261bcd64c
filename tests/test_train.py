"""The seed-batched training loop: batched seed i == seed i alone, bit for bit, in any chunk and on
any number of CPU threads; divergence is contained; thresholds are recorded where they are met."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from grokverify.claim.experiment import ExperimentSpec
from grokverify.engine import loop
from grokverify.engine.loop import SeedTrainer, train_seeds

TASK = {"op": "add", "p": 7, "train_frac": 0.6, "test_frac": 0.3}
TOY_TASK = {"op": "add", "p": 6, "modular": False, "unordered": True, "train_frac": 0.6}
TRAIN = {"steps": 40, "eval_interval": 10, "batch_size": 8, "early_stop": False}
MLP = {"kind": "embed_mlp", "d": 8, "hidden": 16}
PROBES = [{"name": "sigma_max", "every": 5}, {"name": "grad_norm_ratio", "every": 10}]

CASES = {
    "embed_mlp-adamw": (TASK, MLP, {"name": "adamw", "lr": 0.01, "weight_decay": 0.5,
                                    "emb_lr_mult": 10}, {}),
    "embed_mlp-adam": (TASK, MLP, {"name": "adam", "lr": 0.01, "weight_decay": 0.01}, {}),
    "embed_mlp-sgd": (TASK, MLP, {"name": "sgd", "lr": 0.1, "momentum": 0.9,
                                  "weight_decay": 1e-3, "emb_lr_mult": 10}, {}),
    "scalar_mlp-adamw": (TASK, {"kind": "scalar_mlp", "hidden": 16},
                         {"name": "adamw", "lr": 0.01}, {}),
    "toy-class": (TOY_TASK, {"kind": "toy_sum", "hidden": 20},
                  {"name": "adamw", "lr": 1e-3, "emb_lr_mult": 10, "emb_weight_decay": 0}, {}),
    "toy-regression": (TOY_TASK, {"kind": "toy_sum", "hidden": 20, "output": "regression"},
                       {"name": "adamw", "lr": 1e-3, "emb_lr_mult": 10}, {}),
    "toy-emb2-derived-probes": (TOY_TASK, {"kind": "toy_sum", "hidden": 20, "emb_dim": 2},
                                {"name": "adam", "lr": 1e-2}, {"probes": PROBES}),
    "embed_mlp-probes-interventions": (
        TASK, MLP, {"name": "adamw", "lr": 0.02, "weight_decay": 0.5},
        {"probes": PROBES, "interventions": [
            {"name": "rescale_embedding", "sigma_max": "W"},
            {"name": "freeze_embeddings", "when": {"curve": "train_acc", "at_least": 0.3}}]}),
}


def _exp(task: dict, model: dict, opt: dict, extra: dict | None = None,
         training: dict | None = None) -> ExperimentSpec:
    return ExperimentSpec.model_validate({"task": task, "model": model, "optimizer": opt,
                                          "training": training or TRAIN, **(extra or {})})


def _with_threads(n: int, fn):
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        return fn()
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize("case", sorted(CASES))
def test_batched_seed_is_bit_identical_to_seed_trained_alone(case: str, monkeypatch) -> None:
    """A seed's whole record (curves, probe curves, events, thresholds, summary) is the same to
    the last bit in any chunk of seeds, alone, split into any number of CPU shards, and in a
    repeated run."""
    monkeypatch.setattr(loop, "_EVAL_ROWS", 5)  # evaluation in several blocks of rows
    exp = _exp(*CASES[case])

    def records(seeds: list[int], threads: int) -> dict[int, dict]:
        return {r["seed"]: r for r in _with_threads(threads, lambda: train_seeds(exp, seeds))}

    batched = records([0, 1, 2, 3], 2)  # two shards, [0, 1] and [2, 3]
    assert batched == records([0, 1, 2, 3], 2)
    for seeds, threads in (([1], 2), ([2], 1), ([3, 0], 1), ([2, 1, 0], 3)):
        for seed, record in records(seeds, threads).items():
            assert record == batched[seed], (case, seeds, seed)
    assert batched[0]["curves"]["train_loss"] != batched[1]["curves"]["train_loss"]


def test_seeds_differ_and_training_learns() -> None:
    exp = _exp(*CASES["embed_mlp-adamw"][:3], training={"steps": 150, "eval_interval": 50,
                                                         "batch_size": 8, "early_stop": False})
    a, b = train_seeds(exp, [0, 1])
    loss_a, loss_b = a["curves"]["train_loss"]["values"], b["curves"]["train_loss"]["values"]
    assert loss_a[0] != loss_b[0]  # own initialisation per seed
    assert loss_a[-1] < loss_a[0] / 2  # it trains
    assert a["curves"]["train_acc"]["values"][-1] > 0.8


def test_thresholds_are_met_at_equality_and_early_stop_freezes_the_record() -> None:
    """τ is reached when accuracy equals it (counts, not float32 means: 19/20 reaches 0.95), at
    an evaluation step; early stop freezes the record at the step both are reached."""
    exp = _exp(TASK, MLP, {"name": "adamw", "lr": 0.01},
               training={"steps": 200, "eval_interval": 10, "train_threshold": 0.9,
                         "val_threshold": 0.0, "early_stop": True})
    (res,) = train_seeds(exp, [0])
    summary, train_acc = res["summary"], res["curves"]["train_acc"]
    assert summary["val_step"] == 0  # threshold 0 is met at the initial evaluation
    first = next(s for s, acc in zip(train_acc["steps"], train_acc["values"], strict=True)
                 if acc >= 0.9)
    assert summary["train_step"] == first and first % 10 == 0
    assert summary["done"] and summary["stopped_step"] == first < 200
    assert train_acc["steps"][-1] == first  # nothing recorded after the freeze
    n_train = round(0.6 * 49)  # p = 7: 49 pairs, 29 for training
    assert all(round(v * n_train) / n_train == v for v in train_acc["values"])  # exact counts


def test_an_evaluation_at_the_budget_when_it_is_not_a_multiple_of_the_interval() -> None:
    exp = _exp(TASK, MLP, {"name": "adamw", "lr": 0.01},
               training={"steps": 25, "eval_interval": 10, "early_stop": False})
    (res,) = train_seeds(exp, [0])
    assert res["curves"]["val_acc"]["steps"] == [0, 10, 20, 25]
    assert res["summary"]["stopped_step"] == 25


def test_diverging_seed_is_flagged_and_the_rest_of_its_batch_trains_on() -> None:
    """Poison seed 1's weights mid-run: it is recorded as diverged at that step, its curves and
    probe curves stop before it, and seeds 0 and 2 of the same batch end exactly where they end
    when trained without it."""
    exp = _exp(*CASES["embed_mlp-adamw"][:3], {"probes": [{"name": "sigma_max", "every": 5}]})

    def poison(trainer: SeedTrainer) -> None:
        with torch.no_grad():
            trainer.shards[0].model.param("fc1.weight")[1].fill_(float("inf"))

    with SeedTrainer(exp, [0, 1, 2], workers=1) as trainer:
        trainer.record()
        for step in (10, 20, 30, 40):
            if step == 30:
                poison(trainer)  # after 20 updates: the 21st step's loss is not finite
            trainer.train(10)
            trainer.record()
        results = trainer.results()
    bad = results[1]["summary"]
    assert bad["diverged"] and bad["diverged_step"] == 21 and bad["stopped_step"] == 30
    assert results[1]["curves"]["train_loss"]["steps"] == [0, 10, 20]
    assert results[1]["curves"]["sigma_max.W"]["steps"] == [0, 5, 10, 15, 20]
    for i in (0, 2):
        alone = train_seeds(exp, [i])[0]
        assert not results[i]["summary"]["diverged"]
        np.testing.assert_array_equal(results[i]["curves"]["train_loss"]["values"],
                                      alone["curves"]["train_loss"]["values"])
        assert all(math.isfinite(x) for x in results[i]["curves"]["train_loss"]["values"])


def test_absurd_learning_rate_diverges_every_seed() -> None:
    wild = _exp(TASK, MLP, {"name": "sgd", "lr": 1e8, "momentum": 0.9})
    for res in train_seeds(wild, [0, 1]):
        summary = res["summary"]
        assert summary["diverged"] and summary["val_step"] is None
        assert summary["diverged_step"] is not None and summary["diverged_step"] <= TRAIN["steps"]
