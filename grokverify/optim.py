"""Optimizers over the stacked (seed-batched) parameters, one registered builder per name.

Adam, AdamW and SGD are elementwise, so one optimizer over tensors with a leading seed dimension
keeps exactly the per-seed state that one optimizer per seed would; the embedding group gets
lr × c (paper 1's Adam-LR) and may have its own weight decay (paper 2's toy).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from grokverify.spec import OptimizerSpec

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


def param_group_settings(spec: OptimizerSpec, group: str) -> dict[str, float]:
    if group == "embedding":
        wd = spec.weight_decay if spec.emb_weight_decay is None else spec.emb_weight_decay
        return {"lr": spec.lr * spec.emb_lr_mult, "weight_decay": wd}
    return {"lr": spec.lr, "weight_decay": spec.weight_decay}


def build_optimizer(spec: OptimizerSpec, groups: dict[str, list[nn.Parameter]],
                    device: torch.device) -> torch.optim.Optimizer:
    """Fused kernels (one kernel for all seeds) where torch has them, else foreach."""
    param_groups = [{"params": params, "name": name, **param_group_settings(spec, name)}
                    for name, params in groups.items()]
    try:
        return OPTIMIZERS[spec.name](param_groups, spec, {"fused": True})
    except (RuntimeError, TypeError, ValueError):
        return OPTIMIZERS[spec.name](param_groups, spec, {"foreach": True})


def reset_seed_state(optimizer: torch.optim.Optimizer, seed_index: int) -> None:
    """Zero one seed's slice of every parameter and optimizer buffer (used after divergence)."""
    with torch.no_grad():
        for group in optimizer.param_groups:
            for param in group["params"]:
                param[seed_index].zero_()
                for value in optimizer.state.get(param, {}).values():
                    if torch.is_tensor(value) and value.dim() > 0 and value.shape == param.shape:
                        value[seed_index].zero_()
