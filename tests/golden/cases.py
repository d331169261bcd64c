"""The golden experiments: tiny, together a few seconds, covering every model kind, optimizer,
fast path and derived form, a probe of each kind and an intervention of each kind."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from grokverify.claim.experiment import ExperimentSpec
from grokverify.engine import numerics
from grokverify.engine.version import RESULTS_VERSION
from grokverify.store import torch_version

TASK = {"op": "add", "p": 7, "train_frac": 0.6, "test_frac": 0.3}
TOY = {"op": "add", "p": 6, "modular": False, "unordered": True, "train_frac": 0.6}
MINIBATCH = {"steps": 40, "eval_interval": 10, "batch_size": 8, "train_threshold": 0.5,
             "val_threshold": 0.2, "early_stop": False}
FULL = {"steps": 40, "eval_interval": 10, "train_threshold": 0.2, "val_threshold": 0.1}
SEEDS = [0, 1, 2]

CASES: dict[str, dict[str, Any]] = {
    "embed_mlp-adamw-table": {"task": TASK, "model": {"kind": "embed_mlp", "d": 8, "hidden": 16},
                              "optimizer": {"name": "adamw", "lr": 0.02, "weight_decay": 0.5,
                                            "emb_lr_mult": 10}, "training": MINIBATCH},
    "embed_mlp-sgd-derived": {"task": TASK, "model": {"kind": "embed_mlp", "d": 8, "hidden": 16},
                              "optimizer": {"name": "sgd", "lr": 0.1, "momentum": 0.9},
                              "training": {**MINIBATCH, "batch_size": 5}},
    "scalar_mlp-adam": {"task": TASK, "model": {"kind": "scalar_mlp", "hidden": 16},
                        "optimizer": {"name": "adam", "lr": 0.01, "weight_decay": 0.01},
                        "training": MINIBATCH},
    "toy-class-step": {"task": TOY, "model": {"kind": "toy_sum", "hidden": 20},
                       "optimizer": {"name": "adamw", "lr": 0.01, "emb_lr_mult": 10,
                                     "emb_weight_decay": 0}, "training": FULL},
    "toy-regression-emb2": {"task": TOY, "model": {"kind": "toy_sum", "hidden": 20, "emb_dim": 2,
                                                   "output": "regression"},
                            "optimizer": {"name": "adam", "lr": 0.01}, "training": FULL},
    "embed_mlp-probes-interventions": {
        "task": TASK, "model": {"kind": "embed_mlp", "d": 8, "hidden": 16},
        "optimizer": {"name": "adamw", "lr": 0.02, "weight_decay": 0.5},
        "training": MINIBATCH,
        "probes": [{"name": "sigma_max", "every": 5}, {"name": "grad_norm_ratio", "every": 10}],
        "interventions": [{"name": "rescale_embedding", "sigma_max": "W"},
                          {"name": "freeze_embeddings",
                           "when": {"curve": "train_acc", "at_least": 0.3}}]},
    "transformer-pca": {"task": TASK, "model": {"kind": "transformer", "d": 8, "layers": 1,
                                                "heads": 2, "mlp": 16},
                        "optimizer": {"name": "adamw", "lr": 0.02, "weight_decay": 1.0},
                        "training": MINIBATCH, "probes": [{"name": "pca", "every": 10}]},
    "toy_matrix-s3": {"task": {"op": "s3", "p": 6, "train_frac": 0.6},
                      "model": {"kind": "toy_matrix", "hidden": 16, "output": "regression",
                                "target_dim": 4},
                      "optimizer": {"name": "adamw", "lr": 0.01, "emb_lr": 0.05},
                      "training": MINIBATCH},
}


def experiment(name: str) -> ExperimentSpec:
    return ExperimentSpec.model_validate(CASES[name])


def digest(result: dict[str, Any]) -> str:
    """A record's result, to the last bit (floats as their exact hex form)."""
    def exact(value: Any) -> Any:
        if isinstance(value, float):
            return value.hex()
        if isinstance(value, dict):
            return {k: exact(v) for k, v in value.items()}
        if isinstance(value, list):
            return [exact(v) for v in value]
        return value

    return hashlib.sha256(json.dumps(exact(result), sort_keys=True).encode()).hexdigest()


def summary_of(result: dict[str, Any]) -> dict[str, Any]:
    """The readable part kept beside the digest, to say what moved when the digest differs."""
    loss = result["curves"]["train_loss"]["values"]
    return {"train_step": result["summary"]["train_step"],
            "val_step": result["summary"]["val_step"],
            "final_train_loss": loss[-1].hex() if loss and loss[-1] is not None else None}


def pinned_environment() -> dict[str, Any] | None:
    """What golden values are made under and stored with (results version, torch, numerics);
    None under GROKVERIFY_NUMERICS=native, since they are made with the pinned numerics only."""
    if numerics.native():
        return None
    return {"results_version": RESULTS_VERSION, "torch": torch_version(),
            "numerics": numerics.PINNED}
