"""The plugin's implementations (torch): a plain one-seed nn.Module, from which the engine
derives the seed-batched form, and a probe over the batched model."""

from __future__ import annotations

from torch import Tensor

from grokverify.engine.batched import BatchedModel
from grokverify.engine.models import EmbedMLP, tokens
from grokverify.engine.probes import ProbeContext
from grokverify_example.specs import ParamRmsSpec, QuadMLPSpec


class QuadMLP(EmbedMLP):
    """Paper 1's MLP (its layers and initialisation) with x² in place of ReLU; the engine's
    fast paths are chosen by kind, so this kind takes the derived batched form."""

    spec: QuadMLPSpec

    def forward(self, a: Tensor, b: Tensor) -> Tensor:
        x = self.embed(tokens(a, b, self.shape.p)).flatten(-2)
        return self.fc2(self.fc1(x) ** 2)


def param_rms(model: BatchedModel, spec: ParamRmsSpec, ctx: ProbeContext) -> dict[str, Tensor]:
    out = {}
    for role in spec.of:
        flat = model.param(model.role(role)).detach().double().flatten(1)
        out[f"param_rms.{role}"] = flat.pow(2).mean(dim=1).sqrt()
    return out
