"""A claim that declares probes and interventions runs end to end: its records hold the named
curves, and a scalar metric on a probe feeds scalar_compare with the value computed here
independently of the probe."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from rich.console import Console

from grokverify.claim.load import load_claim
from grokverify.engine.batched import BatchedModel
from grokverify.engine.models import DataShape
from grokverify.run.outcome import RunOptions
from grokverify.run.pipeline import run_claims
from grokverify.stats.base import Verdict
from grokverify.store import Store

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
