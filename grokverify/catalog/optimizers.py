"""Optimizer names a claim can use (built by `grokverify.engine.optimizers`), and the settings
that belong to some of them only."""

from __future__ import annotations

# Tensors the optimizer keeps per parameter tensor (Adam's two moments; SGD's momentum buffer,
# none without momentum): what `grokverify.budget` counts beside the parameters and gradients.
STATE_COPIES: dict[str, int] = {"adam": 2, "adamw": 2, "sgd": 1}
OPTIMIZER_NAMES = tuple(STATE_COPIES)

# Settings of some optimizers only. Set for another one they are an error (not ignored); an arm
# that changes `name` drops the ones the new optimizer lacks.
ONLY_FOR: dict[str, tuple[str, ...]] = {
    "betas": ("adam", "adamw"), "eps": ("adam", "adamw"),
    "momentum": ("sgd",), "nesterov": ("sgd",)}
