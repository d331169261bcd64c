"""Model kinds a claim can name, with their settings, each registered with its network
(`grokverify.engine.models`, one plain nn.Module per kind).

Each spec names the model's *roles*, the parameters a probe or an intervention can refer to
without knowing the model ("E", the token embedding; "W", the first weight matrix), so load-time
checks need no torch; and its *size*: what one seed holds and computes, from which
`grokverify.claim.budget` estimates a trial's memory and compute before anything is allocated.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from pydantic import Field, model_validator

from grokverify.claim.base import Float, Int, StrictModel
from grokverify.claim.limits import MAX_FACTOR, MAX_WIDTH
from grokverify.kinds import MODELS

ROLE_WORDS = {"E": "the token embedding matrix", "W": "the first weight matrix"}


@dataclass(frozen=True)
class ModelSize:
    """One seed of a model: what `grokverify.claim.budget` multiplies by seeds, bytes and steps."""

    params: int  # parameters and buffers
    macs: int  # multiply-adds of one example's forward pass
    widest: str  # the setting that sets the size: named when a claim is too big


# floats of per-row bookkeeping in any pass: operand and label indices (int64), loss, correctness
ROW_FLOATS = 8


class ModelSpec(StrictModel):
    """Base of every model kind's spec. `size` and `activations` count what one seed holds and
    computes (`grokverify.claim.budget`); a kind without its own formulas is counted as a generous
    stand-in: a ReLU MLP on the four tokens' embeddings with one layer per integer setting, each
    as wide as the widest setting."""

    roles: ClassVar[tuple[str, ...]] = ()
    inputs: ClassVar[str] = "pairs"  # what it reads: operand pairs, or images (a task's `inputs`)
    # flop/s of `budget.estimate`'s arithmetic one CPU thread reaches, for `budget.cpu_seconds`
    # (the paper-scale warning, a report's CPU hours): benchmarks/cpu_rates.py
    cpu_flop_rate: ClassVar[float] = 4e10

    @classmethod
    def has_embedding(cls) -> bool:
        return "E" in cls.roles

    def widths(self) -> dict[str, int]:
        """The integer settings (the widths, for the shipped kinds)."""
        return {k: v for k, v in self if isinstance(v, int) and not isinstance(v, bool)}

    def widest(self) -> str:
        widths = self.widths()
        return max(widths, key=widths.__getitem__) if widths else "kind"

    def size(self, p: int, n_classes: int) -> ModelSize:
        """Parameters and forward multiply-adds of one seed on p operand values and n_classes
        labels."""
        w, layers = max(self.widths().values(), default=1), len(self.widths()) + 1
        macs = 4 * w * w + layers * w * w + w * n_classes
        return ModelSize((p + 2) * w + macs + layers * w + n_classes, macs, self.widest())

    def activations(self, p: int, n_classes: int, rows: int, backward: bool) -> int:
        """Floats one seed's pass over `rows` examples keeps alive at its peak: a training step
        (`backward`: its graph and gradients too) or an evaluation."""
        w, layers = max(self.widths().values(), default=1), len(self.widths()) + 1
        forward = 4 * w + 2 * layers * w + 2 * n_classes
        return rows * ((2 if backward else 1) * forward + ROW_FLOATS)


@MODELS.register("grokverify.engine.models:EmbedMLP")
class EmbedMLPSpec(ModelSpec):
    """Paper 1: concatenated embeddings of [a, op, b, =] → Linear → ReLU → Linear."""

    roles: ClassVar[tuple[str, ...]] = ("E", "W")
    cpu_flop_rate: ClassVar[float] = 1.5e11
    kind: Literal["embed_mlp"]
    d: Int = Field(128, ge=1, le=MAX_WIDTH, description="embedding width")
    hidden: Int = Field(512, ge=1, le=MAX_WIDTH, description="hidden width (paper: 4d)")
    emb_init_std: Float = Field(1.0, gt=0, le=MAX_FACTOR,
                                description="std of the N(0, std²) embedding init")

    def size(self, p: int, n_classes: int) -> ModelSize:
        """Embedding of p + 2 tokens, fc1 on the 4 concatenated tokens, fc2."""
        macs = 4 * self.d * self.hidden + self.hidden * n_classes
        return ModelSize((p + 2) * self.d + macs + self.hidden + n_classes, macs, self.widest())

    def activations(self, p: int, n_classes: int, rows: int, backward: bool) -> int:
        """At least p rows take the engine's fast path (`grokverify.engine.fast`: fc1's output
        from (2p, hidden) operand tables); fewer keep the gathered tokens, fc1's output and its
        ReLU. Both keep the logits and their log-softmax (and when training a gradient of each)."""
        d, h, c = self.d, self.hidden, n_classes
        if rows >= p:
            per_row, tables = (3 * h + 4 * c, 6 * p * h) if backward else (h + 2 * c, 2 * p * h)
        else:
            per_row, tables = (2 if backward else 1) * (4 * d + 2 * h + 2 * c), 0
        return rows * (per_row + ROW_FLOATS) + tables


@MODELS.register("grokverify.engine.models:ScalarMLP")
class ScalarMLPSpec(ModelSpec):
    """Paper 1's baseline: raw scalars [a, p, b, p+1], no embedding → Linear → ReLU → Linear."""

    roles: ClassVar[tuple[str, ...]] = ("W",)
    cpu_flop_rate: ClassVar[float] = 2.5e10
    kind: Literal["scalar_mlp"]
    hidden: Int = Field(512, ge=1, le=MAX_WIDTH)

    def size(self, p: int, n_classes: int) -> ModelSize:
        """fc1 on the 4 raw numbers, fc2."""
        macs = 4 * self.hidden + self.hidden * n_classes
        return ModelSize(macs + self.hidden + n_classes, macs, "hidden")

    def activations(self, p: int, n_classes: int, rows: int, backward: bool) -> int:
        """The 4 inputs, fc1's output and its ReLU, the logits and their log-softmax (and when
        training a gradient of each)."""
        forward = 4 + 2 * self.hidden + 2 * n_classes
        return rows * ((2 if backward else 1) * forward + ROW_FLOATS)


class _ToyDecoderSpec(ModelSpec):
    """Paper 2's toys: the two operands' embeddings combined by a fixed operation, then a tanh
    decoder input → hidden → hidden → out. `input_width` is the combined embedding's width."""

    roles: ClassVar[tuple[str, ...]] = ("E", "W")
    hidden: Int = Field(200, ge=1, le=MAX_WIDTH)
    init_scale: Float = Field(1.0, gt=0, le=MAX_FACTOR,
                              description="embeddings drawn from U[-s/2, s/2]")
    output: Literal["classification", "regression"] = "classification"
    target_dim: Int = Field(30, ge=1, le=MAX_WIDTH,
                            description="regression: dimension of the random targets")
    decoder_init_scale: Float = Field(
        1.0, gt=0, le=MAX_FACTOR, description=(
            "every decoder weight and bias multiplied by this after its usual draw (the "
            "official code's init_scale_nn; paper 2's App. G, Fig. 14)"))

    def input_width(self) -> int:
        raise NotImplementedError

    def _out(self, n_classes: int) -> int:
        return self.target_dim if self.output == "regression" else n_classes

    def size(self, p: int, n_classes: int) -> ModelSize:
        """Embedding of p tokens, fc1, fc2, fc3 (and the regression targets, a buffer)."""
        e, h, out = self.input_width(), self.hidden, self._out(n_classes)
        macs = e * h + h * h + h * out
        targets = n_classes * self.target_dim if self.output == "regression" else 0
        return ModelSize(p * e + macs + 2 * h + out + targets, macs, self.widest())

    def activations(self, p: int, n_classes: int, rows: int, backward: bool) -> int:
        """The combined embeddings, both tanh layers, the output and its loss's working copy
        (and when training a gradient of each); a regression evaluation's distance to every
        class target."""
        forward = self.input_width() + 2 * self.hidden + 2 * self._out(n_classes)
        nearest = n_classes if self.output == "regression" and not backward else 0
        return rows * ((2 if backward else 1) * forward + nearest + ROW_FLOATS)


@MODELS.register("grokverify.engine.models:ToySum")
class ToySumSpec(_ToyDecoderSpec):
    """Paper 2's toy: Dec(E_a + E_b), decoder emb_dim → hidden → hidden → out with tanh."""

    kind: Literal["toy_sum"]
    emb_dim: Int = Field(1, ge=1, le=MAX_WIDTH)

    def input_width(self) -> int:
        return self.emb_dim


@MODELS.register("grokverify.engine.models:ToyMatrix")
class ToyMatrixSpec(_ToyDecoderSpec):
    """Paper 2's S3 toy (App. H): each element a learnable `matrix` × `matrix` embedding E_a,
    Dec(E_a E_b) with the product taken by hand (flattened, row-major), decoder matrix² →
    hidden → hidden → out with tanh."""

    kind: Literal["toy_matrix"]
    matrix: Int = Field(3, ge=1, le=64, description="the embeddings are matrix × matrix "
                                                    "(App. H: 3)")

    def input_width(self) -> int:
        return self.matrix * self.matrix


MAX_LAYERS = 64  # transformer depth: far above any grokking paper's (1-4), far below a hang


@MODELS.register("grokverify.engine.models:Transformer")
class TransformerSpec(ModelSpec):
    """Paper 2's §4.2 transformer (arXiv 2205.10343): a decoder-only transformer on the two
    tokens [a, b] (no operation token, no "=" token), logits over the classes read at the last
    position. Each block is post-LayerNorm (openai/grok's, whose code the official
    grokking-squared repository copied): x = LN(x + MHA(x)), x = LN(x + MLP(x)), causal
    self-attention, ReLU MLP, linear layers without biases; positions are added as fixed
    sinusoidal encodings.

    Dropout (`dropout`, p; default 0, none) sits where openai/grok puts it: on each block's MLP
    output before its residual add, x = LN(x + Dropout(MLP(x))), and nowhere else (not on the
    embeddings, the attention weights or the attention output; grok's attention dropout is
    commented out). Training steps only: evaluation and probes run without it. A seed's masks
    are its own, so it trains the same alone or in any batch (docs/determinism.md).

    The defaults are paper 2's model; `norm`, `tokens`, `activation`, `positions`, `tie`,
    `mlp_bias` and `init` give the other papers' (Power et al.'s openai/grok, Nanda et al.'s)
    as settings."""

    roles: ClassVar[tuple[str, ...]] = ("E",)
    cpu_flop_rate: ClassVar[float] = 3e10
    kind: Literal["transformer"]
    d: Int = Field(256, ge=1, le=MAX_WIDTH,
                   description="embedding and residual width (paper 2: 256)")
    layers: Int = Field(1, ge=1, le=MAX_LAYERS,
                        description="decoder blocks (paper 2 does not say; 1 as in Nanda et al.'s "
                                    "modular-addition transformer)")
    heads: Int = Field(4, ge=1, le=MAX_WIDTH,
                       description="attention heads, each d / heads wide (paper 2 does not "
                                   "say; 4 is openai/grok's default)")
    mlp: Int = Field(1024, ge=1, le=MAX_WIDTH,
                     description="MLP hidden width (default 4 · 256, the usual 4d)")
    emb_init_std: Float = Field(1.0, gt=0, le=MAX_FACTOR,
                                description="std of the N(0, std²) token embedding init "
                                            "(1: nn.Embedding's default)")
    dropout: Float = Field(0.0, ge=0, lt=1,
                           description="dropout rate p on each block's MLP output, training "
                                       "only (0: none; paper 2's Fig. 7 uses a 'large' rate)")
    norm: Literal["post", "pre", "none"] = Field(
        "post", description="LayerNorm: post (paper 2's and openai/grok's: x = LN(x + f(x))), "
                            "pre (x = x + f(LN(x)), and a final LN before the unembedding) or "
                            "none (Nanda et al. 2023's)")
    tokens: Literal["ab", "a_b_eq", "a_op_b_eq"] = Field(
        "ab", description="the input sequence, read at its last position: [a, b] (paper 2), "
                          "[a, b, =] (Nanda et al.: '=' is token p) or [a, op, b, =] (Power "
                          "et al.'s openai/grok: op is token p, '=' token p + 1)")
    activation: Literal["relu", "gelu"] = Field(
        "relu", description="the MLP's activation (Nanda et al. and openai/grok: relu)")
    positions: Literal["sinusoidal", "learned"] = Field(
        "sinusoidal", description="fixed sinusoidal encodings (paper 2, openai/grok) or a "
                                  "learned (T, d) table drawn N(0, 1/d) (Nanda et al.'s W_pos)")
    tie: bool = Field(False, description="unembed with the token embedding's first classes "
                                         "rows (logits = x Eᵀ) instead of its own matrix")
    mlp_bias: bool = Field(False, description="biases on the MLP's two layers, initialised at 0 "
                                              "(Nanda et al.'s b_in, b_out); no other layer has "
                                              "one")
    init: Literal["uniform", "normal"] = Field(
        "uniform", description="the block and unembedding matrices: uniform U(±1/√fan_in) "
                               "(nn.Linear's) or normal, Nanda et al.'s N(0, 1/d) for every "
                               "block matrix and N(0, 1/classes) for the unembedding (set "
                               "emb_init_std: 1/√d for their embedding)")

    # the settings added after paper 2's records were stored: keyed only when set
    key_defaults: ClassVar[frozenset[str]] = frozenset(
        {"norm", "tokens", "activation", "positions", "tie", "mlp_bias", "init"})

    def sequence(self) -> int:
        """Positions of the input sequence."""
        return {"ab": 2, "a_b_eq": 3, "a_op_b_eq": 4}[self.tokens]

    def vocab(self, p: int) -> int:
        """Rows of the token embedding: the p numbers and the extra tokens."""
        return p + self.sequence() - 2

    @model_validator(mode="after")
    def _heads_divide_d(self) -> TransformerSpec:
        if self.d % self.heads:
            raise ValueError(f"heads ({self.heads}) must divide d ({self.d}): each head is "
                             "d / heads wide")
        return self

    def size(self, p: int, n_classes: int) -> ModelSize:
        """Embedding of the vocabulary, per block q, k, v, o (d × d), the MLP (d × mlp, mlp × d)
        and two LayerNorms (weight and bias), the unembedding, and the (T, d) positions.
        Multiply-adds for every position (attention scores and mixing included)."""
        d, m, n, t = self.d, self.mlp, self.layers, self.sequence()
        block = 4 * d * d + 2 * d * m + 4 * d
        macs = t * n * (4 * d * d + 2 * d * m + 2 * t * d) + d * n_classes
        return ModelSize(self.vocab(p) * d + n * block + d * n_classes + t * d, macs,
                         self.widest())

    def activations(self, p: int, n_classes: int, rows: int, backward: bool) -> int:
        """Training keeps, per row and block, 9d floats a position, the MLP's hidden layer and
        ReLU, each head's scores and weights (and dropout's masks), the logits, and a gradient of
        each; an evaluation holds about one block's working set at its peak."""
        d, m, h = self.d, self.mlp, self.heads
        if backward:
            masks = 4 * d if self.dropout > 0 else 0
            kept = 2 * d + self.layers * (2 * (9 * d + 2 * m) + 8 * h + masks) + 2 * n_classes
            return rows * (2 * kept + ROW_FLOATS)
        return rows * (2 * (4 * d + 2 * m) + 8 * h + 2 * n_classes + ROW_FLOATS)


@MODELS.register("grokverify.engine.models:ImageMLP")
class ImageMLPSpec(ModelSpec):
    """Paper 2's MNIST network (§4.3, App. J; Omnigrok's): a ReLU MLP on the flattened image,
    `depth` linear layers `width` wide, initialised as nn.Linear does (Kaiming-uniform,
    U(±1/√fan_in) for weights and biases) and then every weight and bias multiplied by
    `init_scale` (paper 2's Fig. 8a: 9.0). Regression (the paper's): mean squared error to the
    one-hot target, prediction = the nearest one-hot target (= the largest output)."""

    roles: ClassVar[tuple[str, ...]] = ("W",)
    inputs: ClassVar[str] = "images"
    kind: Literal["image_mlp"]
    depth: Int = Field(3, ge=1, le=MAX_LAYERS, description="linear layers (paper 2: 3)")
    width: Int = Field(200, ge=1, le=MAX_WIDTH, description="hidden width (paper 2: 200)")
    init_scale: Float = Field(1.0, gt=0, le=MAX_FACTOR,
                              description="every initial weight and bias times this (α)")
    output: Literal["classification", "regression"] = Field(
        "regression", description="regression: MSE to one-hot targets (paper 2); "
                                  "classification: cross-entropy")

    def widths(self) -> dict[str, int]:
        return {"width": self.width}

    def size(self, p: int, n_classes: int) -> ModelSize:
        """p is the image's pixels: the first layer p → width, depth − 2 hidden layers, the
        last width → classes (one layer: p → classes); the one-hot targets (a buffer)."""
        w, c = self.width, n_classes
        macs = p * c if self.depth == 1 else p * w + (self.depth - 2) * w * w + w * c
        biases = (self.depth - 1) * w + c
        targets = c * c if self.output == "regression" else 0
        return ModelSize(macs + biases + targets, macs, "width")

    def activations(self, p: int, n_classes: int, rows: int, backward: bool) -> int:
        """The gathered image, each hidden layer's output and its ReLU, the output and its
        loss's working copy (and when training a gradient of each); an evaluation's distance to
        every target."""
        forward = p + 2 * (self.depth - 1) * self.width + 2 * n_classes
        nearest = n_classes if self.output == "regression" and not backward else 0
        return rows * ((2 if backward else 1) * forward + nearest + ROW_FLOATS)


