"""`grokverify diff OLD NEW`: lines and exit codes from hand-written suites."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from suitedata import write_variant

from grokverify.cli import main


def _row(claim_id: str, verdict: str, estimate: Any = 0.6, ci: Any = (0.5, 0.7),
         **kw: Any) -> dict[str, Any]:
    return {"id": claim_id, "verdict": verdict, "scale": "quick", "estimate": estimate,
            "ci": list(ci), "ci_level": 0.95, "members": None, **kw}


def _suite(path: Path, *rows: dict[str, Any]) -> Path:
    path.write_text(json.dumps({"suite_version": 1, "claims": list(rows)}))
    return path


def _diff(old: Path, new: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    code = main(["diff", str(old), str(new)])
    return code, capsys.readouterr().out.splitlines()


def test_unchanged(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = _suite(tmp_path / "old.json", _row("a", "SUPPORTED"))
    new = _suite(tmp_path / "new.json", _row("a", "SUPPORTED", estimate=0.65))
    code, out = _diff(old, new, capsys)
    assert code == 0 and out[0] == "same     a: SUPPORTED"
    assert out[-1].startswith("0 verdict(s) changed, 0 claim(s) with an estimate outside")


def test_a_changed_verdict_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = _suite(tmp_path / "old.json", _row("a", "INCONCLUSIVE"), _row("b", "SUPPORTED"))
    new = _suite(tmp_path / "new.json", _row("a", "SUPPORTED"), _row("b", "SUPPORTED"))
    code, out = _diff(old, new, capsys)
    assert code == 1
    assert out[:2] == ["CHANGED  a: INCONCLUSIVE -> SUPPORTED", "same     b: SUPPORTED"]


def test_added_and_removed_claims_exit_0(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    old = _suite(tmp_path / "old.json", _row("gone", "REFUTED"), _row("kept", "SUPPORTED"))
    new = _suite(tmp_path / "new.json", _row("added", "FINDING"), _row("kept", "SUPPORTED"))
    code, out = _diff(old, new, capsys)
    assert code == 0
    assert out[:3] == ["NEW      added: FINDING", "same     kept: SUPPORTED",
                       "MISSING  gone: REFUTED in OLD, no report in NEW"]
    assert "1 new, 1 missing" in out[-1]


def test_an_estimate_outside_the_old_ci_is_named(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    members = [{"member": "add", "verdict": "SUPPORTED", "estimate": 0.5, "ci": [0.4, "inf"],
                "ci_level": 0.95}, {"member": "mul", "verdict": "SUPPORTED", "estimate": 0.5,
                                    "ci": [0.4, 0.6], "ci_level": 0.95}]
    moved = [{**members[0], "estimate": 9.0}, {**members[1], "estimate": 0.7}]
    old = _suite(tmp_path / "old.json", _row("a", "SUPPORTED"),
                 _row("fam", "SUPPORTED", None, (None, None), members=members))
    new = _suite(tmp_path / "new.json", _row("a", "SUPPORTED", estimate="inf"),
                 _row("fam", "SUPPORTED", None, (None, None), members=moved))
    code, out = _diff(old, new, capsys)
    assert code == 0
    assert out[:4] == ["same     a: SUPPORTED",
                       "MOVED    a: estimate 0.6 -> ∞, outside OLD's 95% CI [0.5, 0.7]",
                       "same     fam: SUPPORTED",
                       "MOVED    fam: mul: estimate 0.5 -> 0.7, outside OLD's 95% CI [0.4, 0.6]"]


def test_a_members_changed_verdict_exits_1_though_the_familys_stays(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def member(name: str, verdict: str) -> dict[str, Any]:
        return {"member": name, "verdict": verdict, "estimate": 0.6, "ci": [0.5, 0.7],
                "ci_level": 0.95}

    was = [member("lr0.1", "SUPPORTED"), member("lr0.3", "INCONCLUSIVE"),
           member("lr1", "REFUTED")]
    now = [member("lr0.1", "INCONCLUSIVE"), member("lr0.3", "INCONCLUSIVE"),
           member("lr3", "SUPPORTED")]
    old = _suite(tmp_path / "old.json", _row("fam", "INCONCLUSIVE", members=was),
                 _row("same", "INCONCLUSIVE", members=was))
    new = _suite(tmp_path / "new.json", _row("fam", "INCONCLUSIVE", members=now),
                 _row("same", "INCONCLUSIVE", members=was))
    code, out = _diff(old, new, capsys)
    assert code == 1
    assert out[0] == ("CHANGED  fam: INCONCLUSIVE (unchanged); members: lr0.1 SUPPORTED -> "
                      "INCONCLUSIVE, lr3 new (SUPPORTED), lr1 gone (was REFUTED)")
    assert out[1] == "same     same: INCONCLUSIVE"
    assert out[-1].startswith("1 verdict(s) changed") and "1 unchanged" in out[-1]


def test_unreadable_input_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = _suite(tmp_path / "good.json", _row("a", "SUPPORTED"))
    (tmp_path / "bad.json").write_text("{not json")
    (tmp_path / "wrong.json").write_text('{"claims": [{"name": "a"}]}')
    (tmp_path / "empty").mkdir()
    for bad in ("bad.json", "wrong.json", "empty", "absent.json"):
        assert main(["diff", str(good), str(tmp_path / bad)]) == 2
        assert f"grokverify diff: error: {tmp_path / bad}" in capsys.readouterr().err


def test_folders_with_a_suite_or_only_claim_folders(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """A folder holding results.json, and one of claim folders only, compare the same way; an
    empty suite (the nightly job's first night) lists NEW."""
    old = tmp_path / "old"
    write_variant(old, "tiny")
    new = tmp_path / "new"
    _suite(new.mkdir() or new / "results.json", _row("tiny", "SUPPORTED", estimate=0.7))
    code, out = _diff(old, new, capsys)
    assert code == 1 and out[0] == "CHANGED  tiny: INCONCLUSIVE -> SUPPORTED"
    first = _suite(tmp_path / "first.json")
    assert _diff(first, new, capsys) == (0, ["NEW      tiny: SUPPORTED",
                                             "0 verdict(s) changed, 0 claim(s) with an estimate "
                                             "outside OLD's CI, 1 new, 0 missing, 0 unchanged"])
