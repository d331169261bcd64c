"""The models (`grokverify.engine.models`), each against a hand computation or an independent
implementation: paper 2's transformer (numpy; its vmapped form against each seed's plain module;
its dropout masks per seed and step), the toys' decoder scale, the S3 toy's matrix product and
the image MLP; initialisation from the seed's own streams only; and a batched seed's record bit
for bit against the same seed trained alone."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import (
    ADD7,
    assert_each_seed_is_its_plain_module,
    make_exp,
    operands,
    records_by_seed,
)
from pydantic import ValidationError

from grokverify.claim.experiment import ExperimentSpec
from grokverify.claim.load import load_claim
from grokverify.claim.models import ImageMLPSpec, ToyMatrixSpec, ToySumSpec, TransformerSpec
from grokverify.claim.yamlio import SpecError
from grokverify.cli import main
from grokverify.engine.batched import BatchedModel, plain_copy
from grokverify.engine.models import DataShape, Model, Transformer, mean_loss_of, sinusoid
from grokverify.engine.streams import torch_generator
from grokverify.kinds import MODELS

SHAPE = DataShape(p=5, vocab=7, n_classes=5)
TRANSFORMER = {"kind": "transformer", "d": 8, "layers": 2, "heads": 2, "mlp": 12}


def _spec(**kw: object) -> TransformerSpec:
    return TransformerSpec.model_validate({**TRANSFORMER, **kw})


def _exp(dropout: float | None = None) -> ExperimentSpec:
    """A one-block transformer on ADD7 with the PCA probe (dropout None: the field left out)."""
    model = {**TRANSFORMER, "layers": 1, "mlp": 16}
    if dropout is not None:
        model["dropout"] = dropout
    return make_exp(ADD7, model, {"name": "adamw", "lr": 0.01, "weight_decay": 1.0},
                    {"steps": 30, "eval_interval": 10, "batch_size": 8, "early_stop": False},
                    probes=[{"name": "pca", "every": 10}])


def _operands(s: int, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    a, b = operands(SHAPE.p, s, n)
    return a, b, (a + b) % SHAPE.p


# ---------------------------------------------------------------- the transformer


def _layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float = 1e-5) -> np.ndarray:
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def _numpy_forward(model: Transformer, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The transformer written out in numpy, one example and one head at a time, each of its
    settings (norm, tokens, activation, positions, tie, mlp_bias) as the spec's words say."""
    from scipy.special import erf

    spec: TransformerSpec = model.spec  # type: ignore[assignment]
    sd = {k: v.detach().double().numpy() for k, v in model.state_dict().items()}
    heads, d, p = spec.heads, spec.d, model.shape.p
    dh = d // heads
    act = {"relu": lambda z: np.maximum(z, 0),
           "gelu": lambda z: 0.5 * z * (1 + erf(z / math.sqrt(2)))}[spec.activation]
    out = []
    for i, j in zip(a, b, strict=True):
        ids = {"ab": [i, j], "a_b_eq": [i, j, p], "a_op_b_eq": [i, p, j, p + 1]}[spec.tokens]
        x = np.stack([sd["embed.weight"][t] for t in ids]) + sd["positions"]
        for n in range(spec.layers):
            w = {k.split(".", 2)[2]: v for k, v in sd.items() if k.startswith(f"blocks.{n}.")}

            def norm(y: np.ndarray, which: str, w: dict[str, np.ndarray] = w) -> np.ndarray:
                return _layer_norm(y, w[f"{which}.weight"], w[f"{which}.bias"])

            def attend(y: np.ndarray, w: dict[str, np.ndarray] = w) -> np.ndarray:
                q, k, v = y @ w["q.weight"].T, y @ w["k.weight"].T, y @ w["v.weight"].T
                mixed = np.zeros_like(y)
                for h in range(heads):
                    cols = slice(h * dh, (h + 1) * dh)
                    for t in range(len(y)):
                        scores = np.array([q[t, cols] @ k[s, cols] / math.sqrt(dh)
                                           for s in range(t + 1)])  # causal: s <= t
                        att = np.exp(scores - scores.max())
                        att /= att.sum()
                        mixed[t, cols] = sum(att[s] * v[s, cols] for s in range(t + 1))
                return mixed @ w["o.weight"].T

            def mlp(y: np.ndarray, w: dict[str, np.ndarray] = w) -> np.ndarray:
                b1, b2 = (w["fc1.bias"], w["fc2.bias"]) if spec.mlp_bias else (0.0, 0.0)
                return act(y @ w["fc1.weight"].T + b1) @ w["fc2.weight"].T + b2

            if spec.norm == "post":
                x = norm(x + attend(x), "norm1")
                x = norm(x + mlp(x), "norm2")
            elif spec.norm == "pre":
                x = x + attend(norm(x, "norm1"))
                x = x + mlp(norm(x, "norm2"))
            else:
                x = x + attend(x)
                x = x + mlp(x)
        last = x[-1] if spec.norm != "pre" else _layer_norm(
            x[-1], sd["final_norm.weight"], sd["final_norm.bias"])
        unembed = sd["embed.weight"][:model.shape.n_classes] if spec.tie else \
            sd["unembed.weight"]
        out.append(last @ unembed.T)
    return np.array(out)


def test_forward_equals_a_hand_computation() -> None:
    """d = 2, one block, one head, q = k = 0 (uniform attention), v = o = unembedding = identity,
    MLP zero: the last position's residual is x1 + (x0 + x1)/2, and LayerNorm maps [u, w] to
    ±[1, −1] · |u − w| / sqrt((u − w)² + 4 eps) (sign of u − w), twice over."""
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


VARIANTS = [{"norm": "pre"}, {"norm": "none"}, {"tokens": "a_b_eq"}, {"tokens": "a_op_b_eq"},
            {"activation": "gelu"}, {"positions": "learned"}, {"tie": True},
            {"mlp_bias": True}, {"init": "normal"},
            {"norm": "none", "tokens": "a_b_eq", "positions": "learned", "mlp_bias": True,
             "init": "normal"}]  # Nanda et al.'s


@pytest.mark.parametrize("setting", VARIANTS, ids=lambda v: ",".join(f"{k}={x}" for k, x in
                                                                      v.items()))
def test_each_setting_equals_numpy_and_its_vmapped_form_each_plain_module(
        setting: dict[str, object]) -> None:
    """Each transformer setting: the plain module against the numpy transformer that reads the
    settings from the spec's words, and its seed-batched form against each seed's plain one."""
    spec = _spec(**setting)
    model = Transformer.for_seed(spec, SHAPE, 3).double()
    with torch.no_grad():  # biases start at 0: move them, so that a dropped bias shows
        for name, param in model.named_parameters():
            if name.endswith(".bias") and ".fc" in name:
                param.copy_(torch.randn(param.shape, generator=torch.Generator().manual_seed(7),
                                        dtype=param.dtype))
    a, b = np.array([0, 4, 2, 3]), np.array([1, 4, 0, 2])
    got = model(torch.as_tensor(a), torch.as_tensor(b)).detach().numpy()
    np.testing.assert_allclose(got, _numpy_forward(model, a, b), rtol=1e-10, atol=1e-12)
    a_, b_, y_ = _operands(3, 9)
    assert_each_seed_is_its_plain_module(BatchedModel(spec, SHAPE, [4, 5, 6],
                                                      dtype=torch.float64), a_, b_, y_)


def test_the_settings_change_the_model_and_its_key_only_when_set() -> None:
    """Paper 2's model is the default: its store key is what it was before the settings existed
    (the key below), and so are its init streams; a setting that is set is keyed."""
    from conftest import ADD7

    from grokverify.store import record_key

    exp = make_exp(ADD7, {"kind": "transformer", "d": 8, "layers": 1, "heads": 2, "mlp": 16},
                   {"name": "adamw", "lr": 0.01, "weight_decay": 1.0},
                   {"steps": 30, "eval_interval": 10, "batch_size": 8, "early_stop": False},
                   probes=[{"name": "pca", "every": 10}])
    assert record_key(exp, 0, "cpu") == \
        "7b07027868748523f381de6854ff2e9ff8eed82942045680eb319c8579487895"
    explicit = exp.model_copy(update={"model": exp.model.model_copy(update={"norm": "post"})})
    assert record_key(explicit, 0, "cpu") == record_key(exp, 0, "cpu")
    for setting in VARIANTS:
        changed = exp.model_copy(update={"model": exp.model.model_copy(update=setting)})
        assert record_key(changed, 0, "cpu") != record_key(exp, 0, "cpu"), setting
    # and its seeds draw what they drew: the streams' key is the one before the settings
    assert Transformer.stream_key(_spec(), SHAPE) == (
        '{"classes":5,"model":{"d":8,"emb_init_std":1.0,"heads":2,"kind":"transformer",'
        '"layers":2,"mlp":12},"p":5,"vocab":7}')
    assert '"norm":"pre"' in Transformer.stream_key(_spec(norm="pre"), SHAPE)
    assert Transformer.for_seed(_spec(tokens="a_op_b_eq"), SHAPE, 1).embed.weight.shape == (7, 8)
    with pytest.raises(ValueError, match="tie: 9 classes but 5 token embeddings"):
        Transformer.for_seed(_spec(tie=True), DataShape(p=5, vocab=7, n_classes=9), 0)


def test_a_variant_seed_trains_the_same_alone_and_batched() -> None:
    exp = _exp()
    exp = exp.model_copy(update={"model": exp.model.model_copy(update={
        "norm": "none", "tokens": "a_b_eq", "positions": "learned", "activation": "gelu"})})
    batched, alone = records_by_seed(exp, [0, 1, 2], 2), records_by_seed(exp, [1])
    assert alone[1] == batched[1]


def test_normal_init_draws_nanda_et_al_s_scales_and_zero_mlp_biases() -> None:
    """init normal: block matrices N(0, 1/d), the unembedding N(0, 1/classes); mlp_bias adds
    zero biases to fc1 and fc2 only (std within 10% over ~30k draws)."""
    spec = _spec(d=64, heads=4, mlp=256, layers=2, init="normal", mlp_bias=True)
    model = Transformer.for_seed(spec, DataShape(p=97, vocab=98, n_classes=97), 0)
    for n in range(2):
        blk = model.blocks[n]
        for lin in (blk.q, blk.k, blk.v, blk.o, blk.fc1, blk.fc2):
            assert lin.weight.std().item() == pytest.approx(1 / 8, rel=0.1)
        assert torch.equal(blk.fc1.bias, torch.zeros(256)) and blk.q.bias is None
    assert model.unembed.weight.std().item() == pytest.approx(97 ** -0.5, rel=0.1)
    uniform = Transformer.for_seed(_spec(d=64, heads=4, mlp=256), SHAPE, 0)
    assert uniform.blocks[0].q.weight.std().item() == pytest.approx(1 / 8 / math.sqrt(3),
                                                                   rel=0.1)
    assert uniform.blocks[0].fc1.bias is None


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
    a, b, y = _operands(3, 9)
    model = BatchedModel(_spec(), SHAPE, [4, 5, 6], dtype=torch.float64)
    assert_each_seed_is_its_plain_module(model, a, b, y)


def test_batched_seed_is_bit_identical_to_seed_trained_alone() -> None:
    """A seed's whole record, PCA probe curves included, to the last bit trained with others
    (two shards), alone (beside its ghost) and in another chunk."""
    exp = _exp()
    batched = records_by_seed(exp, [0, 1, 2], 2)
    alone = records_by_seed(exp, [1])
    pair = records_by_seed(exp, [2, 0])
    assert alone[1] == batched[1] and pair[2] == batched[2] and pair[0] == batched[0]
    assert "pca.eff_dim" in batched[0]["curves"]
    assert batched[0]["curves"]["train_loss"] != batched[1]["curves"]["train_loss"]


# ---------------------------------------------------------------- the transformer's dropout


def test_batched_seed_with_dropout_is_bit_identical_to_seed_trained_alone() -> None:
    """The engine's core guarantee with dropout 0.5: a seed's whole record is the same to the
    last bit with others (two shards), alone (beside its ghost), in another chunk and again."""
    exp = _exp(0.5)
    batched = records_by_seed(exp, [0, 1, 2], 2)
    assert batched == records_by_seed(exp, [0, 1, 2], 2)
    alone = records_by_seed(exp, [1])
    pair = records_by_seed(exp, [2, 0])
    assert alone[1] == batched[1] and pair[2] == batched[2] and pair[0] == batched[0]
    # dropout trains differently from the same start (the initial weights are the same)
    plain = records_by_seed(_exp(), [1])[1]["curves"]["train_loss"]["values"]
    dropped = batched[1]["curves"]["train_loss"]["values"]
    assert dropped[0] == plain[0] and dropped[1:] != plain[1:]


def test_dropout_zero_is_no_dropout() -> None:
    """p = 0 set explicitly is the default: the same store key, no noise drawn, the same
    record; an all-ones mask is no mask."""
    assert _exp(0.0).canonical() == _exp(None).canonical()
    assert '"dropout":0.5' in _exp(0.5).canonical()
    assert records_by_seed(_exp(0.0), [0, 1]) == records_by_seed(_exp(), [0, 1])
    model = BatchedModel(_spec(dropout=0.0), SHAPE, [0, 1], dtype=torch.float64)
    assert model.step_noise(4) == {}
    a, b, y = _operands(2, 9)
    assert_each_seed_is_its_plain_module(model, a, b, y)  # training without noise
    plain = Transformer.for_seed(_spec(), SHAPE, 3)
    ones = {f"mlp_dropout.{i}": torch.ones(9, 2, 8) for i in range(2)}
    assert torch.equal(plain(a[0], b[0], noise=ones), plain(a[0], b[0]))


def test_masks_drop_a_share_p_and_scale_the_rest() -> None:
    """Over many draws a share p of units is zeroed (within 5 standard errors), each kept one is
    exactly 1/(1 - p); the masks are the seed's "dropout" stream (keyed without the rate)
    thresholded at p, so a lower rate drops a subset of a higher one's units."""
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
    low_model = Transformer.for_seed(_spec(dropout=0.1), SHAPE, 7)
    low_masks = torch.stack(list(low_model.step_noise(low, rows).values()))
    assert bool(((low_masks == 0) <= (m == 0)).all())
    no_dropout = Transformer.for_seed(_spec(dropout=0.0), SHAPE, 7)
    assert no_dropout.step_noise(torch.Generator(), rows) == {}


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


DROPOUT_CLAIM = """\
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
    path.write_text(DROPOUT_CLAIM.replace("RATE", rate))
    assert main(["validate", str(path)]) == 2
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    assert "base.model.dropout" in err, err
    path.write_text(DROPOUT_CLAIM.replace("RATE", "0.99"))
    assert main(["validate", str(path)]) == 0
    with pytest.raises(ValueError, match="dropout"):
        _spec(dropout=1.0)


# ---------------------------------------------------------------- the toys' decoder scale

SUM = {"kind": "toy_sum", "hidden": 5, "output": "regression", "target_dim": 4}
SUM_SHAPE = DataShape(p=7, vocab=9, n_classes=13)
MATRIX = {"kind": "toy_matrix", "hidden": 5, "init_scale": 0.5}
MATRIX_SHAPE = DataShape(p=6, vocab=8, n_classes=6)
TOYS = {"toy_sum": (ToySumSpec, SUM, SUM_SHAPE, 3),
        "toy_matrix": (ToyMatrixSpec, MATRIX, MATRIX_SHAPE, 2)}
DECODER = ("fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias", "fc3.weight", "fc3.bias")


def _toy(kind: str, **settings: float) -> Model:
    spec_class, fields, shape, seed = TOYS[kind]
    return MODELS.implementation(kind).for_seed(spec_class(**fields, **settings), shape, seed)


@pytest.mark.parametrize("kind", sorted(TOYS))
def test_the_scale_keys_the_record_but_not_the_seeds_draws(kind: str) -> None:
    spec_class, fields, shape, _ = TOYS[kind]
    plain, scaled = spec_class(**fields), spec_class(**fields, decoder_init_scale=0.25)
    assert '"decoder_init_scale":0.25' in scaled.canonical() != plain.canonical()
    model = MODELS.implementation(kind)
    assert model.stream_key(plain, shape) == model.stream_key(scaled, shape)


@pytest.mark.parametrize("kind", sorted(TOYS))
@pytest.mark.parametrize("scale", [0.1, 0.25, 3.0])
def test_scale_s_multiplies_every_decoder_parameter_and_nothing_else(kind: str,
                                                                    scale: float) -> None:
    plain, scaled = _toy(kind), _toy(kind, decoder_init_scale=scale)
    before, after = plain.state_dict(), scaled.state_dict()
    assert set(before) == set(after)
    for name in DECODER:
        assert torch.equal(after[name], before[name] * scale), name
        assert not torch.equal(after[name], before[name]), name
    for name in set(before) - set(DECODER):  # the embedding (and regression targets)
        assert torch.equal(after[name], before[name]), name
    assert scaled.spec.decoder_init_scale == scale  # type: ignore[attr-defined]


def test_the_embedding_scale_leaves_the_decoder_alone_and_the_two_compose() -> None:
    both = _toy("toy_sum", init_scale=0.1, decoder_init_scale=0.1).state_dict()
    embeddings_only = _toy("toy_sum", init_scale=0.1).state_dict()
    for name in DECODER:
        assert torch.equal(both[name], embeddings_only[name] * 0.1), name
    assert torch.equal(both["embed.weight"], embeddings_only["embed.weight"])


@pytest.mark.parametrize("bad", [0.0, -1.0, 2e6])
def test_an_out_of_range_scale_is_refused_with_the_field_named(bad: float) -> None:
    with pytest.raises(ValidationError, match="decoder_init_scale"):
        ToySumSpec(**SUM, decoder_init_scale=bad)
    with pytest.raises(ValidationError, match="decoder_init_scale"):
        ExperimentSpec.model_validate(
            {"task": {"op": "add", "p": 7, "modular": False, "unordered": True,
                      "train_frac": 0.6},
             "model": {**SUM, "decoder_init_scale": bad}, "optimizer": {"name": "adamw"},
             "training": {"steps": 10}})


def test_a_claim_with_a_bad_scale_names_the_field_and_its_line(tmp_path: Path) -> None:
    text = (Path(__file__).resolve().parent.parent / "claims"
            / "p2_appg_small_init_comprehends.yaml").read_text()
    anchor = "decoder_init_scale: 0.1}"
    assert text.count(anchor) == 1
    path = tmp_path / "claim.yaml"
    path.write_text(text.replace(anchor, "decoder_init_scale: 0}"))
    with pytest.raises(SpecError) as caught:
        load_claim(path)
    problems = [p for p in caught.value.problems if p.path.endswith("decoder_init_scale")]
    assert problems and problems[0].line is not None, str(caught.value)
    assert "greater than 0" in problems[0].message


# ---------------------------------------------------------------- the S3 toy


def test_the_forward_pass_multiplies_the_two_matrices_before_decoding() -> None:
    spec = ToyMatrixSpec(kind="toy_matrix", hidden=5, output="regression", target_dim=4)
    model = MODELS.implementation("toy_matrix").for_seed(spec, DataShape(p=6, vocab=8,
                                                                         n_classes=6), 3)
    model = model.double()
    a, b = torch.tensor([1, 4, 5]), torch.tensor([2, 2, 0])
    e = model.embed.weight.detach().numpy().reshape(6, 3, 3)
    x = np.stack([(e[i] @ e[j]).reshape(-1) for i, j in zip(a.tolist(), b.tolist(),
                                                             strict=True)])
    for layer in (model.fc1, model.fc2):
        x = np.tanh(x @ layer.weight.detach().numpy().T + layer.bias.detach().numpy())
    want = x @ model.fc3.weight.detach().numpy().T + model.fc3.bias.detach().numpy()
    np.testing.assert_allclose(model(a, b).detach().numpy(), want, rtol=1e-12)
    assert model.embed.weight.shape == (6, 9)
    assert float(model.embed.weight.detach().abs().max()) <= 0.5  # U[-s/2, s/2], s = 1


# ---------------------------------------------------------------- the image MLP


def test_the_mlp_computes_relu_layers_by_hand_and_regresses_to_one_hot() -> None:
    spec = ImageMLPSpec(kind="image_mlp", depth=3, width=5, init_scale=1.0)
    table = torch.rand(7, 784, generator=torch.Generator().manual_seed(0))
    shape = DataShape(p=784, vocab=784, n_classes=10, table=table)
    model = MODELS.implementation("image_mlp").for_seed(spec, shape, seed=3)
    a = torch.tensor([4, 0, 6])
    out = model(a, torch.zeros_like(a)).detach().numpy()
    x = table[a].double().numpy()
    for i, layer in enumerate(model.layers):
        w, bias = layer.weight.detach().double().numpy(), layer.bias.detach().double().numpy()
        x = x @ w.T + bias
        x = np.maximum(x, 0) if i < 2 else x
    np.testing.assert_allclose(out, x, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(model.targets.numpy(), np.eye(10))
    y = torch.tensor([1, 2, 3])
    losses, correct = model.head.example_losses(torch.as_tensor(out), y, model.targets)
    one_hot = np.eye(10)[y.numpy()]
    np.testing.assert_allclose(losses.numpy(), ((out - one_hot) ** 2).mean(axis=1), rtol=1e-5)
    assert correct.tolist() == (out.argmax(axis=1) == y.numpy()).tolist()


def test_alpha_multiplies_every_initial_weight_and_bias() -> None:
    """A seed's draws are nn.Linear's default (U(±1/√fan_in)) and the same at every α, which
    multiplies them: arms along α differ in the scale alone."""
    shape = DataShape(p=784, vocab=784, n_classes=10, table=torch.zeros(2, 784))
    plain, scaled = (dict(MODELS.implementation("image_mlp").for_seed(
        ImageMLPSpec(kind="image_mlp", width=6, init_scale=alpha), shape, seed=4)
        .named_parameters()) for alpha in (1.0, 9.0))
    assert set(plain) == {f"layers.{i}.{k}" for i in range(3) for k in ("weight", "bias")}
    for name, value in plain.items():
        torch.testing.assert_close(scaled[name], 9.0 * value, rtol=0, atol=0)
        fan_in = plain[name.replace("bias", "weight")].shape[1]
        assert value.abs().max() <= fan_in ** -0.5
        assert value.abs().max() > 0.5 * fan_in ** -0.5
