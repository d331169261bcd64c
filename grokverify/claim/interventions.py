"""Interventions an arm can declare: changes to training at declared points.

A spec names the intervention and when it acts, and is registered with the hooks that carry it
out (`grokverify.engine.interventions`). Points: after initialisation, from a step on, or from
the first evaluation at which a seed's condition holds (e.g. train accuracy >= 0.99), per seed.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, model_validator

from grokverify.claim.base import Float, Int, StrictModel
from grokverify.claim.limits import MAX_FACTOR, MAX_STEPS
from grokverify.kinds import INTERVENTIONS

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
    inputs: ClassVar[tuple[str, ...]] = ("pairs",)  # the task inputs it can change training on

    def roles_needed(self) -> tuple[str, ...]:
        return self.roles

    def curves(self) -> list[str]:
        """The curves it records in each seed's record (a value metric or check can read)."""
        return []


@INTERVENTIONS.register("grokverify.engine.interventions:FreezeEmbeddings")
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


@INTERVENTIONS.register("grokverify.engine.interventions:RescaleEmbedding")
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


@INTERVENTIONS.register("grokverify.engine.interventions:AdaptiveLRRatio")
class AdaptiveLRRatioSpec(InterventionSpec):
    """Paper 1's Prop. 4.1 recomputed during training, per seed: every `every` steps the
    embedding's learning rate becomes c_s times W's, c_s = k · σmax(E_s)/σmax(W_s) · f_W/f_E
    (f_E, f_W: the seed's update frequencies, as the `token_frequency` probe defines them),
    clamped to [c_min, c_max] when given. Prop. 4.1 states a proportionality only, so k is
    declared; k = 1 gives c ≈ 18 at initialisation at the paper's sizes (σmax(E)/σmax(W) ≈ 18,
    claims/referee_init_sigma_ratio.yaml; f_W/f_E ≈ 1 at batch 512). The c_s used from step t on
    is computed from the parameters after t updates, t = 0, every, 2·every, ..., and replaces
    the optimizer's c (emb_lr_mult) for that seed; each is recorded in the curve
    `adaptive_lr_ratio.c`. It rescales the embedding's change over each step, so it must come
    after any intervention that writes E (checked when training starts); after
    freeze_embeddings, a frozen E stays frozen."""

    roles: ClassVar[tuple[str, ...]] = ("E", "W")
    name: Literal["adaptive_lr_ratio"]
    every: Int = Field(ge=1, le=MAX_STEPS, description="steps between recomputations of c")
    k: Float = Field(1.0, gt=0, le=MAX_FACTOR,
                     description="c = k · σmax(E)/σmax(W) · f_W/f_E (Prop. 4.1's constant)")
    c_min: Float | None = Field(None, gt=0, le=MAX_FACTOR, description="lower clamp of c")
    c_max: Float | None = Field(None, gt=0, le=MAX_FACTOR, description="upper clamp of c")

    def curves(self) -> list[str]:
        return [f"{self.name}.c"]

    @model_validator(mode="after")
    def _ordered_clamp(self) -> AdaptiveLRRatioSpec:
        if self.c_min is not None and self.c_max is not None and self.c_min > self.c_max:
            raise ValueError(f"c_min ({self.c_min:g}) exceeds c_max ({self.c_max:g})")
        return self


@INTERVENTIONS.register("grokverify.engine.interventions:GradientSampling")
class GradientSamplingSpec(InterventionSpec):
    """Paper 1's Appendix A sampling rule, never run in the paper: minibatches are drawn with
    replacement from p_i ∝ exp(L_i²/γ) over the seed's training rows, L_i the norm of the
    gradient of row i's loss with respect to all parameters (exact per-example gradients),
    recomputed from the parameters after t updates for t = 0, every, 2·every, ...; the minibatch
    loss stays the plain mean (no importance weights). γ is absolute (`gamma`, in units of
    squared gradient norm) or `gamma_relative` × the seed's current mean L_i² (scale-free).
    Each recomputation records the curves `gradient_sampling.ess_share` (1/(n Σ p_i²): 1 is
    uniform) and `gradient_sampling.max_weight` (n · max p_i). Full batch (batch_size null):
    each step draws as many rows as the training set has, with replacement, from p."""

    name: Literal["gradient_sampling"]
    every: Int = Field(ge=1, le=MAX_STEPS, description="steps between recomputations of p")
    gamma: Float | None = Field(None, ge=1 / MAX_FACTOR, le=MAX_FACTOR,
                                description="γ in units of squared gradient norm")
    gamma_relative: Float | None = Field(
        None, ge=1 / MAX_FACTOR, le=MAX_FACTOR,
        description="γ as a multiple of the seed's current mean of L_i² over its rows")

    def curves(self) -> list[str]:
        return [f"{self.name}.{k}" for k in ("ess_share", "max_weight")]

    @model_validator(mode="after")
    def _one_gamma(self) -> GradientSamplingSpec:
        if (self.gamma is None) == (self.gamma_relative is None):
            raise ValueError("give exactly one of gamma, gamma_relative")
        return self


