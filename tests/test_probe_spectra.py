"""The spectral probes (rank, fourier_share) against numpy: ranks of matrices of known rank and
of EW built from each model's own first layer, Fourier shares of embeddings with known spectra;
a diverged seed is NaN alone; bad specs are refused; inside training they record what the
probe gives on a seed trained alone."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from pydantic import ValidationError

from grokverify.claim.experiment import ExperimentSpec
from grokverify.claim.models import EmbedMLPSpec, ToySumSpec
from grokverify.claim.probes import FourierShareSpec, RankSpec, SigmaMaxSpec
from grokverify.engine import probes as probes_mod
from grokverify.engine.batched import BatchedModel, plain_copy
from grokverify.engine.loop import SeedTrainer, train_seeds
from grokverify.engine.models import DataShape
from grokverify.engine.probes import (
    ProbeContext,
    Spectra,
    ew_of,
    fourier_share_of,
    rank_of,
)
from grokverify.kinds import PROBES

probe = PROBES.implementation  # a probe's function by name

MLP_SPEC = EmbedMLPSpec(kind="embed_mlp", d=6, hidden=5)
MLP_SHAPE = DataShape(p=11, vocab=13, n_classes=11)
TOY_SPEC = ToySumSpec(kind="toy_sum", hidden=9, emb_dim=4)
TOY_SHAPE = DataShape(p=10, vocab=12, n_classes=19)
TASK = {"op": "add", "p": 7, "train_frac": 0.6, "test_frac": 0.3}
TRAIN = {"steps": 20, "eval_interval": 10, "batch_size": 8, "early_stop": False}


def _exp(probes: list[dict], model: dict | None = None) -> ExperimentSpec:
    return ExperimentSpec.model_validate({
        "task": TASK, "model": model or {"kind": "embed_mlp", "d": 8, "hidden": 12},
        "optimizer": {"name": "adamw", "lr": 0.01, "weight_decay": 0.1},
        "training": TRAIN, "probes": probes})


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


# ---------------------------------------------------------------- rank


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
    """From GRAM_MIN_RTOL up the rank is counted on the Gram matrix's singular values: the same
    count as an SVD's (numpy), for low ranks (exact zeros become ~1e-8 · σmax there, far below
    the cut), full ranks with spread spectra, and singular values 1e-5 relative
    on either side of the cut."""
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


@pytest.mark.parametrize(("spec", "shape", "n"), [(MLP_SPEC, MLP_SHAPE, 4),
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
    model = BatchedModel(MLP_SPEC, MLP_SHAPE, [0, 1, 2])
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
    both = train_seeds(_exp([sigma, ranks]), [0, 1])
    apart = [train_seeds(_exp([sigma]), [0, 1]), train_seeds(_exp([ranks]), [0, 1])]
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
    model = BatchedModel(MLP_SPEC, MLP_SHAPE, list(range(seeds)), dtype=torch.float64)
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
    model = BatchedModel(MLP_SPEC, MLP_SHAPE, [0, 1, 2])
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


@pytest.mark.parametrize(("probe", "match"), [
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
def test_a_bad_spectral_probe_spec_is_refused(probe: dict, match: str) -> None:
    with pytest.raises(ValidationError, match=match):
        _exp([probe])


def test_a_model_without_an_embedding_is_refused_for_e_and_ew_only() -> None:
    scalar = {"kind": "scalar_mlp", "hidden": 8}
    for probe in ({"name": "rank", "every": 5}, {"name": "rank", "every": 5, "of": ["EW"]},
                  {"name": "fourier_share", "every": 5, "k": 1}):
        with pytest.raises(ValidationError, match=r"token embedding matrix \(E\).*scalar_mlp"):
            _exp([probe], scalar)
    assert _exp([{"name": "rank", "every": 5, "of": ["W"]}], scalar).probes[0].curves() \
        == ["rank.W"]


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
    with_probes = train_seeds(_exp(probes, model), [0, 1, 2])
    without = train_seeds(_exp([], model), [0, 1, 2])
    names = ["rank.E", "rank.W", "rank.EW", "fourier_share.E"]
    for rec, plain in zip(with_probes, without, strict=True):
        for name in names:
            assert rec["curves"][name]["steps"] == [0, 5, 10, 15, 20]
        assert {k: v for k, v in rec["curves"].items() if k not in names} == plain["curves"]
        assert rec["summary"] == plain["summary"]
    alone: dict[str, list[float]] = {name: [] for name in names}
    with SeedTrainer(_exp([], model), [1], workers=1) as trainer:
        for step in range(0, 21, 5):
            if step:
                trainer.train(5)
            got = {**probe("rank")(trainer.shards[0].model, rank_spec),
                   **probe("fourier_share")(trainer.shards[0].model, share_spec)}
            for name in names:
                alone[name].append(got[name][0].item())
    for name in names:
        assert with_probes[1]["curves"][name]["values"] == alone[name]
