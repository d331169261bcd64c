"""A claim about the initialisation runs with a zero-step budget: step 0 is evaluated and probed,
nothing is trained, and a value metric reads it; a time metric there is refused at load."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from grokverify.claim.load import load_claim
from grokverify.claim.yamlio import SpecError
from grokverify.engine.batched import BatchedModel
from grokverify.engine.models import DataShape
from grokverify.run.outcome import RunOptions
from grokverify.run.pipeline import run_claims
from grokverify.store import Store

CLAIM = """\
id: init_ratio
title: sigma_max ratio at initialisation
statement: At initialisation sigma_max(E) / sigma_max(W) is at least 2 (test fixture).
source: {arxiv: "2505.15624", where: test fixture, role: referee, quote: test fixture}
base:
  task: {op: add, p: 7, train_frac: 0.6, test_frac: 0.3}
  model: {kind: embed_mlp, d: 8, hidden: 16}
  optimizer: {name: adamw, lr: 0.02, weight_decay: 0.1}
  training: {steps: 0, eval_interval: 1}
  probes: [{name: sigma_max, every: 1}]
arms:
  init: {}
scales:
  quick: {description: test scale}
seeds: 6
metric: {name: curve_ratio, numerator: sigma_max.E, denominator: sigma_max.W, start: 0, end: 0}
criterion: {name: proportion, arm: init, outcome: value_above, cut: 2.0, threshold: 0.5,
            direction: greater}
"""


def test_a_zero_step_claim_measures_the_initialisation(tmp_path: Path) -> None:
    path = tmp_path / "init.yaml"
    path.write_text(CLAIM)
    loaded = load_claim(path)
    opts = RunOptions(store=tmp_path / "store", reports=tmp_path / "reports", executor="local",
                      device="cpu")
    (run,) = run_claims([loaded], opts, Console(quiet=True))
    store = Store(tmp_path / "store")
    (plan,) = run.plans
    records = [store.get(key)["result"] for key in plan.keys]
    assert [r["curves"]["sigma_max.E"]["steps"] for r in records] == [[0]] * 6
    assert [r["curves"]["val_acc"]["steps"] for r in records] == [[0]] * 6
    # the ratio, independently: numpy's SVD of each seed's initial E and W
    exp = loaded.resolved["quick"]["init"]
    model = BatchedModel(exp.model, DataShape(p=7, vocab=9, n_classes=7), list(range(6)))
    e, w = (np.linalg.svd(model.param(n).detach().double().numpy(), compute_uv=False)[:, 0]
            for n in ("embed.weight", "fc1.weight"))
    ratios = e / w
    got = [r["curves"]["sigma_max.E"]["values"][0] / r["curves"]["sigma_max.W"]["values"][0]
           for r in records]
    np.testing.assert_allclose(got, ratios, rtol=1e-6)
    share = float(np.mean(ratios >= 2.0))
    assert run.result.estimate == pytest.approx(share)
    assert run.result.details["counted_seeds"] == 6


def test_a_time_metric_with_a_zero_step_budget_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "init.yaml"
    path.write_text(CLAIM.replace(
        "metric: {name: curve_ratio, numerator: sigma_max.E, denominator: sigma_max.W, "
        "start: 0, end: 0}", "metric: {name: val_threshold_step}").replace(
        "criterion: {name: proportion, arm: init, outcome: value_above, cut: 2.0, "
        "threshold: 0.5,", "criterion: {name: proportion, arm: init, outcome: observed, "
        "threshold: 0.5,"))
    with pytest.raises(SpecError) as info:
        load_claim(path)
    (problem,) = info.value.problems
    assert problem.path == "base.training.steps" and problem.line == 9
    assert problem.message.startswith("a budget of 0 steps measures the initialisation only, "
                                      "and 'val_threshold_step' is a time to an event")
