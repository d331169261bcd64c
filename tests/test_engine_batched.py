"""The seed-batched model (`grokverify.engine.batched`) and its fast paths
(`grokverify.engine.fast`) in float64: the derived (torch.func) form is each seed's plain module,
and a fast path computes what the derived form computes, outputs, losses and every gradient."""

from __future__ import annotations

import pytest
import torch
from conftest import assert_each_seed_is_its_plain_module, operands

from grokverify.claim.models import EmbedMLPSpec, ModelSpec, ToySumSpec
from grokverify.engine.batched import BatchedModel
from grokverify.engine.fast import fast_path_for
from grokverify.engine.models import DataShape

FAST_CASES: dict[str, tuple[ModelSpec, DataShape, int]] = {
    "embed_mlp-table": (EmbedMLPSpec(kind="embed_mlp", d=4, hidden=6),
                        DataShape(p=5, vocab=7, n_classes=5), 9),
    "embed_mlp-below-p": (EmbedMLPSpec(kind="embed_mlp", d=4, hidden=6),
                          DataShape(p=5, vocab=7, n_classes=5), 3),
    "toy-emb1": (ToySumSpec(kind="toy_sum", hidden=7), DataShape(p=6, vocab=8, n_classes=11), 9),
    "toy-emb2": (ToySumSpec(kind="toy_sum", hidden=7, emb_dim=2),
                 DataShape(p=6, vocab=8, n_classes=11), 9),
    "toy-regression": (ToySumSpec(kind="toy_sum", hidden=7, output="regression", target_dim=3),
                       DataShape(p=6, vocab=8, n_classes=11), 9),
}


@pytest.mark.parametrize("case", sorted(FAST_CASES))
@pytest.mark.parametrize("frozen", [False, True])
def test_fast_path_equals_the_derived_form_in_float64(case: str, frozen: bool) -> None:
    """Outputs, losses and every gradient of the fast path (forward, and its hand-written step
    where it has one), for weights 1, 0 (diverged: no gradient) and 0.5, each step taken twice
    (gradients set, not accumulated); a frozen embedding gets no gradient from either path."""
    spec, shape, n = FAST_CASES[case]
    a, b = operands(shape.p, 3, n, seed=2)
    y = (a + b) % shape.n_classes
    weight = torch.tensor([1.0, 0.0, 0.5], dtype=torch.float64)
    results = []
    for fast in (True, False):
        model = BatchedModel(spec, shape, [0, 1, 2], dtype=torch.float64,
                             fast_path=fast_path_for(spec, fast))
        if frozen:
            model.leaf("embed.weight").requires_grad_(False)
        out = model(a, b).detach()
        model.loss_and_grads(a, b, y, torch.ones_like(weight))
        loss = model.loss_and_grads(a, b, y, weight)
        results.append((out, loss, {k: model.grad(k) for k in model.names}))
    (out_f, loss_f, g_f), (out_d, loss_d, g_d) = results
    torch.testing.assert_close(out_f, out_d, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(loss_f, loss_d, rtol=1e-12, atol=1e-12)
    for key in g_d:
        if frozen and key == "embed.weight":
            assert g_f[key] is None and g_d[key] is None
            continue
        torch.testing.assert_close(g_f[key], g_d[key], rtol=1e-12, atol=1e-12, msg=key)
        assert not g_f[key][1].any()  # weight 0: no gradient
        assert g_f[key][0].abs().sum() > 0


def test_derived_form_equals_each_plain_module_in_float64() -> None:
    """Seed i of the batched model is seed i's plain module: same outputs, and its slice of the
    batched gradient is the gradient of its own mean loss."""
    spec, shape, n = FAST_CASES["embed_mlp-table"]
    a, b = operands(shape.p, 3, n, seed=3)
    y = (a + b) % shape.n_classes
    model = BatchedModel(spec, shape, [4, 5, 6], dtype=torch.float64)  # no fast path
    assert_each_seed_is_its_plain_module(model, a, b, y)
