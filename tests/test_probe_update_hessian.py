"""The update-norm and block-Hessian probes against independent references: a plain torch.optim
step on each seed's plain module, and the top eigenvalue of a dense float64 Hessian."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from pydantic import ValidationError

from grokverify.claim.experiment import ExperimentSpec
from grokverify.claim.models import EmbedMLPSpec
from grokverify.claim.probes import HessianMaxSpec
from grokverify.engine.batched import BatchedModel, batch_members, plain_copy
from grokverify.engine.data import SeedData
from grokverify.engine.loop import Shard, train_seeds
from grokverify.engine.models import DataShape, mean_loss_of
from grokverify.engine.probes import ProbeContext, _rows
from grokverify.kinds import PROBES

TASK = {"op": "add", "p": 7, "train_frac": 0.6, "test_frac": 0.3}
MODEL = {"kind": "embed_mlp", "d": 4, "hidden": 6}


def _exp(probes: list[dict], optimizer: dict | None = None, batch_size: int | None = None,
         interventions: list[dict] | None = None) -> ExperimentSpec:
    return ExperimentSpec.model_validate({
        "task": TASK, "model": MODEL,
        "optimizer": optimizer or {"name": "adamw", "lr": 0.01, "weight_decay": 0.5,
                                   "emb_lr_mult": 4.0},
        "training": {"steps": 6, "eval_interval": 3, "batch_size": batch_size,
                     "early_stop": False},
        "probes": probes, "interventions": interventions or []})


# ---------------------------------------------------------------- update norms


@pytest.mark.parametrize("optimizer", [
    {"name": "adamw", "lr": 0.01, "weight_decay": 0.5, "emb_lr_mult": 4.0},
    {"name": "sgd", "lr": 0.3, "weight_decay": 0.01, "momentum": 0.9, "emb_lr_mult": 10.0},
])
def test_update_norms_equal_a_plain_torch_optim_step(optimizer: dict) -> None:
    """The first two full-batch steps of each seed, replayed on its plain module with its own
    torch.optim optimizer (embedding lr × c, the same weight decay), give the same ‖ΔE‖, ‖ΔW‖
    and ratio: Adam's normalised step and SGD's raw one alike (the second step has momentum
    and Adam's moments in it)."""
    exp = _exp([{"name": "update_norm", "every": 1}], optimizer)
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
    recs = train_seeds(_exp([{"name": "update_norm", "every": 2}], batch_size=8,
                            interventions=[{"name": "freeze_embeddings", "from_step": 0}]), [0])
    curves = recs[0]["curves"]
    assert curves["update_norm.E"]["steps"] == [0, 2, 4]  # the step each update starts from
    assert curves["update_norm.E"]["values"] == [0.0, 0.0, 0.0]
    assert all(v > 0 for v in curves["update_norm.W"]["values"])


# ---------------------------------------------------------------- Hessian λmax


def _tiny(seeds: list[int]) -> tuple[BatchedModel, tuple[torch.Tensor, ...]]:
    spec = EmbedMLPSpec(kind="embed_mlp", d=3, hidden=5)
    exp = _exp([])
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
    got = PROBES.implementation("hessian_max")(model, spec, ProbeContext(train))
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
    alone = PROBES.implementation("hessian_max")(alone_model, spec, ProbeContext(alone_train))
    among = PROBES.implementation("hessian_max")(among_model, spec, ProbeContext(among_train))
    rows_alone = _rows(alone_model, alone_train, 10)
    rows_among = _rows(among_model, among_train, 10)
    for t_alone, t_among in zip(rows_alone, rows_among, strict=True):
        assert torch.equal(t_alone[0], t_among[1])
    for key in ("hessian_max.E", "hessian_max.W"):
        assert alone[key][0].item() == pytest.approx(among[key][1].item(), rel=1e-10)


def test_a_diverged_seed_gets_nan_and_the_others_their_value() -> None:
    model, train = _tiny([0, 1])
    spec = HessianMaxSpec(name="hessian_max", every=1, iterations=20, of=["W"])
    clean = PROBES.implementation("hessian_max")(model, spec, ProbeContext(train))
    with torch.no_grad():
        model.param("fc1.weight")[1].fill_(float("nan"))
    got = PROBES.implementation("hessian_max")(model, spec, ProbeContext(train))
    assert math.isnan(got["hessian_max.W"][1]) and math.isnan(got["hessian_max.W.change"][1])
    assert got["hessian_max.W"][0].item() == pytest.approx(clean["hessian_max.W"][0].item(),
                                                          rel=1e-12)
    assert set(got) == {"hessian_max.W", "hessian_max.W.change"}


def test_hessian_needs_the_training_rows() -> None:
    model, _ = _tiny([0, 1])
    with pytest.raises(ValueError, match="needs the training rows"):
        PROBES.implementation("hessian_max")(model, HessianMaxSpec(name="hessian_max", every=1))


def test_probes_that_need_context_are_recorded_and_change_nothing() -> None:
    """A run with the update and Hessian probes trains exactly what a run without them trains;
    the Hessian is measured on the parameters after `step` updates (as sigma_max is)."""
    probes = [{"name": "update_norm", "every": 3},
              {"name": "hessian_max", "every": 3, "iterations": 5, "batch": 6}]
    with_probes = train_seeds(_exp(probes, batch_size=8), [0, 1])
    without = train_seeds(_exp([], batch_size=8), [0, 1])
    for rec, plain in zip(with_probes, without, strict=True):
        assert rec["curves"]["hessian_max.E"]["steps"] == [0, 3, 6]
        assert rec["curves"]["update_norm.W"]["steps"] == [0, 3]  # no step starts at 6
        assert {k: v for k, v in rec["curves"].items() if k in plain["curves"]} \
            == plain["curves"]
        assert rec["summary"] == plain["summary"]


# ---------------------------------------------------------------- loading


def test_a_fourier_share_k_beyond_the_frequencies_is_refused_at_load() -> None:
    """p = 7 has 3 frequencies besides DC: k = 4 would make the share 1 whatever E is."""
    ok = _exp([{"name": "fourier_share", "every": 1, "k": 4, "exclude_dc": False}])
    assert ok.probes[0].k == 4  # DC included: 4 frequencies
    with pytest.raises(ValidationError, match="k = 4 exceeds the 3 frequencies of p = 7"):
        _exp([{"name": "fourier_share", "every": 1, "k": 4}])


@pytest.mark.parametrize(("field", "value"), [("iterations", 1), ("batch", 0), ("of", ["E", "E"])])
def test_bad_hessian_settings_are_refused(field: str, value: object) -> None:
    with pytest.raises(ValidationError):
        _exp([{"name": "hessian_max", "every": 1, field: value}])
