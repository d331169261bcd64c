"""Interventions an arm can declare: changes to training at declared points.

A spec names the intervention and when it acts; `grokverify.engine.interventions` registers the
hooks under the same name. Points: after initialisation, from a step on, or from the first
evaluation at which a seed's condition holds (e.g. train accuracy >= 0.99), per seed.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, model_validator

from grokverify.catalog.limits import MAX_FACTOR, MAX_STEPS
from grokverify.specbase import Float, Int, StrictModel

EVAL_CURVES = ("train_acc", "val_acc", "train_loss", "val_loss")


class Condition(StrictModel):
    """A seed's evaluation curve at or past a value; checked at every evaluation."""

    curve: Literal["train_acc", "val_acc", "train_loss", "val_loss"]
    at_least: Float | None = None
    at_most: Float | None = None

    @model_validator(mode="after")
    def _one_bound(self) -> Condition:
        if (self.at_least is None) == (self.at_most is None):
            raise ValueError("give exactly one of at_least, at_most")
        return self

    def words(self) -> str:
        op, value = (">=", self.at_least) if self.at_least is not None else ("<=", self.at_most)
        return f"{self.curve} {op} {value:g}"


class InterventionSpec(StrictModel):
    roles: ClassVar[tuple[str, ...]] = ()

    def roles_needed(self) -> tuple[str, ...]:
        return self.roles


class FreezeEmbeddingsSpec(InterventionSpec):
    """Stop updating the embedding E: from a step (0: never trained), or from the first
    evaluation at which the seed's condition holds. A frozen E keeps its value exactly."""

    roles: ClassVar[tuple[str, ...]] = ("E",)
    name: Literal["freeze_embeddings"]
    from_step: Int | None = Field(None, ge=0, le=MAX_STEPS,
                                  description="freeze after this many steps")
    when: Condition | None = Field(None, description="freeze once this holds (per seed)")

    @model_validator(mode="after")
    def _one_trigger(self) -> FreezeEmbeddingsSpec:
        if (self.from_step is None) == (self.when is None):
            raise ValueError("give exactly one of from_step, when")
        return self


class RescaleEmbeddingSpec(InterventionSpec):
    """Rescale E after initialisation, per seed: by a factor, or so that σmax(E) is a number or
    equals σmax(W) ("W": paper 1's σmax-matched initialisation)."""

    roles: ClassVar[tuple[str, ...]] = ("E",)
    name: Literal["rescale_embedding"]
    factor: Float | None = Field(None, gt=0, le=MAX_FACTOR, description="E ← factor · E")
    sigma_max: Float | Literal["W"] | None = Field(
        None, description="E ← E · target / σmax(E), target a number or σmax(W) ('W')")

    @model_validator(mode="after")
    def _one_target(self) -> RescaleEmbeddingSpec:
        if (self.factor is None) == (self.sigma_max is None):
            raise ValueError("give exactly one of factor, sigma_max")
        if isinstance(self.sigma_max, float) and not 0 < self.sigma_max <= MAX_FACTOR:
            raise ValueError(f"sigma_max must be 'W' or a number in (0, {MAX_FACTOR:g}], got "
                             f"{self.sigma_max}")
        return self

    def roles_needed(self) -> tuple[str, ...]:
        return ("E", "W") if self.sigma_max == "W" else ("E",)


INTERVENTION_SPECS: dict[str, type[InterventionSpec]] = {
    "freeze_embeddings": FreezeEmbeddingsSpec,
    "rescale_embedding": RescaleEmbeddingSpec,
}
