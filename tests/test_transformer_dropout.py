"""Dropout in paper 2's transformer (`TransformerSpec.dropout`): masks drawn per seed and step
from the seed's own "dropout" stream, so a batched seed's record is bit for bit the seed's
alone; at p = 0 nothing changes (key, draws, record); the masks drop a share p of the units and
scale the rest by 1/(1 - p); evaluation runs without dropout; a rate outside [0, 1) is refused
with the field named."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from test_engine_equivalence import assert_each_seed_is_its_plain_module

from grokverify.claim.experiment import ExperimentSpec
from grokverify.claim.models import TransformerSpec
from grokverify.cli import main
from grokverify.engine.batched import BatchedModel, plain_copy
from grokverify.engine.loop import train_seeds
from grokverify.engine.models import DataShape, Transformer, mean_loss_of
from grokverify.engine.streams import torch_generator

SHAPE = DataShape(p=5, vocab=7, n_classes=5)
MODEL = {"kind": "transformer", "d": 8, "layers": 2, "heads": 2, "mlp": 12}


def _spec(**kw: object) -> TransformerSpec:
    return TransformerSpec.model_validate({**MODEL, **kw})


def _exp(dropout: float | None) -> ExperimentSpec:
    model = {**MODEL, "layers": 1, "mlp": 16}
    if dropout is not None:
        model["dropout"] = dropout
    return ExperimentSpec.model_validate({
        "task": {"op": "add", "p": 7, "train_frac": 0.6, "test_frac": 0.3},
        "model": model,
        "optimizer": {"name": "adamw", "lr": 0.01, "weight_decay": 1.0},
        "training": {"steps": 30, "eval_interval": 10, "batch_size": 8, "early_stop": False},
        "probes": [{"name": "pca", "every": 10}]})



def model_for(p: float) -> Transformer:
    """Seed 7's transformer at dropout p."""
    return Transformer.for_seed(_spec(dropout=p), SHAPE, 7)  # type: ignore[return-value]

def _operands(s: int, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(0)
    a, b = (torch.randint(0, SHAPE.p, (s, n), generator=gen) for _ in range(2))
    return a, b, (a + b) % SHAPE.p


def _records(exp: ExperimentSpec, seeds: list[int], threads: int) -> dict[int, dict]:
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        return {r["seed"]: r for r in train_seeds(exp, seeds)}
    finally:
        torch.set_num_threads(before)


def test_batched_seed_with_dropout_is_bit_identical_to_seed_trained_alone() -> None:
    """The engine's core guarantee with dropout 0.5: a seed's whole record is the same to the
    last bit with others (two shards), alone (beside its ghost), in another chunk and again."""
    exp = _exp(0.5)
    batched = _records(exp, [0, 1, 2], 2)
    assert batched == _records(exp, [0, 1, 2], 2)
    alone = _records(exp, [1], 1)
    pair = _records(exp, [2, 0], 1)
    assert alone[1] == batched[1] and pair[2] == batched[2] and pair[0] == batched[0]
    # dropout trains differently from the same start (the initial weights are the same)
    plain = _records(_exp(None), [1], 1)[1]["curves"]["train_loss"]["values"]
    dropped = batched[1]["curves"]["train_loss"]["values"]
    assert dropped[0] == plain[0] and dropped[1:] != plain[1:]


def test_dropout_zero_is_no_dropout() -> None:
    """p = 0 set explicitly is the default: the same store key, no noise drawn, the same
    record; an all-ones mask is no mask."""
    assert _exp(0.0).canonical() == _exp(None).canonical()
    assert '"dropout":0.5' in _exp(0.5).canonical()
    assert _records(_exp(0.0), [0, 1], 1) == _records(_exp(None), [0, 1], 1)
    model = BatchedModel(_spec(dropout=0.0), SHAPE, [0, 1], dtype=torch.float64)
    assert model.step_noise(4) == {}
    a, b, y = _operands(2, 9)
    assert_each_seed_is_its_plain_module(model, a, b, y)  # training without noise
    plain = Transformer.for_seed(_spec(), SHAPE, 3)
    ones = {f"mlp_dropout.{i}": torch.ones(9, 2, 8) for i in range(2)}
    assert torch.equal(plain(a[0], b[0], noise=ones), plain(a[0], b[0]))


def test_masks_drop_a_share_p_and_scale_the_rest() -> None:
    """Known answer: over many draws the share of zeroed units is p (within 5 standard
    errors), every kept unit is exactly 1/(1 - p), the masks are the seed's "dropout" stream
    thresholded at p (keyed without the rate), and a lower rate drops a subset of the units
    a higher one drops."""
    rows, p = 4000, 0.3
    spec = _spec(dropout=p)
    model = Transformer.for_seed(spec, SHAPE, 7)
    gen = Transformer.noise_generator(spec, SHAPE, 7)
    assert gen is not None
    masks = model.step_noise(gen, rows)
    assert sorted(masks) == ["mlp_dropout.0", "mlp_dropout.1"]
    m = torch.stack(list(masks.values()))
    assert m.shape == (2, rows, 2, 8) and m.dtype == torch.float32
    kept = torch.tensor(1.0) / (1 - p)
    assert bool(((m == 0) | (m == kept)).all())
    dropped = (m == 0).double().mean().item()
    assert abs(dropped - p) < 5 * (p * (1 - p) / m.numel()) ** 0.5
    stream = torch_generator(7, "dropout", Transformer.stream_key(_spec(), SHAPE))
    u = torch.rand((2, rows, 2, 8), generator=stream)
    assert torch.equal(m == 0, u < p)
    low = Transformer.noise_generator(_spec(dropout=0.1), SHAPE, 7)
    assert low is not None
    low_masks = torch.stack(list(model_for(0.1).step_noise(low, rows).values()))
    assert bool(((low_masks == 0) <= (m == 0)).all())
    assert model_for(0.0).step_noise(torch.Generator(), rows) == {}


def test_a_step_with_dropout_is_each_seeds_plain_module_with_its_masks() -> None:
    """float64: the batched step's gradient of seed i is seed i's plain module's, run with the
    masks seed i's own generator gives (drawn here independently of the batch)."""
    spec, seeds = _spec(dropout=0.5), [4, 5, 6]
    a, b, y = _operands(3, 9)
    model = BatchedModel(spec, SHAPE, seeds, dtype=torch.float64)
    model.loss_and_grads(a, b, y, torch.ones(3, dtype=torch.float64))
    for i, seed in enumerate(seeds):
        plain = plain_copy(model, i)
        gen = Transformer.noise_generator(spec, SHAPE, seed)
        assert gen is not None
        noise = {k: v.double() for k, v in plain.step_noise(gen, 9).items()}
        mean_loss_of(plain, plain(a[i], b[i], noise=noise), y[i]).backward()
        for name, param in plain.named_parameters():
            torch.testing.assert_close(model.grad(name)[i], param.grad, rtol=1e-12,
                                       atol=1e-13, msg=name)
    # the next step draws the next masks: a second step's gradient differs from the first's
    first = model.grad("blocks.0.fc2.weight").clone()
    model.loss_and_grads(a, b, y, torch.ones(3, dtype=torch.float64))
    assert not torch.equal(first, model.grad("blocks.0.fc2.weight"))


def test_evaluation_runs_without_dropout() -> None:
    """Evaluation (the batched forward, the derived form the probes use) draws no mask: it is
    the same twice, leaves the dropout streams where they were, and equals the p = 0 model with
    the same (seed-determined) weights."""
    a, b, _ = _operands(2, 9)
    model = BatchedModel(_spec(dropout=0.5), SHAPE, [0, 1])
    states = [g.get_state() for g in model._noise_gens]
    with torch.no_grad():
        first, second = model(a, b), model(a, b)
        derived = model.derived_forward(a, b)
        reference = BatchedModel(_spec(), SHAPE, [0, 1])(a, b)
    assert torch.equal(first, second) and torch.equal(first, derived)
    assert torch.equal(first, reference)
    assert all(torch.equal(g.get_state(), s)
               for g, s in zip(model._noise_gens, states, strict=True))


CLAIM = """\
id: dropout_test
title: A dropout test claim
statement: dropout removes the delay.
source: {arxiv: "2205.10343", where: Fig. 7, role: paper_claim, quote: a quote}
base:
  task: {op: add, p: 7, train_frac: 0.6}
  model: {kind: transformer, d: 8, layers: 1, heads: 2, mlp: 16, dropout: RATE}
  optimizer: {name: adamw, lr: 0.01}
  training: {steps: 20, eval_interval: 10, batch_size: 8}
arms:
  a: {}
scales:
  quick: {description: small}
seeds: 2
metric: {name: grokking_lag}
criterion: {name: value, arm: a, target: 0, tol: 100, censored: as_budget}
"""


@pytest.mark.parametrize("rate", ["1.0", "-0.1", "1.5", "true"])
def test_a_rate_outside_zero_to_one_is_refused_with_the_field_named(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, rate: str) -> None:
    path = tmp_path / "claim.yaml"
    path.write_text(CLAIM.replace("RATE", rate))
    assert main(["validate", str(path)]) == 2
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    assert "base.model.dropout" in err, err
    path.write_text(CLAIM.replace("RATE", "0.99"))
    assert main(["validate", str(path)]) == 0
    with pytest.raises(ValueError, match="dropout"):
        _spec(dropout=1.0)
