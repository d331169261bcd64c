"""The optimised engine trains exactly what plain per-seed training trains.

The reference is the peer-style loop benchmarks/throughput.py times as (a): one plain nn.Module
(nn.Embedding + nn.Linear) and torch's default optimizer per seed (grokverify.train.PlainTrainer),
given the same initial weights (seed i of the batched model, copied in), the same minibatch row
indices (train.py's batch sampler) and the same optimizer settings. Curves, thresholds and
weights must agree to float tolerance, so engine speed-ups never change a verdict.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from grokverify.models import DataShape, EmbedMLPSpec, build_model, plain_model
from grokverify.optim import uses_fused
from grokverify.spec import ExperimentSpec, OptimizerSpec
from grokverify.train import PlainTrainer, SeedTrainer, train_plain, train_seeds

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
    # batch 10 < p = 11: the first layer's matmul path (batch 16 above: its table path)
    "embed_mlp-adamw-small-batch": (TASK, MLP, {"name": "adamw", "lr": 0.02, "weight_decay": 0.5,
                                                "emb_lr_mult": 10},
                                    {**MINIBATCH, "batch_size": 10, "train_threshold": 0.4}),
    "toy_sum-adamw": (TOY_TASK, {"kind": "toy_sum", "hidden": 32},
                      {"name": "adamw", "lr": 1e-2, "weight_decay": 0.1, "emb_lr_mult": 10,
                       "emb_weight_decay": 0}, FULL_BATCH),
}
SEEDS = [0, 1, 2]


def _exp(case: str) -> ExperimentSpec:
    task, model, opt, training = CASES[case]
    return ExperimentSpec.model_validate(
        {"task": task, "model": model, "optimizer": opt, "training": training})


@pytest.mark.parametrize("case", sorted(CASES))
def test_curves_and_thresholds_equal_plain_training(case: str) -> None:
    exp = _exp(case)
    engine = train_seeds(exp, SEEDS)
    for i, seed in enumerate(SEEDS):
        plain = train_plain(exp, seed)
        got = engine[i]
        assert got.seed == plain.seed and got.steps == plain.steps == [0, 20, 40, 60, 80, 100]
        np.testing.assert_allclose(got.train_loss, plain.train_loss, rtol=2e-5, atol=1e-6)
        np.testing.assert_allclose(got.val_loss, plain.val_loss, rtol=2e-5, atol=1e-6)
        assert got.train_acc == pytest.approx(plain.train_acc, abs=1e-6)
        assert got.val_acc == pytest.approx(plain.val_acc, abs=1e-6)
        assert (got.train_step, got.val_step) == (plain.train_step, plain.val_step)
        assert not got.diverged and not plain.diverged
    # the runs learn and cross a threshold, so this compares trained models and real verdicts
    assert all(r.train_acc[-1] > r.train_acc[0] + 0.3 for r in engine)
    assert any(r.train_step not in (None, 0) for r in engine)


@pytest.mark.parametrize("case", sorted(CASES))
def test_weights_equal_plain_training_step_by_step(case: str) -> None:
    exp = _exp(case)
    with SeedTrainer(exp, SEEDS, workers=1) as engine:
        (shard,) = engine.shards
        assert uses_fused(shard.optimizer)  # the engine's fast path is the one under test
        plains = []
        for i, seed in enumerate(SEEDS):
            plain = PlainTrainer(exp, seed)
            before = {k: v.clone() for k, v in plain.model.batched_params().items()}
            plain.model.load_seed(shard.model, i)  # share the initial weights explicitly ...
            for key, value in plain.model.batched_params().items():  # ... which were equal anyway
                torch.testing.assert_close(value, before[key], rtol=0, atol=0)
            plains.append(plain)
        for n_steps in (1, 4, 15):
            engine.train(n_steps)
            for plain in plains:
                plain.train(n_steps)
            for i, plain in enumerate(plains):
                for key, value in plain.model.batched_params().items():
                    torch.testing.assert_close(shard.model.params[key][i].detach(), value,
                                               rtol=1e-4, atol=1e-6, msg=f"{case} seed {i} {key}")


def test_shards_on_two_workers_equal_one_batch() -> None:
    """What train_seeds does with 2 CPU threads (two single-threaded shards) changes nothing."""
    exp = _exp("embed_mlp-adamw")
    one = train_seeds(exp, SEEDS)
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with SeedTrainer(exp, SEEDS) as two:  # 2 threads: 2 shards, single-threaded each
            assert [s.seeds for s in two.shards] == [[0, 1], [2]]
            assert torch.get_num_threads() == 1
            finished = two.record()
            for _ in range(5):
                two.train(20)
                finished = two.record()
            assert not finished
            results = two.results
        assert torch.get_num_threads() == 2  # restored
    finally:
        torch.set_num_threads(threads)
    assert [r.seed for r in results] == SEEDS
    assert [r.to_dict() for r in results] == [r.to_dict() for r in one]  # to the last bit


@pytest.mark.parametrize("n", [3, 9])  # fewer rows than p = 5: matmul path; more: table path
def test_embed_mlp_first_layer_equals_the_plain_layer_in_float64(n: int) -> None:
    """EmbedMLP folds the constant op and "=" tokens' part of the first layer into its bias and,
    for batches of at least p rows, computes it as table lookups (models._OperandLinearReLU,
    _OperandTableReLU): outputs and every gradient equal nn.Linear over [a, op, b, =]."""
    shape = DataShape(p=5, vocab=7, n_classes=5)
    model = build_model(EmbedMLPSpec(kind="embed_mlp", d=4, hidden=6), shape, [0, 1]).double()
    gen = torch.Generator().manual_seed(0)
    a, b = torch.randint(0, 5, (2, 2, n), generator=gen)
    weights = torch.tensor([0.7, 1.3], dtype=torch.float64)
    out = model(a, b)
    (model.train_loss(out, (a + b) % 5) * weights).sum().backward()
    for i in range(2):
        plain = plain_model(model, i).double()
        torch.testing.assert_close(plain(a[i], b[i]), out[i].detach(), rtol=1e-12, atol=1e-12)
        (plain.loss(plain(a[i], b[i]), (a[i] + b[i]) % 5) * weights[i]).backward()
        for key, name in plain.names.items():
            want = plain._to_batched(key, plain.get_parameter(name).grad)
            torch.testing.assert_close(model.grad(key)[i], want, rtol=1e-12, atol=1e-12,
                                       msg=key)


def test_embed_mlp_paths_agree_and_frozen_embeddings_get_no_gradient() -> None:
    """The table and matmul paths give the same outputs and gradients (float64), and with the
    embeddings frozen (requires_grad off) the table path skips their gradient."""
    shape = DataShape(p=5, vocab=7, n_classes=5)
    gen = torch.Generator().manual_seed(1)
    a, b = torch.randint(0, 5, (2, 3, 8), generator=gen)
    grads = []
    for rows in (8, 4):  # 8 rows at once: table path; blocks of 4 rows: matmul path
        model = build_model(EmbedMLPSpec(kind="embed_mlp", d=4, hidden=6), shape, [0, 1, 2])
        model = model.double()
        out = torch.cat([model(a[..., i:i + rows], b[..., i:i + rows]) for i in range(0, 8, rows)],
                        dim=1)
        model.train_loss(out, (a + b) % 5).sum().backward()
        grads.append((out.detach(), {k: model.grad(k).clone() for k in model.leaves}))
    (out_t, g_t), (out_m, g_m) = grads
    torch.testing.assert_close(out_t, out_m, rtol=1e-12, atol=1e-12)
    for key in g_t:
        torch.testing.assert_close(g_t[key], g_m[key], rtol=1e-12, atol=1e-12, msg=key)
    model = build_model(EmbedMLPSpec(kind="embed_mlp", d=4, hidden=6), shape, [0, 1, 2])
    model.leaves["E"].requires_grad_(False)
    model.train_loss(model(a, b), (a + b) % 5).sum().backward()
    assert model.grad("E") is None and model.grad("W1") is not None


@pytest.mark.parametrize(("output", "emb_dim"), [("classification", 1), ("classification", 2),
                                              ("regression", 1)])
def test_toy_hand_written_step_equals_autograd_in_float64(output: str, emb_dim: int) -> None:
    """ToySum.loss_and_grads (no autograd) gives autograd's losses and gradients, a seed with
    weight 0 (diverged) included. Each path is called twice (weights 1, then the test's): the
    gradients are set, not accumulated (the trainer calls no zero_grad; the hand-written step
    reuses its buffers)."""
    from grokverify.models import BatchedModel, ToySumSpec

    shape = DataShape(p=6, vocab=6, n_classes=11)
    spec = ToySumSpec(kind="toy_sum", emb_dim=emb_dim, hidden=7, output=output, target_dim=3)
    gen = torch.Generator().manual_seed(2)
    a, b = torch.randint(0, 6, (2, 3, 9), generator=gen)
    weight = torch.tensor([1.0, 0.0, 0.5], dtype=torch.float64)
    results = []
    for step in (BatchedModel.loss_and_grads, type(build_model(spec, shape, [0])).loss_and_grads):
        model = build_model(spec, shape, [0, 1, 2]).double()
        step(model, model.encode(a, b), a + b, torch.ones_like(weight))
        loss = step(model, model.encode(a, b), a + b, weight)
        results.append((loss, {k: model.grad(k).clone() for k in model.leaves}))
    (loss_auto, g_auto), (loss_hand, g_hand) = results
    torch.testing.assert_close(loss_hand, loss_auto, rtol=1e-12, atol=1e-12)
    for key in g_auto:
        torch.testing.assert_close(g_hand[key], g_auto[key], rtol=1e-12, atol=1e-12, msg=key)
        assert not g_hand[key][1].any()  # weight 0: no gradient
    assert all(g_hand[key][0].abs().sum() > 0 for key in g_hand)


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


@pytest.mark.parametrize("name", ["adamw", "adam", "sgd"])
def test_direct_optimizer_step_is_bit_identical_to_torch_optim(name: str) -> None:
    """optim.Stepper (Adam/AdamW's fused kernel called directly) leaves every parameter and
    state bit-identical to `optimizer.step()`: across parameter groups with their own lr and
    weight decay, after a seed's state is reset (divergence), and when a parameter stops
    getting a gradient (frozen) and starts again."""
    from grokverify.optim import Stepper, build_optimizer, reset_seed_state

    extra = {"momentum": 0.9} if name == "sgd" else {"betas": (0.8, 0.99)}
    spec = OptimizerSpec.model_validate({"name": name, "lr": 0.01, "weight_decay": 0.1,
                                         "emb_lr_mult": 3, **extra})
    shape = DataShape(p=11, vocab=13, n_classes=11)
    models = [build_model(EmbedMLPSpec(kind="embed_mlp", d=8, hidden=16), shape, [0, 1, 2])
              for _ in range(2)]
    optimizers = [build_optimizer(spec, m.param_groups(), torch.device("cpu")) for m in models]
    direct, plain = Stepper(optimizers[0]), optimizers[1].step
    gen = torch.Generator().manual_seed(5)
    for step in range(8):
        grads = {k: torch.randn(leaf.shape, generator=gen) for k, leaf in models[0].leaves.items()}
        for model in models:
            for key, leaf in model.leaves.items():
                leaf.grad = None if key == "E" and step in (3, 4) else grads[key].clone()
        direct()
        plain()
        if step == 5:
            for model, opt in zip(models, optimizers, strict=True):
                reset_seed_state(opt, 1, model.seed_shapes)
    for key in models[0].leaves:
        p0, p1 = models[0].leaves[key], models[1].leaves[key]
        assert torch.equal(p0, p1), key
        s0, s1 = optimizers[0].state[p0], optimizers[1].state[p1]
        assert s0.keys() == s1.keys() and all(torch.equal(s0[k], s1[k]) for k in s0), key
    assert (name != "sgd") == direct._direct


def test_toy_step_after_conversion_writes_the_converted_gradients() -> None:
    """The hand-written step caches its gradient buffers and parameter views; `.double()` (or
    `.to(device)`) keeps each .grad object but swaps its storage, so the cache must be dropped
    then: the step after the conversion gives autograd's float64 gradients."""
    from grokverify.models import BatchedModel, ToySumSpec

    shape = DataShape(p=6, vocab=6, n_classes=11)
    spec = ToySumSpec(kind="toy_sum", emb_dim=1, hidden=7)
    a, b = torch.randint(0, 6, (2, 3, 9), generator=torch.Generator().manual_seed(4))
    model, reference = (build_model(spec, shape, [0, 1, 2]) for _ in range(2))
    model.loss_and_grads(model.encode(a, b), a + b, torch.ones(3))  # fills the float32 caches
    model.double()
    reference.double()
    weight = torch.ones(3, dtype=torch.float64)
    loss = model.loss_and_grads(model.encode(a, b), a + b, weight)
    expected = BatchedModel.loss_and_grads(reference, reference.encode(a, b), a + b, weight)
    torch.testing.assert_close(loss, expected, rtol=1e-12, atol=1e-12)
    for key in model.leaves:
        assert model.leaves[key].grad.dtype == torch.float64, key
        torch.testing.assert_close(model.grad(key), reference.grad(key), rtol=1e-12, atol=1e-12,
                                   msg=key)
