"""The plugin's kinds, as the package's own are written: pydantic spec classes, no torch."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from grokverify.claim.models import EmbedMLPSpec
from grokverify.claim.probes import ProbeSpec, Roles
from grokverify.kinds import MODELS, PROBES


@MODELS.register("grokverify_example.engine:QuadMLP")
class QuadMLPSpec(EmbedMLPSpec):  # its fields, sizes and roles; another kind
    """Paper 1's MLP with a quadratic activation x² in place of ReLU."""

    kind: Literal["quad_mlp"]  # type: ignore[assignment]


@PROBES.register("grokverify_example.engine:param_rms")
class ParamRmsSpec(ProbeSpec):
    """The root-mean-square entry of each named matrix."""

    inputs: ClassVar[tuple[str, ...]] = ("pairs", "images")
    name: Literal["param_rms"]
    of: Roles = Field(default_factory=lambda: ["E", "W"], min_length=1)

    def curves(self) -> list[str]:
        return [f"param_rms.{role}" for role in self.of]

    def roles_needed(self) -> tuple[str, ...]:
        return tuple(self.of)
