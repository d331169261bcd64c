"""Paper 2's transformer (`grokverify.engine.models.Transformer`): its forward against a hand
computation and an independent numpy implementation, its seed-batched form (torch.func.vmap)
against each seed's plain module, its initialisation from the seed's streams only, and a
batched seed's training record bit for bit against the same seed trained alone."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from test_engine_equivalence import assert_each_seed_is_its_plain_module

from grokverify.claim.experiment import ExperimentSpec
from grokverify.claim.models import TransformerSpec
from grokverify.engine.batched import BatchedModel
from grokverify.engine.loop import train_seeds
from grokverify.engine.models import DataShape, Transformer, sinusoid

SHAPE = DataShape(p=5, vocab=7, n_classes=5)


def _spec(**kw: object) -> TransformerSpec:
    return TransformerSpec.model_validate({"kind": "transformer", "d": 8, "layers": 2,
                                           "heads": 2, "mlp": 12, **kw})


def _layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float = 1e-5) -> np.ndarray:
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def _numpy_forward(model: Transformer, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The transformer written out in numpy, one example and one head at a time."""
    sd = {k: v.detach().double().numpy() for k, v in model.state_dict().items()}
    heads, d = model.spec.heads, model.spec.d  # type: ignore[attr-defined]
    dh = d // heads
    out = []
    for i, j in zip(a, b, strict=True):
        x = np.stack([sd["embed.weight"][i], sd["embed.weight"][j]]) + sd["positions"]
        for n in range(model.spec.layers):  # type: ignore[attr-defined]
            w = {k.split(".", 2)[2]: v for k, v in sd.items() if k.startswith(f"blocks.{n}.")}
            q, k, v = x @ w["q.weight"].T, x @ w["k.weight"].T, x @ w["v.weight"].T
            mixed = np.zeros_like(x)
            for h in range(heads):
                cols = slice(h * dh, (h + 1) * dh)
                for t in range(2):
                    scores = np.array([q[t, cols] @ k[s, cols] / math.sqrt(dh)
                                       for s in range(t + 1)])  # causal: s <= t
                    att = np.exp(scores - scores.max())
                    att /= att.sum()
                    mixed[t, cols] = sum(att[s] * v[s, cols] for s in range(t + 1))
            x = _layer_norm(x + mixed @ w["o.weight"].T, w["norm1.weight"], w["norm1.bias"])
            mlp = np.maximum(x @ w["fc1.weight"].T, 0) @ w["fc2.weight"].T
            x = _layer_norm(x + mlp, w["norm2.weight"], w["norm2.bias"])
        out.append(x[-1] @ sd["unembed.weight"].T)
    return np.array(out)


def test_forward_equals_a_hand_computation() -> None:
    """d = 2, one block, one head: with q = k = 0 attention is uniform over the visible
    positions, v = o = identity, the MLP zero, unembedding the identity. The last position's
    residual is then x1 + (x0 + x1)/2, and LayerNorm maps a 2-vector [u, w] to ±[1, −1] ·
    |u − w| / sqrt((u − w)² + 4 eps) (sign of u − w) twice over."""
    model = Transformer.for_seed(_spec(d=2, layers=1, heads=1, mlp=3), SHAPE, 0).double()
    with torch.no_grad():
        blk = model.blocks[0]
        for lin in (blk.q, blk.k, blk.fc1, blk.fc2):
            lin.weight.zero_()
        for lin in (blk.v, blk.o, model.unembed):
            lin.weight.copy_(torch.eye(*lin.weight.shape))
        model.embed.weight.copy_(torch.tensor([[0.0, 0.0], [1.0, 0.0], [0.0, 3.0], [2.0, 2.0],
                                               [-1.0, 0.5]]))
    pos = sinusoid(2, 2).double().numpy()  # [[sin 0, cos 0], [sin 1, cos 1]]
    np.testing.assert_allclose(pos, [[0.0, 1.0], [math.sin(1), math.cos(1)]], atol=1e-7)
    a, b = 1, 2
    x0 = np.array([1.0, 0.0]) + pos[0]
    x1 = np.array([0.0, 3.0]) + pos[1]
    r = x1 + (x0 + x1) / 2
    eps = 1e-5
    diff = r[0] - r[1]
    once = np.array([1.0, -1.0]) * diff / math.sqrt(diff ** 2 + 4 * eps)
    twice = np.array([1.0, -1.0]) * (2 * once[0]) / math.sqrt((2 * once[0]) ** 2 + 4 * eps)
    got = model(torch.tensor([a]), torch.tensor([b]))[0].detach().numpy()
    np.testing.assert_allclose(got[:2], twice, rtol=1e-6)


def test_forward_equals_an_independent_numpy_implementation() -> None:
    model = Transformer.for_seed(_spec(), SHAPE, 3).double()
    a, b = np.array([0, 4, 2, 3]), np.array([1, 4, 0, 2])
    got = model(torch.as_tensor(a), torch.as_tensor(b)).detach().numpy()
    np.testing.assert_allclose(got, _numpy_forward(model, a, b), rtol=1e-10, atol=1e-12)


def test_initialisation_comes_from_the_seed_alone() -> None:
    """Same seed, same weights, whatever torch's global generator holds (which is not used);
    another seed, other weights; the position buffer is the fixed encoding."""
    state = torch.random.get_rng_state()
    one = Transformer.for_seed(_spec(), SHAPE, 1).state_dict()
    assert torch.equal(torch.random.get_rng_state(), state)
    torch.manual_seed(123)
    again = Transformer.for_seed(_spec(), SHAPE, 1).state_dict()
    other = Transformer.for_seed(_spec(), SHAPE, 2).state_dict()
    assert all(torch.equal(one[k], again[k]) for k in one)
    assert not torch.equal(one["embed.weight"], other["embed.weight"])
    assert torch.equal(one["positions"], sinusoid(2, 8))
    assert torch.equal(one["blocks.0.norm1.weight"], torch.ones(8))


def test_heads_must_divide_d() -> None:
    with pytest.raises(ValueError, match="must divide d"):
        _spec(d=8, heads=3)


def test_vmapped_form_equals_each_plain_module_in_float64() -> None:
    """The engine's seed-batched transformer (the plain module under torch.func.vmap): seed i's
    outputs and the gradient of its mean loss are seed i's plain module's."""
    gen = torch.Generator().manual_seed(0)
    a, b = torch.randint(0, 5, (3, 9), generator=gen), torch.randint(0, 5, (3, 9), generator=gen)
    y = (a + b) % 5
    model = BatchedModel(_spec(), SHAPE, [4, 5, 6], dtype=torch.float64)
    assert_each_seed_is_its_plain_module(model, a, b, y)


def test_batched_seed_is_bit_identical_to_seed_trained_alone() -> None:
    """A seed's whole record, PCA probe curves included, is the same to the last bit trained
    with others (two shards), alone (beside its ghost) and in another chunk."""
    exp = ExperimentSpec.model_validate({
        "task": {"op": "add", "p": 7, "train_frac": 0.6, "test_frac": 0.3},
        "model": {"kind": "transformer", "d": 8, "layers": 1, "heads": 2, "mlp": 16},
        "optimizer": {"name": "adamw", "lr": 0.01, "weight_decay": 1.0},
        "training": {"steps": 30, "eval_interval": 10, "batch_size": 8, "early_stop": False},
        "probes": [{"name": "pca", "every": 10}]})
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        batched = {r["seed"]: r for r in train_seeds(exp, [0, 1, 2])}
        torch.set_num_threads(1)
        alone = {r["seed"]: r for r in train_seeds(exp, [1])}
        pair = {r["seed"]: r for r in train_seeds(exp, [2, 0])}
    finally:
        torch.set_num_threads(threads)
    assert alone[1] == batched[1] and pair[2] == batched[2] and pair[0] == batched[0]
    assert "pca.eff_dim" in batched[0]["curves"]
    assert batched[0]["curves"]["train_loss"] != batched[1]["curves"]["train_loss"]
