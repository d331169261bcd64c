"""The models, each defined once as a plain `nn.Module` over one seed: (a, b) operand indices of
shape (B,) in, outputs (B, out) out. `grokverify.engine.batched` derives the seed-batched form.

Each class says, for the rest of the engine:
- `roles`: which parameter is paper 1's E (the token embedding) and W (the first weight matrix),
  for probes and interventions that name a role, not a parameter;
- `embedding`: the parameters of the optimizer's embedding group (learning rate × c);
- `head`: how outputs become a loss and a prediction (`grokverify.engine.heads`);
- `init_`: the initial weights, drawn from the seed's own generator in a fixed order (the same
  draws, in the same order, as the engine has always made, so initial weights are stable);
- `noise_stream` and `step_noise`: a model with randomness in its training forward (dropout)
  draws it per training step from the seed's own named stream, and `forward` takes it as
  `noise`; evaluation passes none.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import ClassVar

import torch
from torch import Tensor, nn

from grokverify.catalog.models import (
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


@dataclass(frozen=True)
class DataShape:
    """What a model needs to know about its task. (Its repr is part of the initialisation
    stream's context: keep the name and fields, or every seed's initial weights change.)"""

    p: int  # operand values 0..p-1 (images: the pixels of one image)
    vocab: int  # p operands + op token (p) + "=" token (p + 1)
    n_classes: int
    # images: the (rows, pixels) table every seed's rows index, shared by the seeds (neither a
    # parameter nor a buffer, so it is never copied per seed); kept out of the repr above
    table: Tensor | None = field(default=None, repr=False, compare=False)


def uniform(gen: torch.Generator, shape: tuple[int, ...], bound: float) -> Tensor:
    return (torch.rand(shape, generator=gen) * 2 - 1) * bound


@torch.no_grad()
def init_linear_(layer: nn.Linear, gen: torch.Generator) -> None:
    """nn.Linear's default distribution, U(±1/√fan_in) for weight and bias, drawn as (in, out)
    and then (1, out): the order the engine's streams have always used."""
    fan_out, fan_in = layer.weight.shape
    bound = 1.0 / math.sqrt(fan_in)
    layer.weight.copy_(uniform(gen, (fan_in, fan_out), bound).T)
    layer.bias.copy_(uniform(gen, (1, fan_out), bound).view(-1))


class Model(nn.Module):
    """Base of the model definitions (see the module docstring)."""

    spec_class: ClassVar[type[ModelSpec]]
    roles: ClassVar[dict[str, str]] = {}
    embedding: ClassVar[tuple[str, ...]] = ()
    # the seed's stream of a training step's random inputs (`step_noise`); "" for none
    noise_stream: ClassVar[str] = ""
    # settings that act after a seed's draws (a scale applied to drawn weights, dropout in the
    # training steps), with the value at which they do nothing: the seed's streams are keyed
    # by the spec at those values (`drawn_spec`), so arms that differ only in them share every
    # draw, and a spec at those values keys its streams as before the setting existed
    after_draws: ClassVar[dict[str, float]] = {}

    def __init__(self, spec: ModelSpec, shape: DataShape):
        super().__init__()
        self.spec, self.shape = spec, shape

    @property
    def head(self) -> Head:
        return CLASSIFICATION

    def init_(self, gen: torch.Generator) -> None:
        raise NotImplementedError

    def init_buffers_(self, gen: torch.Generator) -> None:
        """Per-seed random buffers (regression targets), from the seed's "targets" stream."""

    def step_noise(self, gen: torch.Generator, rows: int) -> dict[str, Tensor]:
        """One training step's random inputs for a minibatch of `rows` examples (dropout
        masks), drawn from the seed's `noise_generator` and handed to `forward` as `noise`.
        Drawn per seed, never from torch's global generator or under vmap's randomness, so a
        seed's steps are the same alone or in any batch. Empty (the default): the training
        forward is deterministic and takes no `noise`. Evaluation and probes pass none."""
        return {}

    @classmethod
    def noise_generator(cls, spec: ModelSpec, shape: DataShape,
                        seed: int) -> torch.Generator | None:
        """The seed's generator of `step_noise` (its `noise_stream`, with the "init" stream's
        context), advanced once per training step; None for a model without one."""
        if not cls.noise_stream:
            return None
        return torch_generator(seed, cls.noise_stream, f"{cls.drawn_spec(spec).canonical()}|"
                                                       f"{shape}")

    @classmethod
    def drawn_spec(cls, spec: ModelSpec) -> ModelSpec:
        """The spec a seed's streams are keyed by: `after_draws`' settings at their neutral
        values."""
        return spec.model_copy(update=cls.after_draws) if cls.after_draws else spec

    @classmethod
    def for_seed(cls, spec: ModelSpec, shape: DataShape, seed: int) -> Model:
        """The model of one seed: built without drawing from torch's global generator (on the
        meta device), initialised from the seed's own streams, then `after_draws_`."""
        with torch.device("meta"):
            model = cls(spec, shape)
        model = model.to_empty(device="cpu")
        context = f"{cls.drawn_spec(spec).canonical()}|{shape}"
        model.init_(torch_generator(seed, "init", context))
        model.init_buffers_(torch_generator(seed, "targets", context))
        with torch.no_grad():
            model.after_draws_()
        return model

    def after_draws_(self) -> None:
        """What `after_draws`' settings do to the drawn weights (nothing by default)."""


def tokens(a: Tensor, b: Tensor, p: int) -> Tensor:
    """[a, op, b, =] with the op token p and "=" token p + 1, (..., 4)."""
    return torch.stack([a, torch.full_like(a, p), b, torch.full_like(a, p + 1)], dim=-1)


class EmbedMLP(Model):
    """Paper 1: the embeddings of [a, op, b, =], concatenated → Linear → ReLU → Linear."""

    spec_class = EmbedMLPSpec
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
        spec: EmbedMLPSpec = self.spec  # type: ignore[assignment]
        self.embed.weight.copy_(torch.randn(self.embed.weight.shape, generator=gen)
                                * spec.emb_init_std)
        init_linear_(self.fc1, gen)
        init_linear_(self.fc2, gen)


class ScalarMLP(Model):
    """Paper 1's baseline: the raw numbers [a, p, b, p+1] → Linear → ReLU → Linear."""

    spec_class = ScalarMLPSpec
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


class ToySum(Model):
    """Paper 2's toy: Dec(E_a + E_b), a tanh decoder emb_dim → hidden → hidden → out; out is the
    class logits, or (regression) a point compared with each class's fixed random target."""

    spec_class = ToySumSpec
    roles = {"E": "embed.weight", "W": "fc1.weight"}
    embedding = ("embed.weight",)
    targets: Tensor

    def __init__(self, spec: ToySumSpec, shape: DataShape):
        super().__init__(spec, shape)
        regression = spec.output == "regression"
        width = spec.input_width()  # the combined embedding's width
        self.embed = nn.Embedding(shape.p, width)
        self.fc1 = nn.Linear(width, spec.hidden)
        self.fc2 = nn.Linear(spec.hidden, spec.hidden)
        self.fc3 = nn.Linear(spec.hidden, spec.target_dim if regression else shape.n_classes)
        if regression:
            self.register_buffer("targets", torch.zeros(shape.n_classes, spec.target_dim))

    @property
    def head(self) -> Head:
        return REGRESSION if self.spec.output == "regression" else CLASSIFICATION  # type: ignore[attr-defined]

    def forward(self, a: Tensor, b: Tensor) -> Tensor:
        return self.decode(self.embed(a) + self.embed(b))

    def decode(self, x: Tensor) -> Tensor:
        return self.fc3(torch.tanh(self.fc2(torch.tanh(self.fc1(x)))))

    after_draws = {"decoder_init_scale": 1.0}

    def after_draws_(self) -> None:
        """The decoder's weights and biases times `decoder_init_scale`, as the official code's
        init_scale_nn does after torch's draw: a scaled decoder is exactly s × the unscaled
        one of the same seed, the embeddings and regression targets those of scale 1."""
        scale = self.spec.decoder_init_scale  # type: ignore[attr-defined]
        if scale != 1.0:
            for layer in (self.fc1, self.fc2, self.fc3):
                layer.weight.mul_(scale)
                layer.bias.mul_(scale)

    @torch.no_grad()
    def init_(self, gen: torch.Generator) -> None:
        spec: ToySumSpec = self.spec  # type: ignore[assignment]
        self.embed.weight.copy_(uniform(gen, self.embed.weight.shape, spec.init_scale / 2))
        for layer in (self.fc1, self.fc2, self.fc3):
            init_linear_(layer, gen)

    @torch.no_grad()
    def init_buffers_(self, gen: torch.Generator) -> None:
        if self.spec.output == "regression":  # type: ignore[attr-defined]
            self.targets.copy_(torch.randn(self.targets.shape, generator=gen))


@torch.no_grad()
def init_weight_(weight: Tensor, gen: torch.Generator) -> None:
    """A bias-free nn.Linear's default distribution, U(±1/√fan_in), drawn as (in, out) like
    `init_linear_`'s weight."""
    fan_out, fan_in = weight.shape
    weight.copy_(uniform(gen, (fan_in, fan_out), 1.0 / math.sqrt(fan_in)).T)


def sinusoid(positions: int, d: int) -> Tensor:
    """The fixed sinusoidal position encodings (positions, d) of "Attention is all you need"
    (openai/grok's): sin(pos / 10000^(i/d)) at even i, cos(pos / 10000^((i-1)/d)) at odd i."""
    pos = torch.arange(positions, dtype=torch.float64).view(-1, 1)
    i = torch.arange(d, dtype=torch.float64)
    angle = pos / 10000 ** ((i - i % 2) / d)
    return torch.where(i % 2 == 0, torch.sin(angle), torch.cos(angle)).float()


class Block(nn.Module):
    """One post-LayerNorm decoder block: x = LN(x + MHA(x)), x = LN(x + Dropout(MLP(x))).
    Attention is written with plain Linear, matmul and softmax (no fused kernel), so
    torch.func.vmap batches it over seeds like any other layer. Dropout is a given mask (the
    kept units already scaled by 1/(1 - p)) multiplied in, or nothing (evaluation, p = 0)."""

    def __init__(self, d: int, heads: int, mlp: int):
        super().__init__()
        self.heads = heads
        self.q = nn.Linear(d, d, bias=False)
        self.k = nn.Linear(d, d, bias=False)
        self.v = nn.Linear(d, d, bias=False)
        self.o = nn.Linear(d, d, bias=False)
        self.norm1 = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, mlp, bias=False)
        self.fc2 = nn.Linear(mlp, d, bias=False)
        self.norm2 = nn.LayerNorm(d)

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
        x = self.norm1(x + self.attention(x))
        mlp = self.fc2(torch.relu(self.fc1(x)))
        return self.norm2(x + (mlp if mlp_mask is None else mlp * mlp_mask))

    @torch.no_grad()
    def init_(self, gen: torch.Generator) -> None:
        """Linear weights U(±1/√fan_in) in the order q, k, v, o, fc1, fc2; LayerNorms as torch
        makes them (weight 1, bias 0: no draw)."""
        for layer in (self.q, self.k, self.v, self.o, self.fc1, self.fc2):
            init_weight_(layer.weight, gen)
        for norm in (self.norm1, self.norm2):
            norm.weight.fill_(1.0)
            norm.bias.zero_()


class Transformer(Model):
    """Paper 2's §4.2 transformer (`TransformerSpec`): tokens [a, b] only (no operation or "="
    token), their embeddings plus fixed sinusoidal positions, `layers` post-LayerNorm causal
    blocks, and a bias-free unembedding of the last position's output to the class logits.
    Dropout (training only, p = `spec.dropout`) on each block's MLP output before its residual
    add, openai/grok's one site; its masks come from the seed's "dropout" stream."""

    spec_class = TransformerSpec
    roles = {"E": "embed.weight"}
    embedding = ("embed.weight",)
    noise_stream = "dropout"
    # dropout acts in training steps only: a seed's initial weights and its uniforms are the
    # same at every rate, so a lower rate drops a subset of the units a higher one drops
    after_draws = {"dropout": 0.0}
    positions: Tensor

    def __init__(self, spec: TransformerSpec, shape: DataShape):
        super().__init__(spec, shape)
        self.embed = nn.Embedding(shape.p, spec.d)
        self.blocks = nn.ModuleList(Block(spec.d, spec.heads, spec.mlp)
                                    for _ in range(spec.layers))
        self.unembed = nn.Linear(spec.d, shape.n_classes, bias=False)
        self.register_buffer("positions", torch.zeros(2, spec.d))

    def forward(self, a: Tensor, b: Tensor, noise: dict[str, Tensor] | None = None) -> Tensor:
        """Logits (B, classes); `noise` (training only): `step_noise`'s masks."""
        x = self.embed(torch.stack([a, b], dim=-1)) + self.positions
        for i, block in enumerate(self.blocks):
            x = block(x, None if noise is None else noise[f"mlp_dropout.{i}"])
        return self.unembed(x[:, -1])

    def step_noise(self, gen: torch.Generator, rows: int) -> dict[str, Tensor]:
        """Per block, a (rows, 2, d) dropout mask: unit kept where a uniform draw is >= p (so
        dropped with probability p), kept units scaled by 1/(1 - p) (inverted dropout, as
        nn.Dropout), in float32; drawn block by block. Empty at p = 0 (nothing drawn)."""
        spec: TransformerSpec = self.spec  # type: ignore[assignment]
        p = spec.dropout
        if p == 0:
            return {}
        return {f"mlp_dropout.{i}": (torch.rand((rows, 2, spec.d), generator=gen) >= p).float()
                / (1 - p) for i in range(spec.layers)}

    @torch.no_grad()
    def init_(self, gen: torch.Generator) -> None:
        """The embedding N(0, emb_init_std²), then each block in order, then the unembedding,
        all from the seed's own generator."""
        spec: TransformerSpec = self.spec  # type: ignore[assignment]
        self.embed.weight.copy_(torch.randn(self.embed.weight.shape, generator=gen)
                                * spec.emb_init_std)
        for block in self.blocks:
            block.init_(gen)  # type: ignore[operator]
        init_weight_(self.unembed.weight, gen)

    @torch.no_grad()
    def init_buffers_(self, gen: torch.Generator) -> None:
        """The position encodings: fixed, nothing drawn."""
        self.positions.copy_(sinusoid(2, self.spec.d))  # type: ignore[attr-defined]


class ToyMatrix(ToySum):
    """Paper 2's S3 toy (App. H): Dec(E_a E_b), each element's embedding a learnable n × n
    matrix (stored as a row of n² numbers) multiplied by hand, the product flattened row-major
    into ToySum's tanh decoder; initialised as ToySum (entries U[-s/2, s/2])."""

    spec_class = ToyMatrixSpec

    def forward(self, a: Tensor, b: Tensor) -> Tensor:
        n = self.spec.matrix  # type: ignore[attr-defined]
        left = self.embed(a).unflatten(-1, (n, n))
        right = self.embed(b).unflatten(-1, (n, n))
        return self.decode((left @ right).flatten(-2))


class ImageMLP(Model):
    """Paper 2's MNIST network (`ImageMLPSpec`): the image (a row of the shared table) →
    `depth` linear layers with ReLU between them; regression against one-hot targets."""

    spec_class = ImageMLPSpec
    roles = {"W": "layers.0.weight"}
    targets: Tensor

    def __init__(self, spec: ImageMLPSpec, shape: DataShape):
        super().__init__(spec, shape)
        if shape.table is None:
            raise ValueError("image_mlp needs an image task's table of images")
        self.table = shape.table  # shared by every seed: a plain attribute, not state
        widths = [shape.p] + [spec.width] * (spec.depth - 1) + [shape.n_classes]
        self.layers = nn.ModuleList(nn.Linear(i, o) for i, o in zip(widths, widths[1:],
                                                                     strict=False))
        if spec.output == "regression":
            self.register_buffer("targets", torch.zeros(shape.n_classes, shape.n_classes))

    @property
    def head(self) -> Head:
        return REGRESSION if self.spec.output == "regression" else CLASSIFICATION  # type: ignore[attr-defined]

    def forward(self, a: Tensor, b: Tensor) -> Tensor:
        first: nn.Linear = self.layers[0]  # type: ignore[assignment]
        x = self.table[a].to(first.weight.dtype)  # type: ignore[index]  # (float64 tests)
        for layer in self.layers[:-1]:
            x = torch.relu(layer(x))
        return self.layers[-1](x)

    after_draws = {"init_scale": 1.0}

    def after_draws_(self) -> None:
        """Every weight and bias times α (`init_scale`): a seed's draws are the same at every
        α, so arms along α differ in the scale alone."""
        for param in self.parameters():
            param.mul_(self.spec.init_scale)  # type: ignore[attr-defined]

    @torch.no_grad()
    def init_(self, gen: torch.Generator) -> None:
        """nn.Linear's default draws, layer by layer."""
        for layer in self.layers:
            init_linear_(layer, gen)  # type: ignore[arg-type]

    @torch.no_grad()
    def init_buffers_(self, gen: torch.Generator) -> None:
        """The one-hot targets: fixed, nothing drawn."""
        if self.spec.output == "regression":  # type: ignore[attr-defined]
            self.targets.copy_(torch.eye(self.shape.n_classes))


MODELS: dict[str, type[Model]] = {
    "embed_mlp": EmbedMLP,
    "scalar_mlp": ScalarMLP,
    "toy_sum": ToySum,
    "toy_matrix": ToyMatrix,
    "transformer": Transformer,
    "image_mlp": ImageMLP,
}


def example_losses_of(model: Model, out: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
    """Each example's loss and correctness for one plain model (the reference's evaluation)."""
    targets = getattr(model, "targets", None)
    return model.head.example_losses(out, y, targets)


def mean_loss_of(model: Model, out: Tensor, y: Tensor) -> Tensor:
    targets = getattr(model, "targets", None)
    return model.head.mean_loss(out, y, targets)


