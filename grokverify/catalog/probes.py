"""Probes a claim can declare: named per-seed measurements recorded during training as curves.

A probe spec names the probe, how often it is measured (`every` steps, from step 0) and its
arguments; `grokverify.engine.probes` registers the seed-batched function under the same name.
Each spec says which curves it records (dotted names, e.g. "sigma_max.E"), which model roles it
reads, and whether it reads the parameters (state after `step` updates) or the gradient of the
step's minibatch loss taken from that state.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, field_validator

from grokverify.catalog.limits import MAX_STEPS
from grokverify.specbase import Int, StrictModel

Role = Literal["E", "W"]


class ProbeSpec(StrictModel):
    reads: ClassVar[Literal["params", "grads"]] = "params"
    every: Int = Field(ge=1, le=MAX_STEPS,
                       description="measured at steps 0, every, 2 every, ... (the budget too "
                                   "when it is a multiple)")

    def curves(self) -> list[str]:
        raise NotImplementedError

    def roles_needed(self) -> tuple[str, ...]:
        raise NotImplementedError


class SigmaMaxSpec(ProbeSpec):
    """The largest singular value of each named matrix (paper 1's σmax(E), σmax(W))."""

    name: Literal["sigma_max"]
    of: list[Role] = Field(default_factory=lambda: ["E", "W"], min_length=1,
                           description="roles: E (embedding), W (first weight matrix)")

    @field_validator("of")
    @classmethod
    def _unique(cls, v: list[str]) -> list[str]:
        if len(set(v)) != len(v):
            raise ValueError(f"each role once, got {v}")
        return v

    def curves(self) -> list[str]:
        return [f"sigma_max.{role}" for role in self.of]

    def roles_needed(self) -> tuple[str, ...]:
        return tuple(self.of)


class GradNormRatioSpec(ProbeSpec):
    """Frobenius norms of the gradients of E and W, and their ratio ‖∇E‖/‖∇W‖ (paper 1's
    Prop. 4.1 compares it with σmax(W)/σmax(E))."""

    reads: ClassVar[Literal["params", "grads"]] = "grads"
    name: Literal["grad_norm_ratio"]

    def curves(self) -> list[str]:
        return ["grad_norm.E", "grad_norm.W", "grad_norm_ratio"]

    def roles_needed(self) -> tuple[str, ...]:
        return ("E", "W")


PROBE_SPECS: dict[str, type[ProbeSpec]] = {
    "sigma_max": SigmaMaxSpec,
    "grad_norm_ratio": GradNormRatioSpec,
}
