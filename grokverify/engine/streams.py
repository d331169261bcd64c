"""Named torch random streams (see grokverify/rng.py): a seed's initialisation and minibatch
order come from (seed, stream, context) alone, never from what else shares its batch.

Torch streams in use: "init" and "targets" (the model's initial weights and regression
targets), "order" (minibatch permutations), "sample" (the rows `gradient_sampling` draws from
its weights; context the task's canonical form, as "order"), "hessian_batch" and "hessian_v"
(the hessian_max probe's rows and start vectors), "dropout" (a model's training-step masks,
`Model.step_noise`, one draw a step; context the model's at dropout 0, as "init")."""

from __future__ import annotations

import torch

from grokverify.rng import stream_seed


def torch_generator(seed: int, stream: str, context: str = "") -> torch.Generator:
    gen = torch.Generator(device="cpu")
    gen.manual_seed(stream_seed(seed, stream, context))
    return gen
