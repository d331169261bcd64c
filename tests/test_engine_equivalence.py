"""The engine trains exactly what plain per-seed training trains, and its fast paths compute
exactly what the derived (torch.func) form computes.

Compared like with like: the mathematics is compared in float64, where a different order of
sums changes results by ~1e-16 and 100 steps of training cannot amplify that past the
tolerances below, on any CPU kernel path. (In float32 the engine and the reference round
differently, and a grokking trajectory amplifies a last-bit difference: that is not a promise.)
The reference is tests/reference.py: one plain model and torch's default optimizer per seed,
same split, initial weights and minibatch order.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from reference import train_plain

from grokverify.claim.experiment import ExperimentSpec
from grokverify.claim.models import EmbedMLPSpec, ModelSpec, ToySumSpec
from grokverify.engine.batched import BatchedModel, plain_copy
from grokverify.engine.datasets import ENV_VAR
from grokverify.engine.fast import fast_path_for
from grokverify.engine.loop import SeedTrainer, train_seeds
from grokverify.engine.models import DataShape, mean_loss_of
from grokverify.engine.optimizers import uses_fused

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


@pytest.fixture(autouse=True)
def _image_data(tiny_images: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_VAR, str(tiny_images))


def _exp(case: str) -> ExperimentSpec:
    task, model, opt, training = CASES[case]
    return ExperimentSpec.model_validate(
        {"task": task, "model": model, "optimizer": opt, "training": training})


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


def _operands(p: int, s: int, n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(0, p, (s, n), generator=gen), torch.randint(0, p, (s, n), generator=gen)


FAST_CASES: dict[str, tuple[ModelSpec, DataShape, int]] = {
    "embed_mlp-table": (EmbedMLPSpec(kind="embed_mlp", d=4, hidden=6),
                        DataShape(p=5, vocab=7, n_classes=5), 9),
    "embed_mlp-below-p": (EmbedMLPSpec(kind="embed_mlp", d=4, hidden=6),
                          DataShape(p=5, vocab=7, n_classes=5), 3),
    "toy-emb1": (ToySumSpec(kind="toy_sum", hidden=7), DataShape(p=6, vocab=8, n_classes=11), 9),
    "toy-emb2": (ToySumSpec(kind="toy_sum", hidden=7, emb_dim=2),
                 DataShape(p=6, vocab=8, n_classes=11), 9),
    "toy-regression": (ToySumSpec(kind="toy_sum", hidden=7, output="regression", target_dim=3),
                       DataShape(p=6, vocab=8, n_classes=11), 9),
}


@pytest.mark.parametrize("case", sorted(FAST_CASES))
@pytest.mark.parametrize("frozen", [False, True])
def test_fast_path_equals_the_derived_form_in_float64(case: str, frozen: bool) -> None:
    """Outputs, losses and every gradient of a model kind's fast path (forward, and its
    hand-written step where it has one) equal the plain module under torch.func.vmap, for
    weights 1, 0 (a diverged seed: no gradient) and 0.5; each step is taken twice, so a path
    that accumulated gradients instead of setting them would fail. With the embedding frozen,
    neither path gives it a gradient."""
    spec, shape, n = FAST_CASES[case]
    a, b = _operands(shape.p, 3, n, seed=2)
    y = (a + b) % shape.n_classes
    weight = torch.tensor([1.0, 0.0, 0.5], dtype=torch.float64)
    results = []
    for fast in (True, False):
        model = BatchedModel(spec, shape, [0, 1, 2], dtype=torch.float64,
                             fast_path=fast_path_for(spec, fast))
        if frozen:
            model.leaf("embed.weight").requires_grad_(False)
        out = model(a, b).detach()
        model.loss_and_grads(a, b, y, torch.ones_like(weight))
        loss = model.loss_and_grads(a, b, y, weight)
        results.append((out, loss, {k: model.grad(k) for k in model.names}))
    (out_f, loss_f, g_f), (out_d, loss_d, g_d) = results
    torch.testing.assert_close(out_f, out_d, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(loss_f, loss_d, rtol=1e-12, atol=1e-12)
    for key in g_d:
        if frozen and key == "embed.weight":
            assert g_f[key] is None and g_d[key] is None
            continue
        torch.testing.assert_close(g_f[key], g_d[key], rtol=1e-12, atol=1e-12, msg=key)
        assert not g_f[key][1].any()  # weight 0: no gradient
        assert g_f[key][0].abs().sum() > 0


def test_derived_form_equals_each_plain_module_in_float64() -> None:
    """The batched model's seed i is the plain module of seed i: same outputs, and the gradient
    of its mean loss is seed i's slice of the batched gradient."""
    spec, shape, n = FAST_CASES["embed_mlp-table"]
    a, b = _operands(shape.p, 3, n, seed=3)
    y = (a + b) % shape.n_classes
    model = BatchedModel(spec, shape, [4, 5, 6], dtype=torch.float64)  # no fast path
    assert_each_seed_is_its_plain_module(model, a, b, y)


def assert_each_seed_is_its_plain_module(model: BatchedModel, a: torch.Tensor, b: torch.Tensor,
                                         y: torch.Tensor) -> None:
    """Seed i's outputs of the batched (float64) model, and its slice of the gradient of the
    summed mean losses, are seed i's plain module's (operands (S, B))."""
    out = model(a, b).detach()
    model.loss_and_grads(a, b, y, torch.ones(len(a), dtype=torch.float64))
    for i in range(len(a)):
        plain = plain_copy(model, i)
        torch.testing.assert_close(plain(a[i], b[i]), out[i], rtol=0, atol=1e-13)
        mean_loss_of(plain, plain(a[i], b[i]), y[i]).backward()
        for name, param in plain.named_parameters():
            torch.testing.assert_close(model.grad(name)[i], param.grad, rtol=1e-12, atol=1e-13,
                                       msg=name)


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


@pytest.mark.parametrize(("name", "kernel"), [("adamw", "aten::_fused_adamw_"),
                                              ("adam", "aten::_fused_adam_"),
                                              ("sgd", "aten::_fused_sgd_")])
def test_every_optimizer_runs_its_fused_kernel_on_cpu(name: str, kernel: str) -> None:
    opt = {"name": name, "lr": 0.01, "weight_decay": 0.1}
    if name == "sgd":
        opt["momentum"] = 0.9
    exp = ExperimentSpec.model_validate(
        {"task": TASK, "model": MLP, "optimizer": opt, "training": MINIBATCH})
    with SeedTrainer(exp, SEEDS, workers=1) as engine:
        assert uses_fused(engine.shards[0].optimizer)
        engine.train(1)  # lazy optimizer state
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            engine.train(2)
    calls = {e.key: e.count for e in prof.key_averages()}
    assert calls.get(kernel, 0) >= 2, sorted(k for k in calls if "fused" in k or "foreach" in k)
