"""Fast paths: hand-batched computation for the hot model kinds, the plain definition's function
from the same stacked parameters with its sums in another order (checked against the derived
form in float64). A `forward` serves evaluation and autograd training; a `step` gives loss and
gradients without an autograd graph (on a small model, autograd's per-node cost and the GIL the
other shards wait for are much of a step). Either may decline (None): step, then forward, then
the derived form. Which path runs depends on the model and batch shape only, never on the number
of seeds. Each stays while benchmarks/throughput.py shows it gains at least 15%.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from grokverify.claim.models import ModelSpec
from grokverify.engine.batched import BatchedModel, FastPath, seed_view
from grokverify.engine.layers import grad_like, linear


def _stacked_rows(a: Tensor, b: Tensor, rows_per_seed: int, b_offset: int = 0) -> Tensor:
    """(S, B, 2): each example's rows for its operands a and b (b's `b_offset` rows further on)
    in per-seed tables of `rows_per_seed` rows stacked over the seeds."""
    s = a.shape[0]
    first = (torch.arange(s, device=a.device) * rows_per_seed).view(s, 1, 1)
    return torch.stack([a, b + b_offset if b_offset else b], dim=-1) + first


class _OperandTableReLU(torch.autograd.Function):
    """Paper 1's relu(x @ W1ᵀ + b1), x = [E[a], E[op], E[b], E[=]], as relu(Ta'[a] + Tb[b]): an
    operand takes p values, so (p, H) tables Ta' = E[:p] W_aᵀ + bias (op and "=" fold into the
    bias) and Tb = E[:p] W_bᵀ cost 2·p·d·H multiply-adds a seed instead of B·4d·H."""

    @staticmethod
    def forward(ctx: torch.autograd.function.FunctionCtx, emb: Tensor, w1: Tensor, b1: Tensor,
                rows: Tensor, p: int) -> Tensor:
        # rows (S·B, 2): each example's rows in the tables stacked over the seeds, (S·2p, H)
        s, _, d = emb.shape
        w_a, w_op, w_b, w_eq = (w1[:, :, i * d:(i + 1) * d].transpose(1, 2) for i in range(4))
        e_ops = emb[:, :p]
        bias = torch.baddbmm(b1.unsqueeze(1), emb[:, p:p + 1], w_op)
        bias = torch.baddbmm(bias, emb[:, p + 1:p + 2], w_eq)  # (S, 1, H)
        table = torch.cat([torch.baddbmm(bias, e_ops, w_a), torch.bmm(e_ops, w_b)], dim=1)
        # the lookup-and-sum in one memory pass
        h = F.embedding_bag(rows, table.view(s * 2 * p, -1), mode="sum").relu_()
        ctx.save_for_backward(emb, w1, rows, h)
        ctx.p = p  # type: ignore[attr-defined]
        return h.view(s, -1, h.shape[-1])

    @staticmethod
    def backward(ctx: torch.autograd.function.FunctionCtx,  # type: ignore[override]
                 grad: Tensor) -> tuple[Tensor | None, ...]:
        emb, w1, rows, h = ctx.saved_tensors  # type: ignore[attr-defined]
        p: int = ctx.p  # type: ignore[attr-defined]
        s, _, d = emb.shape
        hidden = h.shape[-1]
        grad = torch.where(h > 0, grad.reshape(h.shape), 0.0)
        # each example's gradient into its two table rows; the weight and embedding gradients
        # are then (p, H) products, the bias gradient the sum of Ta's rows (one per example)
        g_table = grad.new_zeros(s * 2 * p, hidden)
        g_table.index_add_(0, rows[:, 0], grad)
        g_table.index_add_(0, rows[:, 1], grad)
        g_table = g_table.view(s, 2 * p, hidden)
        g_a, g_b = g_table[:, :p], g_table[:, p:]
        grad_sum = g_a.sum(dim=1, keepdim=True)  # (S, 1, H): also the bias gradient
        e_ops, e_op, e_eq = emb[:, :p], emb[:, p:p + 1], emb[:, p + 1:p + 2]
        g_sum_t = grad_sum.transpose(1, 2)  # (S, H, 1)
        g_w1 = torch.cat([torch.bmm(g_a.transpose(1, 2), e_ops), g_sum_t * e_op,
                          torch.bmm(g_b.transpose(1, 2), e_ops), g_sum_t * e_eq], dim=2)
        g_emb = None
        if ctx.needs_input_grad[0]:  # type: ignore[attr-defined]
            w_a, w_op, w_b, w_eq = (w1[:, :, i * d:(i + 1) * d] for i in range(4))
            g_ops = torch.bmm(g_a, w_a).baddbmm_(g_b, w_b)  # (S, p, d)
            g_emb = torch.cat([g_ops, torch.bmm(grad_sum, w_op), torch.bmm(grad_sum, w_eq)],
                              dim=1)
        return g_emb, g_w1, grad_sum.squeeze(1), None, None


def embed_mlp_forward(model: BatchedModel, a: Tensor, b: Tensor) -> Tensor | None:
    """Paper 1's MLP with its first layer as table lookups, for batches of at least p rows
    (fewer multiply-adds); smaller batches take the derived form."""
    s, n = a.shape
    p = model.shape.p
    if n < p:
        return None
    w = model.params()
    rows = _stacked_rows(a, b, 2 * p, b_offset=p)  # a's table rows, then b's
    h = _OperandTableReLU.apply(w["embed.weight"], w["fc1.weight"], w["fc1.bias"],
                                rows.view(s * n, 2), p)
    return linear(model, "fc2", h)


def toy_sum_forward(model: BatchedModel, a: Tensor, b: Tensor) -> Tensor:
    """Paper 2's toy, hand-batched: one embedding lookup over the stacked tables, then the
    decoder as batched linear layers (`grokverify.engine.layers.linear`)."""
    s = a.shape[0]
    p = model.shape.p
    table = model.param("embed.weight").reshape(s * p, -1)
    z = F.embedding(_stacked_rows(a, b, p), table).sum(dim=2)
    h1 = torch.tanh(linear(model, "fc1", z))
    h2 = torch.tanh(linear(model, "fc2", h1))
    return linear(model, "fc3", h2)


class _ToyViews:
    """The toy step's parameter, transpose, gradient and table-row views, made once: each torch
    call is a GIL handoff when shards train side by side, and ~20 view calls were a measurable
    share of a step. Valid while the leaves and their .grad buffers stay the same tensors."""

    def __init__(self, model: BatchedModel):
        self.leaves = [(leaf, leaf.grad) for leaf in model.leaves]
        w = {k: v.detach() for k, v in model.params().items()}
        s = model.n_seeds
        self.table = w["embed.weight"].reshape(s * model.shape.p, -1)
        self.layers = {layer: (w[f"{layer}.weight"], w[f"{layer}.weight"].transpose(1, 2),
                               w[f"{layer}.bias"].unsqueeze(1)) for layer in ("fc1", "fc2", "fc3")}
        self.grads: dict[str, Tensor | None] = {}
        for name in model.names:
            leaf = model.leaf(name)
            self.grads[name] = None if leaf.grad is None else seed_view(leaf.grad,
                                                                        model.shapes[name])
        self.rows_key: tuple[int, int, torch.Size] | None = None
        self.rows = torch.empty(0)

    def valid(self, model: BatchedModel) -> bool:
        return all(leaf is now and grad is now.grad
                   for (leaf, grad), now in zip(self.leaves, model.leaves, strict=True))

    def table_rows(self, a: Tensor, b: Tensor, p: int) -> Tensor:
        key = (a.data_ptr(), b.data_ptr(), a.shape)
        if key != self.rows_key:  # full batch: the same rows every step
            self.rows = _stacked_rows(a, b, p)
            self.rows_key = key
        return self.rows


def _toy_views(model: BatchedModel, like: Tensor) -> _ToyViews:
    """The step's views, with a fitting .grad buffer for every trainable leaf (its padding 0,
    never written; a frozen leaf has none, as autograd would give)."""
    views: _ToyViews | None = model.__dict__.get("_toy_views")
    if views is not None and views.valid(model):
        return views
    for name in model.names:
        leaf, g = model.leaf(name), model.leaf(name).grad
        if not leaf.requires_grad:
            leaf.grad = None
        elif g is None or g.shape != leaf.shape or g.dtype != like.dtype or \
                g.device != like.device:
            leaf.grad = grad_like(like, leaf.shape, model.shapes[name])[0]
    views = model.__dict__["_toy_views"] = _ToyViews(model)
    return views


@torch.no_grad()
def toy_sum_step(model: BatchedModel, a: Tensor, b: Tensor, y: Tensor,
                 weight: Tensor) -> Tensor:
    """Paper 2's toy's training step by hand: the forward of `toy_sum_forward`, the loss and its
    gradient from the head, then each layer's weight, bias and input gradients written straight
    into the leaves' .grad buffers (tanh's backward in place)."""
    s, n = y.shape
    p = model.shape.p
    v = _toy_views(model, model.leaves[0])
    rows = v.table_rows(a, b, p)
    z = F.embedding(rows, v.table).sum(dim=2)
    e = z.shape[-1]
    layers = v.layers
    h1 = torch.baddbmm(layers["fc1"][2], z, layers["fc1"][1]).tanh_()
    h2 = torch.baddbmm(layers["fc2"][2], h1, layers["fc2"][1]).tanh_()
    out = torch.baddbmm(layers["fc3"][2], h2, layers["fc3"][1])
    loss, g = model.head.mean_loss_and_grad(out, y, model.buffer("targets"))
    g.mul_(weight.view(s, 1, 1))
    for x, layer in ((h2, "fc3"), (h1, "fc2"), (z, "fc1")):  # weight, bias, input gradients
        if (g_w := v.grads[f"{layer}.weight"]) is not None:
            torch.bmm(g.transpose(1, 2), x, out=g_w)
        if (g_b := v.grads[f"{layer}.bias"]) is not None:
            torch.sum(g, dim=1, out=g_b)
        if x is not z:
            g = torch.bmm(g, layers[layer][0])
            g = torch.ops.aten.tanh_backward.grad_input(g, x, grad_input=g)
    if (g_e := v.grads["embed.weight"]) is not None:
        g_z = torch.bmm(g, layers["fc1"][0])  # (S, B, e)
        flat = g_e.view(s * p, e).zero_()  # E[a] + E[b]: both rows get g_z
        flat.index_add_(0, rows.reshape(-1), g_z.unsqueeze(2).expand(s, n, 2, e).reshape(-1, e))
    return loss


FAST_PATHS: dict[str, FastPath] = {
    "embed_mlp": FastPath(forward=embed_mlp_forward),
    "toy_sum": FastPath(forward=toy_sum_forward, step=toy_sum_step),
}


def fast_path_for(spec: ModelSpec, fast: bool = True) -> FastPath:
    """The model kind's fast path, or none (the derived form only) when `fast` is off."""
    return FAST_PATHS.get(spec.kind, FastPath()) if fast else FastPath()  # type: ignore[attr-defined]
