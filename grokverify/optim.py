"""Optimizers over the stacked (seed-batched) parameters, one registered builder per name.

Adam, AdamW and SGD are elementwise, so one optimizer over tensors with a leading seed dimension
keeps exactly the per-seed state that one optimizer per seed would; the embedding group gets
lr × c (paper 1's Adam-LR) and may have its own weight decay (paper 2's toy).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch
from torch import nn

from grokverify.models import seed_view
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


def _param_groups(spec: OptimizerSpec,
                  groups: dict[str, list[nn.Parameter]]) -> list[dict[str, Any]]:
    return [{"params": params, "name": name, **param_group_settings(spec, name)}
            for name, params in groups.items()]


def _fused_devices() -> set[str]:
    try:
        from torch.utils._foreach_utils import _get_fused_kernels_supported_devices
        return set(_get_fused_kernels_supported_devices())
    except ImportError:  # older/newer torch without the helper
        return {"cpu", "cuda", "mps", "xpu"}


def fused_supported(params: list[torch.Tensor]) -> bool:
    """torch's rule for `fused=True` (checked only at the first step, so checked here first)."""
    devices = _fused_devices()
    return all(p.device.type in devices and torch.is_floating_point(p) for p in params)


def build_optimizer(spec: OptimizerSpec, groups: dict[str, list[nn.Parameter]],
                    device: torch.device) -> torch.optim.Optimizer:
    """Fused kernels (one kernel per tensor, all seeds at once) where torch has them, else
    foreach. Adam, AdamW and SGD all have fused CPU and CUDA kernels in torch >= 2.4."""
    param_groups = _param_groups(spec, groups)
    if fused_supported([p for params in groups.values() for p in params]):
        try:
            return OPTIMIZERS[spec.name](param_groups, spec, {"fused": True})
        except (RuntimeError, TypeError, ValueError):
            pass
    return OPTIMIZERS[spec.name](param_groups, spec, {"foreach": True})


def uses_fused(optimizer: torch.optim.Optimizer) -> bool:
    return all(group.get("fused") for group in optimizer.param_groups)


def build_plain_optimizer(spec: OptimizerSpec,
                          groups: dict[str, list[nn.Parameter]]) -> torch.optim.Optimizer:
    """The same optimizer and settings with torch's default implementation: what peer code
    builds for one plain model (the reference the engine is checked and timed against)."""
    return OPTIMIZERS[spec.name](_param_groups(spec, groups), spec, {})


def reset_seed_state(optimizer: torch.optim.Optimizer, seed_index: int,
                     seed_shapes: Mapping[nn.Parameter, torch.Size]) -> None:
    """Zero one seed's slice of every parameter and optimizer buffer (used after divergence);
    `seed_shapes` gives each parameter's (S, ...) shape (models.BatchedModel.seed_shapes)."""
    with torch.no_grad():
        for group in optimizer.param_groups:
            for param in group["params"]:
                state = optimizer.state.get(param, {}).values()
                buffers = [v for v in state if torch.is_tensor(v) and v.shape == param.shape]
                for tensor in (param, *buffers):
                    seed_view(tensor, seed_shapes[param])[seed_index].zero_()


def _adam_kernel(group: dict[str, Any]) -> Callable[..., Any] | None:
    """The fused kernel torch.optim's Adam/AdamW runs for this group, or None when the group's
    options take another path (not fused, amsgrad, maximize, capturable, tensor lr/betas)."""
    other_path = any(group.get(k) for k in ("amsgrad", "maximize", "capturable", "differentiable"))
    scalars = all(isinstance(v, float | int) for v in (group["lr"], *group["betas"]))
    if not group.get("fused") or other_path or not scalars or "decoupled_weight_decay" not in group:
        return None
    return torch._fused_adamw_ if group["decoupled_weight_decay"] else torch._fused_adam_


# per parameter group: kernel, group, parameters with a gradient, [exp_avgs, exp_avg_sqs, steps]
_Plan = list[tuple[Callable[..., Any], dict[str, Any], list[torch.Tensor],
                   list[list[torch.Tensor]]]]


class Stepper:
    """`optimizer.step()`, with Adam/AdamW's fused kernel called directly where torch.optim would
    call it: the same kernel, arguments and state tensors (bit-identical: tests), without
    torch.optim's per-step Python bookkeeping (grouping tensors by device, re-checking state):
    ~5% of a small model's step on a CPU, and time holding the GIL that other shards' threads
    wait for. Other optimizers, the first step (it creates the state) and any step where the
    parameters that have a gradient changed go through `optimizer.step()`. Step hooks
    registered on the optimizer do not run on the direct path (the engine registers none)."""

    def __init__(self, optimizer: torch.optim.Optimizer):
        self.optimizer = optimizer
        self._direct = isinstance(optimizer, torch.optim.Adam) and all(
            _adam_kernel(g) is not None for g in optimizer.param_groups)
        self._mask: list[bool] = []
        self._plan: _Plan = []

    def _with_grad(self) -> list[bool]:
        return [p.grad is not None for g in self.optimizer.param_groups for p in g["params"]]

    def _make_plan(self) -> None:
        """Each group's kernel, its parameters that have a gradient, and their state lists."""
        self._plan = []
        for group in self.optimizer.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            states = [self.optimizer.state[p] for p in params]
            lists = [[s[k] for s in states] for k in ("exp_avg", "exp_avg_sq", "step")]
            kernel = _adam_kernel(group)
            assert kernel is not None  # checked in __init__
            self._plan.append((kernel, group, params, lists))

    def __call__(self) -> None:
        mask = self._with_grad() if self._direct else []
        if not self._direct or mask != self._mask:
            self.optimizer.step()
            if self._direct:
                self._mask = mask
                self._make_plan()
            return
        for kernel, group, params, (exp_avgs, exp_avg_sqs, steps) in self._plan:
            if not params:
                continue
            beta1, beta2 = group["betas"]
            torch._foreach_add_(steps, 1)
            kernel(params, [p.grad for p in params], exp_avgs, exp_avg_sqs, [], steps,
                   amsgrad=False, lr=group["lr"], beta1=beta1, beta2=beta2,
                   weight_decay=group["weight_decay"], eps=group["eps"], maximize=False,
                   grad_scale=None, found_inf=None)
