"""The committed reference reports (reports/reference/quick) are reproduced bit for bit.

Training on a CPU is bit-identical on any x86-64 CPU with AVX2 (pinned kernels:
docs/determinism.md), so rerunning a claim's quick scale must give the same per-seed figures,
estimate, CI, p-value and verdict. A change to the training code or the statistics that moves any
of them fails here; if the change is meant to, regenerate the references (reports/README.md).
Slow (the four quick claims, ~5 min on 2 cores): run with `pytest --slow`. Skipped where the
torch release or the engine's results version differs from the references', or with pinning
off; an image claim's, unless GROKVERIFY_DATA_DIR holds the files its reference was made from.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from rich.console import Console

from grokverify.datasets import ENV_VAR, BadData, MissingData
from grokverify.datasets import load as load_data
from grokverify.engine import numerics
from grokverify.engine.version import RESULTS_VERSION
from grokverify.outcome import RunOptions
from grokverify.pipeline import run_claims
from grokverify.spec import load_claim
from grokverify.store import torch_version

REPO = Path(__file__).resolve().parent.parent
REFERENCE = REPO / "reports" / "reference" / "quick"
CLAIMS = sorted(p.name for p in REFERENCE.iterdir() if (p / "result.json").is_file())


def _comparable(result: dict) -> dict:
    """What a rerun must reproduce: not the store keys (they hash the code version) nor the
    provenance (times, hosts)."""
    arms = {name: {k: v for k, v in arm.items() if k != "store_keys"}
            for name, arm in result["arms"].items()}
    return {"arms": arms, **{k: result[k] for k in
                             ("verdict", "reason", "result", "family", "per_seed", "sequential")}}


def test_every_shipped_claim_has_a_reference_report() -> None:
    assert sorted(p.stem for p in (REPO / "claims").glob("*.yaml")) == CLAIMS


@pytest.mark.slow
@pytest.mark.parametrize("claim_id", CLAIMS)
def test_reference_report_is_reproduced(claim_id: str, tmp_path: Path) -> None:
    ref = json.loads((REFERENCE / claim_id / "result.json").read_text())
    made = (ref["provenance"]["results_version"], ref["provenance"]["packages"]["torch"])
    if made[0] != RESULTS_VERSION or made[1].split("+")[0] != torch_version() or \
            numerics.native():
        pytest.skip(f"references made with results version {made[0]}, torch {made[1]}; here "
                    f"{RESULTS_VERSION}, torch {torch_version()}, numerics "
                    f"{'native' if numerics.native() else 'pinned'}")
    for data in ref.get("data", []):  # an image claim: only from the files it was made from
        try:
            digest = load_data(data["dataset"]).digest
        except (MissingData, BadData) as exc:
            pytest.skip(f"{claim_id} reads {data['dataset']}'s files: {exc}")
        if digest != data["digest"]:
            pytest.skip(f"{claim_id}'s reference was made from {data['dataset']} files with "
                        f"digest {data['digest']}; {ENV_VAR} holds {digest}")
    opts = RunOptions(store=tmp_path / "store", reports=tmp_path / "reports", executor="local",
                      device="cpu", cpus_per_task=min(2, os.cpu_count() or 1))
    run_claims([load_claim(REPO / ref["claim"]["file"])], opts, Console(quiet=True))
    got = json.loads((tmp_path / "reports" / claim_id / "result.json").read_text())
    assert _comparable(got) == _comparable(ref)
