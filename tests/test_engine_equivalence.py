"""The engine trains what plain per-seed training (tests/reference.py: one plain model and
torch's default optimizer per seed, same split, initial weights and minibatch order) trains,
compared in float64: there a different order of sums moves results by ~1e-16, which 100 steps do
not amplify past the tolerances on any kernel path (float32 roundings are no promise). Its CPU
shards on threads train what one batch trains."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import make_exp
from reference import train_plain

from grokverify.claim.experiment import ExperimentSpec
from grokverify.engine.loop import SeedTrainer, train_seeds

TASK = {"op": "add", "p": 11, "train_frac": 0.7, "test_frac": 0.2}
TOY_TASK = {"op": "add", "p": 10, "modular": False, "unordered": True, "train_frac": 0.6}
MINIBATCH = {"steps": 100, "eval_interval": 20, "batch_size": 16, "train_threshold": 0.6,
             "val_threshold": 0.15, "early_stop": False}
FULL_BATCH = {"steps": 100, "eval_interval": 20, "train_threshold": 0.6, "val_threshold": 0.3,
              "early_stop": False}
MLP = {"kind": "embed_mlp", "d": 16, "hidden": 32}

CASES = {
    "embed_mlp-adamw": (TASK, MLP, {"name": "adamw", "lr": 0.01, "weight_decay": 0.5,
                                    "emb_lr_mult": 10}, MINIBATCH),
    "embed_mlp-sgd": (TASK, MLP, {"name": "sgd", "lr": 0.05, "momentum": 0.9,
                                  "weight_decay": 1e-3, "emb_lr_mult": 2}, MINIBATCH),
    # batch 10 < p = 11: the derived form; batch 16 above: the table fast path
    "embed_mlp-adam-small-batch": (TASK, MLP, {"name": "adam", "lr": 0.01, "weight_decay": 0.001,
                                               "emb_lr_mult": 2},
                                   {**MINIBATCH, "batch_size": 10, "train_threshold": 0.4}),
    "scalar_mlp-adamw": (TASK, {"kind": "scalar_mlp", "hidden": 32},
                         {"name": "adamw", "lr": 0.03}, {**MINIBATCH, "train_threshold": 0.2}),
    "toy_sum-adamw": (TOY_TASK, {"kind": "toy_sum", "hidden": 32},
                      {"name": "adamw", "lr": 1e-2, "weight_decay": 0.1, "emb_lr_mult": 10,
                       "emb_weight_decay": 0}, FULL_BATCH),
    "toy_sum-regression-sgd": (TOY_TASK, {"kind": "toy_sum", "hidden": 32, "output": "regression",
                                          "emb_dim": 2},
                               {"name": "sgd", "lr": 0.5, "momentum": 0.9},
                               {**FULL_BATCH, "train_threshold": 0.3}),
    "toy_matrix-s3-regression": ({"op": "s3", "p": 6, "train_frac": 0.6},
                                 {"kind": "toy_matrix", "hidden": 32, "output": "regression"},
                                 {"name": "adamw", "lr": 1e-2, "emb_lr_mult": 10},
                                 {**FULL_BATCH, "train_threshold": 0.3}),
    # images (a made-up dataset in MNIST's files: tests/conftest.py), the MLP at α = 2
    "image_mlp-regression-adamw": ({"dataset": "mnist", "n_train": 48, "n_val": 30},
                                   {"kind": "image_mlp", "depth": 3, "width": 16,
                                    "init_scale": 2.0},
                                   {"name": "adamw", "lr": 3e-3, "weight_decay": 0.1},
                                   {**MINIBATCH, "train_threshold": 0.5}),
}
SEEDS = [0, 1, 2]
pytestmark = pytest.mark.usefixtures("mnist_env")


def _exp(case: str) -> ExperimentSpec:
    return make_exp(*CASES[case])


@pytest.mark.parametrize("case", sorted(CASES))
def test_curves_and_thresholds_equal_plain_training_in_float64(case: str) -> None:
    exp = _exp(case)
    engine = train_seeds(exp, SEEDS, dtype=torch.float64)
    for i, seed in enumerate(SEEDS):
        plain = train_plain(exp, seed, dtype=torch.float64)
        got = engine[i]
        assert got["seed"] == seed and plain.steps == [0, 20, 40, 60, 80, 100]
        for name in ("train_loss", "val_loss", "train_acc", "val_acc"):
            curve = got["curves"][name]
            assert curve["steps"] == plain.steps
            np.testing.assert_allclose(curve["values"], getattr(plain, name), rtol=1e-9,
                                       atol=1e-12, err_msg=f"{case} seed {seed} {name}")
        assert (got["summary"]["train_step"], got["summary"]["val_step"]) == \
            (plain.train_step, plain.val_step)
        assert not got["summary"]["diverged"]
    # the runs learn and cross a threshold, so this compares trained models and real verdicts
    accs = [r["curves"]["train_acc"]["values"] for r in engine]
    assert all(acc[-1] > acc[0] + 0.03 for acc in accs)
    assert any(r["summary"]["train_step"] not in (None, 0) for r in engine)


def test_shards_on_two_workers_equal_one_batch() -> None:
    """What train_seeds does with 2 CPU threads (two single-threaded shards) changes nothing."""
    exp = _exp("embed_mlp-adamw")
    one = train_seeds(exp, SEEDS)
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with SeedTrainer(exp, SEEDS) as two:  # 2 threads: 2 shards, single-threaded each
            assert [s.model.seeds for s in two.shards] == [[0, 1], [2]]
            assert [s.model.members for s in two.shards] == [[0, 1], [2, 2]]  # a ghost
            assert torch.get_num_threads() == 1
            finished = two.record()
            for _ in range(5):
                two.train(20)
                finished = two.record()
            assert not finished
            results = two.results()
        assert torch.get_num_threads() == 2  # restored
    finally:
        torch.set_num_threads(threads)
    assert results == one  # to the last bit
