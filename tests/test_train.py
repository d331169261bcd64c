"""The seed-batched trainer: batched seed i == seed i alone; divergence is contained."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from grokverify import train
from grokverify.spec import ExperimentSpec
from grokverify.train import train_seeds

TASK = {"op": "add", "p": 7, "train_frac": 0.6, "test_frac": 0.3}
TOY_TASK = {"op": "add", "p": 6, "modular": False, "unordered": True, "train_frac": 0.6}
TRAIN = {"steps": 40, "eval_interval": 10, "batch_size": 8, "early_stop": False}

CASES = {
    "embed_mlp-adamw": (TASK, {"kind": "embed_mlp", "d": 8, "hidden": 16},
                        {"name": "adamw", "lr": 0.01, "weight_decay": 0.5, "emb_lr_mult": 10}),
    "embed_mlp-adam": (TASK, {"kind": "embed_mlp", "d": 8, "hidden": 16},
                       {"name": "adam", "lr": 0.01, "weight_decay": 0.01}),
    "embed_mlp-sgd": (TASK, {"kind": "embed_mlp", "d": 8, "hidden": 16},
                      {"name": "sgd", "lr": 0.1, "momentum": 0.9, "weight_decay": 1e-3,
                       "emb_lr_mult": 10}),
    "scalar_mlp-adamw": (TASK, {"kind": "scalar_mlp", "hidden": 16},
                         {"name": "adamw", "lr": 0.01}),
    "toy-class": (TOY_TASK, {"kind": "toy_sum", "hidden": 20},
                  {"name": "adamw", "lr": 1e-3, "emb_lr_mult": 10, "emb_weight_decay": 0}),
    "toy-regression": (TOY_TASK, {"kind": "toy_sum", "hidden": 20, "output": "regression"},
                       {"name": "adamw", "lr": 1e-3, "emb_lr_mult": 10}),
}


def _exp(task: dict, model: dict, opt: dict, training: dict | None = None) -> ExperimentSpec:
    return ExperimentSpec.model_validate(
        {"task": task, "model": model, "optimizer": opt, "training": training or TRAIN})


def _with_threads(n: int, fn):
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        return fn()
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize("case", sorted(CASES))
def test_batched_seed_is_bit_identical_to_seed_trained_alone(case: str, monkeypatch) -> None:
    """A seed's whole record (curves, thresholds, summary) is the same to the last bit in any
    chunk of seeds, split into any number of CPU shards, and in a repeated run."""
    monkeypatch.setattr(train, "_EVAL_ROWS", 5)  # evaluation in several blocks of rows
    exp = _exp(*CASES[case])

    def records(seeds: list[int], threads: int) -> dict[int, dict]:
        results = _with_threads(threads, lambda: train_seeds(exp, seeds))
        return {r.seed: r.to_dict() for r in results}

    batched = records([0, 1, 2, 3], 2)  # two shards, [0, 1] and [2, 3]
    assert batched == records([0, 1, 2, 3], 2)
    for seeds, threads in (([1], 2), ([2], 1), ([3, 0], 1), ([2, 1, 0], 3)):
        for seed, record in records(seeds, threads).items():
            assert record == batched[seed], (case, seeds, seed)
    assert batched[0]["curves"]["train_loss"] != batched[1]["curves"]["train_loss"]


def test_seeds_differ_and_training_learns() -> None:
    exp = _exp(*CASES["embed_mlp-adamw"], {"steps": 150, "eval_interval": 50, "batch_size": 8,
                                           "early_stop": False})
    a, b = train_seeds(exp, [0, 1])
    assert a.train_loss[0] != b.train_loss[0]  # own initialisation per seed
    assert a.train_loss[-1] < a.train_loss[0] / 2  # it trains
    assert a.train_acc[-1] > 0.8


def test_full_batch_and_thresholds_recorded() -> None:
    exp = _exp(TASK, {"kind": "embed_mlp", "d": 8, "hidden": 16},
               {"name": "adamw", "lr": 0.01},
               {"steps": 200, "eval_interval": 10, "train_threshold": 0.9, "val_threshold": 0.0,
                "early_stop": True})
    (res,) = train_seeds(exp, [0])
    assert res.val_step == 0  # threshold 0 is met at the initial evaluation
    assert res.train_step is not None and res.train_step % 10 == 0
    first = next(s for s, acc in zip(res.steps, res.train_acc, strict=True) if acc >= 0.9)
    assert res.train_step == first
    assert res.done and res.stopped_step == res.train_step < 200  # early stop froze the record


def test_diverging_seed_is_flagged_and_the_rest_of_its_batch_trains_on(monkeypatch) -> None:
    """Poison seed 1's weights mid-run: it is recorded as diverged at that step, and seeds 0 and
    2 of the same batch end exactly where they end when trained without it."""
    import grokverify.train as train_mod

    exp = _exp(*CASES["embed_mlp-adamw"])
    built = []
    real_build = train_mod.build_model

    def spy(*args, **kwargs):
        built.append(real_build(*args, **kwargs))
        return built[-1]

    monkeypatch.setattr(train_mod, "build_model", spy)

    def poison(step: int, total: int) -> None:
        if step == 20:
            with torch.no_grad():
                built[0].params["W1"][1].fill_(float("inf"))

    results = train_mod.train_seeds(exp, [0, 1, 2], progress=poison)
    assert results[1].diverged and results[1].diverged_step == 21
    assert results[1].stopped_step == 30 and results[1].steps == [0, 10, 20]
    for i in (0, 2):
        alone = train_mod.train_seeds(exp, [i])[0]
        assert not results[i].diverged
        np.testing.assert_allclose(results[i].train_loss, alone.train_loss, rtol=1e-4, atol=1e-6)
        assert all(math.isfinite(x) for x in results[i].train_loss)


def test_absurd_learning_rate_diverges_every_seed() -> None:
    wild = _exp(TASK, {"kind": "embed_mlp", "d": 8, "hidden": 16},
                {"name": "sgd", "lr": 1e8, "momentum": 0.9})
    res = train_seeds(wild, [0, 1])
    assert all(r.diverged and r.val_step is None for r in res)
    assert all(r.diverged_step is not None and r.diverged_step <= TRAIN["steps"] for r in res)
