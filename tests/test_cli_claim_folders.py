"""Folders as claim arguments of validate, run and report: read recursively, sorted, and an
error when they hold no claim file."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from suitedata import TINY, tiny_run
from test_report_rebuild import rebuild, refuse_executors

from grokverify.cli import main


def test_folders_are_read_recursively_and_sorted(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    refuse_executors(monkeypatch)
    library = tmp_path / "library"
    (library / "deeper").mkdir(parents=True)
    shutil.copy(TINY, library / "deeper" / "tiny.yaml")
    (library / "README.md").write_text("not a claim")
    assert main(["validate", str(library)]) == 0
    assert f"ok {library / 'deeper' / 'tiny.yaml'}: tiny" in capsys.readouterr().out
    assert rebuild(tmp_path, str(library)) == 0
    assert json.loads((tmp_path / "rebuilt" / "results.json").read_text())["claims"][0]["id"] \
        == "tiny"
    capsys.readouterr()
    # run: every seed is stored, so nothing trains; it writes the suite of the run's claims
    code = main(["run", str(library), "--executor", "local", "--device", "cpu", "--store",
                 str(tiny_run() / "store"), "--reports", str(tmp_path / "ran")])
    assert code == 0 and "suite: " in capsys.readouterr().out
    rows = json.loads((tmp_path / "ran" / "results.json").read_text())["claims"]
    assert [(r["id"], r["trained"], r["reused"]) for r in rows] == [("tiny", 0, 6)]


def test_a_folder_without_claims_is_an_error(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "empty" / "sub").mkdir(parents=True)
    (tmp_path / "empty" / "notes.txt").write_text("no claims here")
    for verb in (["validate"], ["run", "--executor", "local"], ["report"]):
        assert main([*verb, str(tmp_path / "empty")]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"{tmp_path / 'empty'}: a directory with no claim files")
        assert "(*.yaml)" in err and "below it" in err
