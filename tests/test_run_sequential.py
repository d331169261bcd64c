"""Sequential seeding through the pipeline (grokverify.run.pipeline.seeding), and `grokverify
plan` (grokverify.run.plan)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console

from grokverify.claim.load import LoadedClaim, load_claim
from grokverify.cli import main
from grokverify.run.pipeline import RunOptions, run_claims, seeding
from grokverify.stats.sequential import nominal_levels

QUIET = Console(quiet=True)


def _sequential(tmp_path: Path, tiny_claim: Path, seeds: str) -> Path:
    path = tmp_path / "seq.yaml"
    path.write_text(tiny_claim.read_text().replace("seeds: 3\n", f"seeds: {seeds}\n"))
    return path


def schedule(loaded: LoadedClaim, scale: str,
             override: int | None) -> list[tuple[int, float | None]]:
    """(seed count, CI level or None for the criterion's own) of each look the run makes."""
    return [(look.n, look.ci_level) for look in seeding(loaded, scale, override).looks]


def test_schedule_uses_the_spending_rule_levels(tmp_path: Path, tiny_claim: Path) -> None:
    loaded = load_claim(_sequential(tmp_path, tiny_claim, "{min: 4, max: 12, step: 4}"))
    sched = schedule(loaded, "quick", None)
    assert [n for n, _ in sched] == [4, 8, 12]
    levels = nominal_levels([1 / 3, 2 / 3, 1.0], 0.05, "obrien_fleming")
    assert [lv for _, lv in sched] == pytest.approx([1 - a for a in levels])
    assert sched[0][1] > sched[1][1] > sched[2][1] > 0.95  # early looks are stricter
    assert schedule(loaded, "quick", 5) == [(5, None)]  # --seeds N: one fixed round


def test_sequential_run_adds_rounds_until_decided_or_max(tmp_path: Path,
                                                         tiny_claim: Path) -> None:
    loaded = load_claim(_sequential(tmp_path, tiny_claim, "{min: 3, max: 7, step: 2}"))
    opts = RunOptions(store=tmp_path / "store", reports=tmp_path / "reports", executor="local",
                      device="cpu")
    (run,) = run_claims([loaded], opts, QUIET)
    # the c1 median stays near or beyond this budget at every look (CI from 0 past θ), so no
    # look decides and every round runs; stopping at a decision is tested on the Rounds object
    # (tests/test_stats_sequential.py) and in the calibration
    assert [(r["seeds"], r["verdict"]) for r in run.rounds] == [
        (3, "INCONCLUSIVE"), (5, "INCONCLUSIVE"), (7, "INCONCLUSIVE")]
    assert run.verdict.value == "INCONCLUSIVE" and run.result.details["ci_computed"][0] == 0.0
    n_last = run.rounds[-1]["seeds"]
    assert run.trained == 2 * n_last  # each round trained only its new seeds
    assert run.result.ci_level == pytest.approx(run.rounds[-1]["ci_level"])
    result = json.loads((tmp_path / "reports" / "tiny" / "result.json").read_text())
    assert result["sequential"]["looks"] == [3, 5, 7]
    assert len(result["sequential"]["rounds"]) == len(run.rounds)
    assert "Sequential rounds" in (tmp_path / "reports" / "tiny" / "report.md").read_text()


def test_plan_from_a_pilot_and_from_a_declared_effect(tmp_path: Path, tiny_claim: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    store = str(tmp_path / "store")
    code = main(["plan", str(tiny_claim), "--store", store, "--device", "cpu"])
    assert code == 1 and "no pilot seeds" in capsys.readouterr().out
    assert main(["plan", str(tiny_claim), "--store", store, "--device", "cpu", "--effect", "0.3",
                 "--candidates", "4,16", "--n-sim", "40"]) == 0
    out = capsys.readouterr().out
    assert "declared effect 0.3" in out and "80% power needs" in out
    assert main(["run", str(tiny_claim), "--executor", "local", "--device", "cpu", "--store",
                 store, "--reports", str(tmp_path / "r")]) == 0
    capsys.readouterr()
    assert main(["plan", str(tiny_claim), "--store", store, "--device", "cpu",
                 "--candidates", "4,8", "--n-sim", "40"]) == 0
    out = capsys.readouterr().out
    assert "pilot of 3 seed(s) per arm" in out and "power needs" in out
