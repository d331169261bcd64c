"""Optimizer names a claim can use (built by `grokverify.engine.optimizers`), and the settings
that belong to some of them only."""

from __future__ import annotations

OPTIMIZER_NAMES = ("adam", "adamw", "sgd")

# Settings of some optimizers only. Set for another one they are an error (not ignored); an arm
# that changes `name` drops the ones the new optimizer lacks.
ONLY_FOR: dict[str, tuple[str, ...]] = {
    "betas": ("adam", "adamw"), "eps": ("adam", "adamw"),
    "momentum": ("sgd",), "nesterov": ("sgd",)}
