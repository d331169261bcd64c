"""Named random streams (`grokverify.engine.streams`) checked directly: a seed's split,
initialisation and minibatch order each come from their own stream, derived as
docs/determinism.md says (sha256 of "seed|stream|context", first 8 bytes little-endian, shifted
right by one), and none depends on another stream, the seed's batch-mates or torch's global
generator."""

from __future__ import annotations

import hashlib

import numpy as np
import torch

from grokverify.claim.experiment import ExperimentSpec
from grokverify.engine.data import Batches
from grokverify.engine.models import DataShape
from grokverify.engine.streams import stream_seed
from grokverify.engine.tasks import build_dataset
from grokverify.kinds import MODELS

CTX = "task-context"
STREAMS = ("split", "init", "order", "targets", "dropout")


def by_definition(seed: int, stream: str, context: str) -> int:
    digest = hashlib.sha256(f"{seed}|{stream}|{context}".encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1


def test_stream_seeds_follow_their_definition_and_never_collide() -> None:
    seen: dict[int, tuple[int, str, str]] = {}
    for seed in range(50):
        for stream in STREAMS:
            for context in (CTX, "other"):
                value = stream_seed(seed, stream, context)
                assert value == by_definition(seed, stream, context)
                assert value not in seen, (seed, stream, context, seen.get(value))
                seen[value] = (seed, stream, context)


def test_minibatch_order_is_the_order_stream_and_ignores_batch_mates() -> None:
    n_train, batch = 13, 4
    alone = {s: Batches([s], n_train, batch, CTX, torch.device("cpu")).take(10)[:, 0]
             for s in (0, 1, 2)}
    together = Batches([0, 1, 2], n_train, batch, CTX, torch.device("cpu")).take(10)
    for i, s in enumerate((0, 1, 2)):
        assert torch.equal(together[:, i], alone[s])
        gen = torch.Generator().manual_seed(by_definition(s, "order", CTX))
        first = torch.randperm(n_train, generator=gen)
        assert torch.equal(alone[s].reshape(-1)[:12], first[:12])
        init = torch.Generator().manual_seed(by_definition(s, "init", CTX))
        assert not torch.equal(first, torch.randperm(n_train, generator=init))


def _experiment() -> ExperimentSpec:
    return ExperimentSpec.model_validate({
        "task": {"op": "add", "p": 11, "train_frac": 0.5},
        "model": {"kind": "embed_mlp", "d": 8, "hidden": 16},
        "optimizer": {"name": "adamw", "lr": 0.01},
        "training": {"steps": 10, "eval_interval": 5}})


def test_initialisation_ignores_torch_global_generator_and_differs_by_seed() -> None:
    exp = _experiment()
    data = build_dataset(exp.task, 0)
    shape = DataShape(p=exp.task.p, vocab=data.vocab, n_classes=data.n_classes)
    torch.manual_seed(1)
    first = MODELS.implementation(exp.model.kind).for_seed(exp.model, shape, 3).state_dict()
    torch.manual_seed(2)
    torch.rand(100)
    again = MODELS.implementation(exp.model.kind).for_seed(exp.model, shape, 3).state_dict()
    other = MODELS.implementation(exp.model.kind).for_seed(exp.model, shape, 4).state_dict()
    assert all(torch.equal(first[k], again[k]) for k in first)
    assert any(not torch.equal(first[k], other[k]) for k in first)


def test_the_split_is_the_split_stream_of_the_task_alone() -> None:
    """The seed's "split" stream, keyed by the task's canonical form alone: a permutation of the
    121 pairs (the pool's order), then one of that pool whose first 60 rows (0.5 of 121,
    rounded) are the training set; another seed, another split."""
    exp = _experiment()
    data = build_dataset(exp.task, 5)
    rng = np.random.default_rng(by_definition(5, "split", exp.task.canonical()))
    pool = rng.permutation(11 * 11)
    train = np.sort(rng.permutation(pool)[:60])
    assert np.array_equal(train, data.train_idx)
    assert not np.array_equal(build_dataset(exp.task, 6).train_idx, data.train_idx)
