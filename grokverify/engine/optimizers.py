"""Optimizers over the stacked (seed-batched) parameters.

Adam, AdamW and SGD are elementwise, so one optimizer over tensors with a leading seed dimension
keeps exactly the per-seed state that one optimizer per seed would. The embedding group gets
lr × c (paper 1's Adam-LR) and may have its own weight decay (paper 2's toy). torch's fused
kernels (one kernel per tensor, all seeds at once) where the device has them, else foreach.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch
from torch import nn

from grokverify.claim.optimizers import OptimizerSpec
from grokverify.engine.batched import seed_view

Builder = Callable[[list[dict[str, Any]], OptimizerSpec, dict[str, Any]], torch.optim.Optimizer]

_DEFAULT_BETAS = (0.9, 0.999)

OPTIMIZERS: dict[str, Builder] = {
    "adamw": lambda groups, s, kw: torch.optim.AdamW(
        groups, betas=s.betas or _DEFAULT_BETAS, eps=s.eps, **kw),
    "adam": lambda groups, s, kw: torch.optim.Adam(
        groups, betas=s.betas or _DEFAULT_BETAS, eps=s.eps, **kw),
    "sgd": lambda groups, s, kw: torch.optim.SGD(
        groups, momentum=s.momentum, nesterov=s.nesterov, **kw),
}


def group_settings(spec: OptimizerSpec, group: str) -> dict[str, float]:
    if group == "embedding":
        wd = spec.weight_decay if spec.emb_weight_decay is None else spec.emb_weight_decay
        return {"lr": spec.embedding_lr, "weight_decay": wd}
    return {"lr": spec.lr, "weight_decay": spec.weight_decay}


def param_groups(spec: OptimizerSpec,
                 groups: Mapping[str, list[nn.Parameter]]) -> list[dict[str, Any]]:
    """torch.optim's parameter groups; groups with the same settings are merged (c = 1 and the
    same weight decay: one group), so a step runs one fused kernel call instead of two. The
    optimizers are elementwise, so each parameter's update is the same either way."""
    merged: dict[tuple[tuple[str, float], ...], dict[str, Any]] = {}
    for name, params in groups.items():
        settings = group_settings(spec, name)
        key = tuple(sorted(settings.items()))
        if key in merged:
            merged[key]["params"] = [*merged[key]["params"], *params]
            merged[key]["name"] += f"+{name}"
        else:
            merged[key] = {"params": list(params), "name": name, **settings}
    return list(merged.values())


def build_optimizer(spec: OptimizerSpec,
                    groups: Mapping[str, list[nn.Parameter]]) -> torch.optim.Optimizer:
    """The fused implementation where torch has one for these tensors (it refuses at
    construction otherwise), else foreach."""
    try:
        return OPTIMIZERS[spec.name](param_groups(spec, groups), spec, {"fused": True})
    except (RuntimeError, TypeError, ValueError):
        return OPTIMIZERS[spec.name](param_groups(spec, groups), spec, {"foreach": True})


def uses_fused(optimizer: torch.optim.Optimizer) -> bool:
    return all(group.get("fused") for group in optimizer.param_groups)


def reset_seed_state(optimizer: torch.optim.Optimizer, seed_index: int,
                     seed_shapes: Mapping[nn.Parameter, torch.Size]) -> None:
    """Zero one seed's slice of every parameter and optimizer buffer (after divergence)."""
    with torch.no_grad():
        for group in optimizer.param_groups:
            for param in group["params"]:
                state = optimizer.state.get(param, {}).values()
                buffers = [v for v in state if torch.is_tensor(v) and v.shape == param.shape]
                for tensor in (param, *buffers):
                    seed_view(tensor, seed_shapes[param])[seed_index].zero_()
