"""The optimizers over the stacked parameters (`grokverify.engine.optimizers`): every optimizer
runs torch's fused CPU kernel (one call per tensor, all seeds at once)."""

from __future__ import annotations

import pytest
import torch
from conftest import make_exp

from grokverify.claim.experiment import ExperimentSpec
from grokverify.claim.optimizers import OptimizerSpec
from grokverify.engine.loop import SeedTrainer
from grokverify.engine.optimizers import group_settings, uses_fused

TASK = {"op": "add", "p": 11, "train_frac": 0.7, "test_frac": 0.2}
MLP = {"kind": "embed_mlp", "d": 16, "hidden": 32}
MINIBATCH = {"steps": 100, "eval_interval": 20, "batch_size": 16, "train_threshold": 0.6,
             "val_threshold": 0.15, "early_stop": False}


@pytest.mark.parametrize(("name", "kernel"), [("adamw", "aten::_fused_adamw_"),
                                              ("adam", "aten::_fused_adam_"),
                                              ("sgd", "aten::_fused_sgd_")])
def test_every_optimizer_runs_its_fused_kernel_on_cpu(name: str, kernel: str) -> None:
    opt = {"name": name, "lr": 0.01, "weight_decay": 0.1}
    if name == "sgd":
        opt["momentum"] = 0.9
    with SeedTrainer(make_exp(TASK, MLP, opt, MINIBATCH), [0, 1, 2], workers=1) as engine:
        assert uses_fused(engine.shards[0].optimizer)
        engine.train(1)  # lazy optimizer state
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            engine.train(2)
    calls = {e.key: e.count for e in prof.key_averages()}
    assert calls.get(kernel, 0) >= 2, sorted(k for k in calls if "fused" in k or "foreach" in k)


def test_emb_lr_sets_the_embedding_groups_lr_as_the_multiplier_would() -> None:
    by_mult = OptimizerSpec(name="adamw", lr=1e-4, emb_lr_mult=10)
    by_lr = OptimizerSpec(name="adamw", lr=1e-4, emb_lr=1e-3)
    assert group_settings(by_lr, "embedding") == group_settings(by_mult, "embedding")
    assert group_settings(by_lr, "decoder") == {"lr": 1e-4, "weight_decay": 0.0}
    with pytest.raises(ValueError, match="emb_lr or emb_lr_mult, not both"):
        OptimizerSpec(name="adamw", lr=1e-4, emb_lr=1e-3, emb_lr_mult=2)
    with pytest.raises(ValueError, match="no embedding group"):
        ExperimentSpec.model_validate(
            {"task": {"op": "add", "p": 7, "train_frac": 0.6, "test_frac": 0.3},
             "model": {"kind": "scalar_mlp", "hidden": 16},
             "optimizer": {"name": "adamw", "lr": 0.01, "emb_lr": 0.001},
             "training": {"steps": 40, "eval_interval": 10}})
