"""The committed reference reports (reports/reference/quick and /paper): rebuilt from the
committed store archives without training, and (slow: `pytest --slow`) the quick ones retrained
bit for bit where the torch release, results version, numerics and data files are the
references' (reports/README.md)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from rich.console import Console

from grokverify.archive import unpack
from grokverify.claim.load import load_claim
from grokverify.engine import numerics
from grokverify.engine.datasets import ENV_VAR, BadData, MissingData
from grokverify.engine.datasets import load as load_data
from grokverify.engine.version import RESULTS_VERSION
from grokverify.run.outcome import RunOptions
from grokverify.run.pipeline import run_claims
from grokverify.run.rebuild import rebuild_claims
from grokverify.store import Store, torch_version, verify

REPO = Path(__file__).resolve().parent.parent
REFERENCE = REPO / "reports" / "reference" / "quick"
CLAIMS = sorted(p.name for p in REFERENCE.iterdir() if (p / "result.json").is_file())
PARTS = sorted((REPO / "reports" / "reference" / "store").glob("part-*.tar.xz"))
PAPER = REPO / "reports" / "reference" / "paper"
PAPER_CLAIMS = sorted(p.name for p in PAPER.iterdir() if (p / "result.json").is_file())
PAPER_PARTS = sorted((REPO / "reports" / "reference" / "store").glob("paper-*.tar.xz"))
# a claim of each paper, a family and a sequential-free fast rebuild: read from the archives in CI
FROM_ARCHIVE = ["adam_lr", "skeptic_sgd", "p2_rqi_threshold_p10", "p2_phase_lr_wd_s3"]


def _comparable(result: dict) -> dict:
    """What a rerun must reproduce: not the store keys (they hash the process's part: torch,
    numerics) nor the provenance (times, hosts)."""
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


def _self_contained(folder: Path, claims: list[str]) -> int:
    """A suite page: a row and a section for every claim, every figure its claims' result.json
    name embedded as a data URI (none missing), no request of any kind. Returns the images."""
    from suitedata import page_of

    page = page_of(folder / "index.html")
    results = [json.loads((folder / c / "result.json").read_text()) for c in claims]
    rows = json.loads((folder / "results.json").read_text())["claims"]
    assert sorted(r["id"] for r in rows) == claims
    sections = [a.get("id") for t, a in page.tags if t == "section"]
    assert sorted(sections) == sorted(f"claim-{c}" for c in claims)
    images = [a for t, a in page.tags if t == "img"]
    forest = (folder / "forest.png").is_file()  # the library's forest plot, under the table
    assert len(images) == sum(len(r["figures"]) for r in results) + forest
    assert all((a["src"] or "").startswith("data:image/png;base64,") for a in images)
    assert "figure missing" not in " ".join(page.text)
    for tag, attrs in page.tags:
        assert tag not in ("link", "iframe", "object", "embed", "base")
        for name, value in attrs.items():
            if name in ("src", "href", "action", "srcset", "poster", "data"):
                assert value and value.startswith(("#", "data:image/")), (tag, name, value)
    inline = "".join(page.inline["style"]) + "".join(page.inline["script"])
    assert "http" not in inline and "url(" not in inline and "@import" not in inline
    return len(images)


def test_the_reference_suite_is_one_self_contained_page() -> None:
    """reports/reference/quick/index.html: self-contained (the library's forest plot included),
    and the size the README states (to 0.1 MB)."""
    assert _self_contained(REFERENCE, CLAIMS) > 100
    index = REFERENCE / "index.html"
    stated = {float(m) for m in re.findall(r"([\d.]+) MB for the \d+ reference claims",
                                           (REPO / "README.md").read_text())}
    assert stated == {round(index.stat().st_size / 1e6, 1)}


def test_the_paper_scale_suite_is_one_self_contained_page() -> None:
    assert PAPER_CLAIMS and _self_contained(PAPER, PAPER_CLAIMS) >= len(PAPER_CLAIMS)


@pytest.fixture(scope="module")
def archived_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("reference-store")
    unpack(PARTS, Store(where))
    return where


def test_the_archived_store_is_sound(archived_store: Path) -> None:
    report = verify(Store(archived_store))
    assert not report.findings and report.ok > 15_000


@pytest.mark.parametrize("claim_id", FROM_ARCHIVE)
def test_the_archived_store_rebuilds_the_reference_report_without_training(
        claim_id: str, archived_store: Path, tmp_path: Path) -> None:
    ref = json.loads((REFERENCE / claim_id / "result.json").read_text())
    if ref["provenance"]["results_version"] != RESULTS_VERSION:
        pytest.skip(f"the reference predates results version {RESULTS_VERSION}: its records "
                    "are being retrained into the archives (reports/README.md)")
    opts = RunOptions(store=archived_store, reports=tmp_path, executor="local", device="cpu",
                      chunk_size=1)
    (done,) = rebuild_claims([load_claim(REPO / ref["claim"]["file"])], opts,
                             Console(quiet=True))
    got = json.loads((tmp_path / claim_id / "result.json").read_text())
    assert got["provenance"]["seeds_trained_now"] == 0
    assert _comparable(got) == _comparable(ref)


def test_the_paper_scale_reports_rebuild_from_their_archive_without_training(
        tmp_path: Path) -> None:
    """Every reports/reference/paper folder, from reference/store/paper-*.tar.xz alone, as its
    report says (reports/README.md, "Paper scale"): the same verdict, estimates and seeds."""
    store = Store(tmp_path / "store")
    unpack(PAPER_PARTS, store)
    for claim_id in PAPER_CLAIMS:
        ref = json.loads((PAPER / claim_id / "result.json").read_text())
        seeds = None if ref.get("sequential") else max(len(a["seeds"]) for a in
                                                       ref["arms"].values())
        opts = RunOptions(scale="paper", seeds=seeds, store=store.root,
                          reports=tmp_path / "reports", executor="local", device="cpu")
        rebuild_claims([load_claim(REPO / ref["claim"]["file"])], opts, Console(quiet=True))
        got = json.loads((tmp_path / "reports" / claim_id / "result.json").read_text())
        assert got["provenance"]["seeds_trained_now"] == 0
        assert got["scale"]["paper_setting"] and got["scale"]["name"] == "paper"
        assert _comparable(got) == _comparable(ref)
