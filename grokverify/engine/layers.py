"""Seed-batched layers for the fast paths, reading parameters from their stored leaves and
writing gradients in the leaves' own layout.

Plain autograd over an nn.Linear-layout weight (S, out, in) computes the weight gradient as
(S, in, out) and copies it transposed, and a padded leaf's (S, ...) view adds a slice-backward
copy into a zeroed padded tensor (`grokverify.engine.batched`); on paper 2's toy those copies
were a fifth of a step. `linear` computes the same function and gradients with neither copy.
"""

from __future__ import annotations

import torch
from torch import Tensor

from grokverify.engine.batched import BatchedModel, seed_view


def grad_like(like: Tensor, leaf_shape: torch.Size, shape: torch.Size) -> tuple[Tensor, Tensor]:
    """A fresh gradient for a leaf of `leaf_shape` (its padding zeroed) and its (S, ...) view
    `shape` to write into."""
    g = like.new_empty(leaf_shape)
    if leaf_shape != shape:
        g[shape.numel():].zero_()
    return g, seed_view(g, shape)


class _Linear(torch.autograd.Function):
    """x (S, B, in) @ wᵀ + b with w (S, out, in), b (S, out) read from their leaves (S >= 2: a
    lone seed has its ghost, see `grokverify.engine.batched`)."""

    @staticmethod
    def forward(ctx: torch.autograd.function.FunctionCtx, x: Tensor, w_leaf: Tensor,
                b_leaf: Tensor, w_shape: torch.Size, b_shape: torch.Size) -> Tensor:
        w, b = seed_view(w_leaf, w_shape), seed_view(b_leaf, b_shape)
        ctx.save_for_backward(x, w_leaf)
        ctx.shapes = (w_shape, b_shape, b_leaf.shape)  # type: ignore[attr-defined]
        return torch.baddbmm(b.unsqueeze(1), x, w.transpose(1, 2))

    @staticmethod
    def backward(ctx: torch.autograd.function.FunctionCtx,  # type: ignore[override]
                 g: Tensor) -> tuple[Tensor | None, ...]:
        x, w_leaf = ctx.saved_tensors  # type: ignore[attr-defined]
        w_shape, b_shape, b_leaf_shape = ctx.shapes  # type: ignore[attr-defined]
        w = seed_view(w_leaf, w_shape)
        needs_x, needs_w, needs_b = ctx.needs_input_grad[:3]  # type: ignore[attr-defined]
        g_x = g_w_leaf = g_b_leaf = None
        if needs_x:
            g_x = torch.bmm(g, w)
        if needs_w:
            g_w_leaf, g_w = grad_like(g, w_leaf.shape, w_shape)
            torch.bmm(g.transpose(1, 2), x, out=g_w)
        if needs_b:
            g_b_leaf, g_b = grad_like(g, b_leaf_shape, b_shape)
            torch.sum(g, dim=1, out=g_b)
        return g_x, g_w_leaf, g_b_leaf, None, None


def linear(model: BatchedModel, layer: str, x: Tensor) -> Tensor:
    """The nn.Linear `layer` (e.g. "fc2") of every seed applied to x (S, B, in)."""
    w, b = f"{layer}.weight", f"{layer}.bias"
    return _Linear.apply(x, model.leaf(w), model.leaf(b), model.shapes[w], model.shapes[b])
