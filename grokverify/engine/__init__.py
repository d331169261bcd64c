"""The training engine: models (one plain nn.Module per kind, seed-batched by torch.func), the
optimizers, the seed-batched training loop, probes and interventions.

This package's own import is light (the schema and the store import `version` without torch);
its modules import torch.
"""
