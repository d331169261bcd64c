"""`grokverify pilot`: each arm's regime at the budget and longer, a proposed budget and seed
count, and seeds the following run reuses."""

from __future__ import annotations

from pathlib import Path

import pytest

from grokverify.cli import main


def _pilot(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str],
           *extra: str) -> tuple[int, str, str]:
    claim = tmp_path / "claim.yaml"
    claim.write_text(text)
    code = main(["pilot", str(claim), "--executor", "local", "--device", "cpu", "--store",
                 str(tmp_path / "s"), *extra])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_budget_where_no_arm_generalises_is_said_with_the_budget_that_would_do(
        tmp_path: Path, tiny_claim: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # both arms at c = 10 (median step 190 at 300 steps), cut to 60 steps: nothing generalises
    text = tiny_claim.read_text().replace("steps: 300", "steps: 60").replace(
        "c1: {}", "c1: {optimizer: {emb_lr_mult: 10}}")
    code, out, _ = _pilot(tmp_path, text, capsys)
    assert code == 0
    assert "c1 at 60 steps: 0/3 fit (—), 0/3 generalise (—)" in out
    assert "c10 at 240 steps:" in out and "3/3 generalise (median step 190)" in out
    assert "generalise in fewer than half their seeds within 60 steps" in out
    assert "a budget of about 290 steps" in out  # 1.5 x 190, on the 10-step evaluation grid
    assert "P(SUPPORTED) 4: 0.00" in out
    rc = main(["run", str(tmp_path / "claim.yaml"), "--executor", "local", "--device", "cpu",
               "--store", str(tmp_path / "s"), "--reports", str(tmp_path / "r")])
    out = capsys.readouterr().out  # the two arms are one experiment here: 3 records
    assert rc == 0 and "trained 0 seed(s), reused 3" in out


def test_an_arm_that_never_generalises_is_out_of_reach(
        tmp_path: Path, tiny_claim: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = tiny_claim.read_text().replace("steps: 300", "steps: 20")
    code, out, _ = _pilot(tmp_path, text, capsys, "--stretch", "2", "--seeds", "2")
    assert code == 0 and "c1 at 40 steps: 0/2 fit" in out
    assert "may be out of reach" in out and "try --stretch 8" in out


def test_pilot_refuses_a_stretch_below_one(tmp_path: Path, tiny_claim: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _pilot(tmp_path, tiny_claim.read_text(), capsys, "--stretch", "0")
    assert code == 2 and "--stretch must be at least 1" in err
