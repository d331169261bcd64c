"""Optimizer names a claim can use (built by `grokverify.engine.optimizers`), and the settings
that belong to some of them only."""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator, model_validator

from grokverify.claim.base import Float, StrictModel, known
from grokverify.claim.limits import MAX_FACTOR

# Tensors the optimizer keeps per parameter tensor (Adam's two moments; SGD's momentum buffer,
# none without momentum): what `grokverify.claim.budget` counts beside the parameters and gradients.
STATE_COPIES: dict[str, int] = {"adam": 2, "adamw": 2, "sgd": 1}
OPTIMIZER_NAMES = tuple(STATE_COPIES)

# Settings of some optimizers only. Set for another one they are an error (not ignored); an arm
# that changes `name` drops the ones the new optimizer lacks (`OptimizerSpec.renamed`).
ONLY_FOR: dict[str, tuple[str, ...]] = {
    "betas": ("adam", "adamw"), "eps": ("adam", "adamw"),
    "momentum": ("sgd",), "nesterov": ("sgd",)}


class OptimizerSpec(StrictModel):
    name: str = Field(description="adam, adamw or sgd")
    lr: Float = Field(gt=0)
    betas: tuple[Float, Float] | None = Field(
        None, description="adam/adamw only; null: torch's default (0.9, 0.999)")
    eps: Float = Field(1e-8, gt=0)
    momentum: Float = Field(0.0, ge=0, lt=1, description="sgd only")
    nesterov: bool = False
    weight_decay: Float = Field(0.0, ge=0)
    emb_lr_mult: Float = Field(1.0, gt=0, le=MAX_FACTOR,
                               description="c: embedding lr = c * lr (Adam-LR)")
    emb_lr: Float | None = Field(
        None, gt=0, description="the embedding lr itself, for sweeps that hold it while lr "
                                "moves (paper 2's Fig. 6); null: emb_lr_mult * lr")
    emb_weight_decay: Float | None = Field(None, ge=0, description="null: same as weight_decay")

    @field_validator("name")
    @classmethod
    def _known_name(cls, v: str) -> str:
        return known(v, OPTIMIZER_NAMES, "optimizer")

    @field_validator("betas")
    @classmethod
    def _betas_in_range(cls, v: tuple[float, float] | None) -> tuple[float, float] | None:
        if v is not None and not all(0 <= b < 1 for b in v):
            raise ValueError(f"betas must lie in [0, 1), got {list(v)}")
        return v

    @property
    def embedding_lr(self) -> float:
        return self.lr * self.emb_lr_mult if self.emb_lr is None else self.emb_lr

    @model_validator(mode="after")
    def _fields_apply(self) -> OptimizerSpec:
        for key, names in ONLY_FOR.items():
            default = type(self).model_fields[key].default
            if self.name not in names and getattr(self, key) != default:
                raise ValueError(f"{key} applies to {'/'.join(names)} only, not {self.name}")
        if self.nesterov and self.momentum == 0:
            raise ValueError("nesterov needs momentum > 0")
        if self.emb_lr is not None and self.emb_lr_mult != 1:
            raise ValueError("give the embedding lr once: emb_lr or emb_lr_mult, not both")
        return self

    @classmethod
    def renamed(cls, base: dict[str, Any], name: Any) -> dict[str, Any]:
        """`base` without the settings that optimizer `name` does not have."""
        return {k: v for k, v in base.items() if name in ONLY_FOR.get(k, (name,))}
