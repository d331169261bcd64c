"""Validity checks end to end: read off stored records (nothing retrained), a failed one makes
the run NOT TESTED in the console, report.md, result.json, the suite and `diff`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from grokverify.cli import main

CHECKS = """
checks:
  - {kind: event_share, arm: c1, at_least: AT, why: the baseline must generalise}
interpretation:
  supported: c = 10 speeds up the toy.
  refuted: c = 10 slows the toy down.
  inconclusive: the toy says nothing either way.
  favours: {supported: paper, refuted: critic}
"""


def _run(tmp_path: Path, tiny_claim: Path, at: str, reports: str,
         capsys: pytest.CaptureFixture[str]) -> tuple[int, str, dict]:
    claim = tmp_path / f"tiny_{reports}.yaml"
    claim.write_text(tiny_claim.read_text() + CHECKS.replace("AT", at))
    code = main(["run", str(claim), "--executor", "local", "--store", str(tmp_path / "s"),
                 "--reports", str(tmp_path / reports), "--device", "cpu"])
    out = capsys.readouterr().out
    return code, out, json.loads((tmp_path / reports / "tiny" / "result.json").read_text())


def test_a_failed_check_is_not_tested_and_a_passed_one_leaves_the_verdict(
        tmp_path: Path, tiny_claim: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, passed = _run(tmp_path, tiny_claim, "0.3", "low", capsys)
    assert code == 0 and passed["verdict"] == "INCONCLUSIVE"
    assert passed["checks"] == [{"check": "event_share", "arm": "c1", "what": pytest.approx(
        passed["checks"][0]["what"]), "measured": pytest.approx(1 / 3), "needed": "≥ 0.3",
        "passes": True, "why": "the baseline must generalise"}]
    assert passed["meaning"] == "the toy says nothing either way."
    report = (tmp_path / "low" / "tiny" / "report.md").read_text()
    assert "### Validity checks" in report and "| pass |" in report
    assert "**What it means:** the toy says nothing either way." in report

    code, out, failed = _run(tmp_path, tiny_claim, "0.5", "high", capsys)
    assert code == 0 and "trained 0 seed(s), reused 6" in out  # checks are read off records
    assert failed["verdict"] == "NOT TESTED" and "NOT TESTED" in out
    assert "event_share on c1: 0.333" in failed["reason"]
    assert "would say INCONCLUSIVE" in failed["reason"]
    assert failed["result"]["details"]["verdict_if_tested"] == "INCONCLUSIVE"
    assert failed["checks"][0]["passes"] is False
    report = (tmp_path / "high" / "tiny" / "report.md").read_text()
    assert "**Verdict: NOT TESTED**" in report and "**FAIL**" in report
    assert "did not realise the regime" in report  # the default NOT TESTED meaning
    suite = json.loads((tmp_path / "high" / "results.json").read_text())
    assert suite["claims"][0]["verdict"] == "NOT TESTED"

    assert main(["diff", str(tmp_path / "low"), str(tmp_path / "high")]) == 1
    assert "INCONCLUSIVE -> NOT TESTED" in capsys.readouterr().out
