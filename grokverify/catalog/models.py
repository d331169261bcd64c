"""Model kinds a claim can name, with their settings. The networks themselves are
`grokverify.engine.models` (one plain nn.Module per kind, registered under the same name).

Each spec names the model's *roles*: the parameters a probe or an intervention can refer to
without knowing the model ("E", the token embedding; "W", the first weight matrix), so that
load-time checks (does this model have an embedding?) need no torch.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from grokverify.specbase import Int, StrictModel

ROLE_WORDS = {"E": "the token embedding matrix", "W": "the first weight matrix"}


class ModelSpec(StrictModel):
    """Base of every model kind's spec."""

    roles: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def has_embedding(cls) -> bool:
        return "E" in cls.roles


class EmbedMLPSpec(ModelSpec):
    """Paper 1: concatenated embeddings of [a, op, b, =] → Linear → ReLU → Linear."""

    roles: ClassVar[tuple[str, ...]] = ("E", "W")
    kind: Literal["embed_mlp"]
    d: Int = Field(128, ge=1, description="embedding width")
    hidden: Int = Field(512, ge=1, description="hidden width (paper: 4d)")
    emb_init_std: float = Field(1.0, gt=0, description="std of the N(0, std²) embedding init")


class ScalarMLPSpec(ModelSpec):
    """Paper 1's baseline: raw scalars [a, p, b, p+1], no embedding → Linear → ReLU → Linear."""

    roles: ClassVar[tuple[str, ...]] = ("W",)
    kind: Literal["scalar_mlp"]
    hidden: Int = Field(512, ge=1)


class ToySumSpec(ModelSpec):
    """Paper 2's toy: Dec(E_a + E_b), decoder emb_dim → hidden → hidden → out with tanh."""

    roles: ClassVar[tuple[str, ...]] = ("E", "W")
    kind: Literal["toy_sum"]
    emb_dim: Int = Field(1, ge=1)
    hidden: Int = Field(200, ge=1)
    init_scale: float = Field(1.0, gt=0, description="embeddings drawn from U[-s/2, s/2]")
    output: Literal["classification", "regression"] = "classification"
    target_dim: Int = Field(30, ge=1, description="regression: dimension of the random targets")


MODEL_SPECS: dict[str, type[ModelSpec]] = {
    "embed_mlp": EmbedMLPSpec,
    "scalar_mlp": ScalarMLPSpec,
    "toy_sum": ToySumSpec,
}
