"""Seed-batched models: every parameter has a leading seed dimension S.

Each seed's parameters are drawn from that seed's own generator, in a fixed order, before the
seeds are stacked, so seed i of a batch starts exactly where seed i trained alone starts. Linear
layers are `baddbmm` over the seed dimension; seeds never mix, and the loss is the sum over seeds
of each seed's mean loss, so each seed gets exactly its own gradient.

For speed the forward pass is split in two: `encode(a, b)` turns operand indices into the
model's input tensor (operand pairs or embedding rows with per-seed offsets, or raw scalars),
which the trainer computes once per run, and `forward_encoded(x)` runs the network.
`forward(a, b)` is the two together. A training step is `loss_and_grads` (autograd, or a
hand-written backward where a model's small matrices make autograd's overhead count).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import torch
import torch.nn.functional as F
from pydantic import Field
from torch import Tensor, nn

from grokverify.rng import torch_generator
from grokverify.specbase import Int, StrictModel


@dataclass(frozen=True)
class DataShape:
    """What a model needs to know about its task."""

    p: int  # operand values 0..p-1
    vocab: int  # p operands + op token (p) + "=" token (p + 1)
    n_classes: int


# ---------------------------------------------------------------- specs (one per model kind)


class EmbedMLPSpec(StrictModel):
    """Paper 1: concatenated embeddings of [a, op, b, =] → Linear → ReLU → Linear."""

    kind: Literal["embed_mlp"]
    d: Int = Field(128, ge=1, description="embedding width")
    hidden: Int = Field(512, ge=1, description="hidden width (paper: 4d)")
    emb_init_std: float = Field(1.0, gt=0, description="std of the N(0, std²) embedding init")


class ScalarMLPSpec(StrictModel):
    """Paper 1's baseline: raw scalars [a, p, b, p+1], no embedding → Linear → ReLU → Linear."""

    kind: Literal["scalar_mlp"]
    hidden: Int = Field(512, ge=1)


class ToySumSpec(StrictModel):
    """Paper 2's toy: Dec(E_a + E_b), decoder emb_dim → hidden → hidden → out with tanh."""

    kind: Literal["toy_sum"]
    emb_dim: Int = Field(1, ge=1)
    hidden: Int = Field(200, ge=1)
    init_scale: float = Field(1.0, gt=0, description="embeddings drawn from U[-s/2, s/2]")
    output: Literal["classification", "regression"] = "classification"
    target_dim: Int = Field(30, ge=1, description="regression: dimension of the random targets")


# ---------------------------------------------------------------- batched building blocks


def _uniform(gen: torch.Generator, shape: tuple[int, ...], bound: float) -> Tensor:
    return (torch.rand(shape, generator=gen) * 2 - 1) * bound


def _linear_init(gen: torch.Generator, fan_in: int, fan_out: int) -> tuple[Tensor, Tensor]:
    """torch.nn.Linear's default: U(±1/√fan_in) for weight and bias. Weight stored (in, out)."""
    bound = 1.0 / math.sqrt(fan_in)
    return _uniform(gen, (fan_in, fan_out), bound), _uniform(gen, (1, fan_out), bound)


# CPU elementwise kernels, the fused optimizers among them, run vector instructions over a
# tensor and finish its last (numel mod vector width) elements with scalar code that rounds
# differently. A seed whose values fall in that tail when it trains alone but not in a batch
# would not train bit-identically, so a parameter whose per-seed size is not a multiple of
# _ALIGN elements is stored flat, zero-padded to a multiple of _ALIGN (no tail for any seed
# count), and viewed as (S, ...). The padding gets no gradient and stays 0.
_ALIGN = 64


def _padded_leaf(t: Tensor) -> nn.Parameter:
    per_seed = t[0].numel()
    if per_seed % _ALIGN == 0:
        return nn.Parameter(t)
    flat = t.new_zeros(-(-t.numel() // _ALIGN) * _ALIGN)
    flat[:t.numel()] = t.reshape(-1)
    return nn.Parameter(flat)


def seed_view(t: Tensor, shape: torch.Size) -> Tensor:
    """A parameter's leaf (or its gradient, or an optimizer state shaped like it) as (S, ...)."""
    return t if t.shape == shape else t[:shape.numel()].view(shape)


def _affine(x: Tensor, w: Tensor, b: Tensor) -> Tensor:
    """x (S, B, in) @ w (S, in, out) + b (S, 1, out). With in = 1 (paper 2's 1-d embeddings)
    the product is an outer product, computed elementwise: MKL rounds a one-matrix and a
    batched rank-1 update differently, which would make a seed's result depend on S. (One
    fused `addcmul` pass is faster but rounds like neither, and plain training's trajectory
    then drifts past the equivalence test's tolerance within 100 steps.)"""
    if x.shape[-1] == 1:
        return (x * w).add_(b)  # the same roundings as x * w + b, one buffer fewer
    return torch.baddbmm(b, x, w)


def _cross_entropy_each(out: Tensor, y: Tensor) -> Tensor:
    """Cross-entropy (S, B) of each example's logits (S, B, C) against its label (S, B)."""
    s, n, c = out.shape
    return F.cross_entropy(out.reshape(s * n, c), y.reshape(-1), reduction="none").view(s, n)


def _cross_entropy(out: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
    return _cross_entropy_each(out, y), out.argmax(dim=-1) == y


def _seed_offsets(n_seeds: int, rows_per_seed: int, device: torch.device) -> Tensor:
    """(S, 1, 1): the first row of each seed's table in the flattened (S * rows, d) table (made
    on the device: no host-to-device copy)."""
    return (torch.arange(n_seeds, device=device) * rows_per_seed).view(n_seeds, 1, 1)


_GradCache = tuple[list[tuple[nn.Parameter, Tensor | None]], dict[str, Tensor]]


class BatchedModel(nn.Module):
    """A model over S seeds. Subclasses define `init_seed`, `encode` and `forward_encoded`, and
    may override `example_losses`, `train_loss` and `loss_and_grads` (they must agree on the
    loss)."""

    spec_class: ClassVar[type[StrictModel]]
    embedding_keys: ClassVar[tuple[str, ...]] = ()

    def __init__(self, spec: StrictModel, shape: DataShape, seeds: list[int]):
        super().__init__()
        self.spec, self.shape = spec, shape
        context = f"{spec.canonical()}|{shape}"
        per_seed = [self.init_seed(torch_generator(seed, "init", context)) for seed in seeds]
        stacked = {k: torch.stack([p[k] for p in per_seed]) for k in per_seed[0]}
        self.leaves = nn.ParameterDict({k: _padded_leaf(t) for k, t in stacked.items()})
        self.shapes = {k: t.shape for k, t in stacked.items()}
        buffers = [self.init_buffers(torch_generator(seed, "targets", context)) for seed in seeds]
        for key in buffers[0]:
            self.register_buffer(key, torch.stack([b[key] for b in buffers]))
        self.n_seeds = len(seeds)
        self._grad_cache: _GradCache | None = None
        self._detached: tuple[tuple[int, ...], dict[str, Tensor]] | None = None

    def param(self, key: str) -> Tensor:
        """Parameter `key` as (S, ...) (a view of its leaf when the leaf is padded)."""
        return seed_view(self.leaves[key], self.shapes[key])

    def grad(self, key: str) -> Tensor | None:
        """The gradient of parameter `key` as (S, ...)."""
        leaf = self.leaves[key]
        return None if leaf.grad is None else seed_view(leaf.grad, self.shapes[key])

    @property
    def params(self) -> dict[str, Tensor]:
        return {key: self.param(key) for key in self.leaves}

    def detached_params(self) -> dict[str, Tensor]:
        """`params` without autograd history, for a hand-written step: (S, ...) views made once
        and kept while the leaves keep their storage (the optimizer updates them in place), so
        a step does not rebuild a view per parameter."""
        key = tuple(leaf.data_ptr() for leaf in self.leaves.values())
        if self._detached is None or self._detached[0] != key:
            with torch.no_grad():
                self._detached = key, {k: seed_view(leaf.detach(), self.shapes[k])
                                       for k, leaf in self.leaves.items()}
        return self._detached[1]

    @property
    def seed_shapes(self) -> dict[nn.Parameter, torch.Size]:
        """Each leaf's (S, ...) shape, for `seed_view` on it, its gradient or optimizer state."""
        return {leaf: self.shapes[key] for key, leaf in self.leaves.items()}

    def init_seed(self, gen: torch.Generator) -> dict[str, Tensor]:
        raise NotImplementedError

    def init_buffers(self, gen: torch.Generator) -> dict[str, Tensor]:
        return {}

    def encode(self, a: Tensor, b: Tensor) -> Tensor:
        """The network's input for operands a, b of shape (..., S, B): any leading dims (e.g. a
        block of steps) are kept, so the trainer encodes a whole evaluation interval at once."""
        raise NotImplementedError

    def forward_encoded(self, x: Tensor) -> Tensor:
        """Outputs (S, B, out) for one encoded batch x (S, B, ...)."""
        raise NotImplementedError

    def forward(self, a: Tensor, b: Tensor) -> Tensor:
        return self.forward_encoded(self.encode(a, b))

    def example_losses(self, out: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
        """Each example's loss and correctness, (S, B) each: an evaluation in blocks of rows
        averages the losses once at the end, so the result does not depend on the blocks."""
        return _cross_entropy(out, y)

    def train_loss(self, out: Tensor, y: Tensor) -> Tensor:
        """Per-seed mean loss (S,) alone: what a training step needs (no argmax)."""
        return _cross_entropy_each(out, y).mean(dim=1)

    def loss_and_grads(self, x: Tensor, y: Tensor, weight: Tensor) -> Tensor:
        """A training step's forward and backward: the per-seed losses (S,), detached, with every
        leaf's .grad set to the gradient of sum_i weight_i * loss_i (weight 0 for a diverged
        seed): set, not accumulated, so a trainer needs no zero_grad. By autograd here; a model
        may hand-write it (`ToySum`)."""
        for leaf in self.leaves.values():
            leaf.grad = None
        loss = self.train_loss(self.forward_encoded(x), y)
        loss.backward(weight)
        return loss.detach()

    def _grad_buffers(self) -> dict[str, Tensor]:
        """(S, ...) views of every leaf's .grad for a hand-written backward to overwrite. The
        buffers persist from step to step (no allocation a step, the same memory warm in the
        cache); a padded leaf's padding starts at 0 and is never written. A frozen leaf gets a
        scratch buffer that is not its .grad: its gradient is computed and dropped."""
        cached = self._grad_cache
        if cached is not None and all(leaf.grad is g and leaf.requires_grad == (g is not None)
                                      for leaf, g in cached[0]):
            return cached[1]
        owners, views = [], {}
        for key, leaf in self.leaves.items():
            if not leaf.requires_grad:
                leaf.grad = None
                views[key] = leaf.new_zeros(self.shapes[key])
            else:
                if leaf.grad is None or leaf.grad.shape != leaf.shape:
                    leaf.grad = torch.zeros_like(leaf)
                views[key] = seed_view(leaf.grad, self.shapes[key])
            owners.append((leaf, leaf.grad))
        self._grad_cache = owners, views
        return views

    def _apply(self, fn: Any, recurse: bool = True) -> BatchedModel:  # .to(), .double(), ...
        self._grad_cache = self._detached = None
        return super()._apply(fn, recurse)

    def param_groups(self) -> dict[str, list[nn.Parameter]]:
        emb = [self.leaves[k] for k in self.embedding_keys]
        rest = [p for k, p in self.leaves.items() if k not in self.embedding_keys]
        return {"embedding": emb, "decoder": rest} if emb else {"decoder": rest}


def _relu_backward(grad: Tensor, h: Tensor) -> Tensor:
    """The ReLU's backward, in place on the incoming gradient when that is a fresh buffer (the
    next layer's backward has just allocated it and nothing else holds it): on a CPU these
    (S, B, H) passes are memory-bound, and each fresh buffer costs cache misses."""
    if grad.is_contiguous() and not grad.requires_grad:
        return torch.ops.aten.threshold_backward.grad_input(grad, h, 0.0, grad_input=grad)
    return torch.ops.aten.threshold_backward(grad, h, 0.0)


def _const_bias(e_const: Tensor, w1: Tensor, b1: Tensor) -> Tensor:
    """(S, 1, H): b1 plus the op and "=" tokens' part of x @ W1, the same in every example."""
    s, _, d = e_const.shape
    return torch.baddbmm(b1, e_const.reshape(s, 1, 2 * d), w1[:, 2 * d:])


def _const_grads(e_const: Tensor, w1: Tensor, grad_sum: Tensor, g_w1: Tensor,
                 needs_e: bool) -> Tensor | None:
    """The constant tokens' weight gradient (an outer product with the batch sum of the output
    gradient, written into g_w1) and their embedding gradient (a matrix-vector product)."""
    s, _, d = e_const.shape
    torch.mul(e_const.reshape(s, 2 * d, 1), grad_sum, out=g_w1[:, 2 * d:])
    if not needs_e:
        return None
    return torch.bmm(grad_sum, w1[:, 2 * d:].transpose(1, 2)).view_as(e_const)


class _OperandLinearReLU(torch.autograd.Function):
    """Paper 1's first layer and its ReLU, relu(x @ W1 + b1) with x = [E[a], E[op], E[b], E[=]],
    computed without the matmul work of the two constant tokens (used for batches of fewer
    rows than operand values; `_OperandTableReLU` otherwise).

    The op and "=" rows are the same in every example, so their part of x @ W1 is one vector
    per seed, folded into the bias: [E[a], E[b]] @ W1[a, b rows] + (E[op] @ W1[op rows] +
    E[=] @ W1[= rows] + b1). Backward likewise: their weight gradient is an outer product with
    the batch sum of the output gradient, and their input gradient a matrix-vector product.
    The same function and gradients as the plain layer (up to float rounding: sums are ordered
    differently) with the forward, input-gradient and weight-gradient matmuls half as wide.
    W1 is stored with its rows in the order [a, b, op, =] (see `EmbedMLP`), so both halves are
    views and the weight gradient is written in place. Bias and ReLU are one in-place pass
    over the fresh matmul output.
    """

    @staticmethod
    def forward(ctx: torch.autograd.function.FunctionCtx, x_ab: Tensor, e_const: Tensor,
                w1: Tensor, b1: Tensor) -> Tensor:
        two_d = x_ab.shape[2]
        bias = _const_bias(e_const, w1, b1)
        h = torch.ops.aten._add_relu_(torch.bmm(x_ab, w1[:, :two_d]), bias)  # one pass
        ctx.save_for_backward(x_ab, e_const, w1, h)
        return h

    @staticmethod
    def backward(ctx: torch.autograd.function.FunctionCtx,  # type: ignore[override]
                 grad: Tensor) -> tuple[Tensor | None, ...]:
        x_ab, e_const, w1, h = ctx.saved_tensors  # type: ignore[attr-defined]
        two_d = x_ab.shape[2]
        grad = _relu_backward(grad, h)
        grad_sum = grad.sum(dim=1, keepdim=True)  # (S, 1, H): also the bias gradient
        g_w1 = grad.new_empty(w1.shape)
        torch.bmm(x_ab.transpose(1, 2), grad, out=g_w1[:, :two_d])
        g_e = _const_grads(e_const, w1, grad_sum, g_w1, ctx.needs_input_grad[1])
        g_x = torch.bmm(grad, w1[:, :two_d].transpose(1, 2)) if ctx.needs_input_grad[0] \
            else None
        return g_x, g_e, g_w1, grad_sum


class _OperandTableReLU(torch.autograd.Function):
    """The same layer as `_OperandLinearReLU` for batches of at least p rows, as lookups.

    An operand takes only p values, so E[a] @ W1[a rows] is a row of the (p, H) table
    Ta = E[:p] @ W1[a rows], and likewise Tb for b: relu(x @ W1 + b1) = relu(Ta'[a] + Tb[b])
    with the bias and the constant tokens folded into Ta'. Building the tables costs
    2 p d H multiply-adds per seed instead of the batch's B 2d H, and the lookup-and-sum is one
    memory pass (`embedding_bag`). Backward: the output gradient's rows are summed into the
    tables' rows (index_add), then the weight and embedding gradients are (p, H) matmuls, and
    the bias gradient is the sum of Ta's gradient rows (each example adds to exactly one).
    `rows` (S * B, 2) holds each example's rows of the stacked (S * 2p, H) tables.
    """

    @staticmethod
    def forward(ctx: torch.autograd.function.FunctionCtx, emb: Tensor, w1: Tensor, b1: Tensor,
                rows: Tensor, p: int) -> Tensor:
        s, _, d = emb.shape
        e_ops = emb[:, :p]
        bias = _const_bias(emb[:, p:p + 2], w1, b1)
        table = torch.cat([torch.baddbmm(bias, e_ops, w1[:, :d]),
                           torch.bmm(e_ops, w1[:, d:2 * d])], dim=1)  # (S, 2p, H)
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
        grad = _relu_backward(grad.reshape(h.shape), h)
        g_table = grad.new_zeros(s, 2 * p, h.shape[-1])
        for j in range(2):  # a's rows, then b's
            g_table.view(-1, h.shape[-1]).index_add_(0, rows[:, j], grad)
        g_a, g_b = g_table[:, :p], g_table[:, p:]
        grad_sum = g_a.sum(dim=1, keepdim=True)  # (S, 1, H): also the bias gradient
        e_ops, e_const = emb[:, :p], emb[:, p:p + 2]
        g_w1 = grad.new_empty(w1.shape)
        torch.bmm(e_ops.transpose(1, 2), g_a, out=g_w1[:, :d])
        torch.bmm(e_ops.transpose(1, 2), g_b, out=g_w1[:, d:2 * d])
        needs_e = ctx.needs_input_grad[0]
        g_e_const = _const_grads(e_const, w1, grad_sum, g_w1, needs_e)
        g_emb = None
        if needs_e:  # rows [operands, op, =]: the whole vocabulary
            g_ops = torch.bmm(g_a, w1[:, :d].transpose(1, 2))
            g_ops.baddbmm_(g_b, w1[:, d:2 * d].transpose(1, 2))  # contiguous: one batched call
            g_emb = torch.cat([g_ops, g_e_const], dim=1)
        return g_emb, g_w1, grad_sum, None, None


# W1's rows for [a, op, b, =] (nn.Linear's input order) stored as [a, b, op, =]; an involution.
_W1_ORDER = [0, 2, 1, 3]


def _reorder_w1(w1: Tensor) -> Tensor:
    """Swap the op and b row blocks of W1 (..., 4d, H): nn.Linear order <-> stored order."""
    return w1.unflatten(-2, (4, -1))[..., _W1_ORDER, :, :].flatten(-3, -2)


class EmbedMLP(BatchedModel):
    """W1 (4d, H) is stored with its row blocks in the order [a, b, op, =] (`_OperandLinearReLU`);
    it is drawn in nn.Linear's order [a, op, b, =] and reordered, so the weights are the same."""

    spec_class = EmbedMLPSpec
    embedding_keys = ("E",)
    table_rows: Tensor
    embedding_rows: Tensor

    def __init__(self, spec: StrictModel, shape: DataShape, seeds: list[int]):
        super().__init__(spec, shape, seeds)
        # Added to operand pairs (S, B, 2): their rows in the S stacked (2p, H) tables of the
        # table path (b's rows after a's), and in the S stacked (vocab, d) embedding tables of
        # the matmul path. Buffers, so they move with the model and cost nothing per step.
        cpu, s = torch.device("cpu"), self.n_seeds
        self.register_buffer("table_rows", _seed_offsets(s, 2 * shape.p, cpu)
                             + torch.tensor([0, shape.p]), persistent=False)
        self.register_buffer("embedding_rows", _seed_offsets(s, shape.vocab, cpu),
                             persistent=False)

    def init_seed(self, gen: torch.Generator) -> dict[str, Tensor]:
        spec, shape = self.spec, self.shape
        emb = torch.randn((shape.vocab, spec.d), generator=gen) * spec.emb_init_std
        w1, b1 = _linear_init(gen, 4 * spec.d, spec.hidden)
        w2, b2 = _linear_init(gen, spec.hidden, shape.n_classes)
        return {"E": emb, "W1": _reorder_w1(w1), "b1": b1, "W2": w2, "b2": b2}

    def encode(self, a: Tensor, b: Tensor) -> Tensor:
        """The operand pairs (..., S, B, 2) (the op and "=" tokens are the same in every
        example); `forward_encoded` turns them into rows of the seeds' stacked tables."""
        return torch.stack([a, b], dim=-1)

    def forward_encoded(self, x: Tensor) -> Tensor:
        """The first layer as table lookups when the batch has at least p rows (fewer
        multiply-adds), else as a matmul over the gathered embeddings. The choice depends on
        the batch's rows and p only, never on the number of seeds: a seed's result must not."""
        s, n, _ = x.shape
        p, emb, w1, b1 = self.shape.p, self.param("E"), self.param("W1"), self.param("b1")
        if n >= p:
            rows = x + self.table_rows
            h = _OperandTableReLU.apply(emb, w1, b1, rows.view(s * n, 2), p)
        else:
            rows = x + self.embedding_rows
            table = emb.reshape(s * self.shape.vocab, -1)
            x_ab = torch.index_select(table, 0, rows.reshape(-1)).view(s, n, -1)  # [E[a], E[b]]
            h = _OperandLinearReLU.apply(x_ab, emb[:, p:p + 2], w1, b1)
        return _affine(h, self.param("W2"), self.param("b2"))


class ScalarMLP(BatchedModel):
    spec_class = ScalarMLPSpec

    def init_seed(self, gen: torch.Generator) -> dict[str, Tensor]:
        w1, b1 = _linear_init(gen, 4, self.spec.hidden)
        w2, b2 = _linear_init(gen, self.spec.hidden, self.shape.n_classes)
        return {"W1": w1, "b1": b1, "W2": w2, "b2": b2}

    def encode(self, a: Tensor, b: Tensor) -> Tensor:
        p = self.shape.p
        x = torch.stack([a, torch.full_like(a, p), b, torch.full_like(a, p + 1)], dim=-1)
        return x.to(self.param("W1").dtype)

    def forward_encoded(self, x: Tensor) -> Tensor:
        h = _affine(x, self.param("W1"), self.param("b1")).relu_()
        return _affine(h, self.param("W2"), self.param("b2"))


class ToySum(BatchedModel):
    spec_class = ToySumSpec
    embedding_keys = ("E",)

    def _out_dim(self) -> int:
        regression = self.spec.output == "regression"
        return self.spec.target_dim if regression else self.shape.n_classes

    def init_seed(self, gen: torch.Generator) -> dict[str, Tensor]:
        spec = self.spec
        emb = _uniform(gen, (self.shape.p, spec.emb_dim), spec.init_scale / 2)
        w1, b1 = _linear_init(gen, spec.emb_dim, spec.hidden)
        w2, b2 = _linear_init(gen, spec.hidden, spec.hidden)
        w3, b3 = _linear_init(gen, spec.hidden, self._out_dim())
        return {"E": emb, "W1": w1, "b1": b1, "W2": w2, "b2": b2, "W3": w3, "b3": b3}

    def init_buffers(self, gen: torch.Generator) -> dict[str, Tensor]:
        if self.spec.output != "regression":
            return {}
        return {"targets": torch.randn((self.shape.n_classes, self.spec.target_dim), generator=gen)}

    def encode(self, a: Tensor, b: Tensor) -> Tensor:
        """Rows of the flattened (S * p, emb_dim) table: (..., S, B, 2) for [a, b]."""
        return torch.stack([a, b], dim=-1) + _seed_offsets(self.n_seeds, self.shape.p, a.device)

    def _hidden(self, x: Tensor, w: dict[str, Tensor]) -> tuple[Tensor, Tensor, Tensor]:
        """z = E[a] + E[b] (S, B, emb_dim) and the two tanh layers' outputs (w: `params`)."""
        table = w["E"].reshape(x.shape[0] * self.shape.p, -1)
        z = F.embedding(x, table).sum(dim=2)
        h1 = _affine(z, w["W1"], w["b1"]).tanh_()
        return z, h1, _affine(h1, w["W2"], w["b2"]).tanh_()

    def forward_encoded(self, x: Tensor) -> Tensor:
        w = self.params
        return _affine(self._hidden(x, w)[2], w["W3"], w["b3"])

    def _errors(self, out: Tensor, y: Tensor) -> Tensor:
        """Regression: each output's difference from its class's target (S, B, target_dim)."""
        return out - torch.gather(self.targets, 1, y.unsqueeze(-1).expand(-1, -1, out.shape[-1]))

    def _squared_errors(self, out: Tensor, y: Tensor) -> Tensor:
        return self._errors(out, y) ** 2

    def _loss_and_output_grad(self, out: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
        """Per-seed mean loss (S,) and its gradient with respect to out (S, B, C)."""
        n = out.shape[1]
        if self.spec.output == "regression":
            diff = self._errors(out, y)
            loss = (diff * diff).mean(dim=(1, 2))
            return loss, diff.mul_(2.0 / (n * out.shape[2]))
        logp = torch.log_softmax(out, dim=-1)
        label = y.unsqueeze(-1)
        loss = -logp.gather(-1, label).squeeze(-1).mean(dim=1)
        grad = logp.exp_().scatter_add_(-1, label, torch.full_like(label, -1, dtype=out.dtype))
        return loss, grad.mul_(1.0 / n)

    @torch.no_grad()
    def loss_and_grads(self, x: Tensor, y: Tensor, weight: Tensor) -> Tensor:
        """The toy's step with a hand-written backward: the same function and gradients as
        autograd's (float64 test), without a graph, with the tanh backward in place and each
        gradient written straight into its leaf's persistent .grad. The toy's matrices are
        small, so autograd's per-node cost and extra passes were ~10% of a step, and per-step
        Python (views, fresh buffers) another ~5%."""
        s, n = y.shape
        w = self.detached_params()
        z, h1, h2 = self._hidden(x, w)
        emb_dim = z.shape[-1]
        loss, g = self._loss_and_output_grad(_affine(h2, w["W3"], w["b3"]), y)
        g.mul_(weight.view(s, 1, 1))
        grads = self._grad_buffers()
        for h, key in ((h2, "3"), (h1, "2")):  # layers 3 and 2: weight, bias, input gradients
            torch.bmm(h.transpose(1, 2), g, out=grads["W" + key])
            torch.sum(g, dim=1, keepdim=True, out=grads["b" + key])
            g = torch.bmm(g, w["W" + key].transpose(1, 2))
            g = torch.ops.aten.tanh_backward.grad_input(g, h, grad_input=g)
        torch.sum(g, dim=1, keepdim=True, out=grads["b1"])
        if emb_dim == 1:  # layer 1 is elementwise (see `_affine`)
            torch.sum(g * z, dim=1, keepdim=True, out=grads["W1"])
            g_z = (g * w["W1"]).sum(dim=-1, keepdim=True)
        else:
            torch.bmm(z.transpose(1, 2), g, out=grads["W1"])
            g_z = torch.bmm(g, w["W1"].transpose(1, 2))
        g_e = grads["E"].view(s * self.shape.p, emb_dim).zero_()  # E[a] + E[b]: both rows
        g_e.index_add_(0, x.reshape(-1), g_z.unsqueeze(2).expand(s, n, 2, emb_dim)
                       .reshape(-1, emb_dim))
        return loss

    def example_losses(self, out: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
        if self.spec.output != "regression":
            return _cross_entropy(out, y)
        # Regression to fixed random targets; the prediction is the nearest target.
        nearest = torch.cdist(out, self.targets).argmin(dim=-1)
        return self._squared_errors(out, y).mean(dim=2), nearest == y

    def train_loss(self, out: Tensor, y: Tensor) -> Tensor:
        if self.spec.output != "regression":
            return super().train_loss(out, y)
        return self._squared_errors(out, y).mean(dim=(1, 2))


# ---------------------------------------------------------------- plain per-seed reference


class PlainModel(nn.Module):
    """One seed as peer code writes it: nn.Embedding + nn.Linear, (B,) inputs, scalar loss.

    The reference the engine is checked and timed against (tests/test_engine_equivalence.py,
    benchmarks/throughput.py). `load_seed` copies seed i of a batched model into it.
    """

    # batched parameter name -> attribute path of the plain module's parameter
    names: ClassVar[dict[str, str]]
    embedding_names: ClassVar[tuple[str, ...]] = ()

    def __init__(self, spec: StrictModel, shape: DataShape):
        super().__init__()
        self.spec, self.shape = spec, shape

    def loss(self, out: Tensor, y: Tensor) -> Tensor:
        return F.cross_entropy(out, y)

    def predict(self, out: Tensor) -> Tensor:
        return out.argmax(dim=-1)

    def param_groups(self) -> dict[str, list[nn.Parameter]]:
        emb = [self.get_parameter(self.names[k]) for k in self.embedding_names]
        rest = [self.get_parameter(v) for k, v in self.names.items()
                if k not in self.embedding_names]
        return {"embedding": emb, "decoder": rest} if emb else {"decoder": rest}

    def _to_batched(self, key: str, value: Tensor) -> Tensor:
        """A plain parameter in the batched layout (one seed): weights (in, out), biases
        (1, out), where nn.Linear has (out, in) and (out,)."""
        if key.startswith("W"):
            return value.T
        return value.reshape(1, -1) if key.startswith("b") else value

    def _from_batched(self, key: str, value: Tensor) -> Tensor:
        return value.T if key.startswith("W") else value.reshape(-1) if key.startswith("b") \
            else value

    def batched_params(self) -> dict[str, Tensor]:
        """This module's parameters as one seed of a batched model (detached views/copies)."""
        return {key: self._to_batched(key, self.get_parameter(name).detach())
                for key, name in self.names.items()}

    @torch.no_grad()
    def load_seed(self, batched: BatchedModel, i: int) -> PlainModel:
        for key, name in self.names.items():
            self.get_parameter(name).copy_(self._from_batched(key, batched.params[key][i]))
        for key, buf in batched.named_buffers():
            if key in dict(self.named_buffers()):
                self.get_buffer(key).copy_(buf[i])
        return self


class PlainEmbedMLP(PlainModel):
    names = {"E": "embed.weight", "W1": "fc1.weight", "b1": "fc1.bias", "W2": "fc2.weight",
             "b2": "fc2.bias"}
    embedding_names = ("E",)

    def __init__(self, spec: EmbedMLPSpec, shape: DataShape):
        super().__init__(spec, shape)
        self.embed = nn.Embedding(shape.vocab, spec.d)
        self.fc1 = nn.Linear(4 * spec.d, spec.hidden)
        self.fc2 = nn.Linear(spec.hidden, shape.n_classes)

    def forward(self, a: Tensor, b: Tensor) -> Tensor:
        p = self.shape.p
        tokens = torch.stack([a, torch.full_like(a, p), b, torch.full_like(a, p + 1)], dim=-1)
        return self.fc2(torch.relu(self.fc1(self.embed(tokens).flatten(1))))

    def _to_batched(self, key: str, value: Tensor) -> Tensor:
        value = super()._to_batched(key, value)
        return _reorder_w1(value) if key == "W1" else value

    def _from_batched(self, key: str, value: Tensor) -> Tensor:
        return super()._from_batched(key, _reorder_w1(value) if key == "W1" else value)


class PlainScalarMLP(PlainModel):
    names = {"W1": "fc1.weight", "b1": "fc1.bias", "W2": "fc2.weight", "b2": "fc2.bias"}

    def __init__(self, spec: ScalarMLPSpec, shape: DataShape):
        super().__init__(spec, shape)
        self.fc1 = nn.Linear(4, spec.hidden)
        self.fc2 = nn.Linear(spec.hidden, shape.n_classes)

    def forward(self, a: Tensor, b: Tensor) -> Tensor:
        p = self.shape.p
        x = torch.stack([a, torch.full_like(a, p), b, torch.full_like(a, p + 1)], dim=-1)
        return self.fc2(torch.relu(self.fc1(x.float())))


class PlainToySum(PlainModel):
    names = {"E": "embed.weight", "W1": "fc1.weight", "b1": "fc1.bias", "W2": "fc2.weight",
             "b2": "fc2.bias", "W3": "fc3.weight", "b3": "fc3.bias"}
    embedding_names = ("E",)

    def __init__(self, spec: ToySumSpec, shape: DataShape):
        super().__init__(spec, shape)
        regression = spec.output == "regression"
        out = spec.target_dim if regression else shape.n_classes
        self.embed = nn.Embedding(shape.p, spec.emb_dim)
        self.fc1 = nn.Linear(spec.emb_dim, spec.hidden)
        self.fc2 = nn.Linear(spec.hidden, spec.hidden)
        self.fc3 = nn.Linear(spec.hidden, out)
        if regression:
            self.register_buffer("targets", torch.zeros(shape.n_classes, spec.target_dim))

    def forward(self, a: Tensor, b: Tensor) -> Tensor:
        x = self.embed(a) + self.embed(b)
        return self.fc3(torch.tanh(self.fc2(torch.tanh(self.fc1(x)))))

    def loss(self, out: Tensor, y: Tensor) -> Tensor:
        if self.spec.output != "regression":
            return F.cross_entropy(out, y)
        return ((out - self.targets[y]) ** 2).mean()

    def predict(self, out: Tensor) -> Tensor:
        if self.spec.output != "regression":
            return out.argmax(dim=-1)
        return torch.cdist(out, self.targets).argmin(dim=-1)


MODELS: dict[str, type[BatchedModel]] = {
    "embed_mlp": EmbedMLP,
    "scalar_mlp": ScalarMLP,
    "toy_sum": ToySum,
}


def build_model(spec: StrictModel, shape: DataShape, seeds: list[int]) -> BatchedModel:
    return MODELS[spec.kind](spec, shape, seeds)  # type: ignore[attr-defined]


PLAIN_MODELS: dict[str, type[PlainModel]] = {
    "embed_mlp": PlainEmbedMLP,
    "scalar_mlp": PlainScalarMLP,
    "toy_sum": PlainToySum,
}


def plain_model(batched: BatchedModel, seed_index: int) -> PlainModel:
    """Seed `seed_index` of a batched model as a plain per-seed module with the same weights."""
    kind = batched.spec.kind  # type: ignore[attr-defined]
    return PLAIN_MODELS[kind](batched.spec, batched.shape).load_seed(batched, seed_index)
