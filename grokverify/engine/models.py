"""The models, each a plain `nn.Module` over one seed: operand indices a, b (B,) in, outputs
(B, out) out; `grokverify.engine.batched` derives the seed-batched form. `roles` names paper 1's
E and W, `embedding` the optimizer's embedding group, `init_` draws from the seed's own stream.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import ClassVar, Generic, TypeVar, cast

import torch
from torch import Tensor, nn

from grokverify.claim.models import (
    EmbedMLPSpec,
    ImageMLPSpec,
    ModelSpec,
    ScalarMLPSpec,
    ToyMatrixSpec,
    ToySumSpec,
    TransformerSpec,
)
from grokverify.engine.heads import CLASSIFICATION, REGRESSION, Head
from grokverify.engine.streams import torch_generator

S = TypeVar("S", bound=ModelSpec)


@dataclass(frozen=True)
class DataShape:
    """What a model needs to know about its task."""

    p: int  # operand values 0..p-1 (images: the pixels of one image)
    vocab: int  # p operands + op token (p) + "=" token (p + 1)
    n_classes: int
    # images: the (rows, pixels) table every seed's rows index, shared by the seeds (neither a
    # parameter nor a buffer, so it is never copied per seed)
    table: Tensor | None = field(default=None, repr=False, compare=False)


def uniform(gen: torch.Generator, shape: tuple[int, ...], bound: float) -> Tensor:
    return (torch.rand(shape, generator=gen) * 2 - 1) * bound


@torch.no_grad()
def init_linear_(layer: nn.Linear, gen: torch.Generator) -> None:
    """nn.Linear's default distribution, U(±1/√fan_in), weight then bias."""
    init_weight_(layer.weight, gen)
    layer.bias.copy_(uniform(gen, layer.bias.shape, 1.0 / math.sqrt(layer.weight.shape[1])))


@torch.no_grad()
def init_weight_(weight: Tensor, gen: torch.Generator) -> None:
    """A Linear weight's default distribution, U(±1/√fan_in)."""
    weight.copy_(uniform(gen, weight.shape, 1.0 / math.sqrt(weight.shape[1])))


class Model(nn.Module, Generic[S]):
    """Base of the model definitions (see the module docstring)."""

    spec: S
    roles: ClassVar[dict[str, str]] = {}
    embedding: ClassVar[tuple[str, ...]] = ()
    # the seed's stream of a training step's random inputs (`step_noise`); "" for none
    noise_stream: ClassVar[str] = ""
    # spec fields that act after a seed's draws (a scale on drawn weights, dropout in training
    # steps): left out of the streams' key, so arms that differ only in them share every draw
    after_draws: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, spec: S, shape: DataShape):
        super().__init__()
        self.spec, self.shape = spec, shape

    @property
    def head(self) -> Head:
        """Regression where the spec asks for it (`output: regression`), else classification."""
        return REGRESSION if getattr(self.spec, "output", None) == "regression" else CLASSIFICATION

    def init_(self, gen: torch.Generator) -> None:
        raise NotImplementedError

    def init_buffers_(self, gen: torch.Generator) -> None:
        """Per-seed random buffers (regression targets), from the seed's "targets" stream."""

    def step_noise(self, gen: torch.Generator, rows: int) -> dict[str, Tensor]:
        """One training step's random inputs (dropout masks) for `rows` examples, drawn per
        seed so a seed trains the same alone or in any batch; empty: no randomness."""
        return {}

    @classmethod
    def stream_key(cls, spec: ModelSpec, shape: DataShape) -> str:
        """What a seed's model streams ("init", "targets", `noise_stream`) are keyed by."""
        # the canonical fields (a setting added later is left out at its default, so a seed
        # of an older claim draws what it always drew), less those applied after the draws
        drawn = {k: v for k, v in spec.key_dump().items() if k not in cls.after_draws}
        return json.dumps({"model": drawn, "p": shape.p, "vocab": shape.vocab,
                           "classes": shape.n_classes}, sort_keys=True, separators=(",", ":"))

    @classmethod
    def noise_generator(cls, spec: ModelSpec, shape: DataShape,
                        seed: int) -> torch.Generator | None:
        """The seed's generator of `step_noise`, advanced once per training step."""
        if not cls.noise_stream:
            return None
        return torch_generator(seed, cls.noise_stream, cls.stream_key(spec, shape))

    @classmethod
    def for_seed(cls, spec: ModelSpec, shape: DataShape, seed: int) -> Model:
        """One seed's model, built on the meta device (no global draw), initialised from its
        own streams."""
        with torch.device("meta"):
            model = cls(spec, shape)
        model = model.to_empty(device="cpu")
        key = cls.stream_key(spec, shape)
        model.init_(torch_generator(seed, "init", key))
        model.init_buffers_(torch_generator(seed, "targets", key))
        return model


def tokens(a: Tensor, b: Tensor, p: int) -> Tensor:
    """[a, op, b, =] with the op token p and "=" token p + 1, (..., 4)."""
    return torch.stack([a, torch.full_like(a, p), b, torch.full_like(a, p + 1)], dim=-1)


class EmbedMLP(Model[EmbedMLPSpec]):
    """Paper 1: the embeddings of [a, op, b, =], concatenated → Linear → ReLU → Linear."""

    roles = {"E": "embed.weight", "W": "fc1.weight"}
    embedding = ("embed.weight",)

    def __init__(self, spec: EmbedMLPSpec, shape: DataShape):
        super().__init__(spec, shape)
        self.embed = nn.Embedding(shape.vocab, spec.d)
        self.fc1 = nn.Linear(4 * spec.d, spec.hidden)
        self.fc2 = nn.Linear(spec.hidden, shape.n_classes)

    def forward(self, a: Tensor, b: Tensor) -> Tensor:
        x = self.embed(tokens(a, b, self.shape.p)).flatten(-2)
        return self.fc2(torch.relu(self.fc1(x)))

    @torch.no_grad()
    def init_(self, gen: torch.Generator) -> None:
        self.embed.weight.copy_(torch.randn(self.embed.weight.shape, generator=gen)
                                * self.spec.emb_init_std)
        init_linear_(self.fc1, gen)
        init_linear_(self.fc2, gen)


class ScalarMLP(Model[ScalarMLPSpec]):
    """Paper 1's baseline: the raw numbers [a, p, b, p+1] → Linear → ReLU → Linear."""

    roles = {"W": "fc1.weight"}

    def __init__(self, spec: ScalarMLPSpec, shape: DataShape):
        super().__init__(spec, shape)
        self.fc1 = nn.Linear(4, spec.hidden)
        self.fc2 = nn.Linear(spec.hidden, shape.n_classes)

    def forward(self, a: Tensor, b: Tensor) -> Tensor:
        x = tokens(a, b, self.shape.p).to(self.fc1.weight.dtype)
        return self.fc2(torch.relu(self.fc1(x)))

    def init_(self, gen: torch.Generator) -> None:
        init_linear_(self.fc1, gen)
        init_linear_(self.fc2, gen)


ToySpec = TypeVar("ToySpec", ToySumSpec, ToyMatrixSpec)


class _ToyDecoder(Model[ToySpec]):
    """Paper 2's toys: two embeddings combined by `combine`, then a tanh decoder; the output is
    the class logits or (regression) a point compared with each class's fixed random target."""

    roles = {"E": "embed.weight", "W": "fc1.weight"}
    embedding = ("embed.weight",)
    # the decoder's scale multiplies its drawn weights: a scaled decoder is exactly s × the
    # unscaled one of the same seed (the official code's init_scale_nn)
    after_draws = frozenset({"decoder_init_scale"})
    targets: Tensor

    def __init__(self, spec: ToySpec, shape: DataShape):
        super().__init__(spec, shape)
        regression = spec.output == "regression"
        width = spec.input_width()
        self.embed = nn.Embedding(shape.p, width)
        self.fc1 = nn.Linear(width, spec.hidden)
        self.fc2 = nn.Linear(spec.hidden, spec.hidden)
        self.fc3 = nn.Linear(spec.hidden, spec.target_dim if regression else shape.n_classes)
        if regression:
            self.register_buffer("targets", torch.zeros(shape.n_classes, spec.target_dim))

    def combine(self, a: Tensor, b: Tensor) -> Tensor:
        raise NotImplementedError

    def forward(self, a: Tensor, b: Tensor) -> Tensor:
        return self.decode(self.combine(a, b))

    def decode(self, x: Tensor) -> Tensor:
        return self.fc3(torch.tanh(self.fc2(torch.tanh(self.fc1(x)))))

    @torch.no_grad()
    def init_(self, gen: torch.Generator) -> None:
        self.embed.weight.copy_(uniform(gen, self.embed.weight.shape, self.spec.init_scale / 2))
        for layer in (self.fc1, self.fc2, self.fc3):
            init_linear_(layer, gen)
            layer.weight.mul_(self.spec.decoder_init_scale)
            layer.bias.mul_(self.spec.decoder_init_scale)

    @torch.no_grad()
    def init_buffers_(self, gen: torch.Generator) -> None:
        if self.spec.output == "regression":
            self.targets.copy_(torch.randn(self.targets.shape, generator=gen))


class ToySum(_ToyDecoder[ToySumSpec]):
    """Paper 2's toy: Dec(E_a + E_b)."""

    def combine(self, a: Tensor, b: Tensor) -> Tensor:
        return self.embed(a) + self.embed(b)


class ToyMatrix(_ToyDecoder[ToyMatrixSpec]):
    """Paper 2's S3 toy (App. H): Dec(E_a E_b), each embedding an n × n matrix (a row of n²
    numbers) multiplied by hand, the product flattened row-major."""

    def combine(self, a: Tensor, b: Tensor) -> Tensor:
        n = self.spec.matrix
        left = self.embed(a).unflatten(-1, (n, n))
        right = self.embed(b).unflatten(-1, (n, n))
        return (left @ right).flatten(-2)


def sinusoid(positions: int, d: int) -> Tensor:
    """The fixed sinusoidal position encodings (positions, d) of "Attention is all you need"
    (openai/grok's): sin(pos / 10000^(i/d)) at even i, cos(pos / 10000^((i-1)/d)) at odd i."""
    pos = torch.arange(positions, dtype=torch.float64).view(-1, 1)
    i = torch.arange(d, dtype=torch.float64)
    angle = pos / 10000 ** ((i - i % 2) / d)
    return torch.where(i % 2 == 0, torch.sin(angle), torch.cos(angle)).float()


class Block(nn.Module):
    """One decoder block, its LayerNorms placed by `norm`: post x = LN(x + MHA(x)),
    x = LN(x + Dropout(MLP(x))); pre x = x + MHA(LN(x)), x = x + Dropout(MLP(LN(x))); none
    without them. Written with plain Linear, matmul and softmax so that torch.func.vmap
    batches it."""

    def __init__(self, d: int, heads: int, mlp: int, norm: str = "post",
                 activation: str = "relu", mlp_bias: bool = False, init: str = "uniform"):
        super().__init__()
        self.heads, self.norm, self.act = heads, norm, _ACTIVATIONS[activation]
        self.init = init
        self.q = nn.Linear(d, d, bias=False)
        self.k = nn.Linear(d, d, bias=False)
        self.v = nn.Linear(d, d, bias=False)
        self.o = nn.Linear(d, d, bias=False)
        self.norm1 = nn.LayerNorm(d) if norm != "none" else None
        self.fc1 = nn.Linear(d, mlp, bias=mlp_bias)
        self.fc2 = nn.Linear(mlp, d, bias=mlp_bias)
        self.norm2 = nn.LayerNorm(d) if norm != "none" else None

    def attention(self, x: Tensor) -> Tensor:
        """Causal multi-head self-attention of x (B, T, d): position t reads positions <= t."""
        n, t, d = x.shape
        h = self.heads

        def split(y: Tensor) -> Tensor:  # (B, T, d) -> (B, h, T, d / h)
            return y.view(n, t, h, d // h).transpose(1, 2)

        q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
        scores = q @ k.transpose(-1, -2) / math.sqrt(d // h)
        causal = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
        weights = torch.softmax(scores.masked_fill(~causal, float("-inf")), dim=-1)
        return self.o((weights @ v).transpose(1, 2).reshape(n, t, d))

    def forward(self, x: Tensor, mlp_mask: Tensor | None = None) -> Tensor:
        """`mlp_mask`: a dropout mask (kept units already scaled by 1/(1 - p)), or None."""

        def mlp(y: Tensor) -> Tensor:
            out = self.fc2(self.act(self.fc1(y)))
            return out if mlp_mask is None else out * mlp_mask

        if self.norm1 is None or self.norm2 is None:
            x = x + self.attention(x)
            return x + mlp(x)
        if self.norm == "pre":
            x = x + self.attention(self.norm1(x))
            return x + mlp(self.norm2(x))
        x = self.norm1(x + self.attention(x))
        return self.norm2(x + mlp(x))

    @torch.no_grad()
    def init_(self, gen: torch.Generator) -> None:
        """Linear weights in the order q, k, v, o, fc1, fc2: U(±1/√fan_in), or (init normal)
        N(0, 1/d) each; MLP biases 0; LayerNorms at weight 1, bias 0."""
        d = self.q.weight.shape[1]
        for layer in (self.q, self.k, self.v, self.o, self.fc1, self.fc2):
            if self.init == "normal":
                layer.weight.copy_(torch.randn(layer.weight.shape, generator=gen) / math.sqrt(d))
            else:
                init_weight_(layer.weight, gen)
            if layer.bias is not None:
                layer.bias.zero_()
        for norm in (self.norm1, self.norm2):
            if norm is not None:
                norm.weight.fill_(1.0)
                norm.bias.zero_()


_ACTIVATIONS = {"relu": torch.relu, "gelu": nn.functional.gelu}


class Transformer(Model[TransformerSpec]):
    """Paper 2's §4.2 transformer and its variants (`TransformerSpec`): the token sequence
    plus positions, `layers` causal blocks, an unembedding of the last position."""

    roles = {"E": "embed.weight"}
    embedding = ("embed.weight",)
    noise_stream = "dropout"
    # dropout acts in training steps only, so a lower rate drops a subset of a higher one's units
    after_draws = frozenset({"dropout"})
    positions: Tensor

    def __init__(self, spec: TransformerSpec, shape: DataShape):
        super().__init__(spec, shape)
        t = spec.sequence()
        self.embed = nn.Embedding(spec.vocab(shape.p), spec.d)
        self.blocks = nn.ModuleList(Block(spec.d, spec.heads, spec.mlp, spec.norm,
                                          spec.activation, spec.mlp_bias, spec.init)
                                    for _ in range(spec.layers))
        self.final_norm = nn.LayerNorm(spec.d) if spec.norm == "pre" else None
        if spec.tie and shape.n_classes > spec.vocab(shape.p):
            raise ValueError(f"tie: {shape.n_classes} classes but {spec.vocab(shape.p)} token "
                             "embeddings to unembed with")
        self.unembed = None if spec.tie else nn.Linear(spec.d, shape.n_classes, bias=False)
        if spec.positions == "learned":
            self.positions = nn.Parameter(torch.zeros(t, spec.d))
        else:
            self.register_buffer("positions", torch.zeros(t, spec.d))

    def sequence(self, a: Tensor, b: Tensor) -> Tensor:
        """The token ids (B, T): [a, b], [a, b, =] or [a, op, b, =] (op p, "=" the last id)."""
        p, kind = self.shape.p, self.spec.tokens
        if kind == "ab":
            return torch.stack([a, b], dim=-1)
        eq = torch.full_like(a, p + (1 if kind == "a_op_b_eq" else 0))
        if kind == "a_b_eq":
            return torch.stack([a, b, eq], dim=-1)
        return torch.stack([a, torch.full_like(a, p), b, eq], dim=-1)

    def forward(self, a: Tensor, b: Tensor, noise: dict[str, Tensor] | None = None) -> Tensor:
        """Logits (B, classes); `noise` (training only): `step_noise`'s masks."""
        x = self.embed(self.sequence(a, b)) + self.positions
        for i, block in enumerate(self.blocks):
            x = block(x, None if noise is None else noise[f"mlp_dropout.{i}"])
        last = x[:, -1] if self.final_norm is None else self.final_norm(x[:, -1])
        if self.unembed is None:
            return last @ self.embed.weight[:self.shape.n_classes].T
        return self.unembed(last)

    def step_noise(self, gen: torch.Generator, rows: int) -> dict[str, Tensor]:
        """Per block, a (rows, T, d) inverted-dropout mask (kept where a uniform is >= p,
        scaled by 1/(1 - p)); empty at p = 0."""
        p = self.spec.dropout
        if p == 0:
            return {}
        t = self.spec.sequence()
        return {f"mlp_dropout.{i}": (torch.rand((rows, t, self.spec.d), generator=gen) >= p)
                .float() / (1 - p) for i in range(self.spec.layers)}

    @torch.no_grad()
    def init_(self, gen: torch.Generator) -> None:
        """The embedding N(0, emb_init_std²), each block in order, then the unembedding, then
        learned positions N(0, 1/d) (so paper 2's settings draw as they always have)."""
        self.embed.weight.copy_(torch.randn(self.embed.weight.shape, generator=gen)
                                * self.spec.emb_init_std)
        for block in self.blocks:
            cast(Block, block).init_(gen)
        if self.final_norm is not None:
            self.final_norm.weight.fill_(1.0)
            self.final_norm.bias.zero_()
        if self.unembed is not None and self.spec.init == "normal":
            self.unembed.weight.copy_(torch.randn(self.unembed.weight.shape, generator=gen)
                                      / math.sqrt(self.shape.n_classes))
        elif self.unembed is not None:
            init_weight_(self.unembed.weight, gen)
        if self.spec.positions == "learned":
            self.positions.copy_(torch.randn(self.positions.shape, generator=gen)
                                 / math.sqrt(self.spec.d))

    @torch.no_grad()
    def init_buffers_(self, gen: torch.Generator) -> None:
        if self.spec.positions == "sinusoidal":
            self.positions.copy_(sinusoid(self.spec.sequence(), self.spec.d))


class ImageMLP(Model[ImageMLPSpec]):
    """Paper 2's MNIST network: the image (a row of the shared table) → `depth` linear layers
    with ReLU between them; regression against one-hot targets."""

    roles = {"W": "layers.0.weight"}
    # α multiplies every drawn weight, so arms along α differ in the scale alone
    after_draws = frozenset({"init_scale"})
    targets: Tensor

    def __init__(self, spec: ImageMLPSpec, shape: DataShape):
        super().__init__(spec, shape)
        if shape.table is None:
            raise ValueError("image_mlp needs an image task's table of images")
        self.table: Tensor = shape.table  # shared by every seed: a plain attribute, not state
        widths = [shape.p] + [spec.width] * (spec.depth - 1) + [shape.n_classes]
        self.layers = nn.ModuleList(nn.Linear(i, o) for i, o in zip(widths, widths[1:],
                                                                     strict=False))
        if spec.output == "regression":
            self.register_buffer("targets", torch.zeros(shape.n_classes, shape.n_classes))

    def forward(self, a: Tensor, b: Tensor) -> Tensor:
        layers = [cast(nn.Linear, layer) for layer in self.layers]
        x = self.table[a].to(layers[0].weight.dtype)
        for layer in layers[:-1]:
            x = torch.relu(layer(x))
        return layers[-1](x)

    @torch.no_grad()
    def init_(self, gen: torch.Generator) -> None:
        """nn.Linear's default draws layer by layer, every weight and bias then times α."""
        for layer in self.layers:
            init_linear_(cast(nn.Linear, layer), gen)
        for param in self.parameters():
            param.mul_(self.spec.init_scale)

    @torch.no_grad()
    def init_buffers_(self, gen: torch.Generator) -> None:
        if self.spec.output == "regression":
            self.targets.copy_(torch.eye(self.shape.n_classes))


def example_losses_of(model: Model, out: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
    """Each example's loss and correctness for one plain model (the reference's evaluation)."""
    targets = getattr(model, "targets", None)
    return model.head.example_losses(out, y, targets)


def mean_loss_of(model: Model, out: Tensor, y: Tensor) -> Tensor:
    targets = getattr(model, "targets", None)
    return model.head.mean_loss(out, y, targets)


