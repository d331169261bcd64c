"""Seed-batched models: every parameter has a leading seed dimension S.

Each seed's parameters are drawn from that seed's own generator, in a fixed order, before the
seeds are stacked, so seed i of a batch starts exactly where seed i trained alone starts. Linear
layers are `baddbmm` over the seed dimension; seeds never mix, and the loss is the sum over seeds
of each seed's mean loss, so each seed gets exactly its own gradient.

For speed the forward pass is split in two: `encode(a, b)` turns operand indices into the
model's input tensor (embedding rows with per-seed offsets, or raw scalars), which the trainer
computes once per evaluation interval (or once per run for full-batch training), and
`forward_encoded(x)` runs the network. `forward(a, b)` is the two together.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar, Literal

import torch
import torch.nn.functional as F
from pydantic import Field
from torch import Tensor, nn

from grokverify.rng import torch_generator
from grokverify.specbase import StrictModel


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
    d: int = Field(128, ge=1, description="embedding width")
    hidden: int = Field(512, ge=1, description="hidden width (paper: 4d)")
    emb_init_std: float = Field(1.0, gt=0, description="std of the N(0, std²) embedding init")


class ScalarMLPSpec(StrictModel):
    """Paper 1's baseline: raw scalars [a, p, b, p+1], no embedding → Linear → ReLU → Linear."""

    kind: Literal["scalar_mlp"]
    hidden: int = Field(512, ge=1)


class ToySumSpec(StrictModel):
    """Paper 2's toy: Dec(E_a + E_b), decoder emb_dim → hidden → hidden → out with tanh."""

    kind: Literal["toy_sum"]
    emb_dim: int = Field(1, ge=1)
    hidden: int = Field(200, ge=1)
    init_scale: float = Field(1.0, gt=0, description="embeddings drawn from U[-s/2, s/2]")
    output: Literal["classification", "regression"] = "classification"
    target_dim: int = Field(30, ge=1, description="regression: dimension of the random targets")


# ---------------------------------------------------------------- batched building blocks


def _uniform(gen: torch.Generator, shape: tuple[int, ...], bound: float) -> Tensor:
    return (torch.rand(shape, generator=gen) * 2 - 1) * bound


def _linear_init(gen: torch.Generator, fan_in: int, fan_out: int) -> tuple[Tensor, Tensor]:
    """torch.nn.Linear's default: U(±1/√fan_in) for weight and bias. Weight stored (in, out)."""
    bound = 1.0 / math.sqrt(fan_in)
    return _uniform(gen, (fan_in, fan_out), bound), _uniform(gen, (1, fan_out), bound)


def _stack(per_seed: list[dict[str, Tensor]]) -> dict[str, nn.Parameter]:
    return {k: nn.Parameter(torch.stack([p[k] for p in per_seed])) for k in per_seed[0]}


def _affine(x: Tensor, w: Tensor, b: Tensor) -> Tensor:
    """x (S, B, in) @ w (S, in, out) + b (S, 1, out)."""
    return torch.baddbmm(b, x, w)


def _cross_entropy_loss(out: Tensor, y: Tensor) -> Tensor:
    """Per-seed mean cross-entropy (S,) of logits (S, B, C) against labels (S, B)."""
    s, n, c = out.shape
    return F.cross_entropy(out.reshape(s * n, c), y.reshape(-1), reduction="none").view(s, n) \
        .mean(dim=1)


def _cross_entropy(out: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
    return _cross_entropy_loss(out, y), out.argmax(dim=-1) == y


def _seed_offsets(n_seeds: int, rows_per_seed: int) -> Tensor:
    """(S, 1, 1): the first row of each seed's table in the flattened (S * rows, d) table."""
    return (torch.arange(n_seeds) * rows_per_seed).view(n_seeds, 1, 1)


class BatchedModel(nn.Module):
    """A model over S seeds. Subclasses define `init_seed`, `encode` and `forward_encoded`, and
    may override `loss` and `train_loss` (they must agree on the loss)."""

    spec_class: ClassVar[type[StrictModel]]
    embedding_keys: ClassVar[tuple[str, ...]] = ()

    def __init__(self, spec: StrictModel, shape: DataShape, seeds: list[int]):
        super().__init__()
        self.spec, self.shape = spec, shape
        context = f"{spec.canonical()}|{shape}"
        per_seed = [self.init_seed(torch_generator(seed, "init", context)) for seed in seeds]
        self.params = nn.ParameterDict(_stack(per_seed))
        buffers = [self.init_buffers(torch_generator(seed, "targets", context)) for seed in seeds]
        for key in buffers[0]:
            self.register_buffer(key, torch.stack([b[key] for b in buffers]))
        self.n_seeds = len(seeds)

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

    def loss(self, out: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
        """Per-seed mean loss (S,) and per-example correctness (S, B)."""
        return _cross_entropy(out, y)

    def train_loss(self, out: Tensor, y: Tensor) -> Tensor:
        """Per-seed mean loss (S,) alone: what a training step needs (no argmax)."""
        return _cross_entropy_loss(out, y)

    def param_groups(self) -> dict[str, list[nn.Parameter]]:
        emb = [self.params[k] for k in self.embedding_keys]
        rest = [p for k, p in self.params.items() if k not in self.embedding_keys]
        return {"embedding": emb, "decoder": rest} if emb else {"decoder": rest}


class EmbedMLP(BatchedModel):
    spec_class = EmbedMLPSpec
    embedding_keys = ("E",)

    def init_seed(self, gen: torch.Generator) -> dict[str, Tensor]:
        spec, shape = self.spec, self.shape
        emb = torch.randn((shape.vocab, spec.d), generator=gen) * spec.emb_init_std
        w1, b1 = _linear_init(gen, 4 * spec.d, spec.hidden)
        w2, b2 = _linear_init(gen, spec.hidden, shape.n_classes)
        return {"E": emb, "W1": w1, "b1": b1, "W2": w2, "b2": b2}

    def encode(self, a: Tensor, b: Tensor) -> Tensor:
        """Rows of the flattened (S * vocab, d) table: (..., S, B, 4) for [a, op, b, =]."""
        p = self.shape.p
        tokens = torch.stack([a, torch.full_like(a, p), b, torch.full_like(a, p + 1)], dim=-1)
        return tokens + _seed_offsets(self.n_seeds, self.shape.vocab).to(a.device)

    def forward_encoded(self, x: Tensor) -> Tensor:
        s, n, _ = x.shape
        table = self.params["E"].reshape(s * self.shape.vocab, -1)
        h = F.embedding(x, table).reshape(s, n, -1)
        h = _affine(h, self.params["W1"], self.params["b1"]).relu_()
        return _affine(h, self.params["W2"], self.params["b2"])


class ScalarMLP(BatchedModel):
    spec_class = ScalarMLPSpec

    def init_seed(self, gen: torch.Generator) -> dict[str, Tensor]:
        w1, b1 = _linear_init(gen, 4, self.spec.hidden)
        w2, b2 = _linear_init(gen, self.spec.hidden, self.shape.n_classes)
        return {"W1": w1, "b1": b1, "W2": w2, "b2": b2}

    def encode(self, a: Tensor, b: Tensor) -> Tensor:
        p = self.shape.p
        x = torch.stack([a, torch.full_like(a, p), b, torch.full_like(a, p + 1)], dim=-1)
        return x.to(self.params["W1"].dtype)

    def forward_encoded(self, x: Tensor) -> Tensor:
        h = _affine(x, self.params["W1"], self.params["b1"]).relu_()
        return _affine(h, self.params["W2"], self.params["b2"])


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
        return torch.stack([a, b], dim=-1) + _seed_offsets(self.n_seeds, self.shape.p).to(a.device)

    def forward_encoded(self, x: Tensor) -> Tensor:
        s = x.shape[0]
        table = self.params["E"].reshape(s * self.shape.p, -1)
        h = F.embedding(x, table).sum(dim=2)  # E[a] + E[b]: (S, B, emb_dim)
        h = _affine(h, self.params["W1"], self.params["b1"]).tanh_()
        h = _affine(h, self.params["W2"], self.params["b2"]).tanh_()
        return _affine(h, self.params["W3"], self.params["b3"])

    def loss(self, out: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
        if self.spec.output != "regression":
            return _cross_entropy(out, y)
        # Regression to fixed random targets; the prediction is the nearest target.
        nearest = torch.cdist(out, self.targets).argmin(dim=-1)
        return self.train_loss(out, y), nearest == y

    def train_loss(self, out: Tensor, y: Tensor) -> Tensor:
        if self.spec.output != "regression":
            return _cross_entropy_loss(out, y)
        target = torch.gather(self.targets, 1, y.unsqueeze(-1).expand(-1, -1, out.shape[-1]))
        return ((out - target) ** 2).mean(dim=(1, 2))


MODELS: dict[str, type[BatchedModel]] = {
    "embed_mlp": EmbedMLP,
    "scalar_mlp": ScalarMLP,
    "toy_sum": ToySum,
}


def build_model(spec: StrictModel, shape: DataShape, seeds: list[int]) -> BatchedModel:
    return MODELS[spec.kind](spec, shape, seeds)  # type: ignore[attr-defined]
