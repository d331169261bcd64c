"""The effective-theory probe (paper 2, §3.2, App. F) against grokverify.analysis.effective
computed by hand for each seed's own training set and embedding: λ3, n_h, and the drifts of
the quantities App. F proves conserved; a diverged seed and an unpinned training set; in a
zero-step claim; bad specs refused."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pydantic
import pytest
import torch

from grokverify.analysis import effective as eff
from grokverify.analysis import parallelogram as pg
from grokverify.claim.load import load_claim
from grokverify.claim.models import ToySumSpec
from grokverify.claim.probes import EffectiveSpec
from grokverify.claim.tasks import TaskSpec
from grokverify.engine.batched import BatchedModel
from grokverify.engine.loop import train_seeds
from grokverify.engine.models import DataShape
from grokverify.engine.probes import ProbeContext
from grokverify.engine.tasks import build_dataset
from grokverify.kinds import PROBES

probe = PROBES.implementation  # a probe's function by name

CURVES = ["effective.lambda3", "effective.n_h", "effective.sum_drift", "effective.z0_drift"]


def _spec(**kw) -> EffectiveSpec:
    return EffectiveSpec.model_validate({"name": "effective", "every": 1, "eta": 1e-3, **kw})


def _probe(frac: float, seeds: list[int], spec: EffectiveSpec, emb_dim: int = 1):
    task = TaskSpec.model_validate({"op": "add", "p": 10, "modular": False, "unordered": True,
                                    "train_frac": frac})
    data = [build_dataset(task, s) for s in seeds]
    model = BatchedModel(ToySumSpec(kind="toy_sum", hidden=4, emb_dim=emb_dim),
                         DataShape(p=10, vocab=12, n_classes=data[0].n_classes), seeds)
    rows = tuple(torch.as_tensor(np.stack([getattr(d, k)[d.train_idx] for d in data]))
                 for k in ("a", "b", "y"))
    got = {k: v.numpy() for k, v in probe("effective")(model, spec, ProbeContext(rows)).items()}
    pairs = [np.stack([d.a[d.train_idx], d.b[d.train_idx]], axis=1) for d in data]
    return got, model, pairs


@pytest.mark.parametrize("emb_dim", [1, 2])
def test_equals_the_analysis_of_each_seeds_training_set_and_embedding(emb_dim: int) -> None:
    spec = _spec(flow_steps=200)
    got, model, pairs = _probe(0.6, list(range(6)), spec, emb_dim)
    assert sorted(got) == sorted(spec.curves()) == sorted(CURVES)
    e = model.param(model.role("E")).detach().double().numpy()[:, :10]
    for s in range(6):
        system = eff.parallelogram_system(pairs[s], 10)
        lam3 = eff.grokking_rate(system, 10, z0=eff.normalised_z0(10, emb_dim))
        assert got["effective.lambda3"][s] == pytest.approx(lam3, rel=1e-12)
        if system.nullity == 2:
            assert got["effective.n_h"][s] == pytest.approx(1 / (lam3 * 1e-3), rel=1e-12)
        flow = eff.effective_flow(e[s], system, 1e-3, 200, method="rk4")
        assert got["effective.z0_drift"][s] == pytest.approx(
            np.abs(flow.z0 - flow.z0[0]).max() / flow.z0[0], abs=1e-18)
        # App. F: RK4 conserves both to rounding over 200 steps
        assert got["effective.z0_drift"][s] < 1e-12 and got["effective.sum_drift"][s] < 1e-12
    assert (got["effective.lambda3"] > 0).any()


def test_euler_drifts_z0_by_its_known_amount_and_keeps_the_sum() -> None:
    """Plain gradient descent raises Z0 by η² |∇ℓ_eff|² a step (analysis.effective) and keeps a
    centred sum exactly; the drift is far above RK4's."""
    euler, _, _ = _probe(0.6, [0, 1], _spec(flow_steps=500, method="euler"))
    rk4, _, _ = _probe(0.6, [0, 1], _spec(flow_steps=500))
    assert (euler["effective.z0_drift"] > 1e3 * rk4["effective.z0_drift"]).all()
    assert (euler["effective.sum_drift"] < 1e-12).all()


def test_an_unpinned_set_has_no_prediction_and_a_diverged_seed_is_nan() -> None:
    got, model, pairs = _probe(0.2, [0, 1, 2], _spec(flow_steps=10))
    unpinned = [s for s in range(3) if pg.nullity(10, pg.sample_index(
        10, pairs[s][:, 0], pairs[s][:, 1])) > 2]
    assert unpinned  # 11 of 55 samples never pin the embedding
    for s in unpinned:
        assert got["effective.lambda3"][s] == 0 and math.isnan(got["effective.n_h"][s])
    with torch.no_grad():
        model.param(model.role("E"))[1, 3] = float("nan")
    task = TaskSpec.model_validate({"op": "add", "p": 10, "modular": False, "unordered": True,
                                    "train_frac": 0.2})
    data = [build_dataset(task, s) for s in [0, 1, 2]]
    rows = tuple(torch.as_tensor(np.stack([getattr(d, k)[d.train_idx] for d in data]))
                 for k in ("a", "b", "y"))
    again = probe("effective")(model, _spec(flow_steps=10), ProbeContext(rows))
    assert all(math.isnan(again[c][1].item()) for c in CURVES)
    assert math.isfinite(again["effective.z0_drift"][0].item())


@pytest.mark.parametrize("bad", [{"eta": 0}, {"eta": -1.0}, {"flow_steps": -1},
                                 {"method": "heun"}, {"delta": 0.1}])
def test_bad_fields_are_refused(bad: dict) -> None:
    with pytest.raises(pydantic.ValidationError):
        _spec(**bad)


CLAIM = """\
id: effective_tiny
title: Tiny effective-theory claim
statement: test fixture.
source: {arxiv: "2205.10343", where: test fixture, role: inference, quote: test fixture}
base:
  task: {op: add, p: 10, modular: false, unordered: true, train_frac: 0.6, test_frac: null}
  model: {kind: toy_sum, hidden: 4, emb_dim: 1}
  optimizer: {name: adamw, lr: 0.001}
  training: {steps: 0, eval_interval: 1}
  probes: [{name: effective, every: 1, eta: 0.001, flow_steps: 50}]
arms:
  f0.6: {}
scales:
  quick: {description: test scale}
seeds: 4
metric: {name: curve_at, curve: effective.z0_drift, step: 0}
criterion: {name: value, arm: f0.6, target: 0, tol: 1.0e-9}
"""


def test_a_zero_step_run_records_it_at_step_zero(tmp_path: Path) -> None:
    path = tmp_path / "claim.yaml"
    path.write_text(CLAIM, encoding="utf-8")
    exp = load_claim(path).resolved["quick"]["f0.6"]
    records = train_seeds(exp, [0, 1, 2, 3])
    got, _, _ = _probe(0.6, [0, 1, 2, 3], _spec(flow_steps=50))
    for s, rec in enumerate(records):
        for curve in CURVES:
            assert rec["curves"][curve]["steps"] == [0]
            value = rec["curves"][curve]["values"][0]
            want = got[curve][s]
            assert (value is None and math.isnan(want)) or value == pytest.approx(want)
    bad = CLAIM.replace("modular: false", "modular: true")
    path.write_text(bad, encoding="utf-8")
    with pytest.raises(Exception, match="effective: needs paper 2's sum task"):
        load_claim(path)
