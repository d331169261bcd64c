"""Probes (`grokverify.engine.probes`), each against an independent reference (numpy's SVD and
FFT, autograd on each seed's plain module, a plain torch.optim step, a dense float64 Hessian, an
enumeration of minibatches and scipy's hypergeometric law): recorded at the declared steps, NaN
for a diverged seed alone, refused where they do not apply, never changing what training
produces, and deciding a claim end to end."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import ADD7, make_exp, train_rows
from pydantic import ValidationError
from rich.console import Console
from scipy.stats import hypergeom

from grokverify.claim.experiment import ExperimentSpec
from grokverify.claim.load import load_claim
from grokverify.claim.models import EmbedMLPSpec, ToySumSpec
from grokverify.claim.probes import (
    FourierShareSpec,
    GradNormRatioSpec,
    HessianMaxSpec,
    PCASpec,
    RankSpec,
    SigmaMaxSpec,
    TokenFrequencySpec,
)
from grokverify.claim.tasks import TaskSpec
from grokverify.engine import probes as probes_mod
from grokverify.engine.batched import BatchedModel, batch_members, plain_copy
from grokverify.engine.data import SeedData
from grokverify.engine.loop import SeedTrainer, Shard, train_seeds
from grokverify.engine.models import DataShape, mean_loss_of
from grokverify.engine.probes import (
    ProbeContext,
    Spectra,
    _rows,
    ew_of,
    fourier_share_of,
    pca_of,
    rank_of,
    token_frequency_of,
)
from grokverify.kinds import PROBES
from grokverify.run.outcome import RunOptions
from grokverify.run.pipeline import run_claims
from grokverify.stats.base import Verdict
from grokverify.store import Store

probe = PROBES.implementation  # a probe's function by name

MLP = {"kind": "embed_mlp", "d": 8, "hidden": 12}
ADAMW = {"name": "adamw", "lr": 0.01, "weight_decay": 0.1}
TRAIN = {"steps": 30, "eval_interval": 10, "batch_size": 8, "early_stop": False}
SHORT = {**TRAIN, "steps": 20}
MLP8_SPEC = EmbedMLPSpec(kind="embed_mlp", d=8, hidden=12)
SHAPE7 = DataShape(p=7, vocab=9, n_classes=7)


def _exp(probes: list[dict], model: dict | None = None, optimizer: dict | None = None,
         training: dict | None = None, interventions: list[dict] | None = None) -> ExperimentSpec:
    return make_exp(ADD7, model or MLP, optimizer or ADAMW, training or TRAIN, probes=probes,
                    interventions=interventions or [])


# ---------------------------------------------------------------- sigma_max, grad_norm_ratio


@pytest.mark.parametrize(("spec", "shape"), [
    (MLP8_SPEC, SHAPE7),
    (ToySumSpec(kind="toy_sum", hidden=9, emb_dim=3), DataShape(p=6, vocab=8, n_classes=11))])
def test_sigma_max_equals_numpy_svd(spec, shape) -> None:
    model = BatchedModel(spec, shape, [0, 1, 2])
    got = probe("sigma_max")(model, SigmaMaxSpec(name="sigma_max", every=1))
    for role in ("E", "W"):
        matrices = model.param(model.role(role)).detach().double().numpy()
        want = np.linalg.svd(matrices, compute_uv=False)[:, 0]
        np.testing.assert_allclose(got[f"sigma_max.{role}"].numpy(), want, rtol=1e-12)
    assert set(got) == {"sigma_max.E", "sigma_max.W"}


def test_sigma_max_of_a_diverged_seed_is_nan_not_an_error() -> None:
    model = BatchedModel(MLP8_SPEC, SHAPE7, [0, 1])
    with torch.no_grad():
        model.param("fc1.weight")[1].fill_(float("inf"))
    got = probe("sigma_max")(model, SigmaMaxSpec(name="sigma_max", every=1, of=["W"]))
    assert math.isfinite(got["sigma_max.W"][0]) and math.isnan(got["sigma_max.W"][1])


def test_grad_norm_ratio_equals_autograd_on_the_plain_model() -> None:
    """The batched step's gradients, seed by seed, against autograd of each seed's plain module
    on the same minibatch (float64)."""
    model = BatchedModel(MLP8_SPEC, SHAPE7, [3, 4, 5], dtype=torch.float64)
    gen = torch.Generator().manual_seed(0)
    a, b = torch.randint(0, 7, (2, 3, 10), generator=gen)
    y = (a + b) % 7
    model.loss_and_grads(a, b, y, torch.ones(3, dtype=torch.float64))
    got = probe("grad_norm_ratio")(model, GradNormRatioSpec(name="grad_norm_ratio", every=1))
    for i in range(3):
        plain = plain_copy(model, i)
        mean_loss_of(plain, plain(a[i], b[i]), y[i]).backward()
        g_e = plain.embed.weight.grad.norm().item()
        g_w = plain.fc1.weight.grad.norm().item()
        assert got["grad_norm.E"][i].item() == pytest.approx(g_e, rel=1e-12)
        assert got["grad_norm.W"][i].item() == pytest.approx(g_w, rel=1e-12)
        assert got["grad_norm_ratio"][i].item() == pytest.approx(g_e / g_w, rel=1e-12)


def test_probes_are_recorded_at_their_steps_and_change_nothing_else() -> None:
    """A parameter probe at step t measures the parameters after t updates (a trainer stopped
    there), a gradient probe the gradient taken from that state, the budget included when a
    multiple; the rest of the record is a run without probes', bit for bit."""
    probes = [{"name": "sigma_max", "every": 4}, {"name": "grad_norm_ratio", "every": 10}]
    with_probes = train_seeds(_exp(probes), [0, 1])
    without = train_seeds(_exp([]), [0, 1])
    for rec, plain in zip(with_probes, without, strict=True):
        assert rec["curves"]["sigma_max.E"]["steps"] == [0, 4, 8, 12, 16, 20, 24, 28]
        assert rec["curves"]["grad_norm.W"]["steps"] == [0, 10, 20]  # none at the budget
        assert {k: v for k, v in rec["curves"].items() if "." not in k and "ratio" not in k} \
            == plain["curves"]
        assert rec["summary"] == plain["summary"]
    with SeedTrainer(_exp([]), [0, 1], workers=1) as trainer:
        trainer.train(12)
        direct = probe("sigma_max")(trainer.shards[0].model,
                                     SigmaMaxSpec(name="sigma_max", every=1))
    for i, rec in enumerate(with_probes):
        curve = rec["curves"]["sigma_max.W"]
        assert curve["values"][curve["steps"].index(12)] == direct["sigma_max.W"][i].item()


def test_a_frozen_embedding_has_no_gradient_norm() -> None:
    recs = train_seeds(_exp([{"name": "grad_norm_ratio", "every": 10}],
                            interventions=[{"name": "freeze_embeddings", "from_step": 0}]), [0])
    curves = recs[0]["curves"]
    assert curves["grad_norm.E"]["values"] == [None, None, None]
    assert all(v > 0 for v in curves["grad_norm.W"]["values"])


# ---------------------------------------------------------------- rank

MLP6_SPEC = EmbedMLPSpec(kind="embed_mlp", d=6, hidden=5)
SHAPE11 = DataShape(p=11, vocab=13, n_classes=11)
TOY_SPEC = ToySumSpec(kind="toy_sum", hidden=9, emb_dim=4)
TOY_SHAPE = DataShape(p=10, vocab=12, n_classes=19)


def _np_rank(m: np.ndarray, rtol: float) -> int:
    sv = np.linalg.svd(m, compute_uv=False)
    return int(np.linalg.matrix_rank(m, tol=rtol * sv[0])) if sv[0] > 0 else 0


def _low_rank(rng: np.random.Generator, m: int, n: int, r: int) -> np.ndarray:
    """An m × n matrix of rank r by construction: (m × r)(r × n), Gaussian factors."""
    return rng.standard_normal((m, r)) @ rng.standard_normal((r, n))


def _with_singular_values(rng: np.random.Generator, m: int, n: int,
                          sv: list[float]) -> np.ndarray:
    u = np.linalg.qr(rng.standard_normal((m, len(sv))))[0]
    v = np.linalg.qr(rng.standard_normal((n, len(sv))))[0]
    return u @ np.diag(sv) @ v.T


def test_rank_of_matrices_of_known_rank_equals_numpy() -> None:
    """A batch of seeds with different ranks (0 included), and singular values on either side
    of the tolerance: the count is numpy's matrix_rank with tol = rtol · σmax."""
    rng = np.random.default_rng(0)
    batch = np.stack([_low_rank(rng, 9, 7, r) for r in (1, 3, 5, 7)] + [np.zeros((9, 7))]
                     + [_with_singular_values(rng, 9, 7, [4.0, 1e-2, 4.4e-3, 3.6e-3, 1e-9])])
    want_known = [1, 3, 5, 7, 0, 3]  # the last: 3.6e-3 < 1e-3 · σmax = 4e-3 < 4.4e-3
    for rtol in (1e-3, 1e-6, 0.2):
        got = rank_of(torch.from_numpy(batch), rtol)
        assert got.dtype == torch.float64 and got.shape == (6,)
        assert got.tolist() == [_np_rank(m, rtol) for m in batch]
    assert rank_of(torch.from_numpy(batch), 1e-3).tolist() == want_known
    wide = np.stack([_low_rank(rng, 4, 10, r) for r in (2, 4)])  # more columns than rows
    assert rank_of(torch.from_numpy(wide).float(), 1e-3).tolist() == [2, 4]


def test_rank_from_the_gram_matrix_equals_the_svd_count() -> None:
    """From GRAM_MIN_RTOL up, the Gram matrix's singular values count the rank as numpy's SVD
    does: low ranks (exact zeros become ~1e-8 · σmax, far below the cut), full ranks with spread
    spectra, and singular values 1e-5 relative on either side of the cut."""
    rng = np.random.default_rng(7)
    mats = [_low_rank(rng, 256, 128, r) for r in (1, 17, 127)]
    mats += [rng.standard_normal((256, 128)) * np.logspace(0, -5, 128)]  # spread columns
    cut = 1e-3 * 3.0
    mats += [_with_singular_values(rng, 97, 128, [3.0, 1.0, cut * (1 + 1e-5), cut * (1 - 1e-5),
                                                  1e-7])[:, :]]
    for rtol in (probes_mod.GRAM_MIN_RTOL, 1e-3, 0.05):
        for m in mats:
            got = rank_of(torch.from_numpy(m[None]), rtol).item()
            assert got == _np_rank(m, rtol), (m.shape, rtol)
    assert rank_of(torch.from_numpy(mats[-1][None]), 1e-3).item() == 3


def _reference_ew(model: BatchedModel, i: int) -> np.ndarray:
    """Seed i's EW from its plain module, by what the first layer does: row t, block j is the
    pre-activation (less the bias) of token t alone at input position j, zeros elsewhere."""
    plain = plain_copy(model, i).double()
    e, fc1 = plain.embed.weight.detach(), plain.fc1
    d, n = e.shape[1], fc1.in_features // e.shape[1]
    blocks = []
    with torch.no_grad():
        for j in range(n):
            x = torch.zeros(e.shape[0], n * d, dtype=torch.float64)
            x[:, j * d:(j + 1) * d] = e
            blocks.append((fc1(x) - fc1.bias).numpy())
    return np.concatenate(blocks, axis=1)


@pytest.mark.parametrize(("spec", "shape", "n"), [(MLP6_SPEC, SHAPE11, 4),
                                                  (TOY_SPEC, TOY_SHAPE, 1)])
def test_rank_of_e_w_and_ew_on_the_models_parameters_equals_numpy(spec, shape, n) -> None:
    """E and W set to known low ranks in some seeds; EW against the first layer's own map."""
    model = BatchedModel(spec, shape, [0, 1, 2])
    rng = np.random.default_rng(1)
    e, w = model.param("embed.weight"), model.param("fc1.weight")
    with torch.no_grad():
        e[0].copy_(torch.from_numpy(_low_rank(rng, *e.shape[1:], 2)))
        w[1].copy_(torch.from_numpy(_low_rank(rng, *w.shape[1:], 3)))
        e[2].copy_(torch.from_numpy(_low_rank(rng, *e.shape[1:], 1)))
        w[2].copy_(torch.from_numpy(_low_rank(rng, *w.shape[1:], 1)))
    assert w.shape[-1] == n * e.shape[-1]
    spec_ = RankSpec(name="rank", every=1)
    got = probe("rank")(model, spec_)
    assert list(got) == ["rank.E", "rank.W", "rank.EW"]
    for i in range(3):
        ew = _reference_ew(model, i)
        assert ew.shape == (e.shape[1], n * w.shape[1])
        np.testing.assert_allclose(ew_of(e.detach().double(), w.detach().double())[i].numpy(), ew,
                                   rtol=1e-12, atol=1e-12)
        for name, m in (("E", e[i]), ("W", w[i])):
            assert got[f"rank.{name}"][i].item() == _np_rank(m.detach().double().numpy(), 1e-3)
        assert got["rank.EW"][i].item() == _np_rank(ew, 1e-3)
    assert got["rank.E"].tolist()[0] == 2 and got["rank.EW"].tolist()[2] == 1
    only_ew = probe("rank")(model, RankSpec(name="rank", every=1, of=["EW"], rtol=0.5))
    assert list(only_ew) == ["rank.EW"]
    assert only_ew["rank.EW"].tolist() == [_np_rank(_reference_ew(model, i), 0.5)
                                           for i in range(3)]


# ---------------------------------------------------------------- shared spectra


def test_sigma_max_and_rank_at_one_probe_point_share_each_matrix_spectrum(monkeypatch) -> None:
    """At one probe point (one ProbeContext) E's and W's Gram eigenvalues are computed once for
    both probes, and each probe gives what it gives alone (the loop's probe cost rests on it)."""
    model = BatchedModel(MLP6_SPEC, SHAPE11, [0, 1, 2])
    sigma, ranks = SigmaMaxSpec(name="sigma_max", every=1), RankSpec(name="rank", every=1)
    alone = {**probe("sigma_max")(model, sigma), **probe("rank")(model, ranks)}
    calls: list[tuple[int, ...]] = []
    real = probes_mod._gram_singular_values

    def counted(w: torch.Tensor) -> torch.Tensor:
        calls.append(tuple(w.shape))
        return real(w)

    monkeypatch.setattr(probes_mod, "_gram_singular_values", counted)
    ctx = ProbeContext(spectra=Spectra(model))
    shared = {**probe("sigma_max")(model, sigma, ctx), **probe("rank")(model, ranks, ctx)}
    e, w = model.param("embed.weight"), model.param("fc1.weight")
    # E's and W's once each (sigma_max alone would take both again), and EW's small core
    assert calls.count(tuple(e.shape)) == calls.count(tuple(w.shape)) == 1
    assert len(calls) == 3
    assert shared.keys() == alone.keys()
    for name in alone:
        assert torch.equal(shared[name], alone[name]), name


def test_in_training_shared_spectra_are_those_of_each_probe_point() -> None:
    """sigma_max and rank due together record, at every point, what each records alone: no
    spectrum is carried from one probe point to the next."""
    sigma = SigmaMaxSpec(name="sigma_max", every=5).model_dump()
    ranks = RankSpec(name="rank", every=5, rtol=0.3).model_dump()
    both = train_seeds(_exp([sigma, ranks], training=SHORT), [0, 1])
    apart = [train_seeds(_exp([sigma], training=SHORT), [0, 1]),
             train_seeds(_exp([ranks], training=SHORT), [0, 1])]
    for i, rec in enumerate(both):
        for alone in apart:
            for name, curve in alone[i]["curves"].items():
                assert rec["curves"][name] == curve, name
    assert len(set(both[0]["curves"]["sigma_max.W"]["values"])) == 5  # it moves


# ---------------------------------------------------------------- fourier share


def _np_share(e: np.ndarray, p: int, k: int, exclude_dc: bool) -> float:
    """numpy's full DFT over the first p rows; frequencies f and p - f pooled by hand."""
    power = (np.abs(np.fft.fft(e[:p], axis=0)) ** 2).sum(axis=1)
    pooled: dict[int, float] = {}
    for f in range(p):
        pooled[min(f, p - f)] = pooled.get(min(f, p - f), 0.0) + power[f]
    if exclude_dc:
        del pooled[0]
    values = sorted(pooled.values(), reverse=True)
    return sum(values[:k]) / sum(values)


def _mlp_with_embedding(rows: np.ndarray, seeds: int = 2) -> BatchedModel:
    """The embed_mlp (p = 11) with every seed's number-token rows set to `rows` and its op and
    "=" rows to large noise (which must not count)."""
    model = BatchedModel(MLP6_SPEC, SHAPE11, list(range(seeds)), dtype=torch.float64)
    with torch.no_grad():
        e = model.param("embed.weight")
        e[:, :11] = torch.from_numpy(rows)
        e[:, 11:] = 100 * torch.randn(seeds, 2, e.shape[-1], dtype=torch.float64)
    return model


def test_a_single_frequency_has_share_one_and_two_frequencies_their_known_share() -> None:
    p, t = 11, np.arange(11)[:, None]
    rows = np.zeros((p, 6))
    rows[:, :3] = np.cos(2 * np.pi * 3 * t / p + np.array([0.0, 1.0, 2.0]))  # phases differ
    got = probe("fourier_share")(_mlp_with_embedding(rows),
                                  FourierShareSpec(name="fourier_share", every=1, k=1))
    assert list(got) == ["fourier_share.E"]
    assert got["fourier_share.E"].dtype == torch.float64
    np.testing.assert_allclose(got["fourier_share.E"].numpy(), [1.0, 1.0], rtol=1e-12)
    # amplitudes 2 (f = 2) and 1 (f = 5): powers in ratio 4 : 1; a DC column of 3 whose power
    # 9 p² exceeds either (a cosine of amplitude a pooled with its conjugate: a² p² / 2)
    mix = np.zeros((p, 6))
    mix[:, 0] = 2 * np.cos(2 * np.pi * 2 * t[:, 0] / p)
    mix[:, 1] = np.sin(2 * np.pi * 5 * t[:, 0] / p)
    mix[:, 2] = 3.0
    model = _mlp_with_embedding(mix)
    for k, dc, want in ((1, True, 4 / 5), (2, True, 1.0), (1, False, 9 / (9 + 2 + 0.5)),
                        (2, False, 11 / 11.5), (3, False, 1.0)):
        got = probe("fourier_share")(model, FourierShareSpec(name="fourier_share", every=1, k=k,
                                                              exclude_dc=dc))
        np.testing.assert_allclose(got["fourier_share.E"].numpy(), [want, want], rtol=1e-12)
        assert want == pytest.approx(_np_share(mix, p, k, dc), rel=1e-12)


@pytest.mark.parametrize("p", [10, 11])
def test_fourier_share_of_noise_equals_numpy_fft(p: int) -> None:
    """Random embeddings (with extra rows past p), odd and even p (p/2 is its own conjugate),
    every k up to past the number of frequencies."""
    rng = np.random.default_rng(p)
    e = rng.standard_normal((4, p + 2, 5))
    e[:, :, 0] += 2.0  # some DC power
    for dc in (True, False):
        for k in range(1, p // 2 + 3):
            got = fourier_share_of(torch.from_numpy(e), p, k, dc)
            want = [_np_share(m, p, k, dc) for m in e]
            np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
    nyquist = np.zeros((1, 10, 2))
    nyquist[0, :, 0] = (-1.0) ** np.arange(10)
    nyquist[0, :, 1] = np.cos(2 * np.pi * np.arange(10) / 10)  # power (10/2)² · 2 = 50 vs 100
    assert fourier_share_of(torch.from_numpy(nyquist), 10, 1, True).item() == \
        pytest.approx(100 / 150, rel=1e-12)
    constant = torch.full((2, 7, 3), 0.1, dtype=torch.float64)  # all its power at DC
    assert fourier_share_of(constant, 7, 1, False).tolist() == pytest.approx([1.0, 1.0],
                                                                             rel=1e-12)
    assert all(math.isnan(v) for v in fourier_share_of(constant, 7, 1, True).tolist())


def test_fourier_share_reads_the_toy_models_whole_embedding() -> None:
    model = BatchedModel(TOY_SPEC, TOY_SHAPE, [0, 1, 2])
    got = probe("fourier_share")(model, FourierShareSpec(name="fourier_share", every=1, k=2))
    e = model.param("embed.weight").detach().double().numpy()
    assert e.shape[1] == TOY_SHAPE.p
    np.testing.assert_allclose(got["fourier_share.E"].numpy(),
                               [_np_share(m, TOY_SHAPE.p, 2, True) for m in e], rtol=1e-12)


# ---------------------------------------------------------------- diverged seeds


def test_a_diverged_seed_is_nan_and_the_others_unchanged() -> None:
    model = BatchedModel(MLP6_SPEC, SHAPE11, [0, 1, 2])
    rank_spec = RankSpec(name="rank", every=1)
    share_spec = FourierShareSpec(name="fourier_share", every=1, k=2)
    before = {**probe("rank")(model, rank_spec), **probe("fourier_share")(model, share_spec)}
    with torch.no_grad():
        model.param("embed.weight")[1, 3, 0] = float("nan")
        model.param("fc1.weight")[2, 0, 0] = float("inf")
    after = {**probe("rank")(model, rank_spec), **probe("fourier_share")(model, share_spec)}
    nan = {"rank.E": {1}, "rank.W": {2}, "rank.EW": {1, 2}, "fourier_share.E": {1}}
    for name, bad in nan.items():
        for i in range(3):
            if i in bad:
                assert math.isnan(after[name][i])
            else:
                assert after[name][i].item() == before[name][i].item()


# ---------------------------------------------------------------- specs


@pytest.mark.parametrize(("bad", "match"), [
    ({"name": "rank", "every": 5, "rtol": 0.0}, "rtol"),
    ({"name": "rank", "every": 5, "rtol": 1.0}, "rtol"),
    ({"name": "rank", "every": 5, "rtol": -1e-3}, "rtol"),
    ({"name": "rank", "every": 5, "of": ["E", "EW", "E"]}, "each role once"),
    ({"name": "rank", "every": 5, "of": ["WE"]}, "of"),
    ({"name": "rank", "every": 5, "of": []}, "of"),
    ({"name": "fourier_share", "every": 5, "k": 0}, "k"),
    ({"name": "fourier_share", "every": 5}, "k"),
    ({"name": "fourier_share", "every": 5, "k": 2, "exclude_dc": "maybe"}, "exclude_dc"),
])
def test_a_bad_spectral_probe_spec_is_refused(bad: dict, match: str) -> None:
    with pytest.raises(ValidationError, match=match):
        _exp([bad], training=SHORT)


def test_a_model_without_an_embedding_is_refused_for_e_and_ew_only() -> None:
    scalar = {"kind": "scalar_mlp", "hidden": 8}
    for spec in ({"name": "rank", "every": 5}, {"name": "rank", "every": 5, "of": ["EW"]},
                 {"name": "fourier_share", "every": 5, "k": 1}):
        with pytest.raises(ValidationError, match=r"token embedding matrix \(E\).*scalar_mlp"):
            _exp([spec], scalar, training=SHORT)
    w_only = _exp([{"name": "rank", "every": 5, "of": ["W"]}], scalar, training=SHORT)
    assert w_only.probes[0].curves() == ["rank.W"]


def test_spec_defaults_and_curves() -> None:
    spec = RankSpec(name="rank", every=3)
    assert (spec.of, spec.rtol) == (["E", "W", "EW"], 1e-3)
    assert spec.curves() == ["rank.E", "rank.W", "rank.EW"]
    assert RankSpec(name="rank", every=3, of=["EW"]).roles_needed() == ("E", "W")
    assert RankSpec(name="rank", every=3, of=["W"]).roles_needed() == ("W",)
    share = FourierShareSpec(name="fourier_share", every=3, k=4)
    assert share.exclude_dc and share.curves() == ["fourier_share.E"]
    assert share.roles_needed() == ("E",)


# ---------------------------------------------------------------- in training


@pytest.mark.parametrize("model", [None, {"kind": "toy_sum", "hidden": 9, "emb_dim": 3}])
def test_in_training_the_curves_equal_the_probe_on_a_seed_trained_alone(model) -> None:
    """Seeds 0-2 trained together record at steps 0, 5, ..., 20 exactly what the probes give on
    seed 1 trained alone to each of those steps; the evaluation curves and summaries are those
    of a run without probes. (rtol = 0.3 so that the ranks differ between seeds and steps.)"""
    rank_spec = RankSpec(name="rank", every=5, rtol=0.3)
    share_spec = FourierShareSpec(name="fourier_share", every=5, k=2, exclude_dc=False)
    probes = [rank_spec.model_dump(), share_spec.model_dump()]
    with_probes = train_seeds(_exp(probes, model, training=SHORT), [0, 1, 2])
    without = train_seeds(_exp([], model, training=SHORT), [0, 1, 2])
    names = ["rank.E", "rank.W", "rank.EW", "fourier_share.E"]
    for rec, plain in zip(with_probes, without, strict=True):
        for name in names:
            assert rec["curves"][name]["steps"] == [0, 5, 10, 15, 20]
        assert {k: v for k, v in rec["curves"].items() if k not in names} == plain["curves"]
        assert rec["summary"] == plain["summary"]
    alone: dict[str, list[float]] = {name: [] for name in names}
    with SeedTrainer(_exp([], model, training=SHORT), [1], workers=1) as trainer:
        for step in range(0, 21, 5):
            if step:
                trainer.train(5)
            got = {**probe("rank")(trainer.shards[0].model, rank_spec),
                   **probe("fourier_share")(trainer.shards[0].model, share_spec)}
            for name in names:
                alone[name].append(got[name][0].item())
    for name in names:
        assert with_probes[1]["curves"][name]["values"] == alone[name]


# ---------------------------------------------------------------- update norms

HESSIAN_MLP = {"kind": "embed_mlp", "d": 4, "hidden": 6}
HESSIAN_OPT = {"name": "adamw", "lr": 0.01, "weight_decay": 0.5, "emb_lr_mult": 4.0}


def _short(probes: list[dict], optimizer: dict | None = None, batch_size: int | None = None,
           interventions: list[dict] | None = None) -> ExperimentSpec:
    """Six steps of a small MLP, evaluated every 3."""
    return _exp(probes, HESSIAN_MLP, optimizer or HESSIAN_OPT,
                {"steps": 6, "eval_interval": 3, "batch_size": batch_size, "early_stop": False},
                interventions)


@pytest.mark.parametrize("optimizer", [
    {"name": "adamw", "lr": 0.01, "weight_decay": 0.5, "emb_lr_mult": 4.0},
    {"name": "sgd", "lr": 0.3, "weight_decay": 0.01, "momentum": 0.9, "emb_lr_mult": 10.0},
])
def test_update_norms_equal_a_plain_torch_optim_step(optimizer: dict) -> None:
    """Each seed's first two full-batch steps replayed on its plain module with torch.optim
    (embedding lr × c, the same weight decay) give the same ‖ΔE‖, ‖ΔW‖ and ratio, for Adam's
    normalised step and SGD's raw one (the second step has momentum and Adam's moments in it)."""
    exp = _short([{"name": "update_norm", "every": 1}], optimizer)
    shard = Shard(exp, [0, 1, 2], torch.device("cpu"), dtype=torch.float64)
    plains = [plain_copy(shard.model, i) for i in range(3)]
    shard.train(2)
    got = {step: values for step, values in shard._points}
    a, b, y = shard.data.train
    for i, plain in enumerate(plains):
        cls = {"adamw": torch.optim.AdamW, "sgd": torch.optim.SGD}[optimizer["name"]]
        extra = {"momentum": 0.9} if optimizer["name"] == "sgd" else {}
        emb = [plain.embed.weight]
        rest = [q for q in plain.parameters() if q is not plain.embed.weight]
        opt = cls([{"params": emb, "lr": optimizer["lr"] * optimizer["emb_lr_mult"]},
                   {"params": rest, "lr": optimizer["lr"]}],
                  weight_decay=optimizer["weight_decay"], **extra)
        for step in (0, 1):
            e0, w0 = plain.embed.weight.detach().clone(), plain.fc1.weight.detach().clone()
            opt.zero_grad()
            mean_loss_of(plain, plain(a[i], b[i]), y[i]).backward()
            opt.step()
            d_e = (plain.embed.weight.detach() - e0).norm().item()
            d_w = (plain.fc1.weight.detach() - w0).norm().item()
            assert got[step]["update_norm.E"][i].item() == pytest.approx(d_e, rel=1e-9)
            assert got[step]["update_norm.W"][i].item() == pytest.approx(d_w, rel=1e-9)
            assert got[step]["update_norm_ratio"][i].item() == pytest.approx(d_e / d_w,
                                                                            rel=1e-9)


def test_a_frozen_embedding_has_a_zero_update() -> None:
    """The update is what the step did to the parameters, the intervention's restore included:
    a frozen E does not move."""
    recs = train_seeds(_short([{"name": "update_norm", "every": 2}], batch_size=8,
                              interventions=[{"name": "freeze_embeddings", "from_step": 0}]),
                       [0])
    curves = recs[0]["curves"]
    assert curves["update_norm.E"]["steps"] == [0, 2, 4]  # the step each update starts from
    assert curves["update_norm.E"]["values"] == [0.0, 0.0, 0.0]
    assert all(v > 0 for v in curves["update_norm.W"]["values"])


# ---------------------------------------------------------------- Hessian λmax


def _tiny(seeds: list[int]) -> tuple[BatchedModel, tuple[torch.Tensor, ...]]:
    spec = EmbedMLPSpec(kind="embed_mlp", d=3, hidden=5)
    exp = _short([])
    data = SeedData(exp.task, batch_members(seeds), torch.device("cpu"))
    model = BatchedModel(spec, DataShape(p=7, vocab=9, n_classes=7), seeds, torch.float64)
    return model, data.train


def _dense_top(model: BatchedModel, i: int, role: str, rows: tuple[torch.Tensor, ...]) -> float:
    """Largest-magnitude eigenvalue of seed i's dense Hessian of its mean loss on `rows` with
    respect to one parameter, from torch.autograd.functional.hessian and numpy's eigvalsh."""
    plain = plain_copy(model, i)
    name = model.role(role)
    a, b, y = (t[i] for t in rows)
    base = dict(plain.named_parameters())
    shape = base[name].shape

    def loss_of(flat: torch.Tensor) -> torch.Tensor:
        params = {**{k: v.detach() for k, v in base.items()}, name: flat.view(shape)}
        out = torch.func.functional_call(plain, params, (a, b))
        return mean_loss_of(plain, out, y)

    h = torch.autograd.functional.hessian(loss_of, base[name].detach().flatten())
    eig = np.linalg.eigvalsh(h.numpy())
    return float(eig[np.argmax(np.abs(eig))])


@pytest.mark.parametrize("batch", [None, 12])
def test_power_iteration_equals_the_dense_hessians_top_eigenvalue(batch: int | None) -> None:
    """Each seed's E-block and W-block λmax, on all its training rows or on a 12-row subset,
    against the dense Hessian's eigenvalues (float64, 1000 iterations: converged)."""
    model, train = _tiny([0, 1])
    with torch.no_grad():  # move off the initial point so the blocks are not near-degenerate
        for q in model.leaves:
            q.mul_(3.0)
    spec = HessianMaxSpec(name="hessian_max", every=1, iterations=1000, batch=batch)
    got = probe("hessian_max")(model, spec, ProbeContext(train))
    rows = _rows(model, train, batch)
    assert rows[0].shape[1] == (batch or train[0].shape[1])
    for i in range(2):
        for role in ("E", "W"):
            want = _dense_top(model, i, role, rows)
            assert got[f"hessian_max.{role}"][i].item() == pytest.approx(want, rel=1e-6)
            assert got[f"hessian_max.{role}.change"][i].item() < 1e-6


def test_a_seeds_hessian_and_its_rows_do_not_depend_on_its_batch() -> None:
    """Seed 1 alone (beside its ghost) and among seeds 0..2: the same rows, the same start
    vector, the same λmax to rounding."""
    spec = HessianMaxSpec(name="hessian_max", every=1, iterations=30, batch=10)
    alone_model, alone_train = _tiny([1])
    among_model, among_train = _tiny([0, 1, 2])
    alone = probe("hessian_max")(alone_model, spec, ProbeContext(alone_train))
    among = probe("hessian_max")(among_model, spec, ProbeContext(among_train))
    rows_alone = _rows(alone_model, alone_train, 10)
    rows_among = _rows(among_model, among_train, 10)
    for t_alone, t_among in zip(rows_alone, rows_among, strict=True):
        assert torch.equal(t_alone[0], t_among[1])
    for key in ("hessian_max.E", "hessian_max.W"):
        assert alone[key][0].item() == pytest.approx(among[key][1].item(), rel=1e-10)


def test_a_diverged_seed_gets_nan_and_the_others_their_value() -> None:
    model, train = _tiny([0, 1])
    spec = HessianMaxSpec(name="hessian_max", every=1, iterations=20, of=["W"])
    clean = probe("hessian_max")(model, spec, ProbeContext(train))
    with torch.no_grad():
        model.param("fc1.weight")[1].fill_(float("nan"))
    got = probe("hessian_max")(model, spec, ProbeContext(train))
    assert math.isnan(got["hessian_max.W"][1]) and math.isnan(got["hessian_max.W.change"][1])
    assert got["hessian_max.W"][0].item() == pytest.approx(clean["hessian_max.W"][0].item(),
                                                          rel=1e-12)
    assert set(got) == {"hessian_max.W", "hessian_max.W.change"}


def test_hessian_needs_the_training_rows() -> None:
    model, _ = _tiny([0, 1])
    with pytest.raises(ValueError, match="needs the training rows"):
        probe("hessian_max")(model, HessianMaxSpec(name="hessian_max", every=1))


def test_probes_that_need_context_are_recorded_and_change_nothing() -> None:
    """A run with the update and Hessian probes trains exactly what a run without them trains;
    the Hessian is measured on the parameters after `step` updates (as sigma_max is)."""
    probes = [{"name": "update_norm", "every": 3},
              {"name": "hessian_max", "every": 3, "iterations": 5, "batch": 6}]
    with_probes = train_seeds(_short(probes, batch_size=8), [0, 1])
    without = train_seeds(_short([], batch_size=8), [0, 1])
    for rec, plain in zip(with_probes, without, strict=True):
        assert rec["curves"]["hessian_max.E"]["steps"] == [0, 3, 6]
        assert rec["curves"]["update_norm.W"]["steps"] == [0, 3]  # no step starts at 6
        assert {k: v for k, v in rec["curves"].items() if k in plain["curves"]} \
            == plain["curves"]
        assert rec["summary"] == plain["summary"]


# ---------------------------------------------------------------- refused settings


def test_a_fourier_share_k_beyond_the_frequencies_is_refused_at_load() -> None:
    """p = 7 has 3 frequencies besides DC: k = 4 would make the share 1 whatever E is."""
    ok = _short([{"name": "fourier_share", "every": 1, "k": 4, "exclude_dc": False}])
    assert ok.probes[0].k == 4  # DC included: 4 frequencies
    with pytest.raises(ValidationError, match="k = 4 exceeds the 3 frequencies of p = 7"):
        _short([{"name": "fourier_share", "every": 1, "k": 4}])


@pytest.mark.parametrize(("field", "value"), [("iterations", 1), ("batch", 0), ("of", ["E", "E"])])
def test_bad_hessian_settings_are_refused(field: str, value: object) -> None:
    with pytest.raises(ValidationError):
        _short([{"name": "hessian_max", "every": 1, field: value}])


# ---------------------------------------------------------------- pca


def _numpy_pca(e: np.ndarray) -> tuple[float, float]:
    """(top2_share, eff_dim) from the eigenvalues of the centred rows' covariance."""
    x = e - e.mean(axis=0)
    lam = np.clip(np.linalg.eigh(x.T @ x / (len(x) - 1))[0][::-1], 0, None)
    q = lam / lam.sum()
    nz = q[q > 0]
    return float(q[:2].sum()), float(np.exp(-(nz * np.log(nz)).sum()))


def _circle(p: int, g: int, d: int = 6, noise: float = 0.0, seed: int = 0) -> np.ndarray:
    """Token k at angle 2π g k / p in a random plane of R^d, shifted, with optional noise."""
    rng = np.random.default_rng(seed)
    basis = np.linalg.qr(rng.normal(size=(d, 2)))[0]
    k = np.arange(p)
    ring = np.stack([np.cos(2 * np.pi * g * k / p), np.sin(2 * np.pi * g * k / p)], axis=1)
    return ring @ basis.T * 3.0 + rng.normal(size=d) + noise * rng.normal(size=(p, d))


def test_share_and_effective_dimension_equal_numpy() -> None:
    rng = np.random.default_rng(1)
    e = np.stack([rng.normal(size=(13, 9)) * rng.uniform(0.1, 3, size=9) for _ in range(4)])
    got = pca_of(torch.as_tensor(e), 13)
    for s in range(4):
        share, eff = _numpy_pca(e[s])
        assert got["pca.top2_share"][s].item() == pytest.approx(share, rel=1e-10)
        assert got["pca.eff_dim"][s].item() == pytest.approx(eff, rel=1e-10)


def test_effective_dimension_of_known_spectra() -> None:
    """k equal orthogonal directions: exp(ln k) = k; points on a line: 1."""
    p = 8
    equal = np.zeros((p, 5))
    equal[:4, :4] = np.eye(4)
    equal[4:, :4] = -np.eye(4)  # ±e_i: mean 0, variance 2 along each of 4 axes
    line = np.outer(np.arange(p), [1.0, 2.0, 0.0, 0.0, 0.0])
    got = pca_of(torch.as_tensor(np.stack([equal, line])), p)
    np.testing.assert_allclose(got["pca.eff_dim"].numpy(), [4.0, 1.0], rtol=1e-12)
    np.testing.assert_allclose(got["pca.top2_share"].numpy(), [0.5, 1.0], rtol=1e-12)
    assert got["pca.circular"][1].item() == 0.0  # a line spans no plane


@pytest.mark.parametrize(("p", "g"), [(11, 1), (11, 3), (11, 10), (53, 17), (12, 5)])
def test_a_fourier_circle_of_any_step_is_circular(p: int, g: int) -> None:
    """A circle visited k, k + g, k + 2g, ... (g coprime to p; g = p − 1 is the circle of step
    1 traversed the other way), in a random plane of R^6, shifted and slightly noisy."""
    e = np.stack([_circle(p, g), _circle(p, g, noise=0.01, seed=2)])
    got = pca_of(torch.as_tensor(e), p)
    assert got["pca.circular"].tolist() == [1.0, 1.0]
    assert got["pca.top2_share"][0].item() == pytest.approx(1.0)


def test_a_shuffled_or_broken_circle_is_not_circular() -> None:
    p, g = 13, 4
    e = _circle(p, g)
    rng = np.random.default_rng(3)
    shuffled = e[rng.permutation(p)]
    swapped = e.copy()
    swapped[[2, 5]] = swapped[[5, 2]]  # one pair of tokens out of place
    got = pca_of(torch.as_tensor(np.stack([shuffled, swapped])), p)
    assert got["pca.circular"].tolist() == [0.0, 0.0]


def test_no_value_for_a_non_finite_or_constant_embedding_and_only_number_rows_count() -> None:
    p = 7
    good = _circle(p, 2, d=4)
    nan = good.copy()
    nan[0, 0] = np.nan
    const = np.ones((p, 4))
    extra = np.concatenate([good, 100 * np.ones((2, 4))])  # op and "=" rows after the numbers
    got = pca_of(torch.as_tensor(np.stack([nan, const])), p)
    for curve in got.values():
        assert torch.isnan(curve).all()
    with_extra = pca_of(torch.as_tensor(extra[None]), p)
    assert with_extra["pca.circular"].item() == 1.0


def test_the_registered_probe_reads_the_embedding_role() -> None:
    spec = PCASpec(name="pca", every=1)
    assert spec.curves() == ["pca.top2_share", "pca.eff_dim", "pca.circular"]
    assert spec.cannot_measure(TaskSpec(op="add", p=2, train_frac=0.5)) is not None
    model = BatchedModel(ExperimentSpec.model_validate({
        "task": {"op": "add", "p": 7, "train_frac": 0.5},
        "model": {"kind": "transformer", "d": 8, "layers": 1, "heads": 2, "mlp": 8},
        "optimizer": {"name": "adamw", "lr": 0.01}, "training": {"steps": 1,
                                                                 "eval_interval": 1},
        "probes": [{"name": "pca", "every": 1}]}).model, DataShape(7, 9, 7), [0, 1])
    got = PROBES.implementation("pca")(model, spec)  # type: ignore[call-arg]
    want = pca_of(model.param("embed.weight").detach(), 7)
    for k in spec.curves():
        torch.testing.assert_close(got[k], want[k])
    assert math.isfinite(got["pca.eff_dim"][0].item())


# ---------------------------------------------------------------- token_frequency


TOKEN_FREQUENCY = TokenFrequencySpec(name="token_frequency", every=1)


def _token_frequency(a: list[list[int]], b: list[list[int]], p: int,
                     batch: int) -> dict[str, torch.Tensor]:
    model = BatchedModel(EmbedMLPSpec(kind="embed_mlp", d=4, hidden=6),
                         DataShape(p=p, vocab=p + 2, n_classes=p), list(range(len(a))))
    at, bt = torch.tensor(a), torch.tensor(b)
    return probe("token_frequency")(model, TOKEN_FREQUENCY, ProbeContext((at, bt, at), batch=batch))


def test_a_hand_worked_split() -> None:
    """Rows (0,1), (1,1), (2,2), (1,3), p = 5, batches of 2 of the 4 rows (6 batches): tokens 0,
    2 and 3 are in one row each, so 3 of the 6 batches hold them (1/2); token 1 is in three
    rows, so every batch holds it (1); token 4 never occurs and is left out. f_E = 2.5 / 4."""
    got = _token_frequency([[0, 1, 2, 1]], [[1, 1, 2, 3]], p=5, batch=2)
    assert got["token_frequency.E"].tolist() == pytest.approx([0.625], rel=1e-14)
    assert got["token_frequency.W"].tolist() == [1.0]
    assert got["token_frequency_ratio"].tolist() == pytest.approx([1.6], rel=1e-14)


def _enumerated_share(a: np.ndarray, b: np.ndarray, batch: int) -> float:
    """Every batch of `batch` distinct rows, each equally likely: the share holding each token
    present, averaged over the tokens."""
    tokens = sorted(set(a.tolist()) | set(b.tolist()))
    batches = list(itertools.combinations(range(len(a)), batch))
    share = [sum(any(t in (a[r], b[r]) for r in rows) for rows in batches) / len(batches)
             for t in tokens]
    return float(np.mean(share))


@pytest.mark.parametrize("batch", [1, 3, 5, 9])
def test_equals_an_explicit_enumeration_of_the_batches(batch: int) -> None:
    rng = np.random.default_rng(7)
    a, b = rng.integers(0, 6, size=(2, 2, 9))  # two seeds, 9 rows each, p = 6
    got = _token_frequency(a.tolist(), b.tolist(), p=6, batch=batch)["token_frequency.E"]
    want = [_enumerated_share(a[s], b[s], batch) for s in range(2)]
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
    if batch == 9:  # full batch: every token present is in every update
        assert got.tolist() == [1.0, 1.0]


@pytest.mark.parametrize(("p", "train_frac", "batch"), [(31, 0.6, 128), (31, 0.1, 16),
                                                        (97, 0.3, 512), (97, 0.3, 64)])
def test_equals_scipy_hypergeom_on_real_splits(p: int, train_frac: float, batch: int) -> None:
    """Each seed's own split; the batched value of a seed equals its value alone."""
    task = TaskSpec.model_validate({"op": "add", "p": p, "train_frac": train_frac,
                                    "test_frac": 0.2})
    seeds = [0, 1, 2]
    a, b = (t.numpy() for t in train_rows(task, seeds)[:2])
    got = token_frequency_of(torch.as_tensor(a), torch.as_tensor(b), p, batch).numpy()
    for s in range(len(seeds)):
        n = a.shape[1]
        counts = [int(np.sum((a[s] == t) | (b[s] == t))) for t in range(p)]
        want = np.mean([1 - hypergeom(n, k, min(batch, n)).pmf(0) for k in counts if k > 0])
        np.testing.assert_allclose(got[s], want, rtol=1e-10)
        alone = token_frequency_of(torch.as_tensor(a[s:s + 1]), torch.as_tensor(b[s:s + 1]),
                                   p, batch)
        assert alone.item() == got[s]


def test_without_the_batch_size_it_refuses_rather_than_guess() -> None:
    model = BatchedModel(EmbedMLPSpec(kind="embed_mlp", d=4, hidden=6),
                         DataShape(p=5, vocab=7, n_classes=5), [0, 1])
    rows = torch.zeros(2, 3, dtype=torch.long)
    with pytest.raises(ValueError, match="batch size"):
        probe("token_frequency")(model, TOKEN_FREQUENCY, ProbeContext((rows, rows, rows)))


def _frequency_exp(model: dict) -> ExperimentSpec:
    return _exp([{"name": "token_frequency", "every": 10}], model, {"name": "adamw", "lr": 0.01},
                SHORT)


def test_a_model_without_an_embedding_is_refused_at_load() -> None:
    with pytest.raises(ValueError, match="needs the token embedding matrix"):
        _frequency_exp({"kind": "scalar_mlp", "hidden": 8})


def test_recorded_in_training_as_a_flat_curve_of_the_split() -> None:
    exp = _frequency_exp(MLP)
    for seed, rec in zip([0, 1], train_seeds(exp, [0, 1]), strict=True):
        a, b, _ = train_rows(exp.task, [seed])
        want = token_frequency_of(a, b, 7, 8).item()
        curve = rec["curves"]["token_frequency.E"]
        assert curve["steps"] == [0, 10, 20]
        assert curve["values"] == [want] * 3
        assert rec["curves"]["token_frequency_ratio"]["values"] == [1 / want] * 3


# ---------------------------------------------------------------- in a claim

CLAIM = Path(__file__).parent / "fixtures" / "probe_claim.yaml"


def test_a_claim_with_probes_and_interventions_runs_and_its_probe_metric_decides(
        tmp_path: Path) -> None:
    loaded = load_claim(CLAIM)
    opts = RunOptions(store=tmp_path / "store", reports=tmp_path / "reports", executor="local",
                      device="cpu")
    (run,) = run_claims([loaded], opts, Console(quiet=True))
    store = Store(tmp_path / "store")
    curves = {"train_acc", "val_acc", "train_loss", "val_loss", "sigma_max.E", "sigma_max.W",
              "grad_norm.E", "grad_norm.W", "grad_norm_ratio"}
    events = {}
    for plan in run.plans:
        for key in plan.keys:
            result = store.get(key)["result"]
            assert set(result["curves"]) == curves
            assert result["curves"]["sigma_max.E"]["steps"] == [0, 10, 20, 30, 40]
            assert result["curves"]["grad_norm_ratio"]["steps"] == [0, 10, 20, 30]
            events.setdefault(plan.arm, []).append(result["events"])
    assert events["matched"] == [{"rescale_embedding": 0}] * 8
    assert events["plain"] == [{}] * 8
    assert any("freeze_embeddings" in e for e in events["frozen"])

    # σmax(E) at step 0, independently: numpy's SVD of each seed's initial embedding, and for the
    # matched arm σmax(W) (the rescaling's target)
    exp = loaded.resolved["quick"]["plain"]
    model = BatchedModel(exp.model, DataShape(p=7, vocab=9, n_classes=7), list(range(8)))
    sv = [np.linalg.svd(model.param(name).detach().double().numpy(), compute_uv=False)[:, 0]
          for name in ("embed.weight", "fc1.weight")]
    # the arms share seeds, so scalar_compare pairs them (the default): the median of seed i's
    # difference matched - plain, σmax(W_i) - σmax(E_i)
    expected = float(np.median(sv[1] - sv[0]))
    result = run.result
    assert result.criterion == "scalar_compare"
    assert abs(result.estimate - expected) < 1e-5 * abs(expected)
    assert result.ci[1] < -1.0 and result.verdict == Verdict.SUPPORTED
